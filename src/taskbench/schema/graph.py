"""The tool graph: tools as nodes, dependencies as typed links."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from .tools import DependencyKind, Tool, ToolLibrary, infer_dependency

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx


class ToolLink(BaseModel):
    """A directed dependency: ``target`` may consume what ``source`` produces (or run after it)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    source: str = Field(description="Id of the tool that runs first.")
    target: str = Field(description="Id of the tool that runs after it.")
    type: str | None = Field(
        default=None,
        description="Shared resource type for resource links (e.g. 'image'); 'complete' for temporal links.",
    )


class ToolGraph(BaseModel):
    """A tool graph (TaskBench ``graph_desc.json``): the library's tools and the links between them.

    JSON outside (``{"nodes": [...tools...], "links": [{source, target, type}]}``), networkx inside
    (:meth:`to_networkx`).
    """

    model_config = ConfigDict(extra="ignore")

    nodes: list[Tool] = Field(description="The tools, in library order.")
    links: list[ToolLink] = Field(default_factory=list, description="Directed links, no duplicates.")
    dependency: DependencyKind | None = Field(
        default=None, description="The rule the links were built with, when known."
    )

    @property
    def dependency_kind(self) -> DependencyKind:
        """The recorded dependency, else inferred (:func:`~taskbench.schema.tools.infer_dependency`: 'resource'
        when every tool is typed)."""
        if self.dependency is not None:
            return self.dependency
        return infer_dependency(self.nodes)

    @property
    def library(self) -> ToolLibrary:
        """The nodes as a :class:`ToolLibrary` (dependency inferred when not recorded)."""
        return ToolLibrary(tools=self.nodes, dependency=self.dependency_kind)

    def to_networkx(self) -> nx.DiGraph:
        """A ``networkx.DiGraph`` with tool attributes on nodes and ``type`` on edges."""
        import networkx as nx

        g = nx.DiGraph()
        for tool in self.nodes:
            g.add_node(tool.id, tool=tool)
        for link in self.links:
            g.add_edge(link.source, link.target, type=link.type)
        return g

    def to_taskbench(self) -> dict[str, Any]:
        """The graph as a TaskBench ``graph_desc.json`` document."""
        return {
            "nodes": [t.to_taskbench() for t in self.nodes],
            "links": [
                {"source": lk.source, "target": lk.target, **({"type": lk.type} if lk.type is not None else {})}
                for lk in self.links
            ],
        }
