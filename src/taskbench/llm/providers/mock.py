"""``mock``: a scripted provider for unit tests of logic (never a stand-in for measuring a model).

``get_model("mock/any-name", responses=...)`` where ``responses`` is

- a list of strings (or :class:`ProviderResponse`), answered in order;
- a callable ``f(request) -> str | ProviderResponse`` (may be async);
- a dict keyed by the last user message's content;
- None: echo the last user message, or, when a JSON Schema is given, the smallest JSON document valid
  against it (so ``taskbench serve --model mock/echo`` is a working constrained server for tests).

``failures`` scripts errors before answers: each item is an exception instance (raised as is), an HTTP status
int (429/5xx become :class:`TransientProviderError`, others permanent), ``(429, retry_after_seconds)``, or one of
``"timeout"`` / ``"reset"`` / ``"truncated"``. ``delay`` (seconds) sleeps before answering and honours the
request timeout.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from typing import Any, ClassVar

from ...errors import ConfigError, ModelError
from ..base import Provider, ProviderRequest, ProviderResponse, TransientProviderError


class MockProvider(Provider):
    """Scripted answers, delays and failures; records every request in :attr:`requests`."""

    name: ClassVar[str] = "mock"
    default_cache: ClassVar[bool] = False
    """The Model wrapper does not cache mock answers unless asked (``cache=path``)."""

    def __init__(
        self,
        model: str,
        *,
        responses: list[Any] | dict[str, Any] | Callable[[ProviderRequest], Any] | None = None,
        failures: list[Any] | tuple[Any, ...] = (),
        delay: float = 0.0,
        base_url: str | None = None,
        concurrency: int = 64,
    ) -> None:
        super().__init__(model, base_url=base_url, concurrency=concurrency)
        if responses is not None and not (isinstance(responses, (list, dict)) or callable(responses)):
            raise ConfigError("mock responses must be a list, a dict keyed by user message, or a callable")
        self.responses = responses
        self.failures = list(failures)
        self.delay = float(delay)
        self.requests: list[ProviderRequest] = []
        self._next = 0

    def __repr__(self) -> str:
        return f"MockProvider({self.model!r})"

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        self.requests.append(request)
        if self.delay:
            if request.timeout is not None and self.delay > request.timeout:
                await asyncio.sleep(request.timeout)
                raise TransientProviderError(f"mock: no answer within {request.timeout:.2f} s (timeout)")
            await asyncio.sleep(self.delay)
        if self.failures:
            _raise(self.failures.pop(0))
        answer = await self._answer(request)
        if isinstance(answer, ProviderResponse):
            return answer
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        prompt = sum(len(str(m.get("content", "")).split()) for m in request.messages)
        return ProviderResponse(text, prompt, len(text.split()), "stop")

    async def _answer(self, request: ProviderRequest) -> Any:
        script = self.responses
        if script is None:
            if request.json_schema is not None:
                return json.dumps(minimal_instance(request.json_schema))
            return _last_user(request)
        if isinstance(script, list):
            if self._next >= len(script):
                raise ModelError(f"mock: all {len(script)} scripted responses were used")
            self._next += 1
            return script[self._next - 1]
        if isinstance(script, dict):
            key = _last_user(request)
            if key not in script:
                raise ModelError(f"mock: no scripted response for the user message {key[:80]!r}")
            return script[key]
        value = script(request)
        if inspect.isawaitable(value):
            value = await value
        return value


def _last_user(request: ProviderRequest) -> str:
    for message in reversed(request.messages):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def _raise(item: Any) -> None:
    if isinstance(item, BaseException):
        raise item
    retry_after = None
    if isinstance(item, tuple):
        item, retry_after = item
    if isinstance(item, int):
        if item == 429 or item >= 500 or item == 408:
            raise TransientProviderError(f"mock: HTTP {item}", status=item, retry_after=retry_after)
        raise ModelError(f"mock: HTTP {item} (permanent)")
    if item == "timeout":
        raise TransientProviderError("mock: timeout")
    if item == "reset":
        raise TransientProviderError("mock: connection reset by peer")
    if item == "truncated":
        raise TransientProviderError("mock: truncated response body")
    raise ConfigError(f"mock: unknown scripted failure {item!r}")


def minimal_instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """The smallest JSON value valid against ``schema`` (common keywords: type, enum, const, properties,
    required, items, prefixItems, minItems, anyOf/oneOf/allOf, $ref into $defs/definitions)."""
    root = root if root is not None else schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return minimal_instance(target, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return minimal_instance(schema[key][0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        props = schema.get("properties", {})
        return {k: minimal_instance(props.get(k, {}), root) for k in schema.get("required", [])}
    if kind == "array":
        n = int(schema.get("minItems", 0))
        prefix = schema.get("prefixItems") or []  # per-position item schemas (JSON Schema 2020-12)
        items = schema.get("items", {})
        return [minimal_instance(prefix[i] if i < len(prefix) else items, root) for i in range(n)]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


__all__ = ["MockProvider", "minimal_instance"]
