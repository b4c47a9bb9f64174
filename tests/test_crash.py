"""Crash safety with real kills: `taskbench predict` / `taskbench run` in a subprocess, SIGKILLed at random
moments, resumed, and compared with uninterrupted runs.

The mock provider answers after a fixed delay so kills land while requests are in flight and records are
being written. With the response cache on, the resumed file must equal an uninterrupted run byte for byte.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _cmd(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "taskbench", "predict", "--data", "huggingface", "--model", "mock/echo",
            "-O", "delay=0.06", "-c", "3", "-o", str(out), "-q", *extra]


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TASKBENCH_CACHE"] = str(cache)
    env["COLUMNS"] = "200"
    return env


def _check_file(path: Path) -> list[str]:
    """Every complete line parses, ids are unique; returns the ids (a torn tail without newline is allowed:
    the next run cuts it)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    complete = lines[:-1]  # the part after the last newline is empty or a torn tail
    ids = [json.loads(line)["id"] for line in complete]
    assert len(ids) == len(set(ids)), f"duplicate ids after a kill: {ids}"
    return ids


def _strip_seconds(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec["usage"].pop("seconds")
        out.append(rec)
    return out


def test_predict_survives_sigkill_at_random_moments(tmp_path: Path) -> None:
    rng = random.Random(20240611)
    ref, ref_cache = tmp_path / "ref.jsonl", tmp_path / "ref-cache"
    t0 = time.perf_counter()
    subprocess.run(_cmd(ref), env=_env(ref_cache), check=True, capture_output=True, timeout=300)
    full = time.perf_counter() - t0
    ref_ids = _check_file(ref)
    assert len(ref_ids) == 30

    out, cache = tmp_path / "killed.jsonl", tmp_path / "killed-cache"
    partial_kills = 0
    kills = 0
    for attempt in range(8):
        # Kill at a moment tied to progress, not to wall time (a fresh process may start slower or faster
        # than the reference run): once the file holds `target` records, plus a random extra delay so the
        # kill also lands between and during writes and while requests are in flight.
        target = min(29, len(_check_file(out)) + rng.randint(1, 8))
        proc = subprocess.Popen(_cmd(out), env=_env(cache), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.perf_counter() + max(60.0, 4 * full)
        while proc.poll() is None and time.perf_counter() < deadline:
            if out.exists() and out.read_bytes().count(b"\n") >= target:
                break
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.08))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        ids = _check_file(out)
        assert ids == ref_ids[: len(ids)]  # always a prefix of the full run, in dataset order
        if 0 < len(ids) < 30 and proc.returncode == -signal.SIGKILL:
            partial_kills += 1
        if len(ids) == 30 or (kills >= 4 and attempt >= 3):
            break
    assert kills >= 2 and partial_kills >= 1, (kills, partial_kills)
    # finish, then check: same records as the uninterrupted run, no duplicates, every line parses
    subprocess.run(_cmd(out), env=_env(cache), check=True, capture_output=True, timeout=300)
    assert _check_file(out) == ref_ids
    assert out.read_bytes().endswith(b"\n")
    assert _strip_seconds(out) == _strip_seconds(ref)
    # byte for byte with the cache on: an uninterrupted run answered by the same cache writes the same file
    again = tmp_path / "again.jsonl"
    subprocess.run(_cmd(again), env=_env(cache), check=True, capture_output=True, timeout=300)
    assert again.read_bytes() == out.read_bytes()
    # and the reference run replayed from its own cache equals itself byte for byte
    replay = tmp_path / "replay.jsonl"
    subprocess.run(_cmd(replay), env=_env(ref_cache), check=True, capture_output=True, timeout=300)
    assert replay.read_bytes() == ref.read_bytes()


def test_run_survives_sigkill_and_resumes(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "taskbench", "run", "-m", "mock/echo", "-d", "huggingface", "-d",
           "dailylifeapis", "--limit", "12", "-O", "delay=0.05", "--bootstrap", "0", "-q", "-o",
           str(tmp_path / "run")]
    env = _env(tmp_path / "cache")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # kill once the first predictions file has some records
    first = tmp_path / "run" / "predictions" / "huggingface" / "mock_echo.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not first.exists() or first.read_text().count("\n") < 3):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    n_before = len(_check_file(first))
    assert 0 < n_before < 12
    log = json.loads((tmp_path / "run" / "run_log.json").read_text())
    assert log["status"] == "running"  # the log says the run never finished
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=300)
    log = json.loads((tmp_path / "run" / "run_log.json").read_text())
    assert log["status"] == "complete"
    for entry in log["entries"]:
        assert entry["status"] == "scored" and len(entry["records"]) == 12
        path = tmp_path / "run" / entry["predictions_path"]
        assert len(_check_file(path)) == 12
    hf = log["entries"][0]
    # the resumed pass predicted only what the killed one had not written; some of those the killed run may
    # have answered (cached) before it died
    assert hf["cache_hits"] <= 12 - n_before and hf["strict"]["n_gold"] == 12
    # a fresh run on the same cache is answered from it in full, and says so
    again = [*cmd[:-1], str(tmp_path / "again")]
    subprocess.run(again, env=env, check=True, capture_output=True, timeout=300)
    log = json.loads((tmp_path / "again" / "run_log.json").read_text())
    assert [e["cache_hits"] for e in log["entries"]] == [12, 12]


def test_run_stopped_with_sigterm_says_interrupted_and_resumes(tmp_path: Path) -> None:
    """SIGTERM (how schedulers stop jobs) ends `taskbench run` cleanly: exit 130, no traceback, complete lines, a run
    log that says "interrupted"; rerunning completes it."""
    cmd = [sys.executable, "-m", "taskbench", "run", "-m", "mock/echo", "-d", "huggingface", "--limit", "12",
           "-O", "delay=0.05", "--bootstrap", "0", "-q", "-o", str(tmp_path / "run")]
    env = _env(tmp_path / "cache")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = tmp_path / "run" / "predictions" / "huggingface" / "mock_echo.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not first.exists() or first.read_text().count("\n") < 3):
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    n_before = len(_check_file(first))
    assert 0 < n_before < 12
    assert first.read_bytes().endswith(b"\n")
    log = json.loads((tmp_path / "run" / "run_log.json").read_text())
    assert log["status"] == "interrupted"
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=300)
    log = json.loads((tmp_path / "run" / "run_log.json").read_text())
    assert log["status"] == "complete" and len(_check_file(first)) == 12
