"""Tool library loaders: TaskBench, OpenAI tools, MCP tools/list, OpenAPI 3; format detection; overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskbench.errors import InputError
from taskbench.graph import detect_format, load_tool_library, load_tools, parameters_from_schema

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["C", "F"]},
        "days": {"type": ["integer", "null"], "description": "Forecast days"},
    },
    "required": ["city"],
}


def write(tmp_path: Path, name: str, doc: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ reference files


@pytest.mark.parametrize(
    ("domain", "kind", "count"),
    [("huggingface", "resource", 23), ("multimedia", "resource", 40), ("dailylifeapis", "temporal", 40)],
)
def test_reference_taskbench_libraries_load(reference_dir: Path, domain: str, kind: str, count: int) -> None:
    path = reference_dir / domain / "tool_desc.json"
    lib = load_tools(path)
    assert (lib.dependency, len(lib), lib.name) == (kind, count, domain)
    assert lib == load_tool_library(path)
    raw = json.loads(path.read_text())["nodes"]
    assert lib.names == [t["id"] for t in raw]
    if kind == "resource":
        assert all(t.input_types is not None and t.output_types is not None for t in lib.tools)
    else:
        assert all(t.parameters for t in lib.tools)
        weather = lib.get("get_weather")
        assert weather is not None and [p.name for p in weather.parameters or []] == ["location", "date"]


def test_restbench_tmdb_has_54_get_operations(shared: Path) -> None:
    path = shared / "reference" / "restbench" / "tmdb_oas.json"
    lib = load_tools(path)
    assert len(lib) == 54 and lib.dependency == "temporal"
    spec = json.loads(path.read_text())
    op_ids = [op["operationId"] for item in spec["paths"].values() for m, op in item.items() if m == "get"]
    assert lib.names == op_ids
    by_path = load_tools(path, openapi_ids="path")
    assert by_path.names == [f"GET {route}" for route in spec["paths"]]
    kw = by_path.get("GET /movie/{movie_id}/keywords")
    assert kw is not None and kw.desc.startswith("Get Keywords")
    # the path-level parameter is inherited by the operation and required
    assert [(p.name, p.type, p.required) for p in kw.parameters or []] == [("movie_id", "integer", True)]


def test_restbench_spotify_operations_resolve_refs(shared: Path) -> None:
    path = shared / "reference" / "restbench" / "spotify_oas.json"
    spec = json.loads(path.read_text())
    methods = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
    n_ops = sum(1 for item in spec["paths"].values() for m in item if m in methods)
    lib = load_tools(path, openapi_ids="path")
    assert len(lib) == n_ops == 40
    album = lib.get("GET /albums/{id}")
    assert album is not None
    # parameters come from $ref'd components; "required": "false" (a string in this spec) is honoured
    assert [(p.name, p.required) for p in album.parameters or []] == [("id", True), ("market", False)]
    # request-body properties become parameters, with 'required' from the body schema
    playlist = lib.get("POST /users/{user_id}/playlists")
    assert playlist is not None
    params = {p.name: p.required for p in playlist.parameters or []}
    assert params["user_id"] is True and params["name"] is True and params["public"] is False


# ------------------------------------------------------------------------------------------ OpenAI / MCP


def test_openai_wrapped_and_bare_functions(tmp_path: Path) -> None:
    wrapped = [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather  for\n a city.",
                                          "parameters": WEATHER_SCHEMA}},
        {"type": "function", "function": {"name": "now", "description": "Current time."}},
    ]
    lib = load_tools(write(tmp_path, "tools.json", wrapped))
    assert lib.dependency == "temporal" and lib.names == ["get_weather", "now"]
    weather = lib.tools[0]
    assert weather.desc == "Weather for a city."
    params = {p.name: p for p in weather.parameters or []}
    assert params["city"].required and not params["unit"].required and not params["days"].required
    assert params["days"].type == "integer" and params["city"].desc == "City name"
    assert "one of" in params["unit"].desc and '"C"' in params["unit"].desc
    assert lib.tools[1].parameters == []
    bare = [w["function"] for w in wrapped]
    assert load_tools(write(tmp_path, "bare.json", bare)).tools == lib.tools
    assert load_tools(write(tmp_path, "obj.json", {"tools": wrapped})).tools == lib.tools
    assert load_tools(write(tmp_path, "fns.json", {"functions": bare})).tools == lib.tools


def test_mcp_result_and_jsonrpc_envelope(tmp_path: Path) -> None:
    tools = [
        {"name": "read_file", "description": "Read a file.", "inputSchema": {
            "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"name": "list_dir", "title": "List a directory", "inputSchema": {"type": "object"}},
    ]
    lib = load_tools(write(tmp_path, "mcp.json", {"tools": tools}))
    assert lib.names == ["read_file", "list_dir"] and lib.dependency == "temporal"
    assert lib.tools[0].parameters is not None and lib.tools[0].parameters[0].required
    assert lib.tools[1].desc == "List a directory"
    env = {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools, "nextCursor": None}}
    assert load_tools(write(tmp_path, "rpc.json", env)).tools == lib.tools
    assert detect_format(env) == "mcp" and detect_format({"tools": tools}) == "mcp"


def test_openapi_operations_without_operation_id(tmp_path: Path) -> None:
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "pets", "version": "1"},
        "components": {
            "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}},
            "schemas": {"Pet": {"type": "object", "required": ["name"],
                                "properties": {"name": {"type": "string"}, "tag": {"$ref": "#/components/schemas/Tag"}}},
                        "Tag": {"type": "string", "description": "a tag"}},
        },
        "paths": {
            "/pets": {
                "get": {"summary": "List pets", "parameters": [{"$ref": "#/components/parameters/Limit"}]},
                "post": {"operationId": "createPet", "description": "Create a pet.",
                         "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}},
            },
            "/pets/{id}": {"parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}}],
                           "delete": {"summary": "Delete a pet"}},
        },
    }
    lib = load_tools(write(tmp_path, "pets.json", spec))
    assert lib.names == ["GET /pets", "createPet", "DELETE /pets/{id}"]
    assert lib.tools[0].desc == "List pets." and lib.tools[1].desc == "Create a pet."
    assert [(p.name, p.type, p.required) for p in lib.tools[0].parameters or []] == [("limit", "integer", False)]
    assert [(p.name, p.required, p.desc) for p in lib.tools[1].parameters or []] == [("name", True, ""), ("tag", False, "a tag")]
    assert [(p.name, p.required) for p in lib.tools[2].parameters or []] == [("id", True)]
    assert load_tools(write(tmp_path, "pets2.json", spec), openapi_ids="path").names[1] == "POST /pets"


# ------------------------------------------------------------------------------------------ detection, overrides


@pytest.mark.parametrize(
    ("doc", "fmt"),
    [
        ({"nodes": [{"id": "a"}]}, "taskbench"),
        ([{"id": "a", "desc": "x"}], "taskbench"),
        ([{"name": "a", "parameters": [{"name": "x"}]}], "taskbench"),
        ([{"type": "function", "function": {"name": "a"}}], "openai"),
        ([{"name": "a", "parameters": {"type": "object"}}], "openai"),
        ([{"name": "a", "inputSchema": {}}], "mcp"),
        ({"openapi": "3.1.0", "paths": {}}, "openapi"),
        ({"swagger": "2.0", "paths": {}}, "openapi"),
        ({"something": 1}, None),
        (42, None),
    ],
)
def test_detect_format(doc: object, fmt: str | None) -> None:
    assert detect_format(doc) == fmt


def test_dependency_override_and_forced_format(tmp_path: Path) -> None:
    typed = {"nodes": [{"id": "a", "desc": "", "input-type": ["text"], "output-type": ["image"]},
                       {"id": "b", "desc": "", "input-type": ["image"], "output-type": ["text"]}]}
    path = write(tmp_path, "tool_desc.json", typed)
    assert load_tools(path).dependency == "resource"
    assert load_tools(path, dependency="temporal").dependency == "temporal"
    assert load_tools(path, format="taskbench").names == ["a", "b"]
    # a directory is read as a dataset directory
    assert load_tools(tmp_path).names == ["a", "b"]
    # forcing another format than the file's shape is a clear error, not a crash
    with pytest.raises(InputError, match="OpenAPI"):
        load_tools(path, format="openapi")
    with pytest.raises(InputError, match="unknown tool library format"):
        load_tools(path, format="yaml")


def test_parameters_from_schema_edge_cases() -> None:
    assert parameters_from_schema(None) == []
    assert parameters_from_schema({"type": "object"}) == []
    params = parameters_from_schema({"properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                                                    "y": {"type": "array", "items": {"type": "number"}},
                                                    "z": {"properties": {}}}})
    assert [(p.name, p.type, p.required) for p in params] == [
        ("x", "string", False), ("y", "array[number]", False), ("z", "object", False)]


# ------------------------------------------------------------------------------------------ hostile specs


def _fanout_spec(schemas: int = 14, props: int = 12) -> dict[str, object]:
    """Each schema has ``props`` properties, all pointing at the next schema: 12**14 paths if expanded."""
    comps = {
        f"S{i}": {"type": "object", "properties": {f"p{j}": {"$ref": f"#/components/schemas/S{i + 1}"}
                                                 for j in range(props)}}
        for i in range(schemas)
    }
    comps[f"S{schemas}"] = {"type": "string"}
    return {
        "openapi": "3.0.0", "info": {"title": "fan", "version": "1"},
        "paths": {"/x": {"post": {
            "operationId": "make",
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}},
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/S0"}}}}},
        }}},
        "components": {"schemas": comps},
    }


@pytest.mark.timeout(20)
def test_openapi_ref_fan_out_is_bounded(tmp_path: Path) -> None:
    """The fuzz case of issue 24: 14 schemas x 12 properties each pointing to the next used to hang."""
    import time

    path = write(tmp_path, "fan.json", _fanout_spec())
    start = time.monotonic()
    lib = load_tools(path)
    assert time.monotonic() - start < 5
    tool = lib.tools[0]
    size = len(json.dumps(tool.output_schema))
    assert size < 2_000_000  # the inlined schema is capped, not 12**14 nodes
    assert tool.output_schema is not None and "p0" in tool.output_schema["properties"]


def test_inline_schema_keeps_small_shared_refs_exact() -> None:
    """The cap must not change ordinary specs: a schema used twice is inlined twice, in full."""
    from taskbench.graph.loaders import inline_schema

    doc = {"components": {"schemas": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}}}
    ref = {"$ref": "#/components/schemas/Pet"}
    out = inline_schema(doc, {"type": "object", "properties": {"a": ref, "b": ref}})
    assert out["properties"]["a"] == out["properties"]["b"] == doc["components"]["schemas"]["Pet"]


PETSTORE_YAML = """\
openapi: "3.0.0"
info: {title: Petstore, version: "1.0"}
paths:
  /pets/{petId}:
    get:
      operationId: showPetById
      summary: Info for a specific pet
      parameters:
        - name: petId
          in: path
          required: true
          schema: {type: string}
      responses:
        '200':
          description: Expected response to a valid request
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
components:
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        id: {type: integer, format: int64}
        name: {type: string}
