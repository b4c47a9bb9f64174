"""Tool library loaders: TaskBench, OpenAI tools, MCP ``tools/list`` and OpenAPI 3, one format-detecting entry.

The four formats are registered here in the tool-format registry (:mod:`taskbench.graph.formats`), which is
what :func:`load_tools`, ``--format`` and its help read; a new format is registered the same way from its own
module (docs/extending.md).

- :func:`load_tool_library` reads a TaskBench ``tool_desc.json`` (or ``graph_desc.json``) and infers the
  dependency kind from the fields (typed tools -> resource, parameters -> temporal) unless told.
- :func:`load_tools` reads any supported format (``format="auto"`` detects it from the document's shape):

  ``taskbench``  ``{"nodes": [{"id", "desc", "input-type"/"output-type" or "parameters"}]}`` (or a bare list)
  ``openai``     ``[{"type": "function", "function": {name, description, parameters}}]``, bare function
                 objects, or ``{"tools": [...]}`` / ``{"functions": [...]}`` holding either
  ``mcp``        an MCP ``tools/list`` result ``{"tools": [{name, description, inputSchema}]}`` or the whole
                 JSON-RPC response ``{"jsonrpc", "id", "result": {"tools": [...]}}``
  ``openapi``    an OpenAPI 3 spec: one tool per operation (id = ``operationId``, else ``"METHOD /path"``;
                 parameters from path/query/header parameters and the JSON request body's properties)

  Non-TaskBench formats give temporal libraries whose tools have named parameters (``required`` from the
  JSON Schema).

Every problem raises :class:`~taskbench.errors.InputError` naming ``file:line`` (the JSON parse position for
syntax errors; the line where the offending tool starts for semantic errors) and what to do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._plugins import LiveView
from ..dataset.tool_desc import JsonSource as JsonSource
from ..dataset.tool_desc import Key as Key
from ..dataset.tool_desc import _finish, _library
from ..dataset.tool_desc import check_dependency as check_dependency
from ..dataset.tool_desc import load_tool_library as load_tool_library
from ..dataset.tool_desc import tools_from_taskbench as tools_from_taskbench
from ..errors import ConfigError, InputError, did_you_mean, validation_message
from ..schema import Tool, ToolLibrary, ToolParameter
from ..schema.chat import HttpOperation, HttpParameter, ParameterLocation
from .formats import ToolFormat, format_names, get_format, register_tool_format, titles_help
from .formats import check_format as check_format
from .formats import detect_format as detect_format
from .refs import INLINE_MAX_NODES, _resolve, inline_schema  # noqa: F401 - re-exported

FORMATS: LiveView[str] = LiveView(format_names)
"""Values accepted by ``load_tools(format=...)``: ``auto`` and every registered format (a view of the
registry, :func:`taskbench.graph.formats.format_names`)."""

HTTP_METHODS: tuple[str, ...] = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


# --------------------------------------------------------------------------------------------- JSON Schema


def _schema_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "string"
    t = schema.get("type")
    if isinstance(t, list):
        names = [x for x in t if isinstance(x, str) and x != "null"]
        return "|".join(names) or "null"
    if isinstance(t, str):
        if t == "array" and isinstance(schema.get("items"), dict) and isinstance(schema["items"].get("type"), str):
            return f"array[{schema['items']['type']}]"
        return t
    if "enum" in schema:
        return "string"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            names = [_schema_type(s) for s in schema[key] if not (isinstance(s, dict) and s.get("type") == "null")]
            return "|".join(dict.fromkeys(names)) or "string"
    if "properties" in schema:
        return "object"
    return "string"


def _schema_desc(schema: Any) -> str:
    if not isinstance(schema, dict):
        return ""
    desc = schema.get("description") or schema.get("title") or ""
    if not isinstance(desc, str):
        desc = str(desc)
    if isinstance(schema.get("enum"), list):
        choices = ", ".join(json.dumps(v) for v in schema["enum"][:20])
        desc = f"{desc} (one of: {choices})" if desc else f"one of: {choices}"
    return " ".join(desc.split())


def parameters_from_schema(schema: Any) -> list[ToolParameter]:
    """Named parameters from a JSON Schema object (``properties`` + ``required``); anything else gives []."""
    if not isinstance(schema, dict):
        return []
    props = schema.get("properties")
    if not isinstance(props, dict):
        return []
    required = schema.get("required")
    req = set(required) if isinstance(required, list) and all(isinstance(r, str) for r in required) else set()
    return [
        ToolParameter(name=str(name), type=_schema_type(sub), desc=_schema_desc(sub), required=name in req)
        for name, sub in props.items()
    ]


def _named_tool(
    src: JsonSource,
    keys: tuple[Key, ...],
    i: int,
    name: Any,
    description: Any,
    schema: Any,
    what: str,
    *,
    source: str,
    output_schema: Any = None,
) -> Tool:
    if not isinstance(name, str) or not name.strip():
        raise src.error(f"{what} #{i} has no 'name'", *keys, hint="every tool needs a unique string 'name'")
    if description is not None and not isinstance(description, str):
        raise src.error(f"{what} #{i} ({name!r}): 'description' must be a string", *keys)
    if schema is not None and not isinstance(schema, dict):
        raise src.error(f"{what} #{i} ({name!r}): the parameter schema must be a JSON object", *keys)
    if output_schema is not None and not isinstance(output_schema, dict):
        raise src.error(f"{what} #{i} ({name!r}): 'outputSchema' must be a JSON object", *keys)
    try:
        return Tool(
            id=name,
            desc=" ".join((description or "").split()),
            parameters=parameters_from_schema(schema),
            input_schema=schema if schema is not None else {"type": "object", "properties": {}},
            output_schema=output_schema,
            source=source,
        )
    except ValidationError as exc:  # a schema nested past MAX_SCHEMA_DEPTH, a value JSON cannot hold
        raise src.error(f"{what} #{i} ({name!r}): {validation_message(exc)}", *keys) from None


# --------------------------------------------------------------------------------------------- OpenAI


def _openai_list(src: JsonSource) -> tuple[list[Any], tuple[Key, ...]]:
    doc = src.doc
    if isinstance(doc, list):
        return doc, ()
    if isinstance(doc, dict):
        for key in ("tools", "functions"):
            if isinstance(doc.get(key), list):
                return doc[key], (key,)
    raise src.error(
        "expected an OpenAI tools list [{\"type\": \"function\", \"function\": {...}}]",
        hint="pass a JSON array of tools or function objects",
    )


def tools_from_openai(src: JsonSource) -> list[Tool]:
    """Tools from an OpenAI tools/functions list (wrapped ``{"type": "function", "function": ...}`` or bare)."""
    items, base = _openai_list(src)
    tools = []
    for i, item in enumerate(items):
        keys = (*base, i)
        if not isinstance(item, dict):
            raise src.error(f"tool #{i} is not a JSON object", *keys)
        fn: Any = item
        if "function" in item or item.get("type") == "function":
            fn = item.get("function")
            if not isinstance(fn, dict):
                raise src.error(f"tool #{i}: 'function' must be an object", *keys, hint='{"name", "description", "parameters"}')
        tools.append(
            _named_tool(src, keys, i, fn.get("name"), fn.get("description"), fn.get("parameters"), "tool",
                        source="openai")
        )
    return _finish(tools, src, lambda i: (*base, i))


# --------------------------------------------------------------------------------------------- MCP


def _mcp_list(src: JsonSource) -> tuple[list[Any], tuple[Key, ...]]:
    doc = src.doc
    if isinstance(doc, dict):
        if "error" in doc and "result" not in doc:
            raise src.error("this JSON-RPC response is an error, not a tools/list result", "error")
        if isinstance(doc.get("result"), dict) and isinstance(doc["result"].get("tools"), list):
            return doc["result"]["tools"], ("result", "tools")
        if isinstance(doc.get("tools"), list):
            return doc["tools"], ("tools",)
    if isinstance(doc, list):
        return doc, ()
    raise src.error(
        'expected an MCP tools/list result {"tools": [{"name", "description", "inputSchema"}]}',
        hint="pass the result of tools/list (or the whole JSON-RPC response)",
    )


def tools_from_mcp(src: JsonSource) -> list[Tool]:
    """Tools from an MCP ``tools/list`` result or JSON-RPC response."""
    items, base = _mcp_list(src)
    tools = []
    for i, item in enumerate(items):
        keys = (*base, i)
        if not isinstance(item, dict):
            raise src.error(f"tool #{i} is not a JSON object", *keys)
        desc = item.get("description")
        if desc is None and isinstance(item.get("title"), str):
            desc = item["title"]
        tools.append(
            _named_tool(src, keys, i, item.get("name"), desc, item.get("inputSchema"), "tool", source="mcp",
                        output_schema=item.get("outputSchema"))
        )
    return _finish(tools, src, lambda i: (*base, i))


# --------------------------------------------------------------------------------------------- OpenAPI


def tools_from_openapi(src: JsonSource, *, ids: str = "operationId") -> list[Tool]:
    """One tool per operation of an OpenAPI 3 (or Swagger 2) spec.

    ``ids="operationId"`` names a tool by its ``operationId`` when present, else ``"METHOD /path"``;
    ``ids="path"`` always uses ``"METHOD /path"`` (the form RestBench solutions use).
    """
    doc = src.doc
    if not isinstance(doc, dict) or not isinstance(doc.get("paths"), dict):
        raise src.error('expected an OpenAPI spec with a "paths" object', hint="pass an OpenAPI 3 JSON document")
    tools: list[Tool] = []
    where: list[tuple[Key, ...]] = []
    op_ids: dict[str, str] = {}  # operationId -> tool id, for the response links
    servers = doc.get("servers")
    server = None
    if isinstance(servers, list) and servers and isinstance(servers[0], dict) and isinstance(servers[0].get("url"), str):
        server = servers[0]["url"].strip()
    elif isinstance(doc.get("host"), str):  # Swagger 2
        base = doc.get("basePath") if isinstance(doc.get("basePath"), str) else ""
        server = f"https://{doc['host']}{base}"
    for route, item in doc["paths"].items():
        item = _resolve(doc, item)
        if not isinstance(item, dict):
            raise src.error(f"path {route!r} is not an object", "paths", route)
        found_shared = item.get("parameters")
        shared: list[Any] = found_shared if isinstance(found_shared, list) else []
        for method in HTTP_METHODS:
            op = item.get(method)
            if op is None:
                continue
            keys: tuple[Key, ...] = ("paths", route, method)
            if not isinstance(op, dict):
                raise src.error(f"operation {method.upper()} {route} is not an object", *keys)
            op_id = op.get("operationId")
            tool_id = op_id if ids == "operationId" and isinstance(op_id, str) and op_id.strip() else f"{method.upper()} {route}"
            parts = [p for p in (op.get("summary"), op.get("description")) if isinstance(p, str) and p.strip()]
            seen_desc: list[str] = []
            for p in parts:
                p = " ".join(p.split())
                if p.rstrip(".") not in (s.rstrip(".") for s in seen_desc):
                    seen_desc.append(p)
            desc = ". ".join(s.rstrip(".") for s in seen_desc) + ("." if seen_desc else "")
            params: dict[str, ToolParameter] = {}
            http_params: dict[tuple[str, str], HttpParameter] = {}
            swagger_body: tuple[dict[str, Any], bool] | None = None
            found_own = op.get("parameters")
            own: list[Any] = found_own if isinstance(found_own, list) else []
            for raw in [*shared, *own]:
                p = _resolve(doc, raw)
                if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                    raise src.error(f"operation {tool_id!r}: a parameter has no 'name'", *keys)
                if p.get("in") == "body":  # Swagger 2 body parameter
                    for bp in parameters_from_schema(_deref_schema(doc, p.get("schema"))):
                        params[bp.name] = bp
                    swagger_body = (inline_schema(doc, p.get("schema")), _flag(p.get("required"), default=False))
                    continue
                schema = _resolve(doc, p.get("schema", p))
                desc_p = p.get("description") if isinstance(p.get("description"), str) else _schema_desc(schema)
                where_in = p.get("in")
                location: ParameterLocation = where_in if where_in in ("path", "query", "header", "cookie") else "query"
                required = _flag(p.get("required"), default=location == "path") or location == "path"
                params[p["name"]] = ToolParameter(
                    name=p["name"],
                    type=_schema_type(schema),
                    desc=" ".join((desc_p or "").split()),
                    required=required,
                )
                # an operation's own parameter overrides a path-level one of the same name and location
                http_params[(p["name"], location)] = HttpParameter(
                    name=p["name"], location=location, required=required,
                    schema=inline_schema(doc, p.get("schema", {k: v for k, v in p.items() if k == "type"})),
                    description=" ".join((desc_p or "").split()),
                )
            body_schema: dict[str, Any] | None = None
            body_required, content_type = False, None
            if swagger_body is not None:
                body_schema, body_required = swagger_body
                content_type = "application/json"
            body = _resolve(doc, op.get("requestBody"))
            if isinstance(body, dict) and isinstance(body.get("content"), dict):
                content = body["content"]
                content_type = "application/json" if "application/json" in content else next(iter(content), None)
                media = _resolve(doc, content.get(content_type)) if content_type else None
                if isinstance(media, dict):
                    for bp in parameters_from_schema(_deref_schema(doc, media.get("schema"))):
                        params.setdefault(bp.name, bp)
                    body_schema = inline_schema(doc, media.get("schema"))
                body_required = _flag(body.get("required"), default=False)
            if isinstance(body_schema, dict):
                found_props, found_req = body_schema.get("properties"), body_schema.get("required")
                props: dict[str, Any] = found_props if isinstance(found_props, dict) else {}
                req: list[Any] = found_req if isinstance(found_req, list) else []
                for bname, bsub in props.items():
                    if (bname, "body") not in http_params:
                        http_params[(bname, "body")] = HttpParameter(
                            name=bname, location="body", required=body_required and bname in req,
                            schema=bsub if isinstance(bsub, dict) else {},
                            description=_schema_desc(bsub),
                        )
            if isinstance(op_id, str):
                op_ids[op_id] = tool_id
            response_schema, example = _success_response(doc, op)
            http = HttpOperation(
                method=method.upper(), path=route, parameters=list(http_params.values()),
                request_body=body_schema if isinstance(body_schema, dict) else None, body_required=body_required,
                content_type=content_type, response_schema=response_schema, response_example=example,
                server=server, links=_response_links(doc, op),
            )
            try:
                tools.append(
                    Tool(id=tool_id, desc=desc, parameters=list(params.values()),
                         input_schema=_arguments_schema(http), output_schema=response_schema, http=http,
                         source="openapi")
                )
            except ValidationError as exc:
                raise src.error(f"operation {tool_id!r}: {validation_message(exc)}", *keys) from None
            where.append(keys)
    for t in tools:  # a link names its target by operationId; the tool may be named "METHOD /path"
        if t.http is not None and t.http.links:
            t.http.links = [dict(lk, target=op_ids[str(lk["target"])]) for lk in t.http.links
                            if str(lk["target"]) in op_ids]
    return _finish(tools, src, lambda i: where[i])


def _response_links(doc: Any, op: dict[str, Any]) -> list[dict[str, Any]]:
    """The OpenAPI ``links`` of an operation's 2xx responses: target operationId (an ``operationRef`` into
    this document is followed to its operation's id) and the parameters it fills."""
    responses = op.get("responses")
    out: list[dict[str, Any]] = []
    if not isinstance(responses, dict):
        return out
    for code, raw in responses.items():
        resp = _resolve(doc, raw)
        if not str(code).startswith("2") or not isinstance(resp, dict) or not isinstance(resp.get("links"), dict):
            continue
        for link in resp["links"].values():
            link = _resolve(doc, link)
            if not isinstance(link, dict):
                continue
            target = link.get("operationId")
            ref = link.get("operationRef")
            if not isinstance(target, str) and isinstance(ref, str) and ref.startswith("#/"):
                found = _resolve(doc, {"$ref": ref})
                target = found.get("operationId") if isinstance(found, dict) else None
            params = link.get("parameters")
            if isinstance(target, str):
                out.append({"target": target, "parameters": {str(k): str(v) for k, v in params.items()}
                            if isinstance(params, dict) else {}})
    return out


