"""``openai`` and ``openai-compatible``: chat completions through the official SDK's ``AsyncOpenAI``.

- ``openai/<model>``: the OpenAI API; the key comes from ``$OPENAI_API_KEY`` (or the variable named by
  ``api_key_env``), the URL from ``base_url``, else ``$OPENAI_BASE_URL`` (the SDK's convention), else the
  public API; structured output as ``response_format`` ``json_schema`` (strict).
- ``openai-compatible/<model>``: any server speaking the chat completions API (vLLM, SGLang, Ollama, llama.cpp
  server, LM Studio, ``taskbench serve``); ``base_url`` is required, a key is optional.

``guided_decoding`` says how a JSON Schema travels to the server:

=================  ==============================================================================
``response_format``  ``{"type": "json_schema", "json_schema": {name, schema, strict}}`` (OpenAI, recent vLLM,
                     SGLang, ``taskbench serve``)
``vllm``             ``extra_body={"guided_json": schema}`` (vLLM's own field)
``sglang``           ``response_format`` ``json_schema`` without ``strict`` (SGLang's OpenAI endpoint)
``json_object``      ``response_format={"type": "json_object"}`` plus the schema in a system message
``none``             the schema in a system message only; the Model wrapper extracts and repairs the JSON
=================  ==============================================================================

``transport`` picks the HTTP client: ``native`` (a bare aiohttp session, :mod:`.native_http`: the same request
and the same error mapping without the SDK's import and per-request cost; ``auto`` picks it for
``openai-compatible``), or the SDK over ``aiohttp`` (``openai.DefaultAioHttpClient``, one client with a
connection limit of ``concurrency``; ``auto`` picks it for ``openai``) or over ``httpx`` (httpx2, spread over
``pool_shards`` clients; the fallback without aiohttp). It does not change answers, so it is not part of the
cache identity.

**Replicas.** ``base_url`` may name several servers of one model (a list, a comma-separated string, or
``@FILE`` with one URL per line): requests are spread over them by :class:`~taskbench.llm.providers.pool.
EndpointPool` (least loaded first, ``endpoint_concurrency`` requests at most on each), a request whose endpoint
fails is sent to another at once, and a failing endpoint is taken out until a health probe (``GET /models``)
answers. Which replica answered never matters to the response cache: a pool's identity names the provider,
the model and its options, not the URLs (a single ``base_url`` keeps it in the identity, as before).

The SDK's own retries are off (``max_retries=0``): the Model wrapper owns retries. SDK exceptions are mapped to
:class:`TransientProviderError` (429 with Retry-After, 408/409/5xx, timeouts, connection errors, truncated or
invalid bodies) or :class:`~taskbench.errors.ModelError` (everything else: bad request, auth, not found).
The API key lives only inside the SDK client; it is never part of the identity, a repr, a log line or a cache.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any, ClassVar

from ...errors import ConfigError, MissingDependencyError, ModelError, UnreachableError
from ..base import Provider, ProviderRequest, ProviderResponse, TransientProviderError, connection_refused
from ..redact import clip
from ..schemas import schema_instruction
from .http_status import map_status
from .native_http import NativeClient, chat_url
from .pool import Endpoint, EndpointPool, NoEndpointLeft, parse_urls

GUIDED_MODES = ("response_format", "vllm", "sglang", "json_object", "none")
TRANSPORTS = ("auto", "native", "aiohttp", "httpx")


def _aiohttp_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("aiohttp") is not None


def aiohttp_available() -> bool:
    """True when the SDK's aiohttp transport (``openai.DefaultAioHttpClient``, extra ``openai[aiohttp]``) works."""
    try:
        import aiohttp  # noqa: F401
        import openai
    except ImportError:
        return False
    # without aiohttp the SDK exports a stand-in whose constructor raises
    return "Missing" not in getattr(getattr(openai, "DefaultAioHttpClient", None), "__name__", "Missing")


