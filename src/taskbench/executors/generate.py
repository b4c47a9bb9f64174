"""Generation as a sharded job: ``taskbench generate --executor ray`` and ``taskbench run --executor ray``.

The driver checks the arguments against the directory's manifest and writes the graph files and the manifest
(:func:`taskbench.engine.generate.prepare_output`), exactly as a local run. The job's ids are the plan's sample
ids; each worker loads the graph from the directory's ``graph_desc.json``, recomputes the seeded plan (the same
anywhere), rebuilds the generator (and the critic model) from its config and runs the engine's per-entry work on
its shard's entries into a shard file. After the merge (``data_raw.json`` in plan order, one record per id) the
driver runs the critics and the near-duplicate detection over the whole set
(:func:`taskbench.engine.generate.finish_output`): duplicates across shards are found as in a local run, so the
directory equals a local run's answered by the same cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from ..engine.generate import GenerateOptions, GenerateSummary
from ..llm.config import ModelConfig
from .sharded import ShardedJob, ShardedRun, arun_job

_COUNTERS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens")


class GenerateJob(ShardedJob):
    """Generate the plan entries of one directory (see the module docstring)."""

    out_dir: str = Field(description="The generation directory (every worker reads its graph_desc.json).")
    dependency: str = Field(description="The graph's dependency kind (resource or temporal).")
    options: GenerateOptions = Field(description="What to generate and how.")
    model: ModelConfig = Field(description="The generator, as data.")
    critic: ModelConfig | None = Field(default=None, description="A separate LLM critic, as data.")

    def _graph(self) -> Any:
        from ..dataset.layout import GRAPH_FILE
        from ..graph.build import load_graph

        return load_graph(Path(self.out_dir) / GRAPH_FILE, self.dependency)

    def _plan(self, graph: Any) -> list[Any]:
        from ..engine.generate import _plan

        return _plan(graph, self.options)

    def keys(self) -> list[str]:
        from ..engine.generate import sample_id

        return [sample_id(e.index) for e in self._plan(self._graph())]

    def check(self, path: Path, line: int, record: dict[str, Any]) -> None:
        """A line of ``data_raw.json`` or a shard that is not a generation record is refused (path:line) before
        any model call, as the single-process run does."""
        from ..engine.output import check_generation_record

        check_generation_record(path, line, record)

    def prepare(self) -> GenerateJob:
        critic = self.critic.with_shared_cache() if self.critic is not None else None
        return self.model_copy(update={"model": self.model.with_shared_cache(), "critic": critic})

    async def run_shard(self, keys: list[str], output: Path) -> dict[str, Any]:
        from ..engine.generate import _Engine, sample_id
        from ..errors import ModelError
        from ..records import run_records

        graph = self._graph()
        wanted = set(keys)
        entries = [e for e in self._plan(graph) if sample_id(e.index) in wanted]
        model = self.model.open()
        critic = self.critic.open() if self.critic is not None else None
        try:
            engine = _Engine(graph, model, self.options, critic)
            await run_records(entries, engine.work, output, key=lambda e: sample_id(e.index),
                              concurrency=self.options.concurrency, failure=engine.failure, catch=(ModelError,))
        finally:
            await model.aclose()
            if critic is not None:
                await critic.aclose()
        return engine.counters()

    def summarize(self, run: ShardedRun, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {"run": run, "counters": {k: sum(int(p.get(k, 0)) for p in parts) for k in _COUNTERS}}


async def agenerate_sharded(
    graph: Any,
    model: ModelConfig,
    out_dir: str | Path,
    options: GenerateOptions,
    *,
    executor: Any,
    critic: ModelConfig | None = None,
    shards: int | None = None,
    display: Any = None,
) -> GenerateSummary:
    """:func:`taskbench.engine.generate.agenerate` with the plan entries sharded over ``executor`` (a
    :class:`~taskbench.executors.LocalExecutor` or :class:`~taskbench.executors.ray.RayExecutor`); the critics
    and the near-duplicate detection run here, after the merge. ``out_dir`` must be at the same path on every
    worker's node."""
    from ..dataset.layout import RAW_FILE
    from ..engine.generate import finish_output, prepare_output
    from ..predict.runner import _Forward
    from ..records import NullDisplay

    out, plan, manifest, extended_from = prepare_output(graph, Path(out_dir).resolve(), options, model.name,
                                                        critic.name if critic is not None else None)
    shown = display or NullDisplay()
    job = GenerateJob(output=str(out / RAW_FILE), out_dir=str(out), dependency=graph.dependency_kind,
                      options=options, model=model, critic=critic, label=f"{options.method} · {model.name}")
    result = await arun_job(job, executor, shards=shards, display=_Forward(shown))
    summary = finish_output(out, graph, options, plan, manifest, extended_from, result["run"], result["counters"])
    shown.finish(summary)
    return summary


__all__ = ["GenerateJob", "agenerate_sharded"]
