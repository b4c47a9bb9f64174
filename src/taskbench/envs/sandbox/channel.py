"""The parent's side of the sandbox's only ways out: the tool socket, and one socket per allowed loopback port.

:class:`ToolChannel` serves the Unix socket that the code's ``call_tool`` talks to (one JSON object per line
each way), turns each request into a :class:`~taskbench.schema.ToolCall`, hands it to the handler (for example
``Environment.call``) and records the call and its :class:`~taskbench.schema.ToolResult`.

:class:`PortForward` serves the socket behind one allowed port: the supervisor listens on that port on the
sandbox's own loopback and relays each connection here, and this side connects it to ``127.0.0.1:PORT`` and to
nothing else. The code chooses no address: the only destination is the port the caller allowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from ...schema import ToolCall, ToolResult

ToolHandler = Callable[[ToolCall], Awaitable[Any] | Any]
"""``async (ToolCall) -> ToolResult`` (``Environment.call`` is one). A plain function works too (it runs in a
thread), and a handler may return a bare JSON value instead of a ToolResult."""

MAX_REQUEST = 8 * 1024 * 1024  # bytes of one tool-call line


async def call_handler(handler: ToolHandler | None, call: ToolCall) -> ToolResult:
    """Run ``handler`` on ``call``; never raises (a failing handler is an error result the code can read)."""
    if handler is None:
        return ToolResult(call_id=call.id, name=call.name, error="this sandbox has no tools")
    try:
        method = type(handler).__call__ if not inspect.isroutine(handler) else None
        if inspect.iscoroutinefunction(handler) or (method is not None and inspect.iscoroutinefunction(method)):
            value = await handler(call)
        else:
            value = await asyncio.to_thread(handler, call)
            if inspect.isawaitable(value):
                value = await value
    except Exception as exc:
        return ToolResult(call_id=call.id, name=call.name, error=f"tool failed: {type(exc).__name__}: {exc}")
    if isinstance(value, ToolResult):
        return value
    try:
        return ToolResult(call_id=call.id, name=call.name, content=value)
    except Exception as exc:
        return ToolResult(call_id=call.id, name=call.name, error=f"tool returned a value that is not JSON: {exc}")


class _Record:
    def __init__(self, run: int) -> None:
        self.run = run
        self.calls: list[ToolCall] = []
        self.results: list[ToolResult | None] = []


class _UnixServer:
    """A Unix-socket server at ``path`` (mode 0666: the sandbox's uid reaches it through a bind) that tracks its
    connections, so that closing it also cancels the ones in progress."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def _listen(self, **options: Any) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=self.path, **options)
        os.chmod(self.path, 0o666)  # its directory is the parent's, mode 0700; the sandbox reaches it by a bind

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._connection(reader, writer)
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None


class ToolChannel(_UnixServer):
    """Serves the tool socket at ``path`` for one worker; records the calls of the run in progress."""

    def __init__(self, path: str, handler: ToolHandler | None) -> None:
        super().__init__(path)
        self.handler = handler
        self._record: _Record | None = None

    async def start(self) -> None:
        await self._listen(limit=MAX_REQUEST)

    def begin(self, run: int) -> None:
        self._record = _Record(run)

    def end(self) -> tuple[list[ToolCall], list[ToolResult]]:
        record, self._record = self._record, None
        if record is None:
            return [], []
        done = [(c, r) for c, r in zip(record.calls, record.results, strict=True) if r is not None]
        pending = [c for c, r in zip(record.calls, record.results, strict=True) if r is None]
        results = [r for _, r in done]
        calls = [c for c, _ in done]
        for c in pending:  # cut off by the end of the run
            calls.append(c)
            results.append(ToolResult(call_id=c.id, name=c.name, error="the run ended before the tool answered"))
        return calls, results

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    writer.write(_reply_error(f"tool call larger than {MAX_REQUEST} bytes"))
                    break
                if not line:
                    break
                writer.write(await self._answer(line))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, line: bytes) -> bytes:
        record = self._record
        if record is None:
            return _reply_error("no run in progress")
        try:
            msg = json.loads(line)
            name = msg["name"]
            arguments = msg.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise TypeError("name must be a string and arguments an object")
        except (ValueError, KeyError, TypeError) as exc:
            return _reply_error(f"malformed tool call: {exc}")
        index = len(record.calls)
        call = ToolCall(id=f"code{record.run}-{index + 1}", name=name, arguments=arguments)
        record.calls.append(call)
        record.results.append(None)
        result = await call_handler(self.handler, call)
        if self._record is record:
            record.results[index] = result
        payload = {"content": result.content, "error": result.error, "status": result.status}
        try:
            return json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n"
        except (TypeError, ValueError) as exc:
            return _reply_error(f"tool result is not JSON: {exc}")

def _reply_error(message: str) -> bytes:
    return json.dumps({"content": None, "error": message, "status": None}).encode("utf-8") + b"\n"


class PortForward(_UnixServer):
    """Relays connections arriving on the Unix socket ``path`` to 127.0.0.1:``port``."""

    def __init__(self, port: int, path: str) -> None:
        super().__init__(path)
        self.port = port

    async def start(self) -> None:
        await self._listen()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                return
            try:
                await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
            finally:
                up_writer.close()
        finally:
            writer.close()

async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


__all__ = ["MAX_REQUEST", "PortForward", "ToolChannel", "ToolHandler", "call_handler"]
