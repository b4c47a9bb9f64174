"""Distillation data from agent runs: one chat-format training set per role (the first half of SPAN).

The paper's specialised action distillation trains one student per role on the teacher's task-solving
trajectories. :func:`export_sft` reads the trajectories of one or more run directories, keeps the
*successful* episodes of ConAgents agents, and writes ``grounding.jsonl``, ``execution.jsonl`` and
``review.jsonl``: one JSON object per line, ``{"messages": [system, user, ..., assistant], "meta": {...}}``
(OpenAI chat format, the answer the teacher gave as the last assistant message).

What is kept, by default (``all_turns=True`` keeps every usable turn):

- a grounding turn whose plan no review blamed: not sent back by a planning review, and not the plan an
  execution (or failure) review routed to grounding;
- an execution turn whose code ran without error and was not sent back by an execution review;
- every review turn whose verdict was usable;
- never a failed turn (cut off at the token limit, not valid under its schema).

Identical examples (the same prompt and answer, e.g. from several seeds) are written once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..dataset.jsonio import make_directory, write_json, write_text
from ..dataset.trajectories import read_trajectory
from ..errors import InputError
from ..schema import CodeRunEvent, ModelCallEvent, ReviewEvent, Trajectory, to_openai_messages
from ..schema.episode import EpisodeRow, FailedEpisodeRow
from .config import ROLES
from .eval import load_run
from .selection import Candidate, select


class ExportSummary(BaseModel):
    """What :func:`export_sft` wrote."""

    output: str = Field(description="The output directory.")
    runs: list[str] = Field(default_factory=list, description="Run directories read.")
    trajectories: int = Field(default=0, description="Trajectories read.")
    successful: int = Field(default=0, description="Successful ConAgents trajectories used.")
    skipped: dict[str, int] = Field(default_factory=dict, description="Trajectories not used, by reason.")
    examples: dict[str, int] = Field(default_factory=dict, description="Examples written per role.")
    problems: list[str] = Field(default_factory=list, description="Files that could not be read.")


def kept_turns(traj: Trajectory, *, all_turns: bool = False) -> list[ModelCallEvent]:
    """The model calls of ``traj`` worth learning from (see the module docstring), in order."""
    events = traj.events
    out: list[ModelCallEvent] = []
    for i, e in enumerate(events):
        if not isinstance(e, ModelCallEvent) or e.role not in ROLES or e.error:
            continue
        if all_turns or e.role == "review":
            if e.role != "review" or _verdict_follows(events, i):
                out.append(e)
            continue
        following = _until_next_turn(events, i)
        if e.role == "grounding":
            blamed = any(isinstance(x, ReviewEvent) and x.verdict == "revise" and x.route == "grounding"
                         for x in _until_next_plan(events, i))
            if not blamed:
                out.append(e)
        elif e.role == "execution":
            runs = [x for x in following if isinstance(x, CodeRunEvent)]
            ran = bool(runs) and runs[0].error is None and runs[0].limit is None and bool(runs[0].code)
            sent_back = any(isinstance(x, ReviewEvent) and x.target == "execution" and x.verdict == "revise"
                            for x in following)
            if ran and not sent_back:
                out.append(e)
    return out


def _until_next_turn(events: Sequence[Any], i: int) -> list[Any]:
    """Events after ``events[i]`` up to the next grounding or execution model call."""
    out = []
    for e in events[i + 1:]:
        if isinstance(e, ModelCallEvent) and e.role in ("grounding", "execution"):
            break
        out.append(e)
    return out


def _until_next_plan(events: Sequence[Any], i: int) -> list[Any]:
    """Events after ``events[i]`` up to the next grounding model call: everything that judged that plan (its
    planning review, and the review of its execution, which may blame the plan)."""
    out = []
    for e in events[i + 1:]:
        if isinstance(e, ModelCallEvent) and e.role == "grounding":
            break
        out.append(e)
    return out


def _verdict_follows(events: Sequence[Any], i: int) -> bool:
    return i + 1 < len(events) and isinstance(events[i + 1], ReviewEvent)


def example(e: ModelCallEvent, traj: Trajectory) -> dict[str, Any]:
    """One training example: the prompt, then the teacher's answer as the assistant turn."""
    messages = to_openai_messages(e.messages)
    messages.append({"role": "assistant", "content": e.output.content or ""})
    return {"messages": messages,
            "meta": {"role": e.role, "task": traj.id, "agent": traj.agent, "env": traj.env, "seed": traj.seed,
                     "model": e.model, "event": e.index}}


