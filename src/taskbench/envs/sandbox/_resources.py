"""Part of the sandbox's supervisor (see ``_supervisor.py``): what the processes of a run may use and do use.

Standard library only, and it never imports taskbench: mounted read-only into the sandbox beside the supervisor.

- the resource limits the run's process sets on itself (:func:`set_limits`), before the agent's code runs;
- the memory sampler of a run (:class:`Memory`: the resident memory of every process of the run plus what its
  files take in the scratch tmpfs, blocks and inodes, every ``SAMPLE`` seconds) and the files cap;
- a process's CPU time and peak memory (:func:`usage`), and the state of the supervisor and the fork server that
  a forked run inherits and could change (:func:`own_state`: limits, priority, CPU affinity);
- the process attributes that guard the supervisor and the fork server (:func:`prctl`, :func:`dumpable`).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from typing import Any

SAMPLE = 0.02  # seconds between two samples of the run's memory
SAMPLE_BUDGET = 0.02  # CPU seconds one sample may spend dividing shared pages (reading smaps_rollup)
SLOW_READ = 0.002  # CPU seconds past which a process's smaps_rollup is too slow to read again in this run
INODE_KB = 1  # KB of memory charged per inode unit of the scratch tmpfs (the kernel's own estimate, 1 KB)
FILES_PER_MB = 256  # inode units per MB of a scratch directory's size (one per 4 KB, as a file system)


# ======================================================================================== process attributes


def prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except Exception:
        pass


def dumpable(value: int) -> None:
    prctl(4, value)  # PR_SET_DUMPABLE


# ========================================================================================= limits of the run


def set_limits(limits: dict[str, Any], pidns: bool) -> None:
    def lim(which: int, soft: int, hard: int | None = None) -> None:
        try:
            resource.setrlimit(which, (soft, soft if hard is None else hard))
        except (ValueError, OSError):
            pass

    lim(resource.RLIMIT_CORE, 0)
    cpu = max(1, int(-(-float(limits["cpu_seconds"]) // 1)))
    lim(resource.RLIMIT_CPU, cpu, cpu + 1)
    lim(resource.RLIMIT_AS, int(limits["memory_mb"]) * 1024 * 1024)
    lim(resource.RLIMIT_FSIZE, int(limits["disk_mb"]) * 1024 * 1024)
    lim(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    lim(resource.RLIMIT_MSGQUEUE, 0)  # no POSIX message queue (seccomp denies them too, where it is loaded)
    if pidns:  # RLIMIT_NPROC counts the tasks of this uid in the sandbox's own user namespace
        lim(resource.RLIMIT_NPROC, int(limits["processes"]) + _tasks_in_namespace() - 1)


def _tasks_in_namespace() -> int:
    """Processes and threads alive in this PID namespace (a zombie, about to be reaped, does not count)."""
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue
                n += len(os.listdir(f"/proc/{pid}/task"))
            except (OSError, IndexError):
                n += 1
    return n


def files_cap(limits: dict[str, Any]) -> int:
    """Inode units each scratch directory may hold: FILES_PER_MB for each MB of its size."""
    return int(limits["disk_mb"]) * FILES_PER_MB


# ================================================================================================ sampler


class Memory:
    """The memory sampling of one run (in the run's loop, every ``SAMPLE`` s).

    Each sample reads, for every process of the run, its resident anonymous and shared memory (``RssAnon`` +
    ``RssShmem`` of ``/proc/PID/status``: counters, read in constant time whatever the process does to its
    address space) and adds what the run's files take in the scratch tmpfs. Only when that total is over the
    limit are the pages the processes share (a forked child shares its parent's until it writes them) divided
    among them, from ``/proc/PID/smaps_rollup`` (``Pss_Anon`` + ``Pss_Shmem``), which walks every mapping of a
    process: within a CPU budget per sample, never past the wall-time deadline, and never again for a process
    whose rollup was slow to read. What is not divided in time counts whole, so making the division slow only
    ends the run sooner."""

    def __init__(self, limits: dict[str, Any], scratch_use: Callable[[int], tuple[int, str | None]],
                 others: Callable[[], list[int]]) -> None:
        self.scratch_use = scratch_use  # what the run's files take, KB, and the directory over the files cap
        self.others = others  # the pids of the run's processes
        self.limit_kb = int(limits["memory_mb"]) * 1024
        self.files_cap = files_cap(limits)
        self.peak_kb = 0
        self.slow: set[int] = set()

    def sample(self, deadline: float) -> tuple[str, str | None] | None:
        """The limit the run is over now, with why, if any (None also when the deadline came first)."""
        scratch, full = self.scratch_use(self.files_cap)
        if full is not None:
            return "output", full
        whole: dict[int, int] = {}
        for pid in self.others():
            if time.monotonic() >= deadline:
                return None
            whole[pid] = _anon_kb(pid)
        total = scratch + sum(whole.values())
        if total > self.limit_kb:
            total = scratch
            budget = SAMPLE_BUDGET
            for pid, kb in whole.items():
                if time.monotonic() >= deadline:
                    return None
                if pid in self.slow or budget <= 0:
                    total += kb
                    continue
                cpu, wall = time.thread_time(), time.monotonic()
                divided = _pss_anon_kb(pid)
                cpu, wall = time.thread_time() - cpu, time.monotonic() - wall
                budget -= cpu
                if cpu > SLOW_READ or wall > 10 * SLOW_READ:
                    self.slow.add(pid)
                total += kb if divided is None else min(kb, divided)
        self.peak_kb = max(self.peak_kb, total)
        return ("memory", None) if total > self.limit_kb else None


def _anon_kb(pid: int) -> int:
    """Resident anonymous and shared memory of a process, KB (constant time; readable for any process)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith((b"RssAnon:", b"RssShmem:")):
                    total += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return total


def _pss_anon_kb(pid: int) -> int | None:
    """Anonymous and shared memory of a process with shared pages divided among their sharers, KB (None when it
    cannot be read: the process made itself not dumpable)."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith((b"Pss_Anon:", b"Pss_Shmem:")):
                    total += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return total


def usage(pid: int) -> tuple[float | None, int | None]:
    """CPU seconds (its own and its reaped children's) and peak resident size (KB) of a live process."""
    cpu = hwm = None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        cpu = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return cpu, hwm


def own_state() -> dict[str, Any]:
    """What of this process a forked run inherits and could have changed from outside: resource limits,
    priority, CPU affinity."""
    state: dict[str, Any] = {}
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            try:
                state[name] = resource.getrlimit(getattr(resource, name))
            except (OSError, ValueError):
                pass
    try:
        state["priority"] = os.getpriority(os.PRIO_PROCESS, 0)
        state["CPU affinity"] = sorted(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        pass
    return state
