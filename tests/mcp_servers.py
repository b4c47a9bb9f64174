"""Where the tests find real MCP servers: `make test` installs them (`make mcp-servers`) into .venv-mcp/ - each
Python server in a venv of its own, the npm ones in a local prefix - and they are also looked up in
TASKBENCH_MCP_PATH (':'-separated bin directories) and on PATH.

A server that is not found skips its test with a reason only when it could not have been installed here: its
installer (npm) is absent, or the set-up was never run (no stamp in .venv-mcp/, e.g. a bare `pytest`). After
`make mcp-servers` a missing server is a failure, so CI cannot pass with the real-server tests skipped."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MCPDIR = ROOT / ".venv-mcp"
# server command -> (where make installs it, the installer it needs)
_WHERE = {
    "mcp-server-sqlite": (MCPDIR / "sqlite" / "bin", "python"),
    "mcp-server-time": (MCPDIR / "time" / "bin", "python"),
    "mcp-server-git": (MCPDIR / "git" / "bin", "python"),
    "mcp-server-filesystem": (MCPDIR / "npm" / "node_modules" / ".bin", "npm"),
    "mcp-server-memory": (MCPDIR / "npm" / "node_modules" / ".bin", "npm"),
}


def installed_by_make() -> bool:
    return any(MCPDIR.glob(".installed-*"))


def find_server(name: str) -> str | None:
    """The server's executable, or None."""
    where, _ = _WHERE[name]
    extra = os.environ.get("TASKBENCH_MCP_PATH", "")
    return shutil.which(name, path=os.pathsep.join([str(where), extra, os.environ.get("PATH", "")]))


def server_or_skip(name: str) -> str:
    """The server's executable; skips when it cannot be had here, fails when `make mcp-servers` should have
    installed it."""
    exe = find_server(name)
    if exe is not None:
        return exe
    _, installer = _WHERE[name]
    if installer == "npm" and shutil.which("npm") is None:
        pytest.skip(f"{name} needs npm, which is not installed (apt-get install npm; then make mcp-servers)")
    if not installed_by_make():
        pytest.skip(f"{name} not found: run `make mcp-servers` (or set TASKBENCH_MCP_PATH to its bin directory)")
    pytest.fail(f"{name} not found in {_WHERE[name][0]} though `make mcp-servers` ran (re-run it)")
