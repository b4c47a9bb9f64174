"""Tool library loaders: TaskBench, OpenAI tools, MCP ``tools/list`` and OpenAPI 3, one format-detecting entry.

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError, did_you_mean, suggest, validation_message
from ..schema import DEPENDENCY_KINDS, Tool, ToolLibrary, ToolParameter, infer_dependency
from ..schema.chat import HttpOperation, HttpParameter, ParameterLocation
from .refs import INLINE_MAX_NODES, _resolve, inline_schema  # noqa: F401 - re-exported
from .yamldoc import read_yaml, yaml_line

FORMATS: tuple[str, ...] = ("auto", "taskbench", "openai", "mcp", "openapi")
"""Values accepted by ``load_tools(format=...)``."""

HTTP_METHODS: tuple[str, ...] = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

Key = str | int


# --------------------------------------------------------------------------------------------- source text


class JsonSource:
    """A JSON document plus its text, so errors can name the line where a value starts.

    Locating is done lazily (only when an error is reported) by walking the text with
    :meth:`json.JSONDecoder.raw_decode`, so the happy path pays nothing.
    """

    def __init__(self, path: str | Path | None, text: str, doc: Any) -> None:
        self.path = Path(path) if path is not None else None
        self.text = text
        self.doc = doc
        self.yaml_node: Any = None
        """The composed YAML node tree when the text was YAML (for line numbers), else None."""

    @classmethod
    def read(cls, path: str | Path) -> JsonSource:
        """Read and parse a JSON file; missing files and syntax errors raise :class:`InputError`."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise InputError("file not found", path=path, hint="check the path") from None
        except IsADirectoryError:
            raise InputError("expected a file, found a directory", path=path) from None
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", path=path, hint="save the file as UTF-8") from None
        except OSError as exc:
            raise InputError(f"cannot read the file ({exc.strerror or exc})", path=path) from None
        return cls.parse(text, path=path)

    @classmethod
    def parse(cls, text: str, *, path: str | Path | None = None) -> JsonSource:
        """Parse JSON or YAML text (``path`` only names it in errors).

        YAML is read when the file is named ``.yaml``/``.yml``, or when the text is not JSON and does not start
        like JSON (``{`` or ``[``): so an OpenAPI spec or a ``tools/list`` result saved as YAML loads, and a
        JSON file with a syntax error is still reported as JSON."""
        if not text.strip():
            raise InputError("the file is empty", path=path, hint="expected a JSON or YAML document")
        suffix = Path(path).suffix.lower() if path is not None else ""
        if suffix in (".yaml", ".yml"):
            return cls._parse_yaml(text, path)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            if text.lstrip()[:1] not in ("{", "[", '"'):
                return cls._parse_yaml(text, path)
            raise InputError(
                f"invalid JSON: {exc.msg} (column {exc.colno})",
                path=path,
                line=exc.lineno,
                hint="fix the JSON syntax at this position",
            ) from None
        except RecursionError:
            raise InputError("JSON nested too deeply", path=path) from None
        except ValueError as exc:  # e.g. an integer literal longer than Python's conversion limit
            raise InputError(f"invalid JSON: {exc}", path=path) from None
        return cls(path, text, doc)

    @classmethod
    def _parse_yaml(cls, text: str, path: str | Path | None) -> JsonSource:
        node, doc = read_yaml(text, path=path)
        src = cls(path, text, doc)
        src.yaml_node = node
        return src

    def line(self, *keys: Key) -> int | None:
        """1-based line where the value at ``keys`` (object keys / array indices) starts, or None."""
        if self.yaml_node is not None:
            return yaml_line(self.yaml_node, keys)
        pos = _locate(self.text, keys)
        return None if pos is None else self.text.count("\n", 0, pos) + 1

    def error(self, message: str, *keys: Key, hint: str | None = None) -> InputError:
        """An :class:`InputError` located at the value under ``keys`` (or at the file when not found)."""
        return InputError(message, path=self.path, line=self.line(*keys) if keys else None, hint=hint)


