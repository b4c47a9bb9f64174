"""`taskbench generate` over real transports: an OpenAI-compatible server on loopback (`taskbench serve`'s app),
real SIGKILLs of a running generation, and the tiny real model end to end (then `predict` and `evaluate`)."""

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

from cli_runner import run
from engine_oracle import Oracle
from taskbench import bundled
from taskbench.dataset import read_jsonl
from taskbench.engine.generate import GenerateOptions, generate
from taskbench.graph.build import graph_from_path
from taskbench.llm import get_model
from tiny_model import tiny_model_missing


def test_generate_against_an_openai_compatible_server_sends_the_schema(tmp_path):
    pytest.importorskip("fastapi")
    from test_llm_serve import ServedModel

    served = get_model("mock/oracle", responses=Oracle(), cache=False)
    graph = graph_from_path(bundled.path("dailylifeapis"))
    with ServedModel(served) as srv:
        client = get_model("openai-compatible/served", base_url=srv.base_url, cache=False, max_retries=0)
        summary = generate(graph, client, tmp_path / "gen", GenerateOptions(n=5, seed=2, concurrency=3),
                           close_model=True)
    sent = served.provider.requests
    assert len(sent) == 5 and all(r.json_schema["title"] == "BackInstruct" for r in sent)
    assert all(r.config.seed is not None and r.config.temperature == 0.7 for r in sent)
    assert summary.complete and summary.statistics["both_critics"]["passed"] == 5
    assert len(read_jsonl(tmp_path / "gen" / "data.json")) == 5


# ------------------------------------------------------------------------------------------------ kills


def _cmd(out: Path) -> list[str]:
    return [sys.executable, "-m", "taskbench", "generate", "--tools", "huggingface", "--out", str(out), "--n", "30",
            "--model", "mock/echo", "-O", "delay=0.05", "-c", "3", "-q"]


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TASKBENCH_CACHE"] = str(cache)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _ids(path: Path) -> list[str]:
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")[:-1]  # a torn tail (no newline) is cut by the next run
    ids = [json.loads(line)["id"] for line in lines]
    assert len(ids) == len(set(ids)), ids
    return ids


@pytest.mark.slow
def test_generate_survives_sigkill_and_finishes_like_an_uninterrupted_run(tmp_path):
    rng = random.Random(7)
    ref, ref_cache = tmp_path / "ref", tmp_path / "ref-cache"
    t0 = time.perf_counter()
    subprocess.run(_cmd(ref), env=_env(ref_cache), check=True, capture_output=True, timeout=300)
    full = time.perf_counter() - t0
    ref_ids = _ids(ref / "data_raw.json")
    assert len(ref_ids) == 30
    out, cache = tmp_path / "killed", tmp_path / "cache"
    raw = out / "data_raw.json"
    kills = partial = 0
    for _ in range(6):
        target = min(29, len(_ids(raw)) + rng.randint(1, 8))
        proc = subprocess.Popen(_cmd(out), env=_env(cache), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.perf_counter() + max(60.0, 4 * full)
        while proc.poll() is None and time.perf_counter() < deadline:
            if raw.exists() and raw.read_bytes().count(b"\n") >= target:
                break
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.06))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        ids = _ids(raw)
        assert ids == ref_ids[: len(ids)]  # always a prefix of the full run, in plan order
        partial += int(0 < len(ids) < 30 and proc.returncode == -signal.SIGKILL)
        if len(ids) == 30 or kills >= 3:
            break
    assert kills >= 2 and partial >= 1, (kills, partial)
    subprocess.run(_cmd(out), env=_env(cache), check=True, capture_output=True, timeout=300)
    assert _ids(raw) == ref_ids

    def strip(path):
        recs = read_jsonl(path)
        for r in recs:
            r.pop("usage", None)
        return recs

    assert strip(raw) == strip(ref / "data_raw.json")  # only the measured latency may differ
    for name in ("data.json", "data_error.json", "user_requests.json", "statistics.json"):
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name
    again = tmp_path / "again"  # with the same cache, an uninterrupted run writes the same bytes
    subprocess.run(_cmd(again), env=_env(cache), check=True, capture_output=True, timeout=300)
    assert (again / "data_raw.json").read_bytes() == raw.read_bytes()


# ------------------------------------------------------------------------------------------------ tiny model


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.skipif(tiny_model_missing() is not None, reason=str(tiny_model_missing()))
def test_tiny_real_model_end_to_end_then_predict_and_evaluate(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "gen"
    code, text, err = run(capsys, "generate", "--tools", "multimedia", "--out", str(out), "--n", "2", "--seed", "3",
                          "--mode-weights", "single=1", "--model", "llamacpp/smollm2-135m", "-O", "n_threads=1",
                          "-O", "n_ctx=4096", "--max-tokens", "400", "--keep", "none", "--timeout", "1800", "-q")
    assert code == 0, err
    raw = read_jsonl(out / "data_raw.json")
    assert len(raw) == 2 and all(r["model"] == "llamacpp/smollm2-135m" for r in raw)
    for rec in raw:  # constrained: either a schema-shaped answer or an honest cut-off
        assert rec.get("error_code") in (None, "truncated"), rec.get("error")
        if rec.get("error_code") is None:
            nodes = rec["result"]["invoking_graph"]["nodes"]
            assert len(nodes) == 1 and nodes[0]["task"] == rec["plan"]["nodes"][0]
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["planned"] == 2 and stats["attempts"] == 2
    data = read_jsonl(out / "data.json")
    assert len(data) == sum(1 for r in raw if r.get("error_code") is None)
    preds = tmp_path / "p.jsonl"
    code, _, err = run(capsys, "predict", "--data", str(out), "--model", "mock/echo", "-o", str(preds), "-q")
    if not data:  # both answers cut off: predict refuses the empty dataset in one line and writes nothing
        assert code == 2 and "no samples" in err and not preds.exists(), err
        return
    assert code == 0, err
    code, _, err = run(capsys, "evaluate", "--data", str(out), "--predictions", str(preds), "-o",
                       str(tmp_path / "m.json"))
    assert code == 0, err
