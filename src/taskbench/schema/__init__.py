"""The taskbench data model: one set of pydantic models shared by every stage.

tool library -> ToolGraph -> sampled subgraph -> Sample (gold TaskGraph) -> model -> Prediction -> scores
"""

from .chat import (
    AssistantMessage,
    ChatMessage,
    HttpOperation,
    HttpParameter,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolResult,
    ToolSpec,
    UserMessage,
    api_names,
    parse_messages,
    to_openai_messages,
)
from .graph import LINK_RULES, LinkReason, ToolGraph, ToolLink
from .plan import SampledSubgraph
from .run import RUN_LOG_SCHEMA_VERSION, RunConfig, RunEntry, RunEnvironment, RunLog
from .sample import FIELD_ALIASES, Prediction, Sample, StructureType, Usage
from .task import NODE_REF, Argument, TaskArgument, TaskGraph, TaskLink, TaskNode, graph_from_result
from .tools import DEPENDENCY_KINDS, DependencyKind, Tool, ToolLibrary, ToolParameter
from .trajectory import (
    AgentTask,
    CheckResult,
    CodeError,
    CodeRunEvent,
    FinalAnswerEvent,
    ModelCallEvent,
    ReviewEvent,
    ToolCallEvent,
    Trajectory,
    TrajectoryEvent,
    TrajectoryTotals,
)

__all__ = [
    "AgentTask",
    "api_names",
    "Argument",
    "AssistantMessage",
    "ChatMessage",
    "CheckResult",
    "CodeError",
    "CodeRunEvent",
    "DEPENDENCY_KINDS",
    "DependencyKind",
    "FIELD_ALIASES",
    "FinalAnswerEvent",
    "graph_from_result",
    "HttpOperation",
    "HttpParameter",
    "LINK_RULES",
    "LinkReason",
    "ModelCallEvent",
    "NODE_REF",
    "parse_messages",
    "Prediction",
    "ReviewEvent",
    "RUN_LOG_SCHEMA_VERSION",
    "RunConfig",
    "RunEntry",
    "RunEnvironment",
    "RunLog",
    "Sample",
    "SampledSubgraph",
    "StructureType",
    "SystemMessage",
    "TaskArgument",
    "TaskGraph",
    "TaskLink",
    "TaskNode",
    "to_openai_messages",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "ToolGraph",
    "ToolLibrary",
    "ToolLink",
    "ToolMessage",
    "ToolParameter",
    "ToolResult",
    "ToolSpec",
    "Trajectory",
    "TrajectoryEvent",
    "TrajectoryTotals",
    "Usage",
    "UserMessage",
]