def export_sft(runs: Sequence[str | Path], output: str | Path, *, all_turns: bool = False,
               selection: dict[str, Any] | None = None) -> ExportSummary:
    """Write one chat-format JSON Lines training set per role from the successful ConAgents trajectories of
    ``runs`` (agent run directories) into ``output``.

    ``selection`` (``{"min_tools": 10, "min_doc_words": 100, "dedup_threshold": 90}``, any subset): apply
    SPAN's task selection (:func:`taskbench.agents.selection.select`) to the successful trajectories first; what
    each rule removed is counted under ``skipped`` (and RestBench trajectories, the held-out test, are
    always removed then)."""
    out = make_directory(output)
    summary = ExportSummary(output=str(out), runs=[str(r) for r in runs])
    sets: dict[str, list[dict[str, Any]]] = {r: [] for r in ROLES}
    seen: set[str] = set()
    good: list[Trajectory] = []
    paths: dict[int, Path] = {}
    for run in runs:
        _, records = load_run(run)
        for rec in records.values():
            rel = rec.trajectory
            if rel is None:
                continue
            path = Path(run) / rel
            try:
                traj = read_trajectory(path)
            except (InputError, OSError) as exc:
                summary.problems.append(f"{path}: {exc}")
                continue
            summary.trajectories += 1
            reason = _skip_reason(traj, rec)
            if reason is not None:
                summary.skipped[reason] = summary.skipped.get(reason, 0) + 1
                continue
            good.append(traj)
            paths[id(traj)] = path
    if selection is not None:
        good = _selected(good, selection, summary)
    for traj in good:
        summary.successful += 1
        for e in kept_turns(traj, all_turns=all_turns):
            ex = example(e, traj)
            ex["meta"]["trajectory"] = str(paths[id(traj)].resolve())  # the episode (its tools, earlier code)
            digest = hashlib.sha256(json.dumps(ex["messages"], sort_keys=True).encode()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            sets[e.role].append(ex)
    # every file's text first, then each written atomically, the manifest last: a crash while serializing
    # leaves the previous export whole, and no reader ever sees a role file cut short
    texts = {role: "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows) for role, rows in sets.items()}
    for role, text in texts.items():
        write_text(out / f"{role}.jsonl", text)
        summary.examples[role] = len(sets[role])
    summary.skipped = dict(sorted(summary.skipped.items()))
    write_json(out / "manifest.json", summary.model_dump(mode="json"))
    return summary


def _selected(trajs: list[Trajectory], selection: dict[str, Any], summary: ExportSummary) -> list[Trajectory]:
    cands = [Candidate(key=str(i), query=t.task, env=t.env, tools=list(t.tools), gold_path=list(t.gold_path))
             for i, t in enumerate(trajs)]
    kept, removed = select(cands, **selection)
    for rule, n in removed.items():
        if n:
            summary.skipped[f"selection: {rule.replace('_', ' ')}"] = n
    return [trajs[int(c.key)] for c in kept]


def _skip_reason(traj: Trajectory, rec: EpisodeRow | FailedEpisodeRow) -> str | None:
    if not (traj.agent or "").startswith("conagents"):
        return "not a ConAgents agent"
    if traj.status != "complete":
        return f"status {traj.status}"
    if traj.outcome is None or not traj.outcome.success:
        return "not successful"
    return None


__all__ = ["ExportSummary", "example", "export_sft", "kept_turns"]
