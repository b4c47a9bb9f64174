"""Issue 22's errors that must send the user the right way, and flags and help that agree across commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import run


def test_misspelled_local_model_is_one_did_you_mean_line_before_any_output(tmp_path: Path, capsys) -> None:
    out = tmp_path / "preds.jsonl"
    code, stdout, err = run(capsys, "predict", "-m", "llamacpp/qwen2.5-coder-05b", "-d", "multimedia",
                            "--limit", "2", "-o", str(out))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("taskbench: error: ")
    assert "did you mean 'qwen2.5-coder-0.5b'?" in err
    assert "0/2" not in stdout + err  # no progress bar was drawn
    assert not out.exists()  # and no empty predictions file left behind


def test_misspelled_local_model_in_run_leaves_no_run_directory_content(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code, _, err = run(capsys, "run", "-m", "llamacpp/qwen2.5-coder-05b", "-d", "multimedia", "--limit", "1",
                       "--generate", "0", "--agents", "", "-o", str(out))
    assert code == 2 and "did you mean 'qwen2.5-coder-0.5b'?" in err
    assert not (out / "predictions").exists() or not any((out / "predictions").iterdir())
