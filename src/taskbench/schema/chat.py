"""Chat messages, tool specs, tool calls and tool results: what models, environments and agents exchange.

- :class:`ToolSpec` is a callable tool as a model or an environment sees it: a name, a description, the JSON
  Schema of its arguments, and (when the source said so) the JSON Schema of its output and its HTTP binding
  (:class:`HttpOperation`: method, path template, each parameter's location, the request body, the response).
  Every loaded :class:`~taskbench.schema.Tool` turns into one with :meth:`Tool.spec` without loss.
- :class:`ToolCall` is one call a model asked for; :class:`ToolResult` is what the tool gave back (a value or
  an error the caller can read).
- Messages are typed (:class:`SystemMessage`, :class:`UserMessage`, :class:`AssistantMessage` with optional
  tool calls, :class:`ToolMessage` holding a result) and convert to and from the OpenAI chat format
  (:func:`to_openai_messages`, :func:`parse_messages`).
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

ParameterLocation = Literal["path", "query", "header", "cookie", "body"]
"""Where an HTTP operation takes a parameter (``body``: a top-level property of the JSON request body)."""


class HttpParameter(BaseModel):
    """One parameter of an HTTP operation, as the OpenAPI spec declares it."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = Field(description="Parameter name (the key in the path template, query string, header or body).")
    location: ParameterLocation = Field(description="path | query | header | cookie | body.")
    required: bool = Field(default=False, description="Whether a request must carry it (path parameters always).")
    json_schema: dict[str, JsonValue] = Field(
        default_factory=dict, alias="schema", description="The parameter's JSON Schema, references resolved."
    )
    description: str = Field(default="", description="What the parameter means.")


class HttpOperation(BaseModel):
    """How to execute a tool over HTTP: one OpenAPI operation."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    method: str = Field(description="HTTP method in upper case, e.g. 'GET'.")
    path: str = Field(description="Path template relative to the server, e.g. '/person/{person_id}/movie_credits'.")
    parameters: list[HttpParameter] = Field(
        default_factory=list, description="Path, query, header and cookie parameters, then body properties."
    )
    request_body: dict[str, JsonValue] | None = Field(
        default=None, description="JSON Schema of the request body (references resolved), if the operation has one."
    )
    body_required: bool = Field(default=False, description="Whether the request body is required.")
    content_type: str | None = Field(default=None, description="Media type of the request body, e.g. 'application/json'.")
    response_schema: dict[str, JsonValue] | None = Field(
        default=None, description="JSON Schema of the success (2xx) response body, references resolved."
    )
    response_example: JsonValue = Field(
        default=None, description="An example success response from the spec, when it gives one."
    )
    server: str | None = Field(default=None, description="The spec's first server URL, if any.")
    links: list[dict[str, JsonValue]] = Field(
        default_factory=list,
        description="The OpenAPI links of its success responses: {'target': operation id, 'parameters': {target "
        "parameter: runtime expression such as '$response.body#/id'}}, references resolved.",
    )

    def parameter(self, name: str) -> HttpParameter | None:
        """The parameter called ``name``, or None."""
        return next((p for p in self.parameters if p.name == name), None)


MAX_SCHEMA_DEPTH = 64
"""The deepest a tool's JSON Schema (parameters, output) may nest: real schemas stay under about 20 levels, and
pydantic and the JSON encoder give up (a RecursionError) past a few hundred."""


def nesting_depth(value: Any, limit: int = MAX_SCHEMA_DEPTH) -> int:
    """How deeply ``value``'s objects and arrays nest, counted without recursion and only up to ``limit + 1``
    (a value nested deeper is not walked further)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict | list | tuple):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def check_schema_depth(data: Any, *fields: str) -> Any:
    """A ``mode="before"`` check of a tool model: each of ``fields`` of ``data`` nests at most
    :data:`MAX_SCHEMA_DEPTH` levels (a ValueError naming the field otherwise, before pydantic recurses)."""
    if isinstance(data, dict):
        for name in fields:
            if nesting_depth(data.get(name)) > MAX_SCHEMA_DEPTH:
                raise ValueError(f"{name}: a JSON Schema nested deeper than {MAX_SCHEMA_DEPTH} levels")
    return data


