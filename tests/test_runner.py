"""The one resumable runner (taskbench.records) on its own, and what predict/run get from it: failure records in
place, the rewrite in order, exit codes that tell the truth, redacted secrets, the sync wrapper in a loop."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fault_server import FaultServer
from taskbench.errors import InputError, ModelError
from taskbench.records import FAILED, read_records, run_records, run_sync


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _items(n: int) -> list[str]:
    return [f"s{i:02d}" for i in range(n)]


def test_records_are_written_in_input_order_whatever_the_completion_order(tmp_path):
    rng = random.Random(3)
    order = []

    async def work(item):
        await asyncio.sleep(rng.uniform(0, 0.02))
        order.append(item)
        return {"value": item.upper()}

    out = tmp_path / "r.jsonl"
    summary = asyncio.run(run_records(_items(30), work, out, key=str, concurrency=8))
    assert order != _items(30)  # they did finish out of order
    assert [r["id"] for r in _lines(out)] == _items(30)
    assert summary.written == 30 and summary.done == 30 and not summary.compacted


def test_a_rerun_skips_what_is_done_and_a_torn_tail_is_cut(tmp_path):
    out = tmp_path / "r.jsonl"

    async def work(item):
        return {"v": 1}

    asyncio.run(run_records(_items(5), work, out, key=str))
    with out.open("ab") as fh:
        fh.write(b'{"id": "s05", "v": ')  # a kill inside a write
    calls = []

    async def again(item):
        calls.append(item)
        return {"v": 1}

    summary = asyncio.run(run_records(_items(8), again, out, key=str))
    assert calls == ["s05", "s06", "s07"] and summary.skipped == 5
    assert [r["id"] for r in _lines(out)] == _items(8)


def test_failures_are_written_in_place_then_retried_and_the_file_rewritten_in_order(tmp_path):
    out = tmp_path / "r.jsonl"
    bad = {"s01", "s03"}

    async def flaky(item):
        if item in bad:
            raise ModelError(f"boom {item}")
        return {"v": item}

    first = asyncio.run(run_records(_items(5), flaky, out, key=str, concurrency=3))
    lines = _lines(out)
    assert [r["id"] for r in lines] == _items(5)
    assert [bool(r.get(FAILED)) for r in lines] == [False, True, False, True, False]
    assert lines[1]["error"] == "boom s01" and first.failed == 2 and first.done == 3

    bad = {"s03"}
    second = asyncio.run(run_records(_items(5), flaky, out, key=str))
    assert second.retried == 2 and second.failed == 1 and second.compacted
    lines = _lines(out)
    assert [r["id"] for r in lines] == _items(5)  # one record per id, in order
    assert lines[1] == {"id": "s01", "v": "s01"} and lines[3][FAILED]

    bad = set()
    asyncio.run(run_records(_items(5), flaky, out, key=str))

    fresh = tmp_path / "fresh.jsonl"
    asyncio.run(run_records(_items(5), flaky, fresh, key=str))
    assert out.read_bytes() == fresh.read_bytes()  # the finished file equals a run that never failed


def test_an_unfinished_rewrite_is_finished_by_the_next_pass(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "s00", "failed": True, "error": "x"}, {"id": "s01", "v": 1}, {"id": "s00", "v": 0}]))

    async def never(item):
        raise AssertionError("nothing is left to do")

    summary = asyncio.run(run_records(_items(2), never, out, key=str))
    assert summary.compacted and _lines(out) == [{"id": "s00", "v": 0}, {"id": "s01", "v": 1}]


def test_other_exceptions_stop_the_run_and_keep_what_was_written(tmp_path):
    out = tmp_path / "r.jsonl"

    async def bug(item):
        if item == "s02":
            raise ZeroDivisionError("a bug is not a model failure")
        return {"v": 1}

    with pytest.raises(ZeroDivisionError):
        asyncio.run(run_records(_items(5), bug, out, key=str))
    assert [r["id"] for r in _lines(out)] == ["s00", "s01"]


def test_duplicate_ids_and_bad_records_are_refused(tmp_path):
    async def work(item):
        return {}

    with pytest.raises(InputError, match="share the id 'a'"):
        asyncio.run(run_records(["a", "b", "a"], work, tmp_path / "x.jsonl", key=str))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"no_id": 1}\n')
    with pytest.raises(InputError, match="bad.jsonl:1"):
        read_records(bad)


def test_run_sync_works_inside_a_running_loop():
    async def inner():
        return 41 + 1

    async def outer():
        return run_sync(inner())  # a notebook cell calling the sync API

    assert run_sync(inner()) == 42 and asyncio.run(outer()) == 42


# --------------------------------------------------------------------------------------------- predict / run


def _dead_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


def test_predict_against_a_server_that_is_not_there_exits_2_and_says_why(tmp_path):
    out = tmp_path / "p.jsonl"
    cmd = [sys.executable, "-m", "taskbench", "predict", "--data", "huggingface", "-m", "openai-compatible/x",
           "--base-url", _dead_url(), "--limit", "3", "--max-retries", "1", "--timeout", "2", "-o", str(out),
           "--no-cache", "-q"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    # nothing listens there: one line after the first refusal, not a retried failure per sample (issue 22)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "nothing is listening" in proc.stderr and "--base-url" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []  # and nothing is left behind


def test_run_against_a_dead_server_stops_at_once_and_exits_2(tmp_path):
    from taskbench.run.job import read_run_log

    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "taskbench", "run", "-m", "openai-compatible/x", "--base-url", _dead_url(),
           "-d", "huggingface", "--limit", "2", "--max-retries", "0", "--bootstrap", "0", "-o", str(run_dir),
           "--no-cache", "-q"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "nothing is listening" in proc.stderr and "--base-url" in proc.stderr
    log = read_run_log(run_dir)
    assert log.status == "failed" and log.entries[0].status == "failed"


def test_an_api_key_echoed_by_the_server_is_redacted_everywhere(tmp_path, monkeypatch):
    secret = "sk-test-0123456789abcdef"
    server = FaultServer([("status", 401, {}, f"Incorrect API key provided: {secret}")] * 4).start()
    try:
        out = tmp_path / "p.jsonl"
        env = {"MY_KEY": secret}
        cmd = [sys.executable, "-m", "taskbench", "predict", "--data", "huggingface", "-m", "openai-compatible/x",
               "--base-url", server.base_url, "--api-key-env", "MY_KEY", "--limit", "2", "-o", str(out),
               "--no-cache", "-q"]
        import os

        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, **env})
        assert proc.returncode == 1
        assert secret not in proc.stderr + proc.stdout and "Incorrect API key provided: ***" in proc.stderr
        assert secret not in out.read_text() and "***" in out.read_text()
    finally:
        server.stop()


def test_retries_are_shown_and_counted(tmp_path):
    server = FaultServer([("status", 503, {"retry-after": "0"})] * 2).start()
    try:
        out = tmp_path / "p.jsonl"
        cmd = [sys.executable, "-m", "taskbench", "predict", "--data", "huggingface", "-m", "openai-compatible/x",
               "--base-url", server.base_url, "--limit", "1", "--max-retries", "3", "-o", str(out), "--no-cache",
               "-q", "--free"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.count("retrying in") == 2 and "HTTP 503" in proc.stderr
        head = next(line for line in proc.stdout.splitlines() if "retries" in line)
        row = next(line for line in proc.stdout.splitlines() if "1/1" in line)
        cells = [c.strip() for c in row.split("│")]
        columns = [c.strip() for c in head.split("┃")]
        assert cells[columns.index("retries")] == "2"  # the summary counts them
    finally:
        server.stop()


def test_predict_says_which_records_it_left_out(tmp_path):
    import shutil

    from taskbench.bundled import path as bundled_path

    data = tmp_path / "ds"
    shutil.copytree(bundled_path("huggingface"), data)
    with (data / "data.json").open("a") as fh:
        fh.write('{"id": null, "user_request": "no id"}\n{"id": "x1", "task_nodes": 7}\n')
    cmd = [sys.executable, "-m", "taskbench", "predict", "--data", str(data), "-m", "mock/echo", "--limit", "2",
           "-o", str(tmp_path / "p.jsonl"), "-q"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "2 unusable record(s) left out" in proc.stderr and "data.json:31" in proc.stderr
