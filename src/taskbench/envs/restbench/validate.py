"""Request validation against an OpenAPI operation: types, required parameters, enums, bounds.

:func:`validate_request` takes one :class:`~taskbench.schema.HttpOperation` and what arrived over HTTP (path
values, query string, headers, JSON body) and returns the arguments coerced to their declared JSON types, or
the problems found, worded for the caller ("page: expected an integer, got 'two'"). It is pure: the service
turns problems into each API's own error body.

Real specs are messy (Spotify's writes ``"maximum": "50"`` and ``"nullable": "true"`` as strings, TMDB's
declares a ``Content-Type`` header as required on every operation); the rules below accept what the live APIs
accept:

- a header parameter is never required (clients do not send ``Content-Type`` on a GET);
- bounds and defaults written as strings are read as numbers;
- a parameter that appears both in the query and in the body (Spotify's ``ids``) may come in either; the
  query one is then not required.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...schema import HttpOperation, HttpParameter

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _schema_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if isinstance(kind, str):
        return kind
    for key in ("allOf", "oneOf", "anyOf"):
        parts = schema.get(key)
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, Mapping) and _schema_type(part):
                    return _schema_type(part)
    return None


def coerce(value: Any, schema: Mapping[str, Any], *, from_text: bool) -> tuple[Any, str | None]:
    """``value`` as the JSON type ``schema`` declares, or an error message. ``from_text``: the value came as
    text (path, query, header), so "12" may be an integer and "true" a boolean."""
    kind = _schema_type(schema)
    out: Any = value
    if kind == "integer":
        if isinstance(value, bool):
            return value, f"expected an integer, got {json.dumps(value)}"
        if isinstance(value, int):
            out = value
        elif isinstance(value, float) and value.is_integer():
            out = int(value)
        elif from_text and isinstance(value, str) and value.strip().lstrip("-+").isdigit():
            out = int(value.strip())
        else:
            return value, f"expected an integer, got {json.dumps(value, ensure_ascii=False)}"
    elif kind == "number":
        number = _number(value) if (from_text or not isinstance(value, str)) else None
        if number is None:
            return value, f"expected a number, got {json.dumps(value, ensure_ascii=False)}"
        out = int(number) if isinstance(value, int) or (isinstance(value, str) and number.is_integer()
                                                          and "." not in value) else number
    elif kind == "boolean":
        if isinstance(value, bool):
            out = value
        elif from_text and isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            out = value.strip().lower() in _TRUE
        else:
            return value, f"expected true or false, got {json.dumps(value, ensure_ascii=False)}"
    elif kind == "string":
        if isinstance(value, (dict, list)):
            return value, f"expected a string, got {json.dumps(value, ensure_ascii=False)[:60]}"
        out = value if isinstance(value, str) else json.dumps(value)
    elif kind == "array":
        if from_text and isinstance(value, str):
            out = [v for v in (s.strip() for s in value.split(",")) if v]
        elif not isinstance(value, list):
            return value, f"expected an array, got {json.dumps(value, ensure_ascii=False)[:60]}"
        items = schema.get("items")
        if isinstance(items, Mapping) and _schema_type(items):
            coerced = []
            for i, item in enumerate(out):
                item_value, problem = coerce(item, items, from_text=from_text)
                if problem:
                    return value, f"item {i}: {problem}"
                coerced.append(item_value)
            out = coerced
    elif kind == "object":
        if not isinstance(value, dict):
            return value, f"expected an object, got {json.dumps(value, ensure_ascii=False)[:60]}"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        allowed = [str(e) for e in enum]
        if str(out) not in allowed and (kind != "array" or not all(str(v) in allowed for v in out)):
            shown = ", ".join(a if a else "''" for a in allowed)
            return value, f"must be one of {shown}, got {json.dumps(value, ensure_ascii=False)}"
    if kind in ("integer", "number") and not isinstance(out, bool):
        low, high = _number(schema.get("minimum")), _number(schema.get("maximum"))
        if low is not None and out < low:
            return value, f"must be at least {low:g}, got {out}"
        if high is not None and out > high:
            return value, f"must be at most {high:g}, got {out}"
    return out, None


class Problems(list[tuple[str, str, str, str]]):
    """Validation problems: ``(parameter, location, message, kind)`` tuples, kind 'missing' or 'invalid'."""

    def text(self) -> str:
        return "; ".join(f"{name}: {message}" for name, _loc, message, _kind in self)


def validate_request(
    op: HttpOperation,
    path_values: Mapping[str, str],
    query: Mapping[str, str],
    headers: Mapping[str, str],
    body: Any,
) -> tuple[dict[str, Any], Problems]:
    """The validated arguments of one request (every declared parameter that arrived, coerced; defaults from
    the spec filled in for query parameters that did not) and the problems found."""
    args: dict[str, Any] = {}
    problems = Problems()
    body_names = {p.name for p in op.parameters if p.location == "body"}
    body_obj = body if isinstance(body, dict) else {}
    if op.request_body is not None and body is not None and not isinstance(body, dict):
        if _schema_type(op.request_body) == "object":
            problems.append(("body", "body", "the request body must be a JSON object", "invalid"))
    lowered = {k.lower(): v for k, v in headers.items()}
    for p in op.parameters:
        value: Any
        present: bool
        if p.location == "path":
            present, value = p.name in path_values, path_values.get(p.name)
        elif p.location == "query":
            present, value = p.name in query, query.get(p.name)
            if present and isinstance(value, str) and value == "" and p.required:
                present = False
        elif p.location == "header":
            present, value = p.name.lower() in lowered, lowered.get(p.name.lower())
        elif p.location == "body":
            present, value = p.name in body_obj, body_obj.get(p.name)
        else:  # cookie: not used by the services
            continue
        if not present:
            if _required(p, body_names, body_obj):
                problems.append((p.name, p.location, f"required {p.location} parameter is missing", "missing"))
            continue
        if p.location == "body" and value is None:
            args.setdefault(p.name, None)
            continue
        coerced, problem = coerce(value, p.json_schema or {"type": "string"}, from_text=p.location != "body")
        if problem:
            problems.append((p.name, p.location, problem, "invalid"))
            continue
        if p.name in args and p.location == "body":
            continue  # the query value wins when both came
        args[p.name] = coerced
    for p in op.parameters:  # spec defaults for absent optional query parameters
        if p.location == "query" and p.name not in args and "default" in p.json_schema:
            default, problem = coerce(p.json_schema["default"], p.json_schema, from_text=True)
            if not problem:
                args[p.name] = default
    return args, problems


def _required(p: HttpParameter, body_names: set[str], body: Mapping[str, Any]) -> bool:
    if p.location == "header":
        return False
    if p.location == "query" and p.name in body_names and p.name in body:
        return False  # Spotify: ids in the body instead of the query
    return p.required


__all__ = ["Problems", "coerce", "validate_request"]
