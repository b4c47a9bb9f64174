"""`mcp:<command>`: a real MCP server (tests/data/mcp_server.py, written with the SDK's server side) started as a
subprocess over stdio; tools listed as specs, calls forwarded, errors, deaths and hangs reported, clean shutdown."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp package (extra [mcp]) is not installed")

from taskbench.envs import open_environment  # noqa: E402
from taskbench.envs.mcp import MCPEnvironment, convert_result  # noqa: E402
from taskbench.errors import ConfigError  # noqa: E402
from taskbench.schema import ToolCall  # noqa: E402

SERVER = Path(__file__).parent / "data" / "mcp_server.py"
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVER))}"


def call(env, name, **arguments):
    return asyncio.run(env.call(ToolCall(id=f"c-{name}", name=name, arguments=arguments)))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" in status.read_text()


@pytest.fixture(scope="module")
def env():
    e = open_environment(f"mcp:{COMMAND}", call_timeout=2)
    pid = int(call(e, "pid").content)
    yield e
    e.close()
    assert _gone(pid)  # also after a call that never returned (the hang test)


def test_tools_are_listed_with_raw_schemas(env):
    assert isinstance(env, MCPEnvironment) and env.name.startswith("mcp:")
    names = [t.name for t in env.tools()]
    assert {"add", "echo", "fail", "crash", "hang", "pixel", "notes"} <= set(names)
    add = env.tool("add")
    assert add.source == "mcp" and add.description == "Add two integers."
    assert add.parameters["properties"]["a"] == {"title": "A", "type": "integer"}
    assert add.parameters["required"] == ["a", "b"]
    assert add.output_schema["properties"]["total"]["type"] == "integer"
    assert env.tool("echo").output_schema is None
    assert "Returns (JSON Schema)" in env.documentation("add")


def test_structured_text_error_and_image_results(env):
    r = call(env, "add", a=2, b=40)
    assert r.ok and r.content == {"total": 42, "terms": [2, 40]}
    assert call(env, "echo", text="hi", times=3).content == "hi hi hi"
    err = call(env, "fail", reason="no")
    assert not err.ok and "fail" in err.error
    bad = call(env, "add", a="x")
    assert not bad.ok and "validation" in bad.error.lower()
    img = call(env, "pixel")
    assert img.ok and img.content[0]["type"] == "image" and img.content[0]["mimeType"] == "image/png"
    assert img.content[0]["bytes"] > 0
    unknown = call(env, "nope")
    assert unknown.error.startswith("no tool named 'nope'")
    assert [c.name for c in env.calls][-1] == "nope"


def test_server_state_persists_and_calls_are_recorded(env):
    asyncio.run(env.reset(seed=0))
    call(env, "make_note", content="first")
    call(env, "make_note", content="second")
    notes = call(env, "notes").content
    assert notes["result"][-2:] == ["first", "second"]
    assert [c.name for c in env.calls] == ["make_note", "make_note", "notes"]
    check = asyncio.run(env.check(env.task or _task(), None))
    assert check.calls == ["make_note", "make_note", "notes"] and not check.success


def _task():
    from taskbench.schema import AgentTask

    return AgentTask(id="t", query="take notes")


@pytest.mark.slow
def test_success_needs_the_answer_observed_through_the_server(env):
    """The ``solved`` check mode on an MCP server: the answer's value must come back from a successful call
    (``add``), not from memory, nor from ``echo`` repeating it; ``check="answer-only"`` reads the answer alone."""
    from taskbench.schema import AgentTask

    task = AgentTask(id="sum", query="What is 2 + 3?", gold_path=["add"],
                     meta={"checker": [{"all": {"api": "add", "args": {"a": 2, "b": 3}, "expr": "total"}}]})
    answer = "The sum of 2 and 3 is 5."
    asyncio.run(env.reset(0, task))
    assert not asyncio.run(env.check(task, answer)).success
    call(env, "echo", text="5")
    verdict = asyncio.run(env.check(task, answer))
    assert not verdict.success and "never appeared" in verdict.reason
    call(env, "add", a=2, b=3)
    assert asyncio.run(env.check(task, answer)).success
    loose = open_environment(f"mcp:{COMMAND}", check="answer-only")
    try:
        asyncio.run(loose.reset(0, task))
        assert asyncio.run(loose.check(task, answer)).success
    finally:
        loose.close()
    with pytest.raises(ConfigError, match="answer-only"):
        open_environment(f"mcp:{COMMAND}", check="lenient")


def test_a_hanging_call_times_out_and_the_server_still_answers(env):
    t0 = time.monotonic()
    r = call(env, "hang")
    assert "did not answer tools/call 'hang' within 2 s" in r.error
    assert time.monotonic() - t0 < 10
    assert call(env, "echo", text="still here").content == "still here"


def test_a_server_that_dies_mid_call_gives_a_clear_error_then_fails_fast():
    env = MCPEnvironment([sys.executable, str(SERVER)], call_timeout=10)
    try:
        pid = int(call(env, "pid").content)
        r = call(env, "crash")
        assert "is gone" in r.error and "simulated crash" in r.error, r.error
        assert not env.alive
        def asked_again(*_a, **_k):
            raise AssertionError("a dead server was sent another call")

        env._conn._call = asked_again  # fails fast: answered without a round trip (no clock to flake)
        again = call(env, "echo", text="x")
        assert "is gone" in again.error, again.error
    finally:
        env.close()
    assert _gone(pid)


def test_clean_shutdown_ends_the_server_process():
    env = open_environment(f"mcp:{COMMAND}")
    pid = int(call(env, "pid").content)
    assert not _gone(pid)
    t0 = time.monotonic()
    asyncio.run(env.aclose())
    assert time.monotonic() - t0 < 10
    assert _gone(pid)
    assert "closed" in call(env, "echo", text="x").error
    env.close()  # idempotent


def test_a_server_that_exits_at_start_is_a_one_line_error():
    with pytest.raises(ConfigError) as exc:
        open_environment(f"mcp:{COMMAND} --die-on-start")
    text = str(exc.value)
    assert "failed to start" in text and "cannot start: config file missing" in text
    assert "\n" not in text


def test_a_silent_server_times_out_at_start_and_is_ended(tmp_path):
    pid_file = tmp_path / "pid"
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match="did not answer initialize"):
        MCPEnvironment(f"{COMMAND} --pid-file {shlex.quote(str(pid_file))} --silent", startup_timeout=1.5)
    assert time.monotonic() - t0 < 12
    assert _gone(int(pid_file.read_text()))  # no server left behind


def test_a_missing_command_and_an_empty_command():
    with pytest.raises(ConfigError, match="command not found|failed to start"):
        open_environment("mcp:/nonexistent/mcp-server-binary")
    with pytest.raises(ConfigError, match="no command given"):
        open_environment("mcp:")


def test_convert_result_shapes():
    c = ToolCall(id="1", name="t")
    assert convert_result(c, {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}).content == "a\nb"
    assert convert_result(c, {"content": [], "structuredContent": {"x": 1}}).content == {"x": 1}
    r = convert_result(c, {"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert r.error == "boom" and r.content is None
    mixed = convert_result(c, {"content": [{"type": "text", "text": "see"},
                                           {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hi"}}]})
    assert mixed.content == [{"type": "text", "text": "see"},
                             {"type": "resource", "uri": "file:///a.txt", "mimeType": None, "text": "hi"}]
    assert convert_result(c, {"isError": True}).error.startswith("the tool reported an error")


def test_missing_sdk_names_the_pip_line(monkeypatch):
    from taskbench.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp -> ImportError
    with pytest.raises(MissingDependencyError, match=r'pip install "taskbench\[mcp\]"'):
        MCPEnvironment(COMMAND)


def test_async_with_closes_the_server():
    async def go():
        async with open_environment(f"mcp:{COMMAND}") as env:
            r = await env.call(ToolCall(id="1", name="pid"))
        return env, int(r.content)

    env, pid = asyncio.run(go())
    assert not env.alive and _gone(pid)


# ------------------------------------------------------------------------------------------ settings, transports


def test_parse_server_settings_and_forms():
    from taskbench.envs.mcp import parse_server

    s = parse_server("--cwd=/tmp/w MEMORY_FILE_PATH=/tmp/w/m.json TOKEN=$TOKEN npx -y server-memory")
    assert (s.transport, s.argv, s.cwd) == ("stdio", ("npx", "-y", "server-memory"), "/tmp/w")
    assert s.env == (("MEMORY_FILE_PATH", "/tmp/w/m.json"), ("TOKEN", "$TOKEN"))
    assert s.expanded({"TOKEN": "s3cret"})[0] == {"MEMORY_FILE_PATH": "/tmp/w/m.json", "TOKEN": "s3cret"}
    with pytest.raises(ConfigError, match=r"\$TOKEN is not set"):
        s.expanded({})
    assert parse_server("http://127.0.0.1:9/mcp").transport == "http"
    assert parse_server("http://127.0.0.1:9/sse").transport == "sse"
    h = parse_server("'--header=Authorization: Bearer ${KEY}' --transport=sse http://127.0.0.1:9/events")
    assert (h.transport, h.headers) == ("sse", (("Authorization", "Bearer ${KEY}"),))
    for bad, message in [("--cwd=/x http://127.0.0.1:9/mcp", "not a URL"), ("--transport=http python s.py", "needs a URL"),
                         ("--nope=1 python s.py", "unknown setting"), ("A=1", "no command"),
                         ("--transport=ftp http://x", "unknown transport")]:
        with pytest.raises(ConfigError, match=message):
            parse_server(bad)


def test_env_and_cwd_reach_the_server_and_a_secret_stays_out_of_the_name(tmp_path, monkeypatch):
    """The secret is given as $NAME: the server sees its value; the environment's recorded name and the tool
    result that echoes it do not (tests/test_secrets_tools.py tries every other way out)."""
    import hashlib

    monkeypatch.setenv("TB_SECRET_FOR_TEST", "hunter2-secret")
    spec = f"mcp:--cwd={tmp_path} TB_TEST_VAR=$TB_SECRET_FOR_TEST {COMMAND}"
    e = open_environment(spec, call_timeout=5)
    try:
        where, value = call(e, "whereami").content.split("|")
        assert Path(where).resolve() == tmp_path.resolve()
        assert value == "***"
        assert call(e, "env_digest").content == hashlib.sha256(b"hunter2-secret").hexdigest()
        assert "hunter2" not in e.name and "$TB_SECRET_FOR_TEST" in e.name
    finally:
        e.close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--http", "--sse"])
def test_http_and_sse_servers(flag):
    import subprocess

    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), flag, str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/" + ("mcp" if flag == "--http" else "sse")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket_probe(port):
                    break
            except OSError:
                time.sleep(0.2)
        e = open_environment(f"mcp:{url}", call_timeout=5, startup_timeout=20)
        try:
            assert "add" in [t.name for t in e.tools()]
            assert call(e, "add", a=2, b=3).content == {"total": 5, "terms": [2, 3]}
        finally:
            e.close()
    finally:
        proc.terminate()
        proc.wait(10)


def socket_probe(port: int):
    import socket

    return socket.create_connection(("127.0.0.1", port), timeout=1)


def test_graph_build_from_an_mcp_server(tmp_path, capsys):
    """`graph build "mcp:<command>"` lists the server's tools (no SDK client to write) and builds the graph."""
    import json

    from cli_runner import run

    out = tmp_path / "graph.json"
    code, _, err = run(capsys, "graph", "build", f"mcp:{COMMAND}", "-o", str(out))
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert {"add", "echo", "whereami"} <= {n["id"] for n in doc["nodes"]}


def test_graph_build_from_a_missing_mcp_command_is_one_line(tmp_path, capsys):
    from cli_runner import run

    code, _, err = run(capsys, "graph", "build", "mcp:no-such-mcp-server-xyz", "-o", str(tmp_path / "g.json"))
    assert code == 2
    assert "command not found" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "g.json").exists()
