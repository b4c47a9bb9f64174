"""The taskbench data model: one set of pydantic models shared by every stage.

tool library -> ToolGraph -> sampled subgraph -> Sample (gold TaskGraph) -> model -> Prediction -> scores
"""

from .graph import ToolGraph, ToolLink
from .plan import SampledSubgraph
from .run import RUN_LOG_SCHEMA_VERSION, RunConfig, RunEntry, RunEnvironment, RunLog
from .sample import FIELD_ALIASES, Prediction, Sample, StructureType, Usage
from .task import NODE_REF, Argument, TaskArgument, TaskGraph, TaskLink, TaskNode, graph_from_result
from .tools import DEPENDENCY_KINDS, DependencyKind, Tool, ToolLibrary, ToolParameter

__all__ = [
    "Argument",
    "DEPENDENCY_KINDS",
    "DependencyKind",
    "FIELD_ALIASES",
    "NODE_REF",
    "Prediction",
    "RUN_LOG_SCHEMA_VERSION",
    "RunConfig",
    "RunEntry",
    "RunEnvironment",
    "RunLog",
    "Sample",
    "SampledSubgraph",
    "StructureType",
    "TaskArgument",
    "TaskGraph",
    "TaskLink",
    "TaskNode",
    "Tool",
    "ToolGraph",
    "ToolLibrary",
    "ToolLink",
    "ToolParameter",
    "Usage",
    "graph_from_result",
]
