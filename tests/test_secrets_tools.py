"""Secrets that come back in *successful* answers never reach a record, a page, a log or the cache (issue 43,
points 11 and 16).

Two secrets, neither with a well-known prefix, so only the known values find them:

- ``SECRET``, given to an MCP server as ``TB_TEST_VAR=$TB_MCP_SECRET`` (tests/data/mcp_server.py): its tools
  return it in a structured result (``get_env``, the whole environment as the reference ``everything``
  server's ``get-env`` does), in text (``whereami``), in an error (``leak_error``) and on stderr before the
  server dies (``crash_env``);
- ``KEY``, the API key of an openai-compatible server (tests/fault_server.py) that puts it into a 200 answer.

No 4-character prefix of either and no 8-character piece of either may be found in what a command wrote,
printed or cached, whatever path it took (a recorded call, a setup call, a checker's read, a state read, a
streamed answer).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shlex
import sys
from pathlib import Path

import pytest

from cli_runner import run as cli
from fault_server import FaultServer
from taskbench.dataset.header import header_path
from taskbench.llm.redact import MASK, StreamRedactor, forget_all, redact_known, redact_value

SERVER = Path(__file__).parent / "data" / "mcp_server.py"
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVER))}"
SECRET = "Sx9Kq2Lm7Pz4Wv8Rt3Yn6Bd1Hf5Jc0Ge"
KEY = "tbQ7xLw2Rk9Mv4Np8Zs3Ty6Uc1Hd5Jf0Gb"


def leaks(text: str | bytes, secret: str) -> list[str]:
    """The pieces of ``secret`` found in ``text``: its 4-character prefix, or any 8 characters of it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    pieces = [secret[:4]] + [secret[i:i + 8] for i in range(len(secret) - 7)]
    return [p for p in pieces if p in text]


def found_in_files(root: Path, *secrets: str) -> dict[str, list[str]]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            hits = [h for s in secrets for h in leaks(data, s)]
            if hits:
                out[str(p.relative_to(root))] = hits
    return out


@pytest.fixture(autouse=True)
def _secrets(monkeypatch):
    monkeypatch.setenv("TB_MCP_SECRET", SECRET)
    monkeypatch.setenv("TB_SECRET_TEST_KEY", KEY)
    forget_all()
    yield
    forget_all()


# ------------------------------------------------------------------------------------------------- units


def test_redact_known_takes_out_the_value_its_prefix_and_pieces_only():
    text = f"a {SECRET} b {SECRET[:6]}**** c {SECRET[10:22]} d sk-notmine1234567 e"
    out = redact_known(text, [SECRET])
    assert leaks(out, SECRET) == []
    assert "sk-notmine1234567" in out  # key-shaped text that is not a known secret is data: kept
    assert redact_known("nothing here", [SECRET]) == "nothing here"


def test_redact_value_walks_keys_and_values_and_keeps_untouched_objects():
    doc = {"env": {"TB_TEST_VAR": SECRET, SECRET: 1}, "list": [1, None, f"x{SECRET}y", ("t", SECRET)], "n": 3.5}
    out = redact_value(doc, [SECRET])
    assert leaks(json.dumps(out), SECRET) == []
    assert out["env"]["TB_TEST_VAR"] == MASK and out["n"] == 3.5
    clean = {"a": [1, "b"]}
    assert redact_value(clean, [SECRET]) is clean
    deep: object = SECRET
    for _ in range(1000):
        deep = [deep]
    assert leaks(json.dumps(redact_value(deep, [SECRET])), SECRET) == []


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13, 40])
def test_a_streamed_secret_split_across_pieces_is_masked_whole(size):
    text = f"start {SECRET} middle {SECRET[:9]} and {KEY} end"
    pieces = [text[i:i + size] for i in range(0, len(text), size)]
    clean = StreamRedactor([SECRET, KEY])
    out = "".join(clean.feed(p) for p in pieces) + clean.flush()
    assert leaks(out, SECRET) == [] and leaks(out, KEY) == []
    assert out.startswith("start ***") and out.endswith("end")
    assert StreamRedactor([]).feed("as is") == "as is"


def test_model_stream_holds_a_key_split_across_pieces():
    from taskbench.llm import get_model
    from taskbench.llm.base import ProviderResponse

    answer = f"the key is {KEY}, done"
    model = get_model("mock/m", responses=[answer], cache=False)  # the one generate() call; stream() is below
    model.provider.secrets = lambda: [KEY]  # type: ignore[method-assign]
    model._secrets = [KEY]

    async def stream(request):
        for i in range(0, len(answer), 3):
            yield answer[i:i + 3]
        yield ProviderResponse(answer, 1, 1, "stop")

    model.provider.stream = stream  # type: ignore[attr-defined]

    async def go():
        pieces = [p async for p in model.stream("q")]
        plain = await model.generate("q")
        return pieces, plain

    pieces, plain = asyncio.run(go())
    text = "".join(p for p in pieces if isinstance(p, str))
    assert leaks(text, KEY) == [] and leaks(pieces[-1].text, KEY) == [] and leaks(plain.text, KEY) == []
    assert text.endswith(", done")


# ------------------------------------------------------------------------------------------- environments


def _spec() -> str:
    return f"mcp:TB_TEST_VAR=$TB_MCP_SECRET {COMMAND}"


