"""The sharded-job protocol without Ray: LocalExecutor shards (threads) against a loopback server. Sharded
output equals a local run's byte for byte (same cache), resumes by id, merges what a killed driver left, keeps
failure records in place and retries them, refuses a shard a worker still holds."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from fault_server import FaultServer
from taskbench.errors import ConfigError
from taskbench.executors import LocalExecutor, get_executor, shard_dir
from taskbench.executors.predict import PredictJob, apredict_sharded
from taskbench.executors.sharded import exclusive, split
from taskbench.llm.config import ModelConfig
from taskbench.predict.runner import PredictOptions, predict_file
from taskbench.run.resolve import resolve_data

DATA = resolve_data("multimedia")
OPTS = PredictOptions(concurrency=2, max_tokens=64)


@pytest.fixture
def server():
    srv = FaultServer().start()
    yield srv
    srv.stop()


def _config(server: FaultServer, cache) -> ModelConfig:
    return ModelConfig(spec="openai-compatible/m", options={"base_url": server.base_url, "cache": cache,
                                                            "max_retries": 0, "concurrency": 4})


def _local(server, out: Path, cache) -> bytes:
    model = _config(server, cache).open()
    summary = predict_file(DATA, model, out, OPTS, close_model=True)
    assert summary.complete
    return out.read_bytes()


def _sharded(server, out: Path, cache, workers: int = 3, shards: int | None = None):
    return asyncio.run(apredict_sharded(DATA, _config(server, cache), out, OPTS, executor=LocalExecutor(workers),
                                        shards=shards, dataset_name="multimedia"))


def test_merge_waits_for_a_worker_then_refuses(tmp_path):
    from taskbench.executors import merge_shards

    out = tmp_path / "out.jsonl"
    sdir = shard_dir(out)
    sdir.mkdir()
    (sdir / "shard-0000.jsonl").write_text('{"id": "a"}\n')
    start = time.monotonic()
    with exclusive(sdir / "shard-0000.jsonl"):
        with pytest.raises(ConfigError, match="a worker is still writing this shard"):
            merge_shards(out, ["a"], wait=0.5)
    assert time.monotonic() - start >= 0.5
    assert merge_shards(out, ["a"]).records == 1 and out.read_text() == '{"id": "a"}\n'



def test_split_keeps_order_and_balance():
    keys = [str(i) for i in range(10)]
    parts = split(keys, 3)
    assert [len(p) for p in parts] == [4, 3, 3] and sum(parts, []) == keys
    assert split(keys[:2], 5) == [["0"], ["1"]] and split(keys, 1) == [keys]


def test_sharded_equals_local_byte_for_byte(server, tmp_path):
    cache = str(tmp_path / "c.sqlite")
    local = _local(server, tmp_path / "local.jsonl", cache)
    assert server.count == 30
    summary = _sharded(server, tmp_path / "sharded.jsonl", cache, workers=3, shards=5)
    assert server.count == 30  # every answer came from the cache the local run filled
    assert (tmp_path / "sharded.jsonl").read_bytes() == local
    assert summary.complete and summary.written == 30 and summary.cache_hits == 30 and summary.selected == 30
    assert not shard_dir(tmp_path / "sharded.jsonl").exists()  # shard files merged and removed


def test_without_a_cache_only_latencies_differ(server, tmp_path):
    local = [json.loads(x) for x in _local(server, tmp_path / "a.jsonl", False).splitlines()]
    _sharded(server, tmp_path / "b.jsonl", False, workers=2)
    sharded = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert [r["id"] for r in sharded] == [r["id"] for r in local]
    for a, b in zip(local, sharded, strict=True):
        a["usage"].pop("seconds"), b["usage"].pop("seconds")
        assert a == b


def test_resume_skips_what_is_written_and_merges_leftover_shards(server, tmp_path):
    cache = str(tmp_path / "c.sqlite")
    full = _local(server, tmp_path / "full.jsonl", cache).splitlines(keepends=True)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"".join(full[:8]))  # an earlier pass wrote 8
    # ...and a killed sharded pass left two shard files: records 20-23, and 12 with a torn last line
    sdir = shard_dir(out)
    sdir.mkdir()
    (sdir / "shard-0001.jsonl").write_bytes(b"".join(full[20:24]))
    (sdir / "shard-0000.jsonl").write_bytes(full[12] + full[13][:30])
    (sdir / "shard-0000.jsonl.worker").write_text("{}")
    before = server.count
    summary = _sharded(server, out, False, workers=2)  # no cache: every new answer is a request
    assert summary.skipped == 8 + 5 and summary.written == 30 - 13
    assert server.count - before == 30 - 13
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [json.loads(x)["id"] for x in full]
    assert not sdir.exists()
    # a rerun has nothing left to do
    again = _sharded(server, out, False)
    assert again.skipped == 30 and again.written == 0 and server.count - before == 17


def test_failures_are_written_in_place_and_retried(server, tmp_path):
    cache = str(tmp_path / "c.sqlite")
    server.set_script([("status", 400)] * 3)  # permanent errors: the first three requests fail for good
    out = tmp_path / "out.jsonl"
    first = _sharded(server, out, cache, workers=1)
    assert first.failures == 3 and not first.complete and len(first.errors) == 3
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 30 and sum(1 for r in lines if r.get("failed")) == 3
    second = _sharded(server, out, cache, workers=2)
    assert second.retried == 3 and second.written == 3 and second.complete and second.cache_hits == 0
    assert server.count == 33
    # the finished file equals a local run that never failed, answered by the same cache
    assert out.read_bytes() == _local(server, tmp_path / "local.jsonl", cache) and server.count == 33


def _sharded_short_wait(server, out: Path):
    from taskbench.executors import arun_job

    job = PredictJob(output=str(out), data=str(DATA), model=_config(server, False), options=OPTS)
    return asyncio.run(arun_job(job, LocalExecutor(1), lock_wait=0.3))


def test_refuses_a_shard_a_worker_still_writes_and_another_models_file(server, tmp_path):
    out = tmp_path / "out.jsonl"
    sdir = shard_dir(out)
    sdir.mkdir()
    (sdir / "shard-0000.jsonl").write_text("")
    with exclusive(sdir / "shard-0000.jsonl"):
        with pytest.raises(ConfigError, match="a worker is still writing this shard"):
            _sharded_short_wait(server, out)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "model": "openai-compatible/another"}) + "\n")
    with pytest.raises(ConfigError, match="holds predictions of 'openai-compatible/another'"):
        _sharded(server, other, False)


def test_job_is_plain_data_and_executor_names(server, tmp_path):
    job = PredictJob(output=str(tmp_path / "o.jsonl"), data=str(DATA), model=_config(server, True), options=OPTS)
    payload = json.loads(json.dumps(job.model_dump(mode="json")))
    assert PredictJob.model_validate(payload) == job
    assert job.prepare().model.options["cache"] != True  # noqa: E712 - resolved to one cache for all workers
    with pytest.raises(ValueError, match="plain data"):
        ModelConfig(spec="mock/m", options={"cache": object()})
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        get_executor("dask")
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        get_executor("local", address="auto")


@pytest.mark.parametrize(("domain", "dependency"), [("huggingface", "resource"), ("dailylifeapis", "temporal")])
def test_sharded_evaluate_gives_the_local_numbers(parity_dir, domain, dependency):
    """Map-reduce scoring of the reference's messy perturbed predictions equals local scoring exactly (every
    metric, CI, per-tool row, taxonomy entry, unmatched and duplicate id), and compat runs as locally."""
    from taskbench.dataset.layout import read_raw_records
    from taskbench.eval.api import dumps_metrics, evaluate
    from taskbench.executors.evaluate import aevaluate_sharded
    from taskbench.graph.loaders import load_tool_library

    root = parity_dir / domain
    preds = root / "predictions" / "perturbed_1.json"
    library = load_tool_library(root / "tool_desc.json", dependency, name=root.name)
    gold = read_raw_records(root / "data.json")
    local = evaluate(gold, read_raw_records(preds), library, mode="both", gold_records=gold, bootstrap=200, seed=3)
    sharded = asyncio.run(aevaluate_sharded(root, preds, executor=LocalExecutor(3), shards=4, mode="both",
                                            dependency=dependency, bootstrap=200, seed=3))
    assert dumps_metrics(sharded.to_json()) == dumps_metrics(local.to_json())
    assert sharded.strict.n_gold == len(gold) and sharded.strict.groups["overall_overall"].ci


def test_run_with_an_executor_equals_the_in_process_run(tmp_path, monkeypatch):
    """`taskbench run`'s job with a sharded executor: the same predictions (but for latencies: the mock model
    is not cached), the same metrics files, and the executor in the run log."""
    from taskbench.run import run_benchmark

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    kwargs = dict(models=["mock/echo"], datasets=["huggingface", "dailylifeapis"],
                  options=PredictOptions(limit=6, max_tokens=256, concurrency=2), bootstrap=50)
    plain = run_benchmark(tmp_path / "plain", **kwargs)
    sharded = run_benchmark(tmp_path / "sharded", executor=LocalExecutor(3), **kwargs)
    assert plain.status == sharded.status == "complete"
    assert sharded.config.workers == 3 and plain.config.workers is None
    for a, b in zip(plain.entries, sharded.entries, strict=True):
        ra = [json.loads(x) for x in (tmp_path / "plain" / a.predictions_path).read_text().splitlines()]
        rb = [json.loads(x) for x in (tmp_path / "sharded" / b.predictions_path).read_text().splitlines()]
        for r in ra + rb:
            r["usage"].pop("seconds")
        assert ra == rb and len(ra) == 6
        assert (tmp_path / "plain" / a.metrics_path).read_bytes() == (tmp_path / "sharded" / b.metrics_path).read_bytes()
