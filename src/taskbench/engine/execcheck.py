"""The execution critic: run a generated sample's gold graph in the executable environment (``generate --env``).

Each node is called once, in the order its links give (a topological order; ties in node order), with its
arguments as the tool's parameters (temporal ``{name, value}`` pairs; a resource sample's positional values
take the tool's parameters in order; a null value is left out). A value that is exactly ``"<node-j>"`` (also as
an item of an array, or a field of an object) is replaced by node j's result: its text, or its JSON, where the
parameter takes text; the result itself where it takes an array or an object. Every value then takes the type
the tool's input schema declares where a string says it unambiguously (:func:`coerce`: ``"3"`` is 3 for an
integer, ``"true"`` is true for a boolean, a JSON array's text is the array; ``"three"`` stays a string, and
the environment decides). The sample passes when every call returns a result; a
call fails when the environment says so (an error result) or its text answer is an error message
(:data:`ERROR_TEXT`: some servers report failures as ordinary text). The first call that fails stops the run and
is the reason (``exec_failed: node 2 (read_query): no such table:
users``). The calls and a short form of their results are kept in the record (``execution``) and become the
``exec`` critic's verdict (:func:`taskbench.engine.output.assess`), which every ``--keep`` but ``none``
requires, and the task checker of ``agents eval --tasks DIR`` (:mod:`taskbench.envs.tasks`).

The calls change the environment as the gold graph says (a write query writes): generate against a copy of
the data you care about. One sample's graph runs at a time (the engine holds a lock around it).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..envs.state import ERROR_TEXT, result_error
from ..schema import NODE_REF, Sample, TaskArgument, ToolCall
from ..schema.generation import GoldCall, GoldExecution
from .schemas import follow_ref

__all__ = ["ERROR_TEXT", "EXEC_CODES", "coerce", "execute_gold", "execution_order"]

EXEC_CODES = {
    "exec_failed": "a call of the gold graph returned an error in the environment",
    "exec_unrunnable": "the gold graph cannot be run (no nodes, a cycle, a tool the environment lacks)",
}
RESULT_CHARS = 2000
"""Most characters of one call's result kept in the record."""


def execution_order(sample: Sample) -> list[int] | None:
    """Node indices in a topological order of the sample's links (ties in node order); None on a cycle."""
    from ..envs.tasks import gold_order

    return gold_order([n.task for n in sample.task_nodes],
                      [(lk.source, lk.target) for lk in [*sample.task_links, *sample.reference_links()]])


