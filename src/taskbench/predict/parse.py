"""From model text to a :class:`~taskbench.schema.Prediction`: find the JSON object, repair the usual damage.

Parsing is its own step (never hidden inside a metric): a failure is recorded in the prediction's ``error``
with the raw text kept, and the evaluator counts it.

:func:`extract_result` tries, in order, and stops at the first that yields a JSON object:

1. the whole text (after removing code fences and anything up to a ``RESULT #:`` / ``STRICT JSON FORMAT #:``
   marker the model echoed);
2. every ``{`` in the text, decoding one JSON value from there (so prose before or after is ignored); an
   object with ``task_nodes`` or ``task_steps`` wins over other objects;
3. the reference scripts' cut: from the first ``{`` to the last ``}``, newlines and ``\\_`` escapes removed;
4. light repairs of that cut: trailing commas, Python literals (``True``/``None``, single quotes).

A top-level list of objects is merged key by key (lists concatenated), as the reference does. A step-aligned
task plan (``{"steps": [...]}``, :mod:`taskbench.predict.plan`) is turned into the reference result shape.

An answer cut off by the token limit (``finish_reason == "length"``) is a failure: its result is not kept,
however much of it could be repaired, and the error says why (the raw text stays in the record).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from ..schema import Prediction, Usage
from ..schema.sample import TRUNCATED

MARKERS: tuple[str, ...] = ("STRICT JSON FORMAT #:", "RESULT #:")
"""Prompt markers a model may echo before its answer."""

_FENCE = re.compile(r"```(?:json|JSON)?")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_KEYS = ("task_nodes", "task_steps", "task_links")


def _after_marker(text: str) -> str:
    for marker in MARKERS:
        pos = text.rfind(marker)
        if pos != -1 and "{" in text[pos:]:
            return text[pos + len(marker) :]
    return text


def _merge_list(value: list[Any]) -> dict[str, Any] | None:
    """The reference merges a list of objects into one: list values are concatenated, others replaced."""
    if not value or not all(isinstance(v, dict) for v in value):
        return None
    merged: dict[str, Any] = {}
    for part in value:
        for key, item in part.items():
            if key in merged and isinstance(merged[key], list) and isinstance(item, list):
                merged[key] = merged[key] + item
            else:
                merged[key] = item
    return merged


def _as_object(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, list):
        return _merge_list(value)
    return None


def _scan_objects(text: str) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
            pos = text.find("{", end)
        else:  # pragma: no cover - raw_decode at '{' always gives a dict
            pos = text.find("{", pos + 1)
    return found


def _python_literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def extract_result(text: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The task-graph result object in a model's free-text answer, or ``(None, reason)`` when there is none.

    Not :func:`taskbench.llm.extract_json` (any JSON value, raising on failure): this one prefers an object with
    the result's keys and falls back on the reference scripts' cut (first ``{`` to last ``}``), as listed above."""
    if text is None or not text.strip():
        return None, "empty output"
    body = _FENCE.sub("", _after_marker(text)).strip()
    # 1. the whole text
    try:
        obj = _as_object(json.loads(body))
        if obj is not None:
            return obj, None
    except json.JSONDecodeError:
        pass
    # 2. every object in the text; prefer one that looks like a task graph
    objects = _scan_objects(body)
    for obj in objects:
        if any(k in obj for k in _KEYS):
            return obj, None
    # 3. the reference's cut (first '{' .. last '}', newlines and '\_' removed)
    start, end = body.find("{"), body.rfind("}")
    if start == -1:
        return None, "no JSON object in the output"
    if end <= start:
        return None, "unterminated JSON object (output truncated?)"
    cut = body[start : end + 1].replace("\n", "").replace("\\_", "_")
    try:
        obj = _as_object(json.loads(cut))
        if obj is not None:
            return obj, None
    except json.JSONDecodeError as exc:
        first_error = f"invalid JSON: {exc.msg} at column {exc.colno}"
    else:  # pragma: no cover - json.loads on '{...}' gives a dict
        first_error = "not a JSON object"
    # 4. light repairs
    repaired = _TRAILING_COMMA.sub(r"\1", cut)
    try:
        obj = _as_object(json.loads(repaired))
        if obj is not None:
            return obj, None
    except json.JSONDecodeError:
        pass
    obj = _as_object(_python_literal(repaired))
    if obj is not None:
        return json.loads(json.dumps(obj, default=str)), None
    if objects:
        return objects[0], None
    return None, first_error


def normalise_result(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """A parsed value (e.g. from a schema-constrained call) as a result object, or ``(None, reason)``.
    A task plan becomes the reference ``{task_steps, task_nodes, task_links}`` result."""
    from .plan import is_plan, plan_to_result

    obj = _as_object(value)
    if obj is None:
        return None, f"expected a JSON object, got {type(value).__name__}"
    if is_plan(obj):
        return plan_to_result(obj), None
    return obj, None


def make_prediction(
    sample_id: str,
    *,
    user_request: str | None,
    raw: str | None,
    model: str | None,
    usage: Usage | None,
    parsed: Any = None,
    parse_error: str | None = None,
    finish_reason: str | None = None,
) -> Prediction:
    """A :class:`Prediction` from one model answer.

    ``parsed`` is what a schema-constrained call already decoded (used when it is an object); otherwise the
    JSON object is extracted from ``raw``. ``parse_error`` is the backend's reason when its decoding failed;
    it is kept only when extraction from the raw text fails too. ``finish_reason == "length"`` (the answer was
    cut off) makes the prediction a failure with :data:`TRUNCATED` as its error and no result.
    """
    result: dict[str, Any] | None = None
    error: str | None = None
    if finish_reason == "length":
        error = TRUNCATED
    elif parsed is not None:
        result, error = normalise_result(parsed)
    if result is None and error != TRUNCATED:
        result, extract_error = extract_result(raw)
        if result is None:
            error = parse_error or error or extract_error
        else:
            result, error = normalise_result(result)
    return Prediction(
        id=sample_id, user_request=user_request, result=result, error=error, raw=raw, model=model, usage=usage,
        finish_reason=finish_reason,
    )


__all__ = ["MARKERS", "TRUNCATED", "extract_result", "make_prediction", "normalise_result"]
