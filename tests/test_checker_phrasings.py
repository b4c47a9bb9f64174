"""Hand-written answers against the RestBench checker (tests/data/checker_phrasings.json).

'correct': right answers in other words, word orders and formats ("June 8th, 1983", "hbo.com", a title without
its article, counts as words, asides such as "There is no doubt: ..." or "(checked 2 sources)", which-one
answers naming the loser first, yes/no answers with the fact and no yes/no word); at least 95% must pass.
'wrong': hedges, lists, negations, dates and numbers around the right one, bare yes/no, the wrong option; none
may pass. Each answer is checked in both modes: ``solved`` after the calls of the task's solution script (so
what the answer states was observed), and ``answer-only`` with no call. Our own tasks are always here; the
RestBench queries need ../shared (skipped when absent).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from taskbench.envs.restbench import RestBenchEnv, solve

DATA = json.loads((Path(__file__).parent / "data" / "checker_phrasings.json").read_text(encoding="utf-8"))
OWN = ("tmdb-own-", "spotify-own-")


def verdicts(items: list[dict[str, str]], restbench_dir: Path) -> list[tuple[dict[str, str], bool, bool]]:
    """(item, passed in solved mode after the solution's calls, passed in answer-only mode with no call)."""

    async def main() -> list[tuple[dict[str, str], bool, bool]]:
        envs: dict[str, tuple[RestBenchEnv, RestBenchEnv]] = {}
        tasks: dict[str, Any] = {}
        for item in items:
            api = item["task"].split("-")[0]
            task_set = "own" if item["task"].startswith(OWN) else "restbench"
            if (api, task_set) not in envs:
                pair = (RestBenchEnv(api, restbench_dir=restbench_dir, task_set=task_set),
                        RestBenchEnv(api, restbench_dir=restbench_dir, task_set=task_set, check="answer-only"))
                envs[(api, task_set)] = pair  # type: ignore[index]
                tasks.update({t.id: (t, pair) for t in pair[0].tasks()})
        out = []
        for item in items:
            task, (solved, loose) = tasks[item["task"]]
            await solved.reset(0, task)
            await solve(solved, task)
            strict = (await solved.check(task, item["answer"])).success
            await loose.reset(0, task)
            out.append((item, strict, (await loose.check(task, item["answer"])).success))
        for pair in envs.values():
            for env in pair:
                await env.aclose()
        return out

    return asyncio.run(main())


def _items(group: str, own: bool) -> list[dict[str, str]]:
    return [x for x in DATA[group] if x["task"].startswith(OWN) == own]


def test_the_file_holds_enough_answers_across_many_tasks() -> None:
    for group in ("correct", "wrong"):
        assert len(DATA[group]) >= 40 and len({x["task"] for x in DATA[group]}) >= 25, group
    assert len(_items("correct", True)) >= 30 and len(_items("wrong", True)) >= 30


def _check(group: str, items: list[dict[str, str]], restbench_dir: Path) -> None:
    results = verdicts(items, restbench_dir)
    if group == "correct":
        failed = [(x["task"], x["answer"], s, a) for x, s, a in results if not (s and a)]
        assert len(failed) <= 0.05 * len(results), f"{len(failed)} of {len(results)} correct answers fail: {failed}"
    else:
        passed = [(x["task"], x["answer"], x["why"], s, a) for x, s, a in results if s or a]
        assert not passed, f"{len(passed)} wrong answers pass: {passed}"


@pytest.mark.parametrize("group", ["correct", "wrong"])
def test_own_tasks(group: str, tmp_path: Path) -> None:
    _check(group, _items(group, True), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("group", ["correct", "wrong"])
def test_restbench_tasks(group: str, shared: Path) -> None:
    restbench_dir = shared / "reference" / "restbench"
    if not (restbench_dir / "tmdb.json").is_file():
        pytest.skip(f"RestBench's files are absent ({restbench_dir})")
    _check(group, _items(group, False), restbench_dir)
