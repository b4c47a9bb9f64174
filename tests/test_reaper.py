"""The reaper of a private Ray cluster, without Ray: a fake driver starts a process whose command line is Ray's
(with a child of its own, as the raylet has its agents) and one that is not; SIGKILL of the driver stops the Ray
one and its child, never the other. A normal close reaps too, and a reused pid is never hit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taskbench.executors.reaper import _stat, reap

ROOT = Path(__file__).resolve().parents[1]
if not Path("/proc/self/stat").exists():
    pytest.skip("the reaper reads /proc (Linux)", allow_module_level=True)

FAKE_DRIVER = """
import subprocess, sys, time
from taskbench.executors.reaper import Reaper
reaper = Reaper().start()
# a "raylet" (its command line names ray::) with an "agent" child of its own, and a model server that is not Ray's
raylet = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time; c = subprocess.Popen(['sleep', '120']); print(c.pid, flush=True); time.sleep(120)",
    "ray::FakeRaylet"], stdout=subprocess.PIPE, text=True)
agent = raylet.stdout.readline().strip()
other = subprocess.Popen(["sleep", "121"])
print(raylet.pid, agent, other.pid, reaper.pid, flush=True)
if sys.argv[1] == "close":
    time.sleep(1.5)  # the reaper has looked at least once
    reaper.close()
    print("closed", flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[2] not in ("Z", "X")


def _wait_gone(pids: list[int], seconds: float = 15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _driver(mode: str) -> tuple[subprocess.Popen[str], list[int]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-c", FAKE_DRIVER, mode], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pids = [int(x) for x in proc.stdout.readline().split()]
    assert len(pids) == 4, pids
    return proc, pids


def _kill(pids: list[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_killed_driver_s_ray_processes_are_reaped_and_nothing_else(tmp_path):
    proc, (raylet, agent, other, reaper) = _driver("kill")
    try:
        time.sleep(1.5)  # the reaper has recorded the Ray processes
        proc.kill()
        proc.wait(10)
        assert _wait_gone([raylet, agent, reaper]) == []
        assert _alive(other)  # not Ray's: left alone
    finally:
        _kill([raylet, agent, other])
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_normal_close_reaps_what_is_left(tmp_path):
    proc, (raylet, agent, other, reaper) = _driver("close")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "closed"
        assert _wait_gone([raylet, agent, reaper]) == []
        assert _alive(other) and proc.poll() is None
    finally:
        proc.kill()
        proc.wait(10)
        _kill([raylet, agent, other])
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_reused_pid_is_never_hit():
    child = subprocess.Popen(["sleep", "30"])
    try:
        st = _stat(child.pid)
        assert st is not None
        assert reap({child.pid: st[1] + 1}, grace=0.1) == []  # another start time: another process
        assert child.poll() is None
        assert reap({child.pid: st[1]}, grace=2.0) == [child.pid]
        assert child.wait(5) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
