"""Summary statistics of a tool graph (what `taskbench graph stats` prints)."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from ..schema import ToolGraph


class DegreeSummary(BaseModel):
    """Min / mean / max of a degree over all tools, and the tools with the highest degree."""

    min: int = Field(description="Smallest degree.")
    mean: float = Field(description="Mean degree.")
    max: int = Field(description="Largest degree.")
    top: list[tuple[str, int]] = Field(description="Up to five (tool, degree) pairs, highest first.")


class GraphStats(BaseModel):
    """Size, density, degrees, types and connectivity of a tool graph."""

    dependency: str = Field(description="'resource' or 'temporal'.")
    nodes: int = Field(description="Number of tools.")
    links: int = Field(description="Number of directed links.")
    density: float = Field(description="links / (nodes * (nodes - 1)); 1.0 for a complete graph.")
    in_degree: DegreeSummary = Field(description="Incoming links per tool.")
    out_degree: DegreeSummary = Field(description="Outgoing links per tool.")
    link_types: dict[str, int] = Field(description="Links per link type, most common first.")
    input_types: dict[str, int] = Field(description="Resource graphs: tools taking each input type.")
    output_types: dict[str, int] = Field(description="Resource graphs: tools producing each output type.")
    parameters: int = Field(default=0, description="Total named parameters over all tools.")
    components: int = Field(description="Weakly connected components.")
    component_sizes: list[int] = Field(description="Sizes of the weakly connected components, largest first.")
    isolated: list[str] = Field(description="Tools with no link at all.")
    unproduced_input_types: list[str] = Field(
        description="Resource graphs: input types no tool produces (they can only come from the user)."
    )
    unconsumed_output_types: list[str] = Field(
        default_factory=list, description="Resource graphs: output types no tool takes (dead ends)."
    )


def _degree(values: dict[str, int]) -> DegreeSummary:
    if not values:
        return DegreeSummary(min=0, mean=0.0, max=0, top=[])
    ranked = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    return DegreeSummary(
        min=min(values.values()),
        mean=sum(values.values()) / len(values),
        max=max(values.values()),
        top=ranked[:5],
    )


def _count(items: list[str]) -> dict[str, int]:
    return dict(sorted(Counter(items).items(), key=lambda kv: (-kv[1], kv[0])))


def graph_stats(graph: ToolGraph) -> GraphStats:
    """Compute :class:`GraphStats` for a graph."""
    import networkx as nx

    g = graph.to_networkx()
    n = g.number_of_nodes()
    m = g.number_of_edges()
    comps = sorted((len(c) for c in nx.weakly_connected_components(g)), reverse=True)
    dep = graph.dependency_kind
    inputs = [ty for t in graph.nodes for ty in dict.fromkeys(t.input_types or ())]
    outputs = [ty for t in graph.nodes for ty in dict.fromkeys(t.output_types or ())]
    produced = set(outputs)
    return GraphStats(
        dependency=dep,
        nodes=n,
        links=m,
        density=m / (n * (n - 1)) if n > 1 else 0.0,
        in_degree=_degree(dict(g.in_degree())),
        out_degree=_degree(dict(g.out_degree())),
        link_types=_count([lk.type or "(none)" for lk in graph.links]),
        input_types=_count(inputs),
        output_types=_count(outputs),
        parameters=sum(len(t.parameters or ()) for t in graph.nodes),
        components=len(comps),
        component_sizes=comps,
        isolated=sorted(v for v in g.nodes if g.degree(v) == 0),
        unproduced_input_types=sorted({ty for ty in inputs if ty not in produced}) if dep == "resource" else [],
        unconsumed_output_types=sorted({ty for ty in outputs if ty not in set(inputs)}) if dep == "resource" else [],
    )
