"""`taskbench predict` as a library call: :class:`PredictSpec` (the command's flags and defaults) and
:func:`predict_spec` (this process, or sharded over an executor; resumable, crash-safe).

``predict_spec(PredictSpec(data="multimedia", model="llamacpp/qwen2.5-coder-0.5b", output="preds/qwen.jsonl"))``
writes what ``taskbench predict --data multimedia -m llamacpp/qwen2.5-coder-0.5b -o preds/qwen.jsonl`` writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .executor import ExecutorSpec, executor_scope

if TYPE_CHECKING:  # pragma: no cover
    from ..predict.runner import PredictOptions, PredictSummary
    from ..records import RecordDisplay

DEMOS = ("fixed", "retrieved")


@dataclass(frozen=True)
class PredictSpec:
    """Everything `taskbench predict` takes, with its defaults (see ``taskbench predict --help``)."""

    data: str | Path
    """Dataset directory in the reference layout, or a bundled dataset name."""
    model: str
    """``provider/model``."""
    output: str | Path
    """Predictions file (JSON Lines); resumed if it exists."""
    shots: int = 0
    demos: str = "fixed"
    """``fixed`` (the reference scripts' demo ids) or ``retrieved`` (the most similar other samples, BM25)."""
    shortlist: int = 0
    """Structured plan output: choose among the N tools most relevant to the request (0: every tool)."""
    plan: bool = True
    structured: bool = True
    reformat: bool = False
    concurrency: int = 1
    limit: int | None = None
    """At most N samples, stratified over single/chain/dag (None or 0: all)."""
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int | None = None
    """Most tokens per answer (None: 1024; 512 for embedded models)."""
    seed: int = 0
    template: str | Path | None = None
    """A custom Jinja2 prompt template file."""
    cache: bool = True
    base_url: str | list[str] | None = None
    """Server URL of an openai-compatible model, or a list of replicas."""
    api_key_env: str | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    """Provider options (``-O``), with ``timeout``, ``max_retries`` and ``endpoint_concurrency`` when given."""
    executor: ExecutorSpec | Any = field(default_factory=ExecutorSpec)
    """Where predictions run: this process, or sharded over Ray workers (the same output)."""

    def options(self) -> PredictOptions:
        """The :class:`~taskbench.predict.runner.PredictOptions` of the spec (every option checked)."""
        from ..predict.runner import PredictOptions, default_max_tokens

        if self.reformat and self.structured:
            raise ConfigError("--reformat needs --free (structured output always parses)")
        if self.demos not in DEMOS:
            raise ConfigError(f"--demos must be 'fixed' or 'retrieved', not {self.demos!r}")
        from pydantic import ValidationError

        from ..errors import options_error

        try:
            return PredictOptions(
                shots=self.shots, structured=self.structured, reformat=self.reformat, limit=self.limit or None,
                concurrency=self.concurrency, temperature=self.temperature, top_p=self.top_p,
                max_tokens=self.max_tokens or default_max_tokens(self.model), seed=self.seed,
                template=str(self.template) if self.template else None,
                demo_selection="retrieved" if self.demos == "retrieved" else "fixed", shortlist=self.shortlist or None,
                plan=self.plan,
            )
        except ValidationError as exc:  # a value the flags let through (--top-p 0): one line naming the flag
            raise options_error(exc) from None


def predict_spec(spec: PredictSpec, *, display: RecordDisplay | None = None) -> PredictSummary:
    """Predict ``spec.data`` with ``spec.model`` into ``spec.output`` as `taskbench predict` does: resumable
    (the ids already written are skipped), a call that fails for good written as a failure record; in this
    process, or sharded over ``spec.executor`` with the run header written first."""
    from ..predict.runner import open_model, predict_file
    from .executor import check_executor
    from .resolve import resolve_data

    options = spec.options()
    if options.template is not None:  # a broken template fails before anything is written
        from ..predict.prompts import load_template

        load_template(options.template, "resource")
    path = resolve_data(spec.data)
    check_executor(spec.executor)
    with executor_scope(spec.executor) as runner:
        if runner is not None:
            from ..dataset.header import open_run
            from ..executors.predict import apredict_sharded
            from ..llm.config import ModelConfig
            from ..predict.runner import predict_header
            from ..records import run_sync

            config = ModelConfig.build(spec.model, concurrency=spec.concurrency, cache=spec.cache,
                                       base_url=spec.base_url, api_key_env=spec.api_key_env,
                                       options=dict(spec.model_options))
            if Path(spec.output).is_file():  # a file that holds no predictions is refused before the header
                from ..predict.runner import record_check
                from ..records import vet_records

                vet_records(spec.output, record_check(config.name))
            open_run(spec.output, predict_header(config.name, path, options))
            summary: PredictSummary = run_sync(apredict_sharded(path, config, spec.output, options,
                                                                executor=runner, display=display))
            return summary
        model = open_model(
            spec.model, concurrency=spec.concurrency, cache=spec.cache,
            # a list of replicas is fine (the openai providers pool them); open_model's hint says str only
            base_url=spec.base_url,  # type: ignore[arg-type]
            api_key_env=spec.api_key_env, options=dict(spec.model_options),
        )
        try:
            return predict_file(path, model, spec.output, options, display=display, close_model=True)
        finally:
            model.close()  # no-op when predict_file closed it; releases it when loading the dataset failed


__all__ = ["PredictSpec", "predict_spec"]
