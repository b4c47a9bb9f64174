"""Confounds of an agent comparison: the order the tools are offered in, ablations that change nothing, and
distillation data that keeps plans a review blamed."""

from __future__ import annotations

import pytest

from taskbench.agents.config import expand_agents, parse_agent, select_tools
from taskbench.agents.sft import kept_turns
from taskbench.errors import ConfigError
from taskbench.schema import (
    AssistantMessage,
    CodeError,
    CodeRunEvent,
    CodeToolCall,
    ModelCallEvent,
    ReviewEvent,
    ToolSpec,
    Trajectory,
)

TOOLS = [ToolSpec(name=f"GET /t{i}", description=f"tool {i}") for i in range(30)]
GOLD = ["GET /t0", "GET /t1"]


def names(tools: list[ToolSpec]) -> list[str]:
    return [t.name for t in tools]


@pytest.mark.parametrize("setting", ["gold", "gold+10", "all"])
def test_offered_tools_are_shuffled_per_seed(setting: str) -> None:
    orders = [names(select_tools(TOOLS, GOLD, setting, seed=s, task_id="x")) for s in range(6)]
    if setting == "gold+10":  # the distractors are drawn per seed; the gold tools are always there
        assert all(set(GOLD) <= set(o) and len(o) == 12 for o in orders)
    else:
        assert all(set(o) == set(orders[0]) for o in orders)  # the same tools in another order
    assert orders[0] == names(select_tools(TOOLS, GOLD, setting, seed=0, task_id="x"))  # reproducible
    assert len({tuple(o) for o in orders}) > 1, "the order must change with the seed"
    if setting == "all":
        # the first gold tool is not always first, as it is in the spec's order
        assert any(o[0] != "GET /t0" for o in orders)


def test_ablations_that_change_nothing_are_refused() -> None:
    for name in ("conagents-adaptive-no-plan-review", "conagents-adaptive-compiler-feedback"):
        with pytest.raises(ConfigError, match="adaptive"):
            parse_agent(name)
    assert parse_agent("conagents-auto-compiler-feedback").compiler_feedback
    assert parse_agent("conagents-adaptive-no-exec-review").ablation == "no-exec-review"
    # --ablation over both protocols makes only the variants that mean something
    made = [s.name for s in expand_agents(["conagents-auto", "conagents-adaptive"],
                                          ablations=["no-plan-review", "compiler-feedback", "no-exec-review"])]
    assert made == ["conagents-auto", "conagents-auto-no-plan-review", "conagents-auto-compiler-feedback",
                    "conagents-auto-no-exec-review", "conagents-adaptive", "conagents-adaptive-no-exec-review"]


def _call(role: str, text: str) -> ModelCallEvent:
    return ModelCallEvent(role=role, output=AssistantMessage(content=text))


def test_export_sft_drops_a_plan_a_failure_review_blamed_on_grounding() -> None:
    traj = Trajectory(id="t", task="q", agent="conagents-adaptive")
    for e in [
        _call("grounding", '{"tool": "GET /movie/{movie_id}/credits", "arguments": {"movie_id": "The Dark Knight"}}'),
        _call("execution", "```python\nresult = 1\n```"),
        CodeRunEvent(code="result = 1", error=CodeError(type="ToolError", message="HTTP 404"),
                     calls=[CodeToolCall(name="GET /movie/{movie_id}/credits",
                                         arguments={"movie_id": "The Dark Knight"}, error="HTTP 404")]),
        _call("review", "{}"),
        ReviewEvent(target="execution", verdict="revise", route="grounding", feedback="search the id first"),
        _call("grounding", '{"tool": "GET /search/movie"}'),
        _call("execution", "```python\nresult = 155\n```"),
        CodeRunEvent(code="result = 155", result=155, calls=[CodeToolCall(name="GET /search/movie")]),
    ]:
        traj.add(e)
    kept = kept_turns(traj)
    grounding = [e.index for e in kept if e.role == "grounding"]
    assert grounding == [5], "the blamed plan (event 0) must not be a training example"
    assert [e.index for e in kept if e.role == "execution"] == [6]
