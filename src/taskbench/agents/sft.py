"""Distillation data from agent runs: one chat-format training set per role (the first half of SPAN).

The paper's specialised action distillation trains one student per role on the teacher's task-solving
trajectories. :func:`export_sft` reads the trajectories of one or more run directories, keeps the
*successful* episodes of ConAgents agents, and writes ``grounding.jsonl``, ``execution.jsonl`` and
``review.jsonl``: one JSON object per line, ``{"messages": [system, user, ..., assistant], "meta": {...}}``
(OpenAI chat format, the answer the teacher gave as the last assistant message).

What is kept, by default (``all_turns=True`` keeps every usable turn):

- a grounding turn whose plan worked (:func:`plan_fault`): the call it led to succeeded and used the plan's
  own values (every argument the plan gave, passed as given, and every required argument from the plan), and
  no review blamed it (sent back by a planning review, or routed to grounding by an execution or failure
  review); a FINISH plan, when no review blamed it. The evidence is the calls the code made, recorded with
  their arguments and errors (:class:`~taskbench.schema.CodeToolCall`), so the rule holds for every agent,
  the ablations without a review included; a trajectory written before calls were recorded gives no
  evidence, and its plans are not kept;
- an execution turn whose code ran without error, whose tool calls all succeeded, and that no execution
  review sent back;
- every review turn whose verdict was usable, except an accept of a plan that did not work (by the rule above)
  or of an execution that failed (:func:`review_fault`);
- never a failed turn (cut off at the token limit, not valid under its schema).

What was left out of the used trajectories is counted per reason in the manifest (``dropped_turns``).

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
from ..schema import (
    CodeRunEvent,
    CodeToolCall,
    ModelCallEvent,
    ReviewEvent,
    ToolCallEvent,
    Trajectory,
    to_openai_messages,
)
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
    dropped_turns: dict[str, int] = Field(default_factory=dict, description="Turns of the used trajectories left "
                                          "out, by role and reason (a plan whose call failed, ...).")
    examples: dict[str, int] = Field(default_factory=dict, description="Examples written per role.")
    problems: list[str] = Field(default_factory=list, description="Files that could not be read.")


def kept_turns(traj: Trajectory, *, all_turns: bool = False) -> list[ModelCallEvent]:
    """The model calls of ``traj`` worth learning from (see the module docstring), in order."""
    return [e for e, why in judged_turns(traj, all_turns=all_turns) if why is None]


def judged_turns(traj: Trajectory, *, all_turns: bool = False) -> list[tuple[ModelCallEvent, str | None]]:
    """Every usable model call of a ConAgents role in ``traj``, with why it is not a target (None: it is)."""
    events = traj.events
    out: list[tuple[ModelCallEvent, str | None]] = []
    for i, e in enumerate(events):
        if not isinstance(e, ModelCallEvent) or e.role not in ROLES or e.error:
            continue
        if all_turns or e.role == "review":
            if e.role != "review":
                out.append((e, None))
            elif _verdict_follows(events, i):
                out.append((e, None if all_turns else review_fault(traj, i)))
            continue
        following = _until_next_turn(events, i)
        if e.role == "grounding":
            out.append((e, plan_fault(traj, i)))
        elif e.role == "execution":
            runs = [x for x in following if isinstance(x, CodeRunEvent)]
            ran = bool(runs) and runs[0].error is None and runs[0].limit is None and bool(runs[0].code)
            failed_call = bool(runs) and any(c.error is not None for c in runs[0].calls)
            sent_back = any(isinstance(x, ReviewEvent) and x.target == "execution" and x.verdict == "revise"
                            for x in following)
            why = ("the code did not run" if not ran else "a tool call of the code failed" if failed_call
                   else "sent back by a review" if sent_back else None)
            out.append((e, why))
    return out


def plan_fault(traj: Trajectory, i: int) -> str | None:
    """Why the plan of grounding turn ``traj.events[i]`` is not a target, or None when it worked: the call it
    led to (the calls made before the next plan) succeeded with the plan's values, and no review blamed it."""
    from ..llm.schemas import JSONExtractionError, extract_json
    from .prompts import parse_plan

    events = traj.events
    window = _until_next_plan(events, i)
    if any(isinstance(x, ReviewEvent) and x.verdict == "revise" and x.route == "grounding" for x in window):
        return "sent back by a review"
    turn = events[i]
    text = turn.output.content if isinstance(turn, ModelCallEvent) else None
    try:
        plan = parse_plan(extract_json(text or ""))[0]
    except JSONExtractionError:
        plan = None
    if plan is None:
        return "the plan cannot be read"
    if plan.finish:
        return None
    calls: list[CodeToolCall] = []
    for x in window:
        if isinstance(x, CodeRunEvent):
            calls += x.calls
        elif isinstance(x, ToolCallEvent):
            calls.append(CodeToolCall(name=x.call.name, arguments=x.call.arguments, error=x.result.error))
    made = [c for c in calls if c.name == plan.tool]
    if not made:
        recorded = any(isinstance(x, CodeRunEvent) and x.tool_calls and not x.calls for x in window)
        return "no call recorded (a trajectory from before calls were kept)" if recorded \
            else "the plan led to no call of its tool"
    ok = [c for c in made if c.error is None]
    if not ok:
        return "the call it led to failed"
    spec = next((t for t in traj.tools if t.name == plan.tool), None)
    required = spec.parameters.get("required") if spec is not None and isinstance(spec.parameters, dict) else None
    needed = {str(r) for r in required} if isinstance(required, list) else None
    if not any(_uses(plan.arguments, c.arguments, needed) for c in ok):
        return "the call did not use the plan's values"
    return None


