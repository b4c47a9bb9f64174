"""JSON Schemas that constrain the data engine's answers (pure).

Wherever the backend supports it (llama.cpp grammars, OpenAI strict schemas, vLLM/SGLang guided decoding) the
answer cannot leave these shapes:

- a node's ``task`` is one of the tools offered (the sampled tools; the whole library for self-instruct), and
  each alternative of ``anyOf`` carries *that* tool's arguments: an object over its argument names (resource:
  one per input type; temporal: its parameters, optional ones nullable), closed, every key required;
- an API tool's parameter has the type its own JSON Schema declares (:func:`value_schema`): an integer, a
  number, a boolean, one of its ``enum`` values, an array of such values (at most :data:`MAX_ITEMS`), or a
  closed object over its declared properties; strings, untyped values and free-form objects are text;
- the node and step arrays have exactly the subgraph's size, the link array at most as many entries as the
  structure can have, every string a ``maxLength``;

so no repetition loop can run until ``max_tokens``. Every object is closed and lists all its properties as
required, as OpenAI's strict mode demands; no ``$ref``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..schema import Tool

__all__ = [
    "MAX_ITEMS",
    "Limits",
    "critic_schema",
    "follow_ref",
    "generation_schema",
    "judge_schema",
    "strict_backend",
    "SCORE_NAMES",
    "value_schema",
]

SCORE_NAMES: tuple[str, ...] = ("naturalness", "complexity", "alignment")
"""The judge's dimensions: the human-evaluation dimensions of the TaskBench paper (Table 2)."""


class Limits(BaseModel):
    """Upper bounds (characters) on the free-text strings of an answer (``maxLength``; None: unbounded)."""

    user_request: int | None = Field(default=800, ge=16, description="The user request.")
    step: int | None = Field(default=200, ge=16, description="One task step.")
    value: int | None = Field(default=200, ge=8, description="One argument value.")
    comments: int | None = Field(default=400, ge=16, description="The teacher's or critic's comments.")

    def unbounded(self) -> Limits:
        """The same schema without string bounds (OpenAI's strict mode does not take ``maxLength``)."""
        return Limits(user_request=None, step=None, value=None, comments=None)


def _text(max_length: int | None) -> dict[str, Any]:
    return {"type": "string"} if max_length is None else {"type": "string", "maxLength": max_length}


