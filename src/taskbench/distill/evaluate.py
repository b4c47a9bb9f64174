"""Per-role scores of a model (a student ``llamacpp/BASE+ADAPTER``, the base, a teacher) on held-out SPAN
examples: the prompt of each example is sent as the protocol sends it, and the answer is scored against the
example's target.

- **grounding** (the plan schema over the task's offered tools, as ConAgents asks): next-tool accuracy (the
  planned tool, FINISH included, is the target's), argument match (tool right and every argument name and
  value equal to the target's; FINISH needs none) and argument F1 over (name, value) pairs; the same two over
  the tool steps alone (``step_*``: targets that are not FINISH) and the share of answers that are FINISH,
  so that a model which always finishes (right on every last step) cannot pass for a grounding agent;
- **execution** (stop at the closing fence, as ConAgents asks): execution success, the answer's code run in
  the sandbox in the environment as it was when the teacher answered (every earlier code run of the episode
  replayed first), succeeding as the protocol counts it (no error, a non-empty ``result``), and result match,
  the share whose ``result`` is the one the target's code gives (a program that runs but extracts the wrong
  field, or a constant, succeeds and does not match). The target's own code is run the same way; an example
  where it fails is left out and counted (``gold_failed``);
- **review** (the review schema): verdict accuracy (accept or revise as the target) and route accuracy on the
  targets that revise (revise, routed to the target's agent).

**Held out.** A model string with an adapter is refused on examples of a task its adapter was trained on
(the adapter's ``distill.json`` names its data and limit), and :func:`~taskbench.distill.data.load_examples`
refuses RestBench examples in any data (RestBench is the end-to-end test).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..agents.config import Budgets
from ..agents.eval import trajectory_path
from ..agents.prompts import CODE_STOP, extract_code, parse_plan, parse_verdict, plan_schema, review_schema
from ..errors import ConfigError, InputError
from .data import load_examples

SCORES = {"grounding": ("next_tool_accuracy", "argument_match", "argument_f1", "step_tool_accuracy",
                         "step_argument_match", "finish_answers"),
          "execution": ("execution_success",),
          "review": ("verdict_accuracy", "route_accuracy"),
          "react": ("next_call_accuracy", "argument_match", "argument_f1", "final_answers")}


def trained_tasks(model: str) -> set[tuple[str, str]]:
    """(env, task) of every example the adapter of ``model`` (``...+ADAPTER``) was trained on; empty for a
    model without an adapter. Raises InputError when the adapter's training record is missing."""
    if "+" not in model:
        return set()
    from ..llm.providers.llamacpp import student_file

    given = model.split("+", 1)[1]
    adapter = student_file(given[len("student:"):]) if given.startswith("student:") else Path(given).expanduser()
    beside = adapter.with_suffix(".json")  # a shipped student: ROLE.gguf with ROLE.json (its distill.json)
    record = beside if adapter.is_file() and beside.is_file() else \
        (adapter if adapter.is_dir() else adapter.parent) / "distill.json"
    if not record.is_file():
        raise InputError("no distill.json beside the adapter: what it was trained on is unknown, so held-out "
                         "examples cannot be told apart", path=record)
    doc = json.loads(record.read_text(encoding="utf-8"))
    if isinstance(doc.get("trained_tasks"), list):
        return {tuple(str(t).split("/", 1)) for t in doc["trained_tasks"]}  # type: ignore[misc]
    # a record written before the tasks were kept in it: read its data again
    config = doc.get("config") or {}
    rows = load_examples(config["data"], config["role"])[: config.get("limit")]
    return {(str(r["meta"].get("env")), str(r["meta"].get("task"))) for r in rows}


def _trajectory(data: Path, meta: Mapping[str, Any]) -> Path:
    given = meta.get("trajectory")
    if isinstance(given, str) and Path(given).is_file():
        return Path(given)
    path = trajectory_path(data / "gold-run", str(meta.get("agent")), str(meta.get("task")), int(meta.get("seed") or 0))
    if not path.is_file():
        raise InputError("the trajectory of this example is not found (the execution and grounding scores need "
                         "the episode's tools and earlier code)", path=path)
    return path


