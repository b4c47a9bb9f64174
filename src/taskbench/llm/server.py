"""An OpenAI-compatible HTTP server over any taskbench :class:`~taskbench.llm.Model` (``taskbench serve``).

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health``.

- ``response_format`` ``{"type": "json_object"}`` and ``{"type": "json_schema", "json_schema": {"schema": ...}}``
  (and vLLM's ``guided_json``) are passed down to the Model as a JSON Schema, so the embedded llama.cpp model
  decodes under a grammar.
- ``tools`` and ``tool_choice`` (``auto`` | ``none`` | ``required`` | ``{"type": "function", "function":
  {"name"}}``) are passed down too; the answer carries OpenAI-shaped ``tool_calls`` (arguments as a JSON string)
  with ``finish_reason: "tool_calls"``. History may hold assistant ``tool_calls`` and ``tool`` messages.
- ``stream: true`` answers with server-sent events in OpenAI's chunk format (``chat.completion.chunk``): text as
  it is decoded, tool calls as ``delta.tool_calls``, a last chunk with the finish reason, a usage chunk when
  ``stream_options.include_usage`` is set, then ``data: [DONE]``.
- ``finish_reason`` tells the truth: ``"length"`` when the answer hit ``max_tokens``; a structured answer that
  says ``"stop"`` is complete JSON.
- A request naming another model than the served one gets a 404 in OpenAI's error shape (code
  ``model_not_found``); ``n > 1`` a 400.

Needs the ``serve`` extra (fastapi, uvicorn); imported only by ``taskbench serve`` and tests.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError, MissingDependencyError, ModelError, TaskbenchError
from .base import GenerationConfig
from .model import Model, ModelOutput

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, StreamingResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the environment
    if exc.name and exc.name.split(".")[0] in ("fastapi", "starlette"):
        raise MissingDependencyError("fastapi", "serve", "taskbench serve") from exc
    raise


MAX_TOKENS = 1_000_000
"""The most tokens a request may ask for (more is refused with a 400)."""

TOOL_CHOICES = ("auto", "none", "required")


class ChatCompletionRequest(BaseModel):
    """The subset of the chat completions request this server understands (unknown fields are ignored)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    model: str | None = Field(default=None, description="Must name the served model (or be omitted).")
    messages: list[dict[str, Any]] = Field(description="Chat messages; content may be a string or text parts.")
    tools: list[dict[str, Any]] | None = Field(default=None, description="Tools in OpenAI's format.")
    tool_choice: str | dict[str, Any] | None = Field(default=None, description="auto | none | required | a tool.")
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description="Sampling temperature (0..2).")
    top_p: float | None = Field(default=None, ge=0.0, le=1.0, description="Nucleus sampling mass (0..1).")
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS, description="Most tokens to generate.")
    max_completion_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS,
                                              description="Newer name of max_tokens.")
    seed: int | None = Field(default=None, description="Sampling seed.")
    stop: str | list[str] | None = Field(default=None, description="Stop sequence(s).")
    response_format: dict[str, Any] | None = Field(default=None, description="text | json_object | json_schema.")
    guided_json: dict[str, Any] | None = Field(default=None, description="vLLM-style schema field.")
    stream: bool = Field(default=False, description="Answer with server-sent events.")
    stream_options: dict[str, Any] | None = Field(default=None, description="include_usage: a last usage chunk.")
    n: int = Field(default=1, description="Only 1 is supported.")


def _json_text(data: Any) -> str:
    """JSON text of ``data`` that UTF-8 can always encode: a lone surrogate (a ``"\\ud800"`` escape in the
    request, echoed back) is written as its ``\\u`` escape instead of failing the answer."""
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data)
    return text


class _SafeJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return _json_text(content).encode("utf-8")


