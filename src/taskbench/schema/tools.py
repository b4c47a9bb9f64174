"""Tools and tool libraries: the vocabulary every benchmark is built from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DependencyKind = Literal["resource", "temporal"]
"""How tools depend on each other.

``resource``: tool b can follow tool a when an output type of a is an input type of b (typed tools, e.g. the
Hugging Face and Multimedia domains). ``temporal``: any tool can follow any other; a link only says "after"
(tools with named parameters, e.g. the Daily Life APIs domain)."""

DEPENDENCY_KINDS: tuple[str, ...] = ("resource", "temporal")


class ToolParameter(BaseModel):
    """One named parameter of a tool (temporal domains, OpenAI/MCP/OpenAPI tools)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = Field(description="Parameter name as the tool expects it, e.g. 'location'.")
    type: str = Field(default="string", description="Declared type, e.g. 'string', 'integer', 'date'.")
    desc: str = Field(
        default="",
        validation_alias="desc",
        description="What the parameter means (TaskBench 'desc', also read from 'description').",
    )
    required: bool = Field(default=True, description="Whether a call must supply this parameter.")

    @model_validator(mode="before")
    @classmethod
    def _description_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "desc" not in data and "description" in data:
            data = dict(data)
            data["desc"] = data.pop("description")
        return data


class Tool(BaseModel):
    """One tool: a node of the tool graph.

    Resource-domain tools have ``input_types``/``output_types`` (TaskBench ``input-type``/``output-type``);
    temporal-domain tools have ``parameters``. A tool may have both (then both rules can apply).
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str = Field(description="Unique tool name; this is what task nodes refer to (TaskBench 'id').")
    desc: str = Field(default="", description="Natural-language description shown to models.")
    input_types: list[str] | None = Field(
        default=None,
        alias="input-type",
        description="Resource types the tool consumes, in argument order (TaskBench 'input-type').",
    )
    output_types: list[str] | None = Field(
        default=None,
        alias="output-type",
        description="Resource types the tool produces; the first is what '<node-j>' refers to.",
    )
    parameters: list[ToolParameter] | None = Field(
        default=None, description="Named parameters (temporal domains and API tools)."
    )

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if "id" not in data:
                for key in ("name", "task"):
                    if key in data:
                        data["id"] = data[key]
                        break
            if "desc" not in data and "description" in data:
                data["desc"] = data["description"]
            for src, dst in (("input_types", "input-type"), ("output_types", "output-type")):
                if src in data and dst not in data:
                    data[dst] = data.pop(src)
            # sampled_nodes in temporal data call the parameters "arguments"
            if "parameters" not in data and isinstance(data.get("arguments"), list):
                if all(isinstance(a, dict) and "name" in a for a in data["arguments"]):
                    data["parameters"] = data["arguments"]
        return data

    @property
    def is_typed(self) -> bool:
        """True when the tool declares input or output types (resource rule applies)."""
        return self.input_types is not None or self.output_types is not None

    def first_output_type(self) -> str:
        """The type a ``<node-j>`` reference to this tool stands for ("none" when it has no output)."""
        return self.output_types[0] if self.output_types else "none"

    def to_taskbench(self) -> dict[str, Any]:
        """The tool as a TaskBench ``tool_desc.json`` node."""
        out: dict[str, Any] = {"id": self.id, "desc": self.desc}
        if self.input_types is not None:
            out["input-type"] = list(self.input_types)
        if self.output_types is not None:
            out["output-type"] = list(self.output_types)
        if self.parameters is not None:
            out["parameters"] = [
                {"name": p.name, "type": p.type, "desc": p.desc} for p in self.parameters
            ]
        return out


class ToolLibrary(BaseModel):
    """An ordered set of tools plus the dependency kind that links them.

    The order matters: compatible scoring uses the library order for per-tool tables.
    """

    model_config = ConfigDict(extra="ignore")

    tools: list[Tool] = Field(description="The tools, in library order; ids are unique.")
    dependency: DependencyKind = Field(description="'resource' or 'temporal' (see DependencyKind).")
    name: str | None = Field(default=None, description="Optional name of the library, e.g. 'multimedia'.")

    @model_validator(mode="after")
    def _unique_ids(self) -> ToolLibrary:
        seen: set[str] = set()
        for tool in self.tools:
            if tool.id in seen:
                raise ValueError(f"duplicate tool id {tool.id!r}")
            seen.add(tool.id)
        return self

    @property
    def names(self) -> list[str]:
        """Tool ids in library order."""
        return [t.id for t in self.tools]

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._index().get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._index()

    def __len__(self) -> int:
        return len(self.tools)

    def _index(self) -> dict[str, Tool]:
        idx = self.__dict__.get("_idx")
        if idx is None or len(idx) != len(self.tools):
            idx = {t.id: t for t in self.tools}
            self.__dict__["_idx"] = idx
        return idx

    def to_taskbench(self) -> dict[str, Any]:
        """The library as a TaskBench ``tool_desc.json`` document (``{"nodes": [...]}``)."""
        return {"nodes": [t.to_taskbench() for t in self.tools]}
