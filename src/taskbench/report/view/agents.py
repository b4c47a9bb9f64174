"""Agent runs for the viewer: the episodes of a `taskbench agents eval` output and one trajectory as a timeline.

An episode line (``episodes.jsonl``) names its trajectory file; a trajectory is a header, events (model calls,
code runs, reviews, tool calls) and an end record, one a line. Both files can be large, so neither is read per
request:

- the episodes are indexed once per file version (size and mtime; :class:`~.cache.Memo`, shared between
  identical requests): a row of bounded fields per episode; a line over :data:`MAX_EPISODE_LINE` is listed by
  its id only, and past :data:`MAX_EPISODES_READ` bytes the rest of the file is not read (the page says so);
- a trajectory is indexed once per file version: the byte offset of every line (found with numpy a chunk at a
  time), its header and end record; a page of events parses only its own lines, at most :data:`MAX_EVENTS`
  events and :data:`MAX_PAGE_BYTES` of response, each event over :data:`MAX_EVENT_LINE` named, not parsed.

Every value sent is bounded (:func:`~.samples.bound`): the last message a model read and what it answered (not
every prompt), the code, the sandbox's stdout and error, and for a review both what the review model wrote
(its own verdict, problem and route) and what the harness decided.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InputError
from .cache import Memo
from .files import Outside, RunFile
from .samples import _big_lines, arr, bound, clip, counts, obj

__all__ = ["MAX_EPISODES", "MAX_EVENTS", "about", "episode", "episodes", "failed", "trajectory"]

MAX_EVENTS = 300
"""Most events of one trajectory sent in one response."""

MAX_EPISODES = 20_000
"""Most episodes of one agents run indexed (the rest are counted, not listed)."""

EPISODES_PAGE = 500
"""Episodes sent in one response (``offset`` pages on)."""

MAX_EPISODE_LINE = 256 << 10
"""An episodes line longer than this is listed by its id only (a real one is a few KB)."""

MAX_EPISODES_READ = 128 << 20
"""Bytes of ``episodes.jsonl`` read at most; the rest of a larger file is not listed."""

MAX_EVENT_LINE = 4 << 20
"""A trajectory line longer than this is named in the timeline, not parsed."""

MAX_EDGE_LINE = 16 << 20
"""A trajectory's header or end line longer than this is not parsed (the header holds every tool's schema)."""

MAX_PAGE_BYTES = 2 << 20
"""A page of events stops once its events hold about this many bytes (the next page goes on from there)."""

_EPISODE_KEYS = ("id", "agent", "task", "seed", "success", "reason", "answered", "stop", "calls", "gold_path",
                 "cpr_lcs", "cpr_f1", "cpr_contains", "turns", "model_calls", "reviews", "code_runs", "tool_calls",
                 "failed_turns", "reroutes", "revisions", "prompt_tokens", "completion_tokens", "model_seconds",
                 "wall_seconds", "trajectory")

_ID = re.compile(rb'"id"\s*:\s*"((?:[^"\\]|\\.){1,400})"')


# ----------------------------------------------------------------------------------------------- episodes


@dataclass
class EpisodeIndex:
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    """One tuple per episode, its fields in the order of :data:`_EPISODE_KEYS` (a dict per row cost 2 KB)."""
    by_id: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    lines: int = 0
    names: dict[Any, Any] = field(default_factory=dict)
    """One object per distinct short value (agent, task, tool names), shared by the rows."""

    def row(self, i: int) -> dict[str, Any]:
        ep = dict(zip(_EPISODE_KEYS, self.rows[i], strict=True))
        for k in ("calls", "gold_path"):
            ep[k] = list(ep[k])
        return ep


_EPISODE_INDEX: Memo[EpisodeIndex] = Memo(keep=2)
"""Episode indexes kept (each at most :data:`MAX_EPISODES` rows of bounded fields: about 15 MB)."""


def _episode_row(rec: dict[str, Any], names: dict[Any, Any]) -> tuple[Any, ...]:
    def share(v: Any) -> Any:
        return names.setdefault(v, v) if isinstance(v, str) and len(v) <= 200 else v

    ep = {k: bound(rec.get(k), text=400, items=20) for k in _EPISODE_KEYS}
    ep["id"] = clip(str(rec.get("id")), 400)
    ep["reason"] = clip(rec.get("reason"), 1000) if isinstance(rec.get("reason"), str) else None
    ep["trajectory"] = rec.get("trajectory") if isinstance(rec.get("trajectory"), str) else None
    for k in ("calls", "gold_path"):
        ep[k] = share(tuple(share(str(c)[:200]) for c in arr(rec.get(k))[:100]))
    return tuple(share(ep[k]) if isinstance(ep[k], str) else ep[k] for k in _EPISODE_KEYS)


def _index_episodes(file: RunFile) -> EpisodeIndex:
    out = EpisodeIndex()
    cut = None
    for offset, line, big in _big_lines(file, MAX_EPISODE_LINE):
        if len(out.rows) >= MAX_EPISODES or offset > MAX_EPISODES_READ:
            cut = offset
            break
        out.lines += 1
        if big:
            found = _ID.search(line)
            out.problems.append(f"the episode at byte {offset} is over {MAX_EPISODE_LINE >> 10} KB: listed by its id only")
            rec: Any = {"id": json.loads(b'"' + found.group(1) + b'"'), "reason": "(episode line too large to show)"} \
                if found else None
        else:
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                rec = None
        if not isinstance(rec, dict) or "id" not in rec:
            if len(out.problems) < 100:
                out.problems.append(f"the line at byte {offset} is not an episode (not a JSON object with an id)")
            continue
        row = _episode_row(rec, out.names)
        rid = row[0]
        if rid in out.by_id:
            continue
        out.by_id[rid] = len(out.rows)
        out.rows.append(row)
    if cut is not None:
        out.problems.insert(0, f"episodes.jsonl is {file.size() / 1e6:.0f} MB: only its first {cut / 1e6:.0f} MB "
                               f"({len(out.rows):,} episodes; at most {MAX_EPISODES:,} and "
                               f"{MAX_EPISODES_READ >> 20} MB are read) are listed")
    return out


def _episode_index(file: RunFile) -> EpisodeIndex:
    return _EPISODE_INDEX.get((file.path, *file.stamp()), lambda: _index_episodes(file))


def episodes(file: RunFile, *, offset: int = 0, limit: int = EPISODES_PAGE) -> dict[str, Any]:
    """A page of the episodes of an agents run (the fields a table shows), with the total and what could not
    be read."""
    idx = _episode_index(file)
    limit = max(1, min(limit, EPISODES_PAGE))
    return {"episodes": [idx.row(i) for i in range(offset, min(offset + limit, len(idx.rows)))],
            "total": len(idx.rows), "offset": offset, "limit": limit, "lines": idx.lines, "problems": idx.problems[:20]}


MAX_ABOUT = 200
"""Agents of one run described at most (a run names a few; a sweep some tens)."""


def about(labels: Any) -> dict[str, dict[str, Any]]:
    """What each agent of a run is, from the agent registry (:mod:`taskbench.agents.registry`): its one-line
    description, the roles that call a model and whether it runs code. An agent this installation does not
    know (a plugin not loaded here) is left out."""
    from ...agents.config import parse_agent
    from ...agents.registry import agent_info
    from ...errors import TaskbenchError

    out: dict[str, dict[str, Any]] = {}
    for label in list(labels or [])[:MAX_ABOUT]:
        if not isinstance(label, str):
            continue
        try:
            info = agent_info(parse_agent(label).base)
        except TaskbenchError:
            continue
        out[label] = {"description": info.description, "roles": list(info.roles), "uses_code": info.uses_code}
    return out


def episode(file: RunFile, episode_id: str) -> dict[str, Any] | None:
    """One episode's row by id (None when unknown)."""
    idx = _episode_index(file)
    i = idx.by_id.get(episode_id)
    return idx.row(i) if i is not None else None


