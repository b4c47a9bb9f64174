"""What the executed-task generator knows of an environment's operations: their parameters, which returned
fields feed which parameters (the inferred tool graph's link reasons), and which operations can start a chain.

Nothing here knows a particular API. A parameter is one of:

- **fed**: an identifier that an earlier call's result provides (a link reason ``results[].id -> person_id``);
- **named**: free text that names an entity (``query``, ``q``), when the operation's result holds entities a
  link can feed onward: a search. Its value is a name from the environment's own data (:mod:`.pool`);
- **choice**: an enum, filled with one of its values (``media_type``: movie, tv, person);
- **number**: an integer or number with bounds (``volume_percent``), filled inside them;
- anything else is left out when optional; an operation with another required parameter cannot start a chain.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...schema import Tool, ToolGraph, ToolLibrary, ToolSpec

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
NAME_PARAMS = frozenset({"query", "q", "name", "search", "keyword", "keywords", "term", "title"})
"""Free-text parameters that name what to find (a search's query)."""


@dataclass(frozen=True)
class Feed:
    """A returned field of ``source`` that feeds ``parameter`` of the operation it belongs to."""

    source: str
    output: str
    target: str
    parameter: str


@dataclass
class Operation:
    """One operation (tool) as the generator uses it."""

    spec: ToolSpec
    params: dict[str, dict[str, Any]]
    required: list[str]
    feeds: dict[str, list[Feed]] = field(default_factory=dict)
    """parameter -> the fields that can feed it."""
    outputs: dict[str, list[Feed]] = field(default_factory=dict)
    """returned field -> the parameters (of other operations) it feeds."""
    wanted: set[str] = field(default_factory=set)
    """Parameters of this operation that a pending link of another operation feeds."""
    pending: list[tuple[str, str]] = field(default_factory=list)
    """(operation, parameter) this one feeds by the graph, through a field the graph does not name (an API
    without response schemas): the crawl finds the field in real responses (:func:`.pool.discover`)."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def method(self) -> str:
        return self.spec.http.method.upper() if self.spec.http is not None else ""

    @property
    def writes(self) -> bool:
        """True for an HTTP write (POST, PUT, PATCH, DELETE): a task that ends in it is checked by the state it
        leaves, not by an answer."""
        return self.method in WRITE_METHODS

    def kind(self, param: str) -> str:
        """How ``param`` is filled: fed | named | choice | number | other."""
        schema = self.params.get(param, {})
        if (param in self.feeds or param in self.wanted) and _is_id_like(param, schema):
            return "fed"
        if schema.get("enum") or (schema.get("items") or {}).get("enum"):
            return "choice"
        if param.lower() in NAME_PARAMS and _json_type(schema) in ("string", None):
            return "named"
        if param in self.feeds:
            return "fed"
        if _json_type(schema) in ("integer", "number") and ("minimum" in schema or "maximum" in schema):
            return "number"
        return "other"

    def startable(self) -> bool:
        """Whether a chain can start here: no required parameter must come from an earlier call."""
        return all(self.kind(p) in ("named", "choice", "number") for p in self.required)


def _json_type(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else None


_ID = re.compile(r"(^|_)(id|ids|uri|uris|number)$|_id$", re.I)


def _is_id_like(name: str, schema: dict[str, Any]) -> bool:
    return bool(_ID.search(name)) or name.lower().startswith("seed_") or name.lower().startswith("with_") or \
        _json_type(schema) in ("integer",)


def library_of(specs: Sequence[ToolSpec]) -> ToolLibrary:
    """The environment's tools as a library (for link inference)."""
    from ...graph.loaders import parameters_from_schema

    tools = [Tool(id=s.name, desc=s.description or s.name, parameters=parameters_from_schema(s.parameters),
                  input_schema=s.parameters or None, output_schema=s.output_schema, http=s.http,
                  source=s.source or "env") for s in specs]
    return ToolLibrary(tools=tools, dependency="temporal", name="env")


def operations(specs: Sequence[ToolSpec], graph: ToolGraph) -> dict[str, Operation]:
    """Every operation of ``specs`` with the feeds the graph's link reasons give (only field-to-parameter
    reasons: a state link says that an order makes sense, not where a value comes from)."""
    ops: dict[str, Operation] = {}
    for s in specs:
        schema: dict[str, Any] = dict(s.parameters or {})
        raw_props, raw_required = schema.get("properties"), schema.get("required")
        props: dict[str, Any] = dict(raw_props) if isinstance(raw_props, dict) else {}
        listed: list[Any] = list(raw_required) if isinstance(raw_required, list) else []
        required = [str(p) for p in listed if p in props]
        ops[s.name] = Operation(spec=s, params={str(k): v if isinstance(v, dict) else {} for k, v in props.items()},
                                required=list(dict.fromkeys(required)))
    for link in graph.links:
        target = ops.get(link.target)
        source = ops.get(link.source)
        if target is None or source is None or link.source == link.target:
            continue
        for reason in link.reasons:
            output, param = reason.output, reason.parameter
            if param and param in target.params and not output and reason.rule != "state":
                if (link.target, param) not in source.pending:
                    source.pending.append((link.target, param))
                target.wanted.add(param)
                continue
            if not output or not param or param not in target.params or output.startswith("''"):
                continue
            feed = Feed(source=link.source, output=output, target=link.target, parameter=param)
            if feed not in target.feeds.setdefault(param, []):
                target.feeds[param].append(feed)
            if feed not in source.outputs.setdefault(output, []):
                source.outputs[output].append(feed)
    return ops


def add_feed(ops: dict[str, Operation], feed: Feed) -> None:
    """Record a feed found by calling the operations (both ends)."""
    source, target = ops[feed.source], ops[feed.target]
    if feed not in target.feeds.setdefault(feed.parameter, []):
        target.feeds[feed.parameter].append(feed)
    if feed not in source.outputs.setdefault(feed.output, []):
        source.outputs[feed.output].append(feed)
    if (feed.target, feed.parameter) in source.pending:
        source.pending.remove((feed.target, feed.parameter))


def graph_of(specs: Sequence[ToolSpec]) -> ToolGraph:
    """The tool graph inferred from ``specs`` (:func:`taskbench.graph.infer.infer_graph`)."""
    from ...graph.infer import infer_graph

    return infer_graph(library_of(specs))


__all__ = ["Feed", "NAME_PARAMS", "Operation", "WRITE_METHODS", "add_feed", "graph_of", "library_of", "operations"]
