"""ConAgents' control flow under scripted models: the automatic and the adaptive protocol, review triggered and
not, routing to grounding or execution, the alpha and beta limits, the step cap, failed turns, ablations.

Every test runs a real episode: the offline TMDB service on loopback, the agent code in the real bwrap sandbox
(where bwrap is absent, the same scripted code runs with ``unsafe_local=True``, so the control flow is tested
everywhere), and one scripted mock model per role whose script must be used up exactly (the conftest fails a
test that leaves steps unused)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    search_plan,
    verdict,
)
from taskbench.llm.base import ProviderResponse


def test_automatic_protocol_reviews_every_plan_and_execution(tmp_path: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict()] * 5)  # plan 1, execution 1, plan 2, execution 2, the FINISH plan
    traj, rec, result = run_one(tmp_path, "conagents-auto", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj) == [
        "grounding", "review", "verdict:plan:accept", "execution", "code", "review", "verdict:execution:accept",
        "grounding", "review", "verdict:plan:accept", "execution", "code", "review", "verdict:execution:accept",
        "grounding", "review", "verdict:plan:accept", "final",
    ]
    assert rec["success"] and traj.outcome.success and result.complete
    assert rec["calls"] == ["GET /search/movie", "GET /movie/{movie_id}/credits"]
    assert rec["cpr_lcs"] == 1.0 and rec["cpr_contains"] is True and rec["reviews"] == 5
    # the second plan sees the first step's extracted result, not the raw response
    assert "1. GET /search/movie" in prompts(traj, "grounding")[1] and "result: 155" in prompts(traj, "grounding")[1]


def test_planning_review_sends_feedback_to_the_grounding_agent(tmp_path: Path) -> None:
    vague = plan("GET /search/movie", {}, "the movie")
    g = mock("g", [vague, search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict("revise", problem="missing_arguments", feedback="give the query: The Dark Knight"),
                   verdict(), verdict(), verdict(), verdict(), verdict()])
    traj, rec, _ = run_one(tmp_path, "conagents-auto", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:7] == ["grounding", "review", "verdict:plan:revise:grounding", "grounding", "review",
                               "verdict:plan:accept", "execution"]
    revision = prompts(traj, "grounding")[1]
    assert "give the query: The Dark Knight" in revision and "you proposed: GET /search/movie" in revision
    assert rec["success"]


def test_alpha_bounds_the_planning_calibration_turns(tmp_path: Path) -> None:
    # the reviewer never accepts: alpha = 2 verdicts and 2 revisions, then the last plan goes ahead unreviewed
    g = mock("g", [search_plan()] * 3)
    x = mock("x", [SEARCH_CODE])
    r = mock("r", [verdict("revise", feedback="be more specific")] * 2 + [verdict()])
    traj, rec, _ = run_one(tmp_path, "conagents-auto", {"grounding": g, "execution": x, "review": r}, max_steps=1,
                           alpha=2)
    assert kinds(traj) == ["grounding", "review", "verdict:plan:revise:grounding", "grounding", "review",
                           "verdict:plan:revise:grounding", "grounding", "execution", "code", "review",
                           "verdict:execution:accept"]
    assert rec["stop"] == "step_cap" and not rec["answered"] and not rec["success"]
    assert traj.config["alpha"] == 2 and traj.error == "stopped: step_cap"


def test_beta_bounds_the_execution_calibration_turns(tmp_path: Path) -> None:
    g = mock("g", [search_plan()])
    other_bad = BAD_CODE.replace("no_such_key", "still_not_a_key")  # a rewrite that is new code, and fails too
    x = mock("x", [BAD_CODE, other_bad, SEARCH_CODE])  # the first code and beta = 2 rewrites
    r = mock("r", [verdict()] + [verdict("revise", "execution", "faulty_code", "the key is 'results'")] * 2)
    traj, rec, _ = run_one(tmp_path, "conagents-auto", {"grounding": g, "execution": x, "review": r}, max_steps=1,
                           beta=2)
    assert kinds(traj) == ["grounding", "review", "verdict:plan:accept",
                           "execution", "code", "review", "verdict:execution:revise:execution",
                           "execution", "code", "review", "verdict:execution:revise:execution",
                           "execution", "code"]
    runs = [e for e in traj.events if e.kind == "code_run"]
    assert [e.error.type if e.error else None for e in runs] == ["KeyError", "KeyError", None]
    # the rewrite is asked in the same conversation, with the error and the review's feedback
    execution_calls = [e for e in traj.events if e.kind == "model_call" and e.role == "execution"]
    retry = execution_calls[1].messages[-1].content
    assert "KeyError" in retry and "the key is 'results'" in retry
    assert execution_calls[1].messages[-2].content == BAD_CODE  # its own earlier code
    assert rec["code_runs"] == 3 and rec["stop"] == "step_cap"


def test_a_rewrite_that_is_the_same_code_is_not_run_and_goes_to_the_next_plan(tmp_path: Path) -> None:
    # measured on RestBench with the base execution model: 0 of 82 rewrites fixed a run, most repeated the code
    g = mock("g", [search_plan(), search_plan(), credits_plan(), finish()])
    x = mock("x", [BAD_CODE, BAD_CODE, BAD_CODE, SEARCH_CODE, CREDITS_CODE])  # the resample repeats it too
    r = mock("r", [verdict("revise", "execution", "faulty_code", "the key is 'results'")])
    traj, rec, result = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:8] == ["grounding", "execution", "code", "review", "verdict:execution:revise:execution",
                               "execution", "execution", "grounding"]  # not run; the next plan is asked
    assert "wrote the same failing code again" in prompts(traj, "grounding")[1]
    assert rec["code_runs"] == 3 and rec["counters"]["identical_rewrites"] == 1 and rec["success"]
    assert "resampled_rewrites" not in rec["counters"]


def test_a_repeated_rewrite_is_sampled_again_warmer(tmp_path: Path) -> None:
    # a student at temperature 0 wrote its failing code again word for word (December 7, RestBench-TMDB): the
    # same prompt is sampled once more at the retry temperature with its own seed, and that code runs
    from taskbench.agents.config import DEFAULT_RETRY_TEMPERATURE

    seen: list[tuple[float, int | None]] = []
    answers = iter([BAD_CODE, BAD_CODE, SEARCH_CODE, CREDITS_CODE])

    def x_answer(request: Any) -> str:
        seen.append((request.config.temperature, request.config.seed))
        return next(answers)

    g = mock("g", [search_plan(), credits_plan(), finish()])
    r = mock("r", [verdict("revise", "execution", "faulty_code", "the key is 'results'")])
    traj, rec, result = run_one(tmp_path, "conagents-adaptive",
                                {"grounding": g, "execution": mock("x", x_answer), "review": r})  # type: ignore[arg-type]
    assert kinds(traj)[:7] == ["grounding", "execution", "code", "review", "verdict:execution:revise:execution",
                               "execution", "execution"]
    assert [e.error.type if e.error else None for e in traj.events if e.kind == "code_run"] == \
        ["KeyError", None, None]
    assert rec["counters"]["resampled_rewrites"] == 1 and "identical_rewrites" not in rec["counters"]
    assert rec["success"]
    assert seen[0][0] == seen[1][0] == 0.0 and seen[2][0] == DEFAULT_RETRY_TEMPERATURE and seen[2][1] != seen[1][1]
    assert seen[3][0] == 0.0  # the next step is greedy again


def test_a_students_repeated_rewrite_is_resampled_from_the_runs_own_model(tmp_path: Path) -> None:
    # measured: 0 of 23 warm resamples of the execution student (RestBench-TMDB) differed from its failing code;
    # where a role plays a student, the resample comes from the run's model (--model) instead
    g = mock("g", [search_plan(), credits_plan(), finish()])
    student = mock("student", [BAD_CODE, BAD_CODE, CREDITS_CODE])
    base = mock("base", [SEARCH_CODE])
    r = mock("r", [verdict("revise", "execution", "faulty_code", "the key is 'results'")])
    traj, rec, _ = run_one(tmp_path, "conagents-adaptive",
                           {"grounding": g, "execution": student, "review": r, "agent": base})
    calls = [e.model for e in traj.events if e.kind == "model_call" and e.role == "execution"]
    assert calls == ["mock/student", "mock/student", "mock/base", "mock/student"]
    assert rec["counters"]["resampled_rewrites"] == 1 and rec["success"]


def test_execution_review_can_route_to_the_grounding_agent(tmp_path: Path) -> None:
    # the code ran; the review finds the result wrong and blames the step (a code error would go to execution:
    # tests/test_agents_review.py)
    g = mock("g", [search_plan(), search_plan()])
    x = mock("x", [SEARCH_CODE, SEARCH_CODE])
    r = mock("r", [verdict(), verdict("revise", "grounding", "wrong_result", "search by the exact title"),
                   verdict(), verdict()])
    traj, rec, _ = run_one(tmp_path, "conagents-auto", {"grounding": g, "execution": x, "review": r}, max_steps=2)
    assert kinds(traj) == ["grounding", "review", "verdict:plan:accept", "execution", "code", "review",
                           "verdict:execution:revise:grounding",
                           "grounding", "review", "verdict:plan:accept", "execution", "code", "review",
                           "verdict:execution:accept"]
    second = prompts(traj, "grounding")[1]
    assert "Feedback on your last plan: search by the exact title" in second and "result: 155" in second
    assert rec["stop"] == "step_cap" and rec["reroutes"] == 1 and rec["retries"] == 0


def test_adaptive_protocol_reviews_nothing_when_executions_succeed(tmp_path: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [])
    traj, rec, _ = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj) == ["grounding", "execution", "code", "grounding", "execution", "code", "grounding", "final"]
    assert rec["success"] and rec["reviews"] == 0 and rec["turns"] == 5


def test_adaptive_failure_review_routes_to_execution(tmp_path: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [BAD_CODE, SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict("revise", "execution", "faulty_code", "read results[0]['id']")])
    traj, rec, _ = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj) == ["grounding", "execution", "code", "review", "verdict:execution:revise:execution",
                           "execution", "code", "grounding", "execution", "code", "grounding", "final"]
    review_prompt = [e for e in traj.events if e.kind == "model_call" and e.role == "review"][0].messages[-1].content
    assert "The execution failed" in review_prompt and "KeyError" in review_prompt
    assert "read results[0]['id']" in prompts(traj, "execution")[1]
    assert rec["success"]


def test_adaptive_failure_review_routes_to_grounding(tmp_path: Path) -> None:
    # the plan passes a title where an id belongs: the tool answers 404, the review blames the plan (Figure 6)
    wrong = plan("GET /movie/{movie_id}/credits", {"movie_id": "The Dark Knight"}, "the Joker's actor")
    g = mock("g", [wrong, search_plan(), credits_plan(), finish()])
    x = mock("x", [WRONG_ID_CODE, SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict("revise", "grounding", "missing_arguments", "search the movie's id first")])
    traj, rec, _ = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:6] == ["grounding", "execution", "code", "review", "verdict:execution:revise:grounding",
                               "grounding"]
    first_run = next(e for e in traj.events if e.kind == "code_run")
    assert first_run.error is not None and first_run.error.type == "ToolError"
    assert "Feedback on your last plan: search the movie's id first" in prompts(traj, "grounding")[1]
    assert rec["success"] and rec["calls"][0] == "GET /movie/{movie_id}/credits"
    assert rec["cpr_contains"] is True and rec["extra_calls"] == 1


def test_an_accept_of_a_failed_run_is_overruled_and_routed_by_the_error(tmp_path: Path) -> None:
    # adaptive: the code raised KeyError, the reviewer accepts anyway (as a review student trained mostly on
    # accepts did in every failed run of its first RestBench episodes): the code is rewritten
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [BAD_CODE, SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict()])
    traj, rec, result = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x, "review": r})
    assert kinds(traj)[:6] == ["grounding", "execution", "code", "review", "verdict:execution:revise:execution",
                               "execution"]
    event = next(e for e in traj.events if e.kind == "review")
    assert event.overruled and event.problem == "faulty_code" and event.action == "rewrite_code"
    assert "The run failed" in event.feedback and "KeyError" in event.feedback
    assert rec["success"] and result.metrics["agents"]["conagents-adaptive"]["counters"]["review_accepts_overruled"] == 1
    # automatic: a title passed as an id, the tool refuses (404), the reviewer accepts: the plan is sent back
    wrong = plan("GET /movie/{movie_id}/credits", {"movie_id": "The Dark Knight"}, "the Joker's actor")
    g = mock("g2", [wrong, search_plan(), credits_plan(), finish()])
    x = mock("x2", [WRONG_ID_CODE, SEARCH_CODE, CREDITS_CODE])
    r = mock("r2", [verdict()] * 7)
    traj, rec, _ = run_one(tmp_path / "auto", "conagents-auto", {"grounding": g, "execution": x, "review": r})
    reviews = [e for e in traj.events if e.kind == "review"]
    assert [(e.target, e.verdict, e.overruled) for e in reviews[:2]] == [("plan", "accept", False),
                                                                         ("execution", "revise", True)]
    assert reviews[1].problem == "tool_error" and reviews[1].route == "grounding" and reviews[1].action == "replan"
    assert "The run failed" in prompts(traj, "grounding")[1] and rec["success"]
    # a run that worked is the reviewer's to judge: its accept stands
    assert all(not e.overruled for e in reviews[2:])


def test_step_cap_ends_an_episode_without_an_answer(tmp_path: Path) -> None:
    g = mock("g", [search_plan()] * 3)
    x = mock("x", [SEARCH_CODE] * 3)
    traj, rec, result = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x}, max_steps=3)
    assert kinds(traj) == ["grounding", "execution", "code"] * 3
    assert rec["stop"] == "step_cap" and rec["answered"] is False and rec["success"] is False
    assert traj.status == "complete" and traj.answer is None and result.complete  # capped is not a failure
    assert result.metrics["agents"]["conagents-adaptive"]["stops"] == {"step_cap": 1}


def test_a_cut_off_plan_is_a_failed_turn(tmp_path: Path) -> None:
    cut = ProviderResponse('{"thought": "the the the the', 10, 256, "length")
    no_tool = '{"thought": "I am not sure", "action": {}}'  # JSON, but not a plan
    g = mock("g", [cut, no_tool, search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    traj, rec, _ = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x})
    first, second = traj.events[0], traj.events[1]  # read back from the file: the errors were written
    assert first.kind == "model_call" and first.finish_reason == "length" and "cut off" in first.error
    assert second.kind == "model_call" and second.error == "the plan does not fit its schema: tool: Field required"
    assert "could not be used" in prompts(traj, "grounding")[1]
    assert "tool: Field required" in prompts(traj, "grounding")[2]
    assert rec["failed_turns"] == 2 and rec["success"]


def test_compiler_feedback_replaces_the_review_agent(tmp_path: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [BAD_CODE, SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [])
    traj, rec, _ = run_one(tmp_path, "conagents-auto-compiler-feedback", {"grounding": g, "execution": x,
                                                                          "review": r})
    assert "review" not in kinds(traj) and rec["reviews"] == 0
    assert kinds(traj)[:5] == ["grounding", "execution", "code", "execution", "code"]
    assert "KeyError" in prompts(traj, "execution")[1]
    assert rec["agent"] == "conagents-auto-compiler-feedback" and rec["success"]


def test_without_plan_review_only_executions_are_reviewed(tmp_path: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict(), verdict()])
    traj, rec, _ = run_one(tmp_path, "conagents-auto-no-plan-review", {"grounding": g, "execution": x, "review": r})
    assert [k for k in kinds(traj) if k.startswith("verdict")] == ["verdict:execution:accept"] * 2
    assert rec["success"]


def test_without_execution_review_only_plans_are_reviewed(tmp_path: Path) -> None:
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [BAD_CODE, CREDITS_CODE])  # a failed execution is not retried either
    r = mock("r", [verdict()] * 3)
    traj, rec, _ = run_one(tmp_path, "conagents-auto-no-exec-review", {"grounding": g, "execution": x, "review": r})
    assert [k for k in kinds(traj) if k.startswith("verdict")] == ["verdict:plan:accept"] * 3
    assert rec["code_runs"] == 2


def test_a_model_that_fails_for_good_fails_the_episode_and_a_rerun_retries_it(tmp_path: Path) -> None:
    from taskbench.llm import get_model

    broken = get_model("mock/broken", responses=[search_plan()], failures=[400], strict=False)
    traj, rec, result = run_one(tmp_path, "conagents-adaptive", {"agent": broken})
    assert rec["failed"] is True and "HTTP 400" in rec["error"] and traj.status == "failed"
    assert result.failed == 1 and not result.complete
    assert result.metrics["agents"]["conagents-adaptive"]["failed"] == 1
    g = mock("g", [search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    traj, rec, result = run_one(tmp_path, "conagents-adaptive", {"grounding": g, "execution": x})
    assert result.complete and rec["success"] and traj.status == "complete"
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 1  # the failure record was replaced in place


def test_an_internal_error_fails_the_episode_not_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from taskbench.agents.conagents import ConAgents

    async def broken(self: ConAgents, ep: object) -> None:
        raise ValueError("a bug in an agent")

    monkeypatch.setattr(ConAgents, "run", broken)
    traj, rec, result = run_one(tmp_path, "conagents-auto", {"agent": mock("unused", [])})
    assert rec["failed"] is True and rec["error"] == "internal error: ValueError: a bug in an agent"
    assert traj.status == "failed" and result.failed == 1


def test_a_history_that_outgrows_the_context_ends_the_episode_as_a_cap_not_a_crash(tmp_path: Path) -> None:
    """Seen with ReAct on RestBench-TMDB: eight observations made the prompt 8,832 tokens for an 8,192-token
    context, and the episode was recorded as an internal error (a crash, rerun on resume)."""
    from taskbench.errors import ContextLengthError
    from taskbench.llm.providers.mock import tool_calls

    script = [tool_calls(("GET /search/movie", {"query": "The Dark Knight"}))] * 2

    def answer(request: Any) -> Any:
        if script:
            return script.pop()
        raise ContextLengthError("Requested tokens (8832) exceed context window of 8192")

    traj, rec, result = run_one(tmp_path, "react", {"agent": mock("react", answer)})
    assert rec["stop"] == "context_full" and not rec["success"] and not rec.get("failed")
    assert traj.status == "complete" and result.complete and result.failed == 0
    assert result.metrics["agents"]["react"]["stops"] == {"context_full": 1}
    assert traj.error == "stopped: context_full"
