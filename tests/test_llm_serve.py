"""Real HTTP end to end: the openai-compatible provider against `taskbench serve` on loopback.

The served model is the scripted mock in the fast tests and the real tiny GGUF model (SmolLM2-135M through the
llamacpp provider) in the slow one.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest

from taskbench.llm import get_model, task_graph_schema
from taskbench.schema import TaskGraph, Tool, ToolLibrary
from tiny_model import tiny_model_missing

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

LIBRARY = ToolLibrary(
    tools=[
        Tool(id="Image Captioning", desc="Describe an image", **{"input-type": ["image"], "output-type": ["text"]}),
        Tool(id="Text-to-Speech", desc="Read text aloud", **{"input-type": ["text"], "output-type": ["audio"]}),
        Tool(id="Translation", desc="Translate text", **{"input-type": ["text"], "output-type": ["text"]}),
    ],
    dependency="resource",
)


class ServedModel:
    """A taskbench Model behind `create_app`, served by uvicorn on a free loopback port in a thread."""

    def __init__(self, model) -> None:
        from taskbench.llm.server import create_app

        self.model = model
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(create_app(model, served_name="served"), log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ServedModel:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


def _client(base_url: str, **options):
    return get_model("openai-compatible/served", base_url=base_url, cache=False, max_retries=0, **options)


def _ask(client, prompt, **kw):
    async def main():
        try:
            return await client.generate(prompt, **kw)
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_openai_compatible_against_served_mock_with_json_schema():
    served = get_model("mock/echo", cache=False)
    schema = task_graph_schema(LIBRARY)
    with ServedModel(served) as srv:
        out = _ask(_client(srv.base_url), "Describe photo.jpg and read it aloud", schema=schema)
        sent = served.provider.requests[-1]
        assert sent.json_schema == schema and sent.schema_name == "TaskGraph"  # constraint reached the model
        assert out.parse_error is None
        graph = TaskGraph.model_validate(out.parsed)
        assert graph.task_nodes[0].task in LIBRARY.names
        assert out.usage.prompt_tokens == 6 and out.usage.completion_tokens == len(out.text.split())  # over HTTP
        # plain text and json_object
        text = _ask(_client(srv.base_url), "hello there")
        assert text.text == "hello there" and text.parsed is None
        assert served.provider.requests[-1].json_schema is None
        jo = _ask(_client(srv.base_url, guided_decoding="json_object"), "x", schema={"type": "object"})
        assert served.provider.requests[-1].json_schema == {"type": "object"} and jo.parsed == {}
        # vLLM-style guided_json is understood too
        _ask(_client(srv.base_url, guided_decoding="vllm"), "x", schema=schema)
        assert served.provider.requests[-1].json_schema == schema


def test_served_api_shapes_and_rejections():
    served = get_model("mock/echo", cache=False, temperature=0.0)
    with ServedModel(served) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        assert [m.id for m in sdk.models.list().data] == ["served"]
        done = sdk.chat.completions.create(
            model="served",
            messages=[{"role": "user", "content": [{"type": "text", "text": "parts "}, {"type": "text", "text": "ok"}]}],
            temperature=0.4,
            max_tokens=33,
            seed=3,
            stop=["END"],
        )
        assert done.choices[0].message.content == "parts ok" and done.model == "served"
        assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
        cfg = served.provider.requests[-1].config
        assert (cfg.temperature, cfg.max_tokens, cfg.seed, cfg.stop) == (0.4, 33, 3, ("END",))
        with pytest.raises(openai.NotFoundError, match="does not exist") as err:
            sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
        assert err.value.body["code"] == "model_not_found" and err.value.body["param"] == "model"
        with pytest.raises(openai.BadRequestError, match="json_schema"):
            sdk.chat.completions.create(
                model="served", messages=[{"role": "user", "content": "x"}],
                response_format={"type": "json_schema", "json_schema": {"name": "x"}},
            )
        bad = httpx.post(srv.base_url + "/chat/completions", json={"messages": "nope"})
        assert bad.status_code == 400 and "messages" in bad.json()["error"]["message"]
        sdk.close()


def test_served_model_failure_is_a_503():
    served = get_model("mock/echo", cache=False, failures=[500, 500], max_retries=1, retry_base_delay=0.001)
    with ServedModel(served) as srv:
        resp = httpx.post(srv.base_url + "/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
        assert resp.status_code == 503 and "failed after 2 attempts" in resp.json()["error"]["message"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_taskbench_serve_cli_in_a_subprocess():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskbench", "serve", "--model", "mock/echo", "--served-name", "served", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"taskbench serve did not start: {proc.communicate()[1][-2000:]}")
            time.sleep(0.1)
        schema = task_graph_schema(LIBRARY, include_links=True)
        out = _ask(_client(f"http://127.0.0.1:{port}/v1"), "caption img.png", schema=schema)
        assert out.parse_error is None and set(out.parsed) == {"task_steps", "task_nodes", "task_links"}
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


PROMPTS = [
    "I have a photo named beach.jpg. Describe it and then read the description aloud.",
    "Translate 'good morning' to French and then speak it.",
]


@pytest.mark.slow
@pytest.mark.model
def test_served_tiny_model_constrained_output_over_http():
    reason = tiny_model_missing()
    if reason:
        pytest.skip(reason)
    served = get_model("llamacpp/smollm2-135m", cache=False, timeout=300, max_tokens=120)
    # bounded arrays and strings keep the 135M model from looping until max_tokens (it does, unbounded)
    schema = task_graph_schema(LIBRARY, max_nodes=2, max_arguments=1, max_string_length=40)
    tools = "\n".join(json.dumps(t.to_taskbench()) for t in LIBRARY.tools)
    try:
        with ServedModel(served) as srv:
            for prompt in PROMPTS:
                client = _client(srv.base_url, timeout=300)
                messages = [
                    {"role": "system", "content": "You plan tool calls. Tools:\n" + tools},
                    {"role": "user", "content": prompt + "\nAnswer in JSON with task_steps and task_nodes."},
                ]
                out = _ask(client, messages, schema=schema)
                assert out.parse_error is None, out.text
                graph = TaskGraph.model_validate(out.parsed)
                assert graph.task_nodes and all(n.task in LIBRARY.names for n in graph.task_nodes)
                assert all(isinstance(a, str) for n in graph.task_nodes for a in n.arguments)
                assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0
    finally:
        served.close()



def test_run_reaches_an_openai_compatible_server_with_base_url(tmp_path, monkeypatch):
    """`taskbench run --base-url/--api-key-env`: the main job talks to a real loopback server."""
    from typer.testing import CliRunner

    from taskbench.cli.main import app

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SERVED_KEY", "sk-test-not-a-secret")
    served = get_model("mock/echo", cache=False)
    with ServedModel(served) as srv:
        result = CliRunner().invoke(app, [
            "run", "-m", "openai-compatible/served", "--base-url", srv.base_url, "--api-key-env", "SERVED_KEY",
            "-d", "huggingface", "--limit", "2", "--bootstrap", "0", "-q", "-o", str(tmp_path / "run"),
        ])
        assert result.exit_code == 0, result.output
        assert len(served.provider.requests) == 2
    log = (tmp_path / "run" / "run_log.json").read_text()
    assert "sk-test-not-a-secret" not in log


def test_predict_cli_closes_its_http_clients(tmp_path, monkeypatch):
    """`taskbench predict` against a real server leaves no unclosed client session or connector behind."""
    import gc
    import warnings

    from typer.testing import CliRunner

    from taskbench.cli.main import app

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    served = get_model("mock/echo", cache=False)
    with ServedModel(served) as srv, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(app, [
            "predict", "--data", "huggingface", "-m", "openai-compatible/served", "--base-url", srv.base_url,
            "--limit", "2", "-q", "-o", str(tmp_path / "p.jsonl"),
        ])
        gc.collect()
    assert result.exit_code == 0, result.output
    assert "Unclosed" not in result.output
    assert not [w for w in caught if "Unclosed" in str(w.message) or issubclass(w.category, ResourceWarning)]


@pytest.mark.parametrize("schema", [
    {"type": "array", "minItems": 1_000_000_000},
    {"type": "string", "minLength": 1_000_000_000},
    {"type": "array", "minItems": 100_000, "items": {"type": "array", "minItems": 100_000}},
    {"$defs": {"a": {"type": "object", "required": ["x"], "properties": {"x": {"$ref": "#/$defs/a"}}}},
     "$ref": "#/$defs/a"},
])
def test_a_schema_whose_smallest_answer_is_huge_is_a_400_and_the_server_keeps_serving(schema):
    """Issue 24.9: the mock model built a billion-item answer for minItems 1e9 on the event loop, blocking the
    server. Its answer is now bounded: a 400 at once, and the next request is answered."""
    served = get_model("mock/echo", cache=False)
    with ServedModel(served) as srv:
        start = time.monotonic()
        resp = httpx.post(srv.base_url + "/chat/completions", timeout=30, json={
            "messages": [{"role": "user", "content": "x"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "big", "schema": schema}}})
        assert time.monotonic() - start < 5
        assert resp.status_code == 400 and "smallest valid answer" in resp.json()["error"]["message"]
        ok = httpx.post(srv.base_url + "/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
        assert ok.status_code == 200
