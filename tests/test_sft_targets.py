"""SPAN export keeps only plans that worked (issue 42, point 8): a grounding plan is a training target only when
the call it led to succeeded and used the plan's own values, whatever agent wrote it (the ablations have no
review to blame a plan); and the documentation-word rule of the selection counts the same words on both paths
(teacher runs, ``export-sft --select``; gold trajectories, ``span-data``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_helpers import (
    CREDITS_CODE,
    SEARCH,
    SEARCH_CODE,
    WRONG_ID_CODE,
    finish,
    mock,
    no_sandbox_here,
    plan,
    run_one,
    verdict,
)
from taskbench.agents.sft import export_sft, kept_turns
from taskbench.schema import (
    AssistantMessage,
    CodeRunEvent,
    CodeToolCall,
    ModelCallEvent,
    ToolSpec,
    Trajectory,
)

CREDITS = "GET /movie/{movie_id}/credits"


def _plans(out: Path) -> list[dict]:
    return [json.loads(json.loads(x)["messages"][-1]["content"])["action"]
            for x in (out / "grounding.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("agent", ["conagents-auto-compiler-feedback", "conagents-auto-no-exec-review"])
def test_faulty_plans_of_an_ablation_are_not_targets(agent: str, tmp_path: Path) -> None:
    """An argument-less plan (the code found the query itself) and a wrong-id plan (the title as the id: the
    call failed; with compiler feedback the code then called with another id) in a solved episode of an agent
    without a review that could blame them: neither is a grounding target; the plans that worked are."""
    compiler = agent.endswith("compiler-feedback")
    plans = [plan(SEARCH, {}, "the movie id"), plan(CREDITS, {"movie_id": "The Dark Knight"}, "the actor")]
    if not compiler:  # nothing retries the failed call: the next plan gets it right
        plans.append(plan(CREDITS, {"movie_id": "155"}, "the actor"))
    g = mock("g", [*plans, finish()])
    x = mock("x", [SEARCH_CODE, WRONG_ID_CODE, CREDITS_CODE])
    models = {"grounding": g, "execution": x}
    if not compiler:  # the plan review (no-exec-review keeps it) accepts each of the four plans
        models["review"] = mock("r", [verdict()] * 4)
    traj, rec, _ = run_one(tmp_path / "run", agent, models)
    assert rec.get("success"), rec  # the episode is solved, so its turns are candidates
    runs = [e for e in traj.events if isinstance(e, CodeRunEvent)]
    assert runs[0].calls and runs[0].calls[0].arguments == {"query": "The Dark Knight"}  # calls are recorded
    assert runs[0].calls[0].error is None and runs[1].calls[0].error  # the wrong id: the tool said no
    summary = export_sft([tmp_path / "run"], tmp_path / "sft")
    kept = [(p["tool"], {a["name"]: a["value"] for a in p.get("arguments", [])}) for p in _plans(tmp_path / "sft")]
    assert kept == ([] if compiler else [(CREDITS, {"movie_id": "155"})]) + [("FINISH", {})], kept
    dropped = summary.dropped_turns
    if compiler:
        assert dropped["grounding: the call did not use the plan's values"] == 2, dropped
    else:
        assert dropped["grounding: the call did not use the plan's values"] == 1, dropped
        assert dropped["grounding: the call it led to failed"] == 1, dropped
        # the plan review accepted all four plans: its accepts of the two that did not work are wrong labels
        assert dropped["review: accepted a plan that did not work"] == 2, dropped
        assert summary.examples["review"] == 2


def _call(role: str, text: str) -> ModelCallEvent:
    return ModelCallEvent(role=role, output=AssistantMessage(content=text))


def _traj(*events: object) -> Trajectory:
    traj = Trajectory(id="t", task="q", agent="conagents-auto-no-plan-review",
                      tools=[ToolSpec(name=CREDITS, parameters={"type": "object", "properties": {
                          "movie_id": {"type": "integer"}, "language": {"type": "string"}},
                          "required": ["movie_id"]})])
    for e in events:
        traj.add(e)
    return traj


def _grounding_kept(traj: Trajectory) -> list[int]:
    return [e.index for e in kept_turns(traj) if e.role == "grounding"]


def test_plan_target_rule_on_recorded_calls() -> None:
    good = plan(CREDITS, {"movie_id": "155"})
    ok = CodeToolCall(name=CREDITS, arguments={"movie_id": 155, "language": "en"})  # an optional argument added
    cases = {
        "used": (good, [ok], True),
        "failed": (good, [CodeToolCall(name=CREDITS, arguments={"movie_id": 155}, error="HTTP 404")], False),
        "other value": (good, [CodeToolCall(name=CREDITS, arguments={"movie_id": 156})], False),
        "argument-less": (plan(CREDITS, {}), [ok], False),
        "other tool": (good, [CodeToolCall(name="GET /search/movie", arguments={"query": "x"})], False),
        "not recorded": (good, [], False),  # a trajectory written before calls were kept: no evidence
        "retried with the plan's values": (good, [CodeToolCall(name=CREDITS, arguments={"movie_id": 155},
                                                               error="timeout"), ok], True),
    }
    for name, (text, calls, kept) in cases.items():
        traj = _traj(_call("grounding", text), _call("execution", "```python\nresult = 1\n```"),
                     CodeRunEvent(code="result = 1", result=1, tool_calls=[c.name for c in calls], calls=calls))
        assert (_grounding_kept(traj) == [0]) is kept, name


# ------------------------------------------------------------------------------------------------ one word count


def test_doc_word_rule_counts_alike_on_both_paths(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The candidates span-data selects from and those export-sft --select selects from (the same tasks, read
    back from the gold run's trajectories) pass the documentation rule at the same thresholds."""
    import taskbench.agents.sft as sft
    import taskbench.agents.span as span
    from taskbench.agents.selection import select as real_select
    from taskbench.agents.span import build_gold

    seen: dict[str, list] = {"span": [], "sft": []}

    def spy(path: str):  # noqa: ANN202
        def wrapped(cands, **kw):  # noqa: ANN001, ANN003, ANN202
            seen[path] = list(cands)
            return real_select(cands, **kw)
        return wrapped

    monkeypatch.setattr(span, "select", spy("span"))
    monkeypatch.setattr(sft, "select", spy("sft"))
    build_gold("taskbench-multimedia", tmp_path / "gold", limit=4, min_doc_words=0, min_tools=0, perturb=0.0,
               unsafe_local=no_sandbox_here())
    export_sft([tmp_path / "gold" / "gold-run"], tmp_path / "sft", selection={"min_doc_words": 0, "min_tools": 0})
    by_query = {c.query: c for c in seen["span"]}
    pairs = [(by_query[c.query], c) for c in seen["sft"]]
    assert len(pairs) >= 3
    for threshold in range(0, 160, 4):
        for a, b in pairs:
            kept_a = bool(real_select([a], min_tools=0, min_doc_words=threshold)[0])
            kept_b = bool(real_select([b], min_tools=0, min_doc_words=threshold)[0])
            assert kept_a == kept_b, (threshold, a.query, a.gold_path)