def _success_response(doc: Any, op: dict[str, Any]) -> tuple[dict[str, Any] | None, Any]:
    """(JSON Schema, example) of an operation's first 2xx JSON response, references resolved."""
    responses = op.get("responses")
    if not isinstance(responses, dict):
        return None, None
    codes = sorted((str(c) for c in responses if str(c).startswith("2")), key=lambda c: c != "200")
    codes += [c for c in ("default",) if c in responses]
    for code in codes:
        resp = _resolve(doc, responses.get(code))
        if not isinstance(resp, dict):
            continue
        example: Any = None
        if isinstance(resp.get("content"), dict):  # OpenAPI 3
            content = resp["content"]
            media = content.get("application/json") or next(iter(content.values()), None)
            media = _resolve(doc, media)
            if not isinstance(media, dict):
                continue
            if "example" in media:
                example = media["example"]
            elif isinstance(media.get("examples"), dict) and media["examples"]:
                first = _resolve(doc, next(iter(media["examples"].values())))
                example = first.get("value") if isinstance(first, dict) else None
            schema = inline_schema(doc, media.get("schema")) if isinstance(media.get("schema"), dict) else None
            return schema, example
        if isinstance(resp.get("schema"), dict):  # Swagger 2
            examples = resp.get("examples")
            if isinstance(examples, dict) and examples:
                example = next(iter(examples.values()))
            return inline_schema(doc, resp["schema"]), example
    return None, None


