"""Grounded arguments (beyond the paper): the grounding agent may give an id-like argument only a value it has
seen, in the task or in an earlier tool result.

Small models call the first tool with an invented id (``movie_id=1``, a title passed as an id) and get the same
404 again and again. With the option (``conagents-auto-grounded``, ``conagents-adaptive-grounded``), the plan's
JSON Schema (:func:`plan_argument_schema`) splits an argument into two shapes: an id-like name (``id``,
``movie_id``, ``ids``, ``playlistId`` ...; :func:`id_like`) whose value is an ``enum`` of the values seen so far
(:func:`seen_values`), or any other parameter name of the offered tools with free text. Under constrained
decoding (llama.cpp grammars, OpenAI-style ``json_schema``) the model cannot write anything else; with a
backend that does not constrain, :func:`ungrounded` names the offending argument and the turn fails (recorded,
the model asked again), so the option means the same everywhere. Before any id has been seen, the id shape is
absent: the model must first call a tool that finds one. Per tool (:func:`tool_argument_schemas`), an id the tool
declares an integer takes only the integers seen (a title in a result is no ``movie_id``), a tool whose
required id has no such value yet is not offered, a call gives at least as many arguments as the tool requires,
and a plan that leaves a required argument out is refused (:func:`ungrounded`).

What the option did is counted per episode (``counters``: plans made under it, plans offered values, values
offered), so a run shows whether it ever constrained anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..schema import ToolSpec
from .prompts import Plan

_ID = re.compile(r"(?:^|_)[iI][dD][sS]?$|[a-z](?:Id|Ids|ID|IDs)$")
_NUMBER = re.compile(r"(?<![\w.])\d{1,12}(?![\w.])")

MAX_VALUES = 60
"""Most values offered (the newest results first)."""

PER_RESULT = 25
"""Most id values taken from one tool result (a search lists many; the first ones are the likely ones)."""

MAX_VALUE_CHARS = 64


def id_like(name: str) -> bool:
    """Whether an argument name is an identifier (``id``, ``movie_id``, ``ids``, ``playlistId``)."""
    return bool(_ID.search(name.strip()))


def parameter_names(tools: Sequence[ToolSpec]) -> tuple[list[str], list[str]]:
    """(id-like, other) parameter names over the offered tools, in order, without repeats."""
    ids: list[str] = []
    other: list[str] = []
    for spec in tools:
        props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
        for name in props if isinstance(props, dict) else []:
            target = ids if id_like(name) else other
            if name not in ids and name not in other:
                target.append(name)
    return ids, other


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(int(value)) if isinstance(value, int) or float(value).is_integer() else str(value)
    if isinstance(value, str) and 0 < len(value.strip()) <= MAX_VALUE_CHARS:
        return value.strip()
    return None


def ids_in(value: Any, limit: int = PER_RESULT) -> list[str]:
    """Values under id-like keys anywhere in a JSON value, in document order (at most ``limit``)."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if len(out) >= limit:
            return
        if isinstance(v, dict):
            for k, x in v.items():
                if id_like(str(k)):
                    for item in x if isinstance(x, list) else [x]:
                        s = _scalar(item)
                        if s is not None and s not in out and len(out) < limit:
                            out.append(s)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return out


def values_in_text(text: str) -> list[str]:
    """Integers written in a text (the task's "movie 155", a step's extracted result)."""
    return list(dict.fromkeys(_NUMBER.findall(text or "")))


def seen_values(query: str, results: Iterable[Any], extracted: Iterable[Any] = ()) -> list[str]:
    """The values an id-like argument may take: ids in the earlier tool results (``results``: their JSON
    contents, oldest first; the newest come first here), the scalars and numbers of the values the execution
    agent extracted (``extracted``), and the integers in the task."""
    out: list[str] = []
    for value in reversed(list(extracted)):
        items = value if isinstance(value, list) else [value]
        for item in items[:PER_RESULT]:
            s = _scalar(item)
            if s is not None:
                out.append(s)
        if isinstance(value, (dict, list)):
            out += ids_in(value)
        elif isinstance(value, str):
            out += values_in_text(value)
    for content in reversed(list(results)):
        out += ids_in(content)
    out += values_in_text(query)
    return list(dict.fromkeys(out))[:MAX_VALUES]


