"""The main job: predict and evaluate models x datasets into a self-describing run directory.

Run directory layout::

    RUN_DIR/
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
import platform
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..dataset import jsonio
from ..dataset.layout import Dataset, load_dataset, log_problems
from ..errors import InputError
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
from ..runner import RecordDisplay, run_sync
from ..schema import Prediction, RunConfig, RunEntry, RunEnvironment, RunLog, Usage
from .resolve import BUNDLED_DEMO_DATASETS, resolve_data
from .spec import RunSpec

DEFAULT_MODEL = "llamacpp/qwen2.5-coder-0.5b"
"""The embedded default model (no server, no key)."""

DEFAULT_LIMIT = 3
"""Samples per dataset when `taskbench run` is called without --model and --limit: a stratified subset (one
single, one chain, one DAG) so that the embedded model's whole main job (scoring 3 x 3 samples, generating 3,
6 agent episodes) stays within about 5 minutes on a 2-core machine (measured from a fresh clone on an idle
machine with 4 per dataset and a 4-step agent cap: 364 s, of which predictions 182 s, generation 34 s, agents
148 s). Pass --limit 0 for every sample."""


RUN_LOG_FILE = "run_log.json"
PACKAGES = ("taskbench", "pydantic", "numpy", "scipy", "rouge-score", "llama_cpp_python", "openai", "rich",
            "typer", "matplotlib", "jinja2")


def model_slug(model: str) -> str:
    """A file-name-safe form of 'provider/model'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def git_revision(path: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout holding ``path``, or (None, None)."""
    try:
        rev = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        if rev.returncode != 0:
            return None, None
        status = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        return rev.stdout.strip(), bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None, None


def environment(command: Sequence[str] | None = None) -> RunEnvironment:
    """Versions, git revision and machine facts for the run log."""
    from importlib import metadata

    from .. import __version__

    packages: dict[str, str] = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    rev, dirty = git_revision(Path(__file__).resolve().parent)
    return RunEnvironment(
        taskbench=__version__, git_revision=rev, git_dirty=dirty, python=platform.python_version(),
        platform=platform.platform(), cpu_count=os.cpu_count(), packages=packages,
        command=list(command if command is not None else sys.argv),
    )


def _dataset_name(spec: str, ds: Dataset) -> str:
    return ds.root.name if Path(spec).is_dir() else str(spec)


def _load(spec: str) -> tuple[str, Dataset]:
    path = resolve_data(spec)
    ds = load_dataset(path)
    if not ds.samples:
        raise InputError("no samples (data.json) in the dataset directory", path=path)
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
    raw = [r for r in read_raw_records(ds.data_path) if str(r.get("id")) in chosen] if ds.data_path else None
    records = [r.to_record() for r in entry.records if isinstance(r, Prediction)]
    result = evaluate(samples, records, ds.library, mode="both", gold_records=raw, bootstrap=bootstrap, seed=seed)
    doc = result.to_json()
    entry.strict = doc.get("strict")
    entry.compat = doc.get("compat")
    metrics_path = Path("metrics") / entry.dataset / f"{model_slug(entry.model)}.json"
    jsonio.write_json(run_dir / metrics_path, doc)
    entry.metrics_path = str(metrics_path)
    entry.evaluate_seconds = time.perf_counter() - start
    entry.status = "scored"


def _write_log(log: RunLog, run_dir: Path) -> None:
    jsonio.write_json(run_dir / RUN_LOG_FILE, log.model_dump(mode="json"))


def read_run_log(run_dir: str | Path) -> RunLog:
    """Load ``run_log.json`` from a run directory."""
    path = Path(run_dir) / RUN_LOG_FILE
    return RunLog.model_validate(jsonio.read_json(path))


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
            entry.predict_seconds = summary.seconds
            entry.failures = sum(1 for r in records if r.failed)
            entry.cache_hits = summary.cache_hits
            entry.parse_failures = sum(1 for r in records if r.error is not None and not r.failed)
            entry.usage = _sum_usage(records)
            entry.run_usage = Usage(prompt_tokens=summary.prompt_tokens, completion_tokens=summary.completion_tokens,
                                    seconds=summary.seconds, retries=summary.retries)
            entry.error = summary.errors[0] if summary.errors else None
            entry.status = "predicted"
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

    ``executor`` (:mod:`taskbench.executors`, e.g. a ``RayExecutor``): predictions run sharded on its workers
    (models rebuilt in each worker from their config); scoring stays here. None: in this process.

    Resumes from whatever ``run_dir`` already holds. Returns the final :class:`RunLog`, whose status is
    ``"complete"``, or ``"incomplete"`` when some model calls failed for good (their records are failure
    records; rerunning retries them) or a stage did not finish.
    """
    from .report import write_reports
    from .stages import DEFAULT_GENERATE_TOOLS

    options = options or PredictOptions()
    display = display or NullDisplay()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    loaded = [_load(spec) for spec in datasets]
    names = [n for n, _ in loaded]
    if len(set(names)) != len(names):
        raise InputError(f"two datasets share a name ({', '.join(names)}); give distinct directories")
    if len(set(models)) != len(models):
        raise InputError(f"a model is listed twice: {', '.join(models)}")
    start = time.perf_counter()
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
    log = RunLog(
        run_id=f"{run_dir.resolve().name}@{started}", started=started, config=config,
        environment=environment(command), seeds={"sampling": options.seed, "bootstrap": seed},
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
    _write_log(log, run_dir)

    try:
        for spec in models:
            await _run_model(spec, loaded, log, run_dir, options, cache=cache, model_options=model_options or {},
                             display=display, bootstrap=bootstrap, seed=seed, base_url=base_url,
                             api_key_env=api_key_env, executor=executor)
        if generate or agents:
            await _run_stages(log, run_dir, models[0], generate=generate, generate_tools=generate_tools,
                              agents=agents, agent_tasks=agent_tasks, cache=cache, model_options=model_options or {},
                              endpoint=endpoint_options(models[0], base_url=base_url, api_key_env=api_key_env),
                              display=display, stage_displays=stage_displays or {})
    except BaseException as exc:
        log.status = "interrupted" if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)) else "failed"
        _finish(log, run_dir, start)
        raise
    unfinished = any(e.status == "incomplete" for e in log.entries) or any(
        st.status != "complete" for st in log.stages)
    log.status = "incomplete" if unfinished else "complete"
    _finish(log, run_dir, start)
    write_reports(log, run_dir, plots=plots)
    return log