_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _locate(text: str, keys: Sequence[Key]) -> int | None:
    """Offset where the value at ``keys`` starts in JSON ``text`` (None when the path does not exist)."""
    try:
        i = _skip_ws(text, 0)
        for key in keys:
            if i >= len(text):
                return None
            opener = text[i]
            if opener == "{" and isinstance(key, str):
                i = _skip_ws(text, i + 1)
                found = False
                while i < len(text) and text[i] != "}":
                    name, i = _DECODER.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    i = _skip_ws(text, i + 1)  # the ':'
                    if name == key:
                        found = True
                        break
                    _, i = _DECODER.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    if i < len(text) and text[i] == ",":
                        i = _skip_ws(text, i + 1)
                if not found:
                    return None
            elif opener == "[" and isinstance(key, int):
                i = _skip_ws(text, i + 1)
                for _ in range(key):
                    if i >= len(text) or text[i] == "]":
                        return None
                    _, i = _DECODER.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    if i < len(text) and text[i] == ",":
                        i = _skip_ws(text, i + 1)
                if i >= len(text) or text[i] == "]":
                    return None
            else:
                return None
        return i
    except (ValueError, IndexError, RecursionError):
        return None


# --------------------------------------------------------------------------------------------- helpers


def check_dependency(dependency: str | None, *, path: str | Path | None = None, line: int | None = None) -> str | None:
    """Validate a user-given dependency kind (None passes through)."""
    if dependency is not None and dependency not in DEPENDENCY_KINDS:
        close = suggest(dependency, DEPENDENCY_KINDS)
        raise InputError(
            f"{'' if path else '--dependency: '}unknown dependency kind {dependency!r}",
            path=path,
            line=line,
            hint=(f"did you mean {close[0]!r}? " if close else "")
            + "use 'resource' (typed inputs/outputs) or 'temporal' (any order)",
        )
    return dependency


def check_format(fmt: str) -> str:
    """Validate a ``format`` name."""
    if fmt not in FORMATS:
        raise InputError(f"unknown tool library format {fmt!r}", hint=did_you_mean(fmt, FORMATS))
    return fmt


def _first_error(exc: ValidationError) -> str:
    return validation_message(exc)


def _label(node: dict[str, Any], i: int) -> str:
    name = node.get("id", node.get("name"))
    return f"tool #{i} ({name!r})" if isinstance(name, str) else f"tool #{i}"


def _finish(tools: list[Tool], src: JsonSource, keys_of: Callable[[int], tuple[Key, ...]]) -> list[Tool]:
    """Check for an empty list, empty ids and duplicate ids (with the line of the offending tool)."""
    if not tools:
        raise src.error("the tool library is empty", hint="add at least one tool")
    seen: dict[str, int] = {}
    for i, tool in enumerate(tools):
        if not tool.id.strip():
            raise src.error(f"tool #{i} has an empty id", *keys_of(i), hint="give every tool a non-empty name")
        if tool.id in seen:
            raise src.error(
                f"duplicate tool id {tool.id!r} (tools #{seen[tool.id]} and #{i})",
                *keys_of(i),
                hint="tool ids must be unique; rename or remove one",
            )
        seen[tool.id] = i
    return tools


# --------------------------------------------------------------------------------------------- TaskBench


def _taskbench_list(src: JsonSource) -> tuple[list[Any], tuple[Key, ...]]:
    doc = src.doc
    if isinstance(doc, dict) and isinstance(doc.get("nodes"), list):
        return doc["nodes"], ("nodes",)
    if isinstance(doc, list):
        return doc, ()
    raise src.error(
        'expected a TaskBench tool list {"nodes": [{"id", "desc", ...}]}',
        hint="pass a tool_desc.json, or --format openai|mcp|openapi for other formats",
    )


