"""Tool documentation as the agents read it: short, and the same text every time (pure functions).

Real API documentation is long (TMDB's ``GET /discover/movie`` has 8,000 characters of parameters; its
example responses run to 80 kB), and small models drown in it. The agents get:

- the grounding agent and the reviewer: one line per tool (:func:`tool_line`): name, the first sentence of
  the description, the argument names (required ones marked ``*``);
- the execution agent: the tool's Python signature under its API-safe name (:func:`signature`), its
  description, and the *shape* of its response (:func:`shape`): keys and types, nested to a few levels, lists
  shown by their first item, long objects cut, so the code can be written against the real structure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..schema import ToolSpec

_SENTENCE = re.compile(r"(?<=[.!?])\s")
_PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list",
             "object": "dict"}


def first_sentence(text: str, limit: int = 120) -> str:
    """The first sentence of ``text`` (whitespace collapsed), cut at ``limit`` characters; a first sentence
    that is only a title ("Get Details.") takes the next one with it."""
    text = " ".join((text or "").split())
    sentences = _SENTENCE.split(text) if text else []
    first = ""
    for sentence in sentences:
        first = f"{first} {sentence}".strip()
        if len(first) >= 40:
            break
    return first if len(first) <= limit else first[: limit - 3].rstrip() + "..."


def argument_names(spec: ToolSpec) -> tuple[list[str], list[str]]:
    """(required, optional) argument names of a tool, in schema order."""
    props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
    names = list(props) if isinstance(props, dict) else []
    req = spec.parameters.get("required") if isinstance(spec.parameters, dict) else None
    required = [n for n in names if isinstance(req, list) and n in req]
    return required, [n for n in names if n not in required]


def tool_line(spec: ToolSpec, *, max_optional: int = 4) -> str:
    """``- NAME: first sentence. Arguments: a*, b, c`` (``*`` = required; at most ``max_optional`` optional)."""
    required, optional = argument_names(spec)
    args = [f"{n}*" for n in required] + optional[:max_optional]
    if len(optional) > max_optional:
        args.append("...")
    line = f"- {spec.name}: {first_sentence(spec.description) or '(no description)'}"
    return line + (f" Arguments: {', '.join(args)}" if args else " Arguments: none")


def tool_list(specs: list[ToolSpec]) -> str:
    """One :func:`tool_line` per tool."""
    return "\n".join(tool_line(s) for s in specs)


def _type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "Any"
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "Any")
    if isinstance(t, str):
        return _PY_TYPES.get(t, t)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _type(schema[key][0])
    return "Any"


def signature(spec: ToolSpec, api_name: str) -> str:
    """``GET_search_person(query: str, page: int = None)``: required arguments first, then optional ones
    with a default of None (the sandbox leaves arguments that are None out of the call)."""
    props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
    props = props if isinstance(props, dict) else {}
    required, optional = argument_names(spec)
    parts = [f"{_py_name(n)}: {_type(props.get(n))}" for n in required]
    parts += [f"{_py_name(n)}: {_type(props.get(n))} = None" for n in optional]
    return f"{api_name}({', '.join(parts)})"


def python_value(value: str, schema: Any) -> str:
    """A plan's argument value (text) as a Python literal of the parameter's declared type, when it reads as
    one (``"155"`` for an integer -> ``155``); else a string literal."""
    kind = _type(schema)
    text = value.strip()
    if kind == "int" and re.fullmatch(r"[+-]?\d+", text):
        return str(int(text))
    if kind == "float" and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return text
    if kind == "bool" and text.lower() in ("true", "false"):
        return "True" if text.lower() == "true" else "False"
    return repr(value)


def python_call(spec: ToolSpec | None, api_name: str, arguments: dict[str, str]) -> str:
    """The call of a plan step as Python: ``GET_search_movie(query='Heat')`` (values typed per the schema)."""
    props = spec.parameters.get("properties") if spec is not None and isinstance(spec.parameters, dict) else None
    props = props if isinstance(props, dict) else {}
    parts = []
    for name, value in arguments.items():
        literal = python_value(value, props.get(name))
        parts.append(f"{name}={literal}" if name.isidentifier() else f"**{{{name!r}: {literal}}}")
    return f"{api_name}({', '.join(parts)})"


def _py_name(name: str) -> str:
    return name if name.isidentifier() else f"**{{{name!r}: ...}}"


def argument_help(spec: ToolSpec, *, limit: int = 8, width: int = 100) -> str:
    """One line per argument: name, type, required, description (first sentence), enum values."""
    props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
    if not isinstance(props, dict) or not props:
        return "  (no arguments)"
    required, optional = argument_names(spec)
    lines = []
    for name in (required + optional)[:limit]:
        raw = props.get(name)
        sub: dict[str, Any] = raw if isinstance(raw, dict) else {}
        desc = first_sentence(str(sub.get("description") or ""), width)
        enum = sub.get("enum")
        if isinstance(enum, list) and enum:
            desc += " One of: " + ", ".join(json.dumps(v) for v in enum[:8])
        flag = "required" if name in required else "optional"
        lines.append(f"  {name} ({_type(sub)}, {flag}): {desc}".rstrip(": "))
    if len(props) > limit:
        lines.append(f"  ... and {len(props) - limit} more optional arguments")
    return "\n".join(lines)


# A shape node: ("leaf", "int") | ("object", {key: node}) | ("array", node | None) | ("alt", [node, ...])
# | ("ref", name) (a named sub-shape, defined once).
_Node = tuple[str, Any]
_ANY: _Node = ("leaf", "Any")
_NONE: _Node = ("leaf", "None")
_NAME_KEYS = ("x-spotify-docs-type", "title")
_RESERVED = {"str", "int", "float", "bool", "None", "Any", "dict", "list"}
_MAX_NODES = 5000  # schema nodes read per shape; past it, sub-schemas show as Any
_MAX_LEVEL = 48  # nesting of schema keywords followed per shape
_EXAMPLE_ITEMS = 50
RETURNS_DEPTH = 8  # nesting shown to the execution agent per line (Spotify's /search needs 6)  # list items of an example merged into the item shape


def _ident(name: str) -> str:
    ident = re.sub(r"\W+", "_", name).strip("_") or "Shape"
    ident = f"_{ident}" if ident[0].isdigit() else ident
    return f"{ident}_" if ident in _RESERVED else ident


class _Shapes:
    """JSON Schemas (and example values) read into shape nodes: allOf merged, anyOf/oneOf as alternatives,
    ``$ref`` followed once per pointer (memoised; a cycle becomes a reference to the name being defined)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.defs: dict[str, _Node] = {}
        self.names: dict[str, str] = {}  # memo key (a pointer, or a named schema's text) -> name
        self.count = 0

    # ------------------------------------------------------------------------------ reading

    def node(self, schema: Any, level: int = 0) -> _Node:
        self.count += 1
        if not isinstance(schema, dict) or level > _MAX_LEVEL or self.count > _MAX_NODES:
            return _ANY
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self._pointer(ref)
            if target is None:
                return _ANY
            named = self._named(ref.rstrip("/").rsplit("/", 1)[-1] or "Root", f"ref:{ref}",
                                lambda: self.node(target, level + 1) if "$ref" in target else self._plain(target, level + 1))
            rest = {k: v for k, v in schema.items() if k in ("properties", "items", "allOf", "anyOf", "oneOf")}
            return self.merge(named, self._plain(rest, level + 1)) if rest else named
        name = next((schema[k] for k in _NAME_KEYS if isinstance(schema.get(k), str) and schema[k].strip()), None)
        if name is not None and isinstance(schema.get("properties"), dict) | isinstance(schema.get("allOf"), list):
            key = "named:" + json.dumps(schema, sort_keys=True, default=str)
            return self._named(name, key, lambda: self._plain(schema, level + 1))
        return self._plain(schema, level)

    def _pointer(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return None
        target = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                return None
            target = target[part]
        return target if isinstance(target, dict) else None

    def _named(self, name: str, key: str, build: Any) -> _Node:
        if key in self.names:
            return ("ref", self.names[key])
        base = unique = _ident(name)
        n = 2
        while unique in self.defs:
            unique, n = f"{base}{n}", n + 1
        self.names[key] = unique
        self.defs[unique] = _ANY  # a use inside its own definition refers to the name
        self.defs[unique] = build()
        return ("ref", unique)

    def _plain(self, schema: dict[str, Any], level: int) -> _Node:
        out = self._typed(schema, level)
        parts = schema.get("allOf")
        if isinstance(parts, list):
            for part in parts:
                out = self.merge(out, self.node(part, level + 1))
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                nodes = [n for n in (self.node(o, level + 1) for o in options) if n != _NONE]
                alternatives: _Node = _NONE if not nodes else nodes[0] if len(nodes) == 1 else ("alt", nodes)
                out = self.merge(out, alternatives)
        return out

    def _typed(self, schema: dict[str, Any], level: int) -> _Node:
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null" if kind else None)
        props = schema.get("properties")
        if kind == "null":
            return _NONE
        if kind == "array" or (kind is None and "items" in schema):
            items = schema.get("items")
            return ("array", self.node(items, level + 1) if isinstance(items, dict) else None)
        if kind == "object" or isinstance(props, dict):
            keys = {str(k): self.node(v, level + 1) for k, v in props.items()} if isinstance(props, dict) else {}
            return ("object", keys)
        return ("leaf", _PY_TYPES.get(kind, kind)) if isinstance(kind, str) else _ANY

    def example(self, value: Any) -> _Node:
        """The shape of an example value (a list's items merged into one shape)."""
        self.count += 1
        if self.count > _MAX_NODES:
            return _ANY
        if isinstance(value, dict):
            return ("object", {str(k): self.example(v) for k, v in value.items()})
        if isinstance(value, list):
            item: _Node | None = None
            for v in value[:_EXAMPLE_ITEMS]:
                item = self.example(v) if item is None else self.merge(item, self.example(v))
            return ("array", item)
        if value is None:
            return _NONE
        return ("leaf", {bool: "bool", int: "int", float: "float", str: "str"}.get(type(value), "Any"))

    # ------------------------------------------------------------------------------ merging (allOf, schema + example)

    def _deref(self, node: _Node, seen: frozenset[str] = frozenset()) -> _Node:
        while node[0] == "ref" and node[1] not in seen:
            seen = seen | {node[1]}
            node = self.defs.get(node[1], _ANY)
        return node

    def merge(self, a: _Node, b: _Node) -> _Node:
        if a == b or b == _ANY:
            return a
        if a == _ANY:
            return b
        if a[0] == "ref" or b[0] == "ref":
            return self.merge(self._deref(a), self._deref(b)) if self._deref(a) != a or self._deref(b) != b else a
        if a[0] == "alt" or b[0] == "alt":
            options = list(a[1]) if a[0] == "alt" else [a]
            for new in b[1] if b[0] == "alt" else [b]:
                at = next((i for i, o in enumerate(options) if o[0] == new[0] and o[0] != "leaf"), None)
                if at is not None:
                    options[at] = self.merge(options[at], new)
                elif new not in options:
                    options.append(new)
            return ("alt", options)
        if a[0] == "object" and b[0] == "object":
            keys = dict(a[1])
            for k, v in b[1].items():
                keys[k] = self.merge(keys[k], v) if k in keys else v
            return ("object", keys)
        if a[0] == "array" and b[0] == "array":
            return ("array", b[1] if a[1] is None else a[1] if b[1] is None else self.merge(a[1], b[1]))
        vague = (_NONE, ("leaf", "dict"), ("leaf", "list"))
        if a in vague and b[0] != "leaf" or a == _NONE:
            return b
        if b in vague and a[0] != "leaf" or b == _NONE:
            return a
        return ("alt", [a, b])

    # ------------------------------------------------------------------------------ drawing

    def render(self, root: _Node, depth: int, max_keys: int | None) -> str:
        uses: dict[str, int] = {}

        def count(node: _Node | None) -> None:
            if node is None:
                return
            if node[0] == "ref":
                uses[node[1]] = uses.get(node[1], 0) + 1
                if uses[node[1]] == 1:
                    count(self.defs.get(node[1]))
            elif node[0] == "object":
                for v in node[1].values():
                    count(v)
            elif node[0] == "array":
                count(node[1])
            elif node[0] == "alt":
                for o in node[1]:
                    count(o)

        count(root)
        inline = {n for n, k in uses.items() if k <= 1 or self.defs.get(n, _ANY)[0] == "leaf"}
        pending: list[str] = []

        def draw(node: _Node | None, d: int) -> str:
            if node is None:
                return "Any"
            kind, body = node
            if kind == "ref":
                if body in inline and (d > 0 or max_keys is not None):
                    # in the complete picture (max_keys None) a named shape past the depth gets its own line
                    return draw(self.defs.get(body, _ANY), d)
                if body not in pending:
                    pending.append(body)
                return str(body)
            if kind == "object":
                if not body:
                    return "dict"
                if d <= 0:
                    return "{...}"
                keys = list(body.items())
                shown = keys if max_keys is None else keys[:max_keys]
                items = [f"{json.dumps(k)}: {draw(v, d - 1)}" for k, v in shown]
                return "{" + ", ".join(items + (["..."] if len(shown) < len(keys) else [])) + "}"
            if kind == "array":
                if body is None:
                    return "list"
                return "[...]" if d <= 0 else f"[{draw(body, d - 1)}, ...]"
            if kind == "alt":
                drawn: list[str] = []
                for option in body:
                    text = draw(option, d)
                    if text not in drawn:
                        drawn.append(text)
                return " | ".join(drawn)
            return str(body)

        lines = [draw(root, depth)]
        done = 0
        while done < len(pending):
            name = pending[done]
            lines.append(f"{name} = {draw(self.defs.get(name, _ANY), depth)}")
            done += 1
        return "\n".join(lines)


def shape(schema: Any, *, depth: int = 3, max_keys: int | None = 12, example: Any = None) -> str:
    """A compact picture of a JSON Schema: ``{"results": [{"id": int, "name": str}, ...], "page": int}``.

    ``allOf`` parts are merged into one shape, ``anyOf`` / ``oneOf`` are shown as alternatives (``A | B``; a
    ``null`` alternative is left out), local ``$ref`` pointers (``#/$defs/X``, ``#/components/schemas/X``) are
    followed, once per pointer. A named sub-schema (a ``$ref``, or a schema with a ``title`` or Spotify's
    ``x-spotify-docs-type``) that is used more than once, or recursively, is shown once on its own line
    ``Name = {...}`` and by its name where it is used. Objects and lists nest at most ``depth`` levels per
    line (deeper: ``{...}``), objects show at most ``max_keys`` keys. ``max_keys=None`` asks for the complete
    picture: every key, and a named shape past the depth on its own line instead of ``{...}``. An
    ``example`` value, when given, is merged in: keys the example has and the schema lacks are shown too.
    """
    shapes = _Shapes(schema)
    root = shapes.node(schema) if isinstance(schema, dict) and schema else _ANY
    if example is not None:
        root = shapes.merge(root, shapes.example(example))
    return shapes.render(root, depth, max_keys)


def example_shape(value: Any, *, depth: int = 3, max_keys: int | None = 12) -> str:
    """The same picture drawn from an example value (for specs that give an example but no schema); a list's
    items are merged into one shape."""
    shapes = _Shapes(None)
    return shapes.render(shapes.example(value), depth, max_keys)


def returns(spec: ToolSpec) -> str:
    """What the tool returns, as a shape: its output schema with the spec's example response merged in
    (specs drift from their examples: RestBench's TMDB schema names a list ``""`` that its example, and the
    API, calls ``results``); else the tool's output types."""
    schema = spec.output_schema or (spec.http.response_schema if spec.http is not None else None)
    example = spec.http.response_example if spec.http is not None else None
    if schema or example is not None:
        return shape(schema, example=example, depth=RETURNS_DEPTH, max_keys=None)
    if spec.output_types:
        return ('{"artifact": str (pass it to later tools), "type": str, "content": str, "provenance": str}'
                f"  (produces: {', '.join(spec.output_types)})")
    if spec.source == "mcp":  # no outputSchema: the call gives the server's text content as one str
        return TEXT_RESULT
    return "JSON (shape not documented)"


TEXT_RESULT = ("str (the tool's text as the server wrote it, not parsed: it may be JSON, a Python repr or prose; "
               "look at it before indexing into it)")


def returns_kind(spec: ToolSpec) -> str:
    """What a call's value is, in words: structured content (MCP ``outputSchema``), parsed JSON (HTTP), or ""
    when :func:`returns` already says (text, artifacts)."""
    if spec.source == "mcp":
        return "a dict: the tool's structured content" if spec.output_schema else ""
    if spec.output_types and not spec.output_schema and spec.http is None:
        return ""
    return "parsed JSON"


def execution_doc(spec: ToolSpec, api_name: str) -> str:
    """The documentation the execution agent gets for one tool."""
    lines = [signature(spec, api_name), f"  {first_sentence(spec.description, 300) or '(no description)'}"]
    if spec.http is not None:
        lines.append(f"  HTTP: {spec.http.method} {spec.http.path}")
    lines.append("Arguments:")
    lines.append(argument_help(spec))
    kind = returns_kind(spec)
    if kind:
        lines.append(f"The call returns {kind}, shaped:")
    lines.append("Returns: " + returns(spec))
    return "\n".join(lines)


def slim(spec: ToolSpec) -> ToolSpec:
    """``spec`` without its response schema and example (which can be large), for trajectory headers."""
    http = spec.http.model_copy(update={"response_schema": None, "response_example": None}) if spec.http else None
    return spec.model_copy(update={"output_schema": None, "http": http})


__all__ = [
    "argument_help",
    "argument_names",
    "example_shape",
    "execution_doc",
    "first_sentence",
    "python_call",
    "python_value",
    "returns",
    "returns_kind",
    "shape",
    "signature",
    "slim",
    "tool_line",
    "tool_list",
]
