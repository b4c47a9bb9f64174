"""The main job: predict and evaluate models x datasets into a self-describing run directory.

Run directory layout::

    RUN_DIR/
      header.json                        the run header (taskbench.dataset.header), checked on resume
      run_log.json                       RunLog: config, environment, seeds, timings, usage, records, metrics
      report.md, report.html             leaderboard + per-structure tables + plots (HTML is self-contained)
      predictions/<dataset>/<model>.jsonl  resumable predictions (reference format + raw/usage/error)
      metrics/<dataset>/<model>.json     {"strict": ..., "compat": ...} as `taskbench evaluate --both` writes
      generated/                         the generation stage: a `taskbench generate` output (when asked for)
      agents/                            the agents stage: a `taskbench agents eval` output (when asked for)

Re-running with the same directory resumes: the predictions files are the source of truth (see
:mod:`taskbench.predict.runner`), so finished samples cost nothing and scores are recomputed from them.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..dataset import jsonio, liveness
from ..dataset.header import PACKAGES, environment, git_revision, new_header, open_run, run_identity
from ..dataset.layout import Dataset, load_dataset, log_problems, no_samples_error
from ..dataset.select import model_slug
from ..errors import InputError, validation_message
from ..llm.registry import parse_model_string, provider_class
from ..predict.demos import demo_candidates
from ..predict.runner import (
    DEFAULT_MAX_TOKENS,
    NullDisplay,
    PredictDisplay,
    PredictOptions,
    default_max_tokens,
    open_model,
    predict_dataset,
    read_done,
    select_samples,
)
from ..records import RecordDisplay, exclusive, lock_is_free, run_sync
from ..schema import Prediction, RunConfig, RunEntry, RunLog, RunPass, RunStage, Usage
from ..schema.run import GenerateStageSummary
from .resolve import BUNDLED_DEMO_DATASETS, resolve_data
from .spec import DEFAULT_LIMIT, DEFAULT_MODEL, RunSpec

RUN_LOG_FILE = "run_log.json"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def _last_activity(run_dir: Path) -> float | None:
    """When anything in the run directory was last written (a died pass's end: records are appended as they
    come, while the log is written only between stages)."""
    latest = None
    for path in run_dir.rglob("*"):
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        latest = mtime if latest is None else max(latest, mtime)
    return latest


def _dataset_name(spec: str, ds: Dataset) -> str:
    return ds.root.name if Path(spec).is_dir() else str(spec)


def _load(spec: str) -> tuple[str, Dataset]:
    path = resolve_data(spec)
    ds = load_dataset(path)
    if not ds.samples:
        raise no_samples_error(path)
    log_problems(ds)
    return _dataset_name(spec, ds), ds


def _sum_usage(records: Sequence[Prediction]) -> Usage:
    total = Usage()
    for r in records:
        if r.usage is not None:
            total = total + Usage(prompt_tokens=r.usage.prompt_tokens,
                                  completion_tokens=r.usage.completion_tokens, seconds=r.usage.seconds)
    return total


def score_entry(entry: RunEntry, ds: Dataset, run_dir: Path, *, bootstrap: int, seed: int) -> None:
    """Score an entry's predictions in strict and compat modes; fill its metrics and write the metrics JSON."""
    from ..dataset.layout import read_raw_records
    from ..eval.api import evaluate

    start = time.perf_counter()
    chosen = set(entry.sample_ids)
    samples = [s for s in ds.samples if s.id in chosen]
    # an unreadable line was left out when the dataset loaded (and said so): it is left out here too, not an
    # error after every model call has run
    raw = [r for r in read_raw_records(ds.data_path, problems=[]) if str(r.get("id")) in chosen] \
        if ds.data_path else None
    records = [r for r in entry.records if isinstance(r, Prediction)]
    result = evaluate(samples, records, ds.library, mode="both", gold_records=raw, bootstrap=bootstrap, seed=seed,
                      model=entry.model, dataset=entry.dataset)
    doc = result.to_json()
    entry.strict = result.strict
    entry.compat = result.compat
    metrics_path = Path("metrics") / entry.dataset / f"{model_slug(entry.model)}.json"
    jsonio.write_json(run_dir / metrics_path, doc)
    entry.metrics_path = str(metrics_path)
    entry.evaluate_seconds = time.perf_counter() - start
    entry.status = "scored"


RUN_LOCK_FILE = liveness.RUN_LOCK_FILE
"""Held (``flock``) by the process running a run directory; the kernel releases it however that process ends."""


