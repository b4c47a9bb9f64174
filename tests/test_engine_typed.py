"""Arguments keep their schema types (issue 41): the generation and guided schemas give an API parameter the type
its JSON Schema declares (bounded: every string a maxLength, every array a maxItems, no $ref), the execution
critic passes typed values (a string that says a number, a boolean or a JSON array unambiguously becomes one),
and a gold graph with array, number and boolean arguments runs in the real TypeScript MCP servers
(@modelcontextprotocol/server-filesystem and server-memory, which reject strings for those), end to end through
`generate --env`, with typed values in data.json that `taskbench data check` accepts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run
from engine_oracle import prompt_of
from mcp_servers import server_or_skip
from taskbench.engine.execcheck import coerce, execute_gold
from taskbench.engine.generate import GenerateOptions, generate
from taskbench.engine.guided import guided_schema
from taskbench.engine.parse import build_sample
from taskbench.engine.schemas import MAX_ITEMS, Limits, generation_schema, value_schema
from taskbench.graph import load_tools
from taskbench.graph.build import build_graph
from taskbench.llm import get_model
from taskbench.records import run_sync
from taskbench.schema import Sample, SampledSubgraph, TaskArgument, TaskNode, ToolLibrary, ToolLink

jsonschema = pytest.importorskip("jsonschema")

SPECS = Path(__file__).parent / "data" / "specs"
SERVERS = ("mcp-filesystem", "mcp-memory", "mcp-git", "mcp-sqlite", "mcp-time")


def library(name: str) -> ToolLibrary:
    return load_tools(SPECS / f"{name}.json", "mcp")


def args_schema(schema: dict[str, Any], tool: str) -> dict[str, Any]:
    """The ``arguments`` schema of ``tool``'s node in a generation or guided schema."""
    found = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            task = (node.get("properties") or {}).get("task") if isinstance(node.get("properties"), dict) else None
            if isinstance(task, dict) and tool in (task.get("enum") or [task.get("const")]):
                found.append(node["properties"]["arguments"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    assert found, tool
    return found[0]


def _walk(schema: Any):
    if isinstance(schema, dict):
        yield schema
        for v in schema.values():
            yield from _walk(v)
    elif isinstance(schema, list):
        for v in schema:
            yield from _walk(v)


def assert_bounded(schema: dict[str, Any], strict: bool = False) -> None:
    """Every string bounded (unless strict), every array bounded, every object closed with all keys required."""
    jsonschema.Draft202012Validator.check_schema(schema)
    for node in _walk(schema):
        assert not any(isinstance(node.get(k), str) for k in ("$ref", "pattern", "format")), node
        if node.get("type") == "object":
            assert node["additionalProperties"] is False and node["required"] == list(node["properties"]), node
        if node.get("type") == "string" and "enum" not in node and "const" not in node:
            assert ("maxLength" not in node) if strict else node["maxLength"] > 0, node
        if node.get("type") == "array" and "prefixItems" not in node:
            assert isinstance(node.get("maxItems"), int) and node["maxItems"] <= MAX_ITEMS, node


# ------------------------------------------------------------------------------------------ the schema


def test_api_parameters_get_their_declared_types_bounded():
    fs, memory = library("mcp-filesystem"), library("mcp-memory")
    schema = generation_schema(fs.tools, "temporal", n_nodes=2, max_links=1)
    assert_bounded(schema)
    read = args_schema(schema, "read_text_file")["properties"]
    assert read["path"] == {"type": "string", "maxLength": 200}
    assert read["head"] == {"anyOf": [{"type": "number"}, {"type": "null"}]}  # optional: nullable
    paths = args_schema(schema, "read_multiple_files")["properties"]["paths"]
    assert paths == {"type": "array", "items": {"type": "string", "maxLength": 200}, "minItems": 1,
                     "maxItems": MAX_ITEMS}
    edit = args_schema(schema, "edit_file")["properties"]
    assert edit["dryRun"] == {"anyOf": [{"type": "boolean"}, {"type": "null"}]}
    item = edit["edits"]["items"]
    assert item["type"] == "object" and set(item["properties"]) == {"oldText", "newText"}
    assert args_schema(schema, "list_directory_with_sizes")["properties"]["sortBy"] == {
        "anyOf": [{"type": "string", "enum": ["name", "size"]}, {"type": "null"}]}
    entities = args_schema(generation_schema(memory.tools, "temporal", n_nodes=1, max_links=0),
                           "create_entities")["properties"]["entities"]
    assert entities["items"]["properties"]["observations"]["type"] == "array"

    valid = jsonschema.Draft202012Validator(args_schema(schema, "read_text_file"))
    assert valid.is_valid({"path": "/a.txt", "head": 3, "tail": None})
    assert not valid.is_valid({"path": "/a.txt", "head": "3", "tail": None})  # a number, not its text


def test_every_servers_schema_is_bounded_in_both_modes_and_guided_too():
    for name in SERVERS:
        lib = library(name)
        assert_bounded(generation_schema(lib.tools, "temporal", n_nodes=3, max_links=2))
        assert_bounded(generation_schema(lib.tools, "temporal", n_nodes=3, max_links=2, limits=Limits().unbounded()),
                       strict=True)
        entry = SampledSubgraph(index=0, seed=0, mode="chain", size=2, nodes=[t.id for t in lib.tools[:2]],
                                links=[ToolLink(source=lib.tools[0].id, target=lib.tools[1].id)]
                                if len(lib.tools) > 1 else [])
        guided = guided_schema(entry, lib)
        assert_bounded(guided)
        for t in lib.tools[:2]:  # the guided node carries the same typed arguments as the free one
            free = generation_schema(lib.tools, "temporal", n_nodes=1, max_links=0)
            assert args_schema(guided, t.id) == args_schema(free, t.id)


def test_awkward_declarations_stay_bounded():
    limits = Limits()
    recursive = {"$defs": {"Node": {"type": "object", "properties": {"name": {"type": "string"},
                                                                     "children": {"type": "array",
                                                                                  "items": {"$ref": "#/$defs/Node"}}},
                                    "required": ["name"]}}}
    out = value_schema({"$ref": "#/$defs/Node"}, limits, root=recursive)
    assert_bounded(out)
    deep = {"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {"type": "array",
                                                                                           "items": {"type": "integer"}}}}}
    assert_bounded(value_schema(deep, limits))
    for declared, want in [
        ({"type": "object"}, {"type": "string", "maxLength": 200}),  # a free-form object: JSON text
        ({"type": "object", "additionalProperties": {"type": "integer"}}, {"type": "string", "maxLength": 200}),
        ({"type": ["integer", "null"]}, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        ({"enum": [1, 2, 3]}, {"type": "integer", "enum": [1, 2, 3]}),
        ({"type": "string", "pattern": ".*", "format": "date-time"}, {"type": "string", "maxLength": 200}),
        ({"type": "array", "maxItems": 100, "items": {"type": "boolean"}},
         {"type": "array", "items": {"type": "boolean"}, "minItems": 0, "maxItems": MAX_ITEMS}),
        ({"$ref": "#/nowhere"}, {"type": "string", "maxLength": 200}),
        ("not a schema", {"type": "string", "maxLength": 200}),
    ]:
        assert value_schema(declared, limits) == want, declared


def test_typed_schemas_compile_to_llama_grammars():
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    from taskbench.llm.grammar import schema_to_gbnf

    for name in SERVERS:
        lib = library(name)
        schema = generation_schema(lib.tools, "temporal", n_nodes=2, max_links=1)
        assert llama_grammar.LlamaGrammar.from_string(schema_to_gbnf(schema), verbose=False) is not None
        entry = SampledSubgraph(index=0, seed=0, mode="single", size=1, nodes=[lib.tools[-1].id], links=[])
        gbnf = schema_to_gbnf(guided_schema(entry, lib))
        assert llama_grammar.LlamaGrammar.from_string(gbnf, verbose=False) is not None
    gbnf = schema_to_gbnf(generation_schema(library("mcp-filesystem").tools, "temporal", n_nodes=1, max_links=0))
    number_rules = [ln for ln in gbnf.splitlines() if ln.startswith(("integral-part ::=", "decimal-part ::="))]
    assert len(number_rules) == 2 and not any(c in ln for ln in number_rules for c in "*+")  # numbers are bounded


def _fill(schema: dict[str, Any], rng: random.Random) -> Any:
    """A random document of the (typed) argument subset."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "anyOf" in schema:
        return _fill(rng.choice(schema["anyOf"]), rng)
    kind = schema["type"]
    if kind == "object":
        return {k: _fill(v, rng) for k, v in schema["properties"].items()}
    if kind == "array":
        return [_fill(schema["items"], rng) for _ in range(rng.randint(schema["minItems"], schema["maxItems"]))]
    return {"string": lambda: "x" * rng.randint(0, 5), "integer": lambda: rng.randint(-5, 5),
            "number": lambda: rng.random(), "boolean": lambda: rng.random() < 0.5, "null": lambda: None}[kind]()


def test_documents_of_the_typed_schema_are_valid_calls_of_the_tool():
    """Random answers that fit the argument schema fit the tool's own input schema (nulls left out, as the
    parser and the execution critic do)."""
    rng = random.Random(0)
    for name in SERVERS:
        lib = library(name)
        schema = generation_schema(lib.tools, "temporal", n_nodes=1, max_links=0)
        for tool in lib.tools:
            own = jsonschema.Draft7Validator(tool.input_schema)
            for _ in range(20):
                args = _fill(args_schema(schema, tool.id), rng)
                call = coerce({k: v for k, v in args.items() if v is not None}, tool.input_schema, tool.input_schema)
                assert own.is_valid(call), (tool.id, call, list(own.iter_errors(call))[:1])


# ------------------------------------------------------------------------------------------ coercion


@pytest.mark.parametrize("value,declared,want", [
    ("3", {"type": "integer"}, 3),
    (" -12 ", {"type": "integer"}, -12),
    ("2.5", {"type": "number"}, 2.5),
    ("7", {"type": "number"}, 7),
    ("True", {"type": "boolean"}, True),
    ("false", {"type": "boolean"}, False),
    ('["a.txt", "b.txt"]', {"type": "array", "items": {"type": "string"}}, ["a.txt", "b.txt"]),
    (["1", 2], {"type": "array", "items": {"type": "integer"}}, [1, 2]),
    ('{"n": "4"}', {"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 4}),
    ({"a": "x", "b": None}, {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"]}, {"a": "x"}),
    ("5", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, 5),
    ("5", {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "5"),  # a string fits already
    (3, {"type": "string"}, "3"),
    ("4", {"$ref": "#/$defs/N"}, 4),
    # ambiguous or impossible: left for the environment to refuse
    ("three", {"type": "integer"}, "three"),
    ("2.5", {"type": "integer"}, "2.5"),
    ("yes", {"type": "boolean"}, "yes"),
    ("a.txt, b.txt", {"type": "array", "items": {"type": "string"}}, "a.txt, b.txt"),
    ('{"a": 1}', {"type": "array"}, '{"a": 1}'),
    ("nan", {"type": "number"}, "nan"),
    ("x", {}, "x"),
])
def test_coerce_reads_a_string_as_the_declared_type_only_when_unambiguous(value, declared, want):
    root = {"$defs": {"N": {"type": "integer"}}}
    out = coerce(value, declared, root)
    assert out == want and type(out) is type(want)


# ------------------------------------------------------------------------------------------ the real servers


def _open(kind: str, tmp: Path) -> Any:
    pytest.importorskip("mcp", reason="the mcp package (extra [mcp]) is not installed")
    from taskbench.envs import open_environment

    if kind == "filesystem":
        return open_environment(f"mcp:{server_or_skip('mcp-server-filesystem')} {tmp}")
    return open_environment(f"mcp:MEMORY_FILE_PATH={tmp / 'memory.json'} {server_or_skip('mcp-server-memory')}")


def _sample(nodes: list[tuple[str, dict[str, Any]]], links: list[tuple[str, str]] = ()) -> Sample:
    return Sample(id="t", user_request="r", task_nodes=[
        TaskNode(task=t, arguments=[TaskArgument(name=k, value=v) for k, v in a.items()]) for t, a in nodes],
        task_links=[{"source": a, "target": b} for a, b in links])


def test_string_arguments_for_numbers_arrays_and_booleans_run_in_the_filesystem_server(tmp_path):
    """What the engine wrote before: every value a string. The TypeScript server refuses "2" for a number;
    the execution critic now passes 2, a list and true."""
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "b.txt").write_text("bee\n")
    env = _open("filesystem", tmp_path)
    try:
        run = run_sync(execute_gold(_sample([
            ("read_text_file", {"path": str(tmp_path / "a.txt"), "head": "2"}),
            ("read_multiple_files", {"paths": json.dumps([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])}),
            ("edit_file", {"path": str(tmp_path / "b.txt"), "dryRun": "true",
                           "edits": '[{"oldText": "bee", "newText": "wasp"}]'}),
        ], [("read_text_file", "read_multiple_files"), ("read_multiple_files", "edit_file")]), env))
    finally:
        env.close()
    assert run.passed, run.reasons
    head, many, edit = run.calls
    assert head.arguments["head"] == 2 and head.result["content"] == "one\ntwo"
    assert many.arguments["paths"] == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert edit.arguments["dryRun"] is True and "wasp" in json.dumps(edit.result)
    assert (tmp_path / "b.txt").read_text() == "bee\n"  # a dry run


def test_a_node_result_feeds_an_array_argument_of_the_memory_server(tmp_path):
    """create_entities takes an array of objects (observations an array of strings); open_nodes an array of
    names, here the JSON text of a list and a <node-j> item."""
    env = _open("memory", tmp_path)
    try:
        run = run_sync(execute_gold(_sample([
            ("create_entities", {"entities": '[{"name": "Ada", "entityType": "person", '
                                             '"observations": ["wrote the first program"]}]'}),
            ("search_nodes", {"query": "Ada"}),
            ("open_nodes", {"names": ["Ada"]}),
        ], [("create_entities", "search_nodes"), ("search_nodes", "open_nodes")]), env))
    finally:
        env.close()
    assert run.passed, run.reasons
    assert run.calls[0].arguments["entities"][0]["observations"] == ["wrote the first program"]
    assert "first program" in json.dumps(run.calls[2].result)


# ------------------------------------------------------------------------------------------ end to end

INTENDED = {  # what a good model would pass, per tool and parameter (None: leave an optional one out)
    "list_directory": {"path": "{root}"},
    "read_text_file": {"path": "{root}/notes.txt", "head": 1, "tail": None},
    "read_multiple_files": {"paths": ["{root}/notes.txt", "{root}/todo.txt"]},
    "directory_tree": {"path": "{root}", "excludePatterns": ["*.log"]},
    "edit_file": {"path": "{root}/todo.txt", "edits": [{"oldText": "milk", "newText": "oat milk"}], "dryRun": True},
}


def schema_following(root: Path):
    """A model under the answer's grammar: it means INTENDED's values and writes each in the type the schema
    asks for (the JSON text of a number, list or boolean where the schema says string)."""

    def answer(request: Any) -> str:
        schema = request.json_schema or {}
        prompt = prompt_of(request)
        names = [json.loads(ln)["id"] for ln in prompt.splitlines() if ln.startswith('{"id"')]
        nodes = []
        for name in names:
            props = args_schema(schema, name)["properties"]
            args: dict[str, Any] = {}
            for param, want in INTENDED[name].items():
                want = json.loads(json.dumps(want).replace("{root}", str(root)))
                accepts = [props[param]] + props[param].get("anyOf", [])
                takes_text = any(s.get("type") == "string" for s in accepts) and not any(
                    s.get("type") in ("array", "number", "integer", "boolean") for s in accepts)
                args[param] = want if want is None or not takes_text or isinstance(want, str) else json.dumps(want)
            nodes.append({"task": name, "arguments": args})
        fixed = schema["properties"]["invoking_graph"]["properties"]["links"].get("prefixItems")
        edges = [ln.split(" -> ") for ln in prompt.splitlines() if " -> " in ln and not ln.startswith("{")]
        links = [x["const"] for x in fixed] if fixed is not None else [  # guided: the links are written in
            {"source": s, "target": t.split(" (")[0]} for s, t in edges]
        text = json.dumps({
            "task_steps": [f"Step {i + 1}: use {n}" for i, n in enumerate(names)],
            "user_request": f"Look at the notes in {root} and show me what they say.",
            "invoking_graph": {"nodes": nodes, "links": links},
            "check_by_teacher": {"comments": "Let me check your result step by step. Fine.", "executable": True,
                                 "correct": True},
        })
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text)), text
        return text

    return answer


def test_generate_over_the_filesystem_server_keeps_typed_arguments_end_to_end(tmp_path, capsys):
    root = tmp_path / "files"
    root.mkdir()
    (root / "notes.txt").write_text("call Bo\n")
    (root / "todo.txt").write_text("milk\n")
    lib = ToolLibrary(tools=[t for t in library("mcp-filesystem").tools if t.id in INTENDED], dependency="temporal")
    graph = build_graph(lib).model_copy(update={"links": [
        ToolLink(source="list_directory", target="read_text_file"),
        ToolLink(source="list_directory", target="read_multiple_files"),
        ToolLink(source="directory_tree", target="edit_file"),
        ToolLink(source="read_multiple_files", target="edit_file")]})
    env = _open("filesystem", root)
    model = get_model("mock/script", responses=schema_following(root), cache=False, max_retries=0)
    out = tmp_path / "gen"
    counts: dict[str, int] = {}
    try:
        for guided in (False, True):
            summary = generate(graph, model, out / str(guided), GenerateOptions(n=8, guided=guided, seed=1), env=env)
            raw = [json.loads(ln) for ln in (out / str(guided) / "data_raw.json").read_text().splitlines()]
            assert summary.statistics["exec_critic"]["passed"] == 8, [r["execution"]["reasons"] for r in raw]
            calls = [c for r in raw for c in r["execution"]["calls"]]
            typed = {(c["tool"], k): v for c in calls for k, v in c["arguments"].items()}
            seen = {k for k in typed}
            assert ("read_text_file", "head") in seen or ("read_multiple_files", "paths") in seen
            for (tool, param), value in typed.items():  # the answer itself was typed, not coerced text
                assert value == json.loads(json.dumps(INTENDED[tool][param]).replace("{root}", str(root)))
            kept = [json.loads(ln) for ln in (out / str(guided) / "data.json").read_text().splitlines()]
            assert kept
            counts[str(guided)] = len(kept)
            for s in kept:
                for node in s["task_nodes"]:
                    for arg in node["arguments"]:
                        want = json.loads(json.dumps(INTENDED[node["task"]][arg["name"]]).replace("{root}", str(root)))
                        assert arg["value"] == want
                sample = build_sample({"id": s["id"], "result": json.loads(
                    next(r for r in raw if r["id"] == s["id"])["raw"])}, lib)
                assert [n.named_arguments() for n in sample.task_nodes] == [
                    {a["name"]: a["value"] for a in n["arguments"]} for n in s["task_nodes"]]
    finally:
        env.close()
    for guided, n in counts.items():  # the reference layout with typed values reads back and checks clean
        code, text, _ = run(capsys, "data", "check", str(out / guided), "--strict")
        assert code == 0 and f"{n} samples" in text and f"{n} clean, 0 with issues" in text, text


def test_restbench_operations_are_typed_bounded_and_compile(shared):
    """The offline REST services' operations: ids and pages are integers, flags booleans, and the whole
    library's schema (self-instruct offers every tool) is bounded and a llama.cpp grammar."""
    for name in ("tmdb", "spotify"):
        lib = load_tools(shared / "reference" / "restbench" / f"{name}_oas.json", "openapi", openapi_ids="path")
        schema = generation_schema(lib.tools, "temporal", n_nodes=3, max_links=2)
        assert_bounded(schema)
        if name == "tmdb":
            credits = args_schema(schema, "GET /movie/{movie_id}/credits")["properties"]
            assert credits["movie_id"] == {"type": "integer"}
            assert args_schema(schema, "GET /discover/movie")["properties"]["include_adult"] == {
                "anyOf": [{"type": "boolean"}, {"type": "null"}]}
        llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
        from taskbench.llm.grammar import schema_to_gbnf

        assert llama_grammar.LlamaGrammar.from_string(schema_to_gbnf(schema), verbose=False) is not None


