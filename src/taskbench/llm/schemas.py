"""JSON Schemas for structured output, and getting JSON back out of free text.

- :func:`task_graph_schema` builds the JSON Schema of a :class:`~taskbench.schema.TaskGraph` whose tool names
  are an ``enum`` of a tool library, in the argument shape of the library's dependency kind (resource: a list of
  strings, ``<node-j>`` references included; temporal: ``{"name", "value"}`` pairs plus explicit links). The
  schema is self-contained (no ``$ref``), closed (``additionalProperties: false``) and lists every property as
  required, so it works as an OpenAI strict schema and as a llama.cpp grammar.
- :func:`resolve_schema` accepts a JSON Schema dict or a pydantic model class.
- :func:`extract_json` finds the JSON document in a model's text (code fences, prose around it) and repairs the
  usual damage (trailing commas, Python literals, single quotes, comments, unclosed brackets from a truncated
  answer). Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..errors import ModelRefusedError
from ..schema import ToolLibrary


def task_graph_schema(
    tools: ToolLibrary | Sequence[str],
    dependency: str | None = None,
    *,
    include_links: bool | None = None,
    max_nodes: int | None = None,
    max_arguments: int | None = None,
    max_string_length: int | None = None,
) -> dict[str, Any]:
    """JSON Schema of a task graph over ``tools``.

    ``dependency`` defaults to the library's; ``include_links`` defaults to True for temporal and False for
    resource domains (resource links follow from ``<node-j>`` references, as in the reference prompt).
    ``max_nodes`` / ``max_arguments`` bound the arrays (``maxItems``), which keeps small constrained models from
    looping until they run out of tokens; ``max_string_length`` bounds every free-text string (``maxLength``).
    """
    if isinstance(tools, ToolLibrary):
        names = tools.names
        dependency = dependency or tools.dependency
    else:
        names = list(tools)
        dependency = dependency or "resource"
    if dependency not in ("resource", "temporal"):
        raise ValueError(f"dependency must be 'resource' or 'temporal', not {dependency!r}")
    if not names:
        raise ValueError("a task graph schema needs at least one tool name")
    if include_links is None:
        include_links = dependency == "temporal"
    tool_name = {"type": "string", "enum": list(names)}
    text: dict[str, Any] = {"type": "string"}
    if max_string_length is not None:
        text["maxLength"] = max_string_length
    if dependency == "resource":
        argument: dict[str, Any] = {
            **text,
            "description": "original text, a user-mentioned file name, or '<node-j>' for the output of node j",
        }
    else:
        argument = {
            "type": "object",
            "properties": {"name": text, "value": text},
            "required": ["name", "value"],
            "additionalProperties": False,
        }
    node = {
        "type": "object",
        "properties": {"task": tool_name, "arguments": _array(argument, None, max_arguments)},
        "required": ["task", "arguments"],
        "additionalProperties": False,
    }
    properties: dict[str, Any] = {
        "task_steps": _array(text, None, max_nodes),
        "task_nodes": _array(node, 1, max_nodes),
    }
    if include_links:
        link = {
            "type": "object",
            "properties": {"source": tool_name, "target": tool_name},
            "required": ["source", "target"],
            "additionalProperties": False,
        }
        properties["task_links"] = _array(link, None, None if max_nodes is None else max(max_nodes - 1, 0) * max_nodes)
    return {
        "title": "TaskGraph",
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _array(items: dict[str, Any], min_items: int | None, max_items: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": items}
    if min_items is not None:
        out["minItems"] = min_items
    if max_items is not None:
        out["maxItems"] = max_items
    return out


def resolve_schema(schema: Any) -> tuple[dict[str, Any] | None, str, type | None]:
    """``(json_schema, name, pydantic_model_or_None)`` for a JSON Schema dict or a pydantic model class."""
    if schema is None:
        return None, "result", None
    if isinstance(schema, dict):
        return schema, _schema_name(schema.get("title")), None
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema(), _schema_name(schema.__name__), schema
    raise TypeError(f"schema must be a JSON Schema dict or a pydantic model class, not {type(schema).__name__}")


def _schema_name(title: Any) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(title or "result"))[:64]
    return name or "result"


def schema_instruction(schema: dict[str, Any]) -> str:
    """A prompt paragraph asking for JSON valid against ``schema`` (for servers without guided decoding)."""
    return (
        "Answer with one JSON document only (no prose, no code fences) that is valid against this JSON Schema:\n"
        + json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    )


# --------------------------------------------------------------------------------------------- extraction

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


class JSONExtractionError(ModelRefusedError, ValueError):
    """No JSON document could be found or repaired in a text (the model answered, but not with JSON; still a
    ``ValueError`` for callers that catch that)."""


def extract_json(text: str) -> Any:
    """The JSON value a model meant to write in ``text``.

    Tries, in order: the whole text; the content of each code fence; each balanced ``{...}``/``[...]`` span
    from the first opening bracket; then the same candidates after :func:`repair_json`. Raises
    :class:`JSONExtractionError` with a short reason when nothing parses.
    """
    if not isinstance(text, str):
        raise JSONExtractionError(f"expected text, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise JSONExtractionError("empty output")
    candidates = [stripped]
    candidates.extend(m.group(1).strip() for m in _FENCE.finditer(text))
    start = _first_open(stripped)
    if start is not None:
        span = _balanced_span(stripped, start)
        candidates.append(span if span is not None else stripped[start:])
    first_error: json.JSONDecodeError | None = None
    for cand in candidates:
        try:
            return json.loads(cand)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
    for cand in candidates:
        if _first_open(cand) is None:
            continue
        repaired = repair_json(cand[_first_open(cand) :])
        try:
            return json.loads(repaired)
        except json.JSONDecodeError:
            continue
    where = f" ({first_error.msg} at line {first_error.lineno} column {first_error.colno})" if first_error else ""
    raise JSONExtractionError(f"no valid JSON found in the output{where}")


def _first_open(text: str) -> int | None:
    positions = [p for p in (text.find("{"), text.find("[")) if p >= 0]
    return min(positions) if positions else None


def _balanced_span(text: str, start: int) -> str | None:
    """The bracket-balanced span starting at ``start`` (strings respected), or None when it never closes."""
    depth = 0
    in_str: str | None = None
    escape = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == in_str:
                in_str = None
        elif ch == '"':
            in_str = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


_LITERALS = {"True": "true", "False": "false", "None": "null"}


def repair_json(text: str) -> str:
    """Best-effort repair of almost-JSON: comments, single-quoted strings, Python literals, trailing commas,
    and brackets/strings left open by a truncated answer. Returns text that may or may not parse."""
    out: list[str] = []
    stack: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            # copy a string, normalising the quote to '"'
            quote, j, buf = ch, i + 1, []
            while j < n and text[j] != quote:
                if text[j] == "\\" and j + 1 < n:
                    if quote == "'" and text[j + 1] == "'":
                        buf.append("'")
                    else:
                        buf.append(text[j : j + 2])
                    j += 2
                    continue
                if quote == "'" and text[j] == '"':
                    buf.append('\\"')
                elif text[j] == "\n":
                    buf.append("\\n")
                else:
                    buf.append(text[j])
                j += 1
            out.append('"' + "".join(buf) + '"')
            i = j + 1
            continue
        if ch == "/" and i + 1 < n and text[i + 1] in "/*":
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2)
            i = n if end < 0 else end + (0 if text[i + 1] == "/" else 2)
            continue
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            _drop_trailing_comma(out)
            if stack:
                stack.pop()
            else:
                i += 1
                continue
            if not stack:
                out.append(ch)
                break  # the document is complete; ignore what follows
        elif ch.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_LITERALS.get(word, word))
            i = j
            continue
        out.append(ch)
        i += 1
    # truncated: close what is open (drop a dangling key or comma first)
    if stack:
        tail = "".join(out).rstrip()
        tail = re.sub(r'(,\s*"[^"]*"\s*:?\s*|,\s*|:\s*)$', "", tail)
        out = [tail]
        while stack:
            _drop_trailing_comma(out)
            out.append(stack.pop())
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    k = len(out) - 1
    while k >= 0 and out[k].isspace():
        k -= 1
    if k >= 0 and out[k].rstrip().endswith(","):
        out[k] = out[k].rstrip()[:-1]
        del out[k + 1 :]


__all__ = [
    "JSONExtractionError",
    "extract_json",
    "repair_json",
    "resolve_schema",
    "schema_instruction",
    "task_graph_schema",
]