def _write_log(log: RunLog, run_dir: Path) -> None:
    log.updated = _now()
    if log.passes:
        current = log.passes[-1]
        current.stage, current.status = log.stage, log.status
        current.finished = log.finished if log.status != "running" else log.updated
    jsonio.write_json(run_dir / RUN_LOG_FILE, jsonio.model_json(log))


def _set_stage(log: RunLog, run_dir: Path, stage: str) -> None:
    """Record what the run is doing now (in the log and the writer marker), so a death says where."""
    log.stage = stage
    liveness.update_stage(run_dir, stage)
    _write_log(log, run_dir)


def read_run_log(run_dir: str | Path) -> RunLog:
    """Load ``run_log.json`` from a run directory."""
    path = Path(run_dir) / RUN_LOG_FILE
    try:
        return RunLog.model_validate(jsonio.read_json(path))
    except ValidationError as exc:
        raise InputError(f"not a taskbench run log: {validation_message(exc)}", path=path,
                         hint="rerun the command into a fresh directory") from None


def _lock_is_free(run_dir: Path) -> bool:
    """True when no live process holds the run directory's lock."""
    return lock_is_free(run_dir / RUN_LOCK_FILE)


def run_state(run_dir: str | Path) -> tuple[RunLog, str | None]:
    """The run log of ``run_dir`` and, when it says "running" but no process holds the run (it was killed or
    crashed), one line saying how it died; the returned log's status is then "died"."""
    run_dir = Path(run_dir)
    log = read_run_log(run_dir)
    if log.status != "running" or not _lock_is_free(run_dir):
        return log, None
    marker = liveness.read_marker(run_dir)
    death = liveness.death_of(marker) if marker is not None else None
    if death is None:
        line = (f"the run in {run_dir} (pid {log.pid} on {log.host}) stopped without recording an end"
                + (f" at {log.stage}" if log.stage else ""))
    else:
        death.stage = death.stage or log.stage
        line = death.describe(f"the run in {run_dir}")
    log.status = "died"
    return log, line


def _carry_over(log: RunLog, old: RunLog, death: str | None, run_dir: Path) -> list[RunStage]:
    """Continue an earlier run's accounting: its passes (the last one marked as it ended), and its timings and
    usage where the entry is the same work (model, dataset, samples)."""
    passes = list(old.passes) or [RunPass(started=old.started, finished=old.finished, seconds=old.seconds,
                                          status=old.status, pid=old.pid, host=old.host, stage=old.stage)]
    last = passes[-1]
    if last.status == "running":
        last.status = "died"
        last.error = death
        ended = _last_activity(run_dir)
        if ended is not None:
            last.finished = _dt.datetime.fromtimestamp(ended, _dt.timezone.utc).isoformat(timespec="milliseconds")
            last.seconds = max(0.0, ended - _parse_time(last.started))
    log.passes = passes + log.passes
    log.started = old.started
    log.run_id = old.run_id
    log.seconds = sum(p.seconds for p in passes)
    for entry in log.entries:
        before = old.entry(entry.model, entry.dataset)
        if before is None or before.sample_ids != entry.sample_ids or before.predictions_path != entry.predictions_path:
            continue
        entry.predict_seconds = before.predict_seconds
        entry.run_usage = before.run_usage
        entry.cache_hits = before.cache_hits
    return list(old.stages)  # this pass rebuilds the stages; _merge_stage adds the earlier figures


def _parse_time(text: str) -> float:
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _merge_stage(earlier: Sequence[RunStage], stage: RunStage) -> RunStage:
    """Add an earlier pass's figures of the same stage (its calls, tokens, cache hits and seconds)."""
    old = next((st for st in earlier if st.kind == stage.kind), None)
    if old is None:
        return stage
    stage.seconds += old.seconds
    now, before = stage.summary, old.summary
    if isinstance(now, GenerateStageSummary) and isinstance(before, GenerateStageSummary):
        for key in ("calls", "cache_hits", "tokens"):
            a, b = getattr(now, key), getattr(before, key)
            if a is not None and b is not None:
                setattr(now, key, a + b)
    return stage


