"""``mock``: a scripted provider for unit tests of logic (never a stand-in for measuring a model).

``get_model("mock/any-name", responses=...)`` where ``responses`` is

- a list of strings, :class:`ProviderResponse` objects or tool calls (a :class:`~taskbench.schema.ToolCall`, a
  list of them, or :func:`tool_calls`), answered in order. A list is a script: when a test ends with steps of
  it unused, the test fails (``tests/conftest.py`` checks :func:`unfinished_scripts`; pass
  ``strict=False`` for a list that may be left over);
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
from ...schema import ToolCall
from ..base import Provider, ProviderRequest, ProviderResponse, TransientProviderError

_SCRIPTS: list[MockProvider] = []
"""Mock models made with a scripted list since the last :func:`forget_scripts` (kept alive on purpose: a test
that drops its model before the end must still be told its script was not used up)."""


def tool_calls(*calls: ToolCall | tuple[str, dict[str, Any]], content: str = "") -> ProviderResponse:
    """A scripted answer that calls tools: ``tool_calls(("get_weather", {"city": "Paris"}))`` or ToolCalls
    (tool names as the library writes them; arguments may also be a raw string, to script a malformed call)."""
    out = []
    for i, call in enumerate(calls):
        name, args = (call.name, call.raw_arguments if call.raw_arguments is not None else call.arguments) \
            if isinstance(call, ToolCall) else call
        out.append({"id": f"call_{i}", "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)})
    return ProviderResponse(content, 0, 0, "tool_calls", tool_calls=out)


def unfinished_scripts() -> list[str]:
    """Mock models alive now whose scripted list still has unused steps (strict scripts only)."""
    return [f"{m.model}: {m.unused} of {len(m.responses)} scripted responses unused"  # type: ignore[arg-type]
            for m in list(_SCRIPTS) if m.strict and m.unused]


def forget_scripts() -> None:
    """Stop tracking the mock models created so far (the test fixture calls this before each test)."""
    _SCRIPTS.clear()


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
        strict: bool = True,
    ) -> None:
        super().__init__(model, base_url=base_url, concurrency=concurrency)
        if responses is not None and not (isinstance(responses, (list, dict)) or callable(responses)):
            raise ConfigError("mock responses must be a list, a dict keyed by user message, or a callable")
        self.responses = responses
        self.failures = list(failures)
        self.delay = float(delay)
        self.requests: list[ProviderRequest] = []
        self._next = 0
        self.strict = strict
        if isinstance(responses, list):
            _SCRIPTS.append(self)

    @property
    def unused(self) -> int:
        """Scripted responses not answered yet (0 for non-list scripts)."""
        return len(self.responses) - self._next if isinstance(self.responses, list) else 0

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
        if isinstance(answer, ToolCall) or (isinstance(answer, list) and answer and
                                            all(isinstance(a, ToolCall) for a in answer)):
            answer = tool_calls(*(answer if isinstance(answer, list) else [answer]))
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


MAX_MINIMAL_SIZE = 100_000
"""Items, properties and characters a mock's schema-shaped answer may hold (``minItems: 1e9`` would otherwise be
built on the event loop of ``taskbench serve``); also bounds ``$ref`` depth."""


def minimal_instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """The smallest JSON value valid against ``schema`` (common keywords: type, enum, const, properties,
    required, items, prefixItems, minItems, anyOf/oneOf/allOf, $ref into $defs/definitions). Raises
    ConfigError when that value would hold more than :data:`MAX_MINIMAL_SIZE` items and characters, or nest
    deeper than 100 (a ``$ref`` cycle that ``required`` makes endless)."""
    budget = [MAX_MINIMAL_SIZE]
    return _minimal(schema, root if root is not None else schema, budget, 0)


def _spend(budget: list[int], n: int) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise ConfigError(f"mock: the schema's smallest valid answer holds more than {MAX_MINIMAL_SIZE:,} items "
                          "and characters (a huge minItems or minLength)")


def _minimal(schema: Any, root: dict[str, Any], budget: list[int], depth: int) -> Any:
    if depth > 100:
        raise ConfigError("mock: the schema's smallest valid answer nests deeper than 100 levels (a $ref cycle)")
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            if not isinstance(target, dict) or part not in target:
                raise ConfigError(f"mock: unresolvable $ref {schema['$ref']!r}")
            target = target[part]
        return _minimal(target, root, budget, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return _minimal(schema[key][0], root, budget, depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0] if kind else "object"
    if kind == "object":
        props = schema.get("properties", {})
        props = props if isinstance(props, dict) else {}
        required = [str(k) for k in schema.get("required", [])] if isinstance(schema.get("required"), list) else []
        _spend(budget, len(required))
        return {k: _minimal(props.get(k, {}), root, budget, depth + 1) for k in required}
    if kind == "array":
        n = _count(schema.get("minItems", 0))
        _spend(budget, n)
        prefix = schema.get("prefixItems") or []  # per-position item schemas (JSON Schema 2020-12)
        items = schema.get("items", {})
        return [_minimal(prefix[i] if i < len(prefix) else items, root, budget, depth + 1) for i in range(n)]
    if kind == "string":
        n = _count(schema.get("minLength", 0))
        _spend(budget, n)
        return "x" * n
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def _count(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError, OverflowError):
        return 0


__all__ = ["MockProvider", "forget_scripts", "minimal_instance", "tool_calls", "unfinished_scripts"]
