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
def test_a_bare_yes_or_no_answers_a_question_that_asks_nothing_more(answer: str, want: bool) -> None:
    assert evaluate([{"yes": True}], answer, None)[0] is want
    assert evaluate([{"yes": False}], answer, None)[0] is (not want)


@pytest.mark.parametrize("answer", ["Yes.", "Yes", "Yes, it is.", "Yes. No.", "Yes and no."])
def test_a_bare_yes_does_not_state_the_fact_the_checker_asks_for(answer: str) -> None:
    """Issue 42: "Yes." passed RestBench 89 and 96, whose checkers also ask for the director / the cast."""
    assert not evaluate([{"yes": True}, {"all": ["David Lynch"]}], answer, None)[0]


@pytest.mark.parametrize("answer, want", [
    ("Yes, David Lynch directed both.", True),
    ("David Lynch directed Mulholland Drive and episodes of Twin Peaks season 1.", True),  # the fact, no yes word
    ("No, David Lynch did not.", False),
    ("David Lynch? Maybe.", None),
])
def test_a_yes_no_answer_with_the_fact(answer: str, want: bool | None) -> None:
    ok_yes = evaluate([{"yes": True}, {"all": ["David Lynch"]}], answer, None)[0]
    ok_no = evaluate([{"yes": False}, {"all": ["David Lynch"]}], answer, None)[0]
    assert (ok_yes, ok_no) == {True: (True, False), False: (False, True), None: (False, False)}[want]


# --------------------------------------------------------------------- issue 42: what failed and what passed

DATE = [{"all": ["1983-06-08"]}]
URL = [{"all": ["https://www.hbo.com"]}]
TITLE = [{"all": ["The Dark Knight"]}]


@pytest.mark.parametrize("checker, answer", [
    (DATE, "He was born on June 8th, 1983."), (DATE, "8th June 1983"), (DATE, "Jun 8, 1983"), (DATE, "06/08/1983"),
    (DATE, "Born: Wednesday, June 8, 1983."), (URL, "www.hbo.com"), (URL, "Its homepage is hbo.com."),
    (TITLE, "Dark Knight."), (TITLE, "The answer is The Dark Knight and not anything else."),
    (TITLE, "There is no doubt: The Dark Knight."), (TITLE, "The Dark Knight (checked 2 sources)."),
    ([{"all": [1]}], "Just one."), ([{"all": [21]}], "Twenty-one."),
    ([{"all": ["Don't Look Up"]}], "The film is Don't Look Up."),
    ([{"all": ["No Country for Old Men"]}], "It was No Country for Old Men."),
    ([{"picks": "Avatar: The Way of Water", "over": ["Avatar", "Avatar: The Way of Water"]}],
     "Avatar is rated 7.6, lower than Avatar: The Way of Water."),
])
def test_right_answers_that_used_to_fail(checker: list[dict[str, Any]], answer: str) -> None:
    ok, failures = evaluate(checker, answer, None, query="Which one has the higher rating?")
    assert ok, failures


@pytest.mark.parametrize("checker, answer", [
    (BALE, "Christian Bale, Heath Ledger or Aaron Eckhart"), (BALE, "Was it Christian Bale? No, it was Heath Ledger."),
    (BALE, "Christian Bale is wrong; it is Heath Ledger."), (BALE, "Christian Bale is incorrect, Heath Ledger is."),
    (DATE, ", ".join(f"1983-06-{d:02d}" for d in range(1, 29))), (DATE, "1983-06-07, 1983-06-08 or 1983-06-09"),
    ([{"all": [1983]}], ", ".join(str(y) for y in range(1905, 2026))),
    ([{"all": ["Don't Look Up"]}], "It is not Don't Look Up; it is Titanic."),
    ([{"yes": True}, {"all": ["David Lynch"]}], "Yes."),
])
def test_gaming_answers_that_used_to_pass(checker: list[dict[str, Any]], answer: str) -> None:
    names = ["Christian Bale", "Heath Ledger", "Aaron Eckhart", "Titanic"]
    assert not evaluate(checker, answer, None, candidates=names)[0], answer


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
            assert not outcome.success and "never appeared in a successful tool response" in outcome.reason, task.id
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