class OpenAIProvider(Provider):
    """The OpenAI API (and the base of :class:`OpenAICompatibleProvider`)."""

    name: ClassVar[str] = "openai"
    default_api_key_env: ClassVar[str] = "OPENAI_API_KEY"
    requires_key: ClassVar[bool] = True
    default_guided: ClassVar[str] = "response_format"
    platform_headers: ClassVar[bool] = True
    """Send the SDK's ``X-Stainless-*`` platform headers (OS, arch, runtime); off for third-party servers."""
    native_by_default: ClassVar[bool] = False
    """Whether ``transport="auto"`` picks the bare aiohttp client (:mod:`.native_http`) over the SDK."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | Sequence[str] | None = None,
        api_key_env: str | None = None,
        timeout: float | None = 120.0,
        concurrency: int = 64,
        endpoint_concurrency: int | None = None,
        health_cooldown: float = 0.5,
        guided_decoding: str | None = None,
        strict: bool | None = None,
        extra_body: dict[str, Any] | None = None,
        max_tokens_field: str | None = None,
        transport: str = "auto",
        pool_shards: int | None = None,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ConfigError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
        if transport == "auto" and self.native_by_default and _aiohttp_importable():
            transport = "native"
        if transport == "native" and not _aiohttp_importable():
            raise MissingDependencyError("aiohttp", "aiohttp", "transport='native'")
        if transport != "native":
            try:
                import openai  # noqa: F401
            except ModuleNotFoundError as exc:  # pragma: no cover - a core dependency
                raise MissingDependencyError("openai", None, f"the '{self.name}' model provider") from exc
        guided = guided_decoding or self.default_guided
        if guided not in GUIDED_MODES:
            raise ConfigError(f"guided_decoding must be one of {', '.join(GUIDED_MODES)}, not {guided!r}")
        if not base_url and self.name == "openai":
            # the SDK's own convention: a proxy or gateway of the OpenAI API named in the environment; read
            # here, not left to the SDK, so that the URL is part of the cache identity and every message
            base_url = os.environ.get("OPENAI_BASE_URL") or None
        urls = parse_urls(base_url)
        super().__init__(model, base_url=urls[0] if len(urls) == 1 else None, concurrency=concurrency,
                         timeout=timeout)
        self.base_urls = urls
        self.base_url = urls[0] if urls else None
        self.api_key_env = api_key_env or self.default_api_key_env
        self.guided_decoding = guided
        self.strict = (self.name == "openai") if strict is None else bool(strict)
        self.extra_body = dict(extra_body or {})
        self.max_tokens_field = max_tokens_field or ("max_completion_tokens" if self.name == "openai" else "max_tokens")
        self.timeout = timeout
        if self.requires_key and not os.environ.get(self.api_key_env):
            raise ConfigError(
                f"the '{self.name}' provider needs an API key in the environment variable {self.api_key_env} "
                f"(set it, or name your variable with --api-key-env NAME; api_key_env='NAME' in Python)"
            )
        if transport == "auto":
            transport = "aiohttp" if aiohttp_available() else "httpx"
        elif transport == "aiohttp" and not aiohttp_available():
            raise MissingDependencyError("aiohttp", "aiohttp", "transport='aiohttp'")
        self.transport = transport
        # httpx's connection pool scans all its connections on every request, so one pool of 64 costs more CPU
        # per request than 8 pools of 8; requests are spread round-robin over `pool_shards` SDK clients.
        # aiohttp's connector keeps idle connections per host in O(1) structures: one client suffices.
        shards = 1 if transport in ("aiohttp", "native") else max(1, self.max_concurrency // 8)
        self.pool_shards = max(1, int(pool_shards or shards))
        if endpoint_concurrency is not None and endpoint_concurrency < 1:
            raise ConfigError(f"endpoint_concurrency must be >= 1, not {endpoint_concurrency}")
        self.endpoint_concurrency = int(endpoint_concurrency or self.max_concurrency)
        # None = the SDK's default URL (the OpenAI API); one Endpoint per replica otherwise
        self._answered = False  # some endpoint answered (or failed other than by refusing): see _check_reachable
        self.pool = EndpointPool(self.base_urls or [None], limit=self.endpoint_concurrency,  # type: ignore[list-item]
                                 cooldown=health_cooldown, probe=self._probe)
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @property
    def _url(self) -> str:
        """The chat completions URL of the first endpoint (as the SDK client was built for it)."""
        return str(self.pool.endpoints[0].state.get("url", "/chat/completions"))

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if len(self.base_urls) <= 1 else f", base_url={self.base_urls!r}"
        where = where if self.base_url else ""
        return f"{type(self).__name__}({self.model!r}{where}, api_key_env={self.api_key_env!r})"

    def secrets(self) -> list[str]:
        key = os.environ.get(self.api_key_env)
        return [key] if key else []

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        ident["guided_decoding"] = self.guided_decoding
        if self.strict:
            ident["strict"] = True
        if self.extra_body:
            ident["extra_body"] = self.extra_body
        if len(self.base_urls) > 1:
            # replicas of one model: the answer does not depend on which one gave it
            ident["base_url"] = None
            ident["replicas"] = True
        return ident

    def _get_client(self, endpoint: Endpoint | None = None) -> Any:
        """The next SDK client (round-robin) of ``endpoint`` (default the first); one set per endpoint and event
        loop (connection pools belong to a loop)."""
        loop = asyncio.get_running_loop()
        if self._client_loop is not loop:
            for ep in self.pool.endpoints:
                ep.state.pop("clients", None)
            self._client_loop = loop
        ep = endpoint or self.pool.endpoints[0]
        clients = ep.state.get("clients")
        if not clients:
            limit = min(self.max_concurrency, ep.limit)
            clients = ep.state["clients"] = [self._new_client(ep, limit) for _ in range(self.pool_shards)]
            ep.state["turn"] = 0
        ep.state["turn"] = (ep.state["turn"] + 1) % len(clients)
        return clients[ep.state["turn"]]

    def _new_client(self, endpoint: Endpoint, limit: int) -> Any:
        if self.transport == "native":
            key = os.environ.get(self.api_key_env)
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            base = endpoint.url or "https://api.openai.com/v1"
            endpoint.state["url"] = chat_url(base)
            return NativeClient(endpoint.state["url"], headers, limit=-(-max(limit, 1) // self.pool_shards),
                                timeout=self.timeout, provider=self.name, secrets=self.secrets())
        import httpx2
        import openai

        pool = -(-max(limit, 1) // self.pool_shards)
        client_cls = openai.DefaultAioHttpClient if self.transport == "aiohttp" else httpx2.AsyncClient
        http_client = client_cls(
            limits=httpx2.Limits(max_connections=pool, max_keepalive_connections=pool),
            timeout=self.timeout,
            follow_redirects=True,
        )
        # a query string on the base URL (Azure-style "?api-version=...") travels as the SDK's default query;
        # left in base_url the SDK would splice the path in after it
        from urllib.parse import parse_qsl, urlsplit, urlunsplit

        base_url, query = endpoint.url, None
        if base_url:
            parts = urlsplit(base_url)
            if parts.query:
                base_url, query = urlunsplit(parts._replace(query="")), dict(parse_qsl(parts.query))
        client = openai.AsyncOpenAI(
            api_key=os.environ.get(self.api_key_env) or "EMPTY",
            base_url=base_url,
            timeout=self.timeout,
            max_retries=0,
            http_client=http_client,
            default_query=query,
        )
        if not self.platform_headers:
            # the SDK's X-Stainless-* description of this machine (OS, arch, runtime, versions) means nothing to a
            # third-party server; omitting it also saves ~15 us of header handling per request
            drop = {k: openai.omit for k in client.default_headers if k.lower().startswith("x-stainless-")}
            client = client.with_options(default_headers=drop)  # type: ignore[arg-type]  # omit is the SDK's way
        # An absolute URL spares the SDK merging a relative path into base_url on every request (~20 us).
        endpoint.state["url"] = str(client.base_url).rstrip("/") + "/chat/completions"
        return client

    def build_body(self, request: ProviderRequest) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions`` for ``request`` (pure; tested directly)."""
        cfg = request.config
        body: dict[str, Any] = {"model": self.model, "messages": request.messages}
        body["temperature"] = cfg.temperature
        body["top_p"] = cfg.top_p
        body[self.max_tokens_field] = cfg.max_tokens
        if cfg.seed is not None:
            body["seed"] = cfg.seed
        if cfg.stop:
            body["stop"] = list(cfg.stop)
        schema = request.json_schema
        if schema is not None:
            mode = self.guided_decoding
            if mode in ("response_format", "sglang"):
                spec: dict[str, Any] = {"name": request.schema_name, "schema": schema}
                if mode == "response_format":
                    # OpenAI's strict mode takes a subset of JSON Schema; a schema beyond it (bounds, patterns,
                    # per-position items) is sent unenforced rather than refused with a 400
                    spec["strict"] = self.strict and strict_compatible(schema)
                body["response_format"] = {"type": "json_schema", "json_schema": spec}
            elif mode == "vllm":
                body["guided_json"] = schema
            else:
                if mode == "json_object":
                    body["response_format"] = {"type": "json_object"}
                body["messages"] = [{"role": "system", "content": schema_instruction(schema)}, *request.messages]
        if request.tools:
            body["tools"] = request.tools
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
        if self.extra_body:
            body.update(self.extra_body)
        return body

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        """One attempt: on a pool of replicas, a failing endpoint is taken out and the request goes to the next
        one at once (a timeout is not re-sent within the attempt: its time is spent); the last error is raised
        when every endpoint failed."""
        body = self.build_body(request)
        tried: set[int] = set()
        while True:
            try:
                endpoint = await self.pool.acquire(tried)
            except NoEndpointLeft:  # pragma: no cover - the loop raises before every endpoint is tried
                raise TransientProviderError("every endpoint of the pool failed") from None
            try:
                resp = await self._post(endpoint, request, body)
            except TransientProviderError as exc:
                self._answered = self._answered or not exc.refused
                # a 429 means busy, not broken: out for its Retry-After, no probe needed
                busy = exc.status == 429
                self.pool.release(endpoint, error=str(exc), probe=not busy, wait=exc.retry_after)
                tried.add(endpoint.index)
                if "(timeout)" in str(exc) or len(tried) >= len(self.pool):
                    self._check_reachable(exc)
                    raise
                continue
            except BaseException:
                self.pool.release(endpoint)  # a bad request (or a cancelled call) is not the endpoint's fault
                raise
            self.pool.release(endpoint)
            self._answered = True
            return resp

    def _check_reachable(self, exc: TransientProviderError) -> None:
        """Every endpoint refused the connection and none has ever answered: nothing listens at --base-url, so
        raise :class:`UnreachableError` (the command stops with one line) rather than retrying every call. A
        server that answered before and refuses now (a restart) is retried as usual."""
        if not exc.refused or self._answered:
            return
        urls = ", ".join(str(e.url) for e in self.pool.endpoints)
        raise UnreachableError(f"{self.name}/{self.model}: nothing is listening at {urls} (connection refused): "
                               "check --base-url, or start the server first")

    async def _probe(self, endpoint: Endpoint) -> bool:
        """Health check of a replica that was taken out: ``GET <base_url>/models``; any HTTP answer below 500
        means the server is up."""
        client = self._get_client(endpoint)
        if self.transport == "native":
            return bool(await client.probe(min(5.0, self.timeout or 5.0)))
        import openai

        try:
            await client.get("/models", cast_to=object, options={"timeout": min(5.0, self.timeout or 5.0)})
        except openai.APIStatusError as exc:
            return int(exc.status_code) < 500
        except (openai.APIConnectionError, openai.APIResponseValidationError, json.JSONDecodeError) as exc:
            endpoint.last_error = f"probe: {type(exc).__name__}"
            return False
        return True

    async def _post(self, endpoint: Endpoint, request: ProviderRequest, body: dict[str, Any]) -> ProviderResponse:
        client = self._get_client(endpoint)
        if self.transport == "native":
            return _to_response(await client.post(body, request.timeout), self.secrets())
        import openai

        url = endpoint.state["url"]
        options: dict[str, Any] = {} if request.timeout is None else {"timeout": request.timeout}
        try:
            # The SDK's generic POST (its documented way to call any endpoint): same auth, base URL, timeouts
            # and error classes as chat.completions.create, but without re-walking the body against the typed
            # params or building pydantic response models -- which cost ~1 ms CPU per request (see
            # benchmarks/bench_harness.py and docs/models.md).
            data = await client.post(url, cast_to=object, body=body, options=options)
        except openai.APIStatusError as exc:
            raise _map_status_error(exc, self.name, self.secrets()) from None
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            raise _map_connection_error(exc, request.timeout, self.secrets()) from None
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            why = clip(f"{type(exc).__name__}: {exc}", 300, self.secrets())
            raise TransientProviderError(f"invalid response body ({why})") from None
        return _to_response(data, self.secrets())

    async def aclose(self) -> None:
        """Close the clients and stop the probes, on the event loop that opened them (connection pools belong
        to a loop): this one, or another loop still running on its thread. Clients of a loop that has already
        ended cannot be closed any more; close the provider before its loop ends."""
        clients = [c for ep in self.pool.endpoints for c in ep.state.pop("clients", None) or []]
        loop, self._client_loop = self._client_loop, None
        if loop is None:
            return

        async def close_all() -> None:
            await self.pool.aclose()
            for client in clients:
                await client.close()

        if loop is asyncio.get_running_loop():
            await close_all()
        elif loop.is_running() and not loop.is_closed():
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(close_all(), loop))


