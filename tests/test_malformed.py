"""Malformed tool libraries and graphs: one InputError naming file:line and what to do; CLI exit 2, one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskbench.cli.main import main
from taskbench.errors import InputError
from taskbench.graph import load_graph, load_tools
from taskbench.graph.build import graph_from_path

TOOLS = [
    {"id": "Image Downloader", "desc": "Downloads an image.", "input-type": ["url"], "output-type": ["image"]},
    {"id": "Image Captioner", "desc": "Captions an image.", "input-type": ["image"], "output-type": ["text"]},
    {"id": "Text-to-Image", "desc": "Draws text.", "input-type": ["text"], "output-type": ["image"]},
]
LINKS = [
    {"source": "Image Downloader", "target": "Image Captioner", "type": "image"},
    {"source": "Image Captioner", "target": "Text-to-Image", "type": "text"},
    {"source": "Text-to-Image", "target": "Image Captioner", "type": "image"},
]


def dump(doc: object) -> str:
    return json.dumps(doc, indent=2)


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the n-th line containing ``needle``."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    return hits[occurrence - 1]


def tool_start_line(text: str, index: int) -> int:
    """Line of the '{' that opens tool #index in a json.dumps(indent=2) {"nodes": [...]} document."""
    starts = [i + 1 for i, line in enumerate(text.splitlines()) if line == "    {"]
    return starts[index]


def load_error(tmp_path: Path, text: str, loader=load_tools, name: str = "tool_desc.json", **kw) -> InputError:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        loader(path, **kw)
    err = info.value
    assert err.path == str(path)
    assert "\n" not in str(err)
    return err


# ------------------------------------------------------------------------------------------ syntax


def test_broken_json_names_the_parse_position(tmp_path: Path) -> None:
    text = dump({"nodes": TOOLS})
    lines = text.splitlines()
    k = line_of(text, '"Image Captioner"')
    lines[k - 1] = lines[k - 1].rstrip(",")  # drop a comma
    err = load_error(tmp_path, "\n".join(lines))
    assert err.line == k + 1 and "invalid JSON" in str(err) and "Expecting ',' delimiter" in str(err)
    assert str(err).startswith(f"{tmp_path / 'tool_desc.json'}:{k + 1}: ")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("", None, "empty"),
        ("   \n", None, "empty"),
        ('{"nodes": [', 1, "invalid JSON"),
        ('{"nodes": []}\n}', 2, "Extra data"),
        ("{'nodes': []}", 1, "property name"),
        ('{"nodes": [{"id": "a",}]}', 1, "invalid JSON"),
        ("\n\n[1, 2, oops]", 3, "invalid JSON"),
    ],
)
def test_syntax_errors(tmp_path: Path, text: str, line: int | None, words: str) -> None:
    err = load_error(tmp_path, text)
    assert err.line == line and words in str(err)


def test_not_utf8_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "tool_desc.json"
    path.write_bytes(b'{"nodes": [{"id": "caf\xe9"}]}')
    with pytest.raises(InputError, match="not UTF-8"):
        load_tools(path)
    with pytest.raises(InputError, match="file not found"):
        load_tools(tmp_path / "nope.json")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(InputError, match="no tool_desc.json"):
        load_tools(tmp_path / "empty_dir")


# ------------------------------------------------------------------------------------------ semantic errors


def test_missing_id_names_the_tool_line(tmp_path: Path) -> None:
    tools = [dict(t) for t in TOOLS]
    del tools[2]["id"]
    text = dump({"nodes": tools})
    err = load_error(tmp_path, text)
    assert "tool #2 has no 'id'" in str(err) and err.line == tool_start_line(text, 2)
    assert err.hint and "unique" in err.hint


