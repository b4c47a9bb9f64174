"""Typed messages, tool specs from every loader, and trajectories that read back equal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskbench.dataset import TrajectoryWriter, read_trajectory
from taskbench.graph.loaders import load_tools
from taskbench.schema import (
    AssistantMessage,
    CheckResult,
    CodeError,
    CodeRunEvent,
    FinalAnswerEvent,
    ModelCallEvent,
    ReviewEvent,
    SystemMessage,
    Tool,
    ToolCall,
    ToolCallEvent,
    ToolMessage,
    ToolResult,
    ToolSpec,
    Trajectory,
    Usage,
    UserMessage,
    api_names,
    parse_messages,
    to_openai_messages,
)


def test_api_names_are_safe_unique_and_stable():
    names = api_names(["Image Downloader", "GET /search/person", "get_weather", "a b", "a-b", "a_b"])
    assert names[:3] == ["Image_Downloader", "GET_search_person", "get_weather"]
    assert len(set(names)) == len(names)
    assert all(len(n) <= 64 and n.replace("_", "").replace("-", "").isalnum() for n in names)


def test_python_names_are_identifiers_unique_and_stable():
    from taskbench.schema import python_names

    names = python_names(["Image Downloader", "GET /search/person", "Text-to-Audio", "a-b", "a_b", "3D Render",
                          "class", "call_tool"])
    assert names[:3] == ["Image_Downloader", "GET_search_person", "Text_to_Audio"]
    assert names[3:] == ["a_b", "a_b_2", "_3D_Render", "class_", "call_tool_"]
    assert all(n.isidentifier() for n in names) and len(set(names)) == len(names)


def test_messages_round_trip_through_the_openai_format():
    call = ToolCall(id="c1", name="Image Downloader", arguments={"url": "http://x/a.png"})
    msgs = [
        SystemMessage(content="be brief"),
        UserMessage(content="get it"),
        AssistantMessage(content=None, tool_calls=[call]),
        ToolMessage(call_id="c1", name="Image Downloader", content='{"image": "a.png"}'),
    ]
    names = {"Image Downloader": "Image_Downloader"}
    wire = to_openai_messages(msgs, names)
    assert wire[2]["tool_calls"][0]["function"] == {"name": "Image_Downloader", "arguments": '{"url": "http://x/a.png"}'}
    assert wire[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"image": "a.png"}', "name": "Image_Downloader"}
    back = parse_messages(wire, {v: k for k, v in names.items()})
    assert back[2].tool_calls[0].name == "Image Downloader"
    assert back[2].tool_calls[0].arguments == call.arguments
    assert [type(m) for m in back] == [type(m) for m in msgs]


def test_bad_arguments_in_history_become_a_call_error():
    back = parse_messages([{"role": "assistant", "content": None,
                            "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{not json"}}]}])
    assert back[0].tool_calls[0].error and back[0].tool_calls[0].raw_arguments == "{not json"


def test_tool_result_text():
    assert ToolResult(call_id="1", name="f", content={"a": 1}).text() == '{"a": 1}'
    assert ToolResult(call_id="1", name="f", error="404 not found").text() == "error: 404 not found"


def test_taskbench_tools_become_specs():
    typed = Tool.model_validate({"id": "Image Editing", "desc": "edit", "input-type": ["image", "text"],
                                 "output-type": ["image"]})
    spec = typed.spec()
    assert spec.parameters["properties"].keys() == {"image", "text"} and spec.parameters["required"] == ["image", "text"]
    assert spec.input_types == ["image", "text"] and spec.source == "taskbench"
    api = Tool.model_validate({"id": "get_weather", "desc": "w", "parameters": [
        {"name": "location", "type": "string", "desc": "city"}, {"name": "days", "type": "integer", "desc": "n"}]})
    assert api.spec().parameters["properties"]["days"] == {"type": "integer", "description": "n"}


def test_openai_and_mcp_schemas_are_kept_raw(tmp_path: Path):
    schema = {"type": "object", "properties": {"q": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
              "required": ["q"], "additionalProperties": False}
    (tmp_path / "oa.json").write_text(json.dumps([{"type": "function", "function": {
        "name": "search", "description": "s", "parameters": schema}}]))
    lib = load_tools(tmp_path / "oa.json")
    assert lib.tools[0].spec().parameters == schema and lib.tools[0].source == "openai"
    out = {"type": "object", "properties": {"hits": {"type": "integer"}}}
    (tmp_path / "mcp.json").write_text(json.dumps({"tools": [{"name": "count", "inputSchema": schema,
                                                             "outputSchema": out}]}))
    spec = load_tools(tmp_path / "mcp.json").tools[0].spec()
    assert spec.parameters == schema and spec.output_schema == out and spec.source == "mcp"
    # the library written as tool_desc.json reads back without loss
    lib2 = load_tools(tmp_path / "mcp.json")
    (tmp_path / "tool_desc.json").write_text(json.dumps(lib2.to_taskbench()))
    again = load_tools(tmp_path / "tool_desc.json")
    assert again.tools[0].spec() == spec


def test_openapi_operations_keep_method_route_locations_body_and_response(tmp_path: Path):
    doc = {
        "openapi": "3.0.0", "servers": [{"url": "https://api.example.com/v1"}],
        "components": {"schemas": {"Track": {"type": "object", "properties": {"id": {"type": "string"},
                                                                            "next": {"$ref": "#/components/schemas/Track"}}}}},
        "paths": {"/playlists/{playlist_id}/tracks": {
            "parameters": [{"name": "playlist_id", "in": "path", "schema": {"type": "string"}}],
            "post": {"operationId": "add-tracks", "summary": "Add tracks",
                     "parameters": [{"name": "position", "in": "query", "schema": {"type": "integer"}},
                                    {"name": "X-Trace", "in": "header", "required": True, "schema": {"type": "string"}}],
                     "requestBody": {"required": True, "content": {"application/json": {"schema": {
                         "type": "object", "required": ["uris"],
                         "properties": {"uris": {"type": "array", "items": {"type": "string"}}}}}}},
                     "responses": {"201": {"description": "ok", "content": {"application/json": {
                         "schema": {"$ref": "#/components/schemas/Track"}, "example": {"id": "t1"}}}}}}}},
    }
    (tmp_path / "api.json").write_text(json.dumps(doc))
    tool = load_tools(tmp_path / "api.json").tools[0]
    http = tool.http
    assert (http.method, http.path, http.server) == ("POST", "/playlists/{playlist_id}/tracks", "https://api.example.com/v1")
    assert [(p.name, p.location, p.required) for p in http.parameters] == [
        ("playlist_id", "path", True), ("position", "query", False), ("X-Trace", "header", True), ("uris", "body", True)]
    assert http.request_body["required"] == ["uris"] and http.body_required and http.content_type == "application/json"
    assert http.response_schema["properties"]["id"] == {"type": "string"}
    assert http.response_schema["properties"]["next"] == {}  # the cycle is cut where it would repeat
    assert http.response_example == {"id": "t1"}
    assert tool.spec().parameters["required"] == ["playlist_id", "X-Trace", "uris"]
    assert tool.spec().parameters["properties"]["uris"] == {"type": "array", "items": {"type": "string"}}


def test_restbench_specs_keep_http(shared: Path):
    tmdb = load_tools(shared / "reference/restbench/tmdb_oas.json", openapi_ids="path")
    person = tmdb.get("GET /search/person")
    assert person.http.parameter("query").location == "query"
    assert "results" in person.output_schema["properties"]
    credits = tmdb.get("GET /person/{person_id}/movie_credits")
    assert credits.http.parameter("person_id").required
    spotify = load_tools(shared / "reference/restbench/spotify_oas.json")
    methods = sorted({t.http.method for t in spotify.tools})
    assert methods == ["DELETE", "GET", "POST", "PUT"]


def _trajectory() -> Trajectory:
    return Trajectory(id="t1", task="find the director of Titanic", env="restbench-tmdb", agent="react",
                      models={"react": "mock/x"}, seed=3,
                      tools=[ToolSpec(name="GET /search/movie", parameters={"type": "object"})],
                      gold_path=["GET /search/movie", "GET /movie/{movie_id}/credits"])


def test_trajectory_written_event_by_event_reads_back_equal(tmp_path: Path):
    ticks = iter(range(100))
    path = tmp_path / "t1.jsonl"
    writer = TrajectoryWriter(path, _trajectory(), clock=lambda: float(next(ticks)))
    call = ToolCall(id="c0", name="GET /search/movie", arguments={"query": "Titanic"})
    writer.add(ModelCallEvent(role="react", model="mock/x", messages=[UserMessage(content="find")],
                              output=AssistantMessage(tool_calls=[call]), usage=Usage(prompt_tokens=5,
                              completion_tokens=3, seconds=0.5), latency=0.5, finish_reason="tool_calls"))
    writer.add(ToolCallEvent(role="react", call=call, result=ToolResult(call_id="c0", name=call.name,
                                                                           content={"results": [{"id": 597}]})))
    writer.add(CodeRunEvent(code="x = 1/0", error=CodeError(type="ZeroDivisionError", message="division by zero",
                                                            line=1), tool_calls=["GET /movie/{movie_id}/credits"]))
    writer.add(ReviewEvent(target="execution", verdict="revise", feedback="divide by something else", route="execution"))
    writer.add(FinalAnswerEvent(role="react", answer="James Cameron"))
    writer.trajectory.answer = "James Cameron"
    writer.trajectory.outcome = CheckResult(success=True, reason="ok", calls=["GET /search/movie"])
    done = writer.finish("complete")
    back = read_trajectory(path)
    assert back == done
    assert back.totals.model_calls == 1 and back.totals.tool_calls == 2 and back.totals.turns == 1
    assert back.called_tools() == ["GET /search/movie", "GET /movie/{movie_id}/credits"]
    assert [e.t for e in back.events] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_killed_trajectory_reads_back_interrupted_with_its_events(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path, _trajectory())
    writer.add(FinalAnswerEvent(answer="x"))
    writer.close()
    with path.open("ab") as fh:  # a kill inside a write leaves a torn line
        fh.write(b'{"record": "event", "kind": "tool_')
    back = read_trajectory(path)
    assert back.status == "interrupted" and len(back.events) == 1


def test_a_bad_trajectory_line_names_file_and_line(tmp_path: Path):
    from taskbench.errors import InputError

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"record": "header", "id": "x", "task": "y"}) + "\n"
                    + json.dumps({"record": "event", "kind": "nope"}) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        read_trajectory(path)


def test_prediction_keeps_finish_reason_reformat_raw_and_failed_on_a_round_trip():
    from taskbench.schema import Prediction

    p = Prediction(id="7", result=None, error="x", raw="r", finish_reason="length", reformat_raw="fixed?", failed=True,
                   usage=Usage(prompt_tokens=1, completion_tokens=2, seconds=0.5))
    rec = p.to_record()
    assert rec["finish_reason"] == "length" and rec["reformat_raw"] == "fixed?" and rec["failed"] is True
    assert Prediction.model_validate(json.loads(json.dumps(rec))) == p


def test_a_scripted_two_tool_episode_is_written_and_reads_back_equal(tmp_path: Path):
    """A mock model calls two tools of a toy environment, then answers; every step goes to the trajectory."""
    import asyncio

    from taskbench.envs import Environment
    from taskbench.llm import get_model
    from taskbench.llm.providers.mock import tool_calls

    class Toy(Environment):
        name = "toy"

        def tools(self):
            return [ToolSpec(name="search", parameters={"type": "object", "properties": {"q": {"type": "string"}},
                                                        "required": ["q"]}),
                    ToolSpec(name="details", parameters={"type": "object", "properties": {"id": {"type": "integer"}},
                                                         "required": ["id"]})]

        async def _execute(self, call):
            if call.name == "search":
                return ToolResult(call_id=call.id, name=call.name, content={"results": [{"id": 597}]})
            return ToolResult(call_id=call.id, name=call.name, content={"director": "James Cameron"})

    model = get_model("mock/agent", responses=[tool_calls(("search", {"q": "Titanic"})),
                                               tool_calls(("details", {"id": 597})), "James Cameron"])
    env = Toy()
    ticks = iter(range(1000))
    path = tmp_path / "t.jsonl"

    async def episode():
        await env.reset(0)
        writer = TrajectoryWriter(path, Trajectory(id="q1", task="Who directed Titanic?", env="toy", agent="test",
                                                   tools=env.tools()), clock=lambda: float(next(ticks)))
        messages: list = [UserMessage(content="Who directed Titanic?")]
        for _ in range(5):
            out = await model.generate(messages, tools=env.tools())
            writer.add(ModelCallEvent(role="react", model=model.name, messages=list(messages), output=out.message,
                                      usage=out.usage, latency=out.latency, finish_reason=out.finish_reason))
            messages.append(out.message)
            if not out.tool_calls:
                writer.add(FinalAnswerEvent(role="react", answer=out.text))
                writer.trajectory.answer = out.text
                break
            for call in out.tool_calls:
                result = await env.call(call)
                writer.add(ToolCallEvent(role="react", call=call, result=result))
                messages.append(ToolMessage.from_result(result))
        return writer.finish()

    done = asyncio.run(episode())
    back = read_trajectory(path)
    assert back == done
    assert back.called_tools() == ["search", "details"] and [c.name for c in env.calls] == ["search", "details"]
    assert back.answer == "James Cameron" and back.totals.model_calls == 3 and back.totals.tool_calls == 2