async def _run_model(
    spec: str,
    datasets: list[tuple[str, Dataset]],
    log: RunLog,
    run_dir: Path,
    options: PredictOptions,
    *,
    cache: bool,
    model_options: dict[str, Any],
    display: PredictDisplay,
    bootstrap: int,
    seed: int,
    base_url: str | list[str] | None = None,
    api_key_env: str | None = None,
    executor: Any = None,
) -> None:
    endpoint = endpoint_options(spec, base_url=base_url, api_key_env=api_key_env)
    if executor is not None:  # sharded: each worker rebuilds the model from its config
        from ..executors.predict import apredict_sharded
        from ..llm.config import ModelConfig

        config = ModelConfig.build(spec, concurrency=options.concurrency, cache=cache, options=model_options,
                                   **endpoint)
        model: Any = None
    else:
        model = open_model(spec, concurrency=options.concurrency, cache=cache, options=model_options, **endpoint)
    try:
        for name, ds in datasets:
            entry = log.entry(spec, name)
            assert entry is not None
            out = run_dir / entry.predictions_path
            _set_stage(log, run_dir, f"predict {spec} on {name}")
            try:
                if executor is not None:
                    summary = await apredict_sharded(ds.root, config, out, options, executor=executor,
                                                     dataset_name=name, display=display)
                else:
                    summary = await predict_dataset(
                        model, ds.library, ds.samples, out, options, requests=ds.requests, dataset_name=name,
                        display=display,
                    )
            except Exception as exc:
                entry.status, entry.error = "failed", f"{type(exc).__name__}: {exc}"
                _write_log(log, run_dir)
                raise
            done = read_done(out)
            records = [Prediction.model_validate(done[i]) for i in entry.sample_ids if i in done]
            entry.records = list(records)
            entry.predict_seconds += summary.seconds
            entry.failures = sum(1 for r in records if r.failed)
            entry.cache_hits += summary.cache_hits
            entry.parse_failures = sum(1 for r in records if r.error is not None and not r.failed)
            entry.usage = _sum_usage(records)
            entry.run_usage = entry.run_usage + Usage(
                prompt_tokens=summary.prompt_tokens, completion_tokens=summary.completion_tokens,
                seconds=summary.seconds, retries=summary.retries)
            entry.error = summary.errors[0] if summary.errors else None
            entry.status = "predicted"
            _set_stage(log, run_dir, f"score {spec} on {name}")
            score_entry(entry, ds, run_dir, bootstrap=bootstrap, seed=seed)
            if entry.failures:
                entry.status = "incomplete"
            _write_log(log, run_dir)
    finally:
        if model is not None:
            await model.aclose()


def endpoint_options(spec: str, *, base_url: str | list[str] | None, api_key_env: str | None) -> dict[str, Any]:
    """The endpoint options of a run (``base_url``, ``api_key_env``) that the model's provider takes: a run
    may mix an embedded model with served ones, and only the served ones have an endpoint."""
    cls = provider_class(parse_model_string(spec)[0])
    out: dict[str, Any] = {}
    if base_url and cls.accepts("base_url"):
        out["base_url"] = base_url
    if api_key_env and cls.accepts("api_key_env"):
        out["api_key_env"] = api_key_env
    return out