def test_restbench_yes_no_questions_89_91_96(restbench_dir: Path) -> None:
    """A bare "Yes." passed 89 and 96, whose checkers also ask for the director and the cast; now the fact
    is needed, and an answer stating the fact with no yes/no word answers by it."""
    async def main() -> None:
        env = RestBenchEnv("tmdb", restbench_dir=restbench_dir, check="answer-only")
        by_index = {t.meta.get("index"): t for t in env.tasks()}
        for index, bare, right, wrong in (
                (89, "Yes.", "David Lynch directed both Mulholland Drive and Twin Peaks Season 1.",
                 "No, David Lynch directed neither."),
                (91, "No.", "Mulholland Drive is not in the top-10 rated list.", "Yes, Mulholland Drive is in the top 10."),
                (96, "Yes", "Yes, Yui Aragaki and Gen Hoshino co-star in it.", "No: Yui Aragaki and Gen Hoshino never met.")):
            task = by_index[index]
            await env.reset(0, task)
            assert not (await env.check(task, bare)).success, index
            assert (await env.check(task, right)).success, index
            assert not (await env.check(task, wrong)).success, index
        await env.aclose()

    run(main())


# ------------------------------------------------------------------------------------------- provenance


def test_an_answer_from_memory_fails_whatever_calls_come_with_it(tmp_path: Path) -> None:
    """Issue 42: one irrelevant successful call on the gold path (a search for "zzzz", an id of 1) made the
    right answer from memory pass. Now every value the answer is credited for must have appeared in a
    successful response: no call, junk calls, and searches that echo the answer back all fail; the solution's
    calls pass."""
    from taskbench.schema import ToolCall

    async def main() -> None:
        env = own_env("tmdb", tmp_path)
        for task in env.tasks():
            await env.reset(0, task)
            answer = await solve(env, task)
            assert (await env.check(task, answer)).success, task.id
            await env.reset(0, task)
            assert not (await env.check(task, answer)).success, task.id
            for op in task.gold_path:
                spec = env.tool(op)
                params = [p for p in spec.http.parameters if p.location == "path"] if spec and spec.http else []
                if params:
                    await env.call(ToolCall(id="j", name=op, arguments={p.name: 1 for p in params}))
            await env.call(ToolCall(id="z", name="GET /search/movie", arguments={"query": "zzzz"}))
            for value in task.answer[0].get("all", []) if isinstance(task.answer[0].get("all"), list) else []:
                if isinstance(value, str):
                    for op in ("GET /search/person", "GET /search/movie", "GET /search/tv", "GET /search/company"):
                        await env.call(ToolCall(id="e", name=op, arguments={"query": value}))
            outcome = await env.check(task, answer)
            assert not outcome.success and "never appeared" in outcome.reason, (task.id, outcome.reason)
        await env.aclose()

    run(main())


def test_calls_from_agent_code_in_the_sandbox_count_as_observed(tmp_path: Path) -> None:
    """Code agents call tools from the sandbox; those calls reach the environment through its ``call``, so
    what they return is observed like any other response."""
    from taskbench.envs.sandbox import Sandbox, sandbox_status

    status = sandbox_status()
    if not status.available:
        pytest.skip(f"no bwrap sandbox here: {status.reason}")

    async def main() -> tuple[bool, bool]:
        env = own_env("tmdb", tmp_path)
        task = next(t for t in env.tasks() if t.id == "tmdb-own-01")
        await env.reset(0, task)
        before = (await env.check(task, "Heath Ledger played the Joker.")).success
        code = ("mid = call_tool('GET /search/movie', query='The Dark Knight')['results'][0]['id']\n"
                "cast = call_tool('GET /movie/{movie_id}/credits', movie_id=mid)['cast']\n"
                "result = [c['name'] for c in cast if c['character'] == 'Joker']")
        async with Sandbox.for_environment(env) as box:
            out = await box.run(code)
        assert out.result == ["Heath Ledger"], out
        after = (await env.check(task, "Heath Ledger played the Joker.")).success
        await env.aclose()
        return before, after

    assert run(main()) == (False, True)


