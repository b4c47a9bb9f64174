"""Predicting a dataset: prompt, call, parse, on the one resumable runner (:mod:`taskbench.records`).

Every crash-safety property comes from :func:`taskbench.records.run_records`: one fsynced line per record, a
file lock, resume by id, records in dataset order, a call that failed for good written in its place as a
failure record (``"failed": true``) and retried by the next run.

**No run-dependent values.** A record holds the answer and what it cost *to produce*: raw text, parsed result
or parse error, finish reason, token counts and the generation latency. With the response cache on, a repeated
request is answered from the cache and :class:`~taskbench.llm.Model` replays the latency the answer first took
(``ModelOutput.latency``), so the record is byte for byte what the first run wrote. Facts about *this* run
(cache hits, retries, wall time) go to :class:`PredictSummary` and the run log, not into the records. Without
the cache (``--no-cache``) the latency is measured afresh and records can differ in ``usage.seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..dataset.select import STRUCTURE_ORDER, select_samples
from ..errors import ConfigError, InputError, ModelError
from ..llm.config import open_model
from ..records import (
    FAILED,
    ForwardDisplay,
    NullDisplay,
    RecordDisplay,
    is_failed,
    read_records,
    run_records,
    run_sync,
    vet_records,
)
from ..schema import Prediction, Sample, ToolLibrary, Usage
from .context import RequestContext
from .demos import MAX_SHOTS
from .parse import extract_result, make_prediction
from .prompts import build_messages, render_reformat

DEFAULT_MAX_TOKENS = 512
"""Answer budget of embedded models when ``--max-tokens`` is not given. The bounded task plan (at most 10 steps,
every string bounded) keeps a complete answer well under it (0 token-limit hits in 512 on the released gold
samples); a longer answer is a failure, counted as one."""


def default_max_tokens(model: str) -> int:
    """The answer budget when ``--max-tokens`` is not given (one rule for run and predict): the embedded
    llamacpp models get :data:`DEFAULT_MAX_TOKENS`, served and hosted models 1024."""
    return DEFAULT_MAX_TOKENS if model.startswith("llamacpp/") else 1024


class PredictOptions(BaseModel):
    """How to predict: prompt, output mode, sampling and concurrency."""

    model_config = ConfigDict(extra="forbid")

    shots: int = Field(default=0, ge=0, le=MAX_SHOTS, description="Number of demos in the prompt (0..3).")
    structured: bool = Field(
        default=True,
        description="Schema-constrained output (tool names an enum of the library); False = free text with "
        "JSON extraction, as the reference scripts do.",
    )
    reformat: bool = Field(
        default=False, description="Free mode: ask the model to rewrite an answer that did not parse."
    )
    plan: bool = Field(
        default=True,
        description="Structured mode: the answer fills the bounded, step-aligned task plan "
        "(taskbench.predict.plan); False = the reference task-graph shape.",
    )
    demo_selection: Literal["fixed", "retrieved"] = Field(
        default="fixed",
        description="fixed: the reference scripts' demo ids; retrieved: per request the most similar other "
        "samples (BM25; measured better for the 0.5B embedded model, not for the 1.5B).",
    )
    shortlist: int | None = Field(
        default=None, ge=1,
        description="Structured plan mode: restrict the tool choice to the N tools most relevant to the request "
        "(BM25) plus the demos' tools; None = every tool.",
    )
    limit: int | None = Field(
        default=None, ge=1, description="Predict at most this many samples (stratified by structure)."
    )
    concurrency: int = Field(default=1, ge=1, description="Requests in flight at once.")
    temperature: float = Field(default=0.0, ge=0.0, description="Sampling temperature.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    max_tokens: int = Field(default=1024, ge=16, description="Most tokens the model may generate per answer.")
    seed: int | None = Field(default=0, description="Sampling seed passed to the backend (None: none).")
    template: str | None = Field(default=None, description="Path of a custom prompt template (Jinja2).")

    @model_validator(mode="after")
    def _modes(self) -> PredictOptions:
        if self.reformat and self.structured:
            raise ValueError("reformat needs free output (structured=False): structured answers always parse")
        return self

    def generation_config(self) -> Any:
        """The :class:`taskbench.llm.base.GenerationConfig` for these options."""
        from ..llm.base import GenerationConfig
        from .plan import REPEATED_STEP

        return GenerationConfig(
            temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens, seed=self.seed,
            stop_repeat=REPEATED_STEP if self.structured and self.plan else None,
        )


class PredictSummary(BaseModel):
    """What one prediction run did (facts about this run, unlike the records)."""

    model: str = Field(description="'provider/model'.")
    output: str = Field(description="Path of the predictions file.")
    dataset: str | None = Field(default=None, description="Dataset name.")
    selected: int = Field(default=0, description="Samples selected (after --limit).")
    skipped: int = Field(default=0, description="Samples already in the file from an earlier run.")
    written: int = Field(default=0, description="Records written by this run.")
    failures: int = Field(
        default=0, description="Model calls that failed for good (written as failure records, retried next run)."
    )
    parse_failures: int = Field(default=0, description="Records written with a parse error (this run).")
    repeat_stops: int = Field(default=0, description="Answers cut where the model began to repeat a step "
                              "(GenerationConfig.stop_repeat; this run).")
    reformatted: int = Field(default=0, description="Answers repaired by the --reformat pass (this run).")
    cache_hits: int = Field(default=0, description="Calls answered from the response cache.")
    retries: int = Field(default=0, description="Retried requests.")
    prompt_tokens: int = Field(default=0, description="Prompt tokens of this run's calls.")
    completion_tokens: int = Field(default=0, description="Completion tokens of this run's calls.")
    seconds: float = Field(default=0.0, description="Wall-clock seconds of this run.")
    retried: int = Field(default=0, description="Samples whose earlier call had failed, tried again.")
    errors: list[str] = Field(default_factory=list, description="First few model failures, 'id: message'.")

    @property
    def done(self) -> int:
        """Samples with a good record in the file."""
        return self.skipped + self.written - self.failures

    @property
    def complete(self) -> bool:
        """True when every selected sample has a good record (no call failed for good)."""
        return self.done == self.selected


PredictDisplay = RecordDisplay
"""Progress display for predictions (the runner's :class:`~taskbench.records.RecordDisplay`)."""


def record_check(model: str | None) -> Any:
    """The check of a predictions file's records (for :func:`~taskbench.records.read_records`): each must be a
    prediction (a broken line is refused with its line, not read as done), made by ``model`` when given (one
    file holds one model's predictions)."""
    from pydantic import ValidationError

    from ..errors import validation_message

    def check(file: Path, line: int, rec: dict[str, Any]) -> None:
        other = rec.get("model")
        if model is not None and other is not None and other != model:
            raise ConfigError(f"{file}:{line}: holds predictions of {other!r}, not {model!r}; choose another output file")
        try:
            Prediction.model_validate(rec)
        except ValidationError as exc:
            raise InputError(f"not a prediction record: {validation_message(exc)}", path=file, line=line,
                             hint="remove or repair this line, or choose another output file") from None

    return check


def read_done(path: Path, model: str | None = None) -> dict[str, dict[str, Any]]:
    """The last record of every id in a predictions file (failure records included; a torn last line is
    ignored); a record that is not a prediction is an :class:`InputError` at its line. With ``model``, a record
    made by another model is an error (one file holds one model's predictions)."""
    return read_records(path, record_check(model))[0]


def prediction_record(prediction: Prediction) -> dict[str, Any]:
    """The JSON line for a prediction: the reference format plus our keys, with usage reduced to what it
    cost to produce the answer (no run-dependent cache/retry flags)."""
    rec = prediction.to_record()
    if prediction.usage is not None:
        u = prediction.usage
        rec["usage"] = {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "seconds": u.seconds}
    return rec


class _Outcome(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    prediction: Prediction
    record: dict[str, Any]
    run_usage: Usage = Field(default_factory=Usage)
    reformatted: bool = False


def _cost(out: Any) -> Usage:
    """What producing an answer cost (tokens and its latency, replayed on a cache hit)."""
    return Usage(prompt_tokens=out.usage.prompt_tokens, completion_tokens=out.usage.completion_tokens,
                 seconds=out.latency)


async def predict_one(
    model: Any,
    sample_id: str,
    user_request: str,
    library: ToolLibrary,
    demos: Sequence[Sample],
    options: PredictOptions,
    schema: dict[str, Any] | None,
) -> _Outcome:
    """Predict one sample: prompt, call, parse, optional repair pass. Raises ModelError on a failed call."""
    config = options.generation_config()
    plan = options.structured and options.plan
    messages = build_messages(library, user_request, demos, template=options.template, plan=plan)
    out = await model.generate(messages, schema=schema if options.structured else None, config=config)
    run_usage = out.usage
    usage = _cost(out)
    prediction = make_prediction(
        sample_id,
        user_request=user_request,
        raw=out.text,
        model=model.name,
        usage=usage,
        parsed=out.parsed if options.structured else None,
        parse_error=out.parse_error if options.structured else None,
        finish_reason=out.finish_reason,
    )
    reformatted = False
    if prediction.result is None and options.reformat and not options.structured:
        fix = [{"role": "user", "content": render_reformat(library.dependency, out.text or "")}]
        out2 = await model.generate(fix, config=config)
        run_usage = run_usage + out2.usage
        result, error = extract_result(out2.text)
        prediction = prediction.model_copy(
            update={"result": result, "error": None if result is not None else f"{prediction.error}; "
                    f"after --reformat: {error}", "usage": usage + _cost(out2), "reformat_raw": out2.text}
        )
        reformatted = result is not None
    return _Outcome(prediction=prediction, record=prediction_record(prediction), run_usage=run_usage,
                    reformatted=reformatted)


async def predict_dataset(
    model: Any,
    library: ToolLibrary,
    samples: Sequence[Sample],
    output: str | Path,
    options: PredictOptions | None = None,
    *,
    requests: dict[str, str] | None = None,
    dataset_name: str | None = None,
    display: RecordDisplay | None = None,
    clock: Any = time.perf_counter,
    ids: Collection[str] | None = None,
) -> PredictSummary:
    """Predict ``samples`` with ``model`` into the JSON Lines file ``output``, resuming what is there.

    ``model`` is a :class:`taskbench.llm.Model` (anything with ``name`` and ``async generate(messages,
    schema=, config=)`` returning a ``ModelOutput``). ``requests`` overrides user requests by id (a dataset's
    ``user_requests.json``). Demos are drawn from all ``samples`` before ``options.limit`` is applied.
    ``ids``: predict only these ids of the selection (one shard of a sharded run, see
    :mod:`taskbench.executors`); demos still come from all ``samples``.
    """
    options = options or PredictOptions()
    requests = requests or {}
    context = RequestContext(library, samples, options, dataset_name=dataset_name)
    selected = select_samples(samples, options.limit)
    if ids is not None:
        wanted = set(ids)
        selected = [s for s in selected if s.id in wanted]
    summary = PredictSummary(model=model.name, output=str(output), selected=len(selected),
                             dataset=dataset_name or library.name)

    check = record_check(model.name)

    async def work(sample: Sample) -> dict[str, Any]:
        request = requests.get(sample.id, sample.user_request)
        demos, schema = context.for_sample(sample.id, request)
        outcome = await predict_one(model, sample.id, request, library, demos, options, schema)
        u = outcome.run_usage
        summary.prompt_tokens += u.prompt_tokens
        summary.completion_tokens += u.completion_tokens
        summary.retries += u.retries
        summary.cache_hits += int(u.cached)
        summary.parse_failures += int(outcome.prediction.error is not None)
        summary.repeat_stops += int(outcome.prediction.finish_reason == "repeat")
        summary.reformatted += int(outcome.reformatted)
        return outcome.record

    def failure(sample: Sample, exc: BaseException) -> dict[str, Any]:
        retries = getattr(exc, "retries", 0)
        summary.retries += int(retries or 0)
        failed = Prediction(id=sample.id, user_request=requests.get(sample.id, sample.user_request),
                            model=model.name, error=str(exc), failed=True)
        return failed.to_record()

    label = f"{model.name} · {dataset_name or library.name or Path(output).stem}"
    shown = display or NullDisplay()
    ran = await run_records(selected, work, output, key=lambda s: s.id, concurrency=options.concurrency,
                            label=label, display=ForwardDisplay(shown), failure=failure, catch=(ModelError,),
                            check=check, clock=clock)
    summary.skipped = ran.skipped
    summary.written = ran.written
    summary.failures = ran.failed
    summary.retried = ran.retried
    summary.errors = ran.errors
    summary.seconds = ran.seconds
    shown.finish(summary)
    return summary


_Forward = ForwardDisplay  # the old private name


__all__ = [
    "FAILED",
    "NullDisplay",
    "apredict_file",
    "is_failed",
    "PredictDisplay",
    "PredictOptions",
    "PredictSummary",
    "STRUCTURE_ORDER",
    "open_model",
    "predict_dataset",
    "predict_file",
    "predict_header",
    "predict_one",
    "prediction_record",
    "read_done",
    "record_check",
    "select_samples",
]


def predict_header(model: str, data: str | Path, options: PredictOptions,
                   command: Sequence[str] | None = None) -> Any:
    """The run header of a `taskbench predict` of the dataset directory ``data`` into one file (a
    :class:`~taskbench.schema.header.RunHeader`; see :mod:`taskbench.dataset.header`)."""
    from ..dataset.header import new_header, predict_identity

    config = {"model": model, "data": str(Path(data).resolve()), **options.model_dump(mode="json")}
    return new_header("predict", config=config, identity=predict_identity(model, data, config),
                      seeds={"sampling": options.seed}, command=command)


async def apredict_file(
    data: str | Path,
    model: Any,
    output: str | Path,
    options: PredictOptions | None = None,
    *,
    display: RecordDisplay | None = None,
    close_model: bool = False,
) -> PredictSummary:
    """Load a dataset directory and predict it into ``output``. ``model`` is a ``Model`` or a
    ``provider/model`` string (then it is opened with defaults and closed at the end). ``close_model`` closes
    a given ``Model`` too, inside this event loop, where its HTTP clients were made."""
    from ..dataset.layout import load_dataset, log_problems

    options = options or PredictOptions()
    ds = load_dataset(data)
    if not ds.samples:
        from ..dataset.layout import no_samples_error

        raise no_samples_error(data)
    log_problems(ds)
    owned = isinstance(model, str)
    from ..dataset.header import open_run, undo_if_unreachable

    # another model or other prediction options into this file, or a file that holds no predictions, are
    # refused before anything is written (the header, or the repair of a torn last line)
    fresh = not Path(output).exists()
    if not fresh and Path(output).is_file():
        vet_records(output, record_check(model if owned else model.name))
    old = open_run(output, predict_header(model if owned else model.name, ds.root, options))
    m = open_model(model, concurrency=options.concurrency) if owned else model
    try:
        with undo_if_unreachable(output, "predict", fresh=fresh and old is None):
            return await predict_dataset(m, ds.library, ds.samples, output, options, requests=ds.requests,
                                         dataset_name=ds.name, display=display)
    finally:
        if owned or close_model:
            await m.aclose()


def predict_file(
    data: str | Path,
    model: Any,
    output: str | Path,
    options: PredictOptions | None = None,
    *,
    display: RecordDisplay | None = None,
    close_model: bool = False,
) -> PredictSummary:
    """:func:`apredict_file` for plain code (blocks; safe inside a running event loop too)."""
    return run_sync(apredict_file(data, model, output, options, display=display, close_model=close_model))
