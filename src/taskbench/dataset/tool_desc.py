"""Reading a TaskBench tool library (``tool_desc.json``, or the nodes of a ``graph_desc.json``).

- :class:`JsonSource`: a JSON (or YAML) document with its text, so an error names the line of the offending
  value;
- :func:`tools_from_taskbench` and :func:`load_tool_library`: the TaskBench tool list as :class:`Tool` objects
  and a :class:`ToolLibrary`, the dependency kind inferred from the fields (typed tools -> resource, parameters
  -> temporal) unless told.

The dataset layout (:func:`taskbench.dataset.load_dataset`) reads the gold library here; the other formats
(OpenAI tools, MCP, OpenAPI) and format detection build on it in :mod:`taskbench.graph.loaders`, which
re-exports these names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError, did_you_mean, suggest, validation_message
from ..schema import DEPENDENCY_KINDS, Tool, ToolLibrary, infer_dependency
from .jsonio import check_input_file
from .yamldoc import read_yaml, yaml_line

Key = str | int


# --------------------------------------------------------------------------------------------- source text


class JsonSource:
    """A JSON document plus its text, so errors can name the line where a value starts.

    Locating is done lazily (only when an error is reported) by walking the text with
    :meth:`json.JSONDecoder.raw_decode`, so the happy path pays nothing.
    """

    def __init__(self, path: str | Path | None, text: str, doc: Any) -> None:
        self.path = Path(path) if path is not None else None
        self.text = text
        self.doc = doc
        self.yaml_node: Any = None
        """The composed YAML node tree when the text was YAML (for line numbers), else None."""

    @classmethod
    def read(cls, path: str | Path) -> JsonSource:
        """Read and parse a JSON file; missing files and syntax errors raise :class:`InputError`."""
        path = Path(path)
        check_input_file(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise InputError("file not found", path=path, hint="check the path") from None
        except IsADirectoryError:
            raise InputError("expected a file, found a directory", path=path) from None
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", path=path, hint="save the file as UTF-8") from None
        except OSError as exc:
            raise InputError(f"cannot read the file ({exc.strerror or exc})", path=path) from None
        return cls.parse(text, path=path)

    @classmethod
    def parse(cls, text: str, *, path: str | Path | None = None) -> JsonSource:
        """Parse JSON or YAML text (``path`` only names it in errors).

        YAML is read when the file is named ``.yaml``/``.yml``, or when the text is not JSON and does not start
        like JSON (``{`` or ``[``): so an OpenAPI spec or a ``tools/list`` result saved as YAML loads, and a
        JSON file with a syntax error is still reported as JSON."""
        if not text.strip():
            raise InputError("the file is empty", path=path, hint="expected a JSON or YAML document")
        suffix = Path(path).suffix.lower() if path is not None else ""
        if suffix in (".yaml", ".yml"):
            return cls._parse_yaml(text, path)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            if text.lstrip()[:1] not in ("{", "[", '"'):
                return cls._parse_yaml(text, path)
            raise InputError(
                f"invalid JSON: {exc.msg} (column {exc.colno})",
                path=path,
                line=exc.lineno,
                hint="fix the JSON syntax at this position",
            ) from None
        except RecursionError:
            raise InputError("JSON nested too deeply", path=path) from None
        except ValueError as exc:  # e.g. an integer literal longer than Python's conversion limit
            raise InputError(f"invalid JSON: {exc}", path=path) from None
        return cls(path, text, doc)

    @classmethod
    def _parse_yaml(cls, text: str, path: str | Path | None) -> JsonSource:
        node, doc = read_yaml(text, path=path)
        src = cls(path, text, doc)
        src.yaml_node = node
        return src

    def line(self, *keys: Key) -> int | None:
        """1-based line where the value at ``keys`` (object keys / array indices) starts, or None."""
        if self.yaml_node is not None:
            return yaml_line(self.yaml_node, keys)
        pos = _locate(self.text, keys)
        return None if pos is None else self.text.count("\n", 0, pos) + 1

    def error(self, message: str, *keys: Key, hint: str | None = None) -> InputError:
        """An :class:`InputError` located at the value under ``keys`` (or at the file when not found)."""
        return InputError(message, path=self.path, line=self.line(*keys) if keys else None, hint=hint)


_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _locate(text: str, keys: Sequence[Key]) -> int | None:
    """Offset where the value at ``keys`` starts in JSON ``text`` (None when the path does not exist)."""
    try:
        i = _skip_ws(text, 0)
        for key in keys:
            if i >= len(text):
                return None
            opener = text[i]
            if opener == "{" and isinstance(key, str):
                i = _skip_ws(text, i + 1)
                found = False
                while i < len(text) and text[i] != "}":
                    name, i = _DECODER.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    i = _skip_ws(text, i + 1)  # the ':'
                    if name == key:
                        found = True
                        break
                    _, i = _DECODER.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    if i < len(text) and text[i] == ",":
                        i = _skip_ws(text, i + 1)
                if not found:
                    return None
            elif opener == "[" and isinstance(key, int):
                i = _skip_ws(text, i + 1)
                for _ in range(key):
                    if i >= len(text) or text[i] == "]":
                        return None
                    _, i = _DECODER.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    if i < len(text) and text[i] == ",":
                        i = _skip_ws(text, i + 1)
                if i >= len(text) or text[i] == "]":
                    return None
            else:
                return None
        return i
    except (ValueError, IndexError, RecursionError):
        return None


# --------------------------------------------------------------------------------------------- helpers


def check_dependency(dependency: str | None, *, path: str | Path | None = None, line: int | None = None) -> str | None:
    """Validate a user-given dependency kind (None passes through)."""
    if dependency is not None and dependency not in DEPENDENCY_KINDS:
        close = suggest(dependency, DEPENDENCY_KINDS)
        raise InputError(
            f"{'' if path else '--dependency: '}unknown dependency kind {dependency!r}",
            path=path,
            line=line,
            hint=(f"did you mean {close[0]!r}? " if close else "")
            + "use 'resource' (typed inputs/outputs) or 'temporal' (any order)",
        )
    return dependency


def _first_error(exc: ValidationError) -> str:
    return validation_message(exc)


def _label(node: dict[str, Any], i: int) -> str:
    name = node.get("id", node.get("name"))
    return f"tool #{i} ({name!r})" if isinstance(name, str) else f"tool #{i}"


def _finish(tools: list[Tool], src: JsonSource, keys_of: Callable[[int], tuple[Key, ...]]) -> list[Tool]:
    """Check for an empty list, empty ids and duplicate ids (with the line of the offending tool)."""
    if not tools:
        raise src.error("the tool library is empty", hint="add at least one tool")
    seen: dict[str, int] = {}
    for i, tool in enumerate(tools):
        if not tool.id.strip():
            raise src.error(f"tool #{i} has an empty id", *keys_of(i), hint="give every tool a non-empty name")
        if tool.id in seen:
            raise src.error(
                f"duplicate tool id {tool.id!r} (tools #{seen[tool.id]} and #{i})",
                *keys_of(i),
                hint="tool ids must be unique; rename or remove one",
            )
        seen[tool.id] = i
    return tools


# --------------------------------------------------------------------------------------------- TaskBench


def _taskbench_list(src: JsonSource) -> tuple[list[Any], tuple[Key, ...]]:
    doc = src.doc
    if isinstance(doc, dict) and isinstance(doc.get("nodes"), list):
        return doc["nodes"], ("nodes",)
    if isinstance(doc, list):
        return doc, ()
    raise src.error(
        'expected a TaskBench tool list {"nodes": [{"id", "desc", ...}]}',
        hint="pass a tool_desc.json, or --format openai|mcp|openapi for other formats",
    )


def tools_from_taskbench(doc: Any, *, path: str | Path | None = None, source: JsonSource | None = None) -> list[Tool]:
    """Tools from a TaskBench document: ``{"nodes": [...]}`` or a bare list of tool objects."""
    src = source or JsonSource(path, "", doc)
    nodes, base = _taskbench_list(src)
    tools: list[Tool] = []
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise src.error(f"tool #{i} is not a JSON object", *base, i, hint='each tool is {"id", "desc", ...}')
        if not isinstance(node.get("id", node.get("name")), str):
            raise src.error(f"{_label(node, i)} has no 'id'", *base, i, hint="every tool needs a unique string 'id'")
        for key in ("input-type", "output-type", "parameters"):
            if key in node and not isinstance(node[key], list):
                raise src.error(f"{_label(node, i)}: '{key}' must be a list", *base, i)
        try:
            tools.append(Tool.model_validate(node))
        except ValidationError as exc:
            raise src.error(f"{_label(node, i)}: {_first_error(exc)}", *base, i) from None
    return _finish(tools, src, lambda i: (*base, i))


def _file_dependency(src: JsonSource) -> str | None:
    """An optional top-level ``"dependency"`` key (written by ``taskbench graph build``)."""
    if isinstance(src.doc, dict) and "dependency" in src.doc:
        dep = src.doc["dependency"]
        if not isinstance(dep, str) or dep not in DEPENDENCY_KINDS:
            raise InputError(
                f"unknown dependency kind {dep!r}",
                path=src.path,
                line=src.line("dependency"),
                hint=did_you_mean(dep, DEPENDENCY_KINDS),
            )
        return dep
    return None


def _library(tools: list[Tool], dependency: str | None, src: JsonSource, name: str | None) -> ToolLibrary:
    dep = dependency or _file_dependency(src) or infer_dependency(tools)
    if dep == "resource":
        for i, tool in enumerate(tools):
            if not tool.is_typed:
                raise InputError(
                    f"dependency 'resource' needs input-type/output-type on every tool; {tool.id!r} has none",
                    path=src.path,
                    line=_tool_line(src, i),
                    hint="use --dependency temporal for tools with named parameters",
                )
    default_name = src.path.parent.name if src.path is not None else None
    return ToolLibrary(tools=tools, dependency=dep, name=name or default_name or None)  # type: ignore[arg-type]


def _tool_line(src: JsonSource, i: int) -> int | None:
    for base in (("nodes",), ("tools",), ("functions",), ("result", "tools"), ()):
        line = src.line(*base, i)
        if line is not None:
            return line
    return None


def load_tool_library(
    path: str | Path, dependency: str | None = None, *, name: str | None = None
) -> ToolLibrary:
    """Load a TaskBench ``tool_desc.json`` (or ``graph_desc.json``) as a :class:`ToolLibrary`.

    ``dependency`` overrides the inferred kind. A resource library whose tools lack types is an error.
    """
    path = Path(path)
    check_dependency(dependency)
    src = JsonSource.read(path)
    return _library(tools_from_taskbench(src.doc, source=src), dependency, src, name)


__all__ = ["JsonSource", "Key", "check_dependency", "load_tool_library", "tools_from_taskbench"]
