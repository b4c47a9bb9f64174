"""ConAgents and baselines: tool-using agents run in an environment, their trajectories and their metrics.

- :class:`~taskbench.agents.conagents.ConAgents`: grounding, execution and review agents under the automatic
  or the adaptive protocol (``conagents-auto``, ``conagents-adaptive``), with the paper's ablations;
- baselines on the same models, tools and sandbox: ``react`` (native tool calls), ``code`` (CodeAct-style),
  ``plan-execute`` (the predictor's one-shot task graph, executed);
- :func:`run_agents`: every (agent, task, seed) episode on the resumable runner, trajectories written event
  by event, and the metrics document (:mod:`taskbench.agents.metrics`);
- :func:`export_sft`: chat-format training sets per role from successful trajectories (the first half of
  SPAN).

See docs/agents.md.
"""

from .config import (
    ABLATIONS,
    BASE_AGENTS,
    TOOL_SETTINGS,
    AgentSpec,
    Budgets,
    expand_agents,
    parse_agent,
    select_tools,
)
from .eval import (
    AgentEvalConfig,
    AgentEvalResult,
    arun_agents,
    compute_metrics,
    demo_config,
    load_run,
    run_agents,
)
from .metrics import EpisodeRow, episode_row, metrics_document
from .sft import ExportSummary, export_sft

__all__ = [
    "ABLATIONS",
    "AgentEvalConfig",
    "AgentEvalResult",
    "AgentSpec",
    "BASE_AGENTS",
    "Budgets",
    "EpisodeRow",
    "ExportSummary",
    "TOOL_SETTINGS",
    "arun_agents",
    "compute_metrics",
    "demo_config",
    "episode_row",
    "expand_agents",
    "export_sft",
    "load_run",
    "metrics_document",
    "parse_agent",
    "run_agents",
    "select_tools",
]
