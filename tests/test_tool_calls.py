"""Tool calling through every backend: the ToolSet checks, mock scripts, the OpenAI wire format against a
loopback fake, `taskbench serve` (with the official openai SDK as the client, streaming included), and the real
tiny GGUF model under a grammar."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from fault_server import FaultServer
from taskbench.errors import ConfigError
from taskbench.llm import get_model
from taskbench.llm.providers.llamacpp_tools import parse_tool_output, render_messages, tool_grammar
from taskbench.llm.providers.mock import tool_calls
from taskbench.llm.tools import ToolSet
from taskbench.schema import ToolCall, ToolMessage, ToolSpec, UserMessage

WEATHER = ToolSpec(name="get weather", description="Current weather in a city", parameters={
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["C", "F"]}},
    "required": ["city"], "additionalProperties": False})
SEARCH = ToolSpec(name="GET /search/person", description="Find people by name", parameters={
    "type": "object", "properties": {"query": {"type": "string"}, "page": {"type": "integer", "minimum": 1}},
    "required": ["query"]})
TOOLS = [WEATHER, SEARCH]


def _run(coro):
    return asyncio.run(coro)


# --------------------------------------------------------------------------------------------- ToolSet


def test_toolset_names_choices_and_checks():
    ts = ToolSet.build(TOOLS, "GET /search/person")
    assert ts.to_api == {"get weather": "get_weather", "GET /search/person": "GET_search_person"}
    assert ts.api_choice() == {"type": "function", "function": {"name": "GET_search_person"}}
    assert ToolSet.build(TOOLS, {"type": "function", "function": {"name": "get_weather"}}).choice == "get weather"
    with pytest.raises(ConfigError, match="did you mean 'get weather'"):
        ToolSet.build(TOOLS, "get wether")
    calls = ts.parse_calls([
        {"id": "a", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
        {"id": "b", "name": "GET /search/person", "arguments": '{"query": "Tom Hanks", "page": 0}'},
        {"id": "c", "name": "get_weather", "arguments": '{"city": "Oslo"'},
        {"id": "d", "name": "launch_missiles", "arguments": "{}"},
        {"id": "e", "name": "get_weather", "arguments": '["Oslo"]'},
        {"id": "f", "name": "get_weather", "arguments": '{"town": "Oslo"}'},
    ])
    assert calls[0].ok and calls[0].name == "get weather" and calls[0].arguments == {"city": "Oslo"}
    assert "page" in calls[1].error and "minimum" in calls[1].error
    assert "not valid JSON" in calls[2].error and calls[2].raw_arguments == '{"city": "Oslo"'
    assert "no tool named 'launch_missiles'" in calls[3].error
    assert "JSON object" in calls[4].error
    assert "city" in calls[5].error and "(and 1 more)" in calls[5].error
    cut = ts.parse_calls([{"name": "get_weather", "arguments": '{"city": "Os'}], truncated=True)
    assert "cut off at the token limit" in cut[0].error


# --------------------------------------------------------------------------------------------- mock


def test_mock_scripted_tool_calls_and_the_next_turn():
    model = get_model("mock/agent", responses=[
        tool_calls(("get weather", {"city": "Paris"})),
        "It is sunny in Paris.",
    ])
    first = _run(model.generate("weather in Paris?", tools=TOOLS, tool_choice="required"))
    assert [(c.name, c.arguments, c.ok) for c in first.tool_calls] == [("get weather", {"city": "Paris"}, True)]
    sent = model.provider.requests[0]
    assert [t["function"]["name"] for t in sent.tools] == ["get_weather", "GET_search_person"]
    assert sent.tool_choice == "required"
    history = [UserMessage(content="weather in Paris?"), first.message,
               ToolMessage(call_id=first.tool_calls[0].id, name="get weather", content='{"sky": "sunny"}')]
    second = _run(model.generate(history, tools=TOOLS))
    assert second.text == "It is sunny in Paris." and not second.tool_calls
    wire = model.provider.requests[1].messages
    assert wire[1]["tool_calls"][0]["function"]["name"] == "get_weather"  # history uses the API-safe name
    assert wire[2] == {"role": "tool", "tool_call_id": "call_0", "content": '{"sky": "sunny"}', "name": "get_weather"}


def test_a_malformed_scripted_call_comes_back_as_an_error_not_an_exception():
    model = get_model("mock/agent", responses=[tool_calls(("get weather", '{"city": 3}'))])
    out = _run(model.generate("x", tools=TOOLS))
    assert out.tool_calls[0].error and "is not of type 'string'" in out.tool_calls[0].error


def test_unused_script_steps_fail_the_test(pytester):
    pytester.makeconftest((__import__("pathlib").Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile("""
        import asyncio
        from taskbench.llm import get_model
        def test_leaves_a_step():
            m = get_model("mock/x", responses=["one", "two"])
            asyncio.run(m.generate("hi"))
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    assert "1 of 2 scripted responses unused" in result.stdout.str()