class _Context:
    """Environments, tasks and trajectories of the examples, opened once."""

    def __init__(self, data: Path, unsafe_local: bool) -> None:
        self.data = data
        self.unsafe_local = unsafe_local
        self.envs: dict[str, Any] = {}

    def _span(self) -> dict[str, Any]:
        """What span-data recorded of the data's making (its task file and environment options), if anything."""
        path = self.data / "manifest.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, ValueError):
            return {}
        span = doc.get("span") if isinstance(doc, dict) else None
        return span if isinstance(span, dict) else {}

    async def env(self, name: str) -> Any:
        if name not in self.envs:
            from ..envs import open_environment

            options = self._span().get("env_options") or {}
            self.envs[name] = open_environment(name, **(options if isinstance(options, dict) else {}))
        return self.envs[name]

    def tasks_of(self, env: Any) -> dict[str, Any]:
        """The tasks the examples may come from: the environment's, and those of span-data's task file."""
        tasks = {t.id: t for t in env.tasks()}
        tasks_file = self._span().get("tasks_file")
        if isinstance(tasks_file, str) and Path(tasks_file).is_file():
            from ..envs.tasks import load_tasks

            tasks.update({t.id: t for t in load_tasks(tasks_file, env=env.name)})
        return tasks

    async def episode(self, meta: Mapping[str, Any]) -> tuple[Any, Any, Any]:
        """(env, task, trajectory) of an example."""
        from ..dataset.trajectories import read_trajectory

        env = await self.env(str(meta.get("env")))
        task = self.tasks_of(env).get(str(meta.get("task")))
        if task is None:
            raise InputError(f"no task {meta.get('task')!r} in {meta.get('env')!r}")
        return env, task, read_trajectory(_trajectory(self.data, meta))

    async def tools(self, meta: Mapping[str, Any]) -> list[Any]:
        env, _, traj = await self.episode(meta)
        order = traj.config.get("tool_order") or [t.name for t in traj.tools]
        return [env.tool(name) for name in order if env.tool(name) is not None]

    async def run_in_place(self, meta: Mapping[str, Any], code: str) -> tuple[bool, str, str | None]:
        """Run ``code`` where the example's answer ran: a fresh episode of its task, every earlier code run
        of its trajectory replayed first. -> (success as the protocol counts it, observation, the whole result
        as the protocol renders it, uncut; None unless it succeeded)."""
        from ..agents.episode import Episode, result_text
        from ..dataset.trajectories import TrajectoryWriter
        from ..schema import CodeRunEvent, Trajectory

        env, task, traj = await self.episode(meta)
        seed = int(meta.get("seed") or 0)
        await env.reset(seed=seed, task=task)
        tools = await self.tools(meta)
        before = [e for e in traj.events if isinstance(e, CodeRunEvent) and e.index < int(meta.get("event") or 0)]
        with tempfile.TemporaryDirectory(prefix="taskbench-distill-eval-") as tmp:
            writer = TrajectoryWriter(Path(tmp) / "t.jsonl", Trajectory(id=task.id, task=task.query, env=traj.env,
                                                                        agent="distill-eval", seed=seed))
            ep = Episode(task=task, env=env, tools=tools, writer=writer, models={"agent": None}, budgets=Budgets(),
                         seed=seed, sandbox_options={"unsafe_local": True} if self.unsafe_local else None)
            try:
                for e in before:
                    if e.code:
                        await ep.run_code(e.code)
                outcome = await ep.run_code(code)
            finally:
                await ep.aclose()
                writer.close()
        whole = result_text(outcome.run.result, sys.maxsize) if outcome.ok else None
        return outcome.ok, outcome.observation, whole

    async def aclose(self) -> None:
        for env in self.envs.values():
            await env.aclose()


def _pairs(arguments: Mapping[str, str]) -> set[tuple[str, str]]:
    return {(k.strip(), v.strip()) for k, v in arguments.items()}


def _f1(pred: set[Any], gold: set[Any]) -> float:
    if not pred and not gold:
        return 1.0
    hit = len(pred & gold)
    return 0.0 if hit == 0 else 2 * hit / (len(pred) + len(gold))


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


