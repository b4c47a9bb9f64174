"""The tool graph: tools as nodes, dependencies as typed links."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from .tools import DependencyKind, Tool, ToolLibrary, infer_dependency

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx


LINK_RULES: tuple[str, ...] = ("documented", "schema", "name", "description", "mention", "state", "llm", "manual")
"""Where a link's reason comes from: ``documented`` (the spec's own OpenAPI ``links`` object), ``schema`` (a
returned field's meaning matches a parameter's), ``name`` (a returned field and a required parameter have the
same name), ``description`` (a tool without an output schema names the thing another tool takes), ``mention``
(the source's name or description mentions what a parameter of the target names, such as a table, a path or a
branch, when no schema says more), ``state`` (an HTTP write changes what another operation reads), ``llm`` (a
model proposed it and the rule check kept it), ``manual`` (added by hand with ``taskbench graph edit``)."""

Confidence = Literal["high", "medium", "low"]
"""How sure a reason is: ``high`` (documented, or a returned identifier whose meaning matches), ``medium`` (same
name, described output, state), ``low`` (only mentioned; an identifier whose entity could not be resolved)."""


class LinkReason(BaseModel):
    """Why a link exists: which value of the source tool feeds which parameter of the target tool."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    rule: str = Field(description="How it was found: " + ", ".join(LINK_RULES) + ".")
    output: str | None = Field(
        default=None,
        description="The source tool's returned field, as a path into its result (e.g. 'results[].id'); None "
        "when the reason is not a field (state links, tools without an output schema, hand-made links).",
    )
    parameter: str | None = Field(
        default=None, description="The target tool's parameter that the field feeds (e.g. 'person_id')."
    )
    note: str = Field(default="", description="The reason in words (e.g. 'a person id').")
    confidence: Confidence | None = Field(
        default=None, description="high, medium or low (see Confidence); None for hand-made and older links."
    )

    def text(self) -> str:
        """One line: ``results[].id -> person_id (a person id)``."""
        left = self.output or ""
        right = self.parameter or ""
        core = f"{left} -> {right}" if left and right else left or (f"-> {right}" if right else "")
        if self.note:
            return f"{core} ({self.note})" if core else self.note
        return core or self.rule


class ToolLink(BaseModel):
    """A directed dependency: ``target`` may consume what ``source`` produces (or run after it)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    source: str = Field(description="Id of the tool that runs first.")
    target: str = Field(description="Id of the tool that runs after it.")
    type: str | None = Field(
        default=None,
        description="Shared resource type for resource links (e.g. 'image'); 'complete' for temporal links; "
        "'data' or 'state' for inferred links (see LinkReason).",
    )
    reasons: tuple[LinkReason, ...] = Field(
        default=(),
        description="Why the link exists (inferred and hand-made links); empty for rule-built graphs. Written "
        "to graph_desc.json as an extra key that the reference tools ignore.",
    )

    @model_serializer(mode="wrap")
    def _drop_empty_reasons(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not data.get("reasons"):
            data.pop("reasons", None)
        return data

    def to_taskbench(self) -> dict[str, Any]:
        """The link as a ``graph_desc.json`` entry: ``{source, target, type}`` plus ``reasons`` when known."""
        out: dict[str, Any] = {"source": self.source, "target": self.target}
        if self.type is not None:
            out["type"] = self.type
        if self.reasons:
            out["reasons"] = [r.model_dump(exclude_defaults=True) for r in self.reasons]
        return out


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
    inferred: str | None = Field(
        default=None,
        description="How the links were inferred: 'schema' (from the tools' schemas, names and descriptions) or "
        "'llm:<provider/model>'; None for graphs built with the resource/temporal rules or by hand.",
    )
    edits: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Hand edits applied with `taskbench graph edit`, in order: {op: drop|add, source, target, "
        "reason?}.",
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
        doc: dict[str, Any] = {
            "nodes": [t.to_taskbench() for t in self.nodes],
            "links": [lk.to_taskbench() for lk in self.links],
        }
        if self.inferred is not None:
            doc["inferred"] = self.inferred
        if self.edits:
            doc["edits"] = list(self.edits)
        return doc
