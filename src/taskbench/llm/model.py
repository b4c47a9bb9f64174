"""The one :class:`Model` wrapper over provider adapters.

It alone owns retries (:mod:`.retry`), the response cache (:mod:`.cache`), the per-model concurrency limit,
usage and latency accounting, and structured output (schema down to the provider, JSON extraction and repair
on the way back). Providers stay thin: one request in, one response out (see :mod:`.base`).

Async is primary::

    model = get_model("openai-compatible/Qwen/Qwen2.5-7B-Instruct", base_url="http://127.0.0.1:8000/v1")
    out = await model.generate([{"role": "user", "content": "..."}], schema=TaskGraph)
    out.parsed, out.usage.prompt_tokens, out.usage.seconds

Scripts can call :meth:`Model.generate_sync`, which runs on a private event-loop thread.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .._loop import LoopThread
from ..errors import ConfigError, ModelError, ModelRefusedError, TaskbenchError
from ..schema import AssistantMessage, ToolCall, Usage
from ..schema.chat import to_openai_messages
from .base import (
    GenerationConfig,
    Provider,
    ProviderRequest,
    ProviderResponse,
    TransientProviderError,
    first_repeat,
)
from .cache import CacheBackend, cache_key, open_cache
from .registry import parse_model_string, provider_class
from .retry import RetryOutcome, RetryPolicy, call_with_retries
from .schemas import JSONExtractionError, extract_json, resolve_schema
from .tools import ToolSet

T = TypeVar("T")

Messages = str | Sequence[Any]
"""A prompt: a plain string (one user message), or chat messages: typed (:mod:`taskbench.schema.chat`) or
OpenAI-style dicts."""


class ModelOutput(BaseModel):
    """One model answer with its accounting."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str = Field(description="The raw text the model produced (cut where it started to repeat itself when "
                      "the call's config has ``stop_repeat``).")
    usage: Usage = Field(description="Tokens, wall seconds (including retries), cache flag and retry count.")
    finish_reason: str | None = Field(default=None, description="'stop', 'length', ... as the backend said; "
                                      "'repeat' when ``stop_repeat`` cut the answer.")
    parsed: Any = Field(default=None, description="The JSON value parsed (and repaired) from text when a schema "
                        "was given; None when there was no schema or nothing could be parsed.")
    parse_error: str | None = Field(default=None, description="Why text did not give valid JSON for the schema.")
    model: str = Field(default="", description="'provider/model' that answered.")
    extra: dict[str, Any] = Field(default_factory=dict, description="Provider-specific facts (e.g. prompt "
                                  "tokens actually evaluated with a KV prefix cache).")
    tool_calls: list[ToolCall] = Field(
        default_factory=list,
        description="Tool calls the model made, checked against the offered tools: a call whose name, JSON or "
        "arguments are wrong carries an ``error`` for the caller to feed back (never raised).",
    )
    latency: float = Field(
        default=0.0,
        description="Seconds producing this answer took: measured on a fresh call, replayed from the response "
        "cache on a hit (so records of a cached rerun are identical to the first run's).",
    )

    @property
    def truncated(self) -> bool:
        """True when the answer stopped at the token limit (``finish_reason == "length"``)."""
        return self.finish_reason == "length"

    @property
    def message(self) -> AssistantMessage:
        """The answer as an assistant message (text and tool calls), for the next turn's history."""
        return AssistantMessage(content=self.text or None, tool_calls=list(self.tool_calls))

    def require_json(self) -> Any:
        """``parsed``, or :class:`~taskbench.errors.ModelRefusedError` when the output was not usable JSON."""
        if self.parse_error is not None or self.parsed is None:
            raise ModelRefusedError(f"{self.model}: {self.parse_error or 'no schema was requested'}")
        return self.parsed


MAX_TIMEOUT = 7 * 24 * 3600.0
"""The longest attempt timeout a Model takes (a week): its bound, and the call's with retries, stay finite."""

MAX_CONCURRENCY = 1024
"""The most requests one model (and one records runner, :func:`taskbench.records.run_records`) keeps in flight:
each holds a task, a connection and its buffers, so an unbounded count (``-c 2147483648``) is refused instead of
exhausting memory or file descriptors."""

