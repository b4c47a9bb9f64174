"""Any MCP server as an environment: ``open_environment("mcp:python my_server.py")``.

:class:`MCPEnvironment` starts the server as a subprocess speaking MCP over stdio (the official ``mcp``
package, extra ``[mcp]``), lists its tools as :class:`~taskbench.schema.ToolSpec` (``inputSchema`` and
``outputSchema`` kept exactly as the server gave them, through the MCP loader of :mod:`taskbench.graph.loaders`)
and forwards each :class:`~taskbench.schema.ToolCall` as ``tools/call``:

- ``structuredContent`` becomes the result's ``content`` when the server sends it; else the text blocks (one
  text block: its text; several: joined by newlines); image, audio and resource blocks are summarised
  (``{"type", "mimeType", "bytes"}`` or ``{"type", "uri"}``) next to the text;
- ``isError: true`` becomes the result's ``error`` (the text the server gave);
- a call that takes longer than ``call_timeout`` seconds, or a server that died, gives an error result that
  says so, with the last lines the server wrote to stderr; calls after a death fail at once with the same
  reason. Nothing hangs: start-up is bounded by ``startup_timeout`` and shutdown by the SDK's bounded
  close-stdin / terminate / kill sequence.

The client runs on its own event loop in a background thread, so the environment works from any caller (the
protocol's async methods, or :meth:`MCPEnvironment.close` from synchronous code) and ``tools()`` needs no
event loop. MCP servers have no reset: :meth:`reset` starts a new episode of call records, and the server's
own state carries over (restart the environment for a clean server). There is no checker either: the default
:meth:`Environment.check` reports the calls made.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import shlex
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from ..errors import ConfigError, InputError, MissingDependencyError
from ..schema import ToolCall, ToolResult, ToolSpec
from .base import Environment

PIP_LINE = 'pip install "taskbench[mcp]"'


def _require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise MissingDependencyError(f"MCP environments need the mcp package: {PIP_LINE}") from None


def _dump(model: Any) -> dict[str, Any]:
    """An SDK result as its JSON wire form (camelCase keys, as MCP names them, in SDK 1.x and 2.x alike)."""
    if isinstance(model, Mapping):
        return dict(model)
    return cast("dict[str, Any]", model.model_dump(mode="json", by_alias=True, exclude_none=True))


def convert_result(call: ToolCall, result: Mapping[str, Any]) -> ToolResult:
    """A ``tools/call`` result (wire form) as a :class:`ToolResult` (see the module docstring)."""
    blocks = [b for b in result.get("content") or [] if isinstance(b, Mapping)]
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    others: list[dict[str, Any]] = []
    for b in blocks:
        kind = b.get("type")
        if kind in ("image", "audio"):
            data = str(b.get("data", ""))
            others.append({"type": kind, "mimeType": b.get("mimeType"), "bytes": len(data) * 3 // 4})
        elif kind == "resource":
            res: Mapping[str, Any] = b["resource"] if isinstance(b.get("resource"), Mapping) else {}
            item = {"type": "resource", "uri": res.get("uri"), "mimeType": res.get("mimeType")}
            if isinstance(res.get("text"), str):
                item["text"] = res["text"]
            others.append(item)
        elif kind == "resource_link":
            others.append({"type": "resource_link", "uri": b.get("uri"), "name": b.get("name")})
        elif kind != "text":
            others.append({"type": str(kind)})
    if result.get("isError"):
        message = "\n".join(t for t in texts if t) or "the tool reported an error (no message)"
        return ToolResult(call_id=call.id, name=call.name, error=message)
    structured = result.get("structuredContent")
    content: Any
    if structured is not None:
        content = structured
    elif not others:
        content = texts[0] if len(texts) == 1 else "\n".join(texts)
    else:
        content = [{"type": "text", "text": t} for t in texts] + others
    return ToolResult(call_id=call.id, name=call.name, content=content)


def specs_from_listing(tools: list[Any], command: str) -> list[ToolSpec]:
    """``tools/list`` entries (wire form) as tool specs, through the MCP loader."""
    from ..graph.loaders import JsonSource, tools_from_mcp

    doc = {"tools": tools}
    try:
        loaded = tools_from_mcp(JsonSource(None, json.dumps(doc), doc))
    except InputError as exc:
        raise ConfigError(f"MCP server {command!r} listed a malformed tool: {exc.message}") from None
    return [t.spec() for t in loaded]


class _Connection:
    """One MCP client session on a private event loop in a daemon thread."""

    def __init__(self, argv: list[str], env: Mapping[str, str] | None, cwd: str | Path | None) -> None:
        self.argv = argv
        self.label = shlex.join(argv)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f"mcp {self.label}", daemon=True)
        self.stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self.stop: asyncio.Event | None = None
        self.task: asyncio.Task[None] | None = None
        self.finished = threading.Event()  # set when the session task has run its cleanup (process ended)
        self.session: Any = None
        self.main: concurrent.futures.Future[None] | None = None
        self.dead: str | None = None
        self.closed = False
        self.tools: list[Any] = []
        self._tail = ""

    # ---------------------------------------------------------------------------------------- life cycle

    def start(self, timeout: float) -> None:
        self.thread.start()
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self.main = asyncio.run_coroutine_threadsafe(self._run(ready), self.loop)
        try:
            self.tools = ready.result(timeout)
        except concurrent.futures.TimeoutError:
            tail = self.tail()
            self.close()
            raise ConfigError(
                f"MCP server {self.label!r} did not answer initialize and tools/list within {timeout:g} s"
                f"{tail} (is it an MCP server on stdio? raise startup_timeout if it is slow)"
            ) from None
        except Exception as exc:
            self.close()  # the process has ended: its stderr is complete
            raise ConfigError(f"MCP server {self.label!r} failed to start: {_describe(exc)}{self._tail}") from None

    async def _run(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        self.stop = asyncio.Event()
        self.task = asyncio.current_task()
        params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=self.env, cwd=self.cwd)
        try:
            async with stdio_client(params, errlog=self.stderr) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools = await _list_tools(session)
                    self.session = session
                    ready.set_result(tools)
                    await self.stop.wait()
        except BaseException as exc:  # noqa: BLE001 - recorded, reported by start() or the next call
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(_describe(exc)))
            self.dead = self.dead or _describe(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self.finished.set()

    def close(self, timeout: float = 15.0) -> None:
        """Stop the session (close stdin, then terminate and kill as the SDK does), then the loop."""
        if self.closed:
            return
        self.closed = True
        if self.thread.is_alive():
            if self.main is not None:
                if self.session is not None and self.stop is not None:
                    self.loop.call_soon_threadsafe(self.stop.set)  # leave the contexts: stdin closed, process ended
                else:  # still starting: cancel the task inside the loop, so the SDK's cleanup ends the process
                    self.loop.call_soon_threadsafe(self._cancel_task)
                # wait for the task's own cleanup (not just the future: a cancelled future returns at once)
                self.finished.wait(timeout)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout)
        if not self.loop.is_running():
            self.loop.close()
        self._tail = self.tail()
        self.stderr.close()

    def _cancel_task(self) -> None:
        if self.task is not None:
            self.task.cancel()
        elif self.main is not None:  # the task has not started yet
            self.main.cancel()
            self.finished.set()

    # ---------------------------------------------------------------------------------------- calls

    def tail(self, lines: int = 3) -> str:
        """``; its stderr ends: ...`` with the server's last stderr lines (empty when it wrote none)."""
        try:
            self.stderr.flush()
            self.stderr.seek(0)
            text = self.stderr.read()[-4000:]
        except (ValueError, OSError):
            return ""
        kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
        return f"; its stderr ends: {' | '.join(kept)}" if kept else ""

    async def call(self, call: ToolCall, timeout: float) -> ToolResult:
        if self.closed:
            return ToolResult(call_id=call.id, name=call.name, error=f"MCP server {self.label!r} is closed")
        if self.dead is not None:
            return ToolResult(call_id=call.id, name=call.name, error=self._dead_message())
        future = asyncio.run_coroutine_threadsafe(self._call(call, timeout), self.loop)
        return await asyncio.wrap_future(future)

    def _dead_message(self) -> str:
        return f"MCP server {self.label!r} is gone ({self.dead}){self.tail()}"

    async def _call(self, call: ToolCall, timeout: float) -> ToolResult:
        try:
            result = await asyncio.wait_for(self.session.call_tool(call.name, dict(call.arguments)), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            return ToolResult(call_id=call.id, name=call.name,
                              error=f"MCP server {self.label!r} did not answer tools/call {call.name!r} "
                                    f"within {timeout:g} s")
        except Exception as exc:
            text = _describe(exc)
            if "closed" in text.lower() or isinstance(exc, (BrokenPipeError, EOFError)):
                await asyncio.sleep(0.05)  # let the server's last stderr lines land
                self.dead = f"connection closed during tools/call {call.name!r}"
                return ToolResult(call_id=call.id, name=call.name, error=self._dead_message())
            return ToolResult(call_id=call.id, name=call.name, error=f"MCP error: {text}")
        return convert_result(call, _dump(result))


async def _list_tools(session: Any) -> list[Any]:
    """Every tool of the server (following ``nextCursor``)."""
    page = _dump(await session.list_tools())
    tools = list(page.get("tools") or [])
    cursor = page.get("nextCursor")
    while cursor:
        try:
            from mcp import types

            result = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        except TypeError:  # SDK 1.x
            result = await session.list_tools(cursor=cursor)
        page = _dump(result)
        tools.extend(page.get("tools") or [])
        cursor = page.get("nextCursor")
    return tools


def _describe(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # an exception group (anyio task groups raise them)
    if isinstance(inner, tuple) and inner:
        return "; ".join(_describe(e) for e in inner)
    if isinstance(exc, FileNotFoundError):
        return f"command not found ({exc.filename or exc})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class MCPEnvironment(Environment):
    """An MCP server (a subprocess on stdio) as an environment (see the module docstring).

    ``command``: the command line (a string, split like a shell does, or a list). ``env``: extra environment
    variables for the server (the SDK passes a safe default set: HOME, PATH, ...). ``cwd``: its working
    directory. ``startup_timeout`` bounds start-up (initialize + tools/list); ``call_timeout`` each call."""

    name = "mcp"

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        startup_timeout: float = 30.0,
        call_timeout: float = 60.0,
    ) -> None:
        super().__init__()
        _require_mcp()
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ConfigError("mcp: no command given (use mcp:<command ...>, e.g. mcp:python my_server.py)")
        self.command = argv
        self.name = f"mcp:{shlex.join(argv)}"  # type: ignore[misc]
        self.call_timeout = call_timeout
        self._conn = _Connection(argv, env, cwd)
        self._finalizer = weakref.finalize(self, self._conn.close)
        self._conn.start(startup_timeout)
        self._specs = specs_from_listing(self._conn.tools, self._conn.label)

    def tools(self) -> list[ToolSpec]:
        return list(self._specs)

    @property
    def alive(self) -> bool:
        """True while the server answers (not closed, not dead)."""
        return not self._conn.closed and self._conn.dead is None

    async def _execute(self, call: ToolCall) -> ToolResult:
        return await self._conn.call(call, self.call_timeout)

    def close(self) -> None:
        """Shut the server down (idempotent; also done when the environment is garbage-collected)."""
        self._finalizer()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


__all__ = ["MCPEnvironment", "convert_result", "specs_from_listing"]
