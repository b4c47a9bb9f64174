"""The one resumable, ordered, crash-safe runner: items in, one JSON record per item out.

Predictions, generated samples and agent trajectories all go through :func:`run_records`. Design (why a
``kill -9`` at any moment is harmless and a resumed run equals an uninterrupted one):

- **One writer, whole lines.** Records go to an append-only JSON Lines file through
  :class:`~taskbench.dataset.JsonlAppender`: one unbuffered ``write`` per complete line, so a killed process
  loses nothing written (the file is also fsynced at most once a second and at the end, which bounds what a
  power cut can take without a disk flush per record). A torn last
  line (the process died inside ``write``) is cut back to the last newline when the file is opened again. An
  advisory lock (``flock``) on the output file stops a second process from writing it at the same time.
- **Skip what is done.** On start the file's records are read (the last record of an id wins); ids with a good
  record are not run again.
- **Input order.** Work runs concurrently (``concurrency`` at once), but records are written strictly in the
  order of the items: results that arrive early wait until every earlier item is written. So the file is
  always a prefix of the full run's file, and a resumed run appends exactly what an uninterrupted run would
  have written next.
- **Failures in place.** Work that fails for good (it raises one of ``catch``, by default any
  :class:`~taskbench.errors.TaskbenchError`, or returns a record with ``"failed": true``) writes a failure
  record in its place, marked ``"failed": true`` with the error. The next run retries it; when a retried item
  succeeds, its new record is appended and the file is then rewritten atomically (temporary file + rename) in
  input order with one record per id, so the finished file equals the file of a run that never failed.
- **Async first.** :func:`run_records` is a coroutine, so it runs inside an event loop that already exists (a
  notebook, a Ray actor, an agent); :func:`run_sync` runs any such coroutine from plain code.

Progress goes to a :class:`RecordDisplay` (the CLI renders it; library code never prints).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, Field

from .dataset import jsonio, liveness
from .errors import ConfigError, InputError, TaskbenchError, UnreachableError

T = TypeVar("T")
Record = dict[str, Any]

FAILED = "failed"
"""Key that marks a failure record (``"failed": true``); such records are retried by the next run."""


class RunnerSummary(BaseModel):
    """What one pass of :func:`run_records` did."""

    output: str = Field(description="Path of the records file.")
    selected: int = Field(default=0, description="Items given.")
    skipped: int = Field(default=0, description="Items that already had a good record.")
    written: int = Field(default=0, description="Records written by this pass (good and failed).")
    failed: int = Field(default=0, description="Items whose record this pass is a failure record.")
    retried: int = Field(default=0, description="Items that had a failure record from an earlier pass.")
    compacted: bool = Field(default=False, description="Whether the file was rewritten in input order.")
    seconds: float = Field(default=0.0, description="Wall seconds of this pass.")
    errors: list[str] = Field(default_factory=list, description="The first few failures, 'id: message'.")
    previous_death: str | None = Field(
        default=None, description="How the previous writer of this file died, when it did not end in an orderly "
        "way (a native crash, SIGKILL): one line, e.g. 'the last run ... died (SIGILL: ...) at predict'.")

    @property
    def done(self) -> int:
        """Items with a good record in the file."""
        return self.skipped + self.written - self.failed


class RecordDisplay(Protocol):
    """Receives progress (the CLI renders it)."""

    def start(self, label: str, total: int, completed: int) -> None:
        """A pass over ``total`` items begins, ``completed`` of them already done."""

    def advance(self, record: Record, *, failed: bool) -> None:
        """One item finished with ``record`` (a failure record when ``failed``)."""

    def finish(self, summary: Any) -> None:
        """The pass ended."""


class NullDisplay:
    """A display that shows nothing."""

    def start(self, label: str, total: int, completed: int) -> None:  # noqa: D102
        pass

    def advance(self, record: Record, *, failed: bool) -> None:  # noqa: D102
        pass

    def finish(self, summary: Any) -> None:  # noqa: D102
        pass


def is_failed(record: Any) -> bool:
    """True for a failure record."""
    return isinstance(record, dict) and bool(record.get(FAILED))


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an advisory exclusive lock on ``path`` (POSIX); refuse when another process holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX: no locking
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:  # a symlink loop, a parent that is a file, no permission
        raise InputError(f"cannot write here ({exc.strerror or exc})", path=path,
                         hint="choose another --output") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{path}: another taskbench process is writing this file; wait for it") from None
        yield
    finally:
        os.close(fd)


def lock_is_free(path: str | Path) -> bool:
    """True when no live process holds the advisory lock on ``path`` (see :func:`exclusive`)."""
    try:
        with exclusive(Path(path)):
            return True
    except ConfigError:
        return False
    except OSError:
        return True


def read_records(
    path: str | Path, check: Callable[[Path, int, Record], None] | None = None
) -> tuple[dict[str, Record], list[str], int]:
    """``(last record by id, ids in order of first appearance, number of records)`` of a records file (a torn
    last line is ignored). ``check(path, line, record)`` may raise to refuse a record (e.g. another model's)."""
    path = Path(path)
    latest: dict[str, Record] = {}
    order: list[str] = []
    count = 0
    if not path.exists():
        return latest, order, count
    for line, rec in jsonio.iter_jsonl(path, allow_torn_tail=True):
        if not isinstance(rec, dict) or "id" not in rec:
            raise InputError("expected a record object with an 'id'", path=path, line=line)
        if check is not None:
            check(path, line, rec)
        rid = str(rec["id"])
        if rid not in latest:
            order.append(rid)
        latest[rid] = rec
        count += 1
    return latest, order, count


def vet_records(
    path: str | Path, check: Callable[[Path, int, Record], None] | None = None
) -> tuple[dict[str, Record], list[str], int]:
    """:func:`read_records`, refusing (with :class:`InputError`, the file untouched) a file that this runner did
    not write: a record that is not an object with an ``id``, a record ``check`` refuses, or a last line without
    its newline that cannot be the start of a record (an interrupted append leaves ``{...``; anything else is
    someone's file, which opening it for appending would cut). Call it before anything writes ``path``."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise InputError("the output exists and is not a regular file (a directory, a device, a pipe); give a "
                         "file path", path=path)
    tail = jsonio.torn_tail(path)
    if tail is not None and not tail.lstrip().startswith(b"{"):
        raise InputError("not a records file (JSON Lines of objects with an 'id'): its last line is not a record",
                         path=path, hint="choose another output file; this one is left as it is")
    return read_records(path, check)


def compact(path: Path, latest: dict[str, Record], order: Sequence[str]) -> None:
    """Rewrite ``path`` atomically with one record per id, in ``order``."""
    jsonio.write_jsonl(path, [latest[i] for i in order if i in latest])


def _failure(key: str, exc: BaseException) -> Record:
    return {"id": key, FAILED: True, "error": f"{type(exc).__name__}: {exc}" if not isinstance(exc, TaskbenchError)
            else str(exc)}


async def run_records(
    items: Sequence[T],
    work: Callable[[T], Awaitable[Record]],
    output: str | Path,
    *,
    key: Callable[[T], str],
    concurrency: int = 1,
    label: str = "",
    display: RecordDisplay | None = None,
    failure: Callable[[T, BaseException], Record] | None = None,
    catch: tuple[type[BaseException], ...] = (TaskbenchError,),
    check: Callable[[Path, int, Record], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> RunnerSummary:
    """Run ``work`` on every item that has no good record in ``output`` yet, writing one record per item in
    item order (see the module docstring).

    ``work(item)`` returns the item's record (a JSON-able dict; its ``"id"`` is set to ``key(item)``). When it
    raises one of ``catch``, ``failure(item, exc)`` (default ``{"id", "failed": true, "error"}``) is written
    instead. Other exceptions stop the run (records already written stay). ``check`` vets existing records.
    """
    from .llm.model import MAX_CONCURRENCY

    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ConfigError(f"--concurrency {concurrency}: must be between 1 and {MAX_CONCURRENCY}")
    display = display or NullDisplay()
    output = Path(output)
    start = clock()
    summary = RunnerSummary(output=str(output), selected=len(items))
    keys = [key(item) for item in items]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise InputError(f"two items share the id {dup!r}; ids must be unique", path=output)
    if output.exists() and not output.is_file():  # before the lock and the writer marker touch anything
        jsonio.check_output_file(output)
    with exclusive(output), liveness.writing(output, stage=label or output.stem) as death:
        if death is not None:
            summary.previous_death = death.describe(f"the last run writing {output.name}") + "; resuming"
            notice = getattr(display, "notice", None)
            if callable(notice):
                notice(summary.previous_death)
        latest, order, count = vet_records(output, check)  # refused before the file is touched
        appender = jsonio.JsonlAppender(output)  # repairs a torn tail
        try:
            todo = [(i, item) for i, item in enumerate(items) if keys[i] not in latest or is_failed(latest[keys[i]])]
            summary.retried = sum(1 for i, _ in todo if keys[i] in latest)
            summary.skipped = len(items) - len(todo)
            display.start(label or output.stem, len(items), summary.skipped)
            await _drain(todo, keys, work, appender, summary, display, concurrency, failure or
                         (lambda it, exc: _failure(key(it), exc)), catch, latest)
        finally:
            appender.close()
        if summary.retried or count != len(order):
            # an id was written again (a retried failure, or a rewrite an earlier pass did not finish): rewrite
            # the file in input order with one record per id
            latest, order, count = read_records(output)
            wanted = {k: i for i, k in enumerate(keys)}
            ordered = sorted((k for k in order if k in wanted), key=wanted.__getitem__)
            compact(output, latest, ordered + [k for k in order if k not in wanted])
            summary.compacted = True
    summary.seconds = clock() - start
    display.finish(summary)
    return summary


async def _drain(
    todo: list[tuple[int, Any]],
    keys: list[str],
    work: Callable[[Any], Awaitable[Record]],
    appender: jsonio.JsonlAppender,
    summary: RunnerSummary,
    display: RecordDisplay,
    concurrency: int,
    failure: Callable[[Any, BaseException], Record],
    catch: tuple[type[BaseException], ...],
    latest: dict[str, Record],
) -> None:
    sem = asyncio.Semaphore(concurrency)
    pending: dict[int, Record] = {}
    next_slot = 0

    async def one(slot: int, index: int, item: Any) -> tuple[int, Record]:
        async with sem:
            try:
                rec = await work(item)
            except catch as exc:
                if isinstance(exc, UnreachableError):  # every other item would fail the same way: stop
                    raise
                rec = failure(item, exc)
                rec.setdefault(FAILED, True)
            rec = {"id": keys[index], **{k: v for k, v in rec.items() if k != "id"}}
            return slot, rec

    tasks = [asyncio.ensure_future(one(slot, i, item)) for slot, (i, item) in enumerate(todo)]
    try:
        for fut in asyncio.as_completed(tasks):
            slot, rec = await fut
            pending[slot] = rec
            failed = is_failed(rec)
            if failed:
                summary.failed += 1
                if len(summary.errors) < 5:
                    summary.errors.append(f"{rec['id']}: {rec.get('error', 'failed')}")
            display.advance(rec, failed=failed)
            while next_slot in pending:  # write the contiguous prefix, in order
                ready = pending.pop(next_slot)
                appender.write(ready)
                latest[ready["id"]] = ready
                summary.written += 1
                next_slot += 1
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# ------------------------------------------------------------------------------------------------ sync


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code. Inside a running event loop (a notebook, an
    async framework) it runs on a fresh loop in a worker thread, so it never nests loops."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="taskbench-run-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


class ForwardDisplay:
    """Hands start/advance/notice to a display and keeps its finish for the caller (which finishes it with its
    own summary: the prediction's, the generation's)."""

    def __init__(self, display: RecordDisplay) -> None:
        self.display = display

    def start(self, label: str, total: int, completed: int) -> None:
        self.display.start(label, total, completed)

    def advance(self, record: dict[str, Any], *, failed: bool) -> None:
        self.display.advance(record, failed=failed)

    def notice(self, text: str) -> None:
        notice = getattr(self.display, "notice", None)
        if callable(notice):
            notice(text)

    def finish(self, summary: Any) -> None:
        pass


__all__ = [
    "FAILED",
    "ForwardDisplay",
    "NullDisplay",
    "RecordDisplay",
    "RunnerSummary",
    "compact",
    "exclusive",
    "is_failed",
    "read_records",
    "run_records",
    "run_sync",
    "vet_records",
]