def test_tools_and_tool_choice_are_part_of_the_cache_key(tmp_path):
    model = get_model("mock/agent", responses=[tool_calls(("get weather", {"city": "Rome"})), "text"],
                      cache=tmp_path / "c.sqlite")
    a = _run(model.generate("q", tools=[WEATHER], tool_choice="required"))
    again = _run(model.generate("q", tools=[WEATHER], tool_choice="required"))
    assert again.usage.cached and again.tool_calls == a.tool_calls and again.latency == a.latency
    other = _run(model.generate("q", tools=[WEATHER], tool_choice="auto"))  # a different key: the script's 2nd step
    assert not other.usage.cached and other.text == "text"
    assert model.requests == 2


def test_schema_and_tools_together_is_a_config_error():
    model = get_model("mock/x")
    with pytest.raises(ConfigError, match="either a schema"):
        _run(model.generate("q", tools=TOOLS, schema={"type": "object"}))


# --------------------------------------------------------------------------------------------- OpenAI wire


def test_openai_compatible_tool_calls_against_a_loopback_fake():
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Lima", "unit": "C"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "GET_search_person", "arguments": "{\"query\": "}},
    ]
    server = FaultServer([("message", {"content": None, "tool_calls": calls}, "tool_calls")]).start()
    try:
        model = get_model("openai-compatible/m", base_url=server.base_url, cache=False, max_retries=0)

        async def go():
            try:
                return await model.generate("weather in Lima and find Tom", tools=TOOLS, tool_choice="auto")
            finally:
                await model.aclose()

        out = _run(go())
        body = server.requests[-1]
        assert body["tool_choice"] == "auto"
        assert [t["function"]["name"] for t in body["tools"]] == ["get_weather", "GET_search_person"]
        assert body["tools"][0]["function"]["parameters"] == WEATHER.parameters
        assert out.finish_reason == "tool_calls" and out.text == ""
        assert out.tool_calls[0] == ToolCall(id="call_a", name="get weather", arguments={"city": "Lima", "unit": "C"},
                                             raw_arguments='{"city": "Lima", "unit": "C"}')
        assert out.tool_calls[1].name == "GET /search/person" and "not valid JSON" in out.tool_calls[1].error
    finally:
        server.stop()


# --------------------------------------------------------------------------------------------- serve


@pytest.fixture()
def served_mock():
    pytest.importorskip("fastapi")
    from test_llm_serve import ServedModel

    def make(responses):
        model = get_model("mock/echo", responses=responses, cache=False)
        return ServedModel(model)

    return make


def test_serve_answers_tools_with_openai_shaped_tool_calls(served_mock):
    with served_mock([tool_calls(("get_weather", {"city": "Paris"})), "Sunny."]) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        tools = [WEATHER.to_openai("get_weather")]
        done = sdk.chat.completions.create(model="served", messages=[{"role": "user", "content": "weather?"}],
                                           tools=tools, tool_choice="required")
        choice = done.choices[0]
        assert choice.finish_reason == "tool_calls" and choice.message.content is None
        call = choice.message.tool_calls[0]
        assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
        follow = sdk.chat.completions.create(model="served", tools=tools, messages=[
            {"role": "user", "content": "weather?"},
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": '{"sky": "sunny"}'},
        ])
        assert follow.choices[0].message.content == "Sunny." and follow.choices[0].finish_reason == "stop"
        sent = srv.model.provider.requests[-1].messages
        assert sent[1]["tool_calls"][0]["function"]["name"] == "get_weather" and sent[2]["role"] == "tool"
        sdk.close()


def test_serve_streams_text_tool_calls_and_usage(served_mock):
    with served_mock(["streamed answer", tool_calls(("get_weather", {"city": "Oslo"}))]) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        chunks = list(sdk.chat.completions.create(model="served", messages=[{"role": "user", "content": "hi"}],
                                                  stream=True, stream_options={"include_usage": True}))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "streamed answer"
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 2
        chunks = list(sdk.chat.completions.create(model="served", messages=[{"role": "user", "content": "w"}],
                                                  tools=[WEATHER.to_openai("get_weather")], stream=True))
        deltas = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
        assert deltas[0].function.name == "get_weather" and json.loads(deltas[0].function.arguments) == {"city": "Oslo"}
        assert chunks[-1].choices[0].finish_reason == "tool_calls"
        sdk.close()


# --------------------------------------------------------------------------------------------- llama.cpp


