"""The taskbench data model: one set of pydantic models shared by every stage.

tool library -> ToolGraph -> sampled subgraph -> Sample (gold TaskGraph) -> model -> Prediction -> scores
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
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
from .sample import FIELD_ALIASES, CriticVerdict, Prediction, Sample, StructureType, Usage, record_id
from .task import (
    NODE_REF,
    Argument,
    TaskArgument,
    TaskGraph,
    TaskLink,
    TaskNode,
    content_type,
    graph_from_result,
    link_endpoint,
    node_index,
    resolve_link_indices,
)
from .tools import DEPENDENCY_KINDS, DependencyKind, Tool, ToolLibrary, ToolParameter, infer_dependency

# The run log, the episode row, the generation manifest and record, and the trajectory models are imported on
# first use: a prediction or scoring command that never touches them does not pay for building them.
if TYPE_CHECKING:  # pragma: no cover
    from .episode import EpisodeRow, EpisodeUsage, FailedEpisodeRow, parse_episode
    from .generation import (
        FailedGenerationRecord,
        GenerationManifest,
        GenerationRecord,
        parse_generation_record,
    )
    from .header import HEADER_SCHEMA_VERSION, RunEnvironment, RunHeader, RunKind
    from .run import RUN_LOG_SCHEMA_VERSION, RunConfig, RunEntry, RunLog, RunPass, RunStage
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

_LAZY: dict[str, str] = {
    "EpisodeRow": "episode",
    "EpisodeUsage": "episode",
    "FailedEpisodeRow": "episode",
    "parse_episode": "episode",
    "FailedGenerationRecord": "generation",
    "GenerationManifest": "generation",
    "GenerationRecord": "generation",
    "parse_generation_record": "generation",
    "RUN_LOG_SCHEMA_VERSION": "run",
    "RunConfig": "run",
    "RunEntry": "run",
    "RunEnvironment": "header",
    "HEADER_SCHEMA_VERSION": "header",
    "RunHeader": "header",
    "RunKind": "header",
    "RunLog": "run",
    "RunPass": "run",
    "RunStage": "run",
    "AgentTask": "trajectory",
    "CheckResult": "trajectory",
    "CodeError": "trajectory",
    "CodeRunEvent": "trajectory",
    "FinalAnswerEvent": "trajectory",
    "ModelCallEvent": "trajectory",
    "ReviewEvent": "trajectory",
    "ToolCallEvent": "trajectory",
    "Trajectory": "trajectory",
    "TrajectoryEvent": "trajectory",
    "TrajectoryTotals": "trajectory",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "AgentTask",
    "api_names",
    "Argument",
    "AssistantMessage",
    "ChatMessage",
    "CriticVerdict",
    "CheckResult",
    "CodeError",
    "CodeRunEvent",
    "DEPENDENCY_KINDS",
    "DependencyKind",
    "EpisodeRow",
    "EpisodeUsage",
    "FailedEpisodeRow",
    "FailedGenerationRecord",
    "FIELD_ALIASES",
    "FinalAnswerEvent",
    "GenerationManifest",
    "GenerationRecord",
    "graph_from_result",
    "infer_dependency",
    "link_endpoint",
    "node_index",
    "content_type",
    "record_id",
    "resolve_link_indices",
    "HEADER_SCHEMA_VERSION",
    "HttpOperation",
    "HttpParameter",
    "LINK_RULES",
    "LinkReason",
    "ModelCallEvent",
    "NODE_REF",
    "parse_episode",
    "parse_generation_record",
    "parse_messages",
    "Prediction",
    "ReviewEvent",
    "RUN_LOG_SCHEMA_VERSION",
    "RunConfig",
    "RunEntry",
    "RunEnvironment",
    "RunHeader",
    "RunKind",
    "RunLog",
    "RunPass",
    "RunStage",
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