class ToolSpec(BaseModel):
    """A callable tool: name, description, argument schema, and what is known of its output and transport."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="The tool's name as the library gives it (what task nodes and gold paths use).")
    description: str = Field(default="", description="What the tool does, for the model.")
    parameters: dict[str, JsonValue] = Field(
        default_factory=lambda: dict[str, JsonValue]({"type": "object", "properties": {}}),
        description="JSON Schema (an object) of the call's arguments, kept as the source gave it.",
    )
    output_schema: dict[str, JsonValue] | None = Field(
        default=None, description="JSON Schema of the result (MCP outputSchema, OpenAPI response), if known."
    )
    http: HttpOperation | None = Field(default=None, description="HTTP binding of an OpenAPI operation, if any.")
    input_types: list[str] | None = Field(
        default=None, description="Resource types consumed, for TaskBench resource tools (argument order)."
    )
    output_types: list[str] | None = Field(default=None, description="Resource types produced (resource tools).")
    source: str | None = Field(
        default=None, description="Format the tool was loaded from: taskbench | openai | mcp | openapi."
    )

    @model_validator(mode="before")
    @classmethod
    def _depth(cls, data: Any) -> Any:
        return check_schema_depth(data, "parameters", "output_schema")

    def to_openai(self, name: str | None = None) -> dict[str, Any]:
        """The tool in OpenAI's ``tools`` format (``name`` overrides the function name, see :func:`api_names`)."""
        fn: dict[str, Any] = {"name": name or self.name, "parameters": self.parameters or {"type": "object"}}
        if self.description:
            fn["description"] = self.description
        return {"type": "function", "function": fn}

    @classmethod
    def coerce(cls, value: Any) -> ToolSpec:
        """A ToolSpec from a ToolSpec, a :class:`~taskbench.schema.Tool`, an OpenAI tool or function dict, or an
        MCP tool dict."""
        if isinstance(value, ToolSpec):
            return value
        spec = getattr(value, "spec", None)
        if callable(spec):
            result = spec()
            if isinstance(result, ToolSpec):
                return result
        if isinstance(value, Mapping):
            inner = value.get("function")
            fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else value
            params = fn.get("parameters", fn.get("inputSchema"))
            return cls(
                name=str(fn.get("name", "")),
                description=str(fn.get("description") or ""),
                parameters=dict(params) if isinstance(params, Mapping) else {"type": "object", "properties": {}},
                output_schema=dict(fn["outputSchema"]) if isinstance(fn.get("outputSchema"), Mapping) else None,
                source="openai" if "parameters" in fn or "function" in value else "mcp",
            )
        raise TypeError(f"cannot make a tool spec from {type(value).__name__}")


_API_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def api_names(names: Sequence[str]) -> list[str]:
    """Function names that OpenAI-style APIs accept (``^[A-Za-z0-9_-]{1,64}$``), one per tool, unique, and
    equal to the tool's own name where it already fits ("Image Downloader" -> "Image_Downloader",
    "GET /search/person" -> "GET_search_person")."""
    out: list[str] = []
    taken: set[str] = set()
    for name in names:
        base = _API_NAME.sub("_", name).strip("_")[:60] or "tool"
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base[:57]}_{n}", n + 1
        taken.add(candidate)
        out.append(candidate)
    return out


_PY_NAME = re.compile(r"[^A-Za-z0-9_]+")


def python_names(names: Sequence[str]) -> list[str]:
    """Python function names, one per tool, unique: what agent code calls a tool by. Like :func:`api_names`
    but without hyphens, which Python reads as minus ("Text-to-Audio" -> "Text_to_Audio"); a name that starts
    with a digit or is a keyword gets a leading or trailing underscore."""
    out: list[str] = []
    taken: set[str] = set()
    for name in names:
        base = _PY_NAME.sub("_", name).strip("_")[:60] or "tool"
        if base[0].isdigit():
            base = f"_{base}"
        if keyword.iskeyword(base) or keyword.issoftkeyword(base) or base in ("call_tool", "ToolError"):
            base = f"{base}_"
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base[:57]}_{n}", n + 1
        taken.add(candidate)
        out.append(candidate)
    return out


class ToolCall(BaseModel):
    """One tool call a model asked for."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(description="Call id, unique within the answer (the provider's, or 'call_<n>').")
    name: str = Field(description="Name of the tool called (the library's name, not the API-safe alias).")
    arguments: dict[str, JsonValue] = Field(
        default_factory=dict, description="Arguments, parsed; {} when they could not be parsed."
    )
    raw_arguments: str | None = Field(default=None, description="The arguments text exactly as the model wrote it.")
    error: str | None = Field(
        default=None,
        description="Why the call is not valid (unknown tool, arguments not JSON, arguments not fitting the tool's "
        "schema, cut off); None for a valid call. The caller feeds it back to the model.",
    )

    @property
    def ok(self) -> bool:
        """True when the call names a known tool with arguments that fit its schema."""
        return self.error is None

    def to_openai(self, name: str | None = None) -> dict[str, Any]:
        """The call in OpenAI's ``tool_calls`` format (arguments as a JSON string)."""
        args = self.raw_arguments if self.raw_arguments is not None and self.error else None
        if args is None:
            args = json.dumps(self.arguments, ensure_ascii=False)
        return {"id": self.id, "type": "function", "function": {"name": name or self.name, "arguments": args}}


class ToolResult(BaseModel):
    """What a tool gave back for one call: a JSON value, or an error the caller can read and act on."""

    model_config = ConfigDict(extra="ignore")

    call_id: str = Field(description="Id of the call this answers.")
    name: str = Field(description="Name of the tool that was called.")
    content: JsonValue = Field(default=None, description="The result value (JSON), None on an error.")
    error: str | None = Field(default=None, description="What went wrong, in words the model can act on.")
    status: int | None = Field(default=None, description="HTTP status code, for tools reached over HTTP.")

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.error is None

    def text(self) -> str:
        """The result as the text of a tool message (JSON for values, ``error: ...`` for failures)."""
        if self.error is not None:
            return f"error: {self.error}"
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, ensure_ascii=False)


