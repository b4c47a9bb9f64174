"""The reaper of a private Ray cluster: a small process that outlives its driver just long enough to stop the
cluster the driver started.

``ray.init()`` without an address starts the cluster's processes as children of the driver (GCS, raylet, log
monitor, ...), and the raylet starts the DashboardAgent, the RuntimeEnvAgent and the workers. When the driver
ends normally, ``ray.shutdown()`` stops them. When it is killed (SIGKILL, out of memory) the GCS and the raylet
notice and exit, but Ray 2.x leaves the DashboardAgent and the RuntimeEnvAgent running forever.

:class:`Reaper` starts this file as a script (``python reaper.py DRIVER_PID``, standard library only, in a
session of its own so a signal to the driver's process group does not reach it) with a pipe from the driver.
Every ``interval`` seconds it records the Ray processes among the driver's descendants (a direct child whose
command line is Ray's, and everything below it) with their start times. When the pipe closes (the driver
ended, however) it sends SIGTERM to every recorded process still alive (same pid *and* start time, so a
reused pid is never hit), SIGKILL two seconds later to those still there, and exits. Processes that are not
Ray's (a model server the driver started, say) are never recorded.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

_RAY_MARKERS = ("/ray/", "ray::")


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time in clock ticks, state) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[19]), fields[0]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                out.setdefault(st[0], []).append(int(entry.name))
    return out


def ray_descendants(driver: int) -> dict[int, int]:
    """pid -> start time of the Ray processes below ``driver``: its children whose command line is Ray's and
    all of their descendants."""
    tree = _children()
    roots = [p for p in tree.get(driver, []) if any(m in _cmdline(p) for m in _RAY_MARKERS)]
    found: dict[int, int] = {}
    stack = list(roots)
    while stack:
        pid = stack.pop()
        st = _stat(pid)
        if st is None or pid in found:
            continue
        found[pid] = st[1]
        stack.extend(tree.get(pid, []))
    return found


def _alive(pid: int, started: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] == started and st[2] not in ("Z", "X")


def reap(known: dict[int, int], *, grace: float = 2.0) -> list[int]:
    """Stop the processes of ``known`` that are still the same processes; returns the pids signalled."""
    hit = [p for p, t in known.items() if _alive(p, t)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in hit:
            if _alive(pid, known[pid]):
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(p, known[p]) for p in hit):
            time.sleep(0.05)
    return hit


def watch(driver: int, pipe: int, interval: float = 0.5) -> None:
    """Record the driver's Ray processes until ``pipe`` closes, then reap them (the script's main loop)."""
    known: dict[int, int] = {}
    while True:
        for pid, started in ray_descendants(driver).items():
            known[pid] = started
        known = {p: t for p, t in known.items() if _alive(p, t)}  # gone for good: forget (pids get reused)
        ready, _, _ = select.select([pipe], [], [], interval)
        if ready and not os.read(pipe, 4096):
            break
    # what started in the last interval: the driver is gone, so its orphans' children are still below them
    for pid in list(known):
        for child, started in _subtree(pid).items():
            known.setdefault(child, started)
    reap(known)


def _subtree(pid: int) -> dict[int, int]:
    tree = _children()
    out: dict[int, int] = {}
    stack = list(tree.get(pid, []))
    while stack:
        p = stack.pop()
        st = _stat(p)
        if st is not None and p not in out:
            out[p] = st[1]
            stack.extend(tree.get(p, []))
    return out


class Reaper:
    """Starts the reaper script for this process (the driver); :meth:`close` (after ``ray.shutdown()``) makes it
    reap what is left and exit. Linux only (it reads ``/proc``); elsewhere it does nothing."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Reaper:
        if not Path("/proc/self/stat").exists() or self._proc is not None:
            return self
        self._proc = subprocess.Popen(
            [sys.executable, "-S", str(Path(__file__).resolve()), str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            close_fds=True,
        )
        return self

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def close(self, timeout: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - a reaper stuck in /proc
            proc.kill()
            proc.wait()


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the driver; the reaper waits for it to end
    watch(int(argv[1]), sys.stdin.fileno())
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a script by Reaper.start
    sys.exit(main(sys.argv))
