"""Tool documentation as the agents read it: short, and the same text every time (pure functions).

Real API documentation is long (TMDB's ``GET /discover/movie`` has 8,000 characters of parameters; its
example responses run to 80 kB), and small models drown in it. The agents get:

- the grounding agent and the reviewer: one line per tool (:func:`tool_line`): name, the first sentence of
  the description, the argument names (required ones marked ``*``);
- the execution agent: the tool's Python signature under its API-safe name (:func:`signature`), its
  description, and the *shape* of its response (:func:`shape`): keys and types, nested to a few levels, lists
  shown by their first item, long objects cut, so the code can be written against the real structure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..schema import ToolSpec

_SENTENCE = re.compile(r"(?<=[.!?])\s")
_PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list",
             "object": "dict"}


def first_sentence(text: str, limit: int = 120) -> str:
    """The first sentence of ``text`` (whitespace collapsed), cut at ``limit`` characters; a first sentence
    that is only a title ("Get Details.") takes the next one with it."""
    text = " ".join((text or "").split())
    sentences = _SENTENCE.split(text) if text else []
    first = ""
    for sentence in sentences:
        first = f"{first} {sentence}".strip()
        if len(first) >= 40:
            break
    return first if len(first) <= limit else first[: limit - 3].rstrip() + "..."


def argument_names(spec: ToolSpec) -> tuple[list[str], list[str]]:
    """(required, optional) argument names of a tool, in schema order."""
    props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
    names = list(props) if isinstance(props, dict) else []
    req = spec.parameters.get("required") if isinstance(spec.parameters, dict) else None
    required = [n for n in names if isinstance(req, list) and n in req]
    return required, [n for n in names if n not in required]


def tool_line(spec: ToolSpec, *, max_optional: int = 4) -> str:
    """``- NAME: first sentence. Arguments: a*, b, c`` (``*`` = required; at most ``max_optional`` optional)."""
    required, optional = argument_names(spec)
    args = [f"{n}*" for n in required] + optional[:max_optional]
    if len(optional) > max_optional:
        args.append("...")
    line = f"- {spec.name}: {first_sentence(spec.description) or '(no description)'}"
    return line + (f" Arguments: {', '.join(args)}" if args else " Arguments: none")


def tool_list(specs: list[ToolSpec]) -> str:
    """One :func:`tool_line` per tool."""
    return "\n".join(tool_line(s) for s in specs)


def _type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "Any"
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "Any")
    if isinstance(t, str):
        return _PY_TYPES.get(t, t)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _type(schema[key][0])
    return "Any"


def signature(spec: ToolSpec, api_name: str) -> str:
    """``GET_search_person(query: str, page: int = None)``: required arguments first, then optional ones
    with a default of None (the sandbox leaves arguments that are None out of the call)."""
    props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
    props = props if isinstance(props, dict) else {}
    required, optional = argument_names(spec)
    parts = [f"{_py_name(n)}: {_type(props.get(n))}" for n in required]
    parts += [f"{_py_name(n)}: {_type(props.get(n))} = None" for n in optional]
    return f"{api_name}({', '.join(parts)})"


def python_value(value: str, schema: Any) -> str:
    """A plan's argument value (text) as a Python literal of the parameter's declared type, when it reads as
    one (``"155"`` for an integer -> ``155``); else a string literal."""
    kind = _type(schema)
    text = value.strip()
    if kind == "int" and re.fullmatch(r"[+-]?\d+", text):
        return str(int(text))
    if kind == "float" and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return text
    if kind == "bool" and text.lower() in ("true", "false"):
        return "True" if text.lower() == "true" else "False"
    return repr(value)


def python_call(spec: ToolSpec | None, api_name: str, arguments: dict[str, str]) -> str:
    """The call of a plan step as Python: ``GET_search_movie(query='Heat')`` (values typed per the schema)."""
    props = spec.parameters.get("properties") if spec is not None and isinstance(spec.parameters, dict) else None
    props = props if isinstance(props, dict) else {}
    parts = []
    for name, value in arguments.items():
        literal = python_value(value, props.get(name))
        parts.append(f"{name}={literal}" if name.isidentifier() else f"**{{{name!r}: {literal}}}")
    return f"{api_name}({', '.join(parts)})"


def _py_name(name: str) -> str:
    return name if name.isidentifier() else f"**{{{name!r}: ...}}"


def argument_help(spec: ToolSpec, *, limit: int = 8, width: int = 100) -> str:
    """One line per argument: name, type, required, description (first sentence), enum values."""
    props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
    if not isinstance(props, dict) or not props:
        return "  (no arguments)"
    required, optional = argument_names(spec)
    lines = []
    for name in (required + optional)[:limit]:
        raw = props.get(name)
        sub: dict[str, Any] = raw if isinstance(raw, dict) else {}
        desc = first_sentence(str(sub.get("description") or ""), width)
        enum = sub.get("enum")
        if isinstance(enum, list) and enum:
            desc += " One of: " + ", ".join(json.dumps(v) for v in enum[:8])
        flag = "required" if name in required else "optional"
        lines.append(f"  {name} ({_type(sub)}, {flag}): {desc}".rstrip(": "))
    if len(props) > limit:
        lines.append(f"  ... and {len(props) - limit} more optional arguments")
    return "\n".join(lines)


def shape(schema: Any, *, depth: int = 3, max_keys: int = 12) -> str:
    """A compact picture of a JSON Schema: ``{"results": [{"id": int, "name": str, ...}], "page": int}``."""
    return _shape(schema, depth, max_keys)


def _shape(schema: Any, depth: int, max_keys: int) -> str:
    if not isinstance(schema, dict):
        return "Any"
    for key in ("oneOf", "anyOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _shape(options[0], depth, max_keys)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "array" or (kind is None and "items" in schema):
        if depth <= 0:
            return "[...]"
        return f"[{_shape(schema.get('items'), depth - 1, max_keys)}, ...]"
    props = schema.get("properties")
    if kind == "object" or isinstance(props, dict):
        if not isinstance(props, dict) or not props:
            return "dict"
        if depth <= 0:
            return "{...}"
        items = [f"{json.dumps(k)}: {_shape(v, depth - 1, max_keys)}" for k, v in list(props.items())[:max_keys]]
        if len(props) > max_keys:
            items.append("...")
        return "{" + ", ".join(items) + "}"
    return _type(schema)


def example_shape(value: Any, *, depth: int = 3, max_keys: int = 12) -> str:
    """The same picture drawn from an example value (for specs that give an example but no schema)."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        if depth <= 0:
            return "{...}"
        items = [f"{json.dumps(k)}: {example_shape(v, depth=depth - 1, max_keys=max_keys)}"
                 for k, v in list(value.items())[:max_keys]]
        if len(value) > max_keys:
            items.append("...")
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        if depth <= 0:
            return "[...]"
        return f"[{example_shape(value[0], depth=depth - 1, max_keys=max_keys)}, ...]"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "None" if value is None else "Any"


