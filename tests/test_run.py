"""`taskbench run` end to end with the mock provider (fast), the run directory and the RunLog round trip, and
one slow end-to-end with the tiny real model."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taskbench.cli.main import app, main
from taskbench.predict.runner import PredictOptions
from taskbench.run import read_run_log, run_benchmark
from taskbench.run.job import model_slug
from taskbench.schema import RUN_LOG_SCHEMA_VERSION, RunLog
from tiny_model import tiny_model_missing


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_run_writes_a_self_describing_run_directory(tmp_path, cache_dir) -> None:
    run_dir = tmp_path / "run"
    started = time.perf_counter()
    log = run_benchmark(
        run_dir, models=["mock/echo"], datasets=["huggingface", "dailylifeapis"],
        options=PredictOptions(limit=6, max_tokens=256), bootstrap=50, command=["taskbench", "run"],
    )
    wall = time.perf_counter() - started
    assert log.status == "complete" and log.schema_version == RUN_LOG_SCHEMA_VERSION
    for name in ("run_log.json", "report.md", "report.html", "plots/huggingface.png"):
        assert (run_dir / name).is_file(), name
    # the log: config, environment, seeds, timings, usage, records, strict and compat metrics
    back = read_run_log(run_dir)
    assert back == RunLog.model_validate_json(back.model_dump_json())
    assert back.config.models == ["mock/echo"] and back.config.limit == 6 and back.config.max_tokens == 256
    assert back.environment.packages["pydantic"] and back.environment.python
    assert back.seeds == {"sampling": 0, "bootstrap": 0}
    assert [e.dataset for e in back.entries] == ["huggingface", "dailylifeapis"]
    for entry in back.entries:
        assert entry.status == "scored" and len(entry.records) == 6 == len(entry.sample_ids)
        assert [r.id for r in entry.records] == entry.sample_ids
        assert entry.strict is not None and entry.strict.n_gold == 6 and "overall_overall" in entry.strict.groups
        assert "overall_overall" in entry.compat and "node_micro_f1_no_matching" in entry.compat["overall_overall"]
        assert entry.usage.prompt_tokens > 0 and 0 < entry.predict_seconds < wall  # measured, not the default
        metrics = json.loads((run_dir / entry.metrics_path).read_text())
        assert set(metrics) == {"model", "dataset", "mode", "n_samples", "strict", "compat"}
        assert (metrics["model"], metrics["dataset"], metrics["mode"], metrics["n_samples"]) == (
            "mock/echo", entry.dataset, "both", 6)
        preds = run_dir / entry.predictions_path
        assert preds.name == f"{model_slug('mock/echo')}.jsonl" and len(preds.read_text().splitlines()) == 6
    assert back.usage.prompt_tokens == sum(e.usage.prompt_tokens for e in back.entries)
    # the reports: overview and per-dataset leaderboards; the HTML is self-contained
    md = (run_dir / "report.md").read_text()
    assert "| huggingface | mock/echo | 6/6 |" in md and "## dailylifeapis" in md and "**compat**" in md
    page = (run_dir / "report.html").read_text()
    assert "data:image/png;base64," in page and "<img" in page and 'src="plots' not in page


def test_rerun_resumes_from_the_predictions(tmp_path, cache_dir) -> None:
    run_dir = tmp_path / "run"
    kw = dict(models=["mock/echo"], datasets=["multimedia"], options=PredictOptions(limit=5), bootstrap=0)
    first = run_benchmark(run_dir, **kw)
    preds = run_dir / first.entries[0].predictions_path
    before = preds.read_bytes()
    second = run_benchmark(run_dir, **kw)
    assert preds.read_bytes() == before
    assert second.entries[0].records == first.entries[0].records
    assert second.entries[0].strict.groups == first.entries[0].strict.groups
    # nothing was predicted again: what the passes spent is what the first one spent (summed over passes)
    assert second.entries[0].run_usage.prompt_tokens == first.entries[0].run_usage.prompt_tokens > 0
    assert second.resumed == 1 and [p.status for p in second.passes] == ["complete", "complete"]


def test_cli_run_end_to_end_with_the_mock(tmp_path, cache_dir) -> None:
    result = CliRunner().invoke(app, ["run", "-m", "mock/echo", "-d", "huggingface", "--limit", "4",
                                      "--bootstrap", "0", "-q", "-o", str(tmp_path / "r")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Leaderboard" in result.output and "huggingface" in result.output
    assert (tmp_path / "r" / "report.html").is_file()


def test_cli_predict_and_errors(tmp_path, cache_dir, capsys) -> None:
    runner = CliRunner()
    out = tmp_path / "p.jsonl"
    result = runner.invoke(app, ["predict", "--data", "dailylifeapis", "-m", "mock/echo", "-o", str(out),
                                 "--limit", "3", "-q"])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 3
    for argv, message in (
        (["--data", "no-such-data", "-m", "mock/echo"], "no bundled dataset of that name"),
        (["--data", "huggingface", "-m", "mock/echo", "--reformat"], "--reformat needs --free"),
        (["--data", "huggingface", "-m", "nosuchprovider/x"], "unknown model provider"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(["predict", *argv, "-o", str(out)])
        assert exc.value.code == 2
        assert message in capsys.readouterr().err


def test_run_help_documents_the_default_subset() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "qwen2.5-coder-0.5b" in result.output and "3 per dataset" in result.output


@pytest.mark.slow
@pytest.mark.model
def test_run_with_the_tiny_real_model(tmp_path, cache_dir) -> None:
    reason = tiny_model_missing()
    if reason:
        pytest.skip(reason)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    run_dir = tmp_path / "run"
    log = run_benchmark(run_dir, models=["llamacpp/smollm2-135m"], datasets=["huggingface"],
                        options=PredictOptions(limit=2, max_tokens=48), bootstrap=0)
    entry = log.entries[0]
    assert entry.status == "scored" and len(entry.records) == 2
    for rec in entry.records:
        assert rec.raw and rec.usage.completion_tokens > 0
        # structured output: constrained tool names, so any parsed node names a library tool
        if rec.result is not None:
            for node in rec.result.get("task_nodes", []):
                assert node["task"] in {t.id for t in log_library(entry.data_path)}
    assert (run_dir / "report.html").is_file()
    # a second run is answered by the cache and writes the same predictions
    before = (run_dir / entry.predictions_path).read_bytes()
    (run_dir / entry.predictions_path).unlink()
    again = run_benchmark(run_dir, models=["llamacpp/smollm2-135m"], datasets=["huggingface"],
                          options=PredictOptions(limit=2, max_tokens=48), bootstrap=0)
    assert again.entries[0].cache_hits == 2
    assert (run_dir / entry.predictions_path).read_bytes() == before


def log_library(data_path: str):
    from taskbench.dataset.layout import load_dataset

    return load_dataset(data_path).library.tools
