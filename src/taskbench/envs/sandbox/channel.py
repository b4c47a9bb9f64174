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
import contextvars
import inspect
import json
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from ...schema import ToolCall, ToolResult
from ._json import clean, clean_text, count_values, may_hold_surrogates

ToolHandler = Callable[[ToolCall], Awaitable[Any] | Any]
"""``async (ToolCall) -> ToolResult`` (``Environment.call`` is one). A plain function works too (it runs in a
thread), and a handler may return a bare JSON value instead of a ToolResult."""

MAX_REQUEST = 1024 * 1024  # bytes of one tool-call line; a longer one is refused and its connection closed
MAX_DEPTH = 64  # levels of nesting of a call's arguments
MAX_CONNECTIONS = 16  # connections to the tool socket at once (one per thread of the code); more are closed
MAX_RUN_BYTES = 16 * 1024 * 1024  # bytes of calls and replies one run may pass; past it calls are refused
MAX_CALL_VALUES = 50_000  # JSON values in one call's arguments, counted before they are parsed
MAX_RUN_VALUES = 200_000  # JSON values in all the calls of one run, counted before they are parsed
MAX_PORT_CONNECTIONS = 32  # connections relayed to one allowed port at once; more are closed at once
MAX_HANDLER_THREADS = 32  # plain-function handlers running at once per sandbox (stuck ones included)


class HandlerThreads:
    """Runs plain-function handlers on daemon threads of their own, at most ``MAX_HANDLER_THREADS`` at once.

    Not on the event loop's default executor: ``asyncio.run`` (and the interpreter's exit) waits for that
    executor's threads, so a handler still running when its run ended at the wall limit would hold the caller
    for as long as it runs. A daemon thread holds nothing: the run returns at its limit, the loop closes, the
    process exits; the handler's late answer is dropped."""

    def __init__(self, cap: int = MAX_HANDLER_THREADS) -> None:
        self.cap = cap
        self.busy = 0
        self._lock = threading.Lock()

    async def call(self, fn: Callable[[ToolCall], Any], call: ToolCall) -> Any:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self.busy >= self.cap:
                raise RuntimeError(f"{self.busy} calls of this sandbox's tool handler are still running "
                                   "(from this run or earlier ones)")
            self.busy += 1
        future: asyncio.Future[Any] = loop.create_future()
        context = contextvars.copy_context()

        def work() -> None:
            ok, value = True, None
            try:
                value = context.run(fn, call)
            except BaseException as exc:  # handed to the awaiting task, which turns it into an error result
                ok, value = False, exc
            finally:
                with self._lock:
                    self.busy -= 1
            try:
                loop.call_soon_threadsafe(_settle, future, ok, value)
            except RuntimeError:  # the loop is closed: nobody waits for this answer any more
                pass

        threading.Thread(target=work, name="taskbench-tool-handler", daemon=True).start()
        return await future


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


_DEFAULT_THREADS = HandlerThreads()


async def call_handler(handler: ToolHandler | None, call: ToolCall,
                       threads: HandlerThreads | None = None) -> ToolResult:
    """Run ``handler`` on ``call``; never raises (a failing handler is an error result the code can read). A
    plain function runs on one of ``threads``' daemon threads."""
    if handler is None:
        return ToolResult(call_id=call.id, name=call.name, error="this sandbox has no tools")
    try:
        method = type(handler).__call__ if not inspect.isroutine(handler) else None
        if inspect.iscoroutinefunction(handler) or (method is not None and inspect.iscoroutinefunction(method)):
            value = await handler(call)
        else:
            value = await (threads or _DEFAULT_THREADS).call(handler, call)
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
    def __init__(self, run: int, max_calls: int) -> None:
        self.run = run
        self.calls: list[ToolCall] = []
        self.results: list[ToolResult | None] = []
        self.max_calls = max_calls
        self.bytes = 0
        self.values = 0
        self.refused = 0


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
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            if tasks:  # let each close its sockets before the loop goes
                await asyncio.wait(tasks, timeout=2)
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None