async def _run_stages(log: RunLog, run_dir: Path, spec: str, *, generate: int, generate_tools: str | None,
                      agents: Sequence[str], agent_tasks: Sequence[str] | None, cache: bool,
                      model_options: dict[str, Any], endpoint: dict[str, Any], display: Any,
                      stage_displays: Mapping[str, RecordDisplay]) -> None:
    from .stages import DEFAULT_GENERATE_TOOLS, agents_stage, generation_stage

    _close(display)  # one live progress display at a time
    if generate:
        shown = stage_displays.get("generate")
        try:
            stage = await generation_stage(run_dir, spec, n=generate, tools=generate_tools or DEFAULT_GENERATE_TOOLS,
                                           seed=log.config.seed or 0, cache=cache, model_options=model_options,
                                           endpoint=endpoint, display=shown)
        finally:
            _close(shown)
        log.stages.append(stage)
        _write_log(log, run_dir)
    if agents:
        shown = stage_displays.get("agents")
        try:
            stage = await agents_stage(run_dir, spec, agents=agents, tasks=agent_tasks, cache=cache,
                                       model_options=model_options, endpoint=endpoint, display=shown)
        finally:
            _close(shown)
        log.stages.append(stage)
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
    "environment",
    "git_revision",
    "model_slug",
    "read_run_log",
    "run_benchmark",
    "score_entry",
]
