"""The baselines, on the same episode runner, models, tools, environment and sandbox as ConAgents, and the
registration of every built-in agent in the agent registry (:mod:`taskbench.agents.registry`), which makes any
agent from its :class:`~taskbench.agents.config.AgentSpec`.

- :mod:`.single`: ``react`` (native tool calls: thought, action, observation) and ``code`` (CodeAct-style);
- :mod:`.plan_execute`: ``plan-execute`` (Chameleon-like: a one-shot task graph, executed);
- :mod:`.retry`: ``react@N`` and ``toolllm@N`` (retry until solved, N trials at most) and ``reflexion``;
- :mod:`.dfsdt`: ``dfsdt``, ToolLLM's depth-first search decision tree;
- :mod:`.restgpt`: ``restgpt``, planner / API selector / caller / parser;
- :mod:`.umi`: ``alpha-umi``, planner / caller / summariser.

A module added to this package that registers an agent (``register_agent`` or ``@agent``) is found without
being listed here: the registry imports every module of the package on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..._plugins import LiveMapping
from ..conagents import ConAgents
from ..config import ROLES, AgentSpec
from ..registry import Agent, agent_info, agents, register_agent
from .dfsdt import DFSDT
from .plan_execute import PlanExecute, fill_reference, library_for
from .restgpt import RestGPT
from .retry import Reflexion, Retry
from .single import CUT_OFF, FINAL_ANSWER, CodeAgent, ReAct, code_tool_doc
from .umi import AlphaUMi


def _retried(make: Callable[[], Agent]) -> Callable[[AgentSpec], Agent]:
    """The maker of an agent that ``NAME@N`` retries until solved (``spec.tries`` trials)."""
    return lambda spec: Retry(make(), spec.tries) if spec.tries > 1 else make()


register_agent("conagents-auto", ConAgents, roles=ROLES, uses_code=True, variants=True,
               description="grounding, execution and review agents, automatic protocol (each plan and each "
                           "execution reviewed)")
register_agent("conagents-adaptive", ConAgents, roles=ROLES, uses_code=True, variants=True,
               description="the same agents, adaptive protocol (review only when an execution fails)")
register_agent("react", _retried(ReAct), roles=("react",), retry_name="react",
               description="one agent with native tool calls (thought, action, observation)")
register_agent("code", lambda spec: CodeAgent(), roles=("code",), uses_code=True,
               description="one agent that writes Python calling the tools in the sandbox (CodeAct-style)")
register_agent("plan-execute", lambda spec: PlanExecute(), roles=("planner", "execution"), uses_code=True,
               description="the predictor's one-shot task graph, executed step by step (Chameleon-like)")
register_agent("reflexion", lambda spec: Reflexion(spec.tries), roles=("react", "reflect"), retry_name="reflexion",
               default_tries=3,
               description="ReAct trials, each failed one followed by a self-reflection the next trial reads")
register_agent("dfsdt", _retried(DFSDT), roles=("dfsdt",), retry_name="toolllm",
               description="ToolLLM's depth-first search decision tree over ReAct steps (toolllm@N: retried)")
register_agent("restgpt", lambda spec: RestGPT(), roles=("planner", "selector", "caller", "parser"),
               uses_code=True, description="RestGPT's planner, API selector, caller and response parser")
register_agent("alpha-umi", lambda spec: AlphaUMi(), roles=("planner", "caller", "summarizer"),
               description="alpha-UMi's planner, caller and summariser")

AGENTS: Mapping[str, Callable[[AgentSpec], Agent]] = LiveMapping(
    lambda: {n: a.make for n, a in agents().items() if not a.variants})
"""Base agent name -> its maker (ConAgents' two protocols aside): a view of the agent registry."""

ROLES_OF: Mapping[str, tuple[str, ...]] = LiveMapping(
    lambda: {n: a.roles for n, a in agents().items() if not a.variants})
"""The roles that call a model, per base agent (ConAgents': grounding, execution, review): a view of the agent
registry."""


def make_agent(spec: AgentSpec) -> Agent:
    """The agent object for ``spec`` (anything with ``async run(episode)``), made by its registered maker."""
    return agent_info(spec.base).make(spec)


__all__ = ["AGENTS", "CUT_OFF", "DFSDT", "FINAL_ANSWER", "ROLES_OF", "AlphaUMi", "CodeAgent", "PlanExecute",
           "ReAct", "Reflexion", "RestGPT", "Retry", "code_tool_doc", "fill_reference", "library_for", "make_agent"]
