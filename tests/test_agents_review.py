"""The review agent acts: a named problem makes the automatic protocol revise, the review agent routes its
feedback (as in the paper; in the ``fault-route`` variant the evidence does: a plan error such as a title passed
as an id goes to grounding, a code or extraction error to execution), and every revision, reroute and retry is
counted in the trajectory, the episode record and the metrics.

Real episodes with scripted mock models (see tests/agent_helpers.py), in the real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_helpers import (
    BAD_CODE,
    CREDITS_CODE,
    SEARCH_CODE,
    WRONG_ID_CODE,
    credits_plan,
    finish,
    kinds,
    mock,
    plan,
    prompts,
    run_one,
    sandbox_or_skip,
    search_plan,
    verdict,
)
from taskbench.agents.prompts import parse_verdict


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def test_a_named_problem_is_a_revision_whatever_the_verdict_says() -> None:
    # what 44 of 44 real reviews did: name a problem, then say "accept"
    v, _ = parse_verdict({"problem": "missing_arguments", "feedback": "give the query", "route": "grounding",
                          "verdict": "accept"})
    assert v is not None and not v.accept
    v, _ = parse_verdict({"problem": "none", "feedback": "", "route": "grounding", "verdict": "accept"})
    assert v is not None and v.accept


def test_the_automatic_protocol_revises_a_plan_the_review_faults(tmp_path: Path) -> None:
    vague = plan("GET /search/movie", {}, "the movie")
    g = mock("g", [vague, search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict("accept", problem="missing_arguments", feedback="give the query: The Dark Knight"),
                   verdict(), verdict(), verdict(), verdict(), verdict()])
    traj, rec, result = run_one(tmp_path, "conagents-auto", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:6] == ["grounding", "review", "verdict:plan:revise:grounding", "grounding", "review",
                               "verdict:plan:accept"]
    first = next(e for e in traj.events if e.kind == "review")
    assert first.problem == "missing_arguments" and first.action == "revise_plan"
    assert "give the query" in prompts(traj, "grounding")[1]
    assert rec["success"] and rec["revisions"] == 1 and rec["plans_changed"] == 1 and rec["reroutes"] == 0
    mech = result.metrics["agents"]["conagents-auto"]["mechanism"]
    assert mech["revisions"] == 1 and mech["plans_changed"] == 1 and mech["episodes_acted"] == 1
    assert mech["revise_verdicts"] == 1 and mech["reviews"] == 6
    assert traj.outcome.details["mechanism"]["revisions"] == 1  # in the trajectory's end line too


def test_fault_route_sends_a_title_passed_as_an_id_to_grounding_whatever_the_review_routes(tmp_path: Path) -> None:
    # the real-run failure: the tool answers 404 for a title where an id belongs, the review sends it to the
    # execution agent, which cannot fix a plan; the fault-route variant overrides that
    wrong = plan("GET /movie/{movie_id}/credits", {"movie_id": "The Dark Knight"}, "the Joker's actor")
    g = mock("g", [wrong, search_plan(), credits_plan(), finish()])
    x = mock("x", [WRONG_ID_CODE, SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict("revise", "execution", "tool_error", "fix the call")])
    agent = "conagents-adaptive-fault-route"
    traj, rec, result = run_one(tmp_path, agent, {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:6] == ["grounding", "execution", "code", "review", "verdict:execution:revise:grounding",
                               "grounding"]
    review = next(e for e in traj.events if e.kind == "review")
    assert review.action == "replan" and review.problem == "tool_error"
    assert rec["success"] and rec["reroutes"] == 1 and rec["retries"] == 0
    assert result.metrics["agents"][agent]["mechanism"]["reroutes"] == 1


def test_fault_route_sends_an_extraction_error_to_execution_whatever_the_review_routes(tmp_path: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [BAD_CODE, SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict("revise", "grounding", "wrong_result", "search for another movie")])
    agent = "conagents-adaptive-fault-route"
    traj, rec, result = run_one(tmp_path, agent, {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:6] == ["grounding", "execution", "code", "review", "verdict:execution:revise:execution",
                               "execution"]
    assert next(e for e in traj.events if e.kind == "review").action == "rewrite_code"
    assert rec["success"] and rec["retries"] == 1 and rec["retries_fixed"] == 1 and rec["reroutes"] == 0
    mech = result.metrics["agents"][agent]["mechanism"]
    assert mech["retries"] == 1 and mech["retries_fixed"] == 1 and mech["success_when_acted"] == 1.0


@pytest.mark.parametrize("protocol", ["conagents-adaptive", "conagents-auto-no-plan-review"])
def test_by_default_the_review_agent_routes_a_tool_error_to_execution(tmp_path: Path, protocol: str) -> None:
    # the same 404 as above: the review agent says the code must change, and by default its word stands
    wrong = plan("GET /movie/{movie_id}/credits", {"movie_id": "The Dark Knight"}, "the Joker's actor")
    fixed = ("```python\nm = GET_search_movie(query='The Dark Knight')['results'][0]['id']\n"
             "r = GET_movie_movie_id_credits(movie_id=m)\n"
             "result = [c['name'] for c in r['cast'] if 'Joker' in c['character']]\n```")
    g = mock("g", [wrong, finish()])
    x = mock("x", [WRONG_ID_CODE, fixed])
    accepts = [verdict()] if protocol.startswith("conagents-auto") else []
    r = mock("r", [verdict("revise", "execution", "tool_error", "search the id, then get the credits"), *accepts])
    traj, rec, _ = run_one(tmp_path, protocol, {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:7] == ["grounding", "execution", "code", "review", "verdict:execution:revise:execution",
                               "execution", "code"]
    review = next(e for e in traj.events if e.kind == "review")
    assert review.action == "rewrite_code" and review.route == "execution"
    assert "search the id, then get the credits" in prompts(traj, "execution")[1]
    assert rec["success"] and rec["reroutes"] == 0 and rec["retries"] == 1 and rec["retries_fixed"] == 1


def test_by_default_the_review_agent_routes_an_extraction_error_to_grounding(tmp_path: Path) -> None:
    # the code raised a KeyError, the review agent blames the plan: by default its feedback goes to the next plan
    g = mock("g", [search_plan(), search_plan(), credits_plan(), finish()])
    x = mock("x", [BAD_CODE, SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict("revise", "grounding", "wrong_result", "search for the exact title")])
    traj, rec, _ = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:6] == ["grounding", "execution", "code", "review", "verdict:execution:revise:grounding",
                               "grounding"]
    assert next(e for e in traj.events if e.kind == "review").action == "replan"
    assert "Feedback on your last plan: search for the exact title" in prompts(traj, "grounding")[1]
    assert rec["success"] and rec["reroutes"] == 1 and rec["retries"] == 0


def test_fault_route_is_a_variant_named_like_the_ablations() -> None:
    from taskbench.agents.config import expand_agents, parse_agent

    spec = parse_agent("conagents-auto-fault-route")
    assert spec.fault_route and spec.ablation == "fault-route" and spec.name == "conagents-auto-fault-route"
    assert not parse_agent("conagents-auto").fault_route
    names = [s.name for s in expand_agents(["conagents-adaptive", "react"], ablations=["fault-route"])]
    assert names == ["conagents-adaptive", "conagents-adaptive-fault-route", "react"]


def test_an_episode_where_review_never_acted_counts_nothing(tmp_path: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    traj, rec, result = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x, "review": mock("r", [])})
    assert (rec["revisions"], rec["reroutes"], rec["retries"]) == (0, 0, 0)
    mech = result.metrics["agents"]["conagents-adaptive"]["mechanism"]
    assert mech["episodes_acted"] == 0 and mech["success_when_acted"] is None
