"""What an executable environment holds now, as text for a prompt: ``Environment.read_state()``.

The data engine shows it to the generator (``taskbench generate --env``), so gold graphs name tables, columns,
files and entities that exist. It is read through the environment's own tools, unrecorded, with read-only calls
only, by the first recipe whose tools the environment has:

- **SQL** (``list_tables`` + ``describe_table``, e.g. mcp-server-sqlite): each table's columns, and with
  ``read_query`` its row count and first rows;
- **files** (``list_allowed_directories`` with ``directory_tree`` or ``list_directory``, e.g.
  @modelcontextprotocol/server-filesystem): the allowed directories and what is in them;
- **knowledge graph** (``read_graph``, e.g. @modelcontextprotocol/server-memory): the entities and relations;
- **any other server**: what each tool the server itself marks read-only (MCP's ``readOnlyHint``, and not
  ``destructiveHint``) and that needs no argument answers (``read_only``: :meth:`MCPEnvironment.read_only_tools
  <taskbench.envs.mcp.MCPEnvironment.read_only_tools>`), at most :data:`MAX_READ_ONLY` of them.

An environment with none of these has no state to show (None), and that is on purpose: a tool the server does
not mark read-only may change the data when called (``get_`` or ``list_`` in a name promises nothing), and
the arguments a tool requires cannot be guessed (mcp-server-git marks ``git_status`` read-only, but it needs
the repository's path; mcp-server-time has no state). A call that fails is left out with its error in the
text, never an exception; the text is cut at ``max_chars``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from ..schema import ToolCall, ToolResult

Executor = Callable[[ToolCall], Awaitable[ToolResult]]

MAX_TABLES = 20
SAMPLE_ROWS = 3
MAX_STATE_CHARS = 4000
"""Most characters of state shown in a prompt (about 1,000 tokens)."""
MAX_READ_ONLY = 8
"""Most read-only tools the general recipe calls."""


def result_value(content: Any) -> Any:
    """A tool result's content as data: JSON text read as JSON, a Python repr (mcp-server-sqlite answers so)
    read as a literal, anything else as it is."""
    if not isinstance(content, str):
        return content
    text = content.strip()
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        pass
    if text[:1] in "[{(" and len(text) < 1_000_000:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            pass
    return content


ERROR_TEXT = re.compile(r"^\s*(?:[A-Za-z]+ )?(?:error|exception)\b\s*:", re.I)
"""A text result that reports a failure without MCP's ``isError`` (mcp-server-sqlite answers ``Database error:
no such table: users`` and ``Error: Only SELECT queries are allowed`` as ordinary text): such a call failed."""


def result_error(result: ToolResult) -> str | None:
    """Why a call failed: the result's error, or its text when that is an error message (:data:`ERROR_TEXT`);
    None when it succeeded."""
    if result.error is not None:
        return result.error
    content = result.content
    text: str | None = content if isinstance(content, str) else None
    if isinstance(content, dict) and len(content) == 1:
        inner = next(iter(content.values()))
        text = inner if isinstance(inner, str) else None  # structured content wrapping the text
    return text if text is not None and ERROR_TEXT.match(text) else None


class _Reader:
    def __init__(self, execute: Executor) -> None:
        self.execute = execute
        self.n = 0

    async def __call__(self, name: str, **arguments: Any) -> tuple[Any, str | None]:
        self.n += 1
        result = await self.execute(ToolCall(id=f"state-{self.n}", name=name, arguments=arguments))
        if result.error is not None:
            return None, result.error
        content = result.content
        if isinstance(content, dict) and len(content) == 1 and isinstance(next(iter(content.values())), str):
            content = next(iter(content.values()))  # structured content that wraps the text ({"content": ...})
        return result_value(content), None


def _table_names(value: Any) -> list[str]:
    rows = value if isinstance(value, list) else []
    names: list[str] = []
    for row in rows:
        if isinstance(row, dict):
            name = row.get("name") or row.get("table_name") or next(iter(row.values()), None)
        else:
            name = row
        if isinstance(name, str) and name and not name.startswith("sqlite_"):
            names.append(name)
    return names


def _columns(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(c, dict) for c in value):
        parts = []
        for c in value:
            col = f"{c.get('name')} {c.get('type') or ''}".strip()
            if c.get("pk"):
                col += " primary key"
            parts.append(col)
        return ", ".join(parts)
    return str(value)[:300]


def _compact(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + " ..."


async def _sql(read: _Reader, tools: set[str]) -> str:
    value, error = await read("list_tables")
    if error is not None:
        return f"(list_tables failed: {error})"
    names = _table_names(value)
    if not names:
        return "The database has no tables yet."
    lines = [f"The database has {len(names)} table{'s' if len(names) != 1 else ''}:"]
    for name in names[:MAX_TABLES]:
        cols, error = await read("describe_table", table_name=name)
        line = f"- table {name}: " + (f"(describe_table failed: {error})" if error else _columns(cols))
        if "read_query" in tools:
            quoted = '"' + name.replace('"', '""') + '"'
            count, err = await read("read_query", query=f"SELECT COUNT(*) AS n FROM {quoted}")
            if err is None and isinstance(count, list) and count and isinstance(count[0], dict):
                line += f"; {next(iter(count[0].values()))} rows"
            rows, err = await read("read_query", query=f"SELECT * FROM {quoted} LIMIT {SAMPLE_ROWS}")
            if err is None and isinstance(rows, list) and rows:
                line += f"; first rows: {_compact(rows)}"
        lines.append(line)
    if len(names) > MAX_TABLES:
        lines.append(f"- ... and {len(names) - MAX_TABLES} more tables")
    return "\n".join(lines)


def _directories(value: Any) -> list[str]:
    text = value if isinstance(value, str) else "\n".join(map(str, value)) if isinstance(value, list) else ""
    dirs = []
    for line in text.splitlines():
        line = line.strip()
        if line.lower().startswith("allowed directories"):
            continue
        if line:
            dirs.append(line)
    return dirs


async def _files(read: _Reader, tools: set[str]) -> str:
    value, error = await read("list_allowed_directories")
    if error is not None:
        return f"(list_allowed_directories failed: {error})"
    dirs = _directories(value)
    if not dirs:
        return "No directories are accessible."
    lines = [f"Accessible directories: {', '.join(dirs)}"]
    for d in dirs[:5]:
        listing, error = await read("list_directory", path=d) if "list_directory" in tools \
            else await read("directory_tree", path=d)
        lines.append(f"Contents of {d}:" if error is None else f"{d}: (listing failed: {error})")
        if error is None:
            lines.append(_compact(listing, 1500))
    return "\n".join(lines)


async def _graph(read: _Reader, tools: set[str]) -> str:
    value, error = await read("read_graph")
    if error is not None:
        return f"(read_graph failed: {error})"
    return "The knowledge graph holds: " + _compact(value, 2000)


RECIPES: tuple[tuple[str, frozenset[str], Callable[[_Reader, set[str]], Awaitable[str]]], ...] = (
    ("sql", frozenset({"list_tables", "describe_table"}), _sql),
    ("files", frozenset({"list_allowed_directories", "list_directory"}), _files),
    ("files", frozenset({"list_allowed_directories", "directory_tree"}), _files),
    ("knowledge graph", frozenset({"read_graph"}), _graph),
)
"""(kind, the tools it needs, the reader), tried in order; the first whose tools are all there is used."""


async def _read_only(read: _Reader, names: list[str]) -> str:
    lines = ["What the server's read-only tools answer:"]
    for name in names[:MAX_READ_ONLY]:
        value, error = await read(name)
        lines.append(f"- {name}: " + (f"(failed: {error})" if error is not None else _compact(value, 600)))
    if len(names) > MAX_READ_ONLY:
        lines.append(f"- ... and {len(names) - MAX_READ_ONLY} more read-only tools")
    return "\n".join(lines)


async def read_state(execute: Executor, tool_names: list[str], *, read_only: list[str] | None = None,
                     max_chars: int = MAX_STATE_CHARS) -> str | None:
    """The state text of an environment with these tools (see the module docstring), or None. ``read_only``:
    the tools the server marks read-only that need no argument (for servers no recipe knows)."""
    tools = set(tool_names)
    text = None
    for _kind, needs, reader in RECIPES:
        if needs <= tools:
            text = (await reader(_Reader(execute), tools)).strip()
            break
    else:
        if read_only:
            text = (await _read_only(_Reader(execute), [n for n in read_only if n in tools])).strip()
    if text is None:
        return None
    return text if len(text) <= max_chars else text[:max_chars] + "\n... (cut)"


__all__ = ["ERROR_TEXT", "MAX_READ_ONLY", "MAX_STATE_CHARS", "RECIPES", "read_state", "result_error",
           "result_value"]