# Keys of get_model(**config) that configure the wrapper; the rest go to the provider.
_GENERATION_KEYS = ("temperature", "top_p", "max_tokens", "seed", "stop")
_MODEL_KEYS = ("timeout", "max_retries", "max_total_seconds", "retry_base_delay", "retry_max_delay", "cache")
# Keys both the wrapper and the provider see (the provider sizes its connection pool by concurrency, sets
# its own client timeout, and names its base URL in the cache identity).
_SHARED_KEYS = ("concurrency", "timeout")


def get_model(spec: str, **config: Any) -> Model:
    """Build a :class:`Model` from ``"provider/model"`` (split on the first ``/`` only) and options.

    Wrapper options: ``timeout`` (seconds per attempt, default 120), ``max_retries`` (default 5),
    ``max_total_seconds`` (bound on a whole call, default 600 s, or
    timeout x attempts + 60 s when that is longer), ``concurrency`` (simultaneous requests),
    ``cache`` (True = default path, a path, or False). Generation defaults: ``temperature``, ``top_p``,
    ``max_tokens``, ``seed``, ``stop``. Everything else goes to the provider, e.g. ``base_url``,
    ``api_key_env`` (the *name* of the environment variable that holds the key), ``guided_decoding``.
    """
    if "api_key" in config:
        raise ConfigError(
            "pass api_key_env (the name of the environment variable holding the key), not the key itself"
        )
    provider_name, model_name = parse_model_string(spec)
    cls = provider_class(provider_name)
    gen = {k: config.pop(k) for k in _GENERATION_KEYS if k in config and config[k] is not None}
    if "stop" in gen:
        gen["stop"] = (gen["stop"],) if isinstance(gen["stop"], str) else tuple(gen["stop"])
    for k, v in cls.wrapper_defaults.items():
        config.setdefault(k, v)
    for k in ("timeout", "max_retries", "max_total_seconds", "retry_base_delay", "retry_max_delay", "concurrency"):
        value = config.get(k)  # -O KEY=VALUE gives text where JSON did not parse: refused here, not deep inside
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value != value
                                  or value < 0):
            raise ConfigError(f"{k}={value!r}: expected a number >= 0 (e.g. -O {k}=30)")
    if config.get("max_total_seconds") is None and config.get("timeout") is not None:
        # the whole call's bound (default 600 s) must not cut a longer attempt, or its retries, short
        retries = config.get("max_retries")
        attempts = 1 + (int(retries) if retries is not None else 5)
        total = float(config["timeout"]) * attempts + 60.0
        if total > 600.0:
            config["max_total_seconds"] = total
    wrapper = {k: config[k] for k in _MODEL_KEYS + ("concurrency",) if k in config}
    provider_opts = {k: v for k, v in config.items() if k not in _MODEL_KEYS and k not in _SHARED_KEYS}
    accepted = _accepted_keywords(cls)
    for k in _SHARED_KEYS:
        if k in config and (accepted is None or k in accepted):
            provider_opts[k] = config[k]
    try:
        provider = cls(model_name, **provider_opts)
    except TypeError as exc:  # unknown keyword
        raise ConfigError(f"bad option for the '{provider_name}' provider: {exc}") from exc
    return Model(provider, config=GenerationConfig(**gen), **wrapper)


def _accepted_keywords(cls: type) -> set[str] | None:
    """Keyword names ``cls.__init__`` accepts, or None when it takes ``**kwargs``."""
    params = inspect.signature(cls).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


