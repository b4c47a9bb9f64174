"""The resource and temporal rules that link a library's tools (the rules, and the size limit, are described in
:mod:`taskbench.graph.build`, which re-exports these names): below both :mod:`~taskbench.graph.build` and
:mod:`~taskbench.graph.infer`, which keeps the resource rule for typed libraries."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import ConfigError
from ..schema import ToolGraph, ToolLibrary, ToolLink
from .loaders import check_dependency

TEMPORAL_LINK_TYPE = "complete"
"""The ``type`` of every link in a temporal graph (as in the reference files)."""

MAX_LINKS = 1_000_000
"""The largest graph :func:`build_graph` builds in memory unless told otherwise (about 1.5 GB and tens of
seconds at this size; ``taskbench graph build`` streams larger graphs with ``--max-links 0``)."""
def _consumers(library: ToolLibrary) -> dict[str, list[int]]:
    """Resource type -> indices (ascending) of the tools that take it."""
    out: dict[str, list[int]] = {}
    for j, tool in enumerate(library.tools):
        for kind in dict.fromkeys(tool.input_types or ()):
            out.setdefault(kind, []).append(j)
    return out


def iter_links(library: ToolLibrary, dependency: str | None = None) -> Iterator[tuple[str, str, str]]:
    """``(source, target, type)`` of every link of the library's graph, source-major in library order (the
    rules in the module docstring; ``dependency`` overrides the library's kind). Nothing is kept: any size
    streams."""
    dep = check_dependency(dependency) or library.dependency
    tools = library.tools
    if dep != "resource":
        ids = [t.id for t in tools]
        for src_id in ids:
            for dst_id in ids:
                if src_id != dst_id:
                    yield src_id, dst_id, TEMPORAL_LINK_TYPE
        return
    consumers = _consumers(library)
    inputs = [set(t.input_types or ()) for t in tools]
    for i, a in enumerate(tools):
        outs = [t for t in dict.fromkeys(a.output_types or ()) if t in consumers]
        if not outs:
            continue
        if len(outs) == 1:
            targets = consumers[outs[0]]
        else:
            targets = sorted({j for t in outs for j in consumers[t]})
        for j in targets:
            if j != i:
                shared = outs[0] if len(outs) == 1 else next(t for t in outs if t in inputs[j])
                yield a.id, tools[j].id, shared


def count_links(library: ToolLibrary, dependency: str | None = None, *, stop_above: int | None = None) -> int:
    """How many links :func:`iter_links` gives, without making them (with ``stop_above``: the count stops
    early once it is larger, and is then only known to exceed it)."""
    dep = check_dependency(dependency) or library.dependency
    n = len(library.tools)
    if dep != "resource":
        return n * (n - 1)
    consumers = _consumers(library)
    total = 0
    for i, a in enumerate(library.tools):
        outs = [t for t in dict.fromkeys(a.output_types or ()) if t in consumers]
        if len(outs) == 1:
            targets = consumers[outs[0]]
            total += len(targets) - (1 if _contains(targets, i) else 0)
        elif outs:
            union = {j for t in outs for j in consumers[t]}
            total += len(union) - (1 if i in union else 0)
        if stop_above is not None and total > stop_above:
            return total
    return total


def _contains(sorted_ints: list[int], x: int) -> bool:
    import bisect

    k = bisect.bisect_left(sorted_ints, x)
    return k < len(sorted_ints) and sorted_ints[k] == x


def check_size(
    library: ToolLibrary, dependency: str | None = None, *, max_links: int | None = MAX_LINKS, streamed: bool = False
) -> None:
    """Raise :class:`ConfigError` when the library's graph has more than ``max_links`` links (0 or None: any).
    ``streamed``: the graph is written to a file, not held in memory (the message gives the file size)."""
    if not max_links or count_links(library, dependency, stop_above=max_links) <= max_links:
        return
    count = count_links(library, dependency)
    dep = check_dependency(dependency) or library.dependency
    why = "every ordered pair is a temporal link" if dep != "resource" else "many tools share a type"
    cost = (f"the graph_desc.json would be about {90 * count / 1e6:,.0f} MB" if streamed
            else f"held in memory it needs about {1.5 * count / 1e6:,.1f} GB")
    raise ConfigError(
        f"the tool graph of these {len(library):,} tools has {count:,} links ({why}), more than the limit of "
        f"{max_links:,}: {cost}. Pass --max-links {count} (or 0: no limit) to go ahead, or give the tools more "
        "specific types"
    )


def build_graph(
    library: ToolLibrary, dependency: str | None = None, *, max_links: int | None = MAX_LINKS
) -> ToolGraph:
    """The tool graph of a library under its dependency kind (or ``dependency``, which overrides it).

    A graph of more than ``max_links`` links (0 or None: no limit) is refused with a :class:`ConfigError`
    before anything is built (see the module docstring)."""
    dep = check_dependency(dependency) or library.dependency
    check_size(library, dep, max_links=max_links)
    links = [ToolLink(source=a, target=b, type=t) for a, b, t in iter_links(library, dep)]
    return ToolGraph(nodes=list(library.tools), links=links, dependency=dep)  # type: ignore[arg-type]
