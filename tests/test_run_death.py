"""A run that dies (SIGKILL, or a native crash such as llama.cpp's SIGILL) is recognised by the next command,
and a resumed run reports every pass, not only its last one. Real processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from taskbench.dataset import liveness

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TASKBENCH_CACHE"] = str(tmp / "cache")
    env["COLUMNS"] = "200"
    return env


def _run_cmd(run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "taskbench", "run", "-m", "mock/echo", "-d", "huggingface", "--limit", "9",
            "-O", "delay=0.05", "--bootstrap", "0", "-q", "-o", str(run_dir), *extra]


# a `taskbench` process whose model call dies of a real SIGILL after `n` answers, as llama.cpp does on a CPU that
# lacks an instruction (the signal is delivered to the process; faulthandler sees it as it would see the trap)
_CRASHING = textwrap.dedent("""
    import os, signal, sys
    from taskbench.llm.providers import mock
    real = mock.MockProvider.complete
    calls = [0]
    async def complete(self, request):
        calls[0] += 1
        if calls[0] > int(os.environ["CRASH_AFTER"]):
            os.kill(os.getpid(), signal.SIGILL)
        return await real(self, request)
    mock.MockProvider.complete = complete
    sys.argv = ["taskbench", *sys.argv[1:]]
    from taskbench.cli.main import main
    main()
""")


def test_sigkill_leaves_a_run_the_next_command_calls_died(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = _env(tmp_path)
    proc = subprocess.Popen(_run_cmd(run_dir), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    preds = run_dir / "predictions" / "huggingface" / "mock_echo.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not preds.exists() or preds.read_text().count("\n") < 3):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert json.loads((run_dir / "run_log.json").read_text())["status"] == "running"

    from taskbench.run.job import run_state

    log, death = run_state(run_dir)
    assert log.status == "died" and death is not None
    assert "no crash record" in death and "SIGKILL" in death and "predict mock/echo on huggingface" in death

    doctor = subprocess.run([sys.executable, "-m", "taskbench", "doctor", "--no-sandbox", str(run_dir)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert doctor.returncode == 1 and "died" in doctor.stdout and "rerun the same command" in doctor.stdout

    again = subprocess.run(_run_cmd(run_dir), env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "warning: the last run" in again.stderr and "died" in again.stderr
    log = json.loads((run_dir / "run_log.json").read_text())
    assert log["status"] == "complete" and len(log["passes"]) == 2
    first, second = log["passes"]
    assert first["status"] == "died" and "SIGKILL" in first["error"] and first["seconds"] > 0
    assert second["status"] == "complete" and second["pid"] != first["pid"]
    assert log["seconds"] == pytest.approx(first["seconds"] + second["seconds"], abs=0.05)
    assert "resumed 1 time" in (run_dir / "report.md").read_text()
    assert "resumed 1 time" in again.stdout
    assert not liveness.marker_path(run_dir).exists()  # an orderly end removes the writer marker


def test_a_native_crash_is_named_with_its_signal_and_stage(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = dict(_env(tmp_path), CRASH_AFTER="2")
    crashed = subprocess.run([sys.executable, "-c", _CRASHING, *_run_cmd(run_dir)[3:]], env=env,
                             capture_output=True, text=True, timeout=300)
    assert crashed.returncode == -signal.SIGILL, crashed.stderr
    assert "Fatal Python error" not in crashed.stderr  # it went to the crash log, not the user's terminal
    crash_logs = list((tmp_path / "cache" / "crashes").glob("*.log"))
    assert len(crash_logs) == 1 and "Illegal instruction" in crash_logs[0].read_text()

    from taskbench.run.job import run_state

    log, death = run_state(run_dir)
    assert log.status == "died" and death is not None
    assert "SIGILL: illegal instruction" in death and "at predict mock/echo on huggingface" in death

    again = subprocess.run(_run_cmd(run_dir), env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "died (SIGILL: illegal instruction" in again.stderr
    log2 = json.loads((run_dir / "run_log.json").read_text())
    assert [p["status"] for p in log2["passes"]] == ["died", "complete"]
    assert "SIGILL" in log2["passes"][0]["error"] and log2["previous_death"]


def test_predict_names_the_death_of_the_last_writer(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    base = ["predict", "--data", "huggingface", "--model", "mock/echo", "--limit", "6", "-o", str(out), "-q"]
    env = dict(_env(tmp_path), CRASH_AFTER="2")
    crashed = subprocess.run([sys.executable, "-c", _CRASHING, *base], env=env, capture_output=True, text=True,
                             timeout=300)
    assert crashed.returncode == -signal.SIGILL
    assert liveness.read_marker(out) is not None
    again = subprocess.run([sys.executable, "-m", "taskbench", *base], env=_env(tmp_path), capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "the last run writing p.jsonl" in again.stderr and "died (SIGILL" in again.stderr
    assert "at predict" in again.stderr or "at huggingface" in again.stderr or " at " in again.stderr
    assert liveness.read_marker(out) is None
    assert len(out.read_text().splitlines()) == 6


def test_a_resumed_complete_run_sums_its_passes(tmp_path: Path) -> None:
    """Rerunning a finished run adds a pass; timings and usage are sums, never only the last pass's."""
    from taskbench.predict.runner import PredictOptions
    from taskbench.run import run_benchmark

    run_dir = tmp_path / "run"
    opts = PredictOptions(limit=4, max_tokens=128)
    first = run_benchmark(run_dir, models=["mock/echo"], datasets=["huggingface"], options=opts, bootstrap=0,
                          cache=False, plots=False, model_options={"delay": 0.05})
    p1 = first.entries[0].predict_seconds
    assert p1 > 0.1 and len(first.passes) == 1 and first.resumed == 0
    # delete two predictions: the second pass predicts only those
    preds = run_dir / first.entries[0].predictions_path
    lines = preds.read_text().splitlines()
    preds.write_text("\n".join(lines[:2]) + "\n")
    second = run_benchmark(run_dir, models=["mock/echo"], datasets=["huggingface"], options=opts, bootstrap=0,
                           cache=False, plots=False, model_options={"delay": 0.05})
    assert second.resumed == 1 and [p.status for p in second.passes] == ["complete", "complete"]
    assert second.entries[0].predict_seconds > p1
    assert second.seconds == pytest.approx(sum(p.seconds for p in second.passes), abs=0.05)
    assert second.started == first.started and second.run_id == first.run_id
