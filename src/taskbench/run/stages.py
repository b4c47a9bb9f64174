"""The main job's stages beyond scoring: a small generation with critics (TaskBench's data engine) and an agent
comparison (ConAgents, both protocols, against ReAct) on offline tasks.

Each stage writes a complete output of its own command into the run directory, resumable on its own::

    RUN_DIR/generated/      what `taskbench generate --out RUN_DIR/generated` writes (data.json, statistics.json, ...)
    RUN_DIR/agents/         what `taskbench agents eval -o RUN_DIR/agents` writes (episodes, trajectories, metrics)

and leaves a :class:`~taskbench.schema.RunStage` in the run log with the headline figures for the report. A stage
that stops on an error is recorded as ``failed`` (the run is then incomplete and exits 1); the scoring done
before it is kept.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import TaskbenchError
from ..records import NullDisplay, RecordDisplay
from ..schema import RunStage
from ..schema.run import AgentsStageSummary, GenerateStageSummary

DEFAULT_GENERATE = 3
"""Samples the default run generates (one plan entry per structure: single, chain, DAG)."""

DEFAULT_GENERATE_TOOLS = "multimedia"
"""The bundled tool library the default run generates from."""

GENERATE_MAX_TOKENS = 1024
"""Most tokens per generation answer in the main job (the schema bounds every string and array of it)."""

DEFAULT_AGENTS = ("conagents-auto", "conagents-adaptive", "react")
"""Agents of the default run: ConAgents under both protocols against ReAct."""

GENERATE_DIR = "generated"
AGENTS_DIR = "agents"

EXAMPLES = 2
"""Kept samples quoted in the report (request and tools)."""


def _error(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, TaskbenchError) else f"{type(exc).__name__}: {exc}"


async def generation_stage(
    run_dir: Path,
    model_spec: str,
    *,
    n: int = DEFAULT_GENERATE,
    tools: str = DEFAULT_GENERATE_TOOLS,
    seed: int = 0,
    cache: bool = True,
    model_options: Mapping[str, Any] | None = None,
    endpoint: Mapping[str, Any] | None = None,
    display: RecordDisplay | None = None,
    executor: Any = None,
) -> RunStage:
    """Generate ``n`` samples from the tool library ``tools`` with ``model_spec`` (back-instruct, the model's
    own check as the LLM critic plus the rule critic, both required for data.json) into
    ``run_dir/generated``; with an ``executor`` (:mod:`taskbench.executors`), sharded over its workers by plan
    entry."""
    from ..bundled import resolve
    from ..dataset.jsonio import read_jsonl
    from ..engine.generate import GenerateOptions, agenerate
    from ..graph.build import graph_from_path
    from ..predict.runner import open_model

    stage = RunStage(kind="generate", model=model_spec, path=GENERATE_DIR)
    start = time.perf_counter()
    out = run_dir / GENERATE_DIR
    model = None
    try:
        graph = graph_from_path(resolve(tools))
        options = GenerateOptions(n=n, seed=seed, mode_weights={"single": 1, "chain": 1, "dag": 1},
                                  size_weights={2: 1, 3: 1}, max_tokens=GENERATE_MAX_TOKENS)
        if executor is not None:
            from ..executors.generate import agenerate_sharded
            from ..llm.config import ModelConfig

            config = ModelConfig.build(model_spec, concurrency=1, cache=cache, options=dict(model_options or {}),
                                       **dict(endpoint or {}))
            summary = await agenerate_sharded(graph, config, out, options, executor=executor,
                                              display=display or NullDisplay())
        else:
            model = open_model(model_spec, concurrency=1, cache=cache, options=dict(model_options or {}),
                               **dict(endpoint or {}))
            summary = await agenerate(graph, model, out, options, display=display or NullDisplay())
        stats = summary.statistics
        kept = read_jsonl(out / "data.json") if (out / "data.json").is_file() else []
        stage.summary = GenerateStageSummary.model_validate({
            "tools": tools, "method": options.method, "planned": summary.planned, "answered": stats.get("answered"),
            "failed_calls": summary.failed_calls,
            "rule_critic": (stats.get("rule_critic") or {}).get("passed"),
            "llm_critic": (stats.get("llm_critic") or {}).get("passed"),
            "both_critics": (stats.get("both_critics") or {}).get("passed"), "kept": stats.get("kept"),
            "by_mode": {m: {"planned": v.get("planned"), "kept": v.get("kept")}
                        for m, v in (stats.get("by_mode") or {}).items()},
            "calls": summary.calls, "cache_hits": summary.cache_hits,
            "tokens": summary.prompt_tokens + summary.completion_tokens,
            "examples": [{"id": r.get("id"), "type": r.get("type"), "user_request": r.get("user_request"),
                          "tools": [t.get("task") for t in r.get("task_nodes") or [] if isinstance(t, dict)]}
                         for r in kept[:EXAMPLES]],
            "reasons": stats.get("reasons_by_critic") or {},
        })
        stage.status = "complete" if summary.complete else "incomplete"
        if not summary.complete:
            stage.error = (f"{summary.planned - summary.done} of {summary.planned} generation calls failed for good"
                           + (f" (first: {summary.errors[0]})" if summary.errors else ""))
    except Exception as exc:  # recorded; the scores already made stay
        stage.status, stage.error = "failed", _error(exc)
    finally:
        if model is not None:
            await model.aclose()
    stage.seconds = time.perf_counter() - start
    return stage


async def agents_stage(
    run_dir: Path,
    model_spec: str,
    *,
    agents: Sequence[str] = DEFAULT_AGENTS,
    tasks: Sequence[str] | None = None,
    cache: bool = True,
    model_options: Mapping[str, Any] | None = None,
    endpoint: Mapping[str, Any] | None = None,
    display: RecordDisplay | None = None,
    executor: Any = None,
) -> RunStage:
    """Run ``agents`` on a few of our bundled offline TMDB tasks (``tasks``, default
    :data:`~taskbench.agents.eval.DEMO_TASKS`) with ``model_spec`` into ``run_dir/agents`` (gold tools, a short
    step cap; the code runs in the sandbox); with an ``executor``, sharded over its workers by episode."""
    from ..agents.eval import DEMO_TASKS, arun_agents, demo_config

    stage = RunStage(kind="agents", model=model_spec, path=AGENTS_DIR)
    start = time.perf_counter()
    try:
        config = demo_config(model_spec, tasks=list(tasks or DEMO_TASKS), agents=list(agents))
        ep = dict(endpoint or {})
        base_url = ep.get("base_url")
        where: dict[str, Any] = dict(
            display=display or NullDisplay(), cache=cache,
            # agent runs take one endpoint: the first of the run's replicas
            base_url=base_url[0] if isinstance(base_url, list) else base_url, api_key_env=ep.get("api_key_env"),
            model_options=dict(model_options or {}),
        )
        if executor is not None:
            from ..executors.agents import arun_agents_sharded

            result = await arun_agents_sharded(config, run_dir / AGENTS_DIR, executor=executor, **where)
        else:
            result = await arun_agents(config, run_dir / AGENTS_DIR, **where)
        roles = config.models_by_role()
        stage.summary = AgentsStageSummary(env=config.env, tools=config.tools, tasks=list(config.task_ids or []),
                                           max_steps=config.budgets.max_steps,
                                           role_models={r: roles[r] for r in ("grounding", "execution", "review",
                                                                              "react")},
                                           comparison=list(result.metrics.get("comparison") or []),
                                           failures={name: dict(a.get("failures") or {}) for name, a in
                                                     (result.metrics.get("agents") or {}).items()})
        stage.status = "complete" if result.complete else "incomplete"
        if not result.complete:
            stage.error = (f"{result.failed} of {result.episodes} episodes had model calls fail for good"
                           + (f" (first: {result.errors[0]})" if result.errors else ""))
    except Exception as exc:
        from ..errors import SandboxUnavailableError

        stage.status, stage.error = "failed", _error(exc)
        if isinstance(exc, SandboxUnavailableError):
            stage.error += "; `taskbench run --agents none` skips the agents stage"
    stage.seconds = time.perf_counter() - start
    return stage


__all__ = [
    "AGENTS_DIR",
    "DEFAULT_AGENTS",
    "DEFAULT_GENERATE",
    "DEFAULT_GENERATE_TOOLS",
    "GENERATE_DIR",
    "agents_stage",
    "generation_stage",
]
