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
own state carries over (a task's ``setup`` calls, or a new environment, give a known state). Tasks and their
checkers come from a task file (:mod:`taskbench.envs.tasks`); settings and transports: :func:`parse_server`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import re
import shlex
import tempfile
import threading
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .._loop import LoopThread
from ..errors import ConfigError, InputError, MissingDependencyError
from ..schema import ToolCall, ToolResult, ToolSpec
from .base import Environment, parse_check_mode

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


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
TRANSPORTS = ("stdio", "http", "sse")


@dataclass(frozen=True)
class ServerSpec:
    """Where an MCP server is and how to reach it, parsed from the text after ``mcp:`` (see :func:`parse_server`).

    ``env`` and ``headers`` hold the text as written (``$NAME`` not yet expanded): :meth:`expanded` reads the
    host's values when the server is opened, so a secret given as ``TOKEN=$TOKEN`` never reaches a record."""

    transport: str
    argv: tuple[str, ...] = ()
    url: str = ""
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return self.url or shlex.join(self.argv)

    def expanded(self, environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
        """(environment variables, HTTP headers) with every ``$NAME`` / ``${NAME}`` replaced by the host's
        value; an unset name is a :class:`ConfigError` naming it."""
        source = os.environ if environ is None else environ

        def expand(text: str) -> str:
            def one(m: re.Match[str]) -> str:
                name = m.group(1) or m.group(2)
                if name not in source:
                    raise ConfigError(f"mcp: ${name} is not set in this environment (export it, or write the value)")
                return source[name]

            return _VAR.sub(one, text)

        return {k: expand(v) for k, v in self.env}, {k: expand(v) for k, v in self.headers}


def parse_server(text: str) -> ServerSpec:
    """The text after ``mcp:``: settings, then a command (stdio) or a URL (streamable HTTP, or SSE).

    Settings, each one word before the command: ``NAME=VALUE`` (an environment variable for the server;
    ``$NAME``/``${NAME}`` in the value is read from the host's environment when the server starts, so
    ``GITHUB_TOKEN=$GITHUB_TOKEN`` passes a secret without writing it anywhere), ``--cwd=DIR`` (the server's
    working directory), ``--header=NAME:VALUE`` (an HTTP header, ``$NAME`` expanded too) and
    ``--transport=stdio|http|sse`` (default: stdio for a command; http for a URL, sse when its path ends in
    ``/sse``). Examples: ``mcp:uvx mcp-server-time``, ``mcp:--cwd=/tmp/w MEMORY_FILE_PATH=/tmp/w/m.json npx -y
    @modelcontextprotocol/server-memory``, ``mcp:http://127.0.0.1:8000/mcp``."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"mcp:{text}: {exc} (quote the command as a shell would)") from None
    env: list[tuple[str, str]] = []
    headers: list[tuple[str, str]] = []
    cwd: str | None = None
    transport: str | None = None
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--cwd="):
            cwd = word[len("--cwd="):]
        elif word.startswith("--header="):
            name, sep, value = word[len("--header="):].partition(":")
            if not sep or not name.strip():
                raise ConfigError(f"mcp: {word!r}: expected --header=NAME:VALUE")
            headers.append((name.strip(), value.strip()))
        elif word.startswith("--transport="):
            transport = word[len("--transport="):]
            if transport not in TRANSPORTS:
                raise ConfigError(f"mcp: unknown transport {transport!r} (use one of: {', '.join(TRANSPORTS)})")
        elif word.startswith("--"):
            raise ConfigError(f"mcp: unknown setting {word!r} (settings: NAME=VALUE, --cwd=DIR, "
                              "--header=NAME:VALUE, --transport=stdio|http|sse)")
        elif _ASSIGN.match(word):
            name, _, value = word.partition("=")
            env.append((name, value))
        else:
            break
        i += 1
    rest = words[i:]
    if not rest:
        raise ConfigError("mcp: no command given (use mcp:<command ...>, e.g. mcp:python my_server.py, or "
                          "mcp:http://127.0.0.1:8000/mcp)")
    if rest[0].startswith(("http://", "https://")):
        if len(rest) > 1:
            raise ConfigError(f"mcp: a server URL takes no arguments (got {shlex.join(rest[1:])!r})")
        url = rest[0]
        kind = transport or ("sse" if url.split("?")[0].rstrip("/").endswith("/sse") else "http")
        if kind == "stdio":
            raise ConfigError(f"mcp: {url} is a URL; --transport=stdio needs a command")
        if env or cwd:
            raise ConfigError("mcp: NAME=VALUE and --cwd are for servers started as a command, not a URL")
        return ServerSpec(transport=kind, url=url, headers=tuple(headers))
    if transport not in (None, "stdio"):
        raise ConfigError(f"mcp: --transport={transport} needs a URL, not a command")
    if headers:
        raise ConfigError("mcp: --header is for servers reached by URL")
    return ServerSpec(transport="stdio", argv=tuple(rest), env=tuple(env), cwd=cwd)


class _Connection:
    """One MCP client session on a private event loop in a daemon thread."""

    def __init__(self, server: ServerSpec, env: Mapping[str, str] | None, cwd: str | Path | None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.server = server
        self.argv = list(server.argv)
        self.label = server.label
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.headers = dict(headers or {})
        self.server_name = ""
        self.runner: LoopThread | None = None  # the private loop, started by start()
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
        self.runner = LoopThread(f"mcp {self.label}")
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self.main = self.runner.submit(self._run(ready))
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
        from mcp import ClientSession

        self.stop = asyncio.Event()
        self.task = asyncio.current_task()
        try:
            async with self._transport() as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    init = _dump(await session.initialize())
                    info = init.get("serverInfo")
                    self.server_name = str(info.get("name") or "") if isinstance(info, Mapping) else ""
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

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        """The SDK's client transport for this server: the (read, write) streams, closed on exit."""
        if self.server.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client
            from mcp.client.stdio import get_default_environment

            env = {**get_default_environment(), **self.env} if self.env else None  # merged in SDK 1.x too
            params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=env, cwd=self.cwd)
            async with stdio_client(params, errlog=self.stderr) as streams:
                yield streams
        elif self.server.transport == "sse":
            from mcp.client.sse import sse_client

            async with sse_client(self.server.url, headers=self.headers or None) as streams:
                yield streams
        else:
            import mcp.client.streamable_http as http

            if hasattr(http, "streamable_http_client"):  # SDK 2.x: headers through an HTTP client we own
                from mcp.shared._httpx_utils import create_mcp_http_client

                async with create_mcp_http_client(headers=self.headers or None) as client:
                    async with http.streamable_http_client(self.server.url, http_client=client) as streams:
                        yield streams
            else:  # pragma: no cover - SDK 1.x
                legacy: Any = http
                async with legacy.streamablehttp_client(self.server.url, headers=self.headers or None) as streams:
                    yield streams

    def close(self, timeout: float = 15.0) -> None:
        """Stop the session (close stdin, then terminate and kill as the SDK does), then the loop."""
        if self.closed:
            return
        self.closed = True
        runner = self.runner
        if runner is not None:
            if runner.thread.is_alive() and self.main is not None:
                if self.session is not None and self.stop is not None:
                    runner.call_soon(self.stop.set)  # leave the contexts: stdin closed, process ended
                else:  # still starting: cancel the task inside the loop, so the SDK's cleanup ends the process
                    runner.call_soon(self._cancel_task)
                # wait for the task's own cleanup (not just the future: a cancelled future returns at once)
                self.finished.wait(timeout)
            runner.stop(timeout)
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
        assert self.runner is not None  # started: the connection opens in start()
        return await asyncio.wrap_future(self.runner.submit(self._call(call, timeout)))

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
    directory. ``startup_timeout`` bounds start-up (initialize + tools/list); ``call_timeout`` each call.
    ``check``: ``solved`` (default: the answer is right and what it states appeared in a successful response
    of the episode) or ``answer-only`` (:data:`~taskbench.envs.base.CHECK_MODES`)."""

    name = "mcp"

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        startup_timeout: float = 30.0,
        call_timeout: float = 60.0,
        check: str = "solved",
    ) -> None:
        super().__init__()
        self.check_mode = parse_check_mode(check)
        text = command if isinstance(command, str) else shlex.join(str(a) for a in command)
        server = parse_server(text)
        _require_mcp()
        extra_env, headers = server.expanded()
        if env:
            extra_env.update(env)
        self.server = server
        self.command = list(server.argv)
        self.name = f"mcp:{text.strip()}"  # type: ignore[misc]  # as written: $NAME values stay unexpanded
        self.call_timeout = call_timeout
        self._conn = _Connection(server, extra_env or None, cwd if cwd is not None else server.cwd, headers)
        self._finalizer = weakref.finalize(self, self._conn.close)
        self._conn.start(startup_timeout)
        self._specs = specs_from_listing(self._conn.tools, self._conn.label)

    def tools(self) -> list[ToolSpec]:
        return list(self._specs)

    @property
    def server_name(self) -> str:
        """The name the server gave in its ``initialize`` answer (``serverInfo.name``), or ""."""
        return self._conn.server_name

    def listing(self) -> dict[str, Any]:
        """The server's ``tools/list`` result as it sent it (every page), ``{"tools": [...]}``."""
        return {"tools": list(self._conn.tools)}

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


def save_listing(spec: str, directory: str | Path, *, startup_timeout: float = 30.0) -> Path:
    """Start the MCP server ``spec`` (the text after ``mcp:``), save its ``tools/list`` result as
    ``<server name>.json`` in ``directory`` (a tool library any loader reads) and shut it down."""
    from ..dataset.jsonio import write_json

    env = MCPEnvironment(spec, startup_timeout=startup_timeout)
    try:
        doc = env.listing()
        base = env.server_name or (Path(env.command[-1]).name if env.command else "") or "mcp-server"
    finally:
        env.close()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "mcp-server"
    out = Path(directory) / f"{stem}.json"
    write_json(out, doc)
    return out


__all__ = ["MCPEnvironment", "ServerSpec", "convert_result", "parse_server", "save_listing", "specs_from_listing"]
