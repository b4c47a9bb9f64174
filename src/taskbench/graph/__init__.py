"""Tool libraries and tool graphs: load, build, sample, render. Pure functions, no model calls."""

from .loaders import infer_dependency, load_tool_library

__all__ = ["infer_dependency", "load_tool_library"]
