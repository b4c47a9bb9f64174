"""Typed scores: evaluate() takes Predictions, every metrics file says what it is of (model, dataset, mode,
sample count), and one model (schema.scores.MetricsFile) reads every layout."""

from __future__ import annotations

import json

import pytest

from cli_runner import run
from taskbench.dataset.layout import load_dataset
from taskbench.eval.api import evaluate
from taskbench.report.leaderboard import expand_sources, load_grouped
from taskbench.run.resolve import resolve_data
from taskbench.schema import Prediction
from taskbench.schema.scores import MetricsFile, StrictResult


@pytest.fixture(scope="module")
def hf():
    return load_dataset(resolve_data("huggingface"))


def _predictions(ds, n=4):
    return [Prediction(id=s.id, result={"task_steps": s.task_steps,
                                        "task_nodes": [t.model_dump(mode="json") for t in s.task_nodes],
                                        "task_links": [lk.model_dump(mode="json") for lk in s.task_links]},
                       model="mock/gold") for s in ds.samples[:n]]


def test_evaluate_takes_predictions_and_the_document_records_what_it_is_of(hf) -> None:
    preds = _predictions(hf)
    samples = hf.samples[:4]
    typed = evaluate(samples, preds, hf.library, mode="both", bootstrap=0)
    raw = evaluate(samples, [p.to_record() for p in preds], hf.library, mode="both", bootstrap=0)
    assert typed.to_json() == raw.to_json()
    doc = typed.to_json()
    assert (doc["model"], doc["dataset"], doc["mode"], doc["n_samples"]) == ("mock/gold", "huggingface", "both", 4)
    strict = evaluate(samples, iter(preds), hf.library, bootstrap=0, model="named").to_json()  # one pass
    assert (strict["model"], strict["mode"], strict["n_samples"]) == ("named", "strict", 4)
    compat = evaluate(samples, preds, hf.library, mode="compat").to_json()
    assert "model" not in compat and "mode" not in compat  # the reference's exact layout
    mixed = [*preds[:2], *(p.model_copy(update={"model": "other"}) for p in preds[2:])]
    assert evaluate(samples, mixed, hf.library, bootstrap=0).model is None  # two models: none is named


def test_one_model_reads_every_layout(hf) -> None:
    preds = _predictions(hf)
    both = evaluate(hf.samples[:4], preds, hf.library, mode="both", bootstrap=0).to_json()
    read = MetricsFile.from_json(both)
    assert read.mode == "both" and read.model == "mock/gold" and read.n_samples == 4
    assert isinstance(read.strict, StrictResult) and read.strict.groups["overall_overall"].n_samples == 4
    assert read.compat is not None and read.compat["overall_overall"]["all_samples"] == 4
    only_strict = MetricsFile.from_json(both["strict"], model="fallback")
    assert only_strict.mode == "strict" and only_strict.model == "fallback" and only_strict.n_samples == 4
    only_compat = MetricsFile.from_json(both["compat"], dataset="huggingface")
    assert only_compat.mode == "compat" and only_compat.strict is None and only_compat.n_samples == 4
    assert only_compat.dataset == "huggingface"
    for not_metrics in ({"rows": [], "rank_by": "x"}, {"id": "1", "result": {}}, []):
        assert MetricsFile.layout(not_metrics) is None
        with pytest.raises(ValueError, match="no metrics found"):
            MetricsFile.from_json(not_metrics)


def test_the_leaderboard_names_models_from_the_files_and_skips_run_headers(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    preds = tmp_path / "a.jsonl"
    assert run(capsys, "predict", "--data", "huggingface", "-m", "mock/echo", "-o", str(preds), "--limit", "3",
               "-q")[0] == 0
    scores = tmp_path / "scores"
    scores.mkdir()
    for mode in ("--both", "--compat"):
        out = scores / f"{mode[2:]}.json"
        code, _, err = run(capsys, "evaluate", "--data", "huggingface", "-p", str(preds), mode, "--bootstrap", "0",
                           "--limit", "3", "-o", str(out))
        assert code == 0, err
    assert (scores / ".compat.json.header.json").is_file()
    # the directory holds two metrics files and their run headers: only the metrics files are read, and
    # both name the model the predictions record (the compat file through its header)
    sources = expand_sources([scores])
    assert [(ds, model, f.name) for ds, model, f in sources] == [
        ("huggingface", "mock/echo", "both.json"), ("huggingface", "mock/echo", "compat.json")]
    boards = load_grouped([scores / "both.json"])
    assert [e.model for e in boards["huggingface"]] == ["mock/echo"]
    assert json.loads((scores / "both.json").read_text())["n_samples"] == 3
