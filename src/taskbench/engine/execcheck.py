"""The execution critic: run a generated sample's gold graph in the executable environment (``generate --env``).

Each node is called once, in the order its links give (a topological order; ties in node order), with its
arguments as the tool's parameters (temporal ``{name, value}`` pairs; a resource sample's positional values
take the tool's parameters in order; a null value is left out). A value that is exactly ``"<node-j>"`` is
replaced by node j's result (its text, or its JSON). The sample passes when every call returns a result; a
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
from typing import Any

from ..envs.state import ERROR_TEXT, result_error
from ..schema import NODE_REF, Sample, TaskArgument, ToolCall
from ..schema.generation import GoldCall, GoldExecution

__all__ = ["ERROR_TEXT", "EXEC_CODES", "execute_gold", "execution_order"]

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


def _substitute(value: Any, outputs: dict[int, Any]) -> Any:
    if isinstance(value, str):
        m = NODE_REF.fullmatch(value.strip())
        if m is not None and int(m.group(1)) in outputs:
            out = outputs[int(m.group(1))]
            return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=str)
    return value


def _arguments(node_args: list[Any], params: list[str], outputs: dict[int, Any]) -> dict[str, Any]:
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
        args[name] = _substitute(value, outputs)
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
        params = list((spec.parameters or {}).get("properties") or {})
        args = _arguments(list(node.arguments), params, outputs)
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