def _arguments_schema(http: HttpOperation) -> dict[str, Any]:
    """One JSON Schema object over an operation's parameters (path, query, header, cookie and body)."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in http.parameters:
        if p.name in props:  # the same name in two locations: the first wins in the flat schema
            continue
        prop = dict(p.json_schema) if p.json_schema else {"type": "string"}
        if p.description and "description" not in prop:
            prop["description"] = p.description
        props[p.name] = prop
        if p.required:
            required.append(p.name)
    return {"type": "object", "properties": props, "required": required}


def _flag(value: Any, *, default: bool) -> bool:
    """A boolean that some specs write as the string "true"/"false"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return default


def _deref_schema(doc: Any, schema: Any) -> Any:
    schema = _resolve(doc, schema)
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        schema = {**schema, "properties": {k: _resolve(doc, v) for k, v in schema["properties"].items()}}
    return schema


# --------------------------------------------------------------------------------------------- detection


def _builtin_format(doc: Any) -> str | None:
    """Which built-in format a parsed document is in ('taskbench', 'openai', 'mcp', 'openapi'), or None: one
    decision over the four shapes, which each built-in format's ``detect`` asks."""
    if isinstance(doc, dict):
        if isinstance(doc.get("paths"), dict) and ("openapi" in doc or "swagger" in doc):
            return "openapi"
        if isinstance(doc.get("nodes"), list):
            return "taskbench"
        if (isinstance(doc.get("result"), dict) and "tools" in doc["result"]) or "jsonrpc" in doc:
            return "mcp"
        for key in ("tools", "functions"):
            if isinstance(doc.get(key), list):
                return _detect_items(doc[key]) or ("openai" if key == "functions" else "mcp")
        return None
    if isinstance(doc, list):
        return _detect_items(doc)
    return None