"""


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_openapi_yaml_spec_loads(tmp_path: Path, suffix: str) -> None:
    """A YAML spec loads, whatever its suffix (a .json suffix on YAML text is still read as YAML)."""
    path = tmp_path / f"petstore{suffix}"
    path.write_text(PETSTORE_YAML, encoding="utf-8")
    lib = load_tools(path)
    assert [t.id for t in lib.tools] == ["showPetById"]
    assert lib.tools[0].output_schema is not None and set(lib.tools[0].output_schema["properties"]) == {"id", "name"}


def test_yaml_syntax_error_says_yaml(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("openapi: 3.0.0\npaths:\n  /x:\n    get: [unclosed\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_tools(path)
    text = str(info.value)
    assert "YAML" in text and "JSON" not in text
    assert info.value.line is not None


def test_json_syntax_error_still_says_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"nodes": [ {"id": "a",, } ]}', encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        load_tools(path)


@pytest.mark.timeout(20)
def test_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    """A billion-laughs document is refused quickly with a one-line error, not expanded."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("paths: {/x: {get: {operationId: boom, parameters: *a9}}}")
    lines.append('openapi: "3.0.0"')
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_tools(path)
    assert "aliases expand" in info.value.message


def test_yaml_line_numbers_in_semantic_errors(tmp_path: Path) -> None:
    """Errors about a tool in a YAML file name its line, as for JSON files."""
    path = tmp_path / "tools.yaml"
    path.write_text("tools:\n  - name: a\n    inputSchema: {type: object}\n  - name: a\n    inputSchema: {}\n",
                    encoding="utf-8")
    with pytest.raises(InputError, match="duplicate tool id") as info:
        load_tools(path)
    assert info.value.line == 4
