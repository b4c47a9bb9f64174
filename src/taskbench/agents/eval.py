"""Evaluating agents in an environment: episodes on the one resumable runner, trajectories, metrics.

Data flow::

    environment (tasks, tools, checker) x agents x seeds --select_tools(gold | gold+10 | all)--> episodes
    episode --Episode + agent.run--> trajectory (trajectories/<agent>/<task>__s<seed>.jsonl, event by event)
            --env.check--> outcome --episode_row--> one record in episodes.jsonl (taskbench.records.run_records)
    episodes.jsonl --metrics_document--> metrics.json

The output directory holds ``episodes.jsonl`` (one record per (agent, task, seed), in a stable order),
``trajectories/``, ``header.json`` (the run header: what was asked for, checked on resume) and
``metrics.json``. Everything crash-safe comes
from :func:`taskbench.records.run_records`: a killed run keeps every finished episode and the events of the
running ones; a rerun skips finished episodes, reruns the interrupted ones (their trajectory files are
rewritten) and retries episodes whose model calls failed for good (written as ``"failed": true`` records).
Records hold no run-dependent figure but ``wall_seconds``, so with the response cache a rerun's metrics equal
an uninterrupted run's (wall times aside).

:func:`run_agents` is the function to call from other code (``taskbench run`` uses it).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..dataset.header import HEADER_FILE, new_header, open_run, read_header
from ..dataset.header import fingerprint as hash_identity
from ..dataset.jsonio import write_json
from ..dataset.trajectories import TrajectoryWriter
from ..errors import (
    ConfigError,
    InputError,
    ModelError,
    SandboxUnavailableError,
    TaskbenchError,
    validation_message,
)
from ..eval.stats import MAX_REPLICATES
from ..llm.model import MAX_CONCURRENCY
from ..records import RecordDisplay, read_records, run_records, run_sync
from ..schema import AgentTask, Trajectory
from ..schema.episode import EpisodeRow, EpisodeUsage, FailedEpisodeRow, parse_episode
from . import tooldocs
from .baselines import ROLES_OF, make_agent
from .config import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_RETRY_TEMPERATURE,
    ROLES,
    TOOL_SETTINGS,
    AgentSpec,
    Budgets,
    expand_agents,
    needed_tools,
    select_tools,
)
from .episode import Episode
from .metrics import crash_row, episode_row, mechanism, metrics_document

MAX_REPEATS = 1000
"""The most episodes per (agent, task) (``--repeats``): pass^k is reported for k up to 10."""

EPISODES_FILE = "episodes.jsonl"
METRICS_FILE = "metrics.json"
CONFIG_FILE = HEADER_FILE
"""The run header (:mod:`taskbench.dataset.header`); runs made before headers have a ``config.json``."""
TRAJECTORIES_DIR = "trajectories"

OWN_MODEL_ROLES: tuple[str, ...] = (*ROLES, "react")
"""Roles that may have a model of their own: ConAgents' three and ReAct's (a ReAct student)."""

def model_roles() -> tuple[str, ...]:
    """Roles that call a model: ConAgents' three, and every registered agent's (the baselines': react, code,
    planner, reflect, dfsdt, selector, caller, parser, summarizer; and any added agent's)."""
    return tuple(dict.fromkeys([*ROLES, *(r for roles in ROLES_OF.values() for r in roles)]))

FINGERPRINT_ROLES: tuple[str, ...] = (*ROLES, "react", "code", "planner")
"""The roles whose models the fingerprint names (those of the first version: the later baselines' roles take
the default model, and the fingerprints of earlier runs stay as they were)."""


class AgentEvalConfig(BaseModel):
    """What an agent evaluation runs (everything that decides its records)."""

    model_config = ConfigDict(extra="forbid")

    env: str = Field(description="Environment name (restbench-tmdb, taskbench-multimedia, mcp:<command>, ...).")
    agents: list[str] = Field(description="Agent names (see taskbench.agents.config).")
    model: str = Field(description="'provider/model' for every role without its own model.")
    role_models: dict[str, str] = Field(default_factory=dict,
                                        description="Own model per ConAgents role (grounding, execution, review).")
    tools: str = Field(default="gold+10", description="gold | gold+10 | all.")
    seeds: int = Field(default=1, ge=1, le=MAX_REPEATS, description="Episodes per (agent, task), seeds 0..K-1 (pass^k).")
    limit: int | None = Field(default=None, ge=1, description="Only the first N tasks.")
    task_ids: list[str] | None = Field(default=None, description="Only these tasks (in the environment's order).")
    tasks_file: str | None = Field(default=None, description="Tasks from this JSON Lines file instead of the "
                                   "environment's own (taskbench.envs.tasks).")
    alpha: int = Field(default=DEFAULT_ALPHA, ge=0, le=20, description="Planning-review turns (conagents-auto).")
    beta: int = Field(default=DEFAULT_BETA, ge=0, le=20, description="Execution-review turns.")
    ablations: list[str] = Field(default_factory=list, description="Ablation variants to add (ConAgents).")
    sweep: str | None = Field(default=None, description="Turn-limit sweep: alpha | beta | both (1..5).")
    budgets: Budgets = Field(default_factory=Budgets, description="Step cap, token and text bounds.")
    temperature: float = Field(default=0.0, ge=0.0, description="Sampling temperature (with seeds > 1, > 0).")
    retry_temperature: float = Field(
        default=DEFAULT_RETRY_TEMPERATURE, gt=0.0, le=2.0,
        description="The least temperature of trials 2..N of react@N, toolllm@N and reflexion (each trial also "
                    "samples with its own seed; trial 1 keeps `temperature`).")
    unsafe_local: bool = Field(default=False, description="Run agent code unconfined where bwrap is missing.")
    concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY, description="Episodes at once.")
    env_options: dict[str, Any] = Field(default_factory=dict, description="Options of the environment.")
    bootstrap: int = Field(default=1000, ge=0, le=MAX_REPLICATES, description="Bootstrap replicates of the CIs.")

    def specs(self) -> list[AgentSpec]:
        """The agents, variants included."""
        specs = expand_agents(self.agents, alpha=self.alpha, beta=self.beta, ablations=self.ablations,
                              sweep=self.sweep)
        if not specs:
            raise ConfigError("no agent to run: --agent names none (e.g. --agent conagents-auto,react)")
        return specs

    def models_by_role(self) -> dict[str, str]:
        """The model of every role."""
        unknown = sorted(set(self.role_models) - set(OWN_MODEL_ROLES))
        if unknown:
            raise ConfigError(f"no role {unknown[0]!r} (roles with their own model: {', '.join(OWN_MODEL_ROLES)})")
        return {role: self.role_models.get(role, self.model) for role in model_roles()}

    def identity(self) -> dict[str, Any]:
        """What decides an episode's record besides its agent, task and seed (a resume must repeat it)."""
        models = {r: m for r, m in self.models_by_role().items() if r in FINGERPRINT_ROLES}
        what = {"env": self.env, "env_options": self.env_options, "tools": self.tools, "models": models,
                "budgets": self.budgets.model_dump(), "temperature": self.temperature}
        if self.tasks_file is not None:  # only then: the fingerprints of earlier runs stay as they were
            what["tasks_file"] = self.tasks_file
        if any(s.tries > 1 for s in self.specs()):  # only for agents that retry (their trials sample anew)
            what["retry_temperature"] = self.retry_temperature
        return what

    def fingerprint(self) -> str:
        """The hash of :meth:`identity` (in the run header and in every episode record)."""
        return hash_identity(self.identity())