def _closed(properties: dict[str, Any], title: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if title:
        out = {"title": title, **out}
    return out


def _array(items: dict[str, Any], min_items: int, max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "minItems": min_items, "maxItems": max_items}


MAX_ITEMS = 8
"""Most items of one array argument (``maxItems``; a declared ``maxItems`` below it is kept)."""
MAX_DEPTH = 3
"""Arrays and objects nested deeper than this in a parameter's schema are written as JSON text."""

_SCALARS = {"integer": {"type": "integer"}, "number": {"type": "number"}, "boolean": {"type": "boolean"}}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if schema.get("type") == "null" or {"type": "null"} in schema.get("anyOf", []):
        return schema
    if "anyOf" in schema:
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def follow_ref(schema: Any, root: Any, seen: frozenset[str] = frozenset()) -> tuple[Any, frozenset[str]]:
    """``schema`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) into ``root`` followed, and the refs
    followed so far; a ref already followed on this path (a recursive schema) or one that leads nowhere gives
    None."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        if ref in seen or not ref.startswith("#/"):
            return None, seen
        seen = seen | {ref}
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        schema = target
    return schema, seen


def _declared_type(type_name: str) -> dict[str, Any]:
    """A declared type as the loaders write it (``integer``, ``array[string]``, ``string|null``, ``date``) as a
    JSON Schema (for tools that have named parameters but no input schema)."""
    names = [t.strip().lower() for t in str(type_name).split("|") if t.strip()]
    out: list[dict[str, Any]] = []
    for name in names:
        m = re.fullmatch(r"(?:array|list)\[(.+)\]", name)
        if m:
            out.append({"type": "array", "items": _declared_type(m.group(1))})
        elif name in ("array", "list"):
            out.append({"type": "array"})
        elif name in ("int", "integer"):
            out.append({"type": "integer"})
        elif name in ("float", "number", "double"):
            out.append({"type": "number"})
        elif name in ("bool", "boolean"):
            out.append({"type": "boolean"})
        elif name == "null":
            out.append({"type": "null"})
        else:
            out.append({"type": "string"})
    if not out:
        return {"type": "string"}
    return out[0] if len(out) == 1 else {"anyOf": out}


def value_schema(declared: Any, limits: Limits, *, root: Any = None, depth: int = 0,
                 _seen: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The answer schema of one value whose declared JSON Schema is ``declared`` (``root``: the document its
    local ``$ref`` s point into). Bounded and in the subset that llama.cpp's grammar converter and OpenAI's strict
    mode both take: ``enum`` values (scalars) as declared; integer, number, boolean; an array of such values,
    at most :data:`MAX_ITEMS` (or the declared ``maxItems``); a closed object over the declared properties, every
    key required and the optional ones nullable; a union (``anyOf``, a list of types) of the branches. Anything
    else — strings, free-form objects and maps, values nested deeper than :data:`MAX_DEPTH`, recursive or
    unreadable schemas — is bounded text (the execution critic reads JSON text back into the declared type)."""
    text = _text(limits.value)
    schema, seen = follow_ref(declared, root, _seen)
    if not isinstance(schema, dict):
        return text
    values = schema.get("enum") if isinstance(schema.get("enum"), list) else (
        [schema["const"]] if "const" in schema else None)
    if values is not None:
        scalars = [v for v in values if isinstance(v, (str, int, float, bool))]
        scalars = list({json.dumps(v): v for v in scalars}.values())
        if scalars:
            out: dict[str, Any] = {"enum": scalars}
            kinds = {"boolean" if isinstance(v, bool) else "string" if isinstance(v, str) else
                     "integer" if isinstance(v, int) else "number" for v in scalars}
            if kinds == {"integer", "number"}:
                kinds = {"number"}
            if len(kinds) == 1:
                out = {"type": kinds.pop(), **out}
            return _nullable(out) if None in values else out
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        return _union([value_schema(b, limits, root=root, depth=depth, _seen=seen) for b in branches])
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return value_schema(all_of[0], limits, root=root, depth=depth, _seen=seen)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([value_schema({**schema, "type": k}, limits, root=root, depth=depth, _seen=seen)
                       for k in kind if isinstance(k, str)])
    if kind is None:
        kind = "object" if isinstance(schema.get("properties"), dict) else \
            "array" if isinstance(schema.get("items"), dict) else None
    if kind in _SCALARS:
        return dict(_SCALARS[kind])
    if kind == "null":
        return {"type": "null"}
    if kind == "array" and depth < MAX_DEPTH:
        items = schema.get("items")
        item = value_schema(items, limits, root=root, depth=depth + 1, _seen=seen) if isinstance(items, dict) \
            else text
        declared_max = schema.get("maxItems")
        most = min(declared_max, MAX_ITEMS) if isinstance(declared_max, int) and declared_max >= 0 else MAX_ITEMS
        least = schema.get("minItems")
        least = min(least, most) if isinstance(least, int) and least > 0 else 0
        return _array(item, least, most)
    props = schema.get("properties")
    if kind == "object" and isinstance(props, dict) and props and depth < MAX_DEPTH:
        found = schema.get("required")
        required: list[Any] = found if isinstance(found, list) else []
        fields = {}
        for name, sub in props.items():
            field = value_schema(sub, limits, root=root, depth=depth + 1, _seen=seen)
            fields[str(name)] = field if name in required else _nullable(field)
        return _closed(fields)
    return text


def _union(branches: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema for the alternatives (duplicates dropped, a nested ``anyOf`` flattened)."""
    flat: list[dict[str, Any]] = []
    for b in branches:
        for x in b.get("anyOf", [b]) if set(b) == {"anyOf"} else [b]:
            if x not in flat:
                flat.append(x)
    if len(flat) == 1:
        return flat[0]
    return {"anyOf": flat}


def parameter_schema(tool: Tool, name: str, declared_type: str, required: bool, limits: Limits) -> dict[str, Any]:
    """The answer schema of one named parameter: its declared JSON Schema (the tool's input schema; else its
    declared type) as :func:`value_schema` bounds it, nullable when the parameter is optional."""
    root = tool.input_schema if isinstance(tool.input_schema, dict) else None
    props = root.get("properties") if root is not None else None
    declared: Any = props.get(name) if isinstance(props, dict) and name in props else _declared_type(declared_type)
    schema = value_schema(declared, limits, root=root)
    return schema if required else _nullable(schema)


def arguments_schema(tool: Tool, dependency: str, limits: Limits) -> dict[str, Any]:
    """The ``arguments`` object of one tool: its argument names as keys (see the module docstring)."""
    props: dict[str, Any] = {}
    if dependency == "resource":
        for name in tool.argument_names():
            props[name] = _text(limits.value)
    else:
        for p in tool.parameters or []:
            props[p.name] = parameter_schema(tool, p.name, p.type, p.required, limits)
    return _closed(props)


def node_schema(tools: Sequence[Tool], dependency: str, limits: Limits) -> dict[str, Any]:
    """One invocation node: ``{"task": <tool>, "arguments": {...}}``, one ``anyOf`` branch per tool."""
    branches = [
        _closed({"task": {"type": "string", "enum": [t.id]}, "arguments": arguments_schema(t, dependency, limits)})
        for t in tools
    ]
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def teacher_schema(limits: Limits) -> dict[str, Any]:
    """``check_by_teacher``: the comments, then the two verdicts of the paper's template."""
    return _closed({"comments": _text(limits.comments), "executable": {"type": "boolean"}, "correct": {"type": "boolean"}})


def generation_schema(
    tools: Sequence[Tool],
    dependency: str,
    *,
    n_nodes: int,
    max_links: int,
    parts: Sequence[str] = ("task_steps", "user_request", "invoking_graph", "check_by_teacher"),
    limits: Limits | None = None,
    title: str = "BackInstruct",
) -> dict[str, Any]:
    """The answer schema of one generation call.

    ``parts`` picks the top-level fields in order (two-stage: ``("user_request",)`` then ``("task_steps",
    "invoking_graph", "check_by_teacher")``). Resource domains get no explicit ``links``: they follow from the
    ``<node-j>`` arguments.
    """
    if not tools:
        raise ValueError("a generation schema needs at least one tool")
    limits = limits or Limits()
    names = [t.id for t in tools]
    props: dict[str, Any] = {}
    for part in parts:
        if part == "task_steps":
            props[part] = _array(_text(limits.step), n_nodes, n_nodes)
        elif part == "user_request":
            props[part] = _text(limits.user_request)
        elif part == "invoking_graph":
            graph: dict[str, Any] = {"nodes": _array(node_schema(tools, dependency, limits), n_nodes, n_nodes)}
            if dependency != "resource":
                link = _closed({"source": {"type": "string", "enum": names}, "target": {"type": "string", "enum": names}})
                graph["links"] = _array(link, 0, max(max_links, 0))
            props[part] = _closed(graph)
        elif part == "check_by_teacher":
            props[part] = teacher_schema(limits)
        else:
            raise ValueError(f"unknown answer part {part!r}")
    return _closed(props, title)


def critic_schema(limits: Limits | None = None) -> dict[str, Any]:
    """The separate critic's answer: comments, executable, correct."""
    limits = limits or Limits()
    return {"title": "Critic", **teacher_schema(limits)}


def strict_backend(model: Any) -> bool:
    """True when ``model`` sends schemas in OpenAI's strict mode, which rejects ``maxLength`` (then the arrays
    alone bound an answer)."""
    provider = getattr(model, "provider", None)
    return getattr(provider, "guided_decoding", None) == "response_format" and getattr(provider, "strict", None) is True


def judge_schema(max_reason: int | None = 300) -> dict[str, Any]:
    """The judge's answer: a short reason, then each dimension as an integer 1-5."""
    props: dict[str, Any] = {"reason": _text(max_reason)}
    for name in SCORE_NAMES:
        props[name] = {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    return _closed(props, "Judge")