async def arun_benchmark(
    run_dir: str | Path,
    *,
    models: Sequence[str] = (DEFAULT_MODEL,),
    datasets: Sequence[str] = BUNDLED_DEMO_DATASETS,
    options: PredictOptions | None = None,
    cache: bool = True,
    model_options: dict[str, Any] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    display: PredictDisplay | None = None,
    command: Sequence[str] | None = None,
    plots: bool = True,
    base_url: str | list[str] | None = None,
    api_key_env: str | None = None,
    executor: Any = None,
    generate: int = 0,
    generate_tools: str | None = None,
    agents: Sequence[str] = (),
    agent_tasks: Sequence[str] | None = None,
    stage_displays: Mapping[str, RecordDisplay] | None = None,
) -> RunLog:
    """Predict and score every model on every dataset into ``run_dir``; write the run log and reports.

    ``generate`` > 0 adds the generation stage (that many samples from the tool library ``generate_tools``,
    default the bundled multimedia library, with both critics) and ``agents`` the agents stage (those agents on
    a few bundled offline TMDB tasks, ``agent_tasks`` to choose them), both with the first model and after the
    scoring (:mod:`taskbench.run.stages`). ``stage_displays`` maps "generate" / "agents" to their progress
    displays; the predictions' ``display`` is closed before they start.

    ``executor`` (an :class:`~taskbench.run.executor.ExecutorSpec`, opened here and closed at the end, or an
    executor of :mod:`taskbench.executors`, e.g. a ``RayExecutor``, used as given): every stage runs sharded on
    its workers (predictions by sample, generation by plan entry, agents by episode; models rebuilt in each
    worker from their config); scoring, critics, dedup and metrics run here after the merges. None or a local
    spec: in this process.

    Resumes from whatever ``run_dir`` already holds. Returns the final :class:`RunLog`, whose status is
    ``"complete"``, or ``"incomplete"`` when some model calls failed for good (their records are failure
    records; rerunning retries them) or a stage did not finish.
    """
    from .executor import ExecutorSpec, check_executor, executor_scope
    from .report import write_reports
    from .stages import DEFAULT_GENERATE_TOOLS

    if isinstance(executor, ExecutorSpec):  # the executor choice: opened for the run, closed after it
        check_executor(executor)
        with executor_scope(executor) as opened:
            return await arun_benchmark(
                run_dir, models=models, datasets=datasets, options=options, cache=cache,
                model_options=model_options, bootstrap=bootstrap, seed=seed, display=display, command=command,
                plots=plots, base_url=base_url, api_key_env=api_key_env, executor=opened, generate=generate,
                generate_tools=generate_tools, agents=agents, agent_tasks=agent_tasks, stage_displays=stage_displays)
    options = options or PredictOptions()
    display = display or NullDisplay()
    run_dir = jsonio.make_directory(run_dir)
    loaded = [_load(spec) for spec in datasets]
    names = [n for n, _ in loaded]
    if len(set(names)) != len(names):
        raise InputError(f"two datasets share a name ({', '.join(names)}); give distinct directories")
    if len(set(models)) != len(models):
        raise InputError(f"a model is listed twice: {', '.join(models)}")
    agent_env: str | None = None
    if agents:  # the agents stage runs demo_config's environment
        from ..agents.eval import DEMO_ENV

        agent_env = DEMO_ENV
    config = RunConfig(
        models=list(models), datasets=list(datasets), shots=options.shots, limit=options.limit,
        structured=options.structured, reformat=options.reformat, temperature=options.temperature,
        top_p=options.top_p, max_tokens=options.max_tokens, concurrency=options.concurrency, cache=cache,
        bootstrap=bootstrap, model_options=dict(model_options or {}), seed=options.seed, template=options.template,
        plan=options.plan, demo_selection=options.demo_selection, shortlist=options.shortlist,
        base_url=base_url, api_key_env=api_key_env,
        executor=getattr(executor, "name", "local") if executor is not None else "local",
        ray_address=getattr(executor, "address", None), workers=getattr(executor, "requested_workers", None),
        timeout=(model_options or {}).get("timeout"), max_retries=(model_options or {}).get("max_retries"),
        command=list(command if command is not None else sys.argv),
        generate=generate, generate_tools=(generate_tools or DEFAULT_GENERATE_TOOLS) if generate else None,
        agents=list(agents), agent_env=agent_env, agent_tasks=list(agent_tasks or []),
    )
    started = _now()
    seeds = {"sampling": options.seed, "bootstrap": seed}
    config_doc = config.model_dump(mode="json")
    header = new_header("run", config=config_doc, identity=run_identity(config_doc), seeds=seeds, command=command)
    log = RunLog(
        run_id=f"{run_dir.resolve().name}@{started}", started=started, config=config,
        environment=header.environment or environment(command), seeds=seeds,
        pid=os.getpid(), host=socket.gethostname(), stage="start",
        passes=[RunPass(started=started, pid=os.getpid(), host=socket.gethostname(), stage="start")],
    )
    # which samples and demos each dataset uses does not depend on the model: work it out once per dataset
    chosen = {
        name: (
            [s.id for s in select_samples(ds.samples, options.limit)],
            # fixed demos are one list per dataset; retrieved ones are chosen per request (not listed here)
            [d.id for d in demo_candidates(ds.samples, ds.library, name=name)]
            if options.shots and options.demo_selection == "fixed" else [],
        )
        for name, ds in loaded
    }
    for spec in models:
        for name, ds in loaded:
            sample_ids, demo_ids = chosen[name]
            log.entries.append(RunEntry(
                model=spec, dataset=name, data_path=str(ds.root), dependency=ds.library.dependency,
                predictions_path=str(Path("predictions") / name / f"{model_slug(spec)}.jsonl"),
                sample_ids=list(sample_ids), demo_ids=list(demo_ids),
            ))
    with exclusive(run_dir / RUN_LOCK_FILE), liveness.writing(run_dir, stage="start") as death:
        open_run(run_dir, header)  # another configuration into this directory is refused here
        earlier: list[RunStage] = []
        previous = _previous_log(run_dir)
        death_line = death.describe("the last run") if death is not None else None
        if previous is not None:
            if previous.status == "running" and death_line is None:
                death_line = "the last run stopped without recording an end" + (
                    f" at {previous.stage}" if previous.stage else "")
            earlier = _carry_over(log, previous, death_line, run_dir)
        log.previous_death = death_line
        notice = getattr(display, "notice", None)
        if death_line and callable(notice):
            notice(f"{death_line}; resuming (what it finished is kept)")
        _write_log(log, run_dir)
        start = time.perf_counter() - log.seconds  # wall seconds continue from the earlier passes

        try:
            for spec in models:
                await _run_model(spec, loaded, log, run_dir, options, cache=cache,
                                 model_options=model_options or {}, display=display, bootstrap=bootstrap, seed=seed,
                                 base_url=base_url, api_key_env=api_key_env, executor=executor)
            if generate or agents:
                await _run_stages(log, run_dir, models[0], generate=generate, generate_tools=generate_tools,
                                  agents=agents, agent_tasks=agent_tasks, cache=cache,
                                  model_options=model_options or {},
                                  endpoint=endpoint_options(models[0], base_url=base_url, api_key_env=api_key_env),
                                  display=display, stage_displays=stage_displays or {}, earlier=earlier,
                                  executor=executor)
        except BaseException as exc:
            log.status = "interrupted" if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)) else "failed"
            if log.passes:
                log.passes[-1].error = f"{type(exc).__name__}: {exc}"[:500]
            _finish(log, run_dir, start)
            raise
        unfinished = any(e.status == "incomplete" for e in log.entries) or any(
            st.status != "complete" for st in log.stages)
        log.status = "incomplete" if unfinished else "complete"
        log.stage = "report"
        _finish(log, run_dir, start)
        write_reports(log, run_dir, plots=plots)
    return log