class SystemMessage(BaseModel):
    """Instructions to the model."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system"] = Field(default="system", description="Always 'system'.")
    content: str = Field(description="The instructions.")


class UserMessage(BaseModel):
    """A user turn."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["user"] = Field(default="user", description="Always 'user'.")
    content: str = Field(description="What the user said.")


class AssistantMessage(BaseModel):
    """A model turn: text, tool calls, or both."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["assistant"] = Field(default="assistant", description="Always 'assistant'.")
    content: str | None = Field(default=None, description="The text of the answer (None when it only calls tools).")
    tool_calls: list[ToolCall] = Field(default_factory=list, description="Tool calls the model asked for, in order.")


class ToolMessage(BaseModel):
    """The result of one tool call, handed back to the model."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["tool"] = Field(default="tool", description="Always 'tool'.")
    call_id: str = Field(description="Id of the call this answers.")
    name: str | None = Field(default=None, description="Name of the tool that answered.")
    content: str = Field(description="The result as text (see ToolResult.text).")

    @classmethod
    def from_result(cls, result: ToolResult) -> ToolMessage:
        """The message carrying ``result``."""
        return cls(call_id=result.call_id, name=result.name, content=result.text())


ChatMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]
"""Any chat message (discriminated by ``role``)."""


def _message_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, BaseModel):
        return message.model_dump(mode="json")
    if isinstance(message, Mapping):
        return dict(message)
    raise TypeError(f"a chat message must be a dict or a message model, not {type(message).__name__}")


def to_openai_messages(
    messages: Sequence[Any], names: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Messages (typed or OpenAI dicts) as OpenAI chat dicts. ``names`` maps tool names to the API-safe names
    the request uses (see :func:`api_names`); dicts already in OpenAI form pass through unchanged."""
    names = names or {}
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, Mapping) and not isinstance(message.get("tool_calls"), list) and (
            message.get("role") != "tool" or "tool_call_id" in message
        ):
            out.append(dict(message))
            continue
        m = _message_dict(message)
        role = m.get("role")
        if role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.get("content")}
            calls = []
            for raw in m.get("tool_calls") or []:
                if isinstance(raw, Mapping) and isinstance(raw.get("function"), Mapping):
                    fn = dict(raw["function"])
                    fn["name"] = names.get(str(fn.get("name")), fn.get("name"))
                    calls.append({**raw, "function": fn})
                    continue
                call = raw if isinstance(raw, ToolCall) else ToolCall.model_validate(raw)
                calls.append(call.to_openai(names.get(call.name, call.name)))
            if calls:
                d["tool_calls"] = calls
            out.append(d)
        elif role == "tool":
            call_id = m.get("call_id", m.get("tool_call_id"))
            d = {"role": "tool", "tool_call_id": call_id, "content": m.get("content", "")}
            if m.get("name"):
                d["name"] = names.get(str(m["name"]), m["name"])
            out.append(d)
        else:
            out.append({"role": role, "content": m.get("content", "")})
    return out


def parse_messages(messages: Sequence[Mapping[str, Any]], names: Mapping[str, str] | None = None) -> list[Any]:
    """OpenAI chat dicts as typed messages (``names`` maps API-safe tool names back to tool names)."""
    names = names or {}
    out: list[Any] = []
    for m in messages:
        role = m.get("role")
        content = m.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        if role == "assistant":
            calls = []
            for i, raw in enumerate(m.get("tool_calls") or []):
                fn = raw.get("function", {}) if isinstance(raw, Mapping) else {}
                args = fn.get("arguments")
                text = args if isinstance(args, str) else json.dumps(args if args is not None else {})
                try:
                    parsed = json.loads(text)
                except (json.JSONDecodeError, RecursionError):
                    parsed = None
                calls.append(
                    ToolCall(
                        id=str(raw.get("id") or f"call_{i}"),
                        name=names.get(str(fn.get("name")), str(fn.get("name"))),
                        arguments=parsed if isinstance(parsed, dict) else {},
                        raw_arguments=text,
                        error=None if isinstance(parsed, dict) else "arguments are not a JSON object",
                    )
                )
            out.append(AssistantMessage(content=content, tool_calls=calls))
        elif role == "tool":
            name = m.get("name")
            out.append(
                ToolMessage(
                    call_id=str(m.get("tool_call_id", m.get("call_id", ""))),
                    name=names.get(str(name), str(name)) if name else None,
                    content="" if content is None else str(content),
                )
            )
        elif role == "system" or role == "developer":
            out.append(SystemMessage(content="" if content is None else str(content)))
        else:
            out.append(UserMessage(content="" if content is None else str(content)))
    return out


__all__ = [
    "MAX_SCHEMA_DEPTH",
    "check_schema_depth",
    "nesting_depth",
    "AssistantMessage",
    "ChatMessage",
    "HttpOperation",
    "HttpParameter",
    "ParameterLocation",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "ToolResult",
    "ToolSpec",
    "UserMessage",
    "api_names",
    "python_names",
    "parse_messages",
    "to_openai_messages",
]
