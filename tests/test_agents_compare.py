"""`taskbench agents compare`: one agent of two `agents eval` runs, paired on the tasks both finished (the
same agent with SPAN students against the base model is the case one run cannot hold)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_helpers import CREDITS_CODE, SEARCH_CODE, credits_plan, finish, mock, run_one, search_plan, verdict
from taskbench.agents.eval import compare_runs
from taskbench.cli.main import app
from taskbench.errors import ConfigError, InputError

runner = CliRunner()


def _solved(run: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    run_one(run, "conagents-auto", {"grounding": g, "execution": x, "review": mock("r", [verdict()] * 5)})


def _failed(run: Path, **config: object) -> None:
    # answers at once from memory: no tool call, a wrong name; review accepts (the base model's habit)
    g = mock("g", [finish("The Joker was played by Jack Nicholson.")])
    run_one(run, "conagents-auto", {"grounding": g, "execution": mock("x", []),
                                    "review": mock("r", [verdict()])}, **config)


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "students", tmp_path / "base"
    _solved(a)
    _failed(b)
    return a, b


def test_compare_pairs_one_agent_of_two_runs(two_runs: tuple[Path, Path]) -> None:
    a, b = two_runs
    doc = compare_runs(a, b, n_boot=200)
    label_a, label_b = "conagents-auto (students)", "conagents-auto (base)"
    assert [r["label"] for r in doc["runs"]] == [label_a, label_b]
    assert doc["tasks"] == 1 and doc["env"] == "restbench-tmdb" and doc["differs"] == {}
    assert doc["agents"][label_a]["success_rate"] == 1.0 and doc["agents"][label_b]["success_rate"] == 0.0
    (pair,) = doc["paired"]
    assert (pair["a"], pair["b"]) == (label_a, label_b)
    assert pair["flips"] == {"episodes": 1, "a_only": 1, "b_only": 0}
    success = next(m for m in pair["metrics"] if m["metric"] == "success_rate")
    assert success["diff"] == 1.0
    # the per-task table keeps the two runs of one agent name apart
    assert sorted(r["agent"] for r in doc["per_task"]) == sorted([label_a, label_b])
    assert {r["agent"]: r["calls"] for r in doc["per_task"]} == {label_a: 2.0, label_b: 0.0}


def test_compare_names_differences_and_refuses_what_cannot_be_paired(two_runs: tuple[Path, Path],
                                                                       tmp_path: Path) -> None:
    a, _ = two_runs
    longer = tmp_path / "longer"
    _failed(longer, max_steps=3)
    doc = compare_runs(a, longer, n_boot=0)
    assert "budgets" in doc["differs"]
    # another environment: refused, in one line naming both
    other = tmp_path / "other-env"
    shutil.copytree(longer, other)
    header = json.loads((other / "header.json").read_text())
    header["config"]["env"] = "restbench-spotify"
    (other / "header.json").write_text(json.dumps(header))
    with pytest.raises(ConfigError, match="two environments"):
        compare_runs(a, other)
    with pytest.raises(ConfigError, match="no finished episode of agent 'react'"):
        compare_runs(a, longer, agent_a="react")
    with pytest.raises(InputError, match="not an agent run directory"):
        compare_runs(a, tmp_path / "nowhere")


def test_compare_command_prints_the_paired_difference_and_writes_json(two_runs: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    a, b = two_runs
    out = tmp_path / "cmp.json"
    result = runner.invoke(app, ["agents", "compare", str(a), str(b), "--bootstrap", "100", "-o", str(out)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "conagents-auto (students): 1 episodes; model mock/unused" in text
    assert "paired on the 1 tasks both finished" in text
    assert re.search(r"success % │ +100\.0 │ +0\.0 │ +\+100\.0 │", text)
    assert re.search(r"path F1 % │ +100\.0 │ +0\.0 │ +\+100\.0 │", text)
    assert "solved by the first only 1, by the second only 0" in text
    assert json.loads(out.read_text())["paired"][0]["flips"]["a_only"] == 1


def test_two_runs_of_one_name_are_told_apart_and_runs_without_a_common_episode_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "x" / "base", tmp_path / "y" / "base"
    _solved(a)
    _failed(b)
    doc = compare_runs(a, b, n_boot=0)
    labels = [r["label"] for r in doc["runs"]]
    assert labels == [f"conagents-auto ({a})", f"conagents-auto ({b})"] and set(doc["agents"]) == set(labels)
    # the same run against itself: still two labels
    same = compare_runs(a, a, n_boot=0)
    assert [r["label"] for r in same["runs"]] == [f"conagents-auto ({a}) A", f"conagents-auto ({a}) B"]
    # an episode of another task only: nothing in common
    other = tmp_path / "other-task"
    g = mock("g", [finish("I do not know.")])
    run_one(other, "conagents-auto", {"grounding": g, "execution": mock("x", []),
                                      "review": mock("r", [verdict()])}, task="tmdb-own-02")
    with pytest.raises(ConfigError, match="no finished episode .* in common"):
        compare_runs(a, other)
