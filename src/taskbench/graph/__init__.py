"""Tool libraries and tool graphs: load, build or infer, edit, validate, sample, summarise, render.

Pure functions, no model calls, except `infer_llm` (links proposed by a model), which is imported on demand.
"""

from ..schema import infer_dependency
from .build import INFER_METHODS, build_graph, graph_from_path, load_graph, make_graph, validate_graph
from .edit import GraphEdits, LinkEdit, edit_graph, load_overrides, parse_link
from .infer import infer_graph, infer_links
from .loaders import (
    FORMATS,
    detect_format,
    load_tool_library,
    load_tools,
    parameters_from_schema,
)
from .render import render, render_html, render_png
from .sampling import MODE_WEIGHTS, SIZE_WEIGHTS, SubgraphSampler, iter_plan, sample_plan
from .stats import GraphStats, graph_stats

__all__ = [
    "FORMATS",
    "GraphEdits",
    "INFER_METHODS",
    "LinkEdit",
    "GraphStats",
    "MODE_WEIGHTS",
    "SIZE_WEIGHTS",
    "SubgraphSampler",
    "build_graph",
    "detect_format",
    "edit_graph",
    "graph_from_path",
    "graph_stats",
    "infer_dependency",
    "infer_graph",
    "infer_links",
    "iter_plan",
    "load_graph",
    "load_tool_library",
    "load_overrides",
    "load_tools",
    "make_graph",
    "parameters_from_schema",
    "parse_link",
    "render",
    "render_html",
    "render_png",
    "sample_plan",
    "validate_graph",
]
