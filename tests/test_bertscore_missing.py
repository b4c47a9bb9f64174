"""Without torch, BERTScore raises MissingDependencyError with the exact pip line (runs everywhere)."""

from __future__ import annotations

import pytest


def test_missing_dependency_message(monkeypatch):
    import builtins

    from taskbench.errors import MissingDependencyError
    from taskbench.eval import bertscore

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "torch":
            raise ImportError("no torch")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(MissingDependencyError, match=r'pip install "taskbench\[bertscore\]"'):
        bertscore.BertScorer("whatever")


def test_a_model_that_cannot_be_loaded_is_one_line(tmp_path, capsys, monkeypatch):
    """No network and no cached copy (or a folder that is no model): one line, exit 2, no traceback."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import json

    from taskbench.cli.main import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": "x", "result": {"task_steps": ["s"], "task_nodes": []}}) + "\n")
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    for model in (str(empty), "roberta-large-not-cached-here"):
        with pytest.raises(SystemExit) as exc:
            main(["evaluate", "--data", "huggingface", "-p", str(preds), "-M", "all", "--bertscore-model", model])
        err = capsys.readouterr().err
        assert exc.value.code == 2, err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert f"the BERTScore model {model!r} cannot be loaded" in err and "--bertscore-model" in err