async def _score_one(role: str, model: Any, row: Mapping[str, Any], ctx: _Context,
                     budgets: Budgets) -> dict[str, Any]:
    from ..llm.base import GenerationConfig

    messages = [{"role": m["role"], "content": m.get("content") or ""} for m in row["messages"][:-1]]
    target = str(row["messages"][-1].get("content") or "")
    meta = row["meta"]
    rec: dict[str, Any] = {"task": meta.get("task"), "event": meta.get("event")}
    if role == "grounding":
        tools = await ctx.tools(meta)
        out = await model.generate(messages, schema=plan_schema(tools), config=GenerationConfig(
            temperature=0.0, max_tokens=budgets.plan_tokens, seed=0))
        gold, _ = parse_plan(_json(target))
        if gold is None:
            raise InputError(f"the target of example {meta.get('task')}#{meta.get('event')} is not a plan")
        pred, _ = parse_plan(out.parsed)
        tool_ok = pred is not None and (pred.finish if gold.finish else pred.tool.strip() == gold.tool.strip())
        args_ok = tool_ok and (gold.finish or _pairs(pred.arguments) == _pairs(gold.arguments))  # type: ignore[union-attr]
        f1 = 1.0 if gold.finish and tool_ok else 0.0 if pred is None or gold.finish else \
            _f1(_pairs(pred.arguments), _pairs(gold.arguments))
        rec.update(answer=out.text, target=target, next_tool=tool_ok, argument_match=args_ok, argument_f1=f1,
                   gold_finish=gold.finish, finish=pred is not None and pred.finish)
    elif role == "execution":
        gold_code = extract_code(target) or ""
        gold_ok, gold_obs, gold_result = await ctx.run_in_place(meta, gold_code)
        out = await model.generate(messages, config=GenerationConfig(
            temperature=0.0, max_tokens=budgets.code_tokens, seed=0, stop=CODE_STOP))
        code = extract_code(out.text)
        ok, obs, result = (await ctx.run_in_place(meta, code)) if code else (False, "no code in the answer", None)
        # both ran in the same replayed state, so the same result reads the same (the protocol's rendering,
        # uncut: a result that shares the shown part of the target's and differs after it does not match)
        rec.update(answer=out.text, gold_ok=gold_ok, gold_observation=gold_obs[:300], execution_success=ok,
                   result_match=ok and gold_ok and result == gold_result, observation=obs[:300])
    elif role == "react":  # a native call: the tool and its arguments against the target's
        gold_call = (row["messages"][-1].get("tool_calls") or [{}])[0].get("function") or {}
        out = await model.generate(row["messages"][:-1], tools=row.get("tools") or [], tool_choice="required",
                                   config=GenerationConfig(temperature=0.0, max_tokens=budgets.act_tokens, seed=0))
        pred = out.tool_calls[0] if out.tool_calls else None
        gold_args = _json(str(gold_call.get("arguments") or "{}")) or {}
        pred_args = pred.arguments if pred is not None and isinstance(pred.arguments, dict) else {}
        gold_pairs = {(str(k), json.dumps(v, sort_keys=True)) for k, v in gold_args.items()}
        pred_pairs = {(str(k), json.dumps(v, sort_keys=True)) for k, v in pred_args.items()}
        tool_ok = pred is not None and pred.name == gold_call.get("name")
        final = gold_call.get("name") == "final_answer"
        rec.update(answer=out.text, target=json.dumps(gold_call), next_tool=tool_ok,
                   argument_match=tool_ok and (final or pred_pairs == gold_pairs),
                   argument_f1=1.0 if final and tool_ok else _f1(pred_pairs, gold_pairs) if tool_ok else 0.0,
                   gold_finish=final, finish=pred is not None and pred.name == "final_answer")
    else:
        out = await model.generate(messages, schema=review_schema(), config=GenerationConfig(
            temperature=0.0, max_tokens=budgets.review_tokens, seed=0))
        gold_v, _ = parse_verdict(_json(target))
        if gold_v is None:
            raise InputError(f"the target of example {meta.get('task')}#{meta.get('event')} is not a verdict")
        pred_v, _ = parse_verdict(out.parsed) if out.parsed is not None else (None, None)
        verdict_ok = pred_v is not None and pred_v.accept == gold_v.accept
        rec.update(answer=out.text, target=target, revise=not gold_v.accept, verdict=verdict_ok,
                   route=None if gold_v.accept else (verdict_ok and pred_v is not None
                                                     and pred_v.route == gold_v.route))
    return rec