def test_tool_grammar_and_parsing_are_pure():
    api = ToolSet.build(TOOLS).api_tools()
    grammar = tool_grammar(api, "required")
    assert grammar.startswith('root ::= "<tool_call>\\n" tool-call "\\n</tool_call>"')
    assert '\\"get_weather\\"' in grammar and '\\"GET_search_person\\"' in grammar
    assert "free-text" in tool_grammar(api, "auto")
    named = tool_grammar(api, {"type": "function", "function": {"name": "get_weather"}})
    assert "GET_search_person" not in named
    text, calls = parse_tool_output('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>')
    assert text == "" and calls == [{"id": "call_0", "name": "get_weather", "arguments": '{"city": "Rome"}'}]
    _, cut = parse_tool_output('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Ro')
    assert cut[0]["name"] == "get_weather" and cut[0]["arguments"] == '{"city": "Ro'
    assert parse_tool_output("plain answer") == ("plain answer", [])


def test_templates_without_tools_get_them_described():
    history = [{"role": "user", "content": "w?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "X"}'}}]},
               {"role": "tool", "tool_call_id": "c", "content": "sunny"}]
    api = ToolSet.build([WEATHER]).api_tools()
    msgs, tools = render_messages(history, api, native=False)
    assert tools is None and msgs[0]["role"] == "system" and "get_weather" in msgs[0]["content"]
    assert msgs[2]["content"] == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "X"}}\n</tool_call>'
    assert msgs[3] == {"role": "user", "content": "<tool_response>\nsunny\n</tool_response>"}
    native, tools = render_messages(history, api, native=True)
    assert tools == api and native[1]["tool_calls"][0]["function"]["arguments"] == {"city": "X"}


PROMPTS = [
    "What's the weather in Paris?", "Is it cold in Oslo right now, in Fahrenheit?", "Find the actor Tom Hanks.",
    "Look up Sofia Coppola.", "Weather for Tokyo please", "Who is Meryl Streep? search for her",
    "Should I take an umbrella in London?", "Search people named Jackie Chan, page 2", "Temperature in Cairo in C",
    "find person: Keanu Reeves", "How hot is it in Phoenix?", "Give me the weather of Sydney",
    "I need info on the director Christopher Nolan", "rain in Seattle?", "Find Scarlett Johansson",
    "weather Berlin", "Search the person called Morgan Freeman", "Is it snowing in Moscow?",
    "Look up the actress Emma Stone", "Current conditions in Mumbai, Fahrenheit", "Search for Denzel Washington",
    "What is the weather like in Rio?",
]


@pytest.mark.slow
@pytest.mark.model
def test_the_real_tiny_model_never_emits_a_malformed_call():
    pytest.importorskip("llama_cpp")
    model = get_model("llamacpp/smollm2-135m", cache=False, max_tokens=64)
    try:
        made = 0
        for i, prompt in enumerate(PROMPTS):
            choice = ["required", "get weather", "GET /search/person"][i % 3]
            out = model.generate_sync(prompt, tools=TOOLS, tool_choice=choice)
            assert out.finish_reason in ("tool_calls", "length"), out
            if out.finish_reason == "length":
                continue
            assert len(out.tool_calls) == 1
            call = out.tool_calls[0]
            assert call.ok, (prompt, call)
            if choice != "required":
                assert call.name == choice
            made += 1
        assert made >= 20
    finally:
        model.close()


@pytest.mark.slow
@pytest.mark.model
def test_the_real_tiny_model_calls_tools_through_serve_and_the_sdk():
    pytest.importorskip("llama_cpp")
    pytest.importorskip("fastapi")
    from test_llm_serve import ServedModel

    model = get_model("llamacpp/smollm2-135m", cache=False, max_tokens=96)
    with ServedModel(model) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        done = sdk.chat.completions.create(model="served", messages=[{"role": "user", "content": "weather in Rome"}],
                                           tools=[WEATHER.to_openai("get_weather")], tool_choice="required")
        call = done.choices[0].message.tool_calls[0]
        assert call.function.name == "get_weather" and "city" in json.loads(call.function.arguments)
        # a structured answer cut at max_tokens says "length"; one that says "stop" is complete JSON
        schema = {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}}},
                  "required": ["steps"]}
        fmt = {"type": "json_schema", "json_schema": {"name": "plan", "schema": schema}}
        cut = sdk.chat.completions.create(model="served", messages=[{"role": "user", "content": "List 50 steps"}],
                                          response_format=fmt, max_tokens=8)
        assert cut.choices[0].finish_reason == "length"
        full = sdk.chat.completions.create(model="served", messages=[{"role": "user", "content": "List 2 steps"}],
                                           response_format=fmt, max_tokens=300)
        if full.choices[0].finish_reason == "stop":
            assert isinstance(json.loads(full.choices[0].message.content)["steps"], list)
        streamed = sdk.chat.completions.create(model="served", messages=[{"role": "user", "content": "List 2 steps"}],
                                               response_format=fmt, max_tokens=300, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        assert text == full.choices[0].message.content
        sdk.close()
