"""A key-value MCP server for the task-file tests (stdio): ``put`` and ``clear`` change the store, ``items`` and
``size`` are marked read-only (MCP's ``readOnlyHint``), ``lookup`` is read-only but needs a key. With
``--file PATH`` the store lives in that JSON file (read on every call, written on every change, as a
database server's file would be), else in the process's memory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
from mcp.types import ToolAnnotations

FILE = Path(sys.argv[sys.argv.index("--file") + 1]) if "--file" in sys.argv else None
MEMORY: dict[str, str] = {}
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False)

server = Server("taskbench-kv")


def load() -> dict[str, str]:
    if FILE is None:
        return MEMORY
    return json.loads(FILE.read_text()) if FILE.exists() else {}


def save(store: dict[str, str]) -> None:
    if FILE is not None:
        FILE.write_text(json.dumps(store, sort_keys=True))


@server.tool(structured_output=False)
def put(key: str, value: str) -> str:
    """Store a value under a key."""
    store = load()
    store[key] = value
    save(store)
    return f"{len(store)} keys"


@server.tool(structured_output=False)
def clear() -> str:
    """Remove every key."""
    store = load()
    store.clear()
    save(store)
    return "cleared"


@server.tool(annotations=READ_ONLY, structured_output=False)
def items() -> str:
    """Every key and its value, as JSON."""
    return json.dumps(load(), sort_keys=True)


@server.tool(annotations=READ_ONLY, structured_output=False)
def size() -> str:
    """How many keys there are."""
    return str(len(load()))


@server.tool(annotations=READ_ONLY, structured_output=False)
def lookup(key: str) -> str:
    """The value of one key."""
    return load().get(key, "")


if __name__ == "__main__":
    server.run()
