"""Tools and tool libraries: the vocabulary every benchmark is built from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from .chat import HttpOperation, ToolSpec, check_schema_depth

DependencyKind = Literal["resource", "temporal"]
"""How tools depend on each other.

``resource``: tool b can follow tool a when an output type of a is an input type of b (typed tools, e.g. the
Hugging Face and Multimedia domains). ``temporal``: any tool can follow any other; a link only says "after"
(tools with named parameters, e.g. the Daily Life APIs domain)."""

DEPENDENCY_KINDS: tuple[str, ...] = ("resource", "temporal")


def infer_dependency(tools: Sequence[Tool]) -> DependencyKind:
    """The one rule for a dependency kind nobody stated: ``resource`` when every tool declares input or output
    types (the resource rule can link them all), else ``temporal`` (a library that mixes typed tools with
    tools that have only named parameters, or has no tools, is temporal). Loaders, tool graphs and
    ``graph build`` all use it."""
    return "resource" if tools and all(t.is_typed for t in tools) else "temporal"


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
    input_schema: dict[str, JsonValue] | None = Field(
        default=None,
        description="The JSON Schema of the arguments exactly as the source gave it (OpenAI 'parameters', MCP "
        "'inputSchema'; for OpenAPI operations one object over every parameter and the body's properties).",
    )
    output_schema: dict[str, JsonValue] | None = Field(
        default=None, description="JSON Schema of the result (MCP 'outputSchema', OpenAPI success response)."
    )
    http: HttpOperation | None = Field(
        default=None, description="For OpenAPI operations: method, path, parameter locations, body and response."
    )
    source: str | None = Field(
        default=None, description="Format the tool was loaded from (taskbench | openai | mcp | openapi)."
    )

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        check_schema_depth(data, "input_schema", "output_schema")
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
        """The tool as a TaskBench ``tool_desc.json`` node (plus, for tools loaded from OpenAI, MCP or OpenAPI,
        the keys ``input_schema`` / ``output_schema`` / ``http`` / ``source``, which the reference ignores and
        which let the library be read back without loss)."""
        out: dict[str, Any] = {"id": self.id, "desc": self.desc}
        if self.input_types is not None:
            out["input-type"] = list(self.input_types)
        if self.output_types is not None:
            out["output-type"] = list(self.output_types)
        if self.parameters is not None:
            out["parameters"] = [
                {"name": p.name, "type": p.type, "desc": p.desc, **({} if p.required else {"required": False})}
                for p in self.parameters
            ]
        if self.input_schema is not None:
            out["input_schema"] = self.input_schema
        if self.output_schema is not None:
            out["output_schema"] = self.output_schema
        if self.http is not None:
            out["http"] = self.http.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        if self.source is not None and self.source != "taskbench":
            out["source"] = self.source
        return out

    def spec(self) -> ToolSpec:
        """The tool as a callable :class:`ToolSpec`: the source's own argument schema when it had one, else
        one built from the named parameters, else one string property per input type (resource tools)."""
        return ToolSpec(
            name=self.id,
            description=self.desc,
            parameters=self.input_schema if self.input_schema is not None else self._arguments_schema(),
            output_schema=self.output_schema,
            http=self.http,
            input_types=list(self.input_types) if self.input_types is not None else None,
            output_types=list(self.output_types) if self.output_types is not None else None,
            source=self.source or "taskbench",
        )

    def argument_names(self) -> list[str]:
        """Names of the arguments a call takes: the parameters' names, or one name per input type."""
        if self.parameters is not None:
            return [p.name for p in self.parameters]
        return _type_argument_names(self.input_types or [])

    def _arguments_schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        required: list[str] = []
        if self.parameters is not None:
            for p in self.parameters:
                prop = dict(_JSON_TYPES.get(p.type.strip().lower(), {"type": "string"}))
                if p.desc:
                    prop["description"] = p.desc
                if p.type.strip().lower() not in _JSON_TYPES:
                    prop["description"] = f"{p.desc} ({p.type})".strip() if p.desc else p.type
                props[p.name] = prop
                if p.required:
                    required.append(p.name)
        else:
            for name, kind in zip(_type_argument_names(self.input_types or []), self.input_types or [], strict=True):
                props[name] = {"type": "string", "description": f"the input {kind}: text, a file name or URL"}
                required.append(name)
        return {"type": "object", "properties": props, "required": required}


_JSON_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "str": {"type": "string"},
    "text": {"type": "string"},
    "integer": {"type": "integer"},
    "int": {"type": "integer"},
    "number": {"type": "number"},
    "float": {"type": "number"},
    "boolean": {"type": "boolean"},
    "bool": {"type": "boolean"},
    "array": {"type": "array"},
    "list": {"type": "array"},
    "object": {"type": "object"},
    "dict": {"type": "object"},
}


def _type_argument_names(types: list[str]) -> list[str]:
    """One argument name per input type, made unique ('image', 'image_2', ...)."""
    seen: dict[str, int] = {}
    out = []
    for kind in types:
        base = "".join(c if c.isalnum() else "_" for c in str(kind).lower()).strip("_") or "input"
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}_{seen[base]}")
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

    def specs(self) -> list[ToolSpec]:
        """Every tool as a callable :class:`ToolSpec`, in library order."""
        return [t.spec() for t in self.tools]

    def to_taskbench(self) -> dict[str, Any]:
        """The library as a TaskBench ``tool_desc.json`` document (``{"nodes": [...]}``)."""
        return {"nodes": [t.to_taskbench() for t in self.tools]}