def summarise(role: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The role's scores over scored examples (fractions; ``n`` each is over)."""
    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    if role == "grounding":
        # a model that always says FINISH is right on every last step: the scores over the tool steps alone
        # (targets that are not FINISH) and the share of FINISH answers show it
        steps = [r for r in records if not r.get("gold_finish")]
        return {"n": len(records), "next_tool_accuracy": mean([float(r["next_tool"]) for r in records]),
                "argument_match": mean([float(r["argument_match"]) for r in records]),
                "argument_f1": mean([float(r["argument_f1"]) for r in records]),
                "tool_steps": len(steps), "step_tool_accuracy": mean([float(r["next_tool"]) for r in steps]),
                "step_argument_match": mean([float(r["argument_match"]) for r in steps]),
                "finish_answers": mean([float(bool(r.get("finish"))) for r in records])}
    if role == "react":
        return {"n": len(records), "next_call_accuracy": mean([float(r["next_tool"]) for r in records]),
                "argument_match": mean([float(r["argument_match"]) for r in records]),
                "argument_f1": mean([float(r["argument_f1"]) for r in records]),
                "final_answers": mean([float(bool(r.get("finish"))) for r in records])}
    if role == "execution":
        kept = [r for r in records if r["gold_ok"]]
        return {"n": len(kept), "gold_failed": len(records) - len(kept),
                "execution_success": mean([float(r["execution_success"]) for r in kept]),
                "result_match": mean([float(r["result_match"]) for r in kept])}
    revise = [r for r in records if r["revise"]]
    return {"n": len(records), "revise_targets": len(revise),
            "verdict_accuracy": mean([float(r["verdict"]) for r in records]),
            "route_accuracy": mean([float(r["route"]) for r in revise])}


async def ascore_role(data: str | Path, role: str, model: str, *, limit: int | None = None, offset: int = 0,
                      unsafe_local: bool = False, options: Mapping[str, Any] | None = None,
                      progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Score ``model`` on the examples ``offset .. offset+limit`` of ``data/ROLE.jsonl`` (see the module
    docstring); returns ``{"role", "model", "data", "scores", "seconds", "examples": [per-example records]}``."""
    from ..llm import get_model

    if role not in SCORES:
        raise ConfigError(f"--role {role!r}: distill-eval scores {', '.join(SCORES)} (a ReAct student is scored "
                          "in episodes, with `taskbench agents eval`)")
    rows = load_examples(data, role)
    rows = rows[offset: offset + limit if limit is not None else None]
    if not rows:
        raise InputError(f"no {role} examples at --offset {offset}", path=Path(data) / f"{role}.jsonl")
    trained = trained_tasks(model)
    overlap = sorted({f"{r['meta'].get('env')}/{r['meta'].get('task')}" for r in rows
                      if (str(r["meta"].get("env")), str(r["meta"].get("task"))) in trained})
    if overlap:
        raise ConfigError(f"{len(overlap)} task(s) of these examples were in the adapter's training data "
                          f"({', '.join(overlap[:3])}{' ...' if len(overlap) > 3 else ''}): score it on held-out "
                          "tasks (span-data --offset past the training tasks)")
    llm = get_model(model, cache=False, **dict(options or {}))
    ctx = _Context(Path(data), unsafe_local)
    budgets = Budgets()
    records: list[dict[str, Any]] = []
    start = time.perf_counter()
    try:
        for i, row in enumerate(rows):
            records.append(await _score_one(role, llm, row, ctx, budgets))
            if progress is not None:
                progress(i + 1, len(rows))
    finally:
        await ctx.aclose()
        await llm.aclose()
    return {"role": role, "model": model, "data": str(data), "offset": offset, "limit": limit,
            "scores": summarise(role, records), "seconds": round(time.perf_counter() - start, 1),
            "examples": records}


def score_role(data: str | Path, role: str, model: str, **options: Any) -> dict[str, Any]:
    """Synchronous :func:`ascore_role`."""
    from ..records import run_sync

    return run_sync(ascore_role(data, role, model, **options))


__all__ = ["SCORES", "ascore_role", "score_role", "summarise", "trained_tasks"]
