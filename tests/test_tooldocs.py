"""Tool documentation as the agents read it (agents/tooldocs.py): response shapes drawn from JSON Schemas with
allOf / anyOf / oneOf / $ref, and, against the offline services, that the shape the execution agent is shown
describes every key of every real response."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from restbench_samples import responses
from taskbench.agents import tooldocs
from taskbench.envs.restbench import RestBenchEnv
from taskbench.envs.restbench.tmdb import PARTLY_DOCUMENTED
from taskbench.schema import HttpOperation, ToolSpec

# ------------------------------------------------------------------------------ reading a shape back

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\.\.\.|[{}\[\]:,|]|[A-Za-z_][A-Za-z0-9_.-]*')


class Node:
    """A parsed shape: object keys, a list's item, alternatives, or an opaque leaf."""

    def __init__(self, kind: str, keys: dict[str, Node] | None = None, item: Node | None = None,
                 options: list[Node] | None = None, name: str = "", defs: dict[str, Node] | None = None) -> None:
        self.kind, self.keys, self.item, self.options, self.name = kind, keys or {}, item, options or [], name
        self.defs = defs if defs is not None else {}


def parse_shape(text: str) -> Node:
    """The tree a shape text describes. Named shapes are defined on lines ``NAME = SHAPE`` after the first."""
    first, *rest = text.split("\n")
    defs: dict[str, Node] = {}
    for line in rest:
        m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*) = (.*)$", line)
        assert m, f"not a definition line: {line!r}"
        defs[m.group(1)] = _parse(m.group(2), defs)
    return _parse(first, defs)


def _named(node: Node | None) -> Node | None:
    seen = set()
    while node is not None and node.kind == "name" and node.name in node.defs and node.name not in seen:
        seen.add(node.name)
        node = node.defs[node.name]
    return node


def _parse(text: str, defs: dict[str, Node]) -> Node:
    tokens = _TOKEN.findall(text)
    pos = 0

    def value() -> Node:
        nonlocal pos
        options = [single()]
        while pos < len(tokens) and tokens[pos] == "|":
            pos += 1
            options.append(single())
        return options[0] if len(options) == 1 else Node("alt", options=options)

    def single() -> Node:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "{":
            keys: dict[str, Node] = {}
            while tokens[pos] != "}":
                if tokens[pos] == "...":
                    pos += 1
                else:
                    key = tokens[pos][1:-1]
                    assert tokens[pos + 1] == ":", text
                    pos += 2
                    keys[key] = value()
                if tokens[pos] == ",":
                    pos += 1
            pos += 1
            return Node("object", keys=keys)
        if tok == "[":
            item = None
            while tokens[pos] != "]":
                if tokens[pos] == "...":
                    pos += 1
                elif tokens[pos] == ",":
                    pos += 1
                else:
                    item = value()
            pos += 1
            return Node("array", item=item)
        if tok in ("str", "int", "float", "bool", "None", "Any", "dict", "list", "..."):
            return Node("leaf", name=tok)
        return Node("name", name=tok, defs=defs)

    node = value()
    assert pos == len(tokens), f"trailing tokens in {text!r}: {tokens[pos:]}"
    return node


def undescribed(value: Any, node: Node | None, path: str = "") -> list[str]:
    """Key paths of ``value`` (``results[].title``) that the shape ``node`` does not describe."""
    node = _named(node)
    if node is not None and node.kind == "alt":
        best: list[str] | None = None
        for option in node.options:
            missing = undescribed(value, option, path)
            if best is None or len(missing) < len(best):
                best = missing
        return best or []
    if isinstance(value, dict):
        keys = node.keys if node is not None and node.kind == "object" else {}
        out = []
        for k, v in value.items():
            if k not in keys:
                out.append(f"{path}.{k}".lstrip("."))
            else:
                out += undescribed(v, keys[k], f"{path}.{k}".lstrip("."))
        return out
    if isinstance(value, list):
        item = node.item if node is not None and node.kind == "array" else None
        out = []
        for v in value:
            out += [m for m in undescribed(v, item, f"{path}[]") if m not in out]
        if item is None and any(isinstance(v, (dict, list)) for v in value):
            out.append(f"{path}[]")
        return out
    return []


def spec_of(schema: Any = None, example: Any = None) -> ToolSpec:
    return ToolSpec(name="GET /x", description="X.", parameters={"type": "object", "properties": {}},
                    http=HttpOperation(method="GET", path="/x", response_schema=schema, response_example=example))