def tools_from_taskbench(doc: Any, *, path: str | Path | None = None, source: JsonSource | None = None) -> list[Tool]:
    """Tools from a TaskBench document: ``{"nodes": [...]}`` or a bare list of tool objects."""
    src = source or JsonSource(path, "", doc)
    nodes, base = _taskbench_list(src)
    tools: list[Tool] = []
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise src.error(f"tool #{i} is not a JSON object", *base, i, hint='each tool is {"id", "desc", ...}')
        if not isinstance(node.get("id", node.get("name")), str):
            raise src.error(f"{_label(node, i)} has no 'id'", *base, i, hint="every tool needs a unique string 'id'")
        for key in ("input-type", "output-type", "parameters"):
            if key in node and not isinstance(node[key], list):
                raise src.error(f"{_label(node, i)}: '{key}' must be a list", *base, i)
        try:
            tools.append(Tool.model_validate(node))
        except ValidationError as exc:
            raise src.error(f"{_label(node, i)}: {_first_error(exc)}", *base, i) from None
    return _finish(tools, src, lambda i: (*base, i))


def _file_dependency(src: JsonSource) -> str | None:
    """An optional top-level ``"dependency"`` key (written by ``taskbench graph build``)."""
    if isinstance(src.doc, dict) and "dependency" in src.doc:
        dep = src.doc["dependency"]
        if not isinstance(dep, str) or dep not in DEPENDENCY_KINDS:
            raise InputError(
                f"unknown dependency kind {dep!r}",
                path=src.path,
                line=src.line("dependency"),
                hint=did_you_mean(dep, DEPENDENCY_KINDS),
            )
        return dep
    return None


def _library(tools: list[Tool], dependency: str | None, src: JsonSource, name: str | None) -> ToolLibrary:
    dep = dependency or _file_dependency(src) or infer_dependency(tools)
    if dep == "resource":
        for i, tool in enumerate(tools):
            if not tool.is_typed:
                raise InputError(
                    f"dependency 'resource' needs input-type/output-type on every tool; {tool.id!r} has none",
                    path=src.path,
                    line=_tool_line(src, i),
                    hint="use --dependency temporal for tools with named parameters",
                )
    default_name = src.path.parent.name if src.path is not None else None
    return ToolLibrary(tools=tools, dependency=dep, name=name or default_name or None)  # type: ignore[arg-type]


def _tool_line(src: JsonSource, i: int) -> int | None:
    for base in (("nodes",), ("tools",), ("functions",), ("result", "tools"), ()):
        line = src.line(*base, i)
        if line is not None:
            return line
    return None


def load_tool_library(
    path: str | Path, dependency: str | None = None, *, name: str | None = None
) -> ToolLibrary:
    """Load a TaskBench ``tool_desc.json`` (or ``graph_desc.json``) as a :class:`ToolLibrary`.

    ``dependency`` overrides the inferred kind. A resource library whose tools lack types is an error.
    """
    path = Path(path)
    check_dependency(dependency)
    src = JsonSource.read(path)
    return _library(tools_from_taskbench(src.doc, source=src), dependency, src, name)


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
    return Tool(
        id=name,
        desc=" ".join((description or "").split()),
        parameters=parameters_from_schema(schema),
        input_schema=schema if schema is not None else {"type": "object", "properties": {}},
        output_schema=output_schema,
        source=source,
    )


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
            tools.append(
                Tool(id=tool_id, desc=desc, parameters=list(params.values()), input_schema=_arguments_schema(http),
                     output_schema=response_schema, http=http, source="openapi")
            )
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


def detect_format(doc: Any) -> str | None:
    """Guess a tool library format from a parsed document ('taskbench', 'openai', 'mcp', 'openapi') or None."""
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
        raise src.error(
            "cannot tell the tool library format",
            hint="expected TaskBench {\"nodes\": [...]}, an OpenAI tools list, an MCP tools/list result or an "
            "OpenAPI spec; pass --format to choose",
        )
    if fmt == "taskbench":
        tools = tools_from_taskbench(src.doc, source=src)
    elif fmt == "openai":
        tools = tools_from_openai(src)
    elif fmt == "mcp":
        tools = tools_from_mcp(src)
    else:
        if openapi_ids not in ("operationId", "path"):
            raise InputError(f"unknown openapi_ids {openapi_ids!r}", hint=did_you_mean(openapi_ids, ("operationId", "path")))
        tools = tools_from_openapi(src, ids=openapi_ids)
    if name is None and fmt != "taskbench" and src.path is not None:
        name = src.path.stem
    return _library(tools, dependency, src, name)
