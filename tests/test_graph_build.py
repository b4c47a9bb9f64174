"""Tool graph build rules, parity with the released graph_desc.json files, validation, stats, CLI build/stats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskbench.cli.main import main
from taskbench.errors import InputError
from taskbench.graph import build_graph, graph_from_path, graph_stats, load_graph, load_tools, validate_graph
from taskbench.schema import Tool, ToolGraph, ToolLibrary, ToolLink

EXPECTED = {"huggingface": (23, 225), "multimedia": (40, 449), "dailylifeapis": (40, 1560)}


def typed(tid: str, ins: list[str], outs: list[str]) -> Tool:
    return Tool.model_validate({"id": tid, "desc": tid, "input-type": ins, "output-type": outs})


@pytest.mark.parametrize("domain", sorted(EXPECTED))
def test_build_reproduces_reference_graph_exactly(reference_dir: Path, domain: str) -> None:
    ref = json.loads((reference_dir / domain / "graph_desc.json").read_text())
    graph = build_graph(load_tools(reference_dir / domain / "tool_desc.json"))
    assert (len(graph.nodes), len(graph.links)) == EXPECTED[domain]
    mine = [(lk.source, lk.target, lk.type) for lk in graph.links]
    theirs = [(lk["source"], lk["target"], lk["type"]) for lk in ref["links"]]
    assert set(mine) == set(theirs)  # the link set, with types
    assert mine == theirs  # and even the order (source-major, library order)
    assert graph.to_taskbench()["nodes"] == ref["nodes"]


@pytest.mark.parametrize("domain", sorted(EXPECTED))
def test_reference_graph_files_validate(reference_dir: Path, domain: str) -> None:
    graph = load_graph(reference_dir / domain / "graph_desc.json")
    assert validate_graph(graph) is graph
    assert graph_from_path(reference_dir / domain).links == graph.links


def test_resource_rule_on_a_small_library() -> None:
    lib = ToolLibrary(
        tools=[typed("dl", ["url"], ["image"]), typed("cap", ["image"], ["text"]), typed("tts", ["text"], ["audio"]),
               typed("both", ["text", "image"], ["image", "text"]), typed("sink", ["audio"], [])],
        dependency="resource",
    )
    graph = build_graph(lib)
    got = {(lk.source, lk.target): lk.type for lk in graph.links}
    assert got == {
        ("dl", "cap"): "image", ("dl", "both"): "image",
        ("cap", "tts"): "text", ("cap", "both"): "text",
        ("tts", "sink"): "audio",
        # several shared types: the first in the source's output-type order
        ("both", "cap"): "image", ("both", "tts"): "text",
    }
    assert ("both", "both") not in got  # no self links
    assert graph.dependency == "resource"
    validate_graph(graph)


def test_temporal_rule_and_override() -> None:
    lib = ToolLibrary(tools=[typed("a", ["x"], ["y"]), typed("b", ["y"], ["z"]), typed("c", [], [])], dependency="resource")
    graph = build_graph(lib, "temporal")
    assert graph.dependency == "temporal" and len(graph.links) == 6
    assert {lk.type for lk in graph.links} == {"complete"}
    assert {(lk.source, lk.target) for lk in graph.links} == {(a, b) for a in "abc" for b in "abc" if a != b}
    assert len(build_graph(lib).links) == 1
    with pytest.raises(InputError, match="unknown dependency kind"):
        build_graph(lib, "causal")


def test_validate_graph_reports_problems() -> None:
    tools = [typed("a", ["x"], ["y"]), typed("b", ["y"], ["z"])]
    ok = ToolGraph(nodes=tools, links=[ToolLink(source="a", target="b", type="y")], dependency="resource")
    validate_graph(ok)
    for links, words in [
        ([ToolLink(source="a", target="c", type="y")], "'c' is not a tool"),
        ([ToolLink(source="b", target="a", type="z")], "does not take 'z'"),
        ([ToolLink(source="a", target="b", type="q")], "no tool produces"),
    ]:
        with pytest.raises(InputError, match=words):
            validate_graph(ToolGraph(nodes=tools, links=links, dependency="resource"))
    with pytest.raises(InputError, match="no nodes"):
        validate_graph(ToolGraph(nodes=[], links=[]))


def test_stats_on_a_small_graph() -> None:
    lib = ToolLibrary(
        tools=[typed("dl", ["url"], ["image"]), typed("cap", ["image"], ["text"]), typed("tts", ["text"], ["audio"]),
               typed("lonely", ["video"], ["video"])],
        dependency="resource",
    )
    st = graph_stats(build_graph(lib))
    assert (st.nodes, st.links) == (4, 2)
    assert st.density == pytest.approx(2 / 12)
    assert (st.in_degree.min, st.in_degree.max, st.in_degree.mean) == (0, 1, 0.5)
    assert st.out_degree.top[0] == ("cap", 1)
    assert st.link_types == {"image": 1, "text": 1}
    assert st.components == 2 and st.component_sizes == [3, 1] and st.isolated == ["lonely"]
    assert st.unproduced_input_types == ["url"]
    assert st.unconsumed_output_types == ["audio"]


def test_stats_of_reference_graphs(reference_dir: Path) -> None:
    hf = graph_stats(load_graph(reference_dir / "huggingface" / "graph_desc.json"))
    assert (hf.nodes, hf.links, hf.components) == (23, 225, 1)
    assert sum(hf.link_types.values()) == 225
    daily = graph_stats(load_graph(reference_dir / "dailylifeapis" / "graph_desc.json"))
    assert daily.density == 1.0 and daily.in_degree.min == daily.in_degree.max == 39
    assert daily.link_types == {"complete": 1560} and daily.unproduced_input_types == []


def test_openapi_library_gets_inferred_links_unless_the_rules_are_asked_for(shared: Path) -> None:
    spec = shared / "reference" / "restbench" / "tmdb_oas.json"
    complete = graph_from_path(spec, infer="rules")
    assert complete.dependency == "temporal" and len(complete.links) == 54 * 53
    assert len(graph_from_path(spec, dependency="temporal").links) == 54 * 53  # an explicit rule wins
    inferred = graph_from_path(spec)  # auto: OpenAPI operations get links inferred from their schemas
    assert inferred.dependency == "temporal" and inferred.inferred == "schema"
    assert 0 < len(inferred.links) < 0.3 * 54 * 53
    assert {lk.type for lk in inferred.links} <= {"data", "state"} and all(lk.reasons for lk in inferred.links)


# ------------------------------------------------------------------------------------------ CLI


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_build_writes_the_reference_graph(reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "graph_desc.json"
    code, _, err = run(["graph", "build", str(reference_dir / "multimedia" / "tool_desc.json"), "-o", str(out)], capsys)
    assert code == 0 and "449 links" in err
    assert json.loads(out.read_text()) == json.loads((reference_dir / "multimedia" / "graph_desc.json").read_text())


def test_cli_build_records_an_overridden_dependency(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = tmp_path / "tool_desc.json"
    lib.write_text(json.dumps({"nodes": [{"id": "a", "input-type": ["x"], "output-type": ["y"]},
                                         {"id": "b", "input-type": ["y"], "output-type": ["x"]}]}))
    code, out, _ = run(["graph", "build", str(lib), "--dependency", "temporal"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["dependency"] == "temporal" and len(doc["links"]) == 2
    (tmp_path / "graph_desc.json").write_text(out)
    assert load_graph(tmp_path / "graph_desc.json").dependency == "temporal"  # round trip validates
    code, out, _ = run(["graph", "build", str(lib)], capsys)
    assert code == 0 and "dependency" not in json.loads(out)


def test_cli_build_other_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in "xyz"]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    code, out, _ = run(["graph", "build", str(path), "--format", "openai", "--infer", "rules"], capsys)
    doc = json.loads(out)
    assert code == 0 and [n["id"] for n in doc["nodes"]] == ["x", "y", "z"] and len(doc["links"]) == 6
    # by default their links are inferred: tools that take and return nothing feed nothing
    code, out, _ = run(["graph", "build", str(path), "--format", "openai"], capsys)
    doc = json.loads(out)
    assert code == 0 and len(doc["nodes"]) == 3 and doc["links"] == [] and doc["inferred"] == "schema"


def test_cli_stats_table_and_json(reference_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["graph", "stats", str(reference_dir / "huggingface")], capsys)
    assert code == 0
    for words in ("tools", "23", "225", "density", "0.445", "text: 174", "weakly connected components"):
        assert words in out
    code, out, _ = run(["graph", "stats", str(reference_dir / "multimedia" / "tool_desc.json"), "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["links"] == 449 and doc["unconsumed_output_types"] == ["Image"]


def test_cli_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["graph", "build", "--help"], ["graph", "edit", "--help"], ["graph", "stats", "--help"],
                 ["graph", "show", "--help"], ["sample", "--help"]):
        code, out, _ = run(argv, capsys)
        assert code == 0 and "Example" in out and "taskbench " + " ".join(argv[:-1]) in out


def test_graph_show_titles_the_page_after_the_file_not_its_folder(tmp_path: Path, capsys) -> None:
    """`graph show specs/petstore.json` was titled 'specs' (the parent folder); a dataset's graph_desc.json is
    still titled after its folder."""
    tools = [{"name": n, "description": n, "parameters": {"type": "object", "properties": {}}} for n in ("a", "b")]
    spec = tmp_path / "specs" / "petstore.json"
    spec.parent.mkdir()
    spec.write_text(json.dumps({"tools": tools}))
    code, _, err = run(["graph", "show", str(spec), "-o", str(tmp_path / "p.html"), "--infer", "rules"], capsys)
    assert code == 0, err
    page = (tmp_path / "p.html").read_text()
    assert "<title>petstore</title>" in page and "<title>specs" not in page
    data = tmp_path / "multimedia"
    data.mkdir()
    nodes = {"nodes": [{"id": "a", "desc": "a", "input-type": [], "output-type": []}], "links": []}
    (data / "graph_desc.json").write_text(json.dumps(nodes))
    code, _, err = run(["graph", "show", str(data / "graph_desc.json"), "-o", str(tmp_path / "m.html")], capsys)
    assert code == 0, err
    assert "<title>multimedia</title>" in (tmp_path / "m.html").read_text()
