"""A real SIGKILL of `taskbench agents eval` mid-run, then a rerun: every trajectory complete, and the metrics
equal those of an uninterrupted run answered from the same response cache (wall-clock figures aside)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import sandbox_or_skip
from taskbench.dataset.trajectories import read_trajectory

pytestmark = pytest.mark.slow


def _cmd(out: Path) -> list[str]:
    # mock/echo: the smallest valid plan and verdict, the prompt echoed as the "code" (its skeleton runs and
    # fails); a fixed delay per answer so the kill lands while episodes are running
    return [sys.executable, "-m", "taskbench", "agents", "eval", "--env", "restbench-tmdb", "--task-set", "own",
            "--limit", "4", "--agent", "conagents-adaptive,react", "--model", "mock/echo", "-O", "delay=0.12",
            "--tools", "gold", "--max-steps", "2", "--bootstrap", "200", "-o", str(out), "-q"]


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TASKBENCH_CACHE"] = str(cache)
    env["COLUMNS"] = "200"
    return env


def _without_wall(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_wall(v) for k, v in value.items() if "wall" not in k}
    if isinstance(value, list):
        return [_without_wall(v) for v in value]
    return value


def test_agents_eval_resumes_after_sigkill(tmp_path: Path) -> None:
    sandbox_or_skip()
    cache = tmp_path / "cache"
    out = tmp_path / "killed"
    proc = subprocess.Popen(_cmd(out), env=_env(cache), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    episodes = out / "episodes.jsonl"
    deadline = time.time() + 120
    # kill once two episodes are written and a third has events on disk but no end line
    while time.time() < deadline and proc.poll() is None:
        done = episodes.read_text().count("\n") if episodes.exists() else 0
        running = [p for p in (out / "trajectories").rglob("*.jsonl")
                   if '"record": "end"' not in p.read_text()] if done >= 2 else []
        if running and running[0].read_text().count("\n") >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    interrupted = [read_trajectory(p) for p in (out / "trajectories").rglob("*.jsonl")]
    assert any(t.status == "interrupted" and t.events for t in interrupted)  # its events so far were kept
    written = episodes.read_text().splitlines()
    assert 2 <= len(written) < 8

    rerun = subprocess.run(_cmd(out), env=_env(cache), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"({len(written)} from an earlier run)" in rerun.stdout
    records = [json.loads(line) for line in episodes.read_text().splitlines()]
    assert len(records) == 8 and len({r["id"] for r in records}) == 8
    assert [json.loads(line) for line in written] == records[: len(written)]  # kept as they were
    for rec in records:
        traj = read_trajectory(out / rec["trajectory"])
        assert traj.status == "complete" and traj.outcome is not None

    fresh = tmp_path / "fresh"
    again = subprocess.run(_cmd(fresh), env=_env(cache), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    resumed = json.loads((out / "metrics.json").read_text())
    uninterrupted = json.loads((fresh / "metrics.json").read_text())
    assert _without_wall(resumed) == _without_wall(uninterrupted)
    fresh_records = [json.loads(line) for line in (fresh / "episodes.jsonl").read_text().splitlines()]
    assert _without_wall(fresh_records) == _without_wall(records)
