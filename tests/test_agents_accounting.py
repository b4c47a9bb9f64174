"""A crashed episode (its record a failure: a model call failed for good, the agent or the checker broke) is a
failure in every rate, is counted as crashed, makes the command exit 1, and is retried by a rerun.

Real episodes on the offline TMDB service with scripted models; the crash is a bug planted in the agent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import CREDITS, SEARCH, mock
from cli_runner import run as run_cli
from taskbench.agents import AgentEvalConfig, Budgets, run_agents
from taskbench.agents.baselines import ReAct
from taskbench.agents.eval import compare_runs
from taskbench.llm.providers.mock import tool_calls

RIGHT = "Heath Ledger played the Joker."


def solved_script(episodes: int) -> list[Any]:
    return [tool_calls((SEARCH, {"query": "The Dark Knight"})), tool_calls((CREDITS, {"movie_id": 155})),
            tool_calls(("final_answer", {"answer": RIGHT}))] * episodes


def crash_on(monkeypatch: pytest.MonkeyPatch, seeds: set[int]) -> None:
    real = ReAct.run

    async def run(self: ReAct, ep: Any) -> None:
        if ep.seed in seeds:
            raise ValueError("a bug in the agent")
        await real(self, ep)

    monkeypatch.setattr(ReAct, "run", run)


def config(seeds: int) -> AgentEvalConfig:
    return AgentEvalConfig(env="restbench-tmdb", agents=["react"], model="mock/unused", tools="gold",
                           task_ids=["tmdb-own-01"], env_options={"task_set": "own"}, seeds=seeds,
                           budgets=Budgets(max_steps=4), bootstrap=0)


def test_crashed_episodes_are_failures_in_every_rate_and_a_rerun_retries_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    crash_on(monkeypatch, {2, 3})
    result = run_agents(config(4), tmp_path / "a", models={"agent": mock("react", solved_script(2))})
    s = result.metrics["agents"]["react"]
    assert result.failed == 2 and not result.complete
    assert s["episodes"] == 4 and s["crashed"] == 2 and s["failed"] == 2 and s["successes"] == 2
    assert s["success_rate"] == 0.5 and s["crash_rate"] == 0.5 and s["answered_rate"] == 0.5
    # tau-bench's pass^k over the 4 seeds: C(2, k) / C(4, k)
    assert s["pass_hat_k"] == {"1": 0.5, "2": pytest.approx(1 / 6, abs=1e-6), "3": 0.0, "4": 0.0}
    assert s["correct_path_f1"] == 0.5 and s["correct_path_contains"] == 0.5  # a crash called nothing
    assert s["tool_calls"] == 2.0  # costs are means over the episodes that finished
    assert s["stops"] == {"answer": 2, "crashed": 2}
    assert result.metrics["comparison"][0]["crashed"] == 2
    per_task = result.metrics["per_task"][0]
    assert per_task["episodes"] == 4 and per_task["successes"] == 2
    shutil.copytree(tmp_path / "a", tmp_path / "crashed")

    # the rerun retries the crashed episodes only, and their records replace the failures
    monkeypatch.undo()
    again = run_agents(config(4), tmp_path / "a", models={"agent": mock("react", solved_script(2))})
    s = again.metrics["agents"]["react"]
    assert again.complete and again.skipped == 2 and again.written == 2
    assert s["success_rate"] == 1.0 and s["crashed"] == 0 and s["pass_hat_k"]["4"] == 1.0
    assert len((tmp_path / "a" / "episodes.jsonl").read_text().splitlines()) == 4

    # a paired comparison of two runs counts the crashes as failures too
    doc = compare_runs(tmp_path / "crashed", tmp_path / "a", n_boot=0)
    labels = [r["label"] for r in doc["runs"]]
    assert doc["agents"][labels[0]]["success_rate"] == 0.5 and doc["agents"][labels[0]]["crashed"] == 2
    assert doc["agents"][labels[1]]["success_rate"] == 1.0
    assert doc["paired"][0]["flips"] == {"episodes": 4, "a_only": 0, "b_only": 2}


def test_a_failure_the_runner_recorded_itself_is_counted_from_its_id() -> None:
    # five solved and five crashed episodes of one task: success 0.5, pass^3 C(5,3)/C(10,3), not 1.0
    from taskbench.agents.metrics import crash_row, metrics_document
    from taskbench.schema.episode import EpisodeRow

    solved = [EpisodeRow(agent="a", task="t", seed=k, success=True, answered=True, calls=["x"], gold_path=["x"],
                         cpr_lcs=1.0, cpr_f1=1.0, cpr_contains=True) for k in range(5)]
    crashed = [crash_row("a", "t", k, ["x"], "boom") for k in range(5, 10)]
    doc = metrics_document({"a": solved + crashed}, ["t"], seeds=10, n_boot=0)
    s = doc["agents"]["a"]
    assert s["success_rate"] == 0.5 and s["crashed"] == 5
    assert s["pass_hat_k"]["3"] == pytest.approx(10 / 120, abs=1e-6)
    assert s["correct_path_f1"] == 0.5 and s["correct_path_lcs"] == pytest.approx((5 * 1.0 + 5 * 0.0) / 10)

    from taskbench.agents.eval import episode_key

    assert episode_key("react@3/tmdb-own-01/s2", {"id": "react@3/tmdb-own-01/s2", "failed": True}) == \
        ("react@3", "tmdb-own-01", 2)
    assert episode_key("odd", {"id": "odd", "failed": True}) is None


def test_the_command_exits_1_and_names_the_crashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    crash_on(monkeypatch, {0})
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "agents", "eval", "--env", "restbench-tmdb", "--task-set", "own", "--task",
                           "tmdb-own-01", "--agent", "react", "--model", "mock/echo", "--tools", "gold",
                           "--bootstrap", "0", "-o", str(out), "-q")
    assert code == 1
    assert "1 of 1 episodes crashed" in err and "a bug in the agent" in err and "count as failures" in err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["agents"]["react"]["episodes"] == 1 and metrics["agents"]["react"]["success_rate"] == 0.0
    assert metrics["agents"]["react"]["crashed"] == 1