def _error(status: int, message: str, kind: str = "invalid_request_error", param: str | None = None,
           code: str | None = None) -> JSONResponse:
    return _SafeJSONResponse(
        status_code=status, content={"error": {"message": message, "type": kind, "param": param, "code": code}}
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else str(content)


def request_schema(req: ChatCompletionRequest) -> tuple[dict[str, Any] | None, str | None]:
    """``(json_schema, schema_name)`` asked for by a request, or ``(None, None)``; raises ConfigError."""
    if req.guided_json is not None:
        _check_schema(req.guided_json)
        return req.guided_json, None
    fmt = req.response_format
    if not fmt:
        return None, None
    kind = fmt.get("type", "text")
    if kind == "text":
        return None, None
    if kind == "json_object":
        return {"type": "object"}, None
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
            raise ConfigError("response_format json_schema needs json_schema.schema (an object)")
        _check_schema(spec["schema"])
        return spec["schema"], spec.get("name")
    raise ConfigError(f"unsupported response_format type {kind!r} (use text, json_object or json_schema)")


MAX_TOOL_SCHEMA_DEPTH = 64
"""Deepest nesting of a tool's parameters schema a request may send (300 levels cut a stream off)."""


def _depth(value: Any) -> int:
    """How deeply ``value``'s objects and arrays nest (iterative: no recursion limit to hit)."""
    from ..schema.chat import nesting_depth

    return nesting_depth(value, MAX_TOOL_SCHEMA_DEPTH)


def check_tools(req: ChatCompletionRequest) -> None:
    """Refuse (ConfigError, a 400) tools that are not functions with a name, and a ``tool_choice`` that is not
    auto / none / required / one of the given tools, before any answer starts (streamed or not)."""
    names = []
    for i, tool in enumerate(req.tools or []):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(fn, dict) \
                or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ConfigError(f"tools[{i}]: expected {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}")
        params = fn.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise ConfigError(f"tools[{i}].function.parameters: expected a JSON Schema object")
        if params is not None and _depth(params) > MAX_TOOL_SCHEMA_DEPTH:
            raise ConfigError(f"tools[{i}].function.parameters: nested deeper than {MAX_TOOL_SCHEMA_DEPTH} levels")
        names.append(fn["name"])
    choice = req.tool_choice
    if choice is None:
        return
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise ConfigError(f"tool_choice {choice[:40]!r}: expected auto, none, required or a function")
        if choice == "required" and not names:
            raise ConfigError("tool_choice 'required' needs tools")
        return
    fn = choice.get("function") if choice.get("type") == "function" else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str) or name not in names:
        raise ConfigError(f"tool_choice names no tool of the request ({', '.join(names) or 'no tools'})")


def _check_schema(schema: dict[str, Any]) -> None:
    """A client's JSON Schema must be one (a ConfigError, a 400, not the model's failure later)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the schema"
        raise ConfigError(f"response_format json_schema: not a JSON Schema at {where}: {exc.message[:200]}") \
            from None
    except RecursionError:
        raise ConfigError("response_format json_schema: nested too deep") from None


def _messages(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Request messages with text-part contents flattened; tool calls and tool results kept. A malformed
    assistant ``tool_calls`` is a ConfigError (a 400)."""
    out = []
    for i, m in enumerate(raw):
        d: dict[str, Any] = {"role": str(m.get("role", "user")), "content": _text(m.get("content"))}
        if d["role"] == "assistant" and m.get("tool_calls") is not None:
            calls = m["tool_calls"]
            ok = isinstance(calls, list) and all(
                isinstance(c, dict) and isinstance(c.get("function"), dict)
                and isinstance(c["function"].get("name"), str)
                and isinstance(c["function"].get("arguments", "{}"), str) for c in calls)
            if not ok:
                raise ConfigError(f"messages[{i}].tool_calls: expected a list of {{\"id\", \"type\": \"function\", "
                                  "\"function\": {\"name\": str, \"arguments\": str}}")
            d["tool_calls"] = calls
            d["content"] = m.get("content") if isinstance(m.get("content"), str) else None
        if d["role"] == "tool":
            d["tool_call_id"] = str(m.get("tool_call_id", ""))
            if m.get("name"):
                d["name"] = m["name"]
        out.append(d)
    return out


def _wire_calls(out: ModelOutput) -> list[dict[str, Any]]:
    return [c.to_openai() for c in out.tool_calls]


def _finish_reason(out: ModelOutput) -> str:
    if out.tool_calls and out.finish_reason != "length":
        return "tool_calls"
    return out.finish_reason or "stop"


def _usage(out: ModelOutput) -> dict[str, int]:
    u = out.usage
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
            "total_tokens": u.prompt_tokens + u.completion_tokens}


