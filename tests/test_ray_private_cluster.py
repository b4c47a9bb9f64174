"""A private Ray cluster (``--executor ray`` without ``--ray-address``) goes when its driver goes: SIGKILL the
driver after its cluster ran a task, and no process of that cluster (GCS, raylet, workers, the DashboardAgent
and the RuntimeEnvAgent that Ray 2.x leaves behind) is alive a few seconds later. The driver runs in a session of
its own, so every process it started, and everything they started, carries its session id. Marked slow (Ray
takes seconds to start on 2 shared cores); skipped without ray."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proc_sessions import session_members

pytest.importorskip("ray", reason="ray is not installed (pip install 'taskbench[ray]')")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

DRIVER = """
import os, sys, time
from taskbench.executors.ray import RayExecutor
ex = RayExecutor(workers=1).start()
import ray
@ray.remote
def pid():
    return os.getpid()
print(ray.get(pid.remote()), flush=True)
time.sleep(600)
"""


def test_a_killed_driver_takes_its_private_cluster_with_it(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    proc = subprocess.Popen([sys.executable, "-c", DRIVER], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True, text=True)
    sid = proc.pid  # a session leader: its session id is its pid
    leftovers: dict[int, str] = {}
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the task ran: the cluster is up, with a worker
        assert line.strip().isdigit(), "the private cluster never ran its task"
        members = session_members(sid)
        assert any("raylet" in c for c in members.values()), members
        assert any("DashboardAgent" in c for c in members.values()), members  # the process that outlived
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            leftovers = session_members(sid)
            if not leftovers:
                break
            time.sleep(0.25)
        assert leftovers == {}, f"processes of the killed driver's cluster still alive: {leftovers}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
        for pid in session_members(sid):  # never leave them behind, even when the test fails
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
