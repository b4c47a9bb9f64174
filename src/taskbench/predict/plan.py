"""The task plan: the bounded, step-aligned JSON document a model fills when it predicts a task graph.

The reference output shape (``task_steps``, ``task_nodes``, ``task_links`` side by side) lets a small model
write 40 nodes, 0 nodes after long steps, arguments no tool takes or links from a tool to itself. The plan
makes those answers impossible to write, by construction of its JSON Schema (:func:`plan_schema`)::

    {"steps": [
      {"step": "Remove the hum from example.wav", "tool": "Audio Noise Reduction",
       "arguments": {"audio": "example.wav"}},
      {"step": "Transcribe the cleaned audio", "tool": "Audio-to-Text",
       "arguments": {"audio": "<node-0>"}}]}

- one object per step holding its step text, tool and arguments, so steps and nodes are aligned;
- at most ``max_steps`` steps (10, TaskBench's largest graphs);
- each step is a union over the tools (each alternative one tool with its own arguments): the arguments are an
  object whose keys are the tool's input types (resource domains; a repeated type is numbered, ``text_1``,
  ``text_2``) or its parameter names (temporal domains), so a node has exactly the arguments its tool takes;
- in resource domains an argument value is free text or ``<node-j>`` for an earlier step j (offered only for
  j < i at step i: no self-reference, no forward reference);
- in temporal domains each step says which earlier steps it must run ``after`` (``<node-j>``, j < i), so links
  join chosen nodes only, never a node to itself, and never form a cycle;
- every free-text string has a ``maxLength``, and an argument value that is free text cannot start with ``<``
  (so a ``<node-j>`` the schema does not offer cannot be written as text either).

The schema is standard JSON Schema (2020-12 ``prefixItems`` with ``items: false`` for the per-position steps),
so OpenAI-compatible servers with guided decoding get the same constraints; llama.cpp compiles it with
:func:`taskbench.llm.grammar.schema_to_gbnf`. :func:`plan_to_result` turns a filled plan into the reference
``{task_steps, task_nodes, task_links}`` result that every scorer reads; :func:`sample_plan` turns a gold
sample into a plan (for the demonstrations in the prompt). Pure functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import NODE_REF, STEP_PREFIX, Sample, TaskArgument, Tool, ToolLibrary


@dataclass(frozen=True)
class PlanBounds:
    """The bounds of a plan schema."""

    max_steps: int = 10
    """Most steps (nodes). TaskBench's largest sampled graphs have 10 nodes."""
    step_chars: int = 120
    """Most characters of one step text ("Step n: " is added afterwards)."""
    value_chars: int = 200
    """Most characters of one argument value."""

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.step_chars < 1 or self.value_chars < 1:
            raise ValueError("plan bounds must be positive")


DEFAULT_BOUNDS = PlanBounds()

REPEATED_STEP = r'\{\s*"step"\s*:\s*"(?:[Ss]tep\s*\d+\s*:\s*)?((?:[^"\\]|\\.)*)"\s*,\s*"tool"\s*:\s*"((?:[^"\\]|\\.)*)"'
"""The ``stop_repeat`` pattern of a plan answer (:class:`taskbench.llm.base.GenerationConfig`): a step's text and
tool. Decoding stops at the first step whose text and tool repeat an earlier step's (case, spacing and a
"Step n:" prefix folded),
the loop a small model falls into; the answer keeps the steps before it. :func:`drop_repeated_steps` still
drops the repeats decoding cannot see (same tool and arguments under another text)."""


def node_ref(j: int) -> str:
    """The reference to the output of step ``j``."""
    return f"<node-{j}>"


def argument_keys(tool: Tool, dependency: str) -> list[tuple[str, bool]]:
    """``[(key, required)]`` of a tool's arguments in the plan: its parameter names (temporal) or its input
    types (resource; a type that occurs more than once is numbered from 1, e.g. ``text_1``, ``text_2``).
    A resource tool without declared input types takes one ``input``."""
    if dependency == "temporal":
        return [(p.name, p.required) for p in tool.parameters or []]
    types = list(tool.input_types or []) or ["input"]
    counts = {t: types.count(t) for t in types}
    seen: dict[str, int] = {}
    keys = []
    for t in types:
        seen[t] = seen.get(t, 0) + 1
        keys.append((f"{t}_{seen[t]}" if counts[t] > 1 else t, True))
    return keys


