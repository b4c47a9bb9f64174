"""Who is writing an output, and how the last writer ended: a run that dies must be recognisable later.

A process can end without running any of its ``finally`` blocks: SIGKILL (a user, the out-of-memory killer),
or a native crash in llama.cpp (SIGILL on a CPU that lacks an instruction, SIGSEGV). Its run log then still
says "running". Two small records make such a death visible to the next command:

- **The writer marker** (:class:`WriterMarker`), a hidden file next to an output (``.NAME.writer.json``): the
  pid, host, command and what it was doing (``stage``). A writer removes it when it ends in any orderly way
  (success, error, Ctrl-C); one found by a *new* writer that holds the output's lock therefore belongs to a
  process that died. :func:`claim` returns a :class:`Death` describing it.
- **The crash log** (:func:`enable_crash_log`): the CLI points :mod:`faulthandler` at a per-process file in
  the cache directory, so a fatal signal in native code leaves "Fatal Python error: Illegal instruction" and
  the Python stack there. A normal exit deletes the file; a marker names it, so :func:`claim` can say *which*
  signal killed the last writer: "the last run died (SIGILL, illegal instruction) at predict multimedia".

Liveness itself is never guessed from a pid (pids are reused): the caller holds an exclusive ``flock`` on the
output while it writes, which the kernel releases however the process ends.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import json
import os
import re
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

RUN_LOCK_FILE = ".run.lock"
"""The lock a `taskbench run` holds on its directory while it writes (its absence or freedom with a "running" log
means the run died)."""

__all__ = [
    "RUN_LOCK_FILE",
    "Death",
    "WriterMarker",
    "claim",
    "crash_signal",
    "enable_crash_log",
    "marker_path",
    "read_marker",
    "release",
    "update_stage",
]

_FATAL = {
    "Illegal instruction": ("SIGILL", "illegal instruction: llama.cpp was built for instructions this CPU "
                            "lacks; `taskbench doctor` checks the build"),
    "Segmentation fault": ("SIGSEGV", "segmentation fault in native code"),
    "Bus error": ("SIGBUS", "bus error in native code"),
    "Floating-point exception": ("SIGFPE", "floating-point exception in native code"),
    "Floating point exception": ("SIGFPE", "floating-point exception in native code"),
    "Aborted": ("SIGABRT", "native code aborted"),
}
_FATAL_LINE = re.compile(r"Fatal Python error: ([A-Za-z -]+)")

_crash_file: IO[str] | None = None
_crash_path: Path | None = None


def _host() -> str:
    return socket.gethostname()


def _crash_dir() -> Path:
    from ..llm.weights import cache_dir

    return cache_dir() / "crashes"


def enable_crash_log(directory: Path | None = None) -> Path | None:
    """Send :mod:`faulthandler`'s report of a fatal signal (SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGABRT) to a file
    of this process, deleted again on a normal exit. Returns its path (None when it cannot be had). Idempotent.
    Crash files older than 30 days are pruned."""
    global _crash_file, _crash_path
    if _crash_path is not None:
        return _crash_path
    try:
        folder = directory or _crash_dir()
        folder.mkdir(parents=True, exist_ok=True)
        cutoff = time.time() - 30 * 86400
        for old in folder.glob("*.log"):
            with contextlib.suppress(OSError):
                if old.stat().st_mtime < cutoff:
                    old.unlink()
        path = folder / f"{_host()}-{os.getpid()}.log"
        handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - kept open for the life of the process
        handle.write(json.dumps({"pid": os.getpid(), "host": _host(), "argv": sys.argv[:20],
                                 "started": time.time()}) + "\n")
        handle.flush()
    except OSError:
        return None
    faulthandler.enable(file=handle, all_threads=True)
    _crash_file, _crash_path = handle, path
    atexit.register(_drop_crash_log)
    return path


def _drop_crash_log() -> None:
    global _crash_file, _crash_path
    if _crash_file is None or _crash_path is None:
        return
    with contextlib.suppress(Exception):
        faulthandler.disable()
        _crash_file.close()
        _crash_path.unlink()
    _crash_file = _crash_path = None


def crash_signal(crash_log: str | Path | None) -> tuple[str, str] | None:
    """``(signal name, cause)`` from a crash log that faulthandler wrote, or None (no log, or no fatal error)."""
    if not crash_log:
        return None
    try:
        text = Path(crash_log).read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return None
    match = _FATAL_LINE.search(text)
    if not match:
        return None
    what = match.group(1).strip()
    found: tuple[str, str] = _FATAL.get(what, (what, "fatal error in native code"))
    return found


@dataclass
class WriterMarker:
    """Who is writing an output (the hidden ``.NAME.writer.json`` beside it)."""

    pid: int
    host: str
    command: list[str]
    started: str
    stage: str | None = None
    crash_log: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "host": self.host, "command": self.command, "started": self.started,
                "stage": self.stage, "crash_log": self.crash_log}


@dataclass
class Death:
    """How the previous writer of an output ended without cleaning up."""

    pid: int
    host: str
    started: str
    stage: str | None
    signal: str | None
    """``SIGILL`` etc. when the crash log says; None when nothing was recorded (SIGKILL, OOM, power loss)."""
    cause: str

    def describe(self, what: str = "the last run") -> str:
        """One line, e.g. "the last run died (SIGILL: illegal instruction ...) at predict multimedia"."""
        how = f"{self.signal}: {self.cause}" if self.signal else self.cause
        at = f" at {self.stage}" if self.stage else ""
        return f"{what} (pid {self.pid} on {self.host}, started {self.started}) died ({how}){at}"


def marker_path(output: str | Path) -> Path:
    """The marker file of ``output`` (a file or a directory)."""
    output = Path(output)
    if output.is_dir():
        return output / ".taskbench.writer.json"
    return output.with_name(f".{output.name}.writer.json")


def read_marker(output: str | Path) -> WriterMarker | None:
    """The marker left next to ``output``, if any (a broken one reads as None)."""
    try:
        doc = json.loads(marker_path(output).read_text(encoding="utf-8"))
        return WriterMarker(pid=int(doc["pid"]), host=str(doc["host"]), command=[str(c) for c in doc["command"]],
                            started=str(doc["started"]), stage=doc.get("stage"), crash_log=doc.get("crash_log"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def death_of(marker: WriterMarker) -> Death:
    """What a marker whose writer is gone says about how it ended."""
    found = crash_signal(marker.crash_log)
    if found is not None:
        sig, cause = found
    else:
        sig, cause = None, "no crash record: killed by SIGKILL or the out-of-memory killer, or the machine stopped"
    return Death(pid=marker.pid, host=marker.host, started=marker.started, stage=marker.stage, signal=sig,
                 cause=cause)


def _write(path: Path, marker: WriterMarker) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(marker.to_json()), encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:  # a full disk: no temporary file left behind
        tmp.unlink(missing_ok=True)
        raise


def claim(output: str | Path, *, stage: str | None = None) -> Death | None:
    """Record this process as the writer of ``output``; return how the previous writer died, if its marker is
    still there. Call it while holding ``output``'s exclusive lock (so no live process owns the old marker)."""
    path = marker_path(output)
    previous = read_marker(output)
    death = death_of(previous) if previous is not None and previous.pid != os.getpid() else None
    marker = WriterMarker(pid=os.getpid(), host=_host(), command=sys.argv[:50],
                          started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), stage=stage,
                          crash_log=str(_crash_path) if _crash_path is not None else None)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, marker)
    except OSError:
        pass
    return death


def update_stage(output: str | Path, stage: str) -> None:
    """Say what this writer is doing now (shown if it dies)."""
    marker = read_marker(output)
    if marker is None or marker.pid != os.getpid():
        return
    marker.stage = stage
    with contextlib.suppress(OSError):
        _write(marker_path(output), marker)


def release(output: str | Path) -> None:
    """This writer ended in an orderly way (success, error or interrupt): remove its marker."""
    marker = read_marker(output)
    if marker is not None and marker.pid == os.getpid():
        with contextlib.suppress(OSError):
            marker_path(output).unlink()


@contextlib.contextmanager
def writing(output: str | Path, *, stage: str | None = None) -> Iterator[Death | None]:
    """:func:`claim` on entry, :func:`release` on any orderly exit (a death skips it, which is the point)."""
    death = claim(output, stage=stage)
    try:
        yield death
    finally:
        release(output)