# ----------------------------------------------------------------------------------------------- trajectories


@dataclass
class TrajIndex:
    starts: np.ndarray
    """Byte offset of each line that holds an event."""
    ends: np.ndarray
    header: dict[str, Any] | None
    end: dict[str, Any] | None
    problems: list[str]


_TRAJ_INDEX: Memo[TrajIndex] = Memo(keep=4)
"""Trajectory indexes kept (16 bytes a line; at most :data:`MAX_TRAJ_LINES` lines: 16 MB)."""
_CHUNK = 8 << 20

MAX_TRAJ_LINES = 1_000_000
"""Lines of one trajectory indexed at most (the events past them are not shown; the page says so)."""


def _line_spans(fh: Any, size: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """(start, end) byte offsets of the non-empty lines of a file, a chunk at a time, at most
    :data:`MAX_TRAJ_LINES` + 1 of them, and whether the file goes on past them."""
    cuts = []
    pos = 0
    count = 0
    cut = False
    while pos < size:
        chunk = fh.read(_CHUNK)
        if not chunk:
            break
        nl = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10) + pos
        cuts.append(nl)
        count += len(nl)
        pos += len(chunk)
        if count > MAX_TRAJ_LINES:
            cut = True
            break
    nl = np.concatenate(cuts) if cuts else np.zeros(0, dtype=np.int64)
    starts = np.concatenate(([0], nl + 1)).astype(np.int64)
    ends = np.concatenate((nl, [pos])).astype(np.int64)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if cut:  # the last span may be a partial line of the chunk: drop it with the lines past the cap
        starts, ends = starts[:MAX_TRAJ_LINES], ends[:MAX_TRAJ_LINES]
    return starts, ends, cut


