"""JSON Schemas that constrain the data engine's answers (pure).

Wherever the backend supports it (llama.cpp grammars, OpenAI strict schemas, vLLM/SGLang guided decoding) the
answer cannot leave these shapes:

- a node's ``task`` is one of the tools offered (the sampled tools; the whole library for self-instruct), and
  each alternative of ``anyOf`` carries *that* tool's arguments: an object over its argument names (resource:
  one per input type; temporal: its parameters, optional ones nullable), closed, every key required;
- the node and step arrays have exactly the subgraph's size, the link array at most as many entries as the
  structure can have, every string a ``maxLength``;

so no repetition loop can run until ``max_tokens``. Every object is closed and lists all its properties as
required, as OpenAI's strict mode demands; no ``$ref``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..schema import Tool

__all__ = [
    "Limits",
    "critic_schema",
    "generation_schema",
    "judge_schema",
    "strict_backend",
    "SCORE_NAMES",
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


def arguments_schema(tool: Tool, dependency: str, limits: Limits) -> dict[str, Any]:
    """The ``arguments`` object of one tool: its argument names as keys (see the module docstring)."""
    props: dict[str, Any] = {}
    if dependency == "resource":
        for name in tool.argument_names():
            props[name] = _text(limits.value)
    else:
        for p in tool.parameters or []:
            props[p.name] = _text(limits.value) if p.required else {"anyOf": [_text(limits.value), {"type": "null"}]}
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
