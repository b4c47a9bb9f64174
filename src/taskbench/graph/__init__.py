"""Tool libraries and tool graphs: load, build, validate, sample, summarise, render. Pure functions, no model calls."""

from .build import build_graph, graph_from_path, load_graph, validate_graph
from .loaders import (
    FORMATS,
    detect_format,
    infer_dependency,
    load_tool_library,
    load_tools,
    parameters_from_schema,
)
from .render import render, render_html, render_png
from .sampling import MODE_WEIGHTS, SIZE_WEIGHTS, SubgraphSampler, iter_plan, sample_plan
from .stats import GraphStats, graph_stats

__all__ = [
    "FORMATS",
    "GraphStats",
    "MODE_WEIGHTS",
    "SIZE_WEIGHTS",
    "SubgraphSampler",
    "build_graph",
    "detect_format",
    "graph_from_path",
    "graph_stats",
    "infer_dependency",
    "iter_plan",
    "load_graph",
    "load_tool_library",
    "load_tools",
    "parameters_from_schema",
    "render",
    "render_html",
    "render_png",
    "sample_plan",
    "validate_graph",
]