def _read_span(fh: Any, start: int, end: int, limit: int) -> dict[str, Any] | str:
    """The JSON object of bytes [start, end), or why it is not shown."""
    if end - start > limit:
        return f"a record of {(end - start) / 1e6:.1f} MB, too large to show (over {limit >> 20} MB)"
    fh.seek(start)
    try:
        rec = json.loads(fh.read(end - start))
    except (ValueError, RecursionError):
        return "a line that is not JSON"
    return rec if isinstance(rec, dict) else "a line that is not a JSON object"


_RECORD = re.compile(rb'^\s*\{\s*"record"\s*:\s*"(header|end)"')


def _edge(fh: Any, start: int, end: int, kind: str, problems: list[str]) -> dict[str, Any] | None:
    """The header (first line) or end record (last line) at [start, end): the record, or None when the line is
    not one; a record too large to parse is named in ``problems`` and read as an empty one."""
    fh.seek(start)
    m = _RECORD.match(fh.read(min(200, end - start)))
    if m is None or m.group(1).decode() != kind:
        return None
    rec = _read_span(fh, start, end, MAX_EDGE_LINE)
    if isinstance(rec, str):
        problems.append(f"the {kind} line: {rec}")
        return {}
    return rec


def _index_trajectory(file: RunFile) -> TrajIndex:
    with file.open() as fh:
        size = os.fstat(fh.fileno()).st_size
        starts, ends, cut = _line_spans(fh, size)
        problems: list[str] = []
        if cut:
            problems.append(f"the trajectory is {size / 1e6:.0f} MB: only its first {MAX_TRAJ_LINES:,} lines "
                            f"({int(ends[-1]) / 1e6:.0f} MB) are shown")
        header = end = None
        if len(starts):
            header = _edge(fh, int(starts[0]), int(ends[0]), "header", problems)
            if header is not None:
                starts, ends = starts[1:], ends[1:]
        if len(starts) and not cut:
            end = _edge(fh, int(starts[-1]), int(ends[-1]), "end", problems)
            if end is not None:
                starts, ends = starts[:-1], ends[:-1]
    return TrajIndex(starts=starts, ends=ends, header=_header_json(header), end=_end_json(end), problems=problems)


