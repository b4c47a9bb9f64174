"""Agent evaluation as a sharded job: ``taskbench agents eval --executor ray`` and ``taskbench run --executor ray``.

The driver checks the configuration and writes ``config.json`` (:func:`taskbench.agents.eval.prepare_run`), opens
one environment to list the tasks, and hands out the episode ids (``agent/task/sSEED``) in contiguous shards.
Each worker opens its own environments (one per episode in flight: a service, a sandbox per code run), rebuilds
the models from their names and options, and runs its episodes into a shard file; trajectories are written
into the run directory's ``trajectories/`` (the same path on every node). After the merge the driver computes the
metrics over every episode (:func:`taskbench.agents.eval.write_metrics`), so they equal a local run's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import Field

from ..agents.eval import AgentEvalConfig, AgentEvalResult
from .sharded import ShardedJob, ShardedRun, arun_job


class AgentsJob(ShardedJob):
    """The episodes of one agent run directory (see the module docstring)."""

    out_dir: str = Field(description="The run directory (trajectories go below it).")
    config: AgentEvalConfig = Field(description="What the run runs.")
    cache: bool | str = Field(default=True, description="Response cache (resolved to one for all workers).")
    base_url: str | None = Field(default=None, description="Server URL of the models.")
    api_key_env: str | None = Field(default=None, description="Name of the variable holding the API key.")
    model_options: dict[str, Any] = Field(default_factory=dict, description="Provider options (JSON-able).")

    def _open_env(self) -> Any:
        from ..envs import open_environment

        return open_environment(self.config.env, **self.config.env_options)

    def _tasks(self, env: Any) -> list[Any]:
        from ..agents.eval import run_tasks

        file_tasks = None
        if self.config.tasks_file is not None:
            from ..envs.tasks import load_tasks

            file_tasks = load_tasks(self.config.tasks_file, env=self.config.env)
        return run_tasks(self.config, env, file_tasks)

    def keys(self) -> list[str]:
        from ..agents.eval import episode_keys
        from ..records import run_sync

        env = self._open_env()
        try:
            return episode_keys(self.config, self._tasks(env))
        finally:
            run_sync(env.aclose())

    def check(self, path: Path, line: int, record: dict[str, Any]) -> None:
        from ..agents.eval import fingerprint_check

        fingerprint_check(self.config.fingerprint())(path, line, record)

    def prepare(self) -> AgentsJob:
        if self.cache is not True:
            return self
        import os

        from ..llm.cache import CACHE_URL_ENV, default_cache_path

        return self.model_copy(update={"cache": os.environ.get(CACHE_URL_ENV) or str(default_cache_path())})

    async def run_shard(self, keys: list[str], output: Path) -> dict[str, Any]:
        from ..agents.eval import _close_models, open_models, run_episodes

        envs = [self._open_env() for _ in range(self.config.concurrency)]
        models = open_models(self.config, cache=self.cache, base_url=self.base_url, api_key_env=self.api_key_env,
                             options=self.model_options)
        try:
            tasks = self._tasks(envs[0])
            summary = await run_episodes(self.config, Path(self.out_dir), tasks, output, envs=envs, models=models,
                                         fingerprint=self.config.fingerprint(), keys=set(keys))
        finally:
            for e in envs:
                await e.aclose()
            await _close_models(models)
        return {"selected": summary.selected}


async def arun_agents_sharded(
    config: AgentEvalConfig,
    output: str | Path,
    *,
    executor: Any,
    shards: int | None = None,
    display: Any = None,
    cache: bool | str = True,
    base_url: str | None = None,
    api_key_env: str | None = None,
    model_options: dict[str, Any] | None = None,
) -> AgentEvalResult:
    """:func:`taskbench.agents.eval.arun_agents` with the episodes sharded over ``executor`` (see the module
    docstring); ``output`` must be at the same path on every worker's node."""
    from ..agents.eval import EPISODES_FILE, prepare_run, write_metrics, write_run_header

    start = time.perf_counter()
    out, fingerprint, _ = prepare_run(config, Path(output).resolve(), write=False)
    job = AgentsJob(output=str(out / EPISODES_FILE), out_dir=str(out), config=config, cache=cache,
                    base_url=base_url, api_key_env=api_key_env, model_options=dict(model_options or {}),
                    label=f"agents · {config.env}")
    probe = job._open_env()  # the environment opens before anything is written (a misspelled --env)
    await probe.aclose()
    write_run_header(out, config, fingerprint)
    run: ShardedRun = await arun_job(job, executor, shards=shards, display=display)
    env = job._open_env()
    try:
        metrics = write_metrics(out, config, job._tasks(env), env)
    finally:
        await env.aclose()
    return AgentEvalResult(output=str(out), episodes=run.selected, skipped=run.skipped, written=run.written,
                           failed=run.failed, errors=run.errors, seconds=time.perf_counter() - start,
                           metrics=metrics)


__all__ = ["AgentsJob", "arun_agents_sharded"]