def _detect_items(items: list[Any]) -> str | None:
    first = next((x for x in items if isinstance(x, dict)), None)
    if first is None:
        return None
    if first.get("type") == "function" or "function" in first:
        return "openai"
    if "inputSchema" in first:
        return "mcp"
    if any(k in first for k in ("input-type", "output-type", "id", "desc")) or isinstance(first.get("parameters"), list):
        return "taskbench"
    if "name" in first:
        return "openai"
    return None


def load_tools(
    path: str | Path,
    format: str = "auto",
    dependency: str | None = None,
    *,
    name: str | None = None,
    openapi_ids: str = "operationId",
) -> ToolLibrary:
    """Load a tool library in any supported format (see the module docstring) as a :class:`ToolLibrary`.

    ``format="auto"`` detects the format from the document's shape. ``dependency`` overrides the kind (the
    default is inferred: typed TaskBench tools -> resource, everything else -> temporal). ``openapi_ids``
    is passed to :func:`tools_from_openapi`. A directory is read as a dataset directory (its
    ``tool_desc.json``).
    """
    path = Path(path)
    check_format(format)
    check_dependency(dependency)
    if path.is_dir():
        if (path / "tool_desc.json").is_file():
            path = path / "tool_desc.json"
        elif (path / "graph_desc.json").is_file():
            path = path / "graph_desc.json"
        else:
            raise InputError("no tool_desc.json in this directory", path=path, hint="pass a tool library file")
    return library_from_source(JsonSource.read(path), format, dependency, name=name, openapi_ids=openapi_ids)


