"""A sampling plan: which tool subgraphs the data engine turns into samples, one entry per sample."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .graph import ToolLink
from .sample import StructureType


class SampledSubgraph(BaseModel):
    """One plan entry: a subgraph of the tool graph, sampled with its own seed.

    ``nodes`` are in a topological order of ``links``; a chain's links are its path, a DAG's links are the
    edges its nodes were attached by (a tree), a single has no links.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    index: int = Field(description="Position in the plan (0-based); entry i depends only on (graph, seed, i).")
    seed: int = Field(description="The plan seed this entry was sampled with.")
    mode: StructureType = Field(description="single | chain | dag.")
    size: int = Field(description="Number of tools in the subgraph (len(nodes)).")
    nodes: list[str] = Field(description="Tool ids, in a topological order of the links.")
    links: list[ToolLink] = Field(
        default_factory=list, description="The sampled links with their graph types (and reasons, when the graph has them)."
    )

    def to_record(self) -> dict[str, Any]:
        """One JSON line of a plan file."""
        return self.model_dump(mode="json")
