"""Agent metrics on hand-made trajectories and rows: the path rates under both definitions, extra calls,
pass^k, bootstrap CIs, the paired comparison and the metrics document."""

from __future__ import annotations

import pytest

from taskbench.agents.metrics import (
    EpisodeRow,
    agent_summary,
    contains_path,
    correct_path_lcs,
    episode_row,
    extra_calls,
    lcs_length,
    metrics_document,
    paired,
    pass_hat_k,
)
from taskbench.schema import (
    AssistantMessage,
    CheckResult,
    CodeRunEvent,
    FinalAnswerEvent,
    ModelCallEvent,
    ReviewEvent,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    Trajectory,
    Usage,
)

A, B, C = "GET /search/person", "GET /person/{person_id}/movie_credits", "GET /movie/{movie_id}"


def test_lcs_and_the_two_correct_path_definitions() -> None:
    assert lcs_length([A, C, B], [A, B]) == 2 and lcs_length([], [A]) == 0
    # ConAgents' code: LCS over gold + finish; the calls get finish when the episode answered
    assert correct_path_lcs([A, B], [A, B], answered=True) == 1.0
    assert correct_path_lcs([A, B], [A, B], answered=False) == pytest.approx(2 / 3)
    assert correct_path_lcs([B, A], [A, B], answered=True) == pytest.approx(2 / 3)
    assert correct_path_lcs([], [A, B], answered=True) == pytest.approx(1 / 3)
    assert correct_path_lcs(["get /search/PERSON"], [A], answered=False) == pytest.approx(1 / 2)  # case-blind
    assert correct_path_lcs([A], [], answered=True) is None
    # RestGPT: the gold path is a subsequence of the calls
    assert contains_path([A, C, B], [A, B]) is True
    assert contains_path([B, A], [A, B]) is False
    assert contains_path([A, A, B], [A, A, B]) is True and contains_path([A, B], [A, A, B]) is False
    assert contains_path([A], []) is None
    assert extra_calls([A, C, B], [A, B]) == 1 and extra_calls([A], [A, B]) == 0


def _traj(calls_by: str = "code", success: bool = True, answer: str | None = "8") -> Trajectory:
    traj = Trajectory(id="t1", task="how many films", agent="conagents-auto", seed=2, gold_path=[A, B])
    usage = Usage(prompt_tokens=100, completion_tokens=20, seconds=1.5)
    traj.add(ModelCallEvent(role="grounding", model="m", usage=usage, latency=1.5,
                            output=AssistantMessage(content="{}")))
    traj.add(ModelCallEvent(role="review", model="m", usage=Usage(prompt_tokens=50, completion_tokens=10),
                            latency=0.5, error="the answer was cut off at the token limit (144 tokens)"))
    traj.add(ReviewEvent(target="plan", verdict="accept"))
    if calls_by == "code":
        traj.add(ModelCallEvent(role="execution", model="m", usage=usage, latency=2.0))
        traj.add(CodeRunEvent(code="x", tool_calls=[A, C]))
        traj.add(CodeRunEvent(code="y", tool_calls=[B]))
    else:
        for name in (A, C, B):
            traj.add(ToolCallEvent(call=ToolCall(id="1", name=name), result=ToolResult(call_id="1", name=name)))
    if answer is not None:
        traj.add(FinalAnswerEvent(role="grounding", answer=answer))
    traj.answer = answer
    traj.outcome = CheckResult(success=success, reason="solved" if success else "wrong")
    traj.totals = traj.compute_totals(12.5)
    return traj