class OpenAICompatibleProvider(OpenAIProvider):
    """Any OpenAI-compatible chat completions server; ``base_url`` required, key optional."""

    name: ClassVar[str] = "openai-compatible"
    default_api_key_env: ClassVar[str] = "OPENAI_COMPATIBLE_API_KEY"
    requires_key: ClassVar[bool] = False
    platform_headers: ClassVar[bool] = False
    native_by_default: ClassVar[bool] = True

    def __init__(self, model: str, *, base_url: str | Sequence[str] | None = None, **options: Any) -> None:
        if not base_url:
            raise ConfigError(
                "the 'openai-compatible' provider needs a server URL: --base-url http://127.0.0.1:8000/v1 "
                "(base_url=... in Python)"
            )
        super().__init__(model, base_url=base_url, **options)


_STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "$ref", "$defs",
    "definitions", "description", "title", "const", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
})
"""The keywords OpenAI documents for strict structured outputs (not ``minLength``/``maxLength``,
``prefixItems`` or ``items: false``)."""


def strict_compatible(schema: Any) -> bool:
    """Whether ``schema`` stays within the JSON Schema keywords OpenAI's strict structured outputs accept
    (objects closed with ``additionalProperties: false``, every property required)."""
    if isinstance(schema, list):
        return all(strict_compatible(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if set(schema) - _STRICT_KEYWORDS:
        return False
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or ()) != set(props):
            return False
    items = schema.get("items")
    if items is False:
        return False
    nested = [*(schema.get("properties") or {}).values(), *(schema.get("$defs") or {}).values(),
              *(schema.get("definitions") or {}).values(), *(schema.get("anyOf") or [])]
    if isinstance(items, dict):
        nested.append(items)
    return all(strict_compatible(s) for s in nested)


def _to_response(data: Any, secrets: Sequence[str] = ()) -> ProviderResponse:
    """A chat completion JSON object -> ProviderResponse; a body without a usable choice is transient. Server text
    in an error is redacted (``secrets`` and anything key-shaped) before it is cut."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (TypeError, KeyError, IndexError):
        shown = data if isinstance(data, str) else json.dumps(data) if isinstance(data, dict) else type(data).__name__
        raise TransientProviderError(f"invalid response body: no choices ({clip(shown, 200, secrets)})") from None
    text = message.get("content")
    raw_calls = message.get("tool_calls") or []
    if text is None:
        if message.get("refusal"):
            raise ModelError(f"the model refused: {clip(str(message['refusal']), 300, secrets)}")
        text = ""
    calls = []
    for i, call in enumerate(raw_calls if isinstance(raw_calls, list) else []):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            continue
        args = fn.get("arguments")
        calls.append({
            "id": str(call.get("id") or f"call_{i}"),
            "name": str(fn.get("name") or ""),
            # arguments arrive as a JSON string; some servers send an object
            "arguments": args if isinstance(args, str) else json.dumps(args if args is not None else {}),
        })
    usage = data.get("usage") or {}
    return ProviderResponse(
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choice.get("finish_reason"),
        tool_calls=calls,
    )


def _map_connection_error(exc: Exception, timeout: float | None, secrets: Sequence[str] = ()) -> TransientProviderError:
    """An SDK connection or timeout error -> TransientProviderError naming what really happened.

    The SDK's aiohttp transport maps every aiohttp connection error (a reset, a server that hung up) to httpx's
    ``ConnectTimeout``, which the SDK raises as ``APITimeoutError``; so a "timeout" whose cause chain holds a
    connection error that is not itself a timeout is reported as the connection error it was.
    """
    import openai

    chain: list[BaseException] = [exc]
    while len(chain) < 16:
        cause = chain[-1].__cause__ or chain[-1].__context__
        if cause is None:
            break
        chain.append(cause)
    broken = [c for c in chain[1:] if isinstance(c, _connection_errors()) and not isinstance(c, TimeoutError)]
    if isinstance(exc, openai.APITimeoutError) and not broken:
        return TransientProviderError(f"no answer within {timeout} s (timeout)")
    # the deepest cause that says something (httpx's ReadError after a reset has an empty message)
    shown = next((c for c in reversed(broken or chain[1:]) if str(c)), chain[1] if len(chain) > 1 else exc)
    text = clip(str(shown), 300, secrets)
    return TransientProviderError(f"connection error ({type(shown).__name__}: {text})" if text else
                                  f"connection error ({type(shown).__name__})", refused=connection_refused(exc))


def _connection_errors() -> tuple[type[BaseException], ...]:
    try:
        import aiohttp
    except ImportError:
        return (ConnectionError,)
    return (ConnectionError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)


def _map_status_error(exc: Any, provider: str, secrets: Sequence[str] = ()) -> Exception:
    message = getattr(exc, "message", None) or str(exc)
    return map_status(int(exc.status_code), message, exc.response.headers, provider, secrets)


__all__ = ["GUIDED_MODES", "TRANSPORTS", "OpenAICompatibleProvider", "OpenAIProvider", "aiohttp_available"]