def _header_json(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {"task": clip(str(rec.get("task") or ""), 4000), "env": bound(rec.get("env"), text=200),
            "agent": bound(rec.get("agent"), text=200), "models": bound(rec.get("models"), text=200, items=20),
            "seed": bound(rec.get("seed")),
            "gold_path": [str(c)[:200] for c in arr(rec.get("gold_path"))[:100]],
            "config": clip(json.dumps(bound(rec.get("config")), ensure_ascii=False), 4000),
            "tools": [str(t.get("name"))[:200] for t in arr(rec.get("tools"))[:200] if isinstance(t, dict)]}


def _end_json(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {"status": bound(rec.get("status"), text=100), "error": clip(bound(rec.get("error")), 2000),
            "answer": bound(rec.get("answer"), text=8000),
            "totals": bound(rec.get("totals"), text=200, items=40) if isinstance(rec.get("totals"), dict) else None,
            "outcome": {str(k)[:100]: bound(v, text=2000, items=50) for k, v in list(rec["outcome"].items())[:50]}
            if isinstance(rec.get("outcome"), dict) else None}


def _model_said(call: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a review model wrote (its verdict, problem, route, feedback), from the model call that a review event
    follows; None when that call is not a review model's or its answer holds no JSON object."""
    from ...llm.schemas import extract_json

    if call is None or call.get("kind") != "model_call" or call.get("role") != "review":
        return None
    content = obj(call.get("output")).get("content")
    if not isinstance(content, str) or len(content) > 100_000:
        return None
    try:
        said = extract_json(content)
    except ValueError:
        return {"raw": clip(content, 2000)}
    if not isinstance(said, dict):
        return {"raw": clip(content, 2000)}
    return {k: bound(said.get(k), text=2000) for k in ("verdict", "problem", "route", "feedback") if k in said}


def _event(rec: dict[str, Any], previous: dict[str, Any] | None = None) -> dict[str, Any]:
    kind = rec.get("kind")
    ev: dict[str, Any] = {"index": bound(rec.get("index")), "t": bound(rec.get("t")), "kind": bound(kind, text=60),
                          "role": bound(rec.get("role"), text=60)}
    if kind == "model_call":
        msgs = arr(rec.get("messages"))
        last = obj(msgs[-1]) if msgs else {}
        output = obj(rec.get("output"))
        usage = obj(rec.get("usage"))
        ev.update({"model": bound(rec.get("model"), text=200), "n_messages": len(msgs),
                   "prompt": bound(last.get("content"), text=4000),
                   "answer": bound(output.get("content"), text=8000),
                   "tool_calls": [clip(json.dumps(bound(c), ensure_ascii=False), 1000)
                                  for c in arr(output.get("tool_calls"))[:20]],
                   "finish_reason": bound(rec.get("finish_reason"), text=60),
                   "prompt_tokens": bound(usage.get("prompt_tokens")),
                   "completion_tokens": bound(usage.get("completion_tokens")), "seconds": bound(rec.get("latency")),
                   "error": bound(rec.get("error"), text=2000)})
    elif kind == "code_run":
        err = rec.get("error")
        ev.update({"code": bound(rec.get("code"), text=8000), "stdout": bound(rec.get("stdout"), text=8000),
                   "result": clip(json.dumps(bound(rec.get("result")), ensure_ascii=False), 4000),
                   "error": clip(json.dumps(bound(err), ensure_ascii=False), 4000) if err is not None else None,
                   "tool_calls": [str(c)[:200] for c in arr(rec.get("tool_calls"))[:50]],
                   "seconds": bound(rec.get("seconds"))})
    elif kind == "review":
        ev.update({k: bound(rec.get(k), text=2000) for k in ("target", "verdict", "feedback", "route", "problem",
                                                            "action")})
        ev["model_said"] = _model_said(previous)
    else:
        ev["detail"] = clip(json.dumps(bound({k: v for k, v in rec.items() if k not in ("record", "index", "t", "kind",
                                                                                      "role")}), ensure_ascii=False), 4000)
    return ev


def trajectory(file: RunFile | None, episode: dict[str, Any], *, offset: int = 0, limit: int = MAX_EVENTS
               ) -> dict[str, Any]:
    """One episode's trajectory: header facts, a page of events, the end record, and the tool calls set
    against the gold path. ``file`` None: the episode names no trajectory inside the run directory."""
    limit = max(1, min(limit, MAX_EVENTS))
    out: dict[str, Any] = {"episode": episode, "events": [], "n_events": 0, "offset": offset, "limit": limit}
    calls = episode.get("calls") or []
    gold = episode.get("gold_path") or []
    out["path"] = [{"call": c, "on_gold": c in gold} for c in calls]
    out["gold_missed"] = [g for g in gold if g not in calls]
    if file is None:
        out["problem"] = "the trajectory file is missing (or outside the run directory)"
        return out
    try:
        idx = _TRAJ_INDEX.get((file.path, *file.stamp()), lambda: _index_trajectory(file))
    except InputError as exc:
        out["problem"] = f"the trajectory file is not read: {exc}"
        return out
    out["n_events"] = int(len(idx.starts))
    out["header"], out["end"] = idx.header, idx.end
    if idx.problems:
        out["skipped"] = list(idx.problems)
    sent = 0
    previous: dict[str, Any] | str | None = None
    with file.open() as fh:
        if offset > 0 and offset <= len(idx.starts):  # a review's model call may be the last line of the last page
            previous = _read_span(fh, int(idx.starts[offset - 1]), int(idx.ends[offset - 1]), MAX_EVENT_LINE)
        for i in range(offset, min(offset + limit, len(idx.starts))):
            rec = _read_span(fh, int(idx.starts[i]), int(idx.ends[i]), MAX_EVENT_LINE)
            if isinstance(rec, str):
                ev: dict[str, Any] = {"index": i, "kind": "unreadable", "role": None, "detail": rec}
                out.setdefault("skipped", []).append(f"event {i}: {rec}")
            else:
                ev = _event(rec, previous if isinstance(previous, dict) else None)
            previous = rec
            out["events"].append(ev)
            sent += len(json.dumps(ev, ensure_ascii=False))
            if sent > MAX_PAGE_BYTES:
                break
    if "skipped" in out:
        out["skipped"] = out["skipped"][:50]
    return out


def trajectory_file(run_file: Any, episode: dict[str, Any]) -> RunFile | None:
    """The trajectory an episode names, as a file of the run (``run_file``: the run's :meth:`RunInfo.file`);
    None when it names none, or one outside the run directory or not a regular file."""
    rel = episode.get("trajectory")
    if not isinstance(rel, str) or not rel:
        return None
    try:
        f: RunFile = run_file(rel)
    except Outside:
        return None
    return f if f.is_file() else None


def failed(agents: Any) -> list[dict[str, Any]]:
    """Per agent with failed episodes (``metrics.json``'s ``agents``, as the index read it): how many of its
    episodes failed and the top reasons with their episodes, labelled as ``agents eval`` and report.md say
    them (:func:`~taskbench.report.agents.failure_lines`, :func:`~taskbench.report.tables.failed_reasons`)."""
    from ..tables import failed_reasons

    out = []
    for name, summary in list(obj(agents).items())[:100]:
        rows = failed_reasons(counts(obj(summary).get("failures")))
        if not rows:
            continue
        n, solved = (v if isinstance(v, int) and not isinstance(v, bool) else None
                     for v in (summary.get("episodes"), summary.get("successes")))
        out.append({"agent": clip(str(name), 200), "episodes": n,
                    "failed": n - (solved or 0) if n is not None else None,
                    "reasons": [{"reason": reason, "count": k} for reason, k in rows]})
    return out