@pytest.mark.parametrize("calls_by", ["code", "tools"])
def test_episode_row_from_a_trajectory(calls_by: str) -> None:
    row = episode_row(_traj(calls_by), stop="answer")
    assert row.calls == [A, C, B] and row.gold_path == [A, B]
    assert row.success and row.answered and row.stop == "answer" and row.seed == 2
    assert row.cpr_lcs == 1.0 and row.cpr_contains is True and row.extra_calls == 1
    assert row.tool_calls == 3 and row.reviews == 1 and row.failed_turns == 1
    if calls_by == "code":
        assert row.turns == 2 and row.model_calls == 3 and row.code_runs == 2  # reviews are not turns
        assert (row.prompt_tokens, row.completion_tokens, row.model_seconds) == (250, 50, 4.0)
    else:
        assert row.turns == 1 and row.code_runs == 0
    assert row.wall_seconds == 12.5


def test_episode_row_without_an_answer() -> None:
    row = episode_row(_traj(success=False, answer=None), stop="step_cap")
    assert not row.answered and row.stop == "step_cap" and row.cpr_lcs == pytest.approx(2 / 3)


def test_pass_hat_k_follows_tau_bench() -> None:
    # per task C(c, k) / C(n, k), averaged: task 1 solved 2 of 4, task 2 4 of 4, task 3 0 of 4
    trials = [(4, 2), (4, 4), (4, 0)]
    assert pass_hat_k(trials, 1) == pytest.approx((0.5 + 1 + 0) / 3)
    assert pass_hat_k(trials, 2) == pytest.approx((1 / 6 + 1 + 0) / 3)
    assert pass_hat_k(trials, 4) == pytest.approx(1 / 3)
    assert pass_hat_k(trials, 5) is None
    assert pass_hat_k([(1, 1), (3, 1)], 2) == pytest.approx(0.0)  # the 1-trial task does not count for k=2


def _row(agent: str, task: str, seed: int, success: bool, tokens: int = 100, calls: int = 2) -> EpisodeRow:
    gold = [A, B]
    made = ([A, B] + [C] * max(0, calls - 2))[:calls]
    return EpisodeRow(agent=agent, task=task, seed=seed, success=success, answered=True, calls=made, gold_path=gold,
                      cpr_lcs=correct_path_lcs(made, gold, answered=True), cpr_contains=contains_path(made, gold),
                      extra_calls=extra_calls(made, gold), turns=3, model_calls=4, prompt_tokens=tokens,
                      completion_tokens=0, wall_seconds=1.0)


def test_agent_summary_means_ratios_and_cis() -> None:
    rows = [_row("a", "t1", 0, True, 100, 3), _row("a", "t1", 1, False, 300, 1), _row("a", "t2", 0, True, 200),
            _row("a", "t2", 1, True, 200)]
    s = agent_summary(rows, ["t1", "t2"], seeds=2, n_boot=200, seed=1)
    assert s["episodes"] == 4 and s["tasks"] == 2 and s["successes"] == 3
    assert s["success_rate"] == 0.75
    assert s["extra_calls"] == pytest.approx(1 / 3)  # on successes only: 1, 0, 0
    assert s["tokens"] == 200 and s["tokens_per_solved"] == pytest.approx(800 / 3)
    assert s["correct_path_contains"] == 0.75
    assert s["pass_hat_k"] == {"1": 0.75, "2": 0.5}
    lo, hi = s["ci95"]["success_rate"]
    assert 0.5 <= lo <= 0.75 <= hi <= 1.0  # tasks are resampled, so the CI lies between the per-task rates
    assert s["stops"] == {"answer": 4}
    # the same rows in another order give the same figures
    assert agent_summary(list(reversed(rows)), ["t1", "t2"], seeds=2, n_boot=200, seed=1) == s


def test_a_metric_with_nothing_to_average_is_none() -> None:
    s = agent_summary([_row("a", "t1", 0, False)], ["t1"], n_boot=50)
    assert s["success_rate"] == 0.0 and s["tokens_per_solved"] is None and s["extra_calls"] is None


