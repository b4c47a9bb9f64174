"""The trials of the retrying agents (react@N, toolllm@N, reflexion) are different samples: trial 1 keeps the
episode's seed and temperature, every later trial samples with its own seed at the retry temperature, and
none is answered from another trial's response-cache entry. Success is reported with the trials it took.

Real episodes on the offline TMDB service with scripted models that record what they were asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_helpers import CREDITS, SEARCH, run_one
from taskbench.llm import get_model
from taskbench.llm.providers.mock import tool_calls

RIGHT = "Heath Ledger played the Joker."
WRONG = "Christian Bale played the Joker."


class Recorder:
    """Answers its i-th call with the final answer ``answers[i]`` (the last one after that), recording each
    call's seed and temperature."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.seen: list[tuple[int | None, float]] = []

    def __call__(self, request: Any) -> Any:
        self.seen.append((request.config.seed, request.config.temperature))
        text = self.answers[min(len(self.seen), len(self.answers)) - 1]
        return tool_calls(("final_answer", {"answer": text}))


@pytest.mark.parametrize("agent", ["react@3", "toolllm@3"])
def test_each_trial_samples_with_its_own_seed_at_the_retry_temperature(tmp_path: Path, agent: str) -> None:
    from taskbench.agents.config import trial_seed

    model = Recorder([WRONG, WRONG, WRONG])
    traj, rec, _ = run_one(tmp_path, agent, {"agent": get_model("mock/rec", responses=model)}, seeds=2)
    # the last episode (seed 1): three trials, three seeds, the later two at 0.7 (the default retry temperature)
    assert model.seen[3:] == [(1, 0.0), (trial_seed(1, 1), 0.7), (trial_seed(1, 2), 0.7)]
    assert model.seen[:3] == [(0, 0.0), (trial_seed(0, 1), 0.7), (trial_seed(0, 2), 0.7)]
    assert len({seed for seed, _ in model.seen}) == 6  # no seed of one episode's trial is another's
    trials = traj.outcome.details["attempts"]["trials"]
    assert [(t["seed"], t["temperature"]) for t in trials] == model.seen[3:]
    assert rec["attempts"] == 3


def test_the_retry_temperature_is_a_setting_and_a_higher_temperature_stays(tmp_path: Path) -> None:
    model = Recorder([WRONG, WRONG])
    run_one(tmp_path / "a", "react@2", {"agent": get_model("mock/rec", responses=model)}, retry_temperature=0.3)
    assert [t for _, t in model.seen] == [0.0, 0.3]
    model = Recorder([WRONG, WRONG])
    run_one(tmp_path / "b", "react@2", {"agent": get_model("mock/rec", responses=model)}, temperature=1.0)
    assert [t for _, t in model.seen] == [1.0, 1.0]


def test_no_trial_is_answered_from_another_trials_cache_entry(tmp_path: Path) -> None:
    # with the response cache on, trial 2's first prompt equals trial 1's: only its own seed keeps it a new sample
    cache = tmp_path / "cache.sqlite"
    model = get_model("mock/rec", responses=Recorder([WRONG, WRONG, WRONG]), cache=str(cache))
    run_one(tmp_path / "a", "react@3", {"agent": model}, temperature=0.7)
    assert model.cache_hits == 0 and model.calls == 3
    # the same run again is answered from the cache, trial by trial
    again = get_model("mock/rec", responses=Recorder([RIGHT, RIGHT, RIGHT]), cache=str(cache))
    _, rec, _ = run_one(tmp_path / "b", "react@3", {"agent": again}, temperature=0.7)
    assert again.cache_hits == 3 and rec["attempts"] == 3 and not rec["success"]


def test_success_is_reported_with_the_trials_it_took(tmp_path: Path) -> None:
    script = [tool_calls(("final_answer", {"answer": WRONG})),
              tool_calls((SEARCH, {"query": "The Dark Knight"})), tool_calls((CREDITS, {"movie_id": 155})),
              tool_calls(("final_answer", {"answer": RIGHT}))]
    _, rec, result = run_one(tmp_path, "react@3", {"agent": get_model("mock/s", responses=script)})
    assert rec["success"] and rec["attempts"] == 2
    summary = result.metrics["agents"]["react@3"]
    assert summary["success_by_attempt"] == {"1": 0.0, "2": 1.0}
    assert summary["attempts_when_solved"] == 2.0
