"""`taskbench agents eval` as a library call: :class:`AgentsSpec` (the command's flags and defaults) and
:func:`agents_eval_spec` (this process, or sharded by episode over an executor; resumable, crash-safe).

The spec turns into the run's :class:`~taskbench.agents.eval.AgentEvalConfig` (what decides its records) plus
where and how the models are reached; the executor choice is made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .executor import ExecutorSpec, executor_scope

if TYPE_CHECKING:  # pragma: no cover
    from ..agents.eval import AgentEvalConfig, AgentEvalResult
    from ..records import RecordDisplay


def _names(values: str | Sequence[str] | None) -> list[str]:
    """Comma-separated and/or repeated names -> one list."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [v.strip() for item in items for v in str(item).split(",") if v.strip()]


@dataclass(frozen=True)
class AgentsSpec:
    """Everything `taskbench agents eval` takes, with its defaults (see ``taskbench agents eval --help``)."""

    env: str
    """Environment: restbench-tmdb, restbench-spotify, taskbench-DOMAIN, or mcp:COMMAND."""
    agents: str | Sequence[str]
    """Agent names (the agent registry's), a list or comma-separated."""
    model: str
    """Model of every role without its own."""
    output: str | Path
    """Run directory (resumed if it exists)."""
    role_models: dict[str, str] = field(default_factory=dict)
    """Own model per role (grounding, execution, review, react)."""
    students: bool = False
    """Every ConAgents role and ReAct use the student shipped for it (``model`` must be the students' base)."""
    tools: str = "gold+10"
    repeats: int = 1
    """Episodes per (agent, task), seeds 0..K-1."""
    limit: int | None = None
    task_ids: str | Sequence[str] | None = None
    tasks_file: str | Path | None = None
    task_set: str | None = None
    """RestBench: restbench | own | all | auto."""
    alpha: int = 3
    beta: int = 3
    ablations: str | Sequence[str] = ()
    sweep: str | None = None
    max_steps: int = 8
    temperature: float = 0.0
    retry_temperature: float = 0.7
    """react@N, toolllm@N, reflexion: the least temperature of trials 2..N (each with its own seed)."""
    concurrency: int = 1
    unsafe_local: bool = False
    bootstrap: int = 1000
    cache: bool = True
    base_url: str | None = None
    api_key_env: str | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    executor: ExecutorSpec | Any = field(default_factory=ExecutorSpec)
    """Where episodes run: this process, or sharded over Ray workers by episode."""

    def config(self) -> AgentEvalConfig:
        """The run's :class:`~taskbench.agents.eval.AgentEvalConfig` (the options checked)."""
        from ..agents.config import Budgets, student_models
        from ..agents.eval import AgentEvalConfig

        role_models = dict(self.role_models)
        if self.students:
            role_models = {**student_models(self.model), **role_models}
        if self.task_set and not self.env.startswith("restbench"):
            raise ConfigError(f"--task-set is for the RestBench environments, not {self.env!r} (drop it, or use "
                              "--tasks FILE)")
        return AgentEvalConfig(
            env=self.env, agents=_names(self.agents), model=self.model, role_models=role_models, tools=self.tools,
            seeds=self.repeats, limit=self.limit, task_ids=_names(self.task_ids) or None,
            tasks_file=str(self.tasks_file) if self.tasks_file else None, alpha=self.alpha, beta=self.beta,
            ablations=_names(self.ablations), sweep=self.sweep, budgets=Budgets(max_steps=self.max_steps),
            temperature=self.temperature, retry_temperature=self.retry_temperature,
            unsafe_local=self.unsafe_local, concurrency=self.concurrency,
            env_options={"task_set": self.task_set} if self.task_set else {}, bootstrap=self.bootstrap,
        )


def agents_eval_spec(spec: AgentsSpec, *, display: RecordDisplay | None = None) -> AgentEvalResult:
    """Run the agents of ``spec`` on its environment's tasks into ``spec.output`` and score them, as `taskbench
    agents eval` does (resumable: finished episodes are kept), in this process or sharded over ``spec.executor``."""
    from ..agents.eval import run_agents
    from .executor import check_executor

    config = spec.config()
    check_executor(spec.executor)
    where: dict[str, Any] = dict(display=display, cache=spec.cache, base_url=spec.base_url,
                                 api_key_env=spec.api_key_env, model_options=dict(spec.model_options))
    with executor_scope(spec.executor) as runner:
        if runner is not None:
            from ..executors.agents import arun_agents_sharded
            from ..records import run_sync

            result: AgentEvalResult = run_sync(arun_agents_sharded(config, spec.output, executor=runner, **where))
            return result
        return run_agents(config, spec.output, **where)


__all__ = ["AgentsSpec", "agents_eval_spec"]