def returns(spec: ToolSpec) -> str:
    """What the tool returns, as a shape (output schema, else the spec's example response, else types)."""
    if spec.output_schema:
        return shape(spec.output_schema)
    if spec.http is not None and spec.http.response_schema:
        return shape(spec.http.response_schema)
    if spec.http is not None and spec.http.response_example is not None:
        return example_shape(spec.http.response_example)
    if spec.output_types:
        return ('{"artifact": str (pass it to later tools), "type": str, "content": str, "provenance": str}'
                f"  (produces: {', '.join(spec.output_types)})")
    return "JSON (shape not documented)"


def execution_doc(spec: ToolSpec, api_name: str) -> str:
    """The documentation the execution agent gets for one tool."""
    lines = [signature(spec, api_name), f"  {first_sentence(spec.description, 300) or '(no description)'}"]
    if spec.http is not None:
        lines.append(f"  HTTP: {spec.http.method} {spec.http.path}")
    lines.append("Arguments:")
    lines.append(argument_help(spec))
    lines.append("Returns: " + returns(spec))
    return "\n".join(lines)


def slim(spec: ToolSpec) -> ToolSpec:
    """``spec`` without its response schema and example (which can be large), for trajectory headers."""
    http = spec.http.model_copy(update={"response_schema": None, "response_example": None}) if spec.http else None
    return spec.model_copy(update={"output_schema": None, "http": http})


__all__ = [
    "argument_help",
    "argument_names",
    "example_shape",
    "execution_doc",
    "first_sentence",
    "python_call",
    "python_value",
    "returns",
    "shape",
    "signature",
    "slim",
    "tool_line",
    "tool_list",
]
