"""The resumable, crash-safe prediction runner.

Design (why a ``kill -9`` at any moment is harmless and a resumed run equals an uninterrupted one):

- **One writer, whole lines.** Records go to an append-only JSON Lines file through
  :class:`~taskbench.dataset.JsonlAppender`: one ``write`` per complete line, flushed and fsynced. A torn last
  line (the process died inside ``write``) is cut back to the last newline when the file is opened again. An
  advisory lock (``flock``) on the output file stops a second process from writing the same file.
- **Skip what is done.** On start the file's ids are read; those samples are not predicted again, so an id is
  never written twice.
- **Dataset order.** Requests run concurrently, but records are written strictly in the order of the selected
  samples: completions that arrive early wait in a buffer until every earlier sample is written (a failed
  model call releases its slot without a record). So the file is always a prefix of the full run's file (plus,
  after a model failure, later samples), and a resumed run appends exactly the records an uninterrupted run
  would have written next.
- **No run-dependent values.** A record holds the answer and what it cost *to produce*: raw text, parsed result
  or parse error, token counts and the generation latency. With the response cache on, a repeated request is
  answered from the cache and the latency is replayed from a small entry the runner stores next to the cached
  response (key ``predict-latency:<request hash>``), so the record is byte for byte what the first run wrote.
  Facts about *this* run (cache hits, retries, wall time) go to :class:`PredictSummary` and the run log, not
  into the records. Without the cache (``--no-cache``) the latency is measured afresh and records can differ in
  ``usage.seconds``.

A model call that fails for good (retry budget spent) writes no record: it is counted in the summary and
retried by the next run. An answer that does not parse *is* written, with ``error`` and the raw text.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..dataset import jsonio
from ..errors import ConfigError, InputError, ModelError
from ..schema import Prediction, Sample, ToolLibrary, Usage
from .context import RequestContext
from .demos import MAX_SHOTS
from .parse import extract_json, make_prediction
from .prompts import build_messages, render_reformat

STRUCTURE_ORDER: tuple[str, ...] = ("single", "chain", "dag")
"""Round-robin order used by :func:`select_samples`."""

LATENCY_PREFIX = "predict-latency:"
"""Namespace of the latency entries the runner keeps in the model's response cache."""


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

    def generation_config(self) -> Any:
        """The :class:`taskbench.llm.base.GenerationConfig` for these options."""
        from ..llm.base import GenerationConfig

        return GenerationConfig(
            temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens, seed=self.seed
        )


class PredictSummary(BaseModel):
    """What one prediction run did (facts about this run, unlike the records)."""

    model: str = Field(description="'provider/model'.")
    output: str = Field(description="Path of the predictions file.")
    selected: int = Field(default=0, description="Samples selected (after --limit).")
    skipped: int = Field(default=0, description="Samples already in the file from an earlier run.")
    written: int = Field(default=0, description="Records written by this run.")
    failures: int = Field(default=0, description="Model calls that failed for good (no record written).")
    parse_failures: int = Field(default=0, description="Records written with a parse error (this run).")
    reformatted: int = Field(default=0, description="Answers repaired by the --reformat pass (this run).")
    cache_hits: int = Field(default=0, description="Calls answered from the response cache.")
    retries: int = Field(default=0, description="Retried requests.")
    prompt_tokens: int = Field(default=0, description="Prompt tokens of this run's calls.")
    completion_tokens: int = Field(default=0, description="Completion tokens of this run's calls.")
    seconds: float = Field(default=0.0, description="Wall-clock seconds of this run.")
    errors: list[str] = Field(default_factory=list, description="First few model failures, 'id: message'.")

    @property
    def done(self) -> int:
        """Samples with a record in the file."""
        return self.skipped + self.written


