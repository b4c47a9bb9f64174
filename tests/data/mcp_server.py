"""A small MCP server for the tests, written with the SDK's server side (stdio transport).

Tools: add (structured output), echo (text), make_note / notes (state), fail (an error result), crash (the
process dies mid-call), hang (never answers), pid (its process id), pixel (an image content block), whereami,
env_digest, get_env, leak_error and crash_env (what the server was given in its environment). With ``--die-on-start`` it
exits before speaking MCP; with ``--silent`` it never answers at all; ``--pid-file PATH`` writes its process id
there first; ``--http PORT`` / ``--sse PORT`` serve streamable HTTP / SSE on 127.0.0.1 instead of
stdio.
"""

from __future__ import annotations

import os
import sys
import time

if "--pid-file" in sys.argv:
    with open(sys.argv[sys.argv.index("--pid-file") + 1], "w") as fh:
        fh.write(str(os.getpid()))
if "--die-on-start" in sys.argv:
    print("cannot start: config file missing", file=sys.stderr)
    sys.exit(3)
if "--silent" in sys.argv:
    time.sleep(3600)

try:  # mcp 2.x
    from mcp.server.mcpserver import Image
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
    from mcp.server.fastmcp import Image

from pydantic import BaseModel

server = Server("taskbench-test")
NOTES: list[str] = []


class Sum(BaseModel):
    total: int
    terms: list[int]


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(total=a + b, terms=[a, b])


@server.tool(structured_output=False)
def echo(text: str, times: int = 1) -> str:
    """Repeat a text."""
    return " ".join([text] * times)


@server.tool(structured_output=False)
def make_note(content: str) -> str:
    """Remember a note."""
    NOTES.append(content)
    return f"{len(NOTES)} note(s)"


@server.tool()
def notes() -> list[str]:
    """Every note so far."""
    return list(NOTES)


@server.tool(structured_output=False)
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"refused: {reason}")


@server.tool(structured_output=False)
def crash() -> str:
    """The server process dies."""
    print("fatal: simulated crash", file=sys.stderr, flush=True)
    os._exit(7)


@server.tool(structured_output=False)
def hang() -> str:
    """Never returns."""
    time.sleep(3600)
    return "late"


@server.tool(structured_output=False)
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool(structured_output=False)
def pixel() -> Image:
    """A 1x1 PNG."""
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
    return Image(data=png, format="png")


@server.tool(structured_output=False)
def whereami() -> str:
    """The server's working directory and the value of TB_TEST_VAR."""
    return f"{os.getcwd()}|{os.environ.get('TB_TEST_VAR', '')}"


@server.tool(structured_output=False)
def env_digest() -> str:
    """The SHA-256 of TB_TEST_VAR (shows the value arrived without returning it)."""
    import hashlib

    return hashlib.sha256(os.environ.get("TB_TEST_VAR", "").encode()).hexdigest()


@server.tool()
def get_env() -> dict[str, str]:
    """The server's whole environment (as the reference 'everything' server's get-env returns it)."""
    return dict(os.environ)


@server.tool(structured_output=False)
def leak_error() -> str:
    """Fails with a message that quotes TB_TEST_VAR (a ToolError: the SDK passes its text on)."""
    try:
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]
    raise ToolError(f"token {os.environ.get('TB_TEST_VAR', '')} was rejected")


@server.tool(structured_output=False)
def crash_env() -> str:
    """The server prints TB_TEST_VAR to stderr, then dies."""
    print(f"fatal: TB_TEST_VAR={os.environ.get('TB_TEST_VAR', '')}", file=sys.stderr, flush=True)
    os._exit(9)


if __name__ == "__main__":
    if "--http" in sys.argv or "--sse" in sys.argv:  # --http PORT / --sse PORT: a loopback HTTP server
        flag = "--http" if "--http" in sys.argv else "--sse"
        port = int(sys.argv[sys.argv.index(flag) + 1])
        transport = "streamable-http" if flag == "--http" else "sse"
        server.run(transport, host="127.0.0.1", port=port)  # type: ignore[call-overload]
    else:
        server.run()
