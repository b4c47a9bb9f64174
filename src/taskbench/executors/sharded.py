"""Sharded jobs: one records job split over many workers, with the semantics of a local run.

A :class:`ShardedJob` is a *serialisable description* of a records job (a pydantic model: dataset path, a model
config as plain data, options; never a live Model or an open file). The driver (:func:`arun_job`) asks it for
its ids in input order, skips the ids the output already holds, splits the rest into contiguous shards and
hands each shard to an executor (:class:`LocalExecutor`: threads of this process; :class:`~taskbench.executors.
ray.RayExecutor`: Ray tasks on a cluster). A worker rebuilds the job from its description, and the job runs
:func:`taskbench.records.run_records` on its shard into a **shard file** ``<output>.shards/shard-NNNN.jsonl``.
When every shard is done the driver merges the shard files into the output, in input order, and removes them.

Why this loses nothing and writes every record once:

- Shard files are written by the one runner (whole fsynced lines, a file lock, resume by id), so a worker that
  is killed leaves a valid prefix of its shard; the executor runs the shard again (Ray retries a task whose
  worker died) and the runner skips what the shard file already holds.
- The driver holds the output's lock for the whole job, so a second driver is refused. A driver killed
  mid-job leaves its shard files; the next run merges them into the output *before* it decides what is left to
  do, so their records count as done.
- Merging rewrites the output atomically (temporary file + rename) with one record per id: the ids of the job
  in input order, then any other ids the file held. A rerun merges the same shard files again to the same
  result, so a crash between the rename and the removal of the shard files is harmless. The merge takes each
  shard file's lock, so a worker of a dead driver that is still writing makes the merge wait for it, never
  race it.
- Failure records (``"failed": true``) are merged like any record and retried by the next run, as locally.

The output therefore equals, byte for byte, the output of a local :func:`run_records` pass answered by the
same response cache. To plug a new job in (generation, agent evaluation): subclass :class:`ShardedJob`,
implement :meth:`~ShardedJob.keys` and :meth:`~ShardedJob.run_shard` (and optionally :meth:`~ShardedJob.check`,
:meth:`~ShardedJob.prepare`, :meth:`~ShardedJob.summarize`), and call :func:`arun_job` with an executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError, InputError
from ..records import (
    NullDisplay,
    Record,
    RecordDisplay,
    compact,
    exclusive,
    is_failed,
    read_records,
    run_sync,
)

SHARD_SUFFIX = ".shards"
"""The shard directory of an output file is ``<output>.shards/`` beside it."""


class ShardedRun(BaseModel):
    """What one sharded pass did (the job's own summary is built from this and the workers' parts)."""

    output: str = Field(description="Path of the records file.")
    selected: int = Field(default=0, description="Ids of the job.")
    skipped: int = Field(default=0, description="Ids that already had a good record (merged leftovers included).")
    written: int = Field(default=0, description="Records this pass merged into the output (good and failed).")
    failed: int = Field(default=0, description="Ids whose record from this pass is a failure record.")
    retried: int = Field(default=0, description="Ids that had a failure record from an earlier pass.")
    recovered: int = Field(default=0, description="Records merged from shard files an earlier, killed pass left.")
    shards: int = Field(default=0, description="Shards this pass ran.")
    workers: list[str] = Field(default_factory=list, description="'host:pid' of each shard's (last) worker.")
    seconds: float = Field(default=0.0, description="Wall seconds of this pass.")
    errors: list[str] = Field(default_factory=list, description="The first few failures, 'id: message'.")

    @property
    def done(self) -> int:
        """Ids with a good record in the output."""
        return self.skipped + self.written - self.failed


class ShardedJob(BaseModel):
    """A records job that can run sharded (subclass it; see the module docstring).

    Fields must be plain data (JSON-able), since each worker rebuilds the job with ``model_validate`` from
    ``model_dump(mode="json")``. The class must be importable by its module path on the workers.
    """

    model_config = ConfigDict(extra="forbid")

    output: str = Field(description="The records file (JSON Lines) the job writes.")
    label: str = Field(default="", description="Progress label.")

    def keys(self) -> list[str]:
        """The job's ids, in input order (runs on the driver)."""
        raise NotImplementedError

    def check(self, path: Path, line: int, record: Record) -> None:
        """Vet a record already in the output or a shard (raise to refuse it); default: accept."""

    def prepare(self) -> ShardedJob:
        """The job as the workers get it (runs on the driver; e.g. resolve a default cache to one URL)."""
        return self

    async def run_shard(self, keys: list[str], output: Path) -> dict[str, Any]:
        """Run the ids ``keys`` into ``output`` with :func:`taskbench.records.run_records` (runs on a worker);
        return a JSON-able summary of the shard for :meth:`summarize`."""
        raise NotImplementedError

    def summarize(self, run: ShardedRun, parts: list[dict[str, Any]]) -> Any:
        """The job's summary from the pass and the shards' summaries (runs on the driver); default: ``run``."""
        return run