def test_the_parser_keeps_typed_values_and_leaves_out_null_optional_fields_at_any_depth():
    """A typed answer becomes a Sample with the same typed values; a null optional field is left out at any
    depth, as a null optional parameter is (the schema makes every optional field nullable)."""
    lib = library("mcp-filesystem")
    answer = {"task_steps": ["a"], "user_request": "r", "invoking_graph": {"nodes": [
        {"task": "edit_file", "arguments": {"path": "/a.txt", "dryRun": True, "edits": [
            {"oldText": "x", "newText": "y", "note": None}]}},
        {"task": "read_text_file", "arguments": {"path": "/a.txt", "head": 2, "tail": None}},
        {"task": "directory_tree", "arguments": {"path": "/", "excludePatterns": ["*.log", None]}}], "links": []}}
    sample = build_sample({"id": "1", "result": answer}, lib)
    assert [n.named_arguments() for n in sample.task_nodes] == [
        {"path": "/a.txt", "dryRun": True, "edits": [{"oldText": "x", "newText": "y"}]},
        {"path": "/a.txt", "head": 2},
        {"path": "/", "excludePatterns": ["*.log", None]},  # an item of a list is not a field: kept
    ]
    again = Sample.model_validate_json(sample.model_dump_json())
    assert again.task_nodes[1].named_arguments()["head"] == 2 and again.task_nodes[0].arguments[1].value is True