class PredictDisplay(Protocol):
    """Receives progress; the CLI renders it (library code never prints)."""

    def start(self, label: str, total: int, completed: int) -> None:
        """A run over ``total`` samples begins, ``completed`` of them already done."""

    def advance(self, prediction: Prediction | None, usage: Usage | None, *, failed: bool) -> None:
        """One sample finished: ``prediction`` (None when the call failed) and this run's usage of it."""

    def finish(self, summary: PredictSummary) -> None:
        """The run ended."""


class NullDisplay:
    """A display that shows nothing."""

    def start(self, label: str, total: int, completed: int) -> None:  # noqa: D102
        pass

    def advance(self, prediction: Prediction | None, usage: Usage | None, *, failed: bool) -> None:  # noqa: D102
        pass

    def finish(self, summary: PredictSummary) -> None:  # noqa: D102
        pass


def select_samples(samples: Sequence[Sample], limit: int | None) -> list[Sample]:
    """At most ``limit`` samples, stratified: round robin over single, chain, dag (each in dataset order);
    returned in dataset order. Deterministic."""
    if limit is None or limit >= len(samples):
        return list(samples)
    pools: dict[str, list[Sample]] = {}
    for s in samples:
        pools.setdefault(s.type, []).append(s)
    kinds = [k for k in STRUCTURE_ORDER if k in pools] + [k for k in pools if k not in STRUCTURE_ORDER]
    chosen: set[str] = set()
    while len(chosen) < limit:
        for kind in kinds:
            if pools[kind] and len(chosen) < limit:
                chosen.add(pools[kind].pop(0).id)
    return [s for s in samples if s.id in chosen]


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold an advisory exclusive lock on ``path`` (POSIX); refuse when another process holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX: no locking
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{path}: another taskbench process is writing this file; wait for it") from None
        yield
    finally:
        os.close(fd)


def read_done(path: Path, model: str | None = None) -> dict[str, dict[str, Any]]:
    """Records already in a predictions file, by id (a torn last line is ignored). With ``model``, a record
    made by another model is an error (one file holds one model's predictions)."""
    if not path.exists():
        return {}
    done: dict[str, dict[str, Any]] = {}
    for line, rec in jsonio.iter_jsonl(path, allow_torn_tail=True):
        if not isinstance(rec, dict) or "id" not in rec:
            raise InputError("expected a prediction object with an 'id'", path=path, line=line)
        other = rec.get("model")
        if model is not None and other is not None and other != model:
            raise ConfigError(
                f"{path}:{line}: holds predictions of {other!r}, not {model!r}; choose another output file"
            )
        done[str(rec["id"])] = rec
    return done


def prediction_record(prediction: Prediction, *, finish_reason: str | None, reformat_raw: str | None) -> dict:
    """The JSON line for a prediction: the reference format plus our keys, with usage reduced to what it
    cost to produce the answer (no run-dependent cache/retry flags)."""
    rec = prediction.to_record()
    if prediction.usage is not None:
        u = prediction.usage
        rec["usage"] = {
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "seconds": u.seconds,
        }
    if finish_reason is not None:
        rec["finish_reason"] = finish_reason
    if reformat_raw is not None:
        rec["reformat_raw"] = reformat_raw
    return rec


@dataclass
class _Call:
    output: Any
    seconds: float


@dataclass
class _Outcome:
    prediction: Prediction | None
    record: dict | None
    run_usage: Usage = field(default_factory=Usage)
    error: str | None = None
    reformatted: bool = False


async def _generate(model: Any, messages: list[dict[str, str]], schema: Any, config: Any) -> _Call:
    """One call; the latency is replayed from the cache on a hit (see the module docstring)."""
    from ..llm.cache import cache_key

    out = await model.generate(messages, schema=schema, config=config)
    cache = getattr(model, "cache", None)
    if cache is None:
        return _Call(out, round(out.usage.seconds, 6))
    key = LATENCY_PREFIX + cache_key(model.provider.identity(), messages, config.as_dict(), schema)
    if out.usage.cached:
        hit = cache.get(key)
        if hit is not None and isinstance(hit.get("seconds"), (int, float)):
            return _Call(out, float(hit["seconds"]))
    seconds = round(out.usage.seconds, 6)
    cache.put(key, {"seconds": seconds}, model=getattr(model, "name", None))
    return _Call(out, seconds)