def job_target(job: ShardedJob) -> str:
    """``"module:QualName"`` of the job's class."""
    cls = type(job)
    return f"{cls.__module__}:{cls.__qualname__}"


def load_job(target: str, payload: dict[str, Any]) -> ShardedJob:
    """Rebuild a job from :func:`job_target` and its JSON payload (on a worker)."""
    module, _, name = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, ShardedJob)):
        raise ConfigError(f"{target} is not a ShardedJob")
    return obj.model_validate(payload)


def worker_file(shard: Path) -> Path:
    """The small JSON file beside a shard file that names the worker writing it (host, pid, start)."""
    return shard.with_name(shard.name + ".worker")


def run_shard_in_worker(target: str, payload: dict[str, Any], keys: list[str], shard: str) -> dict[str, Any]:
    """What a worker runs for one shard (a plain function of plain data: Ray ships it by reference)."""
    path = Path(shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    me = f"{socket.gethostname()}:{os.getpid()}"
    info = {"worker": me, "pid": os.getpid(), "host": socket.gethostname(), "started": time.time(), "ids": len(keys),
            "node": _ray_node()}
    worker_file(path).write_text(json.dumps(info) + "\n", encoding="utf-8")
    job = load_job(target, payload)
    part = run_sync(job.run_shard(list(keys), path))
    return {"worker": me, "node": info["node"], "summary": part}


def _ray_node() -> str | None:
    """The Ray node id of this worker (None outside a Ray worker): which node ran a shard."""
    import sys

    ray = sys.modules.get("ray")
    try:
        if ray is not None and ray.is_initialized():
            return str(ray.get_runtime_context().get_node_id())
    except Exception:  # pragma: no cover - a Ray without a runtime context
        return None
    return None


def shard_dir(output: Path) -> Path:
    """``<output>.shards/``."""
    return output.with_name(output.name + SHARD_SUFFIX)


def split(keys: Sequence[str], shards: int) -> list[list[str]]:
    """``keys`` in at most ``shards`` contiguous chunks whose sizes differ by at most one (input order kept)."""
    shards = max(1, min(shards, len(keys)))
    size, extra = divmod(len(keys), shards)
    out: list[list[str]] = []
    start = 0
    for i in range(shards):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(list(keys[start:end]))
        start = end
    return out


class MergeResult(BaseModel):
    """What a merge moved from shard files into the output."""

    records: int = 0
    failed: int = 0
    errors: list[str] = Field(default_factory=list)


def _lock_shard(stack: contextlib.ExitStack, path: Path, wait: float) -> None:
    """Take a shard file's lock, waiting up to ``wait`` seconds for a worker that still holds it (the worker of
    a driver that was killed, which its cluster is about to stop)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            stack.enter_context(exclusive(path))
            return
        except ConfigError:
            if time.monotonic() >= deadline:
                raise ConfigError(f"{path}: a worker is still writing this shard (its driver was stopped?); wait "
                                  "for it to end, then rerun") from None
            time.sleep(0.2)


def merge_shards(
    output: Path, keys: Sequence[str], check: Callable[[Path, int, Record], None] | None = None, *,
    wait: float = 30.0,
) -> MergeResult:
    """Merge every shard file of ``output`` into it (input order of ``keys``, one record per id; a shard's
    record replaces the output's) and remove the shard files. The caller holds the output's lock. A shard file
    a worker still writes is waited for (``wait`` seconds), then refused."""
    sdir = shard_dir(output)
    files = sorted(sdir.glob("shard-*.jsonl")) if sdir.is_dir() else []
    result = MergeResult()
    if not files:
        _remove_dir(sdir)
        return result
    with contextlib.ExitStack() as stack:
        for f in files:  # a worker of a dead driver still writing: wait for it, never race it
            _lock_shard(stack, f, wait)
        latest, order, _ = read_records(output, check)
        for f in files:
            shard_latest, shard_order, _ = read_records(f, check)
            for rid in shard_order:
                rec = shard_latest[rid]
                if rid not in latest:
                    order.append(rid)
                latest[rid] = rec
                result.records += 1
                if is_failed(rec):
                    result.failed += 1
                    if len(result.errors) < 5:
                        result.errors.append(f"{rid}: {rec.get('error', 'failed')}")
        wanted = {k: i for i, k in enumerate(keys)}
        ordered = sorted((k for k in order if k in wanted), key=wanted.__getitem__)
        compact(output, latest, ordered + [k for k in order if k not in wanted])
        for f in files:
            for p in (f, worker_file(f)):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
    _remove_dir(sdir)
    return result


def _remove_dir(sdir: Path) -> None:
    if sdir.is_dir():
        for p in sdir.iterdir():  # worker files of shards that never wrote a record
            if p.name.endswith(".worker"):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
        with contextlib.suppress(OSError):
            sdir.rmdir()


class ShardTail:
    """Reads the complete lines appended to shard files since the last look (driver-side progress)."""

    def __init__(self, files: Sequence[Path], display: RecordDisplay) -> None:
        self.offsets = {f: 0 for f in files}
        self.display = display
        self.seen: set[str] = set()

    def poll(self) -> None:
        for f, offset in self.offsets.items():
            try:
                with f.open("rb") as fh:
                    fh.seek(offset)
                    data = fh.read()
            except FileNotFoundError:
                continue
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self.offsets[f] = offset + end + 1
            for line in data[: end + 1].splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                rid = str(rec.get("id")) if isinstance(rec, dict) else None
                if rid is None or rid in self.seen:  # a retried shard's records are not counted twice
                    continue
                self.seen.add(rid)
                self.display.advance(rec, failed=is_failed(rec))


class Executor(Protocol):
    """Runs plain functions of plain data on workers (this process's threads, a Ray cluster, ...)."""

    @property
    def workers(self) -> int:
        """How many calls run at once (the default number of shards)."""

    async def amap(
        self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], *, poll: Callable[[], None] | None = None
    ) -> list[Any]:
        """``[fn(*args) for args in calls]``, run on the workers; ``poll()`` is called now and then while they
        run (progress)."""
        ...

    def close(self) -> None:
        """Release what the executor started."""


class LocalExecutor:
    """Runs calls on ``workers`` threads of this process (each shard's coroutines on its own event loop)."""

    name = "local"

    def __init__(self, workers: int = 1, *, poll_interval: float = 0.2) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be >= 1, not {workers}")
        self.workers = workers
        self.requested_workers = workers
        self.address = None
        self.poll_interval = poll_interval

    async def amap(
        self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], *, poll: Callable[[], None] | None = None
    ) -> list[Any]:
        sem = asyncio.Semaphore(self.workers)

        async def one(args: tuple[Any, ...]) -> Any:
            async with sem:
                return await asyncio.to_thread(fn, *args)

        tasks = [asyncio.ensure_future(one(a)) for a in calls]
        try:
            while not all(t.done() for t in tasks):
                if poll is not None:
                    poll()
                await asyncio.wait(tasks, timeout=self.poll_interval, return_when=asyncio.ALL_COMPLETED)
            if poll is not None:
                poll()
            return [t.result() for t in tasks]
        finally:
            for t in tasks:
                t.cancel()

    def close(self) -> None:
        pass


async def arun_job(
    job: ShardedJob,
    executor: Executor,
    *,
    shards: int | None = None,
    display: RecordDisplay | None = None,
    clock: Callable[[], float] = time.perf_counter,
    lock_wait: float = 30.0,
) -> Any:
    """Run ``job`` sharded on ``executor`` into ``job.output`` (see the module docstring); returns
    ``job.summarize(run, parts)`` (a :class:`ShardedRun` unless the job says otherwise). ``shards`` defaults to
    the executor's number of workers."""
    display = display or NullDisplay()
    start = clock()
    output = Path(job.output)
    keys = job.keys()
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise InputError(f"two items share the id {dup!r}; ids must be unique", path=output)
    run = ShardedRun(output=str(output), selected=len(keys))
    parts: list[dict[str, Any]] = []
    with exclusive(output):
        recovered = merge_shards(output, keys, job.check, wait=lock_wait)  # what a killed pass left behind
        run.recovered = recovered.records
        latest, _, _ = read_records(output, job.check)
        todo = [k for k in keys if k not in latest or is_failed(latest[k])]
        run.retried = sum(1 for k in todo if k in latest)
        run.skipped = len(keys) - len(todo)
        display.start(job.label or output.stem, len(keys), run.skipped)
        plan = split(todo, shards or executor.workers) if todo else []
        if plan:
            sdir = shard_dir(output)
            sdir.mkdir(parents=True, exist_ok=True)
            files = [sdir / f"shard-{i:04d}.jsonl" for i in range(len(plan))]
            shipped = job.prepare()
            target, payload = job_target(shipped), shipped.model_dump(mode="json")
            tail = ShardTail(files, display)
            results = await executor.amap(run_shard_in_worker,
                                          [(target, payload, chunk, str(f)) for chunk, f in zip(plan, files, strict=True)],
                                          poll=tail.poll)
            parts = [r["summary"] for r in results]
            run.workers = [str(r["worker"]) for r in results]
            run.shards = len(plan)
            merged = merge_shards(output, keys, job.check)
            run.written, run.failed, run.errors = merged.records, merged.failed, merged.errors
    run.seconds = clock() - start
    summary = job.summarize(run, parts)
    display.finish(summary)
    return summary


def run_job(job: ShardedJob, executor: Executor, **kwargs: Any) -> Any:
    """:func:`arun_job` for plain code."""
    return run_sync(arun_job(job, executor, **kwargs))


__all__ = [
    "Executor",
    "LocalExecutor",
    "MergeResult",
    "SHARD_SUFFIX",
    "ShardTail",
    "ShardedJob",
    "ShardedRun",
    "arun_job",
    "job_target",
    "load_job",
    "merge_shards",
    "run_job",
    "run_shard_in_worker",
    "shard_dir",
    "split",
    "worker_file",
]
