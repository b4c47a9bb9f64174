"""Agent runs for the viewer: the episodes of a `taskbench agents eval` output and one trajectory as a timeline.

An episode line (``episodes.jsonl``) names its trajectory file; a trajectory is a header, events (model calls,
code runs, reviews, tool calls) and an end record. The timeline sends each event cut to what a page shows:
the last message a model read and what it answered (not every prompt), the code, the sandbox's stdout and
error, the review's verdict and route, each text clipped (:func:`~.samples.clip`); at most :data:`MAX_EVENTS`
events per request (``offset`` pages on).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .samples import MAX_LINE_BYTES, _lines, arr, clip, obj

__all__ = ["MAX_EVENTS", "episodes", "trajectory"]

MAX_EVENTS = 300
"""Most events of one trajectory sent in one response."""

MAX_EPISODES = 5000
"""Most episodes of one agents run listed."""

_EPISODE_KEYS = ("id", "agent", "task", "seed", "success", "reason", "answered", "stop", "calls", "gold_path",
                 "cpr_lcs", "cpr_f1", "cpr_contains", "turns", "model_calls", "reviews", "code_runs", "tool_calls",
                 "failed_turns", "reroutes", "revisions", "prompt_tokens", "completion_tokens", "model_seconds",
                 "wall_seconds", "trajectory")


def episodes(run_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The episodes of an agents run (the fields a table shows) and the lines that could not be read."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    path = run_dir / "episodes.jsonl"
    for offset, line in _lines(path):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            problems.append(f"{path}: the line at byte {offset} is not JSON")
            continue
        if not isinstance(rec, dict):
            continue
        ep = {k: rec.get(k) for k in _EPISODE_KEYS}
        ep["reason"] = clip(ep["reason"], 1000)
        for k in ("calls", "gold_path"):
            ep[k] = [str(c)[:200] for c in arr(ep[k])[:100]]
        out.append(ep)
        if len(out) >= MAX_EPISODES:
            problems.append(f"more than {MAX_EPISODES} episodes: the rest are not listed")
            break
    return out, problems


def _trajectory_path(run_dir: Path, rel: Any) -> Path | None:
    """The trajectory file an episode names, only when it lies inside the run directory."""
    if not isinstance(rel, str) or not rel:
        return None
    path = (run_dir / rel).resolve()
    try:
        path.relative_to(run_dir.resolve())
    except ValueError:
        return None
    return path if path.is_file() else None


def _event(rec: dict[str, Any]) -> dict[str, Any]:
    kind = rec.get("kind")
    ev: dict[str, Any] = {"index": rec.get("index"), "t": rec.get("t"), "kind": kind, "role": rec.get("role")}
    if kind == "model_call":
        msgs = arr(rec.get("messages"))
        last = obj(msgs[-1]) if msgs else {}
        output = obj(rec.get("output"))
        usage = obj(rec.get("usage"))
        ev.update({"model": rec.get("model"), "n_messages": len(msgs), "prompt": clip(last.get("content"), 4000),
                   "answer": clip(output.get("content"), 8000),
                   "tool_calls": [clip(json.dumps(c, ensure_ascii=False), 1000)
                                  for c in arr(output.get("tool_calls"))[:20]],
                   "finish_reason": rec.get("finish_reason"), "prompt_tokens": usage.get("prompt_tokens"),
                   "completion_tokens": usage.get("completion_tokens"), "seconds": rec.get("latency"),
                   "error": clip(rec.get("error"), 2000)})
    elif kind == "code_run":
        err = rec.get("error")
        ev.update({"code": clip(rec.get("code"), 8000), "stdout": clip(rec.get("stdout"), 8000),
                   "result": clip(json.dumps(rec.get("result"), ensure_ascii=False), 4000),
                   "error": clip(json.dumps(err, ensure_ascii=False), 4000) if err is not None else None,
                   "tool_calls": [str(c)[:200] for c in (rec.get("tool_calls") or [])[:50]],
                   "seconds": rec.get("seconds")})
    elif kind == "review":
        ev.update({k: clip(rec.get(k), 2000) for k in ("target", "verdict", "feedback", "route", "problem",
                                                      "action")})
    else:
        ev["detail"] = clip(json.dumps({k: v for k, v in rec.items() if k not in ("record", "index", "t", "kind",
                                                                                "role")}, ensure_ascii=False), 4000)
    return ev


def trajectory(run_dir: Path, episode: dict[str, Any], *, offset: int = 0, limit: int = MAX_EVENTS) -> dict[str, Any]:
    """One episode's trajectory: header facts, a page of events, the end record, and the tool calls set
    against the gold path."""
    limit = max(1, min(limit, MAX_EVENTS))
    path = _trajectory_path(run_dir, episode.get("trajectory"))
    out: dict[str, Any] = {"episode": episode, "events": [], "n_events": 0, "offset": offset, "limit": limit}
    if path is None:
        out["problem"] = "the trajectory file is missing (or outside the run directory)"
        return out
    for pos, line in _lines(path):
        if not line:
            out.setdefault("skipped", []).append(f"a record over {MAX_LINE_BYTES >> 20} MB at byte {pos}")
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            out.setdefault("skipped", []).append(f"a line at byte {pos} that is not JSON")
            continue
        if not isinstance(rec, dict):
            continue
        kind = rec.get("record")
        if kind == "header":
            out["header"] = {"task": clip(rec.get("task"), 4000), "env": rec.get("env"), "agent": rec.get("agent"),
                             "models": rec.get("models"), "seed": rec.get("seed"),
                             "gold_path": [str(c)[:200] for c in (rec.get("gold_path") or [])[:100]],
                             "config": clip(json.dumps(rec.get("config"), ensure_ascii=False), 4000),
                             "tools": [str(t.get("name"))[:200] for t in (rec.get("tools") or [])[:200]
                                       if isinstance(t, dict)]}
        elif kind == "end":
            out["end"] = {"status": rec.get("status"), "error": clip(rec.get("error"), 2000),
                          "answer": clip(rec.get("answer"), 8000),
                          "totals": rec.get("totals") if isinstance(rec.get("totals"), dict) else None,
                          "outcome": {k: clip(v, 2000) for k, v in (rec.get("outcome") or {}).items()}
                          if isinstance(rec.get("outcome"), dict) else None}
        else:
            n = out["n_events"]
            out["n_events"] = n + 1
            if offset <= n < offset + limit:
                out["events"].append(_event(rec))
    calls = episode.get("calls") or []
    gold = episode.get("gold_path") or []
    out["path"] = [{"call": c, "on_gold": c in gold} for c in calls]
    out["gold_missed"] = [g for g in gold if g not in calls]
    return out
