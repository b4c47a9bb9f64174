"""Guided generation: the answer schema fixes the sampled subgraph, the model writes only the text (pure).

In the free mode (:func:`taskbench.engine.schemas.generation_schema`) the model chooses the order of the nodes,
which tool each node is (among the sampled ones) and, through its ``<node-j>`` arguments or its ``links``
list, the edges; a small model gets these wrong in most chains and DAGs, and the rule critic throws the sample
away. The sampled subgraph is known before the model writes a word, so the guided schema writes it in:

- ``invoking_graph.nodes`` is a tuple (``prefixItems``, ``items: false``) of exactly the sampled tools, in
  :func:`guided_order` (a topological order of the sampled links), each ``task`` a ``const``;
- resource domains: for every sampled link ``j -> i`` one argument of node i whose input type node j's
  output fits (its first output type first, as the rule critic reads a reference) is the ``const``
  ``<node-j>``; every other argument is free text (it cannot start with ``<``) or, where the input type is
  the predecessor's first output type, a ``<node-j>`` of one of node i's sampled predecessors. No other reference can be written, so the links the
  arguments imply are exactly the sampled ones. A free input of a media type (image, audio, video) is a file
  name of that kind (:data:`MEDIA_FILES`: ``example.jpg`` or ``.png`` for an image), so a file of the wrong kind
  cannot be written either;
- temporal domains: ``links`` is the tuple of the sampled links, each a ``const``; the arguments are the
  API's parameters, typed as in the free mode (:func:`taskbench.engine.schemas.value_schema`);
- ``task_steps`` has one string per node, and every string keeps its ``maxLength``.

What is left for the rule critic to check is what the model writes: the request (that it names every file the
arguments use, that it is not a tool's description, ...), required parameters present, and, for a link that no
argument of the target can carry (no input of node i fits node j's output), the missing link
(:func:`link_slots` reports those; the schema cannot fix them). The schema is standard JSON Schema 2020-12, so guided-decoding servers get the same constraints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..schema import SampledSubgraph, Tool, ToolLibrary
from .schemas import Limits, _array, _closed, _text, arguments_schema, teacher_schema

__all__ = ["MEDIA_FILES", "guided_order", "guided_schema", "link_slots"]


def guided_order(entry: SampledSubgraph) -> list[str]:
    """The sampled tools in a topological order of the sampled links (Kahn's algorithm, ties broken by the plan
    entry's own order, so an entry already in topological order keeps it)."""
    nodes = list(dict.fromkeys(entry.nodes))
    preds = {n: {lk.source for lk in entry.links if lk.target == n and lk.source in nodes} for n in nodes}
    order: list[str] = []
    while len(order) < len(nodes):
        ready = [n for n in nodes if n not in order and preds[n] <= set(order)]
        if not ready:  # a cycle (not a sampled structure): keep the rest in plan order
            order.extend(n for n in nodes if n not in order)
            break
        order.append(ready[0])
    return order


def _fits(source: Tool, input_type: str) -> int | None:
    """How well ``source``'s output fits an input of ``input_type``: 0 its first output type (what the rule
    critic checks), 1 another of its output types, None not at all."""
    outs = list(source.output_types or [])
    if outs and outs[0] == input_type:
        return 0
    return 1 if input_type in outs else None


def link_slots(
    entry: SampledSubgraph, library: ToolLibrary
) -> tuple[dict[tuple[int, int], int], list[tuple[str, str]]]:
    """For a resource subgraph: ``{(i, k): j}``, the argument k of node i (in :func:`guided_order`) that carries
    the sampled link ``j -> i`` as ``<node-j>``, and the sampled links no argument can carry (no free input
    of the target fits the source's output)."""
    order = guided_order(entry)
    position = {n: i for i, n in enumerate(order)}
    slots: dict[tuple[int, int], int] = {}
    unplaced: list[tuple[str, str]] = []
    for link in entry.links:
        if link.source not in position or link.target not in position:
            unplaced.append((link.source, link.target))
            continue
        j, i = position[link.source], position[link.target]
        source, target = library.get(link.source), library.get(link.target)
        inputs = list(target.input_types or []) if target is not None else []
        best: tuple[int, int] | None = None  # (fit, k)
        for k, kind in enumerate(inputs):
            # the rule critic reads <node-j> as node j's first output type: it must be one of the inputs
            if (i, k) in slots or source is None or source.first_output_type() not in inputs:
                continue
            fit = _fits(source, kind)
            if fit is not None and (best is None or fit < best[0]):
                best = (fit, k)
        if best is None:
            unplaced.append((link.source, link.target))
        else:
            slots[(i, best[1])] = j
    return slots, unplaced


MEDIA_FILES: dict[str, tuple[str, ...]] = {"image": ("jpg", "png"), "audio": ("wav", "mp3"), "video": ("mp4",)}
"""The file kinds a media input of a resource tool may name in guided mode (each is one the rule critic reads as
that kind: :data:`taskbench.engine.critics.MEDIA_EXTENSIONS`)."""


def _free_value(limits: Limits, kind: str | None = None) -> dict[str, Any]:
    text = _text(limits.value)
    if limits.value is None:  # strict backends: no maxLength, so no pattern either
        return text
    exts = MEDIA_FILES.get((kind or "").lower())
    if exts:  # a file of the input's kind: "example.wav" for an image input cannot be written
        return {"type": "string", "pattern": r"^[a-z][a-z0-9_]{0,19}\.(" + "|".join(exts) + ")$"}
    return {**text, "pattern": "^[^<]"}


def _resource_node(
    i: int, tool: Tool, order: Sequence[str], preds: set[int], slots: dict[tuple[int, int], int],
    library: ToolLibrary, limits: Limits,
) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for k, (name, kind) in enumerate(zip(tool.argument_names(), tool.input_types or [], strict=False)):
        if (i, k) in slots:
            props[name] = {"type": "string", "const": f"<node-{slots[(i, k)]}>"}
            continue
        refs = []
        for j in sorted(preds):
            source = library.get(order[j])
            if source is not None and _fits(source, kind) == 0:
                refs.append(f"<node-{j}>")
        free = _free_value(limits, kind)
        props[name] = {"anyOf": [{"type": "string", "enum": refs}, free]} if refs else free
    return _closed({"task": {"type": "string", "const": tool.id}, "arguments": _closed(props)})


def _temporal_node(tool: Tool, limits: Limits) -> dict[str, Any]:
    return _closed({"task": {"type": "string", "const": tool.id}, "arguments": arguments_schema(tool, "temporal", limits)})


def _tuple(items: list[dict[str, Any]]) -> dict[str, Any]:
    if not items:
        return {"type": "array", "maxItems": 0, "const": []}
    return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items), "maxItems": len(items)}