def _short(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= RESULT_CHARS:
        return value
    return text[:RESULT_CHARS] + " ..."


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _resolved(schema: Any, root: Any) -> Any:
    """``schema`` with local ``$ref`` s followed (None for a recursive or dangling one)."""
    return follow_ref(schema, root)[0]


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    if isinstance(schema.get("properties"), dict):
        return ["object"]
    if isinstance(schema.get("items"), dict):
        return ["array"]
    return []


def _fits(value: Any, kind: str) -> bool:
    return {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
        "null": value is None,
    }.get(kind, False)


_INTEGER = re.compile(r"[-+]?\d{1,300}")


def _from_text(text: str, kind: str) -> Any:
    """``text`` as a value of ``kind`` when it says one unambiguously, else :data:`_NO`."""
    s = text.strip()
    if kind == "integer" and _INTEGER.fullmatch(s):
        return int(s)
    if kind == "number":
        if _INTEGER.fullmatch(s):
            return int(s)
        try:
            number = float(s)
        except ValueError:
            return _NO
        return number if math.isfinite(number) and any(c.isdigit() for c in s) else _NO
    if kind == "boolean" and s.lower() in ("true", "false"):
        return s.lower() == "true"
    if kind in ("array", "object") and s[:1] in "[{":
        try:
            parsed = json.loads(s)
        except ValueError:
            return _NO
        return parsed if _fits(parsed, kind) else _NO
    if kind == "null" and s.lower() == "null":
        return None
    return _NO


_NO = object()


def coerce(value: Any, schema: Any, root: Any = None, depth: int = 0) -> Any:
    """``value`` in the type its declared JSON Schema ``schema`` gives, where that is unambiguous: a string that
    is an integer, a number, ``true``/``false`` or the JSON text of an array or object becomes that value (a
    number written for a string parameter becomes its text); arrays and objects are coerced item by item and
    field by field (a null optional field is left out). A value that fits already, or that no reading makes
    fit, is returned as it is. ``root`` is the document local ``$ref`` s point into."""
    schema = _resolved(schema, root)
    if not isinstance(schema, dict) or depth > 16:
        return value
    branches = [b for b in (schema.get("anyOf") or schema.get("oneOf") or []) if isinstance(b, dict)]
    if branches:
        resolved = [_resolved(b, root) for b in branches]
        kinds = [k for b in resolved if isinstance(b, dict) for k in _types(b)]
        if any(_fits(value, k) for k in kinds):
            fitting = next(b for b in resolved if isinstance(b, dict) and any(_fits(value, k) for k in _types(b)))
            return coerce(value, fitting, root, depth + 1)
        for b in resolved:
            out = coerce(value, b, root, depth + 1)
            if out is not value:
                return out
        return value
    kinds = _types(schema)
    if not kinds:
        return value
    kind = next((k for k in kinds if _fits(value, k)), None)
    if kind is None and isinstance(value, str):
        for k in kinds:
            out = _from_text(value, k)
            if out is not _NO:
                value, kind = out, k
                break
    elif kind is None and "string" in kinds and isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return [coerce(v, schema["items"], root, depth + 1) for v in value]
    if kind == "object" and isinstance(schema.get("properties"), dict):
        props = schema["properties"]
        found = schema.get("required")
        required: list[Any] = found if isinstance(found, list) else []
        return {k: coerce(v, props[k], root, depth + 1) if k in props else v for k, v in value.items()
                if not (v is None and k in props and k not in required)}
    return value


def _substitute(value: Any, schema: Any, root: Any, outputs: dict[int, Any]) -> Any:
    """``value`` with each ``"<node-j>"`` (a whole string, also inside arrays and objects) replaced by node j's
    result: its text where the declared schema takes no array or object, else the result itself."""
    if isinstance(value, str):
        m = NODE_REF.fullmatch(value.strip())
        if m is not None and int(m.group(1)) in outputs:
            out = outputs[int(m.group(1))]
            declared = _resolved(schema, root)
            structured = isinstance(declared, dict) and {"array", "object"} & set(_kinds_of(declared, root))
            return out if structured and not isinstance(out, str) else _as_text(out)
        return value
    declared = _resolved(schema, root)
    if isinstance(value, list):
        items = declared.get("items") if isinstance(declared, dict) else None
        return [_substitute(v, items, root, outputs) for v in value]
    if isinstance(value, dict):
        props = declared.get("properties") if isinstance(declared, dict) else None
        return {k: _substitute(v, props.get(k) if isinstance(props, dict) else None, root, outputs)
                for k, v in value.items()}
    return value


def _kinds_of(schema: dict[str, Any], root: Any) -> list[str]:
    out = _types(schema)
    for b in schema.get("anyOf") or schema.get("oneOf") or []:
        b = _resolved(b, root)
        if isinstance(b, dict):
            out += _types(b)
    return out


def _arguments(node_args: list[Any], spec: dict[str, Any], outputs: dict[int, Any]) -> dict[str, Any]:
    """The call's arguments: named or positional values, ``<node-j>`` substituted, each coerced to its declared
    type (``spec``: the tool's input schema)."""
    found = spec.get("properties")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    params = list(props)
    args: dict[str, Any] = {}
    positional = 0
    for arg in node_args:
        if isinstance(arg, TaskArgument):
            name, value = arg.name, arg.value
        elif isinstance(arg, dict) and isinstance(arg.get("name"), str):
            name, value = arg["name"], arg.get("value")
        else:  # a resource sample's positional value
            if positional >= len(params):
                continue
            name, value = params[positional], arg
            positional += 1
        if value is None:
            continue
        declared = props.get(name)
        args[name] = coerce(_substitute(value, declared, spec, outputs), declared, spec)
    return args


async def execute_gold(sample: Sample, env: Any) -> GoldExecution:
    """Run ``sample``'s gold graph in ``env`` (an :class:`~taskbench.envs.Environment`); the record form of
    the verdict: ``passed``, ``reasons`` and the ``calls`` (each ``node``, ``tool``, ``arguments``, and its
    ``result`` or ``error``)."""
    calls: list[GoldCall] = []

    def verdict(reason: str | None) -> GoldExecution:
        return GoldExecution(passed=reason is None, reasons=[] if reason is None else [reason], calls=calls)

    if not sample.task_nodes:
        return verdict("exec_unrunnable: the gold graph has no nodes")
    order = execution_order(sample)
    if order is None:
        return verdict("exec_unrunnable: the links contain a cycle")
    outputs: dict[int, Any] = {}
    for i in order:
        node = sample.task_nodes[i]
        spec = env.tool(node.task)
        if spec is None:
            return verdict(f"exec_unrunnable: node {i} ({node.task}): the environment has no such tool")
        args = _arguments(list(node.arguments), dict(spec.parameters or {}), outputs)
        result = await env.call(ToolCall(id=f"gold-{sample.id}-{i}", name=node.task, arguments=args))
        entry = GoldCall(node=i, tool=node.task, arguments=args)
        error = result_error(result)
        if error is not None:
            entry.error = _short(error)
            calls.append(entry)
            first = error.strip().splitlines()[0] if error.strip() else "an error"
            return verdict(f"exec_failed: node {i} ({node.task}): {first[:300]}")
        entry.result = _short(result.content)
        calls.append(entry)
        outputs[i] = result.content
    return verdict(None)