# ------------------------------------------------------------------------------ schema keywords

PAGING = {"type": "object", "properties": {"href": {"type": "string"}, "total": {"type": "integer"}}}


def test_all_of_merges_its_parts() -> None:
    schema = {"allOf": [PAGING, {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string"}}}}}}]}
    tree = parse_shape(tooldocs.shape(schema, depth=8, max_keys=None))
    assert set(tree.keys) == {"href", "total", "items"}
    assert undescribed({"href": "h", "total": 1, "items": [{"name": "n"}]}, tree) == []


def test_nested_all_of_and_refs_merge_too() -> None:
    schema = {"$defs": {"Paging": PAGING, "Named": {"allOf": [{"$ref": "#/$defs/Base"},
                                                              {"properties": {"name": {"type": "string"}}}]},
                        "Base": {"type": "object", "properties": {"id": {"type": "string"}}}},
              "allOf": [{"$ref": "#/$defs/Paging"}, {"properties": {"items": {"type": "array",
                                                                             "items": {"$ref": "#/$defs/Named"}}}}]}
    tree = parse_shape(tooldocs.shape(schema, depth=8, max_keys=None))
    assert undescribed({"href": "h", "total": 1, "items": [{"id": "a", "name": "n"}]}, tree) == []


def test_any_of_and_one_of_show_every_alternative() -> None:
    track = {"type": "object", "properties": {"album": {"type": "string"}, "duration_ms": {"type": "integer"}}}
    episode = {"type": "object", "properties": {"show": {"type": "string"}, "duration_ms": {"type": "integer"}}}
    for key in ("anyOf", "oneOf"):
        text = tooldocs.shape({"type": "object", "properties": {"item": {key: [track, episode]}}}, max_keys=None)
        tree = parse_shape(text)
        assert undescribed({"item": {"album": "a", "duration_ms": 1}}, tree) == [], text
        assert undescribed({"item": {"show": "s", "duration_ms": 1}}, tree) == [], text
        assert undescribed({"item": {"other": 1}}, tree) == ["item.other"]
    # a nullable alternative is not a second shape
    assert tooldocs.shape({"anyOf": [{"type": "string"}, {"type": "null"}]}) in ("str", "str | None")


def test_recursive_refs_end_and_repeated_ones_are_defined_once() -> None:
    node = {"type": "object", "properties": {"name": {"type": "string"},
                                             "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
    schema = {"$defs": {"Node": node}, "$ref": "#/$defs/Node"}
    text = tooldocs.shape(schema, depth=8, max_keys=None)
    tree = parse_shape(text)
    deep = {"name": "a", "children": [{"name": "b", "children": [{"name": "c", "children": []}]}]}
    assert undescribed(deep, tree) == [], text
    assert len(text) < 300, text
    big = {"type": "object", "properties": {f"k{i}": {"type": "string"} for i in range(20)}}
    twice = {"$defs": {"Big": big}, "type": "object",
             "properties": {"a": {"$ref": "#/$defs/Big"}, "b": {"type": "array", "items": {"$ref": "#/$defs/Big"}}}}
    text = tooldocs.shape(twice, depth=8, max_keys=None)
    assert text.count('"k19"') == 1, text
    assert undescribed({"a": {"k0": "x", "k19": "y"}, "b": [{"k5": "z"}]}, parse_shape(text)) == []


def test_a_cycle_without_a_name_and_a_missing_ref_do_not_hang() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"self": {"$ref": "#"}, "gone": {"$ref": "#/$defs/No"}}}
    text = tooldocs.shape(schema, depth=8, max_keys=None)
    assert '"self"' in text and '"gone"' in text and len(text) < 400


def test_returns_joins_the_schema_and_the_example() -> None:
    # RestBench's TMDB spec names a property "" where the example (and the live API) has "results"
    schema = {"type": "object", "properties": {"page": {"type": "integer"}, "": {"type": "array"}}}
    example = {"page": 1, "results": [{"id": 1, "title": "t"}]}
    tree = parse_shape(tooldocs.returns(spec_of(schema, example)))
    assert undescribed({"page": 2, "results": [{"id": 3, "title": "u"}]}, tree) == []


# ------------------------------------------------------------------------------ the offline services


@pytest.fixture(scope="module")
def restbench_dir(shared: Path) -> Path:
    path = shared / "reference" / "restbench"
    if not (path / "tmdb_oas.json").is_file():
        pytest.skip(f"RestBench's files are absent ({path})")
    return path


# Where RestBench's spec itself is silent: the schema gives an object or list without its keys (the shape shows
# "dict" / "list", truthfully), or describes one kind of answer of several (trending: movies; /credit: a TV
# credit). The test checks that each entry is still needed and that the shape there is indeed opaque.
SPEC_GAPS = {
    ("tmdb", "GET /movie/{movie_id}"): ["belongs_to_collection"],
    ("tmdb", "GET /company/{company_id}"): ["parent_company"],
    ("tmdb", "GET /movie/latest"): ["spoken_languages[]"],
}


def _at(node: Node | None, path: str) -> Node | None:
    for part in re.findall(r"[^.\[\]]+|\[\]", path):
        node = _named(node)
        if node is None:
            return None
        node = node.item if part == "[]" else node.keys.get(part)
    return _named(node)


@pytest.mark.parametrize("api", ["tmdb", "spotify"])
def test_the_execution_agent_is_shown_every_key_of_every_real_response(api: str, restbench_dir: Path) -> None:
    env = RestBenchEnv(api, restbench_dir=restbench_dir)
    tools = {t.name: t for t in env.tools()}
    seen: set[str] = set()
    partly: set[str] = set()
    used: set[tuple[str, str, str]] = set()
    problems: dict[str, list[str]] = {}
    for op, args, status, body in responses(env):
        assert status is not None and status < 300, f"{op} {args}: {status} {body}"
        seen.add(op)
        doc = tooldocs.execution_doc(tools[op], "f")
        shown = doc.split("Returns: ", 1)[1]
        if body is None:
            continue
        tree = parse_shape(shown)
        missing = undescribed(body, tree)
        if op in PARTLY_DOCUMENTED and api == "tmdb":
            partly.add(op)
            continue
        for gap in SPEC_GAPS.get((api, op), []):
            hidden = [m for m in missing if m.startswith(gap + ".") or m.startswith(gap + "[]")]
            if hidden:
                used.add((api, op, gap))
                opaque = _at(tree, gap)
                assert opaque is not None and opaque.kind == "leaf", f"{op}: {gap} is described, not a gap: {shown}"
                missing = [m for m in missing if m not in hidden]
        if missing:
            problems.setdefault(op, []).extend(m for m in missing if m not in problems.get(op, []))
    assert seen == set(tools), f"operations without a sample request: {set(tools) - seen}"
    report = "\n".join(f"{op}: {', '.join(m[:6])}{' ...' if len(m) > 6 else ''}" for op, m in sorted(problems.items()))
    assert not problems, f"{len(problems)} of {len(tools)} operations have keys the shape does not show:\n{report}"
    stale = {(a, op, g) for (a, op), gaps in SPEC_GAPS.items() for g in gaps if a == api} - used
    assert not stale, f"spec gaps no longer needed: {stale}"
    assert len(partly) <= len(PARTLY_DOCUMENTED)


# ------------------------------------------------------------------------------ what a call really returns

def test_returns_says_text_json_or_structured_content() -> None:
    """The prompts said every tool returns "parsed JSON"; mcp-server-sqlite answers a Python-repr string, and
    the agent's code failed with "string indices must be integers"."""
    from taskbench.agents.prompts import render

    text_tool = ToolSpec(name="read_query", description="Run a SELECT.", source="mcp",
                         parameters={"type": "object", "properties": {"query": {"type": "string"}}})
    said = tooldocs.returns(text_tool)
    assert said.startswith("str") and "not parsed" in said and "JSON (shape" not in said
    assert "Returns: str" in tooldocs.execution_doc(text_tool, "read_query")
    structured = text_tool.model_copy(update={"output_schema": {
        "type": "object", "properties": {"rows": {"type": "array", "items": {"type": "integer"}}}}})
    doc = tooldocs.execution_doc(structured, "read_query")
    assert "returns a dict: the tool's structured content, shaped:\nReturns: {" in doc and "rows" in doc
    http = spec_of({"type": "object", "properties": {"id": {"type": "integer"}}})
    assert "returns parsed JSON, shaped:\nReturns: {" in tooldocs.execution_doc(http, "x")
    system = render("execution")
    assert "parsed JSON response" not in system and "Returns" in system