def guided_schema(
    entry: SampledSubgraph,
    library: ToolLibrary,
    *,
    parts: Sequence[str] = ("task_steps", "user_request", "invoking_graph", "check_by_teacher"),
    limits: Limits | None = None,
    title: str = "BackInstruct",
) -> dict[str, Any]:
    """The guided answer schema of one plan entry (see the module docstring); ``parts`` as in
    :func:`taskbench.engine.schemas.generation_schema`."""
    limits = limits or Limits()
    order = guided_order(entry)
    tools = [library.get(n) for n in order]
    missing = [n for n, t in zip(order, tools, strict=True) if t is None]
    if missing or not tools:
        raise ValueError(f"plan entry {entry.index}: no tool {missing[0]!r} in the library" if missing
                         else "a guided schema needs at least one tool")
    known = [t for t in tools if t is not None]
    position = {n: i for i, n in enumerate(order)}
    dependency = library.dependency
    props: dict[str, Any] = {}
    for part in parts:
        if part == "task_steps":
            props[part] = _array(_text(limits.step), len(known), len(known))
        elif part == "user_request":
            props[part] = _text(limits.user_request)
        elif part == "invoking_graph":
            if dependency == "resource":
                slots, _ = link_slots(entry, library)
                nodes = []
                for i, tool in enumerate(known):
                    preds = {position[lk.source] for lk in entry.links
                             if lk.target == tool.id and lk.source in position}
                    nodes.append(_resource_node(i, tool, order, preds, slots, library, limits))
                props[part] = _closed({"nodes": _tuple(nodes)})
            else:
                links = [{"const": {"source": lk.source, "target": lk.target}}
                         for lk in sorted(entry.links, key=lambda lk: (position.get(lk.source, 0),
                                                                        position.get(lk.target, 0)))]
                props[part] = _closed({"nodes": _tuple([_temporal_node(t, limits) for t in known]),
                                       "links": _tuple(links)})
        elif part == "check_by_teacher":
            props[part] = teacher_schema(limits)
        else:
            raise ValueError(f"unknown answer part {part!r}")
    return _closed(props, title)