def test_duplicate_ids_name_the_second_tool(tmp_path: Path) -> None:
    tools = [*TOOLS, dict(TOOLS[0], desc="again")]
    text = dump({"nodes": tools})
    err = load_error(tmp_path, text)
    assert "duplicate tool id 'Image Downloader' (tools #0 and #3)" in str(err)
    assert err.line == tool_start_line(text, 3)


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"nodes": []}, "empty"),
        ([], "cannot tell"),
        ({"nodes": "tools"}, "cannot tell"),
        ({"tools": "x"}, "cannot tell"),
        ("just a string", "cannot tell"),
        (42, "cannot tell"),
        (None, "cannot tell"),
        ({"nodes": [["a"]]}, "tool #0 is not a JSON object"),
        ({"nodes": [{"id": 7, "desc": ""}]}, "has no 'id'"),
        ({"nodes": [{"id": "", "desc": ""}]}, "empty id"),
        ({"nodes": [{"id": "a", "desc": 5}]}, "desc"),
        ({"nodes": [{"id": "a", "input-type": "text", "output-type": []}]}, "'input-type' must be a list"),
        ({"nodes": [{"id": "a", "input-type": [1], "output-type": []}]}, "tool #0 ('a')"),
        ({"nodes": [{"id": "a", "parameters": [{"type": "string"}]}]}, "name"),
        ({"nodes": [{"id": "a"}], "dependency": "causal"}, "unknown dependency kind 'causal'"),
        ([{"type": "function", "function": "get_weather"}], "'function' must be an object"),
        ([{"type": "function", "function": {"description": "no name"}}], "has no 'name'"),
        ([{"type": "function", "function": {"name": "a", "parameters": [1]}}], "parameter schema"),
        ({"tools": [{"name": "a", "inputSchema": {}}, {"name": "a", "inputSchema": {}}]}, "duplicate tool id 'a'"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}, "JSON-RPC response is an error"),
        ({"result": {"tools": [{"description": "x", "inputSchema": {}}]}}, "has no 'name'"),
        ({"openapi": "3.0.0", "paths": {}}, "empty"),
        ({"openapi": "3.0.0", "paths": []}, "cannot tell"),
        ({"openapi": "3.0.0", "paths": {"/a": {"get": "x"}}}, "operation GET /a is not an object"),
        ({"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"in": "query"}]}}}}, "has no 'name'"),
        ({"openapi": "3.0.0", "paths": {"/a": {"get": {"operationId": "x"}}, "/b": {"get": {"operationId": "x"}}}},
         "duplicate tool id 'x'"),
    ],
)
def test_semantic_errors(tmp_path: Path, doc: object, words: str) -> None:
    err = load_error(tmp_path, dump(doc))
    assert words in str(err)


def test_semantic_error_lines_in_other_formats(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}]
    text = dump({"tools": tools})
    err = load_error(tmp_path, text)
    assert err.line == tool_start_line(text, 1)
    spec = {"openapi": "3.0.0", "paths": {"/a": {"get": {"operationId": "x"}}, "/b": {"get": {"operationId": "x"}}}}
    text = dump(spec)
    err = load_error(tmp_path, text)
    assert err.line == line_of(text, '"get"', 2)


def test_unknown_dependency_kind_argument(tmp_path: Path) -> None:
    path = tmp_path / "tool_desc.json"
    path.write_text(dump({"nodes": TOOLS}), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_tools(path, dependency="causal")
    err = str(info.value)  # the option is wrong, not the file (issue 24.9: `--dependency x` blamed tool_desc.json)
    assert "unknown dependency kind 'causal'" in err and "resource" in err and "tool_desc.json" not in err


def test_resource_dependency_needs_types(tmp_path: Path) -> None:
    text = dump({"nodes": [*TOOLS, {"id": "get_weather", "desc": "", "parameters": []}]})
    err = load_error(tmp_path, text, dependency="resource")
    assert "'get_weather' has none" in str(err) and err.line == tool_start_line(text, 3)


# ------------------------------------------------------------------------------------------ graph files


def graph_error(tmp_path: Path, links: list[dict], tools: list[dict] | None = None) -> tuple[InputError, str]:
    text = dump({"nodes": tools or TOOLS, "links": links})
    return load_error(tmp_path, text, loader=load_graph, name="graph_desc.json"), text


def test_valid_small_graph_loads(tmp_path: Path) -> None:
    path = tmp_path / "graph_desc.json"
    path.write_text(dump({"nodes": TOOLS, "links": LINKS}))
    graph = load_graph(path)
    assert graph.dependency == "resource" and len(graph.links) == 3


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"source": "Image Downloader", "target": "Image Cropper", "type": "image"}, "target 'Image Cropper' is not a tool"),
        ({"source": "Nobody", "target": "Image Captioner", "type": "image"}, "source 'Nobody' is not a tool"),
        ({"source": "Image Downloader", "target": "Text-to-Image", "type": "image"}, "'Text-to-Image' does not take 'image'"),
        ({"source": "Image Captioner", "target": "Image Downloader", "type": "image"}, "'Image Captioner' does not produce 'image'"),
        ({"source": "Text-to-Image", "target": "Image Downloader", "type": "video"}, "type 'video', which no tool produces"),
        ({"source": "Text-to-Image", "target": "Image Downloader"}, "has no type"),
        ({"source": "Image Downloader", "target": "Image Downloader", "type": "image"}, "to itself"),
        ({"source": "Image Downloader", "target": "Image Captioner", "type": "image"}, "duplicate link"),
        ({"source": "Image Downloader", "type": "image"}, "has no string 'target'"),
        ({"source": "Image Downloader", "target": "Image Captioner", "type": 3}, "link #3"),
        ("Image Downloader -> Image Captioner", "is not a JSON object"),
    ],
)
def test_bad_links_name_the_link_line(tmp_path: Path, bad: object, words: str) -> None:
    err, text = graph_error(tmp_path, [*LINKS, bad])  # type: ignore[list-item]
    assert words in str(err)
    link_lines = [i + 1 for i, line in enumerate(text.splitlines()) if line.startswith("    ")
                  and i > line_of(text, '"links"') - 1 and line.strip() in ("{", f'"{bad}"' if isinstance(bad, str) else "{")]
    assert err.line == link_lines[3]


