"""A trajectory holds what the episode did, not facts about the run that wrote it (issue 24, point 5): the same
episode answered live and then from the response cache writes the same model-call events, so a resumed or a
concurrent run writes the trajectory an uninterrupted one writes (wall-clock stamps aside)."""

from __future__ import annotations

import json
from pathlib import Path

from agent_helpers import run_one
from taskbench.llm import get_model

_WALL = {"t", "seconds"}


def _events(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in rec.items() if k not in _WALL} for rec in lines if rec.get("record") == "event"]


def test_cached_rerun_writes_the_same_events(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    runs = []
    for i in range(2):
        model = get_model("mock/echo", cache=str(cache))
        traj, rec, _ = run_one(tmp_path / f"run{i}", "react", {"agent": model}, max_steps=2)
        model.close()
        runs.append((tmp_path / f"run{i}" / rec["trajectory"], model))
    (first, m1), (second, m2) = runs
    assert m1.usage.cached is False and m2.cache_hits == m2.calls > 0  # the second run was answered from cache
    a, b = _events(first), _events(second)
    assert any(e["kind"] == "model_call" for e in a)
    assert a == b