def test_called_counts_only_calls_that_succeeded(tmp_path: Path) -> None:
    """``base.call`` records a call before it is validated; a ``called`` condition counted a call that failed."""
    from taskbench.schema import AgentTask, ToolCall

    async def main() -> tuple[bool, bool]:
        env = own_env("spotify", tmp_path, check="answer-only")  # the condition alone decides
        task = AgentTask(id="vol", query="Set the volume.", gold_path=["PUT /me/player/volume"], env=env.name,
                         meta={"checker": [{"called": ["PUT /me/player/volume"]}]})
        await env.reset(0, task)
        failed = await env.call(ToolCall(id="1", name="PUT /me/player/volume", arguments={}))
        assert failed.error is not None
        first = (await env.check(task, "Done.")).success
        await env.call(ToolCall(id="2", name="PUT /me/player/volume", arguments={"volume_percent": 40}))
        second = (await env.check(task, "Done.")).success
        await env.aclose()
        return first, second

    assert run(main()) == (False, True)
    assert not evaluate([{"called": ["a", "b"]}], "", None, ["b", "a"])[0]


def test_an_unknown_check_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="answer-only"):
        own_env("tmdb", tmp_path, check="lenient")


# ------------------------------------------------------- provenance: right answers the gold teacher saw rejected
# (measured: 7 of 150 generated TMDB tasks failed their own gold solution for these two reasons)


def test_a_file_name_with_a_t_between_digits_is_observed() -> None:
    """A date-time is split at its "T"; a file name is not ("...cev7T7.jpg" was read as "cev7 7 jpg")."""
    from taskbench.envs.restbench.provenance import Observed

    seen = Observed([("GET /tv/latest", {}, {"poster_path": "/f85poKimEXF3kgCp5wiY9CEv7T7.jpg",
                                              "first_air_date": "2022-11-23T10:00:00"})])
    assert seen.shows("/f85poKimEXF3kgCp5wiY9CEv7T7.jpg")
    assert seen.shows("2022-11-23")


def test_a_search_in_the_user_s_words_observes_the_titles_it_returns() -> None:
    from taskbench.envs.restbench.provenance import Observed

    query = "What is the lowest rated movie of The Godfather Part II search?"
    seen = Observed([("GET /search/movie", {"query": "The Godfather Part II"},
                      {"results": [{"title": "The Godfather Part II"}, {"title": "The Godfather Part III"}]})])
    assert seen.shows("The Godfather Part III", query=query)
    # the agent's own words still echo: a search for the answer shows nothing
    knew = Observed([("GET /search/movie", {"query": "The Godfather Part III"},
                      {"results": [{"title": "The Godfather Part III"}]})])
    assert not knew.shows("The Godfather Part III", query=query)
    sixth = Observed([("GET /search/movie", {"query": "Fast & Furious 6"}, {"results": [{"title": "Fast & Furious 6"}]})])
    assert not sixth.shows("Fast & Furious 6", query="List the Fast & Furious movies")
    assert Observed([("GET /search/movie", {"query": "Fast & Furious"}, {"results": [{"title": "Fast & Furious 6"}]})
                     ]).shows("Fast & Furious 6", query="List the Fast & Furious movies")


@pytest.mark.parametrize(("query", "args", "title"), [
    # the answer in the user's words, searched as the agent's own phrase
    ("I'm in the mood for something about love: which Wong Kar-wai film is rated highest?",
     {"query": "In the Mood for Love"}, "In the Mood for Love"),
    # a number argument is the agent's own
    ("Which war movie did Sam Mendes direct most recently?", {"with_keywords": "war", "year": 1917}, "1917"),
    ("Which album did Adele release?", {"q": "Adele", "type": "album", "limit": 30}, "30"),
    # one word of the answer the user did not say is knowledge the agent brought
    ("Which Star Wars movie did Irvin Kershner direct?", {"query": "Star Wars Empire"},
     "Star Wars: The Empire Strikes Back"),
])
def test_a_search_that_carries_the_agent_s_knowledge_observes_nothing(query: str, args: dict[str, Any],
                                                                      title: str) -> None:
    from taskbench.envs.restbench.provenance import Observed

    body = {"results": [{"title": title}]}
    assert not Observed([("GET /search/movie", args, body)]).shows(title, query=query)


def test_the_same_response_reached_with_the_user_s_words_alone_is_observed() -> None:
    from taskbench.envs.restbench.provenance import Observed

    body = {"results": [{"title": "Star Wars: The Empire Strikes Back"}]}
    assert Observed([("GET /search/movie", {"query": "Star Wars"}, body)]).shows(
        "Star Wars: The Empire Strikes Back", query="Which Star Wars movie did Irvin Kershner direct?")