@pytest.mark.native_fork
def test_llama_cpp_itself_parses_the_typed_grammars(shared):
    """llama-cpp-python's LlamaGrammar only stores the text; llama.cpp parses it when sampling starts. Its parser
    (a vocabulary-only load of the tiny model: no weights computed, nothing decoded) takes every typed grammar,
    free and guided, of the five servers and of RestBench, and refuses a broken one."""
    from tiny_model import tiny_model_missing

    if tiny_model_missing():
        pytest.skip(tiny_model_missing())
    import llama_cpp

    from taskbench.llm.grammar import schema_to_gbnf
    from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file

    path = locate_packaged_file(KNOWN_WEIGHTS["smollm2-135m"].chunks[0])
    vocab = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)._model.vocab

    def parses(gbnf: str) -> bool:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
        if sampler:
            llama_cpp.llama_sampler_free(sampler)
        return bool(sampler)

    for name in SERVERS:
        lib = library(name)
        assert parses(schema_to_gbnf(generation_schema(lib.tools, "temporal", n_nodes=2, max_links=1)))
        for tool in lib.tools:
            entry = SampledSubgraph(index=0, seed=0, mode="single", size=1, nodes=[tool.id], links=[])
            assert parses(schema_to_gbnf(guided_schema(entry, lib))), tool.id
    for name in ("tmdb", "spotify"):
        lib = load_tools(shared / "reference" / "restbench" / f"{name}_oas.json", "openapi", openapi_ids="path")
        assert parses(schema_to_gbnf(generation_schema(lib.tools, "temporal", n_nodes=2, max_links=1)))
    assert not parses('root ::= "a" \\. ')