def test_graph_shape_errors(tmp_path: Path) -> None:
    err = load_error(tmp_path, dump({"nodes": TOOLS}), loader=load_graph, name="graph_desc.json")
    assert "expected a tool graph" in str(err)
    err = load_error(tmp_path, dump({"nodes": TOOLS, "links": {}}), loader=load_graph, name="graph_desc.json")
    assert "'links' must be a list" in str(err)
    err = load_error(tmp_path, dump({"nodes": TOOLS, "links": [], "dependency": "x"}), loader=load_graph,
                     name="graph_desc.json")
    assert "unknown dependency kind 'x'" in str(err)


def test_temporal_graph_accepts_complete_links(tmp_path: Path) -> None:
    tools = [{"id": "a", "desc": "", "parameters": []}, {"id": "b", "desc": "", "parameters": []}]
    path = tmp_path / "graph_desc.json"
    path.write_text(dump({"nodes": tools, "links": [{"source": "a", "target": "b", "type": "complete"}]}))
    assert load_graph(path).dependency == "temporal"
    assert graph_from_path(tmp_path).links[0].type == "complete"


# ------------------------------------------------------------------------------------------ property tests

VALID_DOCS = {
    "taskbench": {"nodes": TOOLS},
    "graph": {"nodes": TOOLS, "links": LINKS},
    "openai": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {
        "type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}],
    "mcp": {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t", "inputSchema": {
        "type": "object", "properties": {"p": {"type": "integer"}}}}]}},
    "openapi": {"openapi": "3.0.0", "components": {"parameters": {"L": {"name": "limit", "in": "query"}}},
                "paths": {"/a/{id}": {"parameters": [{"name": "id", "in": "path"}],
                                      "get": {"operationId": "getA", "parameters": [{"$ref": "#/components/parameters/L"}]},
                                      "post": {"requestBody": {"content": {"application/json": {"schema": {
                                          "properties": {"v": {"type": "number"}}}}}}}}}},
}
TEXTS = {k: dump(v) for k, v in VALID_DOCS.items()}


def load_any(path: Path) -> None:
    graph_from_path(path)  # graph files, and every library format (then the graph is built)
    load_tools(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(TEXTS)), data=st.data())
def test_truncated_files_always_give_input_error(tmp_path: Path, kind: str, data: st.DataObject) -> None:
    text = TEXTS[kind]
    cut = data.draw(st.integers(min_value=0, max_value=len(text.rstrip()) - 1))
    path = tmp_path / "lib.json"
    path.write_text(text[:cut], encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_any(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(TEXTS)), data=st.data())
def test_text_mutations_load_or_give_input_error(tmp_path: Path, kind: str, data: st.DataObject) -> None:
    text = TEXTS[kind]
    ops = data.draw(st.lists(st.sampled_from(["replace", "delete", "insert", "swap"]), min_size=1, max_size=4))
    for op in ops:
        i = data.draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
        if op == "replace":
            text = text[:i] + data.draw(st.sampled_from(list('{}[]",:0a -\\tn'))) + text[i + 1:]
        elif op == "delete":
            j = data.draw(st.integers(min_value=i, max_value=min(len(text), i + 40)))
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + data.draw(st.text(max_size=6)) + text[i:]
        else:
            j = data.draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
            a, b = sorted((i, j))
            text = text[:a] + text[b:] + text[a:b]
    path = tmp_path / "lib.json"
    path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    try:
        load_any(path)
    except InputError as exc:
        assert "\n" not in str(exc)


