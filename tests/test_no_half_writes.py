"""Issue 24.9's half-writes: nothing is written before the inputs are validated, and what is written is
written whole (a crash or a kill in the middle leaves the old file or none, never a torn one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run


def test_a_misspelled_env_writes_nothing_so_the_corrected_command_runs(tmp_path: Path, capsys) -> None:
    out = tmp_path / "agents"
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdbb", "-m", "mock/echo", "--agent", "react",
                       "-o", str(out))
    assert code == 2 and "did you mean 'restbench-tmdb'" in err
    assert not out.exists() or not any(out.iterdir())  # no run header, nothing
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdb", "-m", "mock/echo", "--agent", "react",
                       "--task-set", "own", "--limit", "1", "-o", str(out))
    assert "another configuration" not in err
    assert json.loads((out / "header.json").read_text())["config"]["env"] == "restbench-tmdb"


def test_generate_with_an_absurd_n_is_refused_at_once_and_writes_nothing(tmp_path: Path, capsys) -> None:
    """Issue 24.9: `generate --n 100000000000` built the whole plan in memory before the first call (a hang,
    then out of memory). Above the bound it is one line, before the output directory is made."""
    import time

    out = tmp_path / "gen"
    start = time.monotonic()
    code, _, err = run(capsys, "generate", "--tools", "multimedia", "-m", "mock/echo", "--n", "100000000000",
                       "-o", str(out))
    assert time.monotonic() - start < 10
    assert code == 2 and err.count("\n") == 1 and "--n" in err and "1,000,000" in err
    assert not out.exists()


def test_plan_bound_holds_in_the_library_too() -> None:
    from taskbench import bundled
    from taskbench.errors import ConfigError
    from taskbench.graph.build import graph_from_path
    from taskbench.graph.sampling import MAX_PLAN, sample_plan

    with pytest.raises(ConfigError, match="at most 1,000,000"):
        sample_plan(graph_from_path(bundled.path("multimedia")), MAX_PLAN + 1, 0)


def test_a_dead_base_url_leaves_no_predictions_file_behind(tmp_path: Path, capsys) -> None:
    import socket

    with socket.socket() as s:  # a loopback port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "p.jsonl"
    code, _, err = run(capsys, "predict", "-m", "openai-compatible/x", "--base-url", f"http://127.0.0.1:{port}/v1",
                       "-d", "multimedia", "--limit", "2", "-o", str(out))
    assert code == 2 and "nothing is listening" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
