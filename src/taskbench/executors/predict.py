"""Predictions as a sharded job: ``taskbench predict --executor ray`` and ``taskbench run --executor ray``.

Each worker loads the dataset directory, rebuilds the model from its :class:`~taskbench.llm.config.ModelConfig`
and runs :func:`taskbench.predict.runner.predict_dataset` on its shard's ids (demos still come from the whole
dataset), so a shard's records are exactly the records a local run writes for those ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from ..errors import ConfigError
from ..llm.config import ModelConfig
from ..predict.runner import PredictOptions, PredictSummary
from .sharded import ShardedJob, ShardedRun, arun_job


class PredictJob(ShardedJob):
    """Predict one dataset with one model (see the module docstring)."""

    data: str = Field(description="Dataset directory (the reference layout) every worker can read.")
    model: ModelConfig = Field(description="The model under test, as data.")
    options: PredictOptions = Field(default_factory=PredictOptions, description="How to predict.")
    dataset_name: str | None = Field(default=None, description="Dataset name (demos, labels).")

    def _dataset(self) -> Any:
        from ..dataset.layout import load_dataset, no_samples_error

        ds = load_dataset(self.data)
        if not ds.samples:
            raise no_samples_error(self.data)
        return ds

    def keys(self) -> list[str]:
        from ..predict.runner import select_samples

        return [s.id for s in select_samples(self._dataset().samples, self.options.limit)]

    def check(self, path: Path, line: int, record: dict[str, Any]) -> None:
        other = record.get("model")
        if other is not None and other != self.model.name:
            raise ConfigError(f"{path}:{line}: holds predictions of {other!r}, not {self.model.name!r}; "
                              "choose another output file")

    def prepare(self) -> PredictJob:
        return self.model_copy(update={"model": self.model.with_shared_cache()})

    async def run_shard(self, keys: list[str], output: Path) -> dict[str, Any]:
        from ..predict.runner import predict_dataset

        ds = self._dataset()
        model = self.model.open()
        try:
            summary = await predict_dataset(model, ds.library, ds.samples, output, self.options,
                                            requests=ds.requests, dataset_name=self.dataset_name or ds.name,
                                            ids=set(keys))
        finally:
            await model.aclose()
        return summary.model_dump(mode="json")

    def summarize(self, run: ShardedRun, parts: list[dict[str, Any]]) -> PredictSummary:
        shards = [PredictSummary.model_validate(p) for p in parts]
        return PredictSummary(
            model=self.model.name, output=run.output, dataset=self.dataset_name, selected=run.selected,
            skipped=run.skipped, written=run.written, failures=run.failed,
            parse_failures=sum(s.parse_failures for s in shards), reformatted=sum(s.reformatted for s in shards),
            cache_hits=sum(s.cache_hits for s in shards), retries=sum(s.retries for s in shards),
            prompt_tokens=sum(s.prompt_tokens for s in shards),
            completion_tokens=sum(s.completion_tokens for s in shards), seconds=run.seconds, retried=run.retried,
            errors=run.errors,
        )


async def apredict_sharded(
    data: str | Path,
    model: ModelConfig,
    output: str | Path,
    options: PredictOptions | None = None,
    *,
    executor: Any,
    shards: int | None = None,
    dataset_name: str | None = None,
    display: Any = None,
) -> PredictSummary:
    """Predict the dataset directory ``data`` into ``output`` on ``executor`` (a
    :class:`~taskbench.executors.LocalExecutor` or :class:`~taskbench.executors.ray.RayExecutor`)."""
    options = options or PredictOptions()
    name = dataset_name or Path(data).name
    job = PredictJob(output=str(output), data=str(Path(data).resolve()), model=model, options=options,
                     dataset_name=dataset_name, label=f"{model.name} · {name}")
    summary: PredictSummary = await arun_job(job, executor, shards=shards, display=display)
    return summary


__all__ = ["PredictJob", "apredict_sharded"]