def test_every_tool_result_of_an_mcp_server_is_redacted():
    from taskbench.envs import open_environment
    from taskbench.schema import AgentTask, ToolCall

    env = open_environment(_spec(), call_timeout=10)

    async def go():
        results = []
        for i, name in enumerate(["get_env", "whereami", "leak_error", "env_digest"]):
            results.append(await env.call(ToolCall(id=f"c{i}", name=name, arguments={})))
        task = AgentTask(id="t", query="q", meta={
            "setup": [{"call": "get_env", "args": {}}],
            "checker": [{"call": "get_env", "args": {}, "expr": "TB_TEST_VAR", "equals": "nope"},
                        {"all": [{"api": "whereami", "args": {}}]}]})
        await env.reset(0, task)
        check = await env.check(task, "no answer")
        state = await env.read_state()
        crash = await env.call(ToolCall(id="x", name="crash_env", arguments={}))
        after = await env.call(ToolCall(id="y", name="get_env", arguments={}))
        return results, check, state, crash, after

    try:
        results, check, state, crash, after = asyncio.run(go())
        blobs = {f"result {r.name}": r.model_dump_json() for r in results}
        blobs.update({"check": check.model_dump_json(), "state": str(state), "crash": crash.model_dump_json(),
                      "after": after.model_dump_json(), "recorded": json.dumps([r.model_dump() for r in env.results]),
                      "listing": json.dumps(env.listing())})
        assert {k: leaks(v, SECRET) for k, v in blobs.items() if leaks(v, SECRET)} == {}
        # the value did reach the server, and what was redacted says so
        assert results[3].content == hashlib.sha256(SECRET.encode()).hexdigest()
        env_result = results[0].content
        assert isinstance(env_result, dict) and MASK in json.dumps(env_result)
        assert results[2].error and MASK in results[2].error
        assert crash.error and "TB_TEST_VAR=***" in crash.error
        assert env.secrets() == [SECRET] and SECRET not in env.name
    finally:
        env.close()


def _agent_model_reply(payload: dict) -> object:
    """The model of the agents run: call get_env first, then answer with the API key in the text."""
    if not any(m.get("role") == "tool" for m in payload.get("messages", [])):
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_env", "arguments": "{}"}}]}
    return f"Final answer: the environment is read; my key is {KEY}."


def test_agents_eval_writes_no_secret_anywhere(tmp_path, capsys, monkeypatch):
    """The whole command: a react agent calls get_env on the MCP server and answers with the API key in a
    successful answer; the run directory, the response cache, stdout and stderr hold neither secret."""
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "query": "What is in the environment?", "gold_path": ["get_env"],
                                 "checker": [{"called": ["get_env"]}]}) + "\n")
    server = FaultServer(reply=_agent_model_reply).start()
    try:
        code, out, err = cli(capsys, "agents", "eval", "--env", _spec(), "--agent", "react", "--tasks", str(tasks),
                             "-m", "openai-compatible/m", "--base-url", server.base_url, "--api-key-env",
                             "TB_SECRET_TEST_KEY", "--tools", "all", "-o", str(tmp_path / "run"), "-q",
                             "--bootstrap", "0", "--max-retries", "0")
    finally:
        server.stop()
    assert code == 0, err
    assert server.headers and server.headers[-1]["authorization"] == f"Bearer {KEY}"
    sent = json.dumps(server.requests)
    assert "get_env" in sent and MASK in sent  # the tool ran, and the model saw its result redacted
    assert leaks(sent, SECRET) == []
    assert found_in_files(tmp_path, SECRET, KEY) == {}
    assert [h for s in (SECRET, KEY) for h in leaks(out + err, s)] == []
    trajectories = list((tmp_path / "run").rglob("*.jsonl"))
    assert trajectories and any(MASK in p.read_text() for p in trajectories)


def test_predict_and_the_cache_keep_no_key_from_a_successful_answer(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    server = FaultServer(reply=lambda payload: f"Step 1: use the key {KEY}\nnodes: []").start()
    out = tmp_path / "preds.jsonl"
    argv = ["predict", "--data", "multimedia", "-m", "openai-compatible/m", "--base-url", server.base_url,
            "--api-key-env", "TB_SECRET_TEST_KEY", "-o", str(out), "--limit", "3", "-q", "--free",
            "--max-retries", "0"]
    try:
        code, stdout, stderr = cli(capsys, *argv)
        assert code == 0, stderr
        first = out.read_text()
        out.unlink()
        header_path(out, "predict").unlink()
        count = server.count
        code, stdout2, stderr2 = cli(capsys, *argv)  # answered from the cache this time
        assert code == 0, stderr2
        assert server.count == count
    finally:
        server.stop()
    assert MASK in first and out.read_text() == first
    assert list((tmp_path / "cache").rglob("*")), "the response cache was written"
    assert found_in_files(tmp_path, KEY) == {}
    assert leaks(stdout + stderr + stdout2 + stderr2, KEY) == []


def test_generate_keeps_no_key_from_a_successful_answer(tmp_path, capsys, monkeypatch):
    from taskbench import bundled

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))

    def reply(payload: dict) -> str:
        return json.dumps({"user_request": f"Please use {KEY} to caption the image", "task_steps": ["x"],
                           "task_nodes": [], "task_links": []})

    server = FaultServer(reply=reply).start()
    try:
        code, out, err = cli(capsys, "generate", "--graph", str(bundled.path("multimedia") / "graph_desc.json"),
                             "-m", "openai-compatible/m", "--base-url", server.base_url, "--api-key-env",
                             "TB_SECRET_TEST_KEY", "--n", "2", "-o", str(tmp_path / "gen"), "-q",
                             "--max-retries", "0")
    finally:
        server.stop()
    assert code in (0, 1), err
    assert server.count >= 1
    assert list((tmp_path / "gen").rglob("*.json*"))
    assert found_in_files(tmp_path, KEY) == {}
    assert leaks(out + err, KEY) == []
