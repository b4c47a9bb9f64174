"""The adversarial battery of benchmarks/bench_checker.py as a test: no strategy passes a task, in either check
mode, and the oracle (the solution's calls and answer) passes every one.

The strategies: every value of one kind of the data (each kind in turn, and in lower case), every year, the
dates and numbers around the right one, the gold hedged with others, negations a clause splitter misses, the
query copied back, a bare yes/no, the gold buried in noise, another task's answer, both options of a which-one
question and the wrong one, bullets of candidates, no answer; and in the ``solved`` mode the right answer from
memory (no call, a junk call, a search that echoes it back) and, on Spotify, the asked action done to every
item. One row may pass and is not asserted: the gold path called with other ids, which passes where another
record shows the same value (the search result holding Memento's release year, the sequel with the same three
leads) - values the episode did observe.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_checker", ROOT / "benchmarks" / "bench_checker.py")
assert _spec is not None and _spec.loader is not None
bench: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

OBSERVED_ELSEWHERE = "memory: the gold path with ids + 1 (*)"


def _assert_nothing_passes(result: dict[str, Any]) -> None:
    rows = result["rows"]
    assert rows["oracle: the solution's calls and answer"]["solved"] == result["tasks"]
    assert rows["oracle: the solution's calls and answer"]["answer-only"] == result["tasks"]
    passed = {name: (row["answer-only"], row["solved"], row["examples"][:3]) for name, row in rows.items()
              if not name.startswith("oracle") and name != OBSERVED_ELSEWHERE
              and ((row["answer-only"] or 0) or row["solved"])}
    assert not passed, f"{result['api']} {result['task_set']}: strategies that pass: {passed}"
    applied = sum(1 for name, row in rows.items() if row["tasks"] and not name.startswith("oracle"))
    assert applied >= 20, "the battery must run (strategies that apply to no task test nothing)"


@pytest.mark.slow
@pytest.mark.parametrize("api", ["tmdb", "spotify"])
def test_no_strategy_passes_an_own_task(api: str) -> None:
    _assert_nothing_passes(asyncio.run(bench.run_set(api, "own", None, set())))


@pytest.mark.slow
@pytest.mark.parametrize("api", ["tmdb", "spotify"])
def test_no_strategy_passes_a_restbench_task(api: str, shared: Path) -> None:
    restbench_dir = shared / "reference" / "restbench"
    if not (restbench_dir / f"{api}.json").is_file():
        pytest.skip(f"RestBench's files are absent ({restbench_dir})")
    _assert_nothing_passes(asyncio.run(bench.run_set(api, "restbench", restbench_dir, set())))