def _mutate(doc: object, path: list[object], value: object, delete: bool) -> object:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        out = dict(doc)
        if delete and not rest:
            out.pop(head, None)  # type: ignore[arg-type]
        else:
            out[head] = _mutate(doc.get(head), rest, value, delete)  # type: ignore[index]
        return out
    if isinstance(doc, list) and isinstance(head, int) and head < len(doc):
        out_l = list(doc)
        if delete and not rest:
            out_l.pop(head)
        else:
            out_l[head] = _mutate(doc[head], rest, value, delete)
        return out_l
    return doc


def _paths(doc: object, prefix: list[object]) -> list[list[object]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, [*prefix, k])
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, [*prefix, i])
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(VALID_DOCS)), data=st.data())
def test_structural_mutations_load_or_give_input_error(tmp_path: Path, kind: str, data: st.DataObject) -> None:
    doc = VALID_DOCS[kind]
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        where = data.draw(st.sampled_from(_paths(doc, [])))
        doc = _mutate(doc, where, data.draw(json_values), data.draw(st.booleans()))
    path = tmp_path / "lib.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    try:
        load_any(path)
    except InputError as exc:
        assert "\n" not in str(exc)


# ------------------------------------------------------------------------------------------ CLI


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out, out.err


CLI_BAD_INPUTS = [
    ({"nodes": [*TOOLS, TOOLS[0]]}, [], "duplicate tool id"),
    ({"nodes": []}, [], "empty"),
    ({"nodes": TOOLS}, ["--dependency", "causal"], "unknown dependency kind"),
    ({"nodes": TOOLS}, ["--format", "yaml"], "unknown tool library format"),
    ([1, 2], [], "cannot tell"),
]
BAD_GRAPH = ({"nodes": TOOLS, "links": [{"source": "Image Downloader", "target": "X", "type": "image"}]}, [],
             "is not a tool")
CLI_CASES = [
    (command, *case)
    for command in (["graph", "build"], ["graph", "stats"], ["graph", "show"], ["sample"])
    for case in (CLI_BAD_INPUTS if command == ["graph", "build"] else [*CLI_BAD_INPUTS, BAD_GRAPH])
]


@pytest.mark.parametrize(("command", "doc", "argv_tail", "words"), CLI_CASES)
def test_cli_errors_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], doc: object, argv_tail: list[str], words: str
) -> None:
    path = tmp_path / "tool_desc.json"
    path.write_text(dump(doc))
    extra = {"sample": ["--n", "3"], "show": ["-o", str(tmp_path / "g.png")]}.get(command[-1], [])
    code, out, err = run_cli([*command, str(path), *extra, *argv_tail], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and words in err and "Traceback" not in err
    assert err.startswith("taskbench: error: ")


def test_cli_bad_weights_and_layout_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "graph_desc.json"
    path.write_text(dump({"nodes": TOOLS, "links": LINKS}))
    for argv, words in [
        (["sample", str(path), "--n", "2", "--mode-weights", "3,7"], "cannot parse weights"),
        (["sample", str(path), "--n", "2", "--mode-weights", "single=1,tree=2"], "unknown sampling mode 'tree'"),
        (["sample", str(path), "--n", "2", "--mode-weights", "0,0,0"], "must not all be zero"),
        (["sample", str(path), "--n", "2", "--size-weights", "two=1"], "integer sizes"),
        (["graph", "show", str(path), "-o", str(tmp_path / "g.png"), "--layout", "grid"], "unknown layout"),
        (["graph", "show", str(path), "-o", str(tmp_path / "g.gif")], "picture format"),
    ]:
        code, _, err = run_cli(argv, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, (argv, err)


def test_cli_error_in_a_real_process(tmp_path: Path) -> None:
    text = dump({"nodes": TOOLS})
    path = tmp_path / "tool_desc.json"
    path.write_text(text[: len(text) // 2])
    proc = subprocess.run([sys.executable, "-m", "taskbench", "graph", "stats", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert f"{path}:" in proc.stderr and "invalid JSON" in proc.stderr