class Model:
    """A configured model: provider adapter + retries + cache + concurrency limit + accounting."""

    def __init__(
        self,
        provider: Provider,
        *,
        config: GenerationConfig | None = None,
        timeout: float | None = 120.0,
        max_retries: int = 5,
        max_total_seconds: float = 600.0,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 30.0,
        concurrency: int | None = None,
        cache: bool | str | Path | CacheBackend | None = None,
    ) -> None:
        self.provider = provider
        self.name = f"{provider.name}/{provider.model}"
        self.config = config or GenerationConfig()
        self.timeout = timeout
        from .retry import MAX_RETRIES

        if not 0 <= max_retries <= MAX_RETRIES:
            raise ConfigError(f"max_retries must be between 0 and {MAX_RETRIES}, not {max_retries}")
        if not 0 < max_total_seconds < float("inf") or (timeout is not None and not 0 < timeout <= MAX_TIMEOUT):
            raise ConfigError(f"timeout must be between 0 and {MAX_TIMEOUT:g} s and max_total_seconds finite "
                              f"(got {timeout} and {max_total_seconds})")
        self.retry_policy = RetryPolicy(max_retries, max_total_seconds, retry_base_delay, retry_max_delay)
        self.concurrency = int(concurrency or provider.max_concurrency)
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ConfigError(f"concurrency must be between 1 and {MAX_CONCURRENCY}, not {self.concurrency}")
        if cache is None:
            cache = getattr(provider, "default_cache", True)
        # True: $TASKBENCH_CACHE_URL or the SQLite file; a path, a URL (dir://, redis://) or a backend object
        self.cache: CacheBackend | None = open_cache(cache)
        self._identity = provider.identity()
        self._secrets = [k for k in provider.secrets() if k]
        if self._secrets:
            from .redact import remember

            remember(*self._secrets)
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop: asyncio.AbstractEventLoop | None = None
        self._schemas: dict[type, tuple[dict[str, Any] | None, str, type | None]] = {}
        self._runner: LoopThread | None = None
        # running totals
        self.calls = 0
        """Calls to :meth:`generate` that returned."""
        self.cache_hits = 0
        """Calls answered from the response cache."""
        self.requests = 0
        """Requests sent to the provider (attempts, including failed ones)."""
        self.errors = 0
        """Calls that ended in an error."""
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._seconds = 0.0
        self._retries = 0

    def __repr__(self) -> str:
        base_url = self._identity.get("base_url")
        where = f", base_url={base_url!r}" if base_url else ""
        cache = f"{self.cache.url!r}" if self.cache else "False"
        return f"Model({self.name!r}{where}, concurrency={self.concurrency}, cache={cache})"

    @property
    def usage(self) -> Usage:
        """Running totals over every call so far (cached calls count their tokens; seconds are wall time)."""
        return Usage(
            prompt_tokens=self._prompt_tokens,
            completion_tokens=self._completion_tokens,
            seconds=self._seconds,
            cached=self.calls > 0 and self.cache_hits == self.calls,
            retries=self._retries,
        )

    # ------------------------------------------------------------------------------------------ generate

    async def generate(
        self,
        messages: Messages,
        *,
        schema: dict[str, Any] | type[BaseModel] | None = None,
        config: GenerationConfig | None = None,
        schema_name: str | None = None,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
    ) -> ModelOutput:
        """One completion.

        ``schema`` (a JSON Schema dict or a pydantic model class): the output is constrained where the backend
        can, and always parsed (with repair) into ``ModelOutput.parsed``.

        ``tools`` (:class:`~taskbench.schema.ToolSpec`, :class:`~taskbench.schema.Tool`, or OpenAI/MCP tool
        dicts) and ``tool_choice`` (``"auto"`` (default), ``"none"``, ``"required"`` or a tool's name): the model
        may (or must) call tools; the calls come back in ``ModelOutput.tool_calls``, each checked against the
        tool's JSON Schema, with an ``error`` instead of an exception when the name, the JSON or the arguments
        are wrong. Tool names travel as API-safe aliases and come back as the library's names.

        Raises :class:`~taskbench.errors.ModelError` when the call fails for good (retry bound spent, or a
        permanent error such as a bad request or a missing key).
        """
        call = self._prepare(messages, schema, config, schema_name, tools, tool_choice)
        hit = self._cached(call)
        if hit is not None:
            return hit
        request = call.request(self.timeout)
        outcome = RetryOutcome()
        try:
            async with self._semaphore():
                resp = await call_with_retries(
                    lambda t: self._attempt(request, t),
                    self.retry_policy,
                    timeout=self.timeout,
                    describe=self.name,
                    outcome=outcome,
                    redact=self.redact,
                )
        except Exception as exc:
            self.errors += 1
            self._retries += outcome.retries
            raise self._failure(exc, outcome.retries) from exc
        return self._store(call, self._scrub(resp), outcome.retries)

    def _scrub(self, resp: ProviderResponse) -> ProviderResponse:
        """``resp`` with the provider's secrets taken out of its text, tool calls and extra facts: a server that
        puts the API key into a successful answer does not get it into records or the response cache. Only the
        known keys are looked for (an answer is data: text that merely looks like a key stays)."""
        if not self._secrets:
            return resp
        from .redact import redact_known, redact_value

        text = redact_known(resp.text, self._secrets)
        calls = redact_value(resp.tool_calls, self._secrets)
        extra = redact_value(resp.extra, self._secrets)
        if text is resp.text and calls is resp.tool_calls and extra is resp.extra:
            return resp
        return ProviderResponse(text, resp.prompt_tokens, resp.completion_tokens, resp.finish_reason, extra,
                                tool_calls=calls)

    def redact(self, text: str) -> str:
        """``text`` with every secret of the provider (API keys, and pieces of them) and anything shaped like a key
        or a bearer token replaced by ``***`` (:func:`taskbench.llm.redact.redact`)."""
        from .redact import redact

        return redact(text, self.provider.secrets())

    def _failure(self, exc: Exception, retries: int) -> TaskbenchError:
        """The error a failed call raises: a taskbench error, its message redacted, carrying ``retries``."""
        if isinstance(exc, TaskbenchError):
            err: TaskbenchError = exc
            clean = self.redact(str(exc))
            if clean != str(exc):
                err = type(exc).__new__(type(exc))
                Exception.__init__(err, clean)
                err.__dict__.update(exc.__dict__)
        else:  # a permanent provider failure
            err = ModelError(self.redact(f"{self.name}: {type(exc).__name__}: {exc}"))
        err.retries = retries  # type: ignore[attr-defined]
        return err

    async def stream(
        self,
        messages: Messages,
        *,
        schema: dict[str, Any] | type[BaseModel] | None = None,
        config: GenerationConfig | None = None,
        schema_name: str | None = None,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
    ) -> AsyncIterator[str | ModelOutput]:
        """:meth:`generate`, streamed: yields the answer's text in pieces as the backend produces them, then the
        final :class:`ModelOutput` (the same object :meth:`generate` returns, cached the same way).

        Backends without streaming, cache hits and calls with tools (whose calls are only known once the answer
        is complete) yield their text in one piece. A failure before the first piece is retried as
        :meth:`generate` retries; one after it raises :class:`~taskbench.errors.ModelError`.
        """
        call = self._prepare(messages, schema, config, schema_name, tools, tool_choice)
        streaming = getattr(self.provider, "stream", None)
        if call.toolset is not None or streaming is None or self._cached_value(call) is not None:
            out = await self.generate(messages, schema=schema, config=config, schema_name=schema_name, tools=tools,
                                      tool_choice=tool_choice)
            if out.text:
                yield out.text
            yield out
            return
        request = call.request(self.timeout)
        sent = False
        resp: ProviderResponse | None = None
        from .redact import StreamRedactor

        clean = StreamRedactor(self._secrets)  # a key split across pieces is held back and masked whole
        try:
            async with self._semaphore():
                self.requests += 1
                async for piece in streaming(request):
                    if isinstance(piece, ProviderResponse):
                        resp = piece
                    elif piece and (safe := clean.feed(piece)):
                        sent = True
                        yield safe
                rest = clean.flush()
                if rest:
                    sent = True
                    yield rest
        except TransientProviderError as exc:
            if sent:
                self.errors += 1
                raise ModelError(self.redact(f"{self.name}: the stream broke after it started: {exc}")) from exc
            out = await self.generate(messages, schema=schema, config=config, schema_name=schema_name)
            if out.text:
                yield out.text
            yield out
            return
        except Exception as exc:
            self.errors += 1
            raise self._failure(exc, 0) from exc
        if resp is None:
            self.errors += 1
            raise ModelError(f"{self.name}: the stream ended without a final response")
        yield self._store(call, self._scrub(resp), 0)

    def _prepare(
        self,
        messages: Messages,
        schema: dict[str, Any] | type[BaseModel] | None,
        config: GenerationConfig | None,
        schema_name: str | None,
        tools: Sequence[Any] | None,
        tool_choice: Any,
    ) -> _Call:
        start = time.perf_counter()
        toolset = ToolSet.build(tools, tool_choice) if tools is not None else None
        if toolset is not None and schema is not None and toolset.choice != "none":
            raise ConfigError("a call takes either a schema (structured output) or tools, not both")
        raw = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        msgs = to_openai_messages(raw, toolset.to_api if toolset else None)
        cfg = config or self.config
        if schema is None or isinstance(schema, dict):
            json_schema, name, pyd = resolve_schema(schema)
        else:
            resolved = self._schemas.get(schema)
            if resolved is None:
                resolved = self._schemas[schema] = resolve_schema(schema)
            json_schema, name, pyd = resolved
        call = _Call(start, msgs, cfg, json_schema, schema_name or name, pyd, toolset)
        if self.cache is not None:
            call.key = cache_key(self._identity, msgs, cfg.as_dict(), json_schema, tools=call.api_tools,
                                 tool_choice=call.api_choice)
        return call

    def _cached_value(self, call: _Call) -> dict[str, Any] | None:
        if self.cache is None or call.key is None:
            return None
        return self.cache.get(call.key)

    def _cached(self, call: _Call) -> ModelOutput | None:
        hit = self._cached_value(call)
        if hit is None:
            return None
        resp = self._scrub(ProviderResponse(
            hit["text"], hit["prompt_tokens"], hit["completion_tokens"], hit["finish_reason"], hit["extra"],
            tool_calls=list(hit.get("tool_calls") or []),
        ))  # an entry a version before this one stored with the key in it
        self.cache_hits += 1
        latency = hit.get("latency")
        return self._finish(resp, call, 0, True, float(latency) if isinstance(latency, (int, float)) else None)

    def _store(self, call: _Call, resp: ProviderResponse, retries: int) -> ModelOutput:
        out = self._finish(resp, call, retries, False, None)
        if call.key is not None and self.cache is not None:
            self.cache.put(
                call.key,
                {
                    "text": resp.text,
                    "prompt_tokens": resp.prompt_tokens,
                    "completion_tokens": resp.completion_tokens,
                    "finish_reason": resp.finish_reason,
                    "extra": resp.extra,
                    "tool_calls": resp.tool_calls,
                    "latency": out.latency,
                },
                model=self.name,
            )
        return out

    def generate_sync(
        self,
        messages: Messages,
        *,
        schema: dict[str, Any] | type[BaseModel] | None = None,
        config: GenerationConfig | None = None,
        schema_name: str | None = None,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
    ) -> ModelOutput:
        """:meth:`generate` for scripts (blocks; runs on this model's private event-loop thread, so it also
        works where a loop is already running, e.g. in a notebook)."""
        return self.run_sync(self.generate(messages, schema=schema, config=config, schema_name=schema_name,
                                           tools=tools, tool_choice=tool_choice))

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine that uses this model on its private event-loop thread and return its result."""
        if self._runner is None:
            self._runner = LoopThread(f"taskbench-model-{self.name}")
        return self._runner.run(coro)

    async def _attempt(self, request: ProviderRequest, timeout: float | None) -> ProviderResponse:
        self.requests += 1
        if timeout is not None and timeout <= 0:
            raise TransientProviderError("no time left in the retry budget")
        request.timeout = timeout
        if timeout is None:
            return await self.provider.complete(request)
        # a guard in case the provider does not enforce request.timeout itself
        guard = timeout + 1.0
        try:
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(guard):
                    return await self.provider.complete(request)
            return await asyncio.wait_for(self.provider.complete(request), guard)  # pragma: no cover
        except TimeoutError as exc:
            raise TransientProviderError(f"no answer within {timeout:.1f} s (timeout)") from exc

    def _finish(
        self, resp: ProviderResponse, call: _Call, retries: int, cached: bool, latency: float | None
    ) -> ModelOutput:
        seconds = time.perf_counter() - call.start
        json_schema, pyd, toolset, config = call.json_schema, call.pyd, call.toolset, call.config
        finish_reason = resp.finish_reason
        if finish_reason == "stop" and resp.completion_tokens >= config.max_tokens > 0:
            # some backends say "stop" when the token budget ran out; a cut answer must say so
            finish_reason = "length"
        text = resp.text
        if config.stop_repeat is not None and not resp.tool_calls:
            # the same cut as the embedded provider's decoding stop, for answers from any backend (and from the
            # cache): with the same sampling, the text before the repeat is what decoding would have stopped at
            cut = first_repeat(config.stop_repeat, text)
            if cut is not None:
                text, finish_reason = text[:cut], "repeat"
        parsed = None
        parse_error = None
        if json_schema is not None:
            try:
                parsed = extract_json(text)
            except JSONExtractionError as exc:
                parse_error = str(exc)
            else:
                if pyd is not None:
                    try:
                        pyd.model_validate(parsed)  # type: ignore[attr-defined]
                    except ValueError as exc:
                        first = str(exc).splitlines()
                        parse_error = "JSON does not fit the schema: " + " ".join(first[:3])
            if parse_error is not None and finish_reason == "length":
                parse_error = f"cut off at the token limit ({config.max_tokens}): {parse_error}"
        calls: list[ToolCall] = []
        if resp.tool_calls:
            truncated = finish_reason == "length"
            if toolset is not None:
                calls = toolset.parse_calls(resp.tool_calls, truncated=truncated)
            else:
                calls = [ToolCall(id=str(c.get("id") or f"call_{i}"), name=str(c.get("name")),
                                  raw_arguments=str(c.get("arguments")), error="no tools were offered")
                         for i, c in enumerate(resp.tool_calls)]
        self.calls += 1
        self._prompt_tokens += resp.prompt_tokens
        self._completion_tokens += resp.completion_tokens
        self._seconds += seconds
        self._retries += retries
        usage = Usage(
            prompt_tokens=resp.prompt_tokens,
            completion_tokens=resp.completion_tokens,
            seconds=seconds,
            cached=cached,
            retries=retries,
        )
        return ModelOutput(
            text=text,
            usage=usage,
            finish_reason=finish_reason,
            parsed=parsed,
            parse_error=parse_error,
            model=self.name,
            extra=resp.extra,
            tool_calls=calls,
            latency=round(seconds, 6) if latency is None else latency,
        )

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem = asyncio.Semaphore(self.concurrency)
            self._sem_loop = loop
        return self._sem

    # ------------------------------------------------------------------------------------------ lifecycle

    async def aclose(self) -> None:
        """Release the provider's clients/weights and the cache's connections."""
        await self.provider.aclose()
        if self.cache is not None:
            self.cache.close()

    def close(self) -> None:
        """Synchronous :meth:`aclose`; also stops the private event-loop thread."""
        if self._runner is not None:
            self._runner.run(self.provider.aclose())
            self._runner.stop()
            self._runner = None
        else:
            asyncio.run(self.provider.aclose())
        if self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> Model:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class _Call:
    """One call, prepared: normalised messages, schema, tools and the cache key."""

    start: float
    messages: list[dict[str, Any]]
    config: GenerationConfig
    json_schema: dict[str, Any] | None
    schema_name: str
    pyd: type | None
    toolset: ToolSet | None
    key: str | None = None

    @property
    def api_tools(self) -> list[dict[str, Any]] | None:
        return self.toolset.api_tools() if self.toolset else None

    @property
    def api_choice(self) -> str | dict[str, Any] | None:
        return self.toolset.api_choice() if self.toolset else None

    def request(self, timeout: float | None) -> ProviderRequest:
        return ProviderRequest(self.messages, self.config, self.json_schema, self.schema_name, timeout,
                               tools=self.api_tools, tool_choice=self.api_choice)


__all__ = ["MAX_CONCURRENCY", "MAX_TIMEOUT", "Messages", "Model", "ModelOutput", "get_model"]