def _run_usage(out: Any) -> Usage:
    return Usage(
        prompt_tokens=out.usage.prompt_tokens,
        completion_tokens=out.usage.completion_tokens,
        seconds=out.usage.seconds,
        cached=out.usage.cached,
        retries=out.usage.retries,
    )


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
    call = await _generate(model, messages, schema if options.structured else None, config)
    out = call.output
    run_usage = _run_usage(out)
    usage = Usage(
        prompt_tokens=out.usage.prompt_tokens, completion_tokens=out.usage.completion_tokens, seconds=call.seconds
    )
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
    reformat_raw = None
    reformatted = False
    if prediction.result is None and options.reformat and not options.structured:
        fix = [{"role": "user", "content": render_reformat(library.dependency, out.text or "")}]
        call2 = await _generate(model, fix, None, config)
        run_usage = run_usage + _run_usage(call2.output)
        usage = usage + Usage(
            prompt_tokens=call2.output.usage.prompt_tokens,
            completion_tokens=call2.output.usage.completion_tokens,
            seconds=call2.seconds,
        )
        reformat_raw = call2.output.text
        result, error = extract_json(reformat_raw)
        prediction = prediction.model_copy(
            update={"result": result, "error": None if result is not None else f"{prediction.error}; "
                    f"after --reformat: {error}", "usage": usage}
        )
        reformatted = result is not None
    record = prediction_record(prediction, finish_reason=out.finish_reason, reformat_raw=reformat_raw)
    return _Outcome(prediction, record, run_usage, reformatted=reformatted)


async def predict_dataset(
    model: Any,
    library: ToolLibrary,
    samples: Sequence[Sample],
    output: str | Path,
    options: PredictOptions | None = None,
    *,
    requests: dict[str, str] | None = None,
    dataset_name: str | None = None,
    display: PredictDisplay | None = None,
    clock: Any = time.perf_counter,
) -> PredictSummary:
    """Predict ``samples`` with ``model`` into the JSON Lines file ``output``, resuming what is there.

    ``model`` is a :class:`taskbench.llm.Model` (anything with ``name``, ``cache``, ``provider`` and
    ``async generate(messages, schema=, config=)``). ``requests`` overrides user requests by id (a dataset's
    ``user_requests.json``). Demos are drawn from all ``samples`` before ``options.limit`` is applied.
    """
    options = options or PredictOptions()
    display = display or NullDisplay()
    output = Path(output)
    start = clock()
    context = RequestContext(library, samples, options, dataset_name=dataset_name)
    selected = select_samples(samples, options.limit)
    summary = PredictSummary(model=model.name, output=str(output), selected=len(selected))
    with _exclusive(output):
        appender = jsonio.JsonlAppender(output)  # repairs a torn tail first
        try:
            done = read_done(output, model.name)
            todo = [s for s in selected if s.id not in done]
            summary.skipped = len(selected) - len(todo)
            display.start(f"{model.name} · {dataset_name or library.name or output.stem}", len(selected),
                          summary.skipped)
            await _run(model, library, todo, options, context, requests or {}, appender, summary, display)
        finally:
            appender.close()
    summary.seconds = clock() - start
    display.finish(summary)
    return summary


