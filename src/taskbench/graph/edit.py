"""Correct a tool graph by hand: drop and add links (``taskbench graph edit``, ``graph build --overrides``).

The reference README says graphs built automatically should be checked and corrected by a person before data
is generated from them. An edit names links as ``"SOURCE -> TARGET"`` (tool names may contain spaces and
slashes; the arrow is the split that leaves a real tool on both sides) or as ``{"source", "target"}``
objects. An overrides file holds both lists, in JSON or YAML::

    # fixes.yaml
    drop:
      - GET /search/movie -> GET /movie/top_rated
    add:
      - GET /collection/{collection_id} -> GET /company/{company_id}
      - source: GET /tv/{tv_id}
        target: GET /network/{network_id}
        reason: networks[].id is the network id

Every name is checked against the graph's tools (an unknown one is an error that suggests the closest name);
dropping a link the graph does not have, adding a self link, or adding a link a resource graph cannot have
(no output type of the source is an input type of the target) is an error too. Drops are applied before
adds. Added links get a ``manual`` reason; both kinds of edit are recorded in the graph's ``edits`` list.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, suggest
from ..schema import LinkReason, ToolGraph, ToolLink
from .build import TEMPORAL_LINK_TYPE, validate_graph
from .infer import DATA
from .loaders import JsonSource


@dataclass(frozen=True)
class LinkEdit:
    """One drop or add: the link's ends, the reason given for an add, and where it came from."""

    source: str
    target: str
    reason: str | None = None
    origin: str | None = None
    """Where the edit was written ("fixes.yaml:4", "--add"), for error messages."""


@dataclass
class GraphEdits:
    """Links to drop and links to add."""

    drop: list[LinkEdit] = field(default_factory=list)
    add: list[LinkEdit] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.drop or self.add)

    def extend(self, other: GraphEdits) -> GraphEdits:
        self.drop += other.drop
        self.add += other.add
        return self


def _suggest(name: str, names: list[str]) -> str:
    close = suggest(name, names, cutoff=0.5)
    return f"did you mean {close[0]!r}?" if close else "use a tool name of the graph"


def parse_link(text: str, names: list[str], *, origin: str | None = None) -> tuple[str, str]:
    """``"A -> B"`` as ``(A, B)``: the split at an arrow that leaves a tool of ``names`` on both sides (else
    the first arrow, so that the error can name the unknown tool)."""
    known = set(names)
    parts = text.split("->")
    if len(parts) < 2:
        raise InputError(f"{origin + ': ' if origin else ''}{text!r} is not a link",
                         hint="write links as 'SOURCE -> TARGET'")
    splits = [("->".join(parts[:i]).strip(), "->".join(parts[i:]).strip()) for i in range(1, len(parts))]
    for source, target in splits:
        if source in known and target in known:
            return source, target
    source, target = splits[0]
    for end in (source, target):
        if end not in known:
            raise InputError(f"{origin + ': ' if origin else ''}unknown tool {end!r} in link {text!r}",
                             hint=_suggest(end, names))
    return source, target  # pragma: no cover - both ends are known, so an exact split exists


def _link_item(item: Any, names: list[str], origin: str) -> LinkEdit:
    if isinstance(item, str):
        source, target = parse_link(item, names, origin=origin)
        return LinkEdit(source, target, None, origin)
    if isinstance(item, dict) and isinstance(item.get("source"), str) and isinstance(item.get("target"), str):
        for end in ("source", "target"):
            if item[end] not in names:
                raise InputError(f"{origin}: unknown tool {item[end]!r}", hint=_suggest(item[end], names))
        reason = item.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise InputError(f"{origin}: 'reason' must be a string")
        return LinkEdit(item["source"], item["target"], reason, origin)
    raise InputError(f"{origin}: expected 'SOURCE -> TARGET' or {{source, target[, reason]}}, got {reprlib.repr(item)}")


