"""Issue 24.9's half-writes: nothing is written before the inputs are validated, and what is written is
written whole (a crash or a kill in the middle leaves the old file or none, never a torn one)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import run


def test_a_misspelled_env_writes_nothing_so_the_corrected_command_runs(tmp_path: Path, capsys) -> None:
    out = tmp_path / "agents"
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdbb", "-m", "mock/echo", "--agent", "react",
                       "-o", str(out))
    assert code == 2 and "did you mean 'restbench-tmdb'" in err
    assert not (out / "config.json").exists()
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdb", "-m", "mock/echo", "--agent", "react",
                       "--task-set", "own", "--limit", "1", "-o", str(out))
    assert "another configuration" not in err
    assert json.loads((out / "config.json").read_text())["config"]["env"] == "restbench-tmdb"