class ToolChannel(_UnixServer):
    """Serves the tool socket at ``path`` for one worker; records the calls of the run in progress."""

    def __init__(self, path: str, handler: ToolHandler | None) -> None:
        super().__init__(path)
        self.handler = handler
        self.threads = HandlerThreads()
        self._record: _Record | None = None
        self.refused = 0

    async def start(self) -> None:
        await self._listen(limit=MAX_REQUEST)

    def begin(self, run: int, max_calls: int = 1000) -> None:
        self._record = _Record(run, max_calls)
        self.refused = 0

    def end(self) -> tuple[list[ToolCall], list[ToolResult]]:
        """The calls of the run and their results (``refused`` then holds how many calls were refused)."""
        record, self._record = self._record, None
        if record is None:
            return [], []
        self.refused = record.refused
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
            if len(self._tasks) > MAX_CONNECTIONS:
                return  # closed at once: at most MAX_CONNECTIONS partial calls are buffered here
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    if self._record is not None:
                        self._record.refused += 1
                    writer.write(_reply_error(f"tool call larger than {MAX_REQUEST} bytes: refused"))
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
        if len(record.calls) >= record.max_calls:
            record.refused += 1
            return _reply_error(f"tool-call limit reached ({record.max_calls} calls per run): refused")
        record.bytes += len(line)
        if record.bytes > MAX_RUN_BYTES:
            record.refused += 1
            return _reply_error(f"tool-call data limit reached ({MAX_RUN_BYTES} bytes per run): refused")
        # values are counted before anything is parsed: what the host builds from a run's calls stays bounded
        values = count_values(line, MAX_CALL_VALUES)
        if values > MAX_CALL_VALUES:
            record.refused += 1
            return _reply_error(f"tool call with more than {MAX_CALL_VALUES} JSON values: refused")
        if record.values + values > MAX_RUN_VALUES:
            record.refused += 1
            return _reply_error(f"tool-call value limit reached ({MAX_RUN_VALUES} JSON values per run): refused")
        record.values += values
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise TypeError("a call is a JSON object")
            name = msg["name"]
            arguments = msg.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise TypeError("name must be a string and arguments an object")
            if len(name) > 256:
                raise ValueError("the tool name is longer than 256 characters")
            if _too_deep(arguments):
                raise ValueError(f"the arguments are nested more than {MAX_DEPTH} levels deep")
        except RecursionError:
            record.refused += 1
            return _reply_error("malformed tool call: nested too deep to read")
        except (ValueError, KeyError, TypeError) as exc:
            record.refused += 1
            return _reply_error(clean_text(f"malformed tool call: {exc}"[:500]))
        if may_hold_surrogates(line):  # a lone surrogate reaches neither the handler nor the record
            name, arguments = clean_text(name), clean(arguments)
        index = len(record.calls)
        call = ToolCall(id=f"code{record.run}-{index + 1}", name=name, arguments=arguments)
        record.calls.append(call)
        record.results.append(None)
        result = await call_handler(self.handler, call, self.threads)
        payload = {"content": result.content, "error": result.error, "status": result.status}
        try:
            reply = json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n"
        except UnicodeEncodeError:  # the handler's answer holds a lone surrogate: kept and sent as U+FFFD
            result = result.model_copy(update={"content": clean(result.content),
                                               "error": None if result.error is None else clean_text(result.error)})
            payload = {"content": result.content, "error": result.error, "status": result.status}
            reply = json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n"
        except (TypeError, ValueError, RecursionError) as exc:
            reply = _reply_error(f"tool result is not JSON: {type(exc).__name__}")
        if self._record is record:
            record.results[index] = result
        record.bytes += len(reply)
        return reply


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, dict)):
            if level > MAX_DEPTH:
                return True
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False

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
            if len(self._tasks) > MAX_PORT_CONNECTIONS:
                return  # closed at once, before any connection to the port: the host's descriptors stay bounded
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                return
            try:
                await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
            finally:
                up_writer.close()
                with contextlib.suppress(Exception):
                    await up_writer.wait_closed()
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

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


__all__ = ["MAX_CALL_VALUES", "MAX_CONNECTIONS", "MAX_PORT_CONNECTIONS", "MAX_REQUEST", "MAX_RUN_BYTES",
           "MAX_RUN_VALUES", "HandlerThreads", "PortForward", "ToolChannel", "ToolHandler", "call_handler"]