def test_paired_comparison() -> None:
    tasks = [f"t{i}" for i in range(12)]
    a = [_row("a", t, 0, True) for t in tasks]
    b = [_row("b", t, 0, i < 3) for i, t in enumerate(tasks)]
    result = {m["metric"]: m for m in paired(a, b, tasks, n_boot=500, seed=0)}
    s = result["success_rate"]
    assert s["a"] == 1.0 and s["b"] == 0.25 and s["diff"] == 0.75 and s["tasks"] == 12
    assert s["ci95"][0] > 0 and s["p_value"] < 0.01
    same = {m["metric"]: m for m in paired(a, a, tasks, n_boot=200)}
    assert same["success_rate"]["diff"] == 0 and same["success_rate"]["p_value"] == 1.0


def test_metrics_document() -> None:
    from taskbench.agents.metrics import crash_row

    rows = {"conagents-auto": [_row("conagents-auto", "t1", 0, True), _row("conagents-auto", "t2", 0, False)],
            "react": [_row("react", "t1", 0, False), crash_row("react", "t2", 0, [A, B], "boom")],
            "conagents-auto-a1b1": [_row("conagents-auto-a1b1", "t1", 0, False)]}
    doc = metrics_document(rows, ["t1", "t2"], n_boot=100, meta={"env": "e"})
    assert doc["env"] == "e" and doc["tasks"] == 2
    assert [r["agent"] for r in doc["comparison"]] == ["conagents-auto", "react", "conagents-auto-a1b1"]
    react = doc["agents"]["react"]
    assert react["crashed"] == react["failed"] == 1 and react["episodes"] == 2 and react["success_rate"] == 0.0
    pair = next(p for p in doc["paired"] if p["a"] == "conagents-auto" and p["b"] == "react")
    assert pair["metrics"][0]["tasks"] == 2  # a crash is a failure: the pair compares on both tasks
    pair = next(p for p in doc["paired"] if p["a"] == "conagents-auto" and p["b"] == "conagents-auto-a1b1")
    assert pair["metrics"][0]["tasks"] == 1  # the variant ran t1 only: the pair compares on t1
    per_task = {(r["task"], r["agent"]): r for r in doc["per_task"]}
    assert per_task[("t1", "conagents-auto")]["successes"] == 1
    sweep = {s["agent"]: (s["alpha"], s["beta"]) for s in doc["turns_sweep"]}
    assert sweep == {"conagents-auto": (3, 3), "conagents-auto-a1b1": (1, 1)}


def test_the_three_path_rates_are_reported_side_by_side_and_named() -> None:
    from taskbench.agents.metrics import correct_path_f1, metrics_document
    from taskbench.report.agents import comparison_markdown

    # calls [B, A, C] against gold [A, B]: F1 = 2*(2/3)*(1)/(5/3) = 0.8, LCS = 2/3 (B..finish or A..finish), not
    # contained (order)
    made, gold = [B, A, C], [A, B]
    assert correct_path_f1(made, gold) == pytest.approx(0.8)
    assert correct_path_lcs(made, gold, answered=True) == pytest.approx(2 / 3)
    assert contains_path(made, gold) is False
    assert correct_path_f1([], gold) == 0.0 and correct_path_f1(made, []) is None
    row = EpisodeRow(agent="a", task="t", success=True, answered=True, calls=made, gold_path=gold,
                     cpr_lcs=correct_path_lcs(made, gold, answered=True), cpr_contains=False,
                     cpr_f1=correct_path_f1(made, gold))
    doc = metrics_document({"a": [row]}, ["t"], n_boot=0)
    s = doc["agents"]["a"]
    assert (s["correct_path_f1"], s["correct_path_contains"]) == (0.8, 0.0)
    assert s["correct_path_lcs"] == pytest.approx(2 / 3, abs=1e-6)
    assert set(doc["path_rates"]) == {"correct_path_f1", "correct_path_lcs", "correct_path_contains"}
    table = comparison_markdown(doc)
    assert "path F1 (paper) %" in table and "path LCS (authors' code) %" in table
    assert "path contained (RestBench) %" in table
    assert "| 80.0 | 66.7 | 0.0 |" in table