def _tool_alternative(tool: Tool, dependency: str, position: int) -> dict[str, Any]:
    resource_ref = dependency == "resource" and position > 0
    value = {"$ref": f"#/$defs/value_{position}" if resource_ref else "#/$defs/value"}
    keys = argument_keys(tool, dependency)
    properties: dict[str, Any] = {
        "step": {"$ref": "#/$defs/step"},
        "tool": {"type": "string", "const": tool.id},
        "arguments": {
            "type": "object",
            "properties": {k: value for k, _ in keys},
            "required": [k for k, req in keys if req],
            "additionalProperties": False,
        },
    }
    if dependency == "temporal":
        properties["after"] = {"$ref": f"#/$defs/after_{position}"}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def plan_schema(
    library: ToolLibrary,
    tools: Iterable[str] | None = None,
    *,
    dependency: str | None = None,
    bounds: PlanBounds = DEFAULT_BOUNDS,
) -> dict[str, Any]:
    """The JSON Schema of a task plan over ``library`` (see the module docstring).

    ``tools`` restricts the choice to these tool names (a shortlist; library order is kept, unknown names are
    ignored); default all. ``dependency`` defaults to the library's.
    """
    dependency = dependency or library.dependency
    if dependency not in ("resource", "temporal"):
        raise ValueError(f"dependency must be 'resource' or 'temporal', not {dependency!r}")
    wanted = None if tools is None else set(tools)
    chosen = [t for t in library.tools if wanted is None or t.id in wanted]
    if not chosen:
        raise ValueError("a plan schema needs at least one tool")
    text = {"type": "string"}
    defs: dict[str, Any] = {
        "step": {**text, "maxLength": bounds.step_chars, "description": "what this step does"},
        # free text never starts with '<', so it cannot pose as a <node-j> (those are the enum's alone)
        "value": {**text, "maxLength": bounds.value_chars, "pattern": "^[^<]"},
    }
    for i in range(1, bounds.max_steps):
        refs = [node_ref(j) for j in range(i)]
        if dependency == "resource":
            defs[f"value_{i}"] = {"anyOf": [{"type": "string", "enum": refs}, {"$ref": "#/$defs/value"}]}
    if dependency == "temporal":
        defs["after_0"] = {"type": "array", "maxItems": 0, "const": []}
        for i in range(1, bounds.max_steps):
            defs[f"after_{i}"] = {
                "type": "array",
                "items": {"type": "string", "enum": [node_ref(j) for j in range(i)]},
                "maxItems": i,
                "uniqueItems": True,
            }
    positions = []
    for i in range(bounds.max_steps):
        alternatives = [_tool_alternative(t, dependency, i) for t in chosen]
        positions.append(alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives})
    return {
        "title": "TaskPlan",
        "type": "object",
        "properties": {
            "steps": {"type": "array", "prefixItems": positions, "items": False, "minItems": 1},
        },
        "required": ["steps"],
        "additionalProperties": False,
        "$defs": defs,
    }


def max_plan_chars(schema: Mapping[str, Any]) -> int:
    """An upper bound on the characters of any compact JSON document the plan schema admits (each bounded
    string counted at its ``maxLength``, escapes ignored): the answer can never run longer than this."""
    defs = schema.get("$defs", {})

    def size(s: Any) -> int:
        if "$ref" in s:
            return size(defs[s["$ref"].rsplit("/", 1)[-1]])
        if "anyOf" in s:
            return max(size(a) for a in s["anyOf"])
        if "const" in s:
            return len(_compact(s["const"]))
        if "enum" in s:
            return max(len(_compact(v)) for v in s["enum"])
        kind = s.get("type")
        if kind == "string":
            if "maxLength" not in s:
                raise ValueError("unbounded string in the schema")
            return int(s["maxLength"]) + 2
        if kind == "object":
            props = s.get("properties", {})
            return 2 + sum(len(_compact(k)) + 2 + size(v) for k, v in props.items())
        if kind == "array":
            if "prefixItems" in s:
                return 2 + sum(size(p) + 1 for p in s["prefixItems"])
            if "maxItems" not in s:
                raise ValueError("unbounded array in the schema")
            return 2 + s["maxItems"] * (size(s["items"]) + 1) if s["maxItems"] else 2
        raise ValueError(f"cannot bound {s!r}")

    return size(schema)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ------------------------------------------------------------------------------------------ conversion


