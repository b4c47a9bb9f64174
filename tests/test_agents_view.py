"""What the agents that read tool results in their prompt see: a long result as a structure-aware digest that
keeps every record's identifying fields (a film's composer is in the crew, after 30-odd cast members, far past a
1,500-character cut), and per episode whether the answer was within what the agent saw.

The digest on real responses of the offline TMDB and Spotify services; episodes with scripted models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import kinds, mock, prompts, run_one
from taskbench.envs.restbench import RestBenchEnv
from taskbench.llm.providers.mock import tool_calls

SEARCH, CREDITS = "GET /search/movie", "GET /movie/{movie_id}/credits"
INTERSTELLAR = 157336
COMPOSER = "Hans Zimmer"
ANSWER = "The score of Interstellar is by Hans Zimmer."


@pytest.fixture(scope="module")
def tmdb() -> Any:
    env = RestBenchEnv("tmdb", task_set="own")
    yield env
    import asyncio

    asyncio.run(env.aclose())


def test_a_long_result_keeps_every_records_identifying_fields(tmdb: Any) -> None:
    from taskbench.agents.observe import VIEW_FACTOR, observation

    credits = tmdb.api_call(CREDITS, {"movie_id": INTERSTELLAR})
    raw = json.dumps(credits, ensure_ascii=False)
    assert len(raw) > 15_000 and COMPOSER not in raw[:1500]  # what the old cut showed
    view = observation(credits, 1500)
    assert len(view) <= VIEW_FACTOR * 1500 + 200 and view.startswith("[a long result")
    digest = json.loads(view.split("\n", 1)[1])
    shown_rows = 0
    for part in ("cast", "crew"):  # every record by name, as far as 4 x the budget holds (111 here: nearly all)
        table = digest[part]
        shown = len(table["rows"])
        shown_rows += shown
        assert table["count"] == len(credits[part]) == shown + table.get("more", 0)
        names = [row[table["fields"].index("name")] for row in table["rows"]]
        assert names == [p["name"] for p in credits[part]][:shown]  # the first rows of each list, in order
        if "original_name" in credits[part][0]:  # the bundled data's copy of every name: shown once, and said
            assert "original_name" not in table["fields"] and table["same_as"] == {"original_name": "name"}
    assert shown_rows >= 0.9 * (len(credits["cast"]) + len(credits["crew"]))
    crew = digest["crew"]
    composer = next(r for r in crew["rows"] if r[crew["fields"].index("name")] == COMPOSER)
    assert composer[crew["fields"].index("job")] == "Original Music Composer"
    assert "credit_id" in crew["not_shown"] and "profile_path" in crew["not_shown"]
    # a result that fits is shown as it is; text that is not JSON is cut, saying so
    search = tmdb.api_call(SEARCH, {"query": "Interstellar"})
    assert observation(search, 100_000) == json.dumps(search, ensure_ascii=False)
    assert observation("x" * 3000, 1500).endswith("[1500 more characters cut]")


def test_rows_are_cut_evenly_when_even_the_identifying_fields_do_not_fit() -> None:
    from taskbench.agents.observe import observation

    people = [{"id": i, "name": f"Person {i}", "character": f"Part {i}", "bio": "x" * 500} for i in range(400)]
    crew = [{"id": 10_000 + i, "name": f"Crew {i}", "job": "Grip", "bio": "y" * 500} for i in range(5)]
    view = observation({"cast": people, "crew": crew}, 1000)
    digest = json.loads(view.split("\n", 1)[1])
    assert len(view) <= 4000 and "rows cut evenly" in view
    assert len(digest["crew"]["rows"]) == 5 and "more" not in digest["crew"]  # the small list whole
    assert 0 < len(digest["cast"]["rows"]) < 400 and digest["cast"]["more"] == 400 - len(digest["cast"]["rows"])
    assert digest["cast"]["fields"] == ["id", "name", "character"] and digest["cast"]["not_shown"] == ["bio"]


def test_a_column_that_repeats_another_is_shown_once_and_one_that_differs_anywhere_is_kept() -> None:
    from taskbench.agents.observe import observation

    same = [{"id": i, "name": f"Person {i}", "original_name": f"Person {i}", "bio": "x" * 300} for i in range(60)]
    digest = json.loads(observation({"cast": same}, 1000).split("\n", 1)[1])
    assert digest["cast"]["fields"] == ["id", "name"] and digest["cast"]["same_as"] == {"original_name": "name"}
    assert "original_name" not in digest["cast"]["not_shown"]
    differ = [dict(p) for p in same]
    differ[7]["original_name"] = "\u30da\u30eb\u30bd\u30ca 7"  # one record with its own original name: a column of its own
    digest = json.loads(observation({"cast": differ}, 1000).split("\n", 1)[1])
    assert "original_name" in digest["cast"]["fields"] and "same_as" not in digest["cast"]


def test_nested_objects_and_lists_of_records_stay_visible() -> None:
    from taskbench.agents.observe import observation

    env = RestBenchEnv("spotify", task_set="own")
    try:
        env.backend.reset_session("view-test", None)
        albums = env.api_call("GET /me/albums", {}, "view-test")
        playlists = env.api_call("GET /me/playlists", {}, "view-test")
    finally:
        import asyncio

        asyncio.run(env.aclose())
    view = observation(albums, 1500)
    for item in albums["items"]:
        assert item["album"]["name"] in view  # a record's nested object, flattened (album.name)
    view = observation(playlists, 1500)
    assert '"tracks.total"' in view  # how many songs a playlist has


def _credits_script(final: str) -> list[Any]:
    return [tool_calls((SEARCH, {"query": "Interstellar"})), tool_calls((CREDITS, {"movie_id": INTERSTELLAR})),
            tool_calls(("final_answer", {"answer": final}))]


@pytest.mark.parametrize("agent", ["react", "dfsdt"])
def test_a_native_call_agent_sees_the_composer_and_the_record_says_so(tmp_path: Path, agent: str) -> None:
    traj, rec, result = run_one(tmp_path, agent, {"agent": mock(agent, _credits_script(ANSWER))}, task="tmdb-own-04")
    last = [e for e in traj.events if e.kind == "model_call"][-1]
    observed = [m.content for m in last.messages if m.role == "tool"]
    assert COMPOSER not in observed[0] and COMPOSER in observed[1]  # the search has no composer; the credits do
    assert rec["success"] and rec["answer_in_view"] is True and rec["answer_in_results"] is True
    view = traj.outcome.details["view"]
    assert view["results"] == 2 and view["cut"] == 1 and view["shown_chars"] < view["full_chars"]
    summary = result.metrics["agents"][agent]["view"]
    assert summary == {"answer_in_results": 1, "answer_in_view": 1, "answer_in_view_rate": 1.0}


def test_alpha_umi_sees_the_composer(tmp_path: Path) -> None:
    planner = mock("planner", [json.dumps({"rationale": r, "next": n}) for r, n in
                               (("find the id", "caller"), ("get the crew", "caller"), ("done", "summarizer"))])
    caller = mock("caller", _credits_script(ANSWER)[:2])
    summarizer = mock("summarizer", [ANSWER])
    traj, rec, _ = run_one(tmp_path, "alpha-umi", {"planner": planner, "caller": caller, "summarizer": summarizer},
                           task="tmdb-own-04")
    assert kinds(traj)[-2:] == ["summarizer", "final"]
    assert COMPOSER in prompts(traj, "summarizer")[0]
    assert rec["success"] and rec["answer_in_view"] is True


def test_an_episode_that_never_fetched_the_answer_says_so(tmp_path: Path) -> None:
    script = [tool_calls((SEARCH, {"query": "Interstellar"})), tool_calls(("final_answer", {"answer": ANSWER}))]
    _, rec, result = run_one(tmp_path, "react", {"agent": mock("react", script)}, task="tmdb-own-04")
    assert rec["answer_in_view"] is False and rec["answer_in_results"] is False
    assert result.metrics["agents"]["react"]["view"]["answer_in_view_rate"] is None
