"""An OpenAI-compatible HTTP server over any taskbench :class:`~taskbench.llm.Model` (``taskbench serve``).

Endpoints: ``POST /v1/chat/completions`` (non-streaming), ``GET /v1/models``, ``GET /health``.
``response_format`` ``{"type": "json_object"}`` and ``{"type": "json_schema", "json_schema": {"schema": ...}}``
(and vLLM's ``guided_json``) are passed down to the Model as a JSON Schema, so the embedded llama.cpp model
decodes under a grammar. ``stream: true`` and ``n > 1`` are rejected with a 400 in the OpenAI error shape.

Needs the ``serve`` extra (fastapi, uvicorn); imported only by ``taskbench serve`` and tests.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError, MissingDependencyError, ModelError, TaskbenchError
from .base import GenerationConfig
from .model import Model

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the environment
    if exc.name and exc.name.split(".")[0] in ("fastapi", "starlette"):
        raise MissingDependencyError("fastapi", "serve", "taskbench serve") from exc
    raise


class ChatCompletionRequest(BaseModel):
    """The subset of the chat completions request this server understands (unknown fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(default=None, description="Ignored: the server answers with its one model.")
    messages: list[dict[str, Any]] = Field(description="Chat messages; content may be a string or text parts.")
    temperature: float | None = Field(default=None, description="Sampling temperature.")
    top_p: float | None = Field(default=None, description="Nucleus sampling mass.")
    max_tokens: int | None = Field(default=None, description="Most tokens to generate.")
    max_completion_tokens: int | None = Field(default=None, description="Newer name of max_tokens.")
    seed: int | None = Field(default=None, description="Sampling seed.")
    stop: str | list[str] | None = Field(default=None, description="Stop sequence(s).")
    response_format: dict[str, Any] | None = Field(default=None, description="text | json_object | json_schema.")
    guided_json: dict[str, Any] | None = Field(default=None, description="vLLM-style schema field.")
    stream: bool = Field(default=False, description="Streaming is not supported (400).")
    n: int = Field(default=1, description="Only 1 is supported.")


def _error(status: int, message: str, kind: str = "invalid_request_error", param: str | None = None) -> JSONResponse:
    return JSONResponse(
        status_code=status, content={"error": {"message": message, "type": kind, "param": param, "code": None}}
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
        return spec["schema"], spec.get("name")
    raise ConfigError(f"unsupported response_format type {kind!r} (use text, json_object or json_schema)")


def create_app(model: Model, *, served_name: str | None = None) -> FastAPI:
    """The FastAPI app serving ``model`` under ``served_name`` (default ``model.name``)."""
    name = served_name or model.name
    created = int(time.time())
    app = FastAPI(title="taskbench serve", description=f"OpenAI-compatible server over {name}", docs_url=None)
    app.state.model = model

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(400, f"invalid request: {where}: {first.get('msg', 'bad value')}", param=where or None)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "taskbench"}]}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(req: ChatCompletionRequest) -> JSONResponse | dict[str, Any]:
        if req.stream:
            return _error(400, "stream=true is not supported by taskbench serve; send stream=false", param="stream")
        if req.n != 1:
            return _error(400, "only n=1 is supported", param="n")
        if not req.messages:
            return _error(400, "messages must not be empty", param="messages")
        try:
            schema, schema_name = request_schema(req)
        except ConfigError as exc:
            return _error(400, str(exc), param="response_format")
        base = model.config
        stop = req.stop if req.stop is not None else list(base.stop)
        config = GenerationConfig(
            temperature=base.temperature if req.temperature is None else req.temperature,
            top_p=base.top_p if req.top_p is None else req.top_p,
            max_tokens=req.max_completion_tokens or req.max_tokens or base.max_tokens,
            seed=base.seed if req.seed is None else req.seed,
            stop=(stop,) if isinstance(stop, str) else tuple(stop),
        )
        messages = [{"role": str(m.get("role", "user")), "content": _text(m.get("content"))} for m in req.messages]
        try:
            out = await model.generate(messages, schema=schema, config=config, schema_name=schema_name)
        except ModelError as exc:
            return _error(503, f"the model failed: {exc}", kind="server_error")
        except TaskbenchError as exc:
            return _error(400, str(exc))
        usage = out.usage
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": out.text},
                    "finish_reason": out.finish_reason or "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            },
        }

    return app


__all__ = ["ChatCompletionRequest", "create_app", "request_schema"]