def library_from_source(
    src: JsonSource,
    format: str = "auto",
    dependency: str | None = None,
    *,
    name: str | None = None,
    openapi_ids: str = "operationId",
) -> ToolLibrary:
    """:func:`load_tools` on an already parsed file (``format`` and ``dependency`` already checked)."""
    fmt = format if format != "auto" else detect_format(src.doc)
    if fmt is None:
        raise src.error("cannot tell the tool library format",
                        hint=f"expected {titles_help()}; pass --format to choose")
    spec = get_format(fmt)
    if "ids" in spec.options and openapi_ids not in ("operationId", "path"):
        raise InputError(f"unknown openapi_ids {openapi_ids!r}", hint=did_you_mean(openapi_ids, ("operationId", "path")))
    given = {"ids": openapi_ids}
    tools = spec.load(src, **{k: v for k, v in given.items() if k in spec.options})
    if not isinstance(tools, list) or not all(isinstance(t, Tool) for t in tools):
        raise ConfigError(f"tool format {spec.name!r}: its load() must return a list of taskbench.schema.Tool, not "
                          f"{type(tools).__name__}")
    _finish(tools, src, lambda i: ())  # every format: not empty, no empty or repeated id
    if name is None and spec.named_by_file and src.path is not None:
        name = src.path.stem
    return _library(tools, dependency, src, name)


def _is(name: str) -> Any:
    """``detect`` of a built-in format: the one shape decision (:func:`_builtin_format`) names it."""
    return lambda doc: _builtin_format(doc) == name


def _taskbench_tools(src: JsonSource) -> list[Tool]:
    return tools_from_taskbench(src.doc, source=src)


for _fmt in (
    ToolFormat("taskbench", "TaskBench tool_desc.json", _taskbench_tools, _is("taskbench"), named_by_file=False),
    ToolFormat("openai", "OpenAI tools", tools_from_openai, _is("openai")),
    ToolFormat("mcp", "MCP tools/list", tools_from_mcp, _is("mcp")),
    ToolFormat("openapi", "OpenAPI 3 JSON", tools_from_openapi, _is("openapi"), options=("ids",)),
):
    register_tool_format(_fmt)