def _previous_log(run_dir: Path) -> RunLog | None:
    """The run log an earlier pass left, if there is a readable one."""
    if not (run_dir / RUN_LOG_FILE).is_file():
        return None
    try:
        return read_run_log(run_dir)
    except (InputError, OSError):
        return None


async def _run_stages(log: RunLog, run_dir: Path, spec: str, *, generate: int, generate_tools: str | None,
                      agents: Sequence[str], agent_tasks: Sequence[str] | None, cache: bool,
                      model_options: dict[str, Any], endpoint: dict[str, Any], display: Any,
                      stage_displays: Mapping[str, RecordDisplay], earlier: Sequence[RunStage] = (),
                      executor: Any = None) -> None:
    from .stages import DEFAULT_GENERATE_TOOLS, agents_stage, generation_stage

    _close(display)  # one live progress display at a time
    if generate:
        shown = stage_displays.get("generate")
        _set_stage(log, run_dir, "generate")
        try:
            stage = await generation_stage(run_dir, spec, n=generate, tools=generate_tools or DEFAULT_GENERATE_TOOLS,
                                           seed=log.config.seed or 0, cache=cache, model_options=model_options,
                                           endpoint=endpoint, display=shown, executor=executor)
        finally:
            _close(shown)
        log.stages.append(_merge_stage(earlier, stage))
        _write_log(log, run_dir)
    if agents:
        shown = stage_displays.get("agents")
        _set_stage(log, run_dir, "agents")
        try:
            stage = await agents_stage(run_dir, spec, agents=agents, tasks=agent_tasks, cache=cache,
                                       model_options=model_options, endpoint=endpoint, display=shown,
                                       executor=executor)
        finally:
            _close(shown)
        log.stages.append(_merge_stage(earlier, stage))
        _write_log(log, run_dir)


def _close(display: Any) -> None:
    close = getattr(display, "close", None)
    if callable(close):
        close()


def run_benchmark(run_dir: str | Path | RunSpec, **kwargs: Any) -> RunLog:
    """:func:`arun_benchmark` for plain code (blocks; safe inside a running event loop too).

    Given a :class:`~taskbench.run.spec.RunSpec` instead of a directory, runs what `taskbench run` runs with
    the same flags (its defaults filled); ``kwargs`` then add the runtime objects (display, executor, ...)."""
    if isinstance(run_dir, RunSpec):
        spec_kwargs = run_dir.benchmark_kwargs()
        path: str | Path = spec_kwargs.pop("run_dir")
        return run_sync(arun_benchmark(path, **{**spec_kwargs, **kwargs}))
    return run_sync(arun_benchmark(run_dir, **kwargs))


def _finish(log: RunLog, run_dir: Path, start: float) -> None:
    log.finished = _now()
    log.seconds = time.perf_counter() - start
    if log.passes:
        log.passes[-1].seconds = log.seconds - sum(p.seconds for p in log.passes[:-1])
    total = Usage()
    for e in log.entries:
        total = total + e.usage
    log.usage = total
    _write_log(log, run_dir)


__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "default_max_tokens",
    "RUN_LOG_FILE",
    "arun_benchmark",
    "endpoint_options",
    "PACKAGES",
    "environment",
    "git_revision",
    "model_slug",
    "read_run_log",
    "run_benchmark",
    "run_state",
    "score_entry",
]