def plan_argument_schema(tools: Sequence[ToolSpec], values: Sequence[str]) -> dict[str, Any]:
    """The schema of one plan argument under the option: an id-like name with a seen value, or another
    parameter name with free text (no id shape while nothing has been seen)."""
    ids, other = parameter_names(tools)
    shapes: list[dict[str, Any]] = []
    if ids and values:
        shapes.append({"type": "object", "properties": {"name": {"type": "string", "enum": ids},
                                                        "value": {"type": "string", "enum": list(values)}},
                       "required": ["name", "value"], "additionalProperties": False})
    if other:
        shapes.append({"type": "object", "properties": {"name": {"type": "string", "enum": other},
                                                        "value": {"type": "string", "maxLength": 120}},
                       "required": ["name", "value"], "additionalProperties": False})
    if not shapes:  # tools without declared parameters: nothing to ground, any name
        return {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                                 "value": {"type": "string", "maxLength": 120}},
                "required": ["name", "value"], "additionalProperties": False}
    return shapes[0] if len(shapes) == 1 else {"anyOf": shapes}


def tool_argument_schemas(tools: Sequence[ToolSpec], values: Sequence[str]) -> dict[str, dict[str, Any] | None]:
    """Per offered tool, the schema of one of its plan arguments under the option: one of *its own* parameter
    names, an id-like one only with a value seen so far; None for a tool whose required id-like parameter has no
    value yet (it is not offered until a call finds one)."""
    out: dict[str, dict[str, Any] | None] = {}
    for spec in tools:
        props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
        names = [str(n) for n in props] if isinstance(props, dict) else []
        raw = spec.parameters.get("required") if isinstance(spec.parameters, dict) else None
        required = [str(n) for n in raw] if isinstance(raw, list) else []
        ids = [n for n in names if id_like(n)]
        other = [n for n in names if not id_like(n)]
        allowed = {n: allowed_values(spec, n, values) for n in ids}
        if any(n in ids and not allowed[n] for n in required):
            out[spec.name] = None
            continue
        shapes: list[dict[str, Any]] = []
        groups: dict[tuple[str, ...], list[str]] = {}  # ids that take the same values share one shape
        for n in ids:
            if allowed[n]:
                groups.setdefault(tuple(allowed[n]), []).append(n)
        for group_values, group in groups.items():
            shapes.append({"type": "object", "properties": {"name": {"type": "string", "enum": group},
                                                            "value": {"type": "string", "enum": list(group_values)}},
                           "required": ["name", "value"], "additionalProperties": False})
        if other:
            shapes.append({"type": "object", "properties": {"name": {"type": "string", "enum": other},
                                                            "value": {"type": "string", "maxLength": 120}},
                           "required": ["name", "value"], "additionalProperties": False})
        if not shapes:
            shapes.append({"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                                            "value": {"type": "string", "maxLength": 120}},
                           "required": ["name", "value"], "additionalProperties": False})
        out[spec.name] = shapes[0] if len(shapes) == 1 else {"anyOf": shapes}
    return out


_INTEGER = re.compile(r"^-?\d+$")


def _declared_type(spec: ToolSpec | None, name: str) -> Any:
    props = spec.parameters.get("properties") if spec is not None and isinstance(spec.parameters, dict) else None
    prop = props.get(name) if isinstance(props, dict) else None
    return prop.get("type") if isinstance(prop, dict) else None


def allowed_values(spec: ToolSpec | None, name: str, values: Sequence[str]) -> list[str]:
    """The seen values an id-like parameter ``name`` of ``spec`` may take: the integers among them when the tool
    declares it an integer (a title seen in a result is no ``movie_id``), else all of them."""
    if _declared_type(spec, name) in ("integer", "number"):
        return [v for v in values if _INTEGER.match(v.strip())]
    return list(values)


def required_names(spec: ToolSpec | None) -> list[str]:
    """The tool's required parameter names (from its JSON Schema)."""
    raw = spec.parameters.get("required") if spec is not None and isinstance(spec.parameters, dict) else None
    return [str(n) for n in raw] if isinstance(raw, list) else []


def ungrounded(plan: Plan, values: Sequence[str], spec: ToolSpec | None = None) -> str | None:
    """Why ``plan`` breaks the option, or None: an id-like argument with a value never seen (for an integer
    parameter, never seen as an integer), or, given the tool's ``spec``, a required argument left out."""
    for name, value in plan.arguments.items():
        if not id_like(name):
            continue
        allowed = allowed_values(spec, name, values)
        if value.strip() not in allowed:
            seen = ", ".join(allowed[:8]) or "none yet: call a tool that finds it first"
            return f"{name}={value!r} was not seen in the task or an earlier result (seen: {seen})"
    missing = [n for n in required_names(spec) if not str(plan.arguments.get(n, "")).strip()]
    if missing:
        return f"{plan.tool} needs {', '.join(missing)}: give {'it' if len(missing) == 1 else 'them'} a value"
    return None


__all__ = ["MAX_VALUES", "PER_RESULT", "allowed_values", "id_like", "ids_in", "parameter_names",
           "plan_argument_schema", "required_names", "seen_values", "tool_argument_schemas", "ungrounded",
           "values_in_text"]
