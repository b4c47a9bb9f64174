"""``--executor ray`` on a real local Ray cluster (2 CPUs, loopback) against loopback servers: sharded output
equals the local run's byte for byte when answered from the same cache (library and CLI, a driver joining the
cluster by address), a Ray worker SIGKILLed mid-shard loses nothing, a SIGKILLed driver's shard files are merged
by the rerun, and sharded scoring gives the local numbers. Ray takes seconds to start on 2 shared cores: one
cluster for the module, every test marked slow; skipped when ray is not installed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fault_server import FaultServer
from taskbench.executors import shard_dir
from taskbench.executors.predict import apredict_sharded
from taskbench.llm.config import ModelConfig
from taskbench.predict.runner import PredictOptions, predict_file
from taskbench.run.resolve import resolve_data

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'taskbench[ray]')")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DATA = resolve_data("multimedia")


@pytest.fixture(scope="module")
def cluster():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture
def server():
    srv = FaultServer().start()
    yield srv
    srv.stop()


def _config(server, cache, **extra) -> ModelConfig:
    return ModelConfig(spec="openai-compatible/m", options={"base_url": server.base_url, "cache": cache,
                                                            "max_retries": 0, **extra})


def _local(server, out: Path, cache, options: PredictOptions) -> bytes:
    summary = predict_file(DATA, _config(server, cache).open(), out, options, close_model=True)
    assert summary.complete
    return out.read_bytes()


def _env(cache_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["TASKBENCH_CACHE"] = str(cache_dir)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def _cli(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "taskbench", *args]


def test_ray_predict_equals_local_byte_for_byte(cluster, server, tmp_path):
    from taskbench.executors.ray import RayExecutor

    options = PredictOptions(concurrency=2, max_tokens=64)
    cache = str(tmp_path / "cache" / "llm-cache.sqlite")
    local = _local(server, tmp_path / "local.jsonl", cache, options)
    assert server.count == 30
    summary = asyncio.run(apredict_sharded(DATA, _config(server, cache), tmp_path / "ray.jsonl", options,
                                           executor=RayExecutor(workers=2), shards=3))
    assert (tmp_path / "ray.jsonl").read_bytes() == local and server.count == 30
    assert summary.cache_hits == 30 and summary.complete and not shard_dir(tmp_path / "ray.jsonl").exists()

    # the command line, a second driver joining the running cluster by address; the default cache is the
    # driver's (TASKBENCH_CACHE), handed to the workers
    out = tmp_path / "cli.jsonl"
    proc = subprocess.run(
        _cli(["predict", "--data", "multimedia", "-m", "openai-compatible/m", "--base-url", server.base_url,
              "-o", str(out), "-c", "2", "--max-tokens", "64", "--executor", "ray", "--ray-address", cluster,
              "--workers", "2", "-q"]),
        env=_env(tmp_path / "cache"), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert out.read_bytes() == local and server.count == 30


def test_a_killed_ray_worker_loses_nothing(cluster, tmp_path):
    """SIGKILL the worker process running a shard after it wrote some records: Ray runs the task again on a
    new worker, which resumes from the shard file."""
    from taskbench.executors.ray import RayExecutor

    srv = FaultServer(delay=0.15).start()
    try:
        options = PredictOptions(concurrency=1, max_tokens=64)
        cache = str(tmp_path / "c.sqlite")
        out = tmp_path / "out.jsonl"
        box: dict[str, object] = {}

        def drive() -> None:
            try:
                box["summary"] = asyncio.run(apredict_sharded(DATA, _config(srv, cache), out, options,
                                                              executor=RayExecutor(workers=2), shards=2))
            except BaseException as exc:  # handed to the test thread
                box["error"] = exc

        thread = threading.Thread(target=drive)
        thread.start()
        shard = shard_dir(out) / "shard-0000.jsonl"
        info = shard.with_name(shard.name + ".worker")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if info.exists() and shard.exists() and shard.read_bytes().count(b"\n") >= 4:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the shard never got going")
        victim = json.loads(info.read_text())["pid"]
        written_before = shard.read_bytes().count(b"\n")
        os.kill(victim, signal.SIGKILL)
        thread.join(180)
        assert not thread.is_alive()
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        summary = box["summary"]
        assert summary.complete and summary.written == 30  # type: ignore[attr-defined]
        # nothing written was redone: 30 answers, plus at most the one request in flight at the kill
        assert 30 <= srv.count <= 31, srv.count
        assert 4 <= written_before < 15  # killed mid-shard (a shard holds 15 ids)
        with pytest.raises(ProcessLookupError):
            os.kill(victim, 0)  # that worker is gone: another one finished its shard
        # equal, byte for byte, to a local run answered by the same cache
        assert out.read_bytes() == _local(srv, tmp_path / "local.jsonl", cache, options)
        assert srv.count <= 31
    finally:
        srv.stop()


def test_a_killed_driver_is_resumed_by_the_rerun(cluster, tmp_path):
    srv = FaultServer(delay=0.2).start()
    try:
        out = tmp_path / "out.jsonl"
        env = _env(tmp_path / "cache")
        args = ["predict", "--data", "multimedia", "-m", "openai-compatible/m", "--base-url", srv.base_url,
                "-o", str(out), "-c", "1", "--max-tokens", "64", "--executor", "ray", "--ray-address", cluster,
                "--workers", "2", "-q"]
        proc = subprocess.Popen(_cli(args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sdir = shard_dir(out)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            lines = sum(f.read_bytes().count(b"\n") for f in sdir.glob("shard-*.jsonl")) if sdir.is_dir() else 0
            if lines >= 6:
                break
            time.sleep(0.05)
        else:
            proc.kill()
            pytest.fail("the sharded run never got going: " + (proc.stderr.read() or b"").decode()[-2000:])
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        proc.stderr.close()
        assert not out.exists() or out.read_text() == ""  # the records live in the shard files so far
        rerun = subprocess.run(_cli(args), env=env, capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        ids = [json.loads(x)["id"] for x in out.read_text().splitlines()]
        local = _local(srv, tmp_path / "local.jsonl", str(tmp_path / "cache" / "llm-cache.sqlite"),
                       PredictOptions(concurrency=1, max_tokens=64))
        assert ids == [json.loads(x)["id"] for x in local.splitlines()]
        assert out.read_bytes() == local and not sdir.exists()
        assert srv.count <= 30 + 2 + 2  # at most the requests in flight when the driver died were asked again
    finally:
        srv.stop()


def test_ray_evaluate_gives_the_local_numbers(cluster, server, tmp_path):
    from taskbench.dataset.layout import load_dataset, read_raw_records
    from taskbench.eval.api import dumps_metrics, evaluate
    from taskbench.executors.evaluate import aevaluate_sharded
    from taskbench.executors.ray import RayExecutor

    preds = tmp_path / "p.jsonl"
    _local(server, preds, False, PredictOptions(concurrency=4, max_tokens=64))
    ds = load_dataset(DATA)
    gold = read_raw_records(ds.data_path)
    local = evaluate(gold, read_raw_records(preds), ds.library, mode="both", gold_records=gold, bootstrap=100)
    sharded = asyncio.run(aevaluate_sharded(DATA, preds, executor=RayExecutor(workers=2), shards=3, mode="both",
                                            bootstrap=100))
    assert dumps_metrics(sharded.to_json()) == dumps_metrics(local.to_json())
