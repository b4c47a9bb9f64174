"""A scriptable loopback HTTP/1.1 server that misbehaves on purpose (for the model layer's retry tests).

It speaks just enough HTTP (keep-alive, Content-Length bodies) to serve ``POST /v1/chat/completions`` and
``GET /v1/models`` to the OpenAI SDK, and runs on its own event loop in a background thread so the client
under test has its loop to itself. Each request consumes the next scripted behaviour:

- ``("ok",)``                      a normal chat completion (content from ``reply(request_json)``; a dict
                                   it returns is the whole assistant message, tool calls and all)
- ``("status", code, headers[, message])``  an error status with an OpenAI-style error body
- ``("hang", seconds)``            read the request, say nothing for ``seconds``, then close
- ``("truncate",)``                promise a longer Content-Length than sent, then close
- ``("reset",)``                   close with a TCP RST (SO_LINGER 0)
- ``("invalid_json",)``            200 with a complete but malformed JSON body
- ``("message", message, finish)``  200 with this assistant message dict (tool calls, say) and finish reason
- ``("raw", code, make[, content_type])``  status ``code`` with the body ``make(request_headers)`` (bytes or str;
  a server that echoes what it was sent)

When the script is used up, every further request gets ``("ok",)``. ``count`` and ``requests`` record what
arrived (chat completion requests only), so tests count requests at the server. ``delay`` makes every ``ok``
answer wait that long (``max_in_flight`` then shows how many requests were at the server at once); ``port``
binds a given port (to restart a stopped server where its clients expect it).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any


def default_reply(body: dict[str, Any]) -> str:
    user = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    return json.dumps({"echo": user[-1] if user else "", "n": 1})


class FaultServer:
    def __init__(self, script: list[tuple[Any, ...]] | None = None, reply: Callable[[dict], Any] = default_reply,
                 *, port: int = 0, delay: float = 0.0):
        self.script: list[tuple[Any, ...]] = list(script or [])
        self.reply = reply
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0
        self.count = 0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-server", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FaultServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fault server did not start")
        return self

    def stop(self) -> None:
        def _shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            self._loop.call_later(0.05, self._loop.stop)

        self._loop.call_soon_threadsafe(_shutdown)
        self._thread.join(10)
        self._loop.close()

    def set_script(self, script: list[tuple[Any, ...]]) -> None:
        self.script = list(script)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def _start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
            self.port = self._server.sockets[0].getsockname()[1]

        self._loop.run_until_complete(_start())
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method == "GET" and path.endswith("/models"):
                    self._send(writer, 200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
                    await writer.drain()
                    continue
                self.count += 1
                payload = json.loads(body or b"{}")
                self.requests.append(payload)
                self.headers.append(headers)
                self.paths.append(path)
                action = self.script.pop(0) if self.script else ("ok",)
                keep = await self._act(action, payload, writer)
                if not keep:
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            if not writer.is_closing():
                writer.close()

    async def _act(self, action: tuple[Any, ...], payload: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        kind = action[0]
        if kind == "ok":
            if self.delay:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    await asyncio.sleep(self.delay)
                finally:
                    self.in_flight -= 1
            text = self.reply(payload)
            if isinstance(text, dict):  # a whole assistant message (tool calls, say)
                body = _completion(payload, "")
                body["choices"][0]["message"] = text
                body["choices"][0]["finish_reason"] = "tool_calls" if text.get("tool_calls") else "stop"
                self._send(writer, 200, body)
            else:
                self._send(writer, 200, _completion(payload, text))
            await writer.drain()
            return True
        if kind == "message":
            body = _completion(payload, "")
            body["choices"][0]["message"] = {"role": "assistant", **action[1]}
            body["choices"][0]["finish_reason"] = action[2]
            self._send(writer, 200, body)
            await writer.drain()
            return True
        if kind == "status":
            code = action[1]
            extra = action[2] if len(action) > 2 else {}
            message = action[3] if len(action) > 3 else f"scripted {code}"
            err = {"error": {"message": message, "type": "test", "param": None, "code": None}}
            self._send(writer, code, err, extra)
            await writer.drain()
            return True
        if kind == "raw":
            made = action[2](self.headers[-1])
            data = made.encode() if isinstance(made, str) else made
            ctype = action[3] if len(action) > 3 else "text/plain"
            writer.write(f"HTTP/1.1 {action[1]} Status\r\ncontent-type: {ctype}\r\n"
                         f"content-length: {len(data)}\r\n\r\n".encode() + data)
            await writer.drain()
            return True
        if kind == "hang":
            await asyncio.sleep(action[1])
            writer.close()
            return False
        if kind == "truncate":
            data = json.dumps(_completion(payload, self.reply(payload))).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(data)}\r\n\r\n".encode()
                + data[: len(data) // 2]
            )
            await writer.drain()
            writer.close()
            return False
        if kind == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if kind == "invalid_json":
            data = b'{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"index": 0, "mess'
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(data)}\r\n\r\n".encode()
                + data
            )
            await writer.drain()
            return True
        raise ValueError(f"unknown scripted action {action!r}")

    @staticmethod
    def _send(writer: asyncio.StreamWriter, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        reason = {200: "OK", 429: "Too Many Requests", 500: "Internal Server Error"}.get(status, "Status")
        head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
        for k, v in (headers or {}).items():
            head += f"{k}: {v}\r\n"
        writer.write(head.encode() + b"\r\n" + data)


def _completion(payload: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": payload.get("model", "m"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
