"""Tool library loaders.

:func:`load_tool_library` reads a TaskBench ``tool_desc.json`` (or ``graph_desc.json``) and infers the
dependency kind from the fields (typed tools -> resource, parameters -> temporal) unless told.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..dataset.jsonio import read_json
from ..errors import InputError
from ..schema import DEPENDENCY_KINDS, Tool, ToolLibrary


def infer_dependency(tools: list[Tool]) -> str:
    """'resource' when the tools declare input/output types, else 'temporal'."""
    return "resource" if tools and all(t.is_typed for t in tools) else "temporal"


def check_dependency(dependency: str | None, *, path: str | Path | None = None) -> str | None:
    """Validate a user-given dependency kind (None passes through)."""
    if dependency is not None and dependency not in DEPENDENCY_KINDS:
        raise InputError(
            f"unknown dependency kind {dependency!r}",
            path=path,
            hint="use 'resource' (typed inputs/outputs) or 'temporal' (any order)",
        )
    return dependency


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc}: {err.get('msg')}" if loc else str(err.get("msg"))


def tools_from_taskbench(doc: Any, *, path: str | Path | None = None) -> list[Tool]:
    """Tools from a TaskBench document: ``{"nodes": [...]}`` or a bare list of tool objects."""
    nodes = doc.get("nodes") if isinstance(doc, dict) else doc
    if not isinstance(nodes, list):
        raise InputError(
            "expected a TaskBench tool list: {\"nodes\": [{\"id\", \"desc\", ...}]}", path=path
        )
    tools: list[Tool] = []
    seen: dict[str, int] = {}
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise InputError(f"tool #{i} is not a JSON object", path=path)
        if "id" not in node and "name" not in node:
            raise InputError(f"tool #{i} has no 'id'", path=path, hint="every tool needs a unique 'id'")
        try:
            tool = Tool.model_validate(node)
        except ValidationError as exc:
            raise InputError(f"tool #{i} ({node.get('id')!r}): {_first_error(exc)}", path=path) from None
        if tool.id in seen:
            raise InputError(
                f"duplicate tool id {tool.id!r} (tools #{seen[tool.id]} and #{i})",
                path=path,
                hint="tool ids must be unique",
            )
        seen[tool.id] = i
        tools.append(tool)
    if not tools:
        raise InputError("the tool list is empty", path=path)
    return tools


def load_tool_library(
    path: str | Path, dependency: str | None = None, *, name: str | None = None
) -> ToolLibrary:
    """Load a TaskBench ``tool_desc.json`` (or ``graph_desc.json``) as a :class:`ToolLibrary`.

    ``dependency`` overrides the inferred kind. A resource library whose tools lack types is an error.
    """
    path = Path(path)
    check_dependency(dependency, path=path)
    tools = tools_from_taskbench(read_json(path), path=path)
    dep = dependency or infer_dependency(tools)
    if dep == "resource":
        untyped = [t.id for t in tools if not t.is_typed]
        if untyped:
            raise InputError(
                f"dependency 'resource' needs input-type/output-type on every tool; {untyped[0]!r} has none",
                path=path,
                hint="use --dependency temporal for tools with named parameters",
            )
    return ToolLibrary(tools=tools, dependency=dep, name=name or path.parent.name or None)  # type: ignore[arg-type]