def create_app(model: Model, *, served_name: str | None = None) -> FastAPI:
    """The FastAPI app serving ``model`` under ``served_name`` (default ``model.name``)."""
    name = served_name or model.name
    accepted = {name, model.name}
    created = int(time.time())
    app = FastAPI(title="taskbench serve", description=f"OpenAI-compatible server over {name}", docs_url=None,
                  default_response_class=_SafeJSONResponse)
    app.state.model = model

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(400, f"invalid request: {where}: {first.get('msg', 'bad value')}", param=where or None)

    @app.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception) -> JSONResponse:  # a bug of ours: still OpenAI-shaped
        return _error(500, f"internal error: {type(exc).__name__}", kind="server_error")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:  # 404, 405, ... OpenAI-shaped
        return _error(exc.status_code, str(exc.detail), code=None)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "taskbench"}]}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(req: ChatCompletionRequest) -> JSONResponse | StreamingResponse | dict[str, Any]:
        if req.model is not None and req.model not in accepted:
            return _error(404, f"The model '{req.model}' does not exist; this server serves '{name}'",
                          param="model", code="model_not_found")
        if req.n != 1:
            return _error(400, "only n=1 is supported", param="n")
        if not req.messages:
            return _error(400, "messages must not be empty", param="messages")
        try:
            schema, schema_name = request_schema(req)
        except ConfigError as exc:
            return _error(400, str(exc), param="response_format")
        try:
            check_tools(req)
            messages = _messages(req.messages)
        except ConfigError as exc:
            return _error(400, str(exc), param="tools" if str(exc).startswith("tool") else "messages")
        base = model.config
        stop = req.stop if req.stop is not None else list(base.stop)
        config = GenerationConfig(
            temperature=base.temperature if req.temperature is None else req.temperature,
            top_p=base.top_p if req.top_p is None else req.top_p,
            max_tokens=req.max_completion_tokens or req.max_tokens or base.max_tokens,
            seed=base.seed if req.seed is None else req.seed,
            stop=(stop,) if isinstance(stop, str) else tuple(stop),
        )
        kwargs: dict[str, Any] = {"schema": schema, "config": config, "schema_name": schema_name}
        if req.tools:
            kwargs["tools"] = req.tools
            kwargs["tool_choice"] = req.tool_choice
            if schema is not None and req.tool_choice != "none":
                return _error(400, "send either tools or a structured response_format, not both", param="tools")
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if req.stream:
            include_usage = bool((req.stream_options or {}).get("include_usage"))
            return StreamingResponse(
                _stream(model, messages, kwargs, completion_id, name, include_usage),
                media_type="text/event-stream", headers={"Cache-Control": "no-cache"},
            )
        try:
            out = await model.generate(messages, **kwargs)
        except ModelError as exc:
            return _error(503, f"the model failed: {exc}", kind="server_error")
        except TaskbenchError as exc:
            return _error(400, str(exc))
        message: dict[str, Any] = {"role": "assistant", "content": out.text if out.text or not out.tool_calls else None}
        if out.tool_calls:
            message["tool_calls"] = _wire_calls(out)
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(out), "logprobs": None}],
            "usage": _usage(out),
        }

    return app


MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""The largest request body ``taskbench serve`` reads by default (``--max-request-mb``): a body announced larger is
refused with a 413 before a byte of it is read; one sent in chunks is refused as soon as it passes the limit."""

REQUEST_TIMEOUT = 30.0
"""Seconds a client may take to send one request, headers and body (``--request-timeout``), counted from its
first byte (from the connection's start for the first request); a slower one gets a 408 and the connection is
closed. The time the model takes to answer is not counted."""

MAX_CONNECTIONS = 256
"""Connections (and requests in flight) ``taskbench serve`` holds at once; more get a 503 at once."""


def limit_requests(app: Any, *, max_bytes: int = MAX_REQUEST_BYTES) -> Any:
    """``app`` (ASGI) behind a body limit: an HTTP request's body is read here, up to ``max_bytes``, and handed on
    whole; a larger one gets an OpenAI-shaped 413 (announced by Content-Length: before reading it). So memory
    per request is bounded by ``max_bytes`` whatever the client sends."""

    async def limited(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        too_big = _error(413, f"the request body is larger than {max_bytes:,} bytes (this server's "
                              "--max-request-mb)", param=None, code="request_too_large")
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                announced = int(declared)
            except ValueError:
                announced = -1
            if announced > max_bytes:
                await too_big(scope, receive, send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > max_bytes:
                await too_big(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole = b"".join(chunks)
        chunks.clear()
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": whole, "more_body": False}
            later: dict[str, Any] = await receive()  # after the body: the disconnect, when it comes
            return later

        await app(scope, replay, send)

    return limited


def timed_protocol(timeout: float = REQUEST_TIMEOUT) -> type:
    """uvicorn's h11 protocol with a deadline on the client: a request must arrive whole (headers and body)
    within ``timeout`` seconds of its first byte, and a new connection must send its first request within
    ``timeout`` seconds; otherwise it gets a 408 and is closed (a slow client holds no connection, task or
    buffer for longer). uvicorn itself times out only idle keep-alive connections."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._tb_since: float | None = self.loop.time()  # the first request is due from the start
            self._tb_timer = self.loop.call_later(1.0, self._tb_check)

        def data_received(self, data: bytes) -> None:
            if self._tb_since is None:
                self._tb_since = self.loop.time()
            super().data_received(data)
            self._tb_update()

        def on_response_complete(self) -> None:
            if self.conn.their_state is h11.SEND_BODY:  # answered (a 413) before the body ended: read no more of it
                self.transport.close()
                return
            super().on_response_complete()
            self._tb_update()

        def _tb_update(self) -> None:
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
                self._tb_since = None  # the request is in: answering it is not the client's time
            elif self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0] and self.cycle is not None \
                    and self.cycle.response_complete:
                self._tb_since = None  # between requests: uvicorn's keep-alive timeout applies

        def _tb_check(self) -> None:
            if self.transport.is_closing():
                return
            if self._tb_since is not None and self.loop.time() - self._tb_since > timeout:
                self._tb_expire()
                return
            self._tb_timer = self.loop.call_later(1.0, self._tb_check)

        def _tb_expire(self) -> None:
            self.logger.info("closing a client that did not send its request within %g s", timeout)
            body = json.dumps({"error": {"message": f"the request did not arrive within {timeout:g} s",
                                         "type": "invalid_request_error", "param": None,
                                         "code": "request_timeout"}}).encode()
            if self.conn.our_state is h11.IDLE and self.cycle is None or (
                    self.cycle is not None and not self.cycle.response_started):
                head = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n")
                self.transport.write(head + body)
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._tb_timer.cancel()
            super().connection_lost(exc)

    return TimedH11Protocol


def serve(model: Model, *, host: str = "127.0.0.1", port: int = 8000, served_name: str | None = None,
          max_bytes: int = MAX_REQUEST_BYTES, timeout: float = REQUEST_TIMEOUT,
          max_connections: int = MAX_CONNECTIONS, log_level: str = "warning") -> None:
    """Serve ``model`` (blocks until interrupted) with the limits above: request bodies of at most
    ``max_bytes``, clients that send a request within ``timeout`` seconds, at most ``max_connections``
    connections at once."""
    try:
        import uvicorn
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError("uvicorn", "serve", "taskbench serve") from exc
    if max_bytes < 1 or timeout <= 0 or max_connections < 1:
        raise ConfigError("serve limits must be positive (--max-request-mb, --request-timeout, --max-connections)")
    app = limit_requests(create_app(model, served_name=served_name), max_bytes=max_bytes)
    uvicorn.run(app, host=host, port=port, log_level=log_level, http=timed_protocol(timeout),
                limit_concurrency=max_connections, timeout_keep_alive=5)


def _sse(data: Any) -> str:
    return f"data: {_json_text(data)}\n\n"


async def _stream(model: Model, messages: list[dict[str, Any]], kwargs: dict[str, Any], completion_id: str,
                  name: str, include_usage: bool) -> AsyncIterator[str]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return _sse({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": name,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra})

    yield chunk({"role": "assistant", "content": ""})
    out: ModelOutput | None = None
    try:
        async for piece in model.stream(messages, **kwargs):
            if isinstance(piece, str):
                yield chunk({"content": piece})
            else:
                out = piece
    except TaskbenchError as exc:  # headers are sent: the error travels as an event
        kind = "server_error" if isinstance(exc, ModelError) else "invalid_request_error"
        yield _sse({"error": {"message": str(exc), "type": kind, "param": None, "code": None}})
        yield "data: [DONE]\n\n"
        return
    assert out is not None
    if out.tool_calls:
        yield chunk({"tool_calls": [{"index": i, **c} for i, c in enumerate(_wire_calls(out))]})
    yield chunk({}, _finish_reason(out))
    if include_usage:
        yield _sse({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": name,
                    "choices": [], "usage": _usage(out)})
    yield "data: [DONE]\n\n"


__all__ = ["MAX_CONNECTIONS", "MAX_REQUEST_BYTES", "REQUEST_TIMEOUT", "ChatCompletionRequest", "create_app",
           "limit_requests", "request_schema", "serve", "timed_protocol"]