def is_plan(value: Any) -> bool:
    """True for a dict shaped like a task plan (``{"steps": [{"tool": ...}, ...]}``)."""
    if not isinstance(value, dict) or "task_nodes" in value:
        return False
    steps = value.get("steps")
    return isinstance(steps, list) and all(isinstance(s, dict) and "tool" in s for s in steps)


def _step_text(i: int, text: Any) -> str:
    body = STEP_PREFIX.sub("", str(text or "")).strip()
    return f"Step {i + 1}: {body}"


def _canonical(value: Any, names: Sequence[str]) -> str:
    """An argument value with every ``<node-j>`` replaced by the name of node j's tool (so two copies of a step
    in a loop, whose references point at different copies of the same tool, compare equal)."""
    def name(m: re.Match[str]) -> str:
        j = int(m.group(1))
        return f"<{names[j]}>" if 0 <= j < len(names) else m.group(0)

    return NODE_REF.sub(name, json.dumps(value, sort_keys=True, ensure_ascii=False))


def drop_repeated_steps(plan: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """The plan without steps that repeat an earlier one, and how many were dropped.

    A step repeats an earlier step when both call the same tool and either their texts are the same (case,
    spacing and a "Step n:" prefix ignored) or their arguments are, with each ``<node-j>`` read as node j's
    tool. This is the loop a small model falls into within the bounded plan (the same step until the
    ``max_steps`` bound); TaskBench's samples never call a tool twice (none of the 86 released gold samples
    does). References to a dropped step point at the step it repeated; later references are renumbered."""
    steps = [s for s in plan.get("steps") or [] if isinstance(s, dict)]
    names = [str(s.get("tool", "")) for s in steps]
    kept: list[int] = []
    target: dict[int, int] = {}  # old index -> new index
    seen: dict[tuple[str, str], int] = {}
    for i, step in enumerate(steps):
        text = " ".join(STEP_PREFIX.sub("", str(step.get("step") or "")).lower().split())
        args = _canonical(step.get("arguments"), names)
        keys = [(names[i], "t:" + text)] if text else []
        keys.append((names[i], "a:" + args))
        first = next((seen[k] for k in keys if k in seen), None)
        if first is not None:
            target[i] = first
            continue
        target[i] = len(kept)
        for k in keys:
            seen.setdefault(k, len(kept))
        kept.append(i)
    if len(kept) == len(steps):
        return {**plan, "steps": steps}, 0

    def renumber(value: Any) -> Any:
        if isinstance(value, str):
            return NODE_REF.sub(lambda m: node_ref(target.get(int(m.group(1)), int(m.group(1)))), value)
        if isinstance(value, list):
            return [renumber(v) for v in value]
        if isinstance(value, dict):
            return {k: renumber(v) for k, v in value.items()}
        return value

    out: list[dict[str, Any]] = []
    for i in kept:
        step = dict(steps[i])
        step["arguments"] = renumber(step.get("arguments"))
        if "after" in step:
            after = [r for r in dict.fromkeys(renumber(step.get("after") or []))
                     if NODE_REF.findall(str(r)) and int(NODE_REF.findall(str(r))[0]) < len(out)]
            step["after"] = after
        out.append(step)
    return {**plan, "steps": out}, len(steps) - len(kept)


def plan_to_result(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The reference result ``{task_steps, task_nodes, task_links}`` of a filled plan.

    Steps that repeat an earlier step are dropped first (:func:`drop_repeated_steps`).

    Resource plans (no ``after`` keys): arguments become a list of values in key order; links are the
    ``<node-j>`` references. Temporal plans (steps with ``after``): arguments become ``{name, value}`` pairs;
    links go from each step named in ``after`` to the step (duplicates, self and forward references, which the
    schema rules out, are dropped here too for plans from elsewhere).
    """
    steps = drop_repeated_steps(plan)[0]["steps"]
    temporal = any("after" in s for s in steps)
    names = [str(s.get("tool", "")) for s in steps]
    task_steps, task_nodes, links, seen = [], [], [], set()

    def link(j: int, i: int) -> None:
        if 0 <= j < i and (names[j], names[i]) not in seen:
            seen.add((names[j], names[i]))
            links.append({"source": names[j], "target": names[i]})

    for i, step in enumerate(steps):
        task_steps.append(_step_text(i, step.get("step")))
        raw = step.get("arguments")
        items = list(raw.items()) if isinstance(raw, dict) else [(None, a) for a in raw or []]
        if temporal:
            arguments: list[Any] = [{"name": str(k), "value": v} for k, v in items if k is not None]
            for ref in step.get("after") or []:
                for m in NODE_REF.findall(str(ref)):
                    link(int(m), i)
        else:
            arguments = [v for _, v in items]
            for v in arguments:
                for m in NODE_REF.findall(str(v)):
                    link(int(m), i)
        task_nodes.append({"task": names[i], "arguments": arguments})
    return {"task_steps": task_steps, "task_nodes": task_nodes, "task_links": links}


def _topological(sample: Sample) -> list[int]:
    """Node indices in an order where every explicit link goes forward (stable: original order wherever the
    links allow it). Links between unknown names or forming a cycle keep the original order."""
    names = [n.task for n in sample.task_nodes]
    index = {n: i for i, n in enumerate(names)}
    preds: dict[int, set[int]] = {i: set() for i in range(len(names))}
    for lk in sample.task_links:
        s, t = index.get(lk.source), index.get(lk.target)
        if s is not None and t is not None and s != t:
            preds[t].add(s)
    order: list[int] = []
    placed: set[int] = set()
    while len(order) < len(names):
        ready = [i for i in range(len(names)) if i not in placed and preds[i] <= placed]
        if not ready:  # a cycle: keep the rest in original order
            order.extend(i for i in range(len(names)) if i not in placed)
            break
        order.append(ready[0])
        placed.add(ready[0])
    return order


def sample_plan(sample: Sample, library: ToolLibrary, dependency: str | None = None) -> dict[str, Any]:
    """A gold sample as a plan (what a demonstration shows). Arguments are keyed as :func:`argument_keys`
    says (positionally for resource domains; extra gold arguments get ``input_k`` keys); temporal nodes are
    put in an order where every link goes forward, and ``<node-j>`` references are renumbered to match."""
    dependency = dependency or library.dependency
    order = _topological(sample) if dependency == "temporal" else list(range(len(sample.task_nodes)))
    new_index = {old: new for new, old in enumerate(order)}
    names = [n.task for n in sample.task_nodes]
    steps = []
    for new, old in enumerate(order):
        node = sample.task_nodes[old]
        tool = library.get(node.task)
        text = sample.task_steps[old] if old < len(sample.task_steps) else ""
        step: dict[str, Any] = {"step": STEP_PREFIX.sub("", text).strip(), "tool": node.task}
        if dependency == "temporal":
            step["arguments"] = {
                a.name: a.value for a in node.arguments if isinstance(a, TaskArgument)
            }
            after = []
            for lk in sample.task_links:
                if lk.target == node.task and lk.source in names:
                    j = new_index[names.index(lk.source)]
                    if j < new and node_ref(j) not in after:
                        after.append(node_ref(j))
            step["after"] = sorted(after, key=lambda r: int(NODE_REF.findall(r)[0]))
        else:
            keys = [k for k, _ in argument_keys(tool, dependency)] if tool is not None else []
            values = [_renumber(a, new_index) for a in node.arguments]
            step["arguments"] = {
                (keys[k] if k < len(keys) else f"input_{k + 1}"): v for k, v in enumerate(values)
            }
        steps.append(step)
    return {"steps": steps}


def _renumber(value: Any, new_index: Mapping[int, int]) -> Any:
    if not isinstance(value, str):
        return value if not isinstance(value, TaskArgument) else value.value
    return NODE_REF.sub(lambda m: node_ref(new_index.get(int(m.group(1)), int(m.group(1)))), value)


def tool_names_of(plan: Mapping[str, Any]) -> Sequence[str]:
    """The tools a plan calls, in order."""
    return [str(s.get("tool")) for s in plan.get("steps") or [] if isinstance(s, dict)]


__all__ = [
    "DEFAULT_BOUNDS",
    "PlanBounds",
    "REPEATED_STEP",
    "argument_keys",
    "drop_repeated_steps",
    "is_plan",
    "max_plan_chars",
    "node_ref",
    "plan_schema",
    "plan_to_result",
    "sample_plan",
    "tool_names_of",
]
