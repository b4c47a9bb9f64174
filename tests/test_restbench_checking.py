"""The RestBench success checker under attack: answers that must not pass, and correct answers that must.

Success means the task was solved: the answer is bounded, states its value(s) without a list of every
candidate, a negated mention ("it is not X") is no mention, "8.5" is not 8, and in the default mode
(``check="solved"``) a call on the task's gold path must have succeeded. ``check="answer-only"`` is the
RestBench-compatible mode (the answer alone decides).
"""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from taskbench.envs.restbench import RestBenchEnv, solve
from taskbench.envs.restbench.checking import evaluate
from taskbench.errors import ConfigError


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def fixture_names(api: str) -> list[str]:
    """Every name and title in the offline fixtures (read here, independently of the checker)."""
    folder = resources.files("taskbench.envs.restbench").joinpath("data").joinpath(api)
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k in ("name", "title") and isinstance(v, str):
                    out.append(v)
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for item in folder.iterdir():
        if item.name.endswith(".json"):
            walk(json.loads(item.read_text(encoding="utf-8")))
    return list(dict.fromkeys(out))


def everything_answer(api: str) -> str:
    """The attack of issue 20: every name in the fixtures, plus the numbers 0-199."""
    return ", ".join(fixture_names(api)) + ". " + ", ".join(str(i) for i in range(200)) + "."


# ------------------------------------------------------------------------------------------- pure checks

BALE = [{"all": ["Christian Bale"]}]
EIGHT = [{"all": [8]}]


@pytest.mark.parametrize("answer", [
    "It is not Christian Bale; it is Heath Ledger.",
    "Heath Ledger, not Christian Bale.",
    "The lead actor isn't Christian Bale.",
])
def test_a_negated_mention_is_no_mention(answer: str) -> None:
    assert not evaluate(BALE, answer, None)[0]


@pytest.mark.parametrize("answer", ["She directed 8.5 films.", "between 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 movies",
                                    "She directed 18 films.", "8 or 9 films", "7, 8 or 9."])
def test_a_count_is_one_number(answer: str) -> None:
    assert not evaluate(EIGHT, answer, None)[0]


@pytest.mark.parametrize("answer", ["Sofia Coppola has directed 8 movies.", "Eight.",
                                    "She directed 8 films between 1999 and 2023.", "8"])
def test_a_stated_count_passes(answer: str) -> None:
    assert evaluate(EIGHT, answer, None)[0], answer


def test_the_gold_buried_in_noise_fails() -> None:
    noise = " ".join(["the film was released and many people watched it in cinemas"] * 40)
    ok, failures = evaluate(BALE, f"{noise} Christian Bale {noise}", None)
    assert not ok and any("long" in f for f in failures)


def test_every_candidate_listed_fails() -> None:
    names = fixture_names("tmdb")
    assert "Christian Bale" in names and len(names) > 50
    assert not evaluate(BALE, ", ".join(names), None, candidates=names)[0]  # every candidate
    # a short list: within the length bound, and still a hedge, not an answer
    people = [n for n in names if len(n.split()) == 2 and n != "Christian Bale"][:5]
    listing = ", ".join(people + ["Christian Bale"])
    ok, failures = evaluate(BALE, listing, None, candidates=names)
    assert len(listing) < 300 and not ok and any("candidates" in f for f in failures), failures
    # one name beside the answer is a sentence, not a list
    assert evaluate(BALE, "Christian Bale, opposite Heath Ledger.", None, candidates=names)[0]


@pytest.mark.parametrize("answer, want", [("Yes.", True), ("Yes", True), ("No.", False), ("no", False)])
def test_a_bare_yes_or_no_answers_a_yes_no_question(answer: str, want: bool) -> None:
    checker = [{"yes": True}, {"all": ["David Lynch"]}]
    assert evaluate(checker, answer, None)[0] is want
    assert evaluate([{"yes": False}, {"all": ["Mulholland Drive"]}], answer, None)[0] is (not want)


# ------------------------------------------------------------------------------------------- environments


def own_env(api: str, tmp_path: Path, **options: Any) -> RestBenchEnv:
    return RestBenchEnv(api, restbench_dir=tmp_path, task_set="own", **options)


@pytest.fixture(scope="module")
def restbench_dir(shared: Path) -> Path:
    path = shared / "reference" / "restbench"
    if not (path / "tmdb.json").is_file():
        pytest.skip(f"RestBench's files are absent ({path})")
    return path


async def passed_without_calls(env: RestBenchEnv, answer: str) -> list[str]:
    out = []
    for task in env.tasks():
        await env.reset(0, task)
        if (await env.check(task, answer)).success:
            out.append(task.id)
    return out


@pytest.mark.parametrize("api", ["tmdb", "spotify"])
def test_the_everything_answer_passes_no_bundled_task(api: str, tmp_path: Path) -> None:
    async def main() -> None:
        for mode in ("solved", "answer-only"):
            env = own_env(api, tmp_path, check=mode)
            assert await passed_without_calls(env, everything_answer(api)) == [], mode
            await env.aclose()

    run(main())


def test_the_everything_answer_passes_no_restbench_task(restbench_dir: Path) -> None:
    async def main() -> None:
        for api in ("tmdb", "spotify"):
            env = RestBenchEnv(api, restbench_dir=restbench_dir, check="answer-only")
            assert await passed_without_calls(env, everything_answer(api)) == [], api
            await env.aclose()

    run(main())


def test_the_right_answer_without_a_call_passes_only_answer_only(tmp_path: Path) -> None:
    async def main() -> None:
        solved, answer_only = own_env("tmdb", tmp_path), own_env("tmdb", tmp_path, check="answer-only")
        for task in solved.tasks()[:6]:
            await solved.reset(0, task)
            answer = await solve(solved, task)  # what the solution says, then the same answer with no call
            assert (await solved.check(task, answer)).success, task.id
            await solved.reset(0, task)
            outcome = await solved.check(task, answer)
            assert not outcome.success and "gold path" in outcome.reason, task.id
            await answer_only.reset(0, task)
            assert (await answer_only.check(task, answer)).success, task.id
        await solved.aclose()
        await answer_only.aclose()

    run(main())


def test_a_failed_call_on_the_gold_path_is_no_solution(tmp_path: Path) -> None:
    async def main() -> None:
        from taskbench.schema import ToolCall

        env = own_env("tmdb", tmp_path)
        task = env.tasks()[0]
        await env.reset(0, task)
        answer = await solve(env, task)
        await env.reset(0, task)
        tool = task.gold_path[-1]
        result = await env.call(ToolCall(id="c", name=tool, arguments={}))
        assert result.error is not None
        assert not (await env.check(task, answer)).success
        await env.aclose()

    run(main())


def test_bare_yes_no_answers_pass_restbench_89_91_96(restbench_dir: Path) -> None:
    async def main() -> None:
        env = RestBenchEnv("tmdb", restbench_dir=restbench_dir, check="answer-only")
        by_index = {t.meta.get("index"): t for t in env.tasks()}
        for index, answer in ((89, "Yes."), (91, "No."), (96, "Yes")):
            task = by_index[index]
            await env.reset(0, task)
            want = "No." if answer.startswith("Yes") else "Yes."
            assert (await env.check(task, answer)).success, index
            assert not (await env.check(task, want)).success, index
        await env.aclose()

    run(main())


def test_an_unknown_check_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="answer-only"):
        own_env("tmdb", tmp_path, check="lenient")
