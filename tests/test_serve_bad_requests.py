"""`serve` answers every bad request with an OpenAI-shaped 4xx and keeps serving (issue 24.9): range checks,
tool_choice and tools checked before an answer starts (streamed or not), malformed history, unknown routes."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from taskbench.llm import get_model  # noqa: E402
from taskbench.llm.server import create_app  # noqa: E402

HI = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture
def client() -> Any:
    app = create_app(get_model("mock/echo", cache=False), served_name="echo")
    with TestClient(app) as c:
        yield c


def _shaped(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) >= {"message", "type", "param", "code"} and err["message"]
    return err


def _deep_parameters(levels: int) -> dict[str, Any]:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        deep = {"type": "object", "properties": {"a": deep}}
    return deep


BAD = [
    {"tools": [{"type": "function", "function": {"name": "deep", "parameters": _deep_parameters(300)}}]},
    {"tools": [{"type": "function", "function": {"name": "p", "parameters": "object"}}]},
    {"max_tokens": -1}, {"max_tokens": 0}, {"max_completion_tokens": -5}, {"temperature": -1}, {"temperature": 3},
    {"top_p": 2}, {"top_p": -0.1}, {"n": 0},
    {"tool_choice": "required"},  # no tools
    {"tool_choice": "bogus", "tools": [TOOL]},
    {"tool_choice": {"type": "function", "function": {"name": "nope"}}, "tools": [TOOL]},
    {"tools": [{"type": "objekt"}]},
    {"tools": [{"type": "function", "function": {"parameters": {}}}]},  # no name
    {"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": 1}]}]},
    {"messages": [{"role": "assistant", "content": None, "tool_calls": "x"}]},
    {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "objekt"}}}},
    {"guided_json": {"type": "object", "properties": {"a": {"minLength": "five"}}}},
    {"messages": [{"role": "assistant", "content": None,
                   "tool_calls": [{"id": "a", "type": "function", "function": {"name": 5, "arguments": {}}}]}]},
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("extra", BAD)
def test_a_bad_request_is_an_openai_shaped_400_streamed_or_not(client: Any, extra: dict[str, Any],
                                                               stream: bool) -> None:
    body = {"model": "echo", "messages": HI, **extra, "stream": stream}
    err = _shaped(client.post("/v1/chat/completions", json=body), 400)
    assert err["type"] == "invalid_request_error"
    ok = client.post("/v1/chat/completions", json={"model": "echo", "messages": HI})
    assert ok.status_code == 200  # and it keeps serving


def test_nan_temperature_is_refused(client: Any) -> None:
    r = client.post("/v1/chat/completions", content=b'{"model":"echo","messages":[{"role":"user","content":"x"}],'
                    b'"temperature":NaN}', headers={"content-type": "application/json"})
    _shaped(r, 400)


def test_unknown_routes_and_methods_are_openai_shaped(client: Any) -> None:
    err = _shaped(client.get("/nope"), 404)
    assert err["type"] == "invalid_request_error"
    _shaped(client.delete("/v1/chat/completions"), 405)


def test_a_good_request_with_tools_still_works(client: Any) -> None:
    for choice in ("auto", "none", "required", {"type": "function", "function": {"name": "lookup"}}):
        r = client.post("/v1/chat/completions", json={"model": "echo", "messages": HI, "tools": [TOOL],
                                                      "tool_choice": choice})
        assert r.status_code == 200, (choice, r.text)


def test_serve_help_says_streaming_is_served(capsys: Any) -> None:
    from cli_runner import run

    code, out, _ = run(capsys, "serve", "--help")
    text = " ".join(out.split())
    assert code == 0 and "stream=true answers with server-sent events" in text and "refus" not in text.lower()


@pytest.mark.parametrize("extra", [{"max_tokens": 1e40}, {"max_tokens": 10**40}, {"temperature": float("inf")}])
def test_absurd_numbers_are_refused(client: Any, extra: dict[str, Any]) -> None:
    import json as _json

    body = _json.dumps({"model": "echo", "messages": HI, **extra})
    _shaped(client.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"}), 400)


def test_a_lone_surrogate_in_the_request_is_answered(client: Any) -> None:
    body = '{"model": "echo", "messages": [{"role": "user", "content": "caption a\\ud800.png"}]}'
    r = client.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code in (200, 400), r.text
    if r.status_code == 400:
        _shaped(r, 400)


def test_a_lone_surrogate_in_a_streamed_request_is_answered(client: Any) -> None:
    body = '{"model": "echo", "stream": true, "messages": [{"role": "user", "content": "caption a\\ud800.png"}]}'
    r = client.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.text.rstrip().endswith("data: [DONE]"), r.text