async def _run(
    model: Any,
    library: ToolLibrary,
    todo: list[Sample],
    options: PredictOptions,
    context: RequestContext,
    requests: dict[str, str],
    appender: jsonio.JsonlAppender,
    summary: PredictSummary,
    display: PredictDisplay,
) -> None:
    sem = asyncio.Semaphore(options.concurrency)
    pending: dict[int, _Outcome] = {}
    next_index = 0

    async def work(i: int, sample: Sample) -> tuple[int, _Outcome]:
        async with sem:
            request = requests.get(sample.id, sample.user_request)
            demos, schema = context.for_sample(sample.id, request)
            try:
                return i, await predict_one(model, sample.id, request, library, demos, options, schema)
            except ModelError as exc:
                return i, _Outcome(None, None, error=f"{sample.id}: {exc}")

    tasks = [asyncio.ensure_future(work(i, s)) for i, s in enumerate(todo)]
    try:
        for fut in asyncio.as_completed(tasks):
            i, outcome = await fut
            pending[i] = outcome
            _account(summary, outcome)
            display.advance(outcome.prediction, outcome.run_usage if outcome.prediction else None,
                            failed=outcome.prediction is None or outcome.prediction.error is not None)
            while next_index in pending:  # write the contiguous prefix, in order
                ready = pending.pop(next_index)
                if ready.record is not None:
                    appender.write(ready.record)
                    summary.written += 1
                next_index += 1
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _account(summary: PredictSummary, outcome: _Outcome) -> None:
    if outcome.prediction is None:
        summary.failures += 1
        if outcome.error and len(summary.errors) < 5:
            summary.errors.append(outcome.error)
        return
    u = outcome.run_usage
    summary.prompt_tokens += u.prompt_tokens
    summary.completion_tokens += u.completion_tokens
    summary.retries += u.retries
    summary.cache_hits += int(u.cached)
    summary.parse_failures += int(outcome.prediction.error is not None)
    summary.reformatted += int(outcome.reformatted)


__all__ = [
    "LATENCY_PREFIX",
    "NullDisplay",
    "PredictDisplay",
    "PredictOptions",
    "PredictSummary",
    "STRUCTURE_ORDER",
    "open_model",
    "predict_dataset",
    "predict_file",
    "predict_one",
    "prediction_record",
    "read_done",
    "select_samples",
]


def open_model(
    spec: str,
    *,
    concurrency: int = 1,
    cache: bool | str | Path = True,
    base_url: str | None = None,
    api_key_env: str | None = None,
    options: dict[str, Any] | None = None,
) -> Any:
    """A :class:`taskbench.llm.Model` for a ``provider/model`` string with the CLI's options."""
    from ..llm import get_model

    config: dict[str, Any] = dict(options or {})
    config["cache"] = cache
    if spec.startswith("llamacpp/"):
        # a local model is deterministic and only slow, never flaky: a timed-out attempt would be retried to
        # the same end, so allow long answers on a slow machine and do not retry
        config.setdefault("timeout", 900.0)
        config.setdefault("max_retries", 0)
    config.setdefault("concurrency", concurrency)
    if base_url is not None:
        config["base_url"] = base_url
    if api_key_env is not None:
        config["api_key_env"] = api_key_env
    return get_model(spec, **config)


def predict_file(
    data: str | Path,
    model: Any,
    output: str | Path,
    options: PredictOptions | None = None,
    *,
    display: PredictDisplay | None = None,
    close_model: bool = False,
) -> PredictSummary:
    """Load a dataset directory and predict it into ``output`` (blocking). ``model`` is a ``Model`` or a
    ``provider/model`` string (then it is opened with defaults and closed at the end). ``close_model`` closes
    a given ``Model`` too, inside the event loop its HTTP clients were made in (closing them from another loop
    later would leak their connections)."""
    from ..dataset.layout import load_dataset

    options = options or PredictOptions()
    ds = load_dataset(data)
    if not ds.samples:
        raise InputError("no samples (data.json) in the dataset directory", path=data)
    owned = isinstance(model, str)
    m = open_model(model, concurrency=options.concurrency) if owned else model

    async def go() -> PredictSummary:
        try:
            return await predict_dataset(
                m, ds.library, ds.samples, output, options, requests=ds.requests, dataset_name=ds.name,
                display=display,
            )
        finally:
            if owned or close_model:
                await m.aclose()

    return asyncio.run(go())
