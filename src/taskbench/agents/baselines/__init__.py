"""The baselines, on the same episode runner, models, tools, environment and sandbox as ConAgents, and the
registry that makes any agent from its :class:`~taskbench.agents.config.AgentSpec`.

- :mod:`.single`: ``react`` (native tool calls: thought, action, observation) and ``code`` (CodeAct-style);
- :mod:`.plan_execute`: ``plan-execute`` (Chameleon-like: a one-shot task graph, executed);
- :mod:`.retry`: ``react@N`` and ``toolllm@N`` (retry until solved, N trials at most) and ``reflexion``;
- :mod:`.dfsdt`: ``dfsdt``, ToolLLM's depth-first search decision tree;
- :mod:`.restgpt`: ``restgpt``, planner / API selector / caller / parser;
- :mod:`.umi`: ``alpha-umi``, planner / caller / summariser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..conagents import ConAgents
from ..config import AgentSpec
from .dfsdt import DFSDT
from .plan_execute import PlanExecute, fill_reference, library_for
from .restgpt import RestGPT
from .retry import Reflexion, Retry
from .single import CUT_OFF, FINAL_ANSWER, CodeAgent, ReAct, code_tool_doc
from .umi import AlphaUMi

AGENTS: dict[str, Callable[[AgentSpec], Any]] = {
    "react": lambda spec: Retry(ReAct(), spec.tries) if spec.tries > 1 else ReAct(),
    "code": lambda spec: CodeAgent(),
    "plan-execute": lambda spec: PlanExecute(),
    "reflexion": lambda spec: Reflexion(spec.tries),
    "dfsdt": lambda spec: Retry(DFSDT(), spec.tries) if spec.tries > 1 else DFSDT(),
    "restgpt": lambda spec: RestGPT(),
    "alpha-umi": lambda spec: AlphaUMi(),
}
"""Base agent name -> its maker (ConAgents' two protocols aside)."""

ROLES_OF: dict[str, tuple[str, ...]] = {
    "react": ("react",), "code": ("code",), "plan-execute": ("planner", "execution"),
    "reflexion": ("react", "reflect"), "dfsdt": ("dfsdt",), "restgpt": ("planner", "selector", "caller", "parser"),
    "alpha-umi": ("planner", "caller", "summarizer"),
}
"""The roles that call a model, per base agent (ConAgents': grounding, execution, review)."""


def make_agent(spec: AgentSpec) -> Any:
    """The agent object for ``spec`` (anything with ``async run(episode)``)."""
    if spec.base.startswith("conagents"):
        return ConAgents(spec)
    return AGENTS[spec.base](spec)


__all__ = ["AGENTS", "CUT_OFF", "DFSDT", "FINAL_ANSWER", "ROLES_OF", "AlphaUMi", "CodeAgent", "PlanExecute",
           "ReAct", "Reflexion", "RestGPT", "Retry", "code_tool_doc", "fill_reference", "library_for", "make_agent"]