def load_overrides(path: str | Path, names: list[str]) -> GraphEdits:
    """Read an overrides file (JSON, or YAML by its ``.yaml``/``.yml`` suffix): ``{"drop": [...], "add": [...]}``
    where each item is ``"SOURCE -> TARGET"`` or ``{source, target[, reason]}``."""
    path = Path(path)
    lines: dict[tuple[str, int], int | None] = {}
    src = JsonSource.read(path)  # JSON or YAML; YAML aliases, deep nesting and huge integers are input errors
    doc = src.doc
    if isinstance(doc, dict):
        for key in ("drop", "add"):
            if isinstance(doc.get(key), list):
                for i in range(len(doc[key])):
                    lines[(key, i)] = src.line(key, i)
    if not isinstance(doc, dict) or not set(doc) <= {"drop", "add"} or not doc:
        raise InputError("expected an overrides document {drop: [...], add: [...]}", path=path,
                         hint="see `taskbench graph edit --help`")
    edits = GraphEdits()
    for key in ("drop", "add"):
        items = doc.get(key) or []
        if not isinstance(items, list):
            raise InputError(f"'{key}' must be a list of links", path=path)
        for i, item in enumerate(items):
            line = lines.get((key, i))
            origin = f"{path}:{line}" if line else f"{path} ({key} #{i})"
            edit = _link_item(item, names, origin)
            (edits.drop if key == "drop" else edits.add).append(edit)
    return edits


def edit_graph(graph: ToolGraph, edits: GraphEdits, *, reason: str | None = None) -> ToolGraph:
    """A copy of ``graph`` with ``edits.drop`` removed, then ``edits.add`` added (``reason`` is the default
    reason of adds that give none), validated. Raises :class:`InputError` on an unknown tool, a drop of a link
    the graph does not have, a self link, or a link a resource graph cannot have."""
    names = [t.id for t in graph.nodes]
    known = set(names)
    tools = {t.id: t for t in graph.nodes}
    links = {(lk.source, lk.target): lk for lk in graph.links}
    order = [(lk.source, lk.target) for lk in graph.links]
    log = list(graph.edits)
    for e in [*edits.drop, *edits.add]:
        for end in (e.source, e.target):
            if end not in known:
                raise InputError(f"{_where(e)}unknown tool {end!r}", hint=_suggest(end, names))
    for e in edits.drop:
        key = (e.source, e.target)
        if key not in links:
            raise InputError(f"{_where(e)}the graph has no link {e.source!r} -> {e.target!r} to drop",
                             hint="check the direction; `taskbench graph stats` and `graph show` list the links")
        del links[key]
        order.remove(key)
        log.append({"op": "drop", "source": e.source, "target": e.target})
    dep = graph.dependency_kind
    for e in edits.add:
        if e.source == e.target:
            raise InputError(f"{_where(e)}cannot link {e.source!r} to itself")
        text = e.reason if e.reason is not None else reason
        why = LinkReason(rule="manual", note=" ".join(text.split()) if text else "added by hand")
        key = (e.source, e.target)
        if key in links:
            old = links[key]
            if why not in old.reasons:
                links[key] = old.model_copy(update={"reasons": (*old.reasons, why)})
        else:
            if dep == "resource":
                src, dst = tools[e.source], tools[e.target]
                shared = next((t for t in (src.output_types or ()) if t in (dst.input_types or ())), None)
                if shared is None:
                    raise InputError(
                        f"{_where(e)}{e.source!r} produces {src.output_types or []} and {e.target!r} takes "
                        f"{dst.input_types or []}: a resource link needs a shared type",
                        hint="fix the tools' types, or build the graph with --dependency temporal")
                link_type = shared
            else:
                link_type = DATA if graph.inferred else TEMPORAL_LINK_TYPE
            links[key] = ToolLink(source=e.source, target=e.target, type=link_type, reasons=(why,))
            order.append(key)
        log.append({"op": "add", "source": e.source, "target": e.target, **({"reason": text} if text else {})})
    edited = graph.model_copy(update={"links": [links[k] for k in order], "edits": log})
    return validate_graph(edited)


def _where(e: LinkEdit) -> str:
    return f"{e.origin}: " if e.origin else ""
