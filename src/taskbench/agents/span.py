"""SPAN training data: the paper's task selection, and gold trajectories played in an executable environment.

Two sources feed :mod:`taskbench.distill` (one LoRA student per ConAgents role):

- **teacher runs** (``agents export-sft --select``): the successful ConAgents trajectories of any model, then
  the selection below;
- **gold trajectories** (``agents span-data``, :func:`build_gold`): tasks whose gold invocation graph executes
  in an environment (the executable TaskBench domains, or a task file over an environment's tools). The real
  ConAgents protocol (automatic) runs each task with a *gold teacher* in every role, so every prompt is the one
  a student sees at inference time:

  - grounding answers the next executed gold step (tool and arguments) with a short thought naming it, or
    FINISH after the last one, its answer naming the plan and the last result;
  - execution answers a program that calls the tool and extracts what the next step needs; it runs in the
    sandbox, and only programs that ran without error are kept (``export_sft``'s rule);
  - review: on a share of steps (``perturb``) the teacher first proposes a perturbed plan (a wrong tool, a
    missing argument, a wrong argument value) or faulty code, and the review teacher names the problem and
    the right route (grounding for a plan, execution for code that raised); the other verdicts accept.
    Plans and code a review sent back are never grounding or execution targets.

Selection (:func:`select`, the paper's appendix A.2, defined in :mod:`taskbench.agents.selection`), each rule
counted in the manifest: at least ``min_tools`` candidate tools (the paper: 10), documentation of every gold
tool of at least ``min_doc_words`` words (the paper: 100; counted by
:func:`~taskbench.agents.selection.doc_words`, as export-sft counts them), no gold tool the environment does not have
(unavailable), and no near-duplicate query (:func:`taskbench.dataset.dedup.near_duplicates`, the data
engine's rule).

**RestBench is the held-out test set.** Its queries are what the students are evaluated on, so they are never
training data: :func:`build_gold` refuses a RestBench environment, :func:`select` drops every RestBench
trajectory and counts it, and :func:`taskbench.distill.data.load_examples` refuses a data file holding one.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..schema import AgentTask
from .prompts import FINISH
from .selection import HELD_OUT_PREFIX, Candidate, doc_words, is_held_out, refuse_held_out, select

PERTURBATIONS = ("wrong_tool", "missing_argument", "wrong_argument", "faulty_code")
REST_PERTURBATIONS = ("wrong_tool", "missing_argument", "title_as_id", "faulty_code", "wrong_field")
"""Perturbations of generated tasks (executed plans): a title passed where the id goes, and code that takes
another field than the target, besides the TaskBench ones."""


# ------------------------------------------------------------------------------------------------ gold teacher


@dataclass
class GoldStep:
    """One executed gold step: the tool and its arguments as the plan gives them (text values); for a generated
    task (an executed plan) also the target in words, the Python that extracts it from ``response``, the typed
    arguments (a native tool call's), and for an argument taken from an earlier step, the name of what that step
    picked (a "title passed as an id" perturbation passes it)."""

    tool: str
    arguments: dict[str, str]
    target: str = ""
    code: str = ""
    typed: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)
    item: str | None = None


@dataclass
class GoldTask:
    """A task's gold steps and which step (if any) is perturbed, and how."""

    task: AgentTask
    steps: list[GoldStep]
    perturb: dict[int, str] = field(default_factory=dict)
    resource: bool = True
    answer: str = ""
    """The final answer of an executed plan (empty: the TaskBench teacher's summary answer)."""


def plan_steps(task: AgentTask) -> tuple[list[GoldStep], str] | None:
    """The gold steps and answer of a generated task (``meta.plan``, written by ``generate --method executed``),
    or None when the task has no plan."""
    plan = task.meta.get("plan")
    if not isinstance(plan, list) or not plan:
        return None
    steps: list[GoldStep] = []
    for i, p in enumerate(plan):
        if not isinstance(p, dict) or not isinstance(p.get("tool"), str):
            return None
        raw_args = p.get("arguments")
        typed: dict[str, Any] = dict(raw_args) if isinstance(raw_args, dict) else {}
        text = {k: _plain(v) for k, v in typed.items()}
        raw_from = p.get("from")
        sources: dict[str, Any] = dict(raw_from) if isinstance(raw_from, dict) else {}
        prev = plan[i - 1] if i else {}
        item = prev.get("item") if isinstance(prev, dict) else None
        steps.append(GoldStep(tool=str(p["tool"]), arguments=text, target=str(p.get("target") or ""),
                              code=str(p.get("code") or ""), typed=typed,
                              sources={str(k): int(v) for k, v in sources.items() if isinstance(v, int)},
                              item=item if isinstance(item, str) else None))
    values = plan[-1].get("value") if isinstance(plan[-1], dict) else None
    return steps, answer_text(values, task.meta.get("target_kind"))


def _plain(value: Any) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def answer_text(values: Any, kind: Any = None) -> str:
    """The answer a gold teacher gives: the values, in a sentence ("Done." for a change of state)."""
    if kind == "state":
        return "Done."
    items = values if isinstance(values, list) else [values]
    shown = [str(v) for v in items if v is not None]
    if not shown:
        return "Done."
    text = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    return f"{text}."


def gold_steps(env: Any, task: AgentTask) -> list[GoldStep] | None:
    """The executed gold steps of a task: a generated task's plan, or a TaskBench-domain task's gold graph (None
    when the environment cannot give them)."""
    planned = plan_steps(task)
    if planned is not None:
        return planned[0]
    samples = getattr(env, "_by_id", None)
    library = getattr(env, "library", None)
    if not isinstance(samples, dict) or library is None or task.id not in samples:
        return None
    sample = samples[task.id]
    gold = env.gold_execution(sample, 0)
    steps = []
    for i in gold.order:
        node = sample.task_nodes[i]
        tool = library.get(node.task)
        if tool is None:
            return None
        names = tool.argument_names()
        args: dict[str, str] = {}
        for k, a in enumerate(node.arguments):
            name = getattr(a, "name", None)
            value = getattr(a, "value", a)
            if name is None:
                if k >= len(names):
                    return None
                name = names[k]
            args[str(name)] = value if isinstance(value, str) else json.dumps(value)
        steps.append(GoldStep(tool=node.task, arguments=args))
    return steps


class GoldTeacher:
    """A scripted model (the ``mock`` provider's callable) that answers every ConAgents role from the gold
    steps of the task named in the prompt (see the module docstring)."""

    def __init__(self, tasks: Sequence[GoldTask]) -> None:
        self.by_query = {g.task.query: g for g in tasks}

    def __call__(self, request: Any) -> Any:
        user = next((str(m.get("content") or "") for m in request.messages if m.get("role") == "user"), "")
        schema = request.json_schema or {}
        props = schema.get("properties") or {}
        if request.tools:
            return self._react(request, user)
        if "verdict" in props:
            return self._review(user)
        if schema:
            return self._plan(user)
        return self._code(user, len(request.messages))

    def _react(self, request: Any, user: str) -> Any:
        """ReAct with native calls: the next gold call (typed arguments), then ``final_answer``."""
        from ..schema import ToolCall

        g = self.by_query.get(user.strip())
        if g is None:
            raise ConfigError("gold teacher: the ReAct prompt names no task it knows")
        k = sum(1 for m in request.messages if m.get("role") == "assistant" and m.get("tool_calls"))
        if k >= len(g.steps):
            return ToolCall(id=f"call_{k}", name="final_answer", arguments={"answer": g.answer or "Done."})
        step = g.steps[k]
        return ToolCall(id=f"call_{k}", name=step.tool, arguments=dict(step.typed or step.arguments))

    def _task(self, user: str, prefix: str) -> GoldTask:
        m = re.search(rf"^{re.escape(prefix)} (.*)$", user, re.M)
        if m is None or m.group(1) not in self.by_query:
            raise ConfigError("gold teacher: the prompt names no task it knows")
        return self.by_query[m.group(1)]

    @staticmethod
    def _done(user: str) -> int:
        part = user.split("Steps so far:", 1)
        if len(part) < 2:
            return 0
        return len(re.findall(r"^\d+\. ", part[1], re.M))

    def _plan(self, user: str) -> str:
        g = self._task(user, "Task:")
        k = self._done(user)
        # the FINISH answer names the plan and the last result: one fixed FINISH answer made a third of the
        # grounding targets identical, and a 0.5B student learnt to answer nothing else. The thought is short: one that listed the
        # whole gold plan taught a 0.5B student to write long lists, which looped (docs/distill.md)
        plan = ", ".join(s.tool for s in g.steps)
        if k >= len(g.steps):
            if g.answer:
                return json.dumps({"thought": f"Steps done: {len(g.steps)}. The task is answered.", "action": {
                    "tool": FINISH, "answer": g.answer}})
            results = re.findall(r"^   result: (.*)$", user.split("Steps so far:", 1)[-1], re.M)
            last = f" The result: {results[-1][:200]}" if results else ""
            return json.dumps({"thought": f"Steps done: {len(g.steps)}. The task is answered.", "action": {
                "tool": FINISH, "answer": f"Done with {plan}.{last}"}})
        step = g.steps[k]
        revising = "Feedback on your last plan:" in user
        tool, args = step.tool, dict(step.arguments)
        kind = g.perturb.get(k)
        if kind is not None and not revising:
            tool, args = _perturbed(g, k, kind)
        target = step.target or ("the artifact id" if g.resource else "the result")
        return json.dumps({"thought": f"Step {k + 1}: {tool}.", "action": {
            "tool": tool, "arguments": [{"name": n, "value": v} for n, v in args.items()], "target": target}})

    def _review(self, user: str) -> str:
        g = self._task(user, "Task:")
        k = self._done(user)
        ok = {"problem": "none", "feedback": "", "route": "grounding", "verdict": "accept"}
        if "Proposed plan for the next step:" in user and "Code:" not in user and "Outcome" not in user:
            plan = user.split("Proposed plan for the next step:", 1)[1].split("\n\nReview", 1)[0].strip()
            if k < len(g.steps):
                return json.dumps(_plan_verdict(g.steps[k], plan) or ok)
            return json.dumps(ok)
        if any(st.code for st in g.steps):
            return json.dumps(self._review_run(g, user) or ok)
        failed = re.search(r"error(?: \(line \d+\))?: (\w+)", user)
        if failed is not None:
            return json.dumps({"problem": "faulty_code", "feedback": f"The code raised {failed.group(1)}: read "
                               "the response as the documentation shows and set `result`.",
                               "route": "execution", "verdict": "revise"})
        return json.dumps(ok)

    def _review_run(self, g: GoldTask, user: str) -> dict[str, str] | None:
        """The verdict on an execution of an executed plan: the plan first (a title where the id goes routes to
        grounding), then the code against the gold extraction (execution)."""
        m = re.search(r"^Step: (.*)$", user, re.M)
        plan = m.group(1).strip() if m else ""
        k = next((i for i, st in enumerate(g.steps) if plan.startswith(st.tool + " ") or plan == st.tool), None)
        if k is None:
            return {"problem": "nonexistent_tool", "feedback": "This step calls a tool the task does not need.",
                    "route": "grounding", "verdict": "revise"}
        step = g.steps[k]
        wrong_plan = _plan_verdict(step, plan)
        if wrong_plan is not None:
            return wrong_plan
        code = re.search(r"```python\n(.*?)```", user, re.S)
        body = code.group(1) if code else ""
        line = re.search(r"^result\s*=\s*(.*)$", body, re.M)
        if line is not None and " ".join(line.group(1).split()) == " ".join(step.code.split()):
            return None
        failed = re.search(r"error(?: \(line \d+\))?: (\w+)", user)
        if failed is not None:
            return {"problem": "faulty_code", "feedback": f"The code raised {failed.group(1)}: read the response as "
                    f"the documentation shows and set `result` to {step.target}.", "route": "execution",
                    "verdict": "revise"}
        return {"problem": "wrong_result", "feedback": f"The result is not what the step asks for: set `result` to "
                f"{step.target}.", "route": "execution", "verdict": "revise"}

    def _code(self, user: str, n_messages: int) -> str:
        g = self._task(user, "Task of the team:")
        m = re.search(r"```python\nresponse = (.*)\n", user)
        if m is None:
            raise ConfigError("gold teacher: the execution prompt has no call to start from")
        call = m.group(1)
        k = next((i for i, s in enumerate(g.steps) if f"call {s.tool} " in user or f"call {s.tool}." in user), 0)
        name, _, rest = call.partition("(")
        if not name.isidentifier():  # a tool name Python cannot call by name ("Text-to-Audio"): call_tool
            m_tool = re.search(r"^Step: call (.*?)(?: with .*)?\.$", user, re.M)
            tool = m_tool.group(1) if m_tool else g.steps[k].tool
            call = f"call_tool({tool!r}, {rest}" if rest.strip() != ")" else f"call_tool({tool!r})"
        if g.perturb.get(k) == "faulty_code" and n_messages <= 2:
            return f"```python\nresponse = {call}\nresult = response['data']['value']\n```"
        if g.steps[k].code:
            extract = g.steps[k].code
            if g.perturb.get(k) == "wrong_field" and n_messages <= 2:
                extract = _wrong_field(extract)
            return f"```python\nresponse = {call}\nresult = {extract}\n```"
        extract = "response['artifact']" if g.resource else "response"
        return f"```python\nresponse = {call}\nresult = {extract}\n```"


def _wrong_field(code: str) -> str:
    """The extraction with its last key changed to another field (``['name']`` -> ``['id']``)."""
    m = list(re.finditer(r"\[('|\")([A-Za-z_]+)\1\]", code))
    if not m:
        return code + "['id']"
    last = m[-1]
    other = "id" if last.group(2) != "id" else "name"
    return code[: last.start()] + f"['{other}']" + code[last.end():]


def _perturbed(g: GoldTask, k: int, kind: str) -> tuple[str, dict[str, str]]:
    step = g.steps[k]
    args = dict(step.arguments)
    if kind == "title_as_id":
        fed = next(iter(step.sources), None)
        if fed is not None and step.item:
            args[fed] = step.item
            return step.tool, args
        kind = "missing_argument"
    if kind == "wrong_tool":
        offered = g.task.meta.get("offered")
        others = sorted(t for t in (offered if isinstance(offered, list) else [])
                        if isinstance(t, str) and t != step.tool)
        if others:
            return random.Random(zlib.crc32(f"{g.task.id}:{k}".encode())).choice(others), args
        kind = "missing_argument"
    if kind == "missing_argument" and args:
        args.pop(next(iter(args)))
        return step.tool, args
    if args:  # wrong_argument (and faulty_code, whose plan is right)
        if kind == "wrong_argument":
            first = next(iter(args))
            args[first] = "unknown"
    return step.tool, args


def _plan_verdict(step: GoldStep, plan: str) -> dict[str, str] | None:
    """The review teacher's verdict on a proposed plan against the gold step (None: accept)."""
    if not plan.startswith(step.tool + " ") and plan != step.tool and not plan.startswith(step.tool + " ("):
        return {"problem": "nonexistent_tool" if " (" not in plan else "vague",
                "feedback": f"This step needs the tool {step.tool!r}, not the one proposed.",
                "route": "grounding", "verdict": "revise"}
    for name, value in step.arguments.items():
        shown = f"{name}={json.dumps(value, ensure_ascii=False)}"
        if f"{name}=" not in plan:
            return {"problem": "missing_arguments", "feedback": f"The argument {name!r} is missing: give {shown}.",
                    "route": "grounding", "verdict": "revise"}
        if shown not in plan:
            return {"problem": "missing_arguments", "feedback": f"The argument {name!r} has a wrong value: give "
                    f"{shown}.", "route": "grounding", "verdict": "revise"}
    return None


# ------------------------------------------------------------------------------------------------ building


class GoldSummary(dict[str, Any]):
    """What :func:`build_gold` did (the manifest's ``span`` section): tasks, removals per rule, episodes."""


def plan_perturbations(tasks: Sequence[GoldTask], rate: float, seed: int) -> None:
    """Choose, for a share ``rate`` of the tasks, one step and one perturbation (seeded by task id). A title passed
    as an id needs a step that takes an earlier step's id; other executed plans draw from the rest."""
    for g in tasks:
        rng = random.Random(zlib.crc32(f"perturb:{seed}:{g.task.id}".encode()))
        if g.steps and rng.random() < rate:
            k = rng.randrange(len(g.steps))
            if any(st.code for st in g.steps):
                kinds = [p for p in REST_PERTURBATIONS if p != "title_as_id" or (g.steps[k].sources and g.steps[k].item)]
                g.perturb[k] = rng.choice(kinds)
            else:
                g.perturb[k] = rng.choice(PERTURBATIONS)


async def abuild_gold(env_name: str, output: str | Path, *, limit: int | None = None, offset: int = 0,
                      perturb: float = 0.5,
                      seed: int = 0, min_tools: int = 10, min_doc_words: int = 100, dedup_threshold: float = 90.0,
                      unsafe_local: bool = False, display: Any = None,
                      env_options: Mapping[str, Any] | None = None, tasks_file: str | Path | None = None,
                      protocols: Sequence[str] = ("conagents-auto",), react: bool = False) -> GoldSummary:
    """Play the selected gold tasks of ``env_name`` with the gold teacher and write per-role chat data into
    ``output`` (``grounding.jsonl``, ``execution.jsonl``, ``review.jsonl``, with ``react`` also ``react.jsonl``,
    and ``manifest.json``, as :func:`~taskbench.agents.sft.export_sft`; the episodes under ``output/gold-run``).
    ``offset`` skips the first selected tasks and ``limit`` caps the rest, so ``--limit 20`` and ``--offset 20``
    give disjoint training and held-out tasks.

    ``tasks_file``: the tasks of a task file instead of the environment's (a generated one, ``generate --method
    executed``, whose plans the teacher plays; in a RestBench environment only generated tasks that pass the
    held-out rule are played, the others counted under ``held_out_restbench``). ``protocols``: the ConAgents
    agents that play (automatic and/or adaptive). ``react``: the teacher also plays ReAct (native calls), for a
    ReAct student trained on the same tasks."""
    from ..dataset.jsonio import write_json
    from ..envs import open_environment
    from ..envs.heldout import held_out_reason
    from ..envs.tasks import load_tasks
    from ..llm import get_model
    from .config import needed_tools, select_tools
    from .eval import AgentEvalConfig, arun_agents
    from .sft import export_sft

    if tasks_file is None:
        refuse_held_out(env_name)
    if not 0.0 <= perturb <= 1.0:
        raise ConfigError(f"--perturb {perturb}: a share between 0 and 1")
    for name in protocols:
        if name not in ("conagents-auto", "conagents-adaptive"):
            raise ConfigError(f"--protocol {name!r}: conagents-auto or conagents-adaptive")
    out = Path(output)
    env = open_environment(env_name, **dict(env_options or {}))
    try:
        specs = {t.name: t for t in env.tools()}
        tasks = load_tasks(tasks_file, env=env_name) if tasks_file is not None else env.tasks()
        candidates = []
        for t in tasks:
            offered = select_tools(env.tools(), needed_tools(t), "gold+10", seed=0, task_id=t.id)
            plan = t.meta.get("plan")
            calls = [{"tool": p.get("tool"), "arguments": p.get("arguments")} for p in plan
                     if isinstance(p, dict)] if isinstance(plan, list) else None
            candidates.append(Candidate(key=t.id, query=t.query, env=env_name, tools=offered,
                                        gold_path=list(t.gold_path),
                                        test=held_out_reason(env_name, t.id, t.query, calls)))
        kept, removed = select(candidates, min_tools=min_tools, min_doc_words=min_doc_words,
                               dedup_threshold=dedup_threshold)
        by_id = {t.id: t for t in tasks}
        golds: list[GoldTask] = []
        removed["no_executable_gold"] = 0
        passed = 0
        resource = bool(getattr(getattr(env, "runtime", None), "resource", True))
        for c in kept:
            task = by_id[c.key]
            planned = plan_steps(task)
            steps = planned[0] if planned is not None else gold_steps(env, task)
            if not steps:
                removed["no_executable_gold"] += 1
                continue
            passed += 1
            if passed <= offset:
                continue
            task = task.model_copy(update={"meta": {**task.meta, "offered": [t.name for t in c.tools]}})
            golds.append(GoldTask(task=task, steps=steps, resource=resource and planned is None,
                                  answer=planned[1] if planned is not None else ""))
            if limit is not None and len(golds) >= limit:
                break
    finally:
        await env.aclose()
    if not golds:
        raise ConfigError(f"no task of {env_name!r} passes the selection ({json.dumps(removed)}); lower "
                          "--min-doc-words or --min-tools")
    plan_perturbations(golds, perturb, seed)
    teacher = get_model("mock/gold-teacher", responses=GoldTeacher(golds))
    agents = [*protocols, *(["react"] if react else [])]
    config = AgentEvalConfig(env=env_name, agents=agents, model="mock/gold-teacher",
                             task_ids=[g.task.id for g in golds], tools="gold+10", unsafe_local=unsafe_local,
                             env_options=dict(env_options or {}), bootstrap=0,
                             tasks_file=str(tasks_file) if tasks_file is not None else None)
    run = out / "gold-run"
    result = await arun_agents(config, run, models={"agent": teacher}, display=display, cache=False)
    export = export_sft([run], out)
    examples = dict(export.examples)
    if react:
        examples["react"] = write_react_examples(run, out, specs)
    plans = {g.task.id: [{"tool": st.tool, "arguments": st.typed or st.arguments} for st in g.steps] for g in golds}
    record_calls(out, plans)
    summary = GoldSummary(env=env_name, candidates=len(candidates), selected=len(kept), played=len(golds),
                          removed=removed, solved=export.successful, episodes=result.episodes,
                          failed=result.failed, perturbed={k: sum(1 for g in golds for v in g.perturb.values()
                                                                   if v == k)
                                                           for k in dict.fromkeys([*PERTURBATIONS, *REST_PERTURBATIONS])},
                          examples=examples, protocols=list(protocols), react=react,
                          tasks_file=str(Path(tasks_file).resolve()) if tasks_file is not None else None,
                          env_options=dict(env_options or {}),
                          offset=offset, limit=limit, rules={"min_tools": min_tools, "min_doc_words": min_doc_words,
                                 "dedup_threshold": dedup_threshold})
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    manifest["span"] = dict(summary)
    write_json(out / "manifest.json", manifest)
    return summary


def record_calls(out: Path, plans: Mapping[str, list[dict[str, Any]]]) -> None:
    """Add each example's gold calls (``meta.calls``) to the role files in ``out``, so the trainer can check the
    held-out rule on the (entity, path) pairs of a generated task (:func:`taskbench.distill.data.load_examples`)."""
    from ..dataset.jsonio import write_jsonl

    for path in sorted(out.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        changed = False
        for row in rows:
            meta = row.get("meta") if isinstance(row, dict) else None
            if isinstance(meta, dict) and meta.get("task") in plans and "calls" not in meta:
                meta["calls"] = plans[meta["task"]]
                changed = True
        if changed:
            write_jsonl(path, rows)


def write_react_examples(run: Path, out: Path, specs: Mapping[str, Any]) -> int:
    """``out/react.jsonl``: every ReAct turn of the successful gold episodes of ``run`` whose answer the agent
    could read (the next call's values and the final answer appear in the query or in what the tools returned,
    as the agent saw it), with the tools as the request carried them (``specs``: the environment's tools by
    name); -> the number written."""
    from ..dataset.jsonio import write_jsonl
    from ..dataset.trajectories import read_trajectory
    from ..llm.tools import ToolSet
    from ..schema import ModelCallEvent, to_openai_messages
    from .baselines.single import FINAL_ANSWER
    from .eval import load_run

    rows: list[dict[str, Any]] = []
    unseen = 0
    seen_keys: set[str] = set()
    for row in load_run(run)[1].values():
        if getattr(row, "agent", None) != "react" or not getattr(row, "success", False):
            continue
        traj = read_trajectory(run / str(row.trajectory))
        for e in traj.events:
            if not isinstance(e, ModelCallEvent) or e.role != "react" or e.error or not e.output.tool_calls:
                continue
            offered = [FINAL_ANSWER if n == FINAL_ANSWER.name else specs[n] for n in e.tools if n in specs
                       or n == FINAL_ANSWER.name]
            if len(offered) != len(e.tools):
                continue
            toolset = ToolSet.build(offered, "required")
            alias = toolset.to_api
            messages = to_openai_messages(e.messages, alias)
            answer = to_openai_messages([e.output], alias)[0]
            shown = " ".join(str(m.get("content") or "") for m in messages)
            call = e.output.tool_calls[0]
            values = [v for v in (call.arguments or {}).values() if not isinstance(v, (dict, list))]
            if call.name == FINAL_ANSWER.name:
                values = [v.strip() for v in re.split(r",| and ", str((call.arguments or {}).get("answer", "")).rstrip("."))
                          if v.strip() and v.strip() != "Done"]
            if not all(str(v) in shown for v in values):
                unseen += 1
                continue
            example = {"messages": [*messages, answer], "tools": toolset.api_tools(), "meta": {
                "role": "react", "task": traj.id, "agent": traj.agent, "env": traj.env, "seed": traj.seed,
                "model": e.model, "event": e.index, "query": traj.task}}
            key = json.dumps(example["messages"], sort_keys=True, ensure_ascii=False)
            if key not in seen_keys:
                seen_keys.add(key)
                rows.append(example)
    write_jsonl(out / "react.jsonl", rows)
    manifest_path = out / "manifest.json"
    if manifest_path.is_file():
        doc = json.loads(manifest_path.read_text(encoding="utf-8"))
        doc.setdefault("react", {})["answer_not_seen"] = unseen
        from ..dataset.jsonio import write_json

        write_json(manifest_path, doc)
    return len(rows)


def build_gold(env_name: str, output: str | Path, **options: Any) -> GoldSummary:
    """Synchronous :func:`abuild_gold`."""
    from ..records import run_sync

    return run_sync(abuild_gold(env_name, output, **options))


__all__ = ["Candidate", "GoldStep", "GoldSummary", "GoldTask", "GoldTeacher", "HELD_OUT_PREFIX", "PERTURBATIONS",
           "REST_PERTURBATIONS", "answer_text", "plan_steps", "record_calls", "write_react_examples",
           "build_gold", "abuild_gold", "doc_words", "gold_steps", "is_held_out", "plan_perturbations",
           "refuse_held_out", "select"]