class AgentEvalResult(BaseModel):
    """What :func:`run_agents` did, and the metrics document it wrote."""

    model_config = ConfigDict(extra="ignore")

    output: str = Field(description="The run directory.")
    episodes: int = Field(default=0, description="Episodes selected.")
    skipped: int = Field(default=0, description="Episodes already done by an earlier run.")
    written: int = Field(default=0, description="Episode records written by this run.")
    failed: int = Field(default=0, description="Episodes whose model calls failed for good (rerun to retry).")
    errors: list[str] = Field(default_factory=list, description="The first few failures.")
    seconds: float = Field(default=0.0, description="Wall seconds of this run.")
    metrics: dict[str, Any] = Field(default_factory=dict, description="The metrics document (metrics.json).")

    @property
    def complete(self) -> bool:
        """True when every episode has a good record."""
        return self.failed == 0


class _Item(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    spec: AgentSpec
    task: AgentTask
    seed: int

    @property
    def key(self) -> str:
        return f"{self.spec.name}/{self.task.id}/s{self.seed}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "task"


def trajectory_path(output: Path, agent: str, task_id: str, seed: int) -> Path:
    """Where an episode's trajectory file lives in a run directory."""
    return output / TRAJECTORIES_DIR / _slug(agent) / f"{_slug(task_id)}__s{seed}.jsonl"


def select_tasks(tasks: Sequence[AgentTask], *, limit: int | None = None,
                 task_ids: Sequence[str] | None = None) -> list[AgentTask]:
    """The tasks to run: those named (in the environment's order; an unknown id is an error), else all,
    cut to the first ``limit``."""
    chosen = list(tasks)
    if task_ids:
        known = {t.id for t in tasks}
        missing = [i for i in task_ids if i not in known]
        if missing:
            sample = ", ".join(t.id for t in tasks[:5])
            raise ConfigError(f"no task {missing[0]!r} in this environment (tasks: {sample}, ...)")
        wanted = set(task_ids)
        chosen = [t for t in tasks if t.id in wanted]
    return chosen[:limit] if limit else chosen


def open_models(config: AgentEvalConfig, *, cache: bool | str = True, base_url: str | None = None,
                api_key_env: str | None = None, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One :class:`~taskbench.llm.Model` per role. Embedded llama.cpp models get an instance per role (each
    keeps the KV cache of its own prompt prefix; the weights are memory-mapped once); other backends share one
    Model per model string. ``"agent"`` is the run's own model (``--model``); an embedded one gets its instance
    only when some role plays another model (a student), whose repeated answers it resamples
    (:meth:`~taskbench.agents.episode.Episode.generate`). Models load lazily, so roles that never run cost
    nothing."""
    from ..llm.config import open_model

    out: dict[str, Any] = {}
    shared: dict[str, Any] = {}
    by_role = config.models_by_role()
    students = any(spec != config.model for spec in by_role.values())
    for role, spec in {**by_role, "agent": config.model}.items():
        def make(spec: str = spec) -> Any:
            return open_model(spec, concurrency=config.concurrency, cache=cache, base_url=base_url,
                              api_key_env=api_key_env, options=dict(options or {}))
        if spec.startswith("llamacpp/"):
            out[role] = make() if role != "agent" or students else None
        else:
            out[role] = shared[spec] if spec in shared else shared.setdefault(spec, make())
    return {k: v for k, v in out.items() if v is not None}


async def _close_models(models: Mapping[str, Any]) -> None:
    seen: set[int] = set()
    for m in models.values():
        if id(m) not in seen:
            seen.add(id(m))
            await m.aclose()


def _check_sandbox(specs: Sequence[AgentSpec], unsafe_local: bool) -> None:
    if unsafe_local or not any(s.uses_code for s in specs):
        return
    from ..envs.sandbox import sandbox_status

    status = sandbox_status()
    if not status.available:
        raise SandboxUnavailableError(status.reason)


def prepare_run(config: AgentEvalConfig, output: str | Path, *, write: bool = True
                ) -> tuple[Path, str, list[AgentTask] | None]:
    """What a run does before its first episode, local or sharded: check the configuration, read a tasks file,
    check the sandbox, and (``write``) write or check the run header. Returns ``(out, fingerprint, tasks from
    the file)``. A caller that passes ``write=False`` opens its environments first and then calls
    :func:`write_run_header`, so that a misspelled ``--env`` leaves nothing behind."""
    if config.tools not in TOOL_SETTINGS:
        raise ConfigError(f"--tools {config.tools!r}: expected one of {', '.join(TOOL_SETTINGS)}")
    specs = config.specs()
    config.models_by_role()
    file_tasks = None
    if config.tasks_file is not None:  # read before anything is written: a bad file leaves no directory behind
        from ..envs.tasks import load_tasks

        file_tasks = load_tasks(config.tasks_file, env=config.env)
    out = Path(output)
    fingerprint = config.fingerprint()
    _check_sandbox(specs, config.unsafe_local)
    if write:
        write_run_header(out, config, fingerprint)
    return out, fingerprint, file_tasks


def write_run_header(out: Path, config: AgentEvalConfig, fingerprint: str) -> None:
    """Make ``out`` and write (or check against a resumed run's) the run header; an ``episodes.jsonl`` there
    that this runner did not write is refused first, so nothing is changed."""
    from ..records import vet_records

    if (out / EPISODES_FILE).is_file():
        vet_records(out / EPISODES_FILE)
    _write_config(out, config, fingerprint)


def run_tasks(config: AgentEvalConfig, env: Any, file_tasks: Sequence[AgentTask] | None) -> list[AgentTask]:
    """The selected tasks (from the tasks file, else the environment's own); a task file's are checked against
    the open environment first (:func:`taskbench.envs.tasks.check_tasks`: its tool names, ``--tools``, and
    set-ups on a server whose data cannot be copied per episode)."""
    tasks = select_tasks(file_tasks if file_tasks is not None else env.tasks(), limit=config.limit,
                         task_ids=config.task_ids)
    if not tasks:
        raise ConfigError(f"environment {config.env!r} has no tasks to run (give them in a file: --tasks FILE)")
    if file_tasks is not None:
        from ..envs.tasks import check_tasks, task_file

        check_tasks(list(file_tasks), env, path=task_file(config.tasks_file) if config.tasks_file else None,
                    tools=config.tools, concurrency=config.concurrency)
    return tasks


def episode_keys(config: AgentEvalConfig, tasks: Sequence[AgentTask]) -> list[str]:
    """The ids of the run's episodes (``agent/task/sSEED``), in the records' order."""
    return [it.key for it in _items(config, tasks)]


MAX_EPISODES = 1_000_000
"""Episodes (agents x tasks x repeats) one run may hold: each is an item in memory before the first runs."""


def _items(config: AgentEvalConfig, tasks: Sequence[AgentTask]) -> list[_Item]:
    specs = config.specs()
    count = len(specs) * len(tasks) * config.seeds
    if count > MAX_EPISODES:
        raise ConfigError(f"{len(specs)} agents x {len(tasks)} tasks x {config.seeds} repeats = {count:,} episodes; "
                          f"one run holds at most {MAX_EPISODES:,} (use --limit or fewer --repeats)")
    return [_Item(spec=s, task=t, seed=k) for s in specs for t in tasks for k in range(config.seeds)]


def fingerprint_check(fingerprint: str) -> Callable[[Path, int, dict[str, Any]], None]:
    """Vets an episode record: one of another configuration is refused."""
    def check(path: Path, line: int, rec: dict[str, Any]) -> None:
        other = rec.get("fingerprint")
        if other is not None and other != fingerprint:
            raise ConfigError(f"{path}:{line}: an episode of another configuration (environment, tools, "
                              "models, budgets or temperature differ); choose another output directory")
    return check


async def run_episodes(
    config: AgentEvalConfig, out: Path, tasks: Sequence[AgentTask], records: Path, *, envs: Sequence[Any],
    models: Mapping[str, Any], fingerprint: str, keys: set[str] | None = None, display: RecordDisplay | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Any:
    """Run the episodes of ``tasks`` (those of ``keys`` when given) into the records file ``records`` (the run's
    ``episodes.jsonl``, or a shard file) with one environment of ``envs`` per episode in flight; trajectories
    go to ``out/trajectories``. Returns the runner's summary."""
    pool: asyncio.Queue[Any] = asyncio.Queue()
    for e in envs:
        pool.put_nowait(e)
    role_models = config.models_by_role()
    items = [it for it in _items(config, tasks) if keys is None or it.key in keys]

    async def work(item: _Item) -> dict[str, Any]:
        env = await pool.get()
        try:
            return await _episode(item, env, models, role_models, config, out, fingerprint, clock)
        finally:
            pool.put_nowait(env)

    return await run_records(items, work, records, key=lambda it: it.key, concurrency=config.concurrency,
                             label=f"agents · {config.env}", display=display, check=fingerprint_check(fingerprint))


def write_metrics(out: Path, config: AgentEvalConfig, tasks: Sequence[AgentTask], env: Any) -> dict[str, Any]:
    """Compute the metrics of the run's records and write ``metrics.json`` (with what ``env`` could not load)."""
    metrics = compute_metrics(out, config, tasks=tasks, agents=list(dict.fromkeys(s.name for s in config.specs())))
    problems = [str(p) for p in getattr(env, "problems", []) or []]
    if problems:  # what the environment could not load or check, reported (never the end of the run)
        metrics["env_problems"] = {"count": len(problems), "first": problems[:10]}
    write_json(out / METRICS_FILE, metrics)
    return metrics


async def arun_agents(
    config: AgentEvalConfig,
    output: str | Path,
    *,
    models: Mapping[str, Any] | None = None,
    env_factory: Callable[[], Any] | None = None,
    display: RecordDisplay | None = None,
    cache: bool | str = True,
    base_url: str | None = None,
    api_key_env: str | None = None,
    model_options: Mapping[str, Any] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> AgentEvalResult:
    """Run every (agent, task, seed) episode of ``config`` into the directory ``output`` (resuming what is
    there) and write its ``metrics.json``; returns the summary and the metrics document.

    ``models`` (role -> Model; ``"agent"`` is the fallback) replaces the models ``config`` names (tests pass
    scripted mock models); ``env_factory`` replaces ``open_environment(config.env, **config.env_options)``.
    Raises ConfigError for a bad configuration or an output directory of another configuration,
    SandboxUnavailableError when code agents cannot be confined (and ``unsafe_local`` is off). Sharded over
    workers: :func:`taskbench.executors.agents.arun_agents_sharded`."""
    from ..envs import open_environment

    out, fingerprint, file_tasks = prepare_run(config, output, write=False)

    def new_env() -> Any:
        return env_factory() if env_factory is not None else open_environment(config.env, **config.env_options)

    start = time.perf_counter()
    envs: list[Any] = []
    try:  # the environment opens, and the tasks are checked, before anything is written: a misspelled --env or a
        # task file that names a tool the environment lacks leaves no run header behind
        envs.append(new_env())
        tasks = run_tasks(config, envs[0], file_tasks)
        write_run_header(out, config, fingerprint)
    except BaseException:
        for e in envs:
            await e.aclose()
        raise
    owned_models = models is None
    models = dict(models) if models is not None else open_models(config, cache=cache, base_url=base_url,
                                                                 api_key_env=api_key_env, options=model_options)
    try:
        episodes = len(_items(config, tasks))  # one environment per episode in flight, never more than episodes
        envs += [new_env() for _ in range(min(config.concurrency, episodes) - 1)]
        summary = await run_episodes(config, out, tasks, out / EPISODES_FILE, envs=envs, models=models,
                                     fingerprint=fingerprint, display=display, clock=clock)
        metrics = write_metrics(out, config, tasks, envs[0])
    finally:
        for e in envs:
            await e.aclose()
        if owned_models:
            await _close_models(models)
    return AgentEvalResult(output=str(out), episodes=summary.selected, skipped=summary.skipped,
                           written=summary.written, failed=summary.failed, errors=summary.errors,
                           seconds=time.perf_counter() - start, metrics=metrics)


DEMO_ENV = "restbench-tmdb"
"""The environment of :func:`demo_config`: our offline TMDB service with its bundled tasks."""

DEMO_TASKS = ("tmdb-own-02", "tmdb-own-05")
"""Two of our bundled TMDB tasks (a film's runtime, an actor's birthplace: two calls each)."""


def students_shipped() -> bool:
    """Whether a student ships (``taskbench/bundled/students/ROLE.gguf``; the roles without one play the base)."""
    from ..llm.providers.llamacpp import shipped_roles

    return bool(shipped_roles())


def demo_config(model: str = "llamacpp/qwen2.5-coder-0.5b", *, tasks: Sequence[str] = DEMO_TASKS,
                agents: Sequence[str] = ("conagents-auto", "conagents-adaptive", "react"),
                tools: str = "gold", max_steps: int = 3, max_model_calls: int = 14,
                students: bool | None = None) -> AgentEvalConfig:
    """A small agent run for the main job: ConAgents (both protocols) against ReAct on a few of our bundled
    offline TMDB tasks (present without ../shared), gold tools, a short step cap (3: two calls and the answer)
    and at most 14 model calls per episode, so that the embedded model's run stays within the main job's time
    budget (an unbounded adaptive episode of the 0.5B model was seen to make 32 calls on a two-call task).
    ``students``: the ConAgents roles and ReAct play their shipped students, the roles without one the base
    (default: when ``model`` is their base and a student ships)."""
    from .config import STUDENT_BASE, student_models

    if students is None:
        students = model.strip() == STUDENT_BASE and students_shipped()
    return AgentEvalConfig(env=DEMO_ENV, agents=list(agents), model=model, tools=tools,
                           role_models=student_models(model) if students else {},
                           task_ids=list(tasks), env_options={"task_set": "own"},
                           budgets=Budgets(max_steps=max_steps, max_model_calls=max_model_calls), bootstrap=200)


def run_agents(config: AgentEvalConfig, output: str | Path, **options: Any) -> AgentEvalResult:
    """:func:`arun_agents` for plain code (blocks; safe inside a running event loop too).

    Example::

        from taskbench.agents import AgentEvalConfig, run_agents
        result = run_agents(AgentEvalConfig(env="restbench-tmdb", agents=["conagents-auto", "react"],
                                            model="llamacpp/qwen2.5-coder-0.5b", limit=2,
                                            env_options={"task_set": "own"}), "runs/agents")
        result.metrics["comparison"], result.complete
    """
    return run_sync(arun_agents(config, output, **options))


def _write_config(out: Path, config: AgentEvalConfig, fingerprint: str) -> None:
    """Start or resume the run header of ``out`` (refused when it holds another configuration)."""
    header = new_header("agents", config=config.model_dump(mode="json"), identity=config.identity(),
                        seeds={"episodes": config.seeds})
    assert header.fingerprint == fingerprint
    open_run(out, header)


async def _episode(item: _Item, env: Any, models: Mapping[str, Any], role_models: Mapping[str, str],
                   config: AgentEvalConfig, out: Path, fingerprint: str, clock: Callable[[], float]
                   ) -> dict[str, Any]:
    spec, task, seed = item.spec, item.task, item.seed
    await env.reset(seed=seed, task=task)
    needed = needed_tools(task)  # the gold path's tools and every other tool the task's solution calls
    offered = select_tools(env.tools(), needed, config.tools, seed=seed, task_id=task.id)
    roles = _roles(spec)
    traj = Trajectory(
        id=task.id, task=task.query, env=config.env, agent=spec.name, seed=seed,
        models={r: getattr(models.get(r) or models.get("agent"), "name", role_models.get(r, "")) for r in roles},
        tools=[tooldocs.slim(t) for t in offered], gold_path=list(task.gold_path),
        config={"protocol": spec.base, "alpha": spec.alpha, "beta": spec.beta, "ablation": spec.ablation,
                "tools": config.tools, "max_steps": config.budgets.max_steps, "temperature": config.temperature,
                "tries": spec.tries, "grounded": spec.grounded,
                "tool_order": [t.name for t in offered], "needed_tools": list[Any](needed)},
    )
    path = trajectory_path(out, spec.name, task.id, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {"agent": spec.name, "task": task.id, "seed": seed, "fingerprint": fingerprint,
            "trajectory": str(path.relative_to(out))}

    def failed(error: str) -> dict[str, Any]:
        row = FailedEpisodeRow.model_validate({**base, "error": error})
        return row.model_dump(mode="json", exclude={"id"})

    writer = TrajectoryWriter(path, traj, clock=clock)
    ep = Episode(task=task, env=env, tools=offered, writer=writer, models=models, budgets=config.budgets,
                 temperature=config.temperature, seed=seed, retry_temperature=config.retry_temperature,
                 sandbox_options={"unsafe_local": True} if config.unsafe_local else None)
    try:
        await make_agent(spec).run(ep)
    except (ModelError, SandboxUnavailableError) as exc:
        writer.finish("failed", error=str(exc))
        return failed(str(exc))
    except Exception as exc:  # a bug must not end the whole run: the episode fails, is reported and retried
        error = f"internal error: {type(exc).__name__}: {exc}"
        writer.finish("failed", error=error)
        return failed(error)
    finally:
        await ep.aclose()
    try:
        outcome = await env.check(task, ep.answer)
    except Exception as exc:  # the checker broke on this episode: report it, keep going
        error = f"checker failed: {exc if isinstance(exc, TaskbenchError) else f'{type(exc).__name__}: {exc}'}"
        writer.finish("failed", error=error)
        return failed(error)
    traj.outcome = outcome
    traj.answer = ep.answer
    outcome.details["mechanism"] = dict(mechanism(traj))  # what review did, in the trajectory's end line
    outcome.details["attempts"] = {"used": len(ep.attempt_starts), "limit": spec.tries,  # react@N, toolllm@N,
                                   "last_start": ep.attempt_starts[-1],            # reflexion: their trials
                                   "trials": [dict(t, start=start) for t, start in zip(ep.trials, ep.attempt_starts,
                                                                                       strict=True)]}
    outcome.details["counters"] = dict(sorted(ep.counters.items()))  # the agents' own mechanisms
    outcome.details["view"] = ep.views.summary(task.answer)  # what the agent saw, and the answer in it
    stop = ep.stop if ep.answer is not None else (ep.stop if ep.stop != "answer" else "no_answer")
    writer.finish("complete", error=None if stop == "answer" else f"stopped: {stop}")
    row = episode_row(traj, stop=stop)
    line = EpisodeRow.model_validate({**row.model_dump(), **base, "usage": EpisodeUsage(
        prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens)})
    return line.model_dump(mode="json", exclude={"id"})


def _roles(spec: AgentSpec) -> list[str]:
    if spec.base.startswith("conagents"):
        return ["grounding", "execution"] + (["review"] if spec.exec_review or spec.plan_review else [])
    return list(ROLES_OF[spec.base])


def compute_metrics(out: Path, config: AgentEvalConfig, *, tasks: Sequence[AgentTask],
                    agents: Sequence[str]) -> dict[str, Any]:
    """The metrics document of the selected episodes in a run directory's records."""
    latest, _, _ = read_records(out / EPISODES_FILE)
    rows: dict[str, list[EpisodeRow]] = {a: [] for a in agents}
    by_id = {t.id: t for t in tasks}
    wanted = {(a, t.id, k) for a in agents for t in tasks for k in range(config.seeds)}
    for rec_id, rec in latest.items():
        key = episode_key(rec_id, rec)
        if key not in wanted:  # another selection's episode (read as a row only when wanted)
            continue
        agent, task, seed = key
        row = parse_episode(rec)
        if isinstance(row, FailedEpisodeRow):  # a crash: a failure in every rate, counted as crashed
            row = crash_row(agent, task, seed, by_id[task].gold_path, row.error)
        rows[agent].append(row)
    for rs in rows.values():
        order = {t.id: i for i, t in enumerate(tasks)}
        rs.sort(key=lambda r: (order.get(r.task, 0), r.seed))
    meta = {"env": config.env, "tools": config.tools, "models": config.models_by_role(),
            "temperature": config.temperature, "max_steps": config.budgets.max_steps}
    return metrics_document(rows, [t.id for t in tasks], seeds=config.seeds, n_boot=config.bootstrap, meta=meta)


def episode_key(rec_id: str, rec: Mapping[str, Any]) -> tuple[str, str, int] | None:
    """(agent, task, seed) of an episode record: from its fields, else from its id ``agent/task/sSEED`` (a
    failure the runner recorded itself holds only the id and the error); None when neither says."""
    agent, task, seed = rec.get("agent"), rec.get("task"), rec.get("seed")
    if isinstance(agent, str) and isinstance(task, str) and isinstance(seed, int):
        return agent, task, seed
    head, sep, tail = str(rec.get("id") or rec_id).rpartition("/s")
    agent_name, slash, task_id = head.partition("/")
    if not (sep and slash and tail.isdigit()):
        return None
    return agent_name, task_id, int(tail)


def load_run(run: str | Path) -> tuple[dict[str, Any], dict[str, EpisodeRow | FailedEpisodeRow]]:
    """(the configuration in the run header, the last record of every episode, by record id) of a run
    directory. A line of the wrong shape raises :class:`InputError` naming it."""
    path = Path(run)
    if not (path / EPISODES_FILE).is_file():
        raise InputError(f"not an agent run directory (no {EPISODES_FILE})", path=path,
                         hint="give the -o directory of `taskbench agents eval`")
    header = read_header(path, "agents")
    latest, _, _ = read_records(path / EPISODES_FILE, _episode_check)
    rows = {k: parse_episode(r) for k, r in latest.items()}
    return (dict(header.config) if header is not None else {}), rows


COMPARED_SETTINGS = ("tools", "budgets", "temperature", "seeds", "alpha", "beta", "env_options", "tasks_file",
                     "retry_temperature")
"""Settings of two runs that should agree for a fair comparison (the models are what is compared)."""


def _pick_agent(run: Path, rows: Sequence[EpisodeRow], agent: str | None) -> str:
    names = sorted({r.agent for r in rows})
    if agent is None:
        if len(names) == 1:
            return names[0]
        raise ConfigError(f"{run} has {len(names)} agents ({', '.join(names) or 'none finished'}): name one with "
                          "--agent-a / --agent-b")
    if agent not in names:
        raise ConfigError(f"{run} has no finished episode of agent {agent!r} (it has {', '.join(names) or 'none'})")
    return agent


def compare_runs(run_a: str | Path, run_b: str | Path, *, agent_a: str | None = None, agent_b: str | None = None,
                 n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """A paired comparison of one agent of run A against one of run B (two ``agents eval`` directories, e.g. the
    same agent with student and with base role models) on the episodes (task, seed) both ran (a crashed episode
    counts as a failure, :func:`~taskbench.agents.metrics.crash_row`), every figure on the same ones (a task missing a seed in one run is left out: ``left_out_tasks``): a metrics document of the
    two (``agents``, ``comparison``, ``paired`` with flips, ``per_task``) plus ``runs`` (each run, agent, role
    models and episodes compared) and ``differs`` (settings other than the models on which the two runs
    disagree). Runs in two environments, or with no episode in common, are refused."""
    runs = [(Path(run_a), agent_a, *load_run(run_a)), (Path(run_b), agent_b, *load_run(run_b))]
    gold = {r.task: r.gold_path for _, _, _, records in runs for r in records.values() if isinstance(r, EpisodeRow)}
    loaded = []
    for run, agent, config, records in runs:
        rows = []
        for rec_id, rec in records.items():
            if isinstance(rec, EpisodeRow):
                rows.append(rec)
                continue
            key = episode_key(rec_id, rec.model_dump())
            if key is not None:  # a crash is a failure here too (its gold path from a finished episode)
                rows.append(crash_row(*key, gold.get(key[1], []), rec.error))
        name = _pick_agent(run, rows, agent)
        loaded.append((run, config, name, [r for r in rows if r.agent == name]))
    (pa, ca, na, ra), (pb, cb, nb, rb) = loaded
    if ca.get("env") != cb.get("env"):
        raise ConfigError(f"the runs are of two environments ({ca.get('env')} and {cb.get('env')}): a paired "
                          "comparison needs the same tasks")
    differs = {k: [ca.get(k), cb.get(k)] for k in COMPARED_SETTINGS if ca.get(k) != cb.get(k)}
    # only the episodes (task, seed) that both runs finished are compared, every figure on the same ones
    shared = {(r.task, r.seed) for r in ra} & {(r.task, r.seed) for r in rb}
    if not shared:
        raise ConfigError(f"{pa} and {pb} have no finished episode (task, seed) in common: nothing to pair")
    ra = [r for r in ra if (r.task, r.seed) in shared]
    rb = [r for r in rb if (r.task, r.seed) in shared]
    seeds = len({seed for _, seed in shared})
    order: dict[str, int] = {}
    for r in ra:
        order.setdefault(r.task, len(order))
    # a task counts when every seed both runs ran of it is in both (seeds missing for a task leave it out)
    common = [t for t in order if sum(r.task == t for r in ra) >= seeds]
    left_out = sorted({t for t, _ in shared} - set(common))
    label_a, label_b = f"{na} ({pa.name or pa})", f"{nb} ({pb.name or pb})"
    if label_a == label_b:
        label_a, label_b = f"{na} ({pa})", f"{nb} ({pb})"
    if label_a == label_b:
        label_a, label_b = f"{label_a} A", f"{label_b} B"
    # the rows carry their label, so the per-task table keeps two runs of one agent apart
    ra = [r.model_copy(update={"agent": label_a}) for r in ra if r.task in common]
    rb = [r.model_copy(update={"agent": label_b}) for r in rb if r.task in common]
    doc = metrics_document({label_a: ra, label_b: rb}, common, seeds=seeds, n_boot=n_boot, seed=seed,
                           meta={"env": ca.get("env")})
    doc["left_out_tasks"] = left_out

    def models(config: Mapping[str, Any]) -> dict[str, str]:
        return {"model": str(config.get("model")), **{k: str(v) for k, v in (config.get("role_models") or {}).items()}}
    doc["runs"] = [{"run": str(pa), "agent": na, "label": label_a, "models": models(ca), "episodes": len(ra)},
                   {"run": str(pb), "agent": nb, "label": label_b, "models": models(cb), "episodes": len(rb)}]
    doc["differs"] = differs
    return doc


def _episode_check(path: Path, line: int, rec: dict[str, Any]) -> None:
    """Refuses a line that is no episode row, in one line naming it."""
    try:
        parse_episode(rec)
    except ValidationError as exc:
        raise InputError(f"not an episode record: {validation_message(exc)}", path=path, line=line) from None


__all__ = [
    "AgentEvalConfig",
    "AgentEvalResult",
    "CONFIG_FILE",
    "DEMO_ENV",
    "DEMO_TASKS",
    "EPISODES_FILE",
    "METRICS_FILE",
    "arun_agents",
    "compare_runs",
    "compute_metrics",
    "demo_config",
    "episode_key",
    "episode_keys",
    "fingerprint_check",
    "prepare_run",
    "write_run_header",
    "run_episodes",
    "run_tasks",
    "write_metrics",
    "load_run",
    "open_models",
    "run_agents",
    "select_tasks",
    "trajectory_path",
]
