"""The episode row (issue 19, point 1): what an agent run writes to episodes.jsonl is exactly the keys the
model declares, and reads back through the model unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from agent_helpers import no_sandbox_here
from taskbench.agents import AgentEvalConfig, Budgets, run_agents
from taskbench.agents.eval import load_run
from taskbench.schema import EpisodeRow, FailedEpisodeRow, parse_episode


def test_the_episode_rows_an_agent_run_writes_are_the_keys_of_the_model(tmp_path: Path) -> None:
    cfg = AgentEvalConfig(env="restbench-tmdb", agents=["react"], model="mock/echo", tools="gold",
                          task_ids=["tmdb-own-01"], env_options={"task_set": "own"}, budgets=Budgets(max_steps=2),
                          bootstrap=0, unsafe_local=no_sandbox_here())
    run_agents(cfg, tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines
    for line in lines:
        assert not line.get("failed"), line
        assert list(line) == list(EpisodeRow.model_fields)  # the same keys, in the same order
        row = parse_episode(line)
        assert isinstance(row, EpisodeRow) and row.model_dump(mode="json") == line
    _, records = load_run(tmp_path)
    assert all(isinstance(r, EpisodeRow) and r.trajectory for r in records.values())


def test_failed_and_older_episode_rows_load() -> None:
    failed = {"id": "react/t/s0", "agent": "react", "task": "t", "seed": 0, "fingerprint": "f" * 16,
              "trajectory": "trajectories/react/t__s0.jsonl", "failed": True, "error": "boom"}
    row = parse_episode(failed)
    assert isinstance(row, FailedEpisodeRow) and row.model_dump(mode="json") == failed
    assert list(failed) == list(FailedEpisodeRow.model_fields)
    runner_failure = parse_episode({"id": "x", "failed": True, "error": "TimeoutError: late"})
    assert isinstance(runner_failure, FailedEpisodeRow) and runner_failure.agent is None
    old = parse_episode({"id": "react/t/s0", "agent": "react", "task": "t", "seed": 1, "success": True})
    assert isinstance(old, EpisodeRow) and old.success and old.attempts == 1 and old.cpr_f1 is None


def test_the_viewer_shows_only_keys_an_episode_row_has() -> None:
    from taskbench.report.view.agents import _EPISODE_KEYS

    assert set(_EPISODE_KEYS) <= set(EpisodeRow.model_fields)