_DID_NOT_WORK = ("the call it led to failed", "the call did not use the plan's values",
                 "the plan led to no call of its tool")


def review_fault(traj: Trajectory, i: int) -> str | None:
    """Why the verdict of review turn ``traj.events[i]`` is not a target, or None: an accept of a plan that did
    not work (:func:`plan_fault`) or of an execution that failed is a wrong label, whoever the teacher was."""
    events = traj.events
    verdict = events[i + 1]
    if not isinstance(verdict, ReviewEvent) or verdict.verdict != "accept":
        return None
    if verdict.target == "plan":
        g = next((k for k in range(i - 1, -1, -1) if isinstance(events[k], ModelCallEvent)
                  and getattr(events[k], "role", None) == "grounding"), None)
        if g is not None and plan_fault(traj, g) in _DID_NOT_WORK:
            return "accepted a plan that did not work"
        return None
    run = next((e for e in reversed(events[:i]) if isinstance(e, CodeRunEvent)), None)
    if run is not None and (run.error is not None or run.limit is not None or not run.code
                            or any(c.error is not None for c in run.calls)):
        return "accepted an execution that failed"
    return None


def _uses(planned: dict[str, str], passed: dict[str, Any], required: set[str] | None) -> bool:
    """True when a call passed every value the plan gave, as given, and took every required argument (every
    argument, when the tool's schema is not known) from the plan."""
    if not all(name in passed and _same(text, passed[name]) for name, text in planned.items()):
        return False
    return (set(passed) if required is None else required) <= set(planned)


def _same(text: str, value: Any) -> bool:
    """A plan's argument (text) and the value a call passed are the same (``"155"`` and ``155``)."""
    text = text.strip()
    if isinstance(value, str):
        return value.strip() == text
    try:
        return bool(json.loads(text.lower() if isinstance(value, bool) else text) == value)
    except ValueError:
        return False


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
                     "model": e.model, "event": e.index, "query": traj.task}}


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
        for e, why in judged_turns(traj, all_turns=all_turns):
            if why is not None:
                reason = f"{e.role}: {why}"
                summary.dropped_turns[reason] = summary.dropped_turns.get(reason, 0) + 1
                continue
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
    summary.dropped_turns = dict(sorted(summary.dropped_turns.items()))
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


__all__ = ["ExportSummary", "example", "export_sft", "judged_turns", "kept_turns", "plan_fault", "review_fault"]
