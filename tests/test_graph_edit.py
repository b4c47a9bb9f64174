"""Hand corrections of a tool graph: `graph edit --drop/--add/--reason/--overrides` and `graph build
--overrides`, validated against the tools; sampling then uses the edited graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskbench.cli.main import main
from taskbench.errors import InputError
from taskbench.graph import (
    GraphEdits,
    LinkEdit,
    build_graph,
    edit_graph,
    load_graph,
    load_overrides,
    parse_link,
    sample_plan,
)
from taskbench.schema import Tool, ToolLibrary, ToolParameter

NAMES = ["GET /search/movie", "GET /movie/{movie_id}", "GET /movie/top_rated", "a->b", "c"]


def api_graph():  # noqa: ANN201
    """Temporal tools with spaces, slashes and even an arrow in their names; a sparse hand-made link set."""
    tools = [Tool(id=n, desc=n, parameters=[ToolParameter(name="q")]) for n in NAMES]
    graph = build_graph(ToolLibrary(tools=tools, dependency="temporal"))
    keep = {("GET /search/movie", "GET /movie/{movie_id}"), ("GET /search/movie", "GET /movie/top_rated"),
            ("a->b", "c")}
    return graph.model_copy(update={"links": [lk for lk in graph.links if (lk.source, lk.target) in keep],
                                    "inferred": "schema"})


def run(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_parse_link_splits_where_both_ends_are_tools() -> None:
    assert parse_link("GET /search/movie -> GET /movie/{movie_id}", NAMES) == ("GET /search/movie", "GET /movie/{movie_id}")
    assert parse_link("a->b -> c", NAMES) == ("a->b", "c")
    assert parse_link("c->a->b", NAMES) == ("c", "a->b")
    with pytest.raises(InputError, match=r"unknown tool 'GET /serch/movie'.*did you mean 'GET /search/movie'"):
        parse_link("GET /serch/movie -> c", NAMES)
    with pytest.raises(InputError, match="is not a link"):
        parse_link("GET /search/movie", NAMES)


def test_drop_and_add_with_reasons_and_a_log() -> None:
    graph = api_graph()
    edits = GraphEdits(drop=[LinkEdit("GET /search/movie", "GET /movie/top_rated")],
                       add=[LinkEdit("GET /movie/top_rated", "GET /movie/{movie_id}", "results[].id is a movie id"),
                            LinkEdit("c", "a->b")])
    edited = edit_graph(graph, edits, reason="by hand")
    pairs = [(lk.source, lk.target) for lk in edited.links]
    assert pairs == [("GET /search/movie", "GET /movie/{movie_id}"), ("a->b", "c"),
                     ("GET /movie/top_rated", "GET /movie/{movie_id}"), ("c", "a->b")]
    added = edited.links[2]
    assert added.type == "data" and [(r.rule, r.note) for r in added.reasons] == [("manual", "results[].id is a movie id")]
    assert edited.links[3].reasons[0].note == "by hand"
    assert [e["op"] for e in edited.edits] == ["drop", "add", "add"]
    assert graph.links != edited.links and len(graph.links) == 3  # the input graph is not changed
    # adding a link that exists keeps one link and adds the reason
    again = edit_graph(edited, GraphEdits(add=[LinkEdit("a->b", "c", "checked")]))
    assert len(again.links) == 4 and [r.rule for r in again.links[1].reasons] == ["manual"]


def test_edits_are_validated() -> None:
    graph = api_graph()
    with pytest.raises(InputError, match=r"no link 'c' -> 'a->b' to drop"):
        edit_graph(graph, GraphEdits(drop=[LinkEdit("c", "a->b")]))
    with pytest.raises(InputError, match="to itself"):
        edit_graph(graph, GraphEdits(add=[LinkEdit("c", "c")]))
    with pytest.raises(InputError, match=r"unknown tool 'GET /movie/\{id\}'.*did you mean 'GET /movie/\{movie_id\}'"):
        edit_graph(graph, GraphEdits(add=[LinkEdit("c", "GET /movie/{id}")]))
    typed = [Tool.model_validate({"id": "dl", "input-type": ["url"], "output-type": ["image"]}),
             Tool.model_validate({"id": "cap", "input-type": ["image"], "output-type": ["text"]})]
    res = build_graph(ToolLibrary(tools=typed, dependency="resource"))
    with pytest.raises(InputError, match="needs a shared type"):
        edit_graph(res, GraphEdits(add=[LinkEdit("cap", "dl")]))
    back = edit_graph(edit_graph(res, GraphEdits(drop=[LinkEdit("dl", "cap")])), GraphEdits(add=[LinkEdit("dl", "cap")]))
    assert [(lk.source, lk.target, lk.type) for lk in back.links] == [("dl", "cap", "image")]


def test_overrides_files_json_and_yaml(tmp_path: Path) -> None:
    js = tmp_path / "fixes.json"
    js.write_text(json.dumps({"drop": ["GET /search/movie -> GET /movie/top_rated"],
                              "add": [{"source": "c", "target": "a->b", "reason": "c feeds a->b"}]}, indent=1))
    yml = tmp_path / "fixes.yaml"
    yml.write_text("# corrections\ndrop:\n  - GET /search/movie -> GET /movie/top_rated\nadd:\n"
                   "  - source: c\n    target: a->b\n    reason: c feeds a->b\n")
    for path in (js, yml):
        edits = load_overrides(path, NAMES)
        assert [(e.source, e.target) for e in edits.drop] == [("GET /search/movie", "GET /movie/top_rated")]
        assert [(e.source, e.target, e.reason) for e in edits.add] == [("c", "a->b", "c feeds a->b")]
    # errors name the file and the line of the bad item
    yml.write_text("drop:\n  - c -> a->b\nadd:\n  - GET /serch/movie -> c\n")
    with pytest.raises(InputError, match=r"fixes.yaml:4: unknown tool 'GET /serch/movie'"):
        load_overrides(yml, NAMES)
    js.write_text('{\n "add": [\n  "c -> a->b",\n  {"source": "c"}\n ]\n}')
    with pytest.raises(InputError, match=r"fixes.json:4: expected 'SOURCE -> TARGET'"):
        load_overrides(js, NAMES)
    js.write_text('{"keep": []}')
    with pytest.raises(InputError, match="expected an overrides document"):
        load_overrides(js, NAMES)
    yml.write_text("drop: [unclosed\n")
    with pytest.raises(InputError, match="invalid YAML"):
        load_overrides(yml, NAMES)


def test_cli_edit_in_place_and_sample_uses_the_edited_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "graph_desc.json"
    path.write_text(json.dumps(api_graph().to_taskbench()))
    code = run(["graph", "edit", str(path), "--drop", "GET /search/movie -> GET /movie/top_rated",
                "--add", "GET /movie/top_rated -> GET /movie/{movie_id}", "--reason", "results[].id is a movie id"])
    assert code == 0, capsys.readouterr().err
    assert "1 dropped, 1 added" in capsys.readouterr().err
    graph = load_graph(path)
    pairs = {(lk.source, lk.target) for lk in graph.links}
    assert ("GET /search/movie", "GET /movie/top_rated") not in pairs
    assert ("GET /movie/top_rated", "GET /movie/{movie_id}") in pairs
    assert graph.edits[-1] == {"op": "add", "source": "GET /movie/top_rated", "target": "GET /movie/{movie_id}",
                               "reason": "results[].id is a movie id"}
    plan = sample_plan(graph, 200, seed=3, mode_weights={"chain": 1})
    used = {(lk.source, lk.target) for e in plan for lk in e.links}
    assert used <= pairs and ("GET /movie/top_rated", "GET /movie/{movie_id}") in used
    added = next(lk for e in plan for lk in e.links if lk.source == "GET /movie/top_rated")
    assert added.reasons[0].rule == "manual"  # sampled links keep their reasons
    # the `sample` command reads the edited file
    assert run(["sample", str(path), "--n", "20", "--seed", "3", "--mode-weights", "chain=1"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {(lk["source"], lk["target"]) for e in lines for lk in e["links"]} <= pairs
    # a bad edit exits 2 with one line and leaves the file as it was
    before = path.read_text()
    assert run(["graph", "edit", str(path), "--drop", "c -> GET /movie/{movie_id}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown tool" not in err and "no link 'c'" in err
    assert path.read_text() == before
    assert run(["graph", "edit", str(path)]) == 2
    assert "nothing to edit" in capsys.readouterr().err


def test_cli_build_with_overrides_and_edit_to_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools = [{"type": "function", "function": {"name": "search_flights", "description": "Find flights.",
                                               "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
             {"type": "function", "function": {"name": "book_flight", "description": "Book a flight.", "parameters": {
                 "type": "object", "properties": {"flight_id": {"type": "string"}}, "required": ["flight_id"]}}},
             {"type": "function", "function": {"name": "send_email", "description": "Send an email.", "parameters": {
                 "type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}}]
    lib = tmp_path / "tools.json"
    lib.write_text(json.dumps(tools))
    fixes = tmp_path / "fixes.yaml"
    fixes.write_text("add:\n  - book_flight -> send_email\n")
    out = tmp_path / "graph.json"
    assert run(["graph", "build", str(lib), "--overrides", str(fixes), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [(lk["source"], lk["target"]) for lk in doc["links"]] == [("search_flights", "book_flight"),
                                                                   ("book_flight", "send_email")]
    assert doc["edits"] == [{"op": "add", "source": "book_flight", "target": "send_email"}]
    # a tool library is not edited in place: -o says where the graph goes
    assert run(["graph", "edit", str(lib), "--add", "send_email -> search_flights"]) == 2
    assert "pass -o" in capsys.readouterr().err
    out2 = tmp_path / "graph2.json"
    assert run(["graph", "edit", str(lib), "--add", "send_email -> search_flights", "-o", str(out2)]) == 0
    assert ("send_email", "search_flights") in {(lk.source, lk.target) for lk in load_graph(out2).links}
