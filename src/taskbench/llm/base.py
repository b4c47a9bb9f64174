"""The provider adapter contract.

A provider is a thin adapter that turns one :class:`ProviderRequest` into one :class:`ProviderResponse` for one
backend (OpenAI API, an OpenAI-compatible server, embedded llama.cpp, scripted mock). It does *not* retry,
cache, limit concurrency or count usage: the :class:`taskbench.llm.Model` wrapper owns all of that.

Providers raise :class:`TransientProviderError` for failures worth retrying (429, 5xx, timeouts, connection
errors, truncated bodies), setting ``retry_after`` when the server said how long to wait, and any other
exception for permanent failures.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

from ..errors import ModelError


@dataclass(frozen=True)
class GenerationConfig:
    """Sampling parameters; part of the cache key."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stop_repeat: str | None = None
    """A regular expression over the answer: decoding stops as soon as a match's groups repeat those of an earlier
    match in the same answer (case and spacing folded), and the answer is cut where the repeating match starts,
    with ``finish_reason`` ``"repeat"``. The plan's steps use it (:data:`taskbench.predict.plan.REPEATED_STEP`) so
    that a model looping on one step stops at the loop's first turn instead of at the token limit. The embedded
    llama.cpp provider stops decoding there (the tokens are saved); for any other backend the Model wrapper cuts the
    returned text at the same place, so the prediction is the same."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "stop": list(self.stop),
        }
        if self.stop_repeat is not None:  # absent otherwise, so earlier cache keys stay valid
            out["stop_repeat"] = self.stop_repeat
        return out


@lru_cache(maxsize=32)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def first_repeat(pattern: str, text: str) -> int | None:
    """Where ``text`` starts to repeat itself by :attr:`GenerationConfig.stop_repeat`: the offset of the first match
    of ``pattern`` whose groups (case and spacing folded) equal an earlier match's, or None."""
    seen: set[tuple[str, ...]] = set()
    for match in _compiled(pattern).finditer(text):
        key = tuple(" ".join((g or "").casefold().split()) for g in match.groups()) or (match.group(0),)
        if key in seen:
            return match.start()
        seen.add(key)
    return None


@dataclass
class ProviderRequest:
    """One chat completion request as the Model wrapper hands it to a provider."""

    messages: list[dict[str, Any]]
    """OpenAI-style chat messages: ``{"role": "system"|"user"|"assistant"|"tool", "content": ...}``; assistant
    messages may carry ``tool_calls`` (``[{"id", "type": "function", "function": {"name", "arguments"}}]``, the
    arguments a JSON string) and tool messages a ``tool_call_id``. Tool names are the API-safe names of
    :attr:`tools`."""
    config: GenerationConfig = field(default_factory=GenerationConfig)
    json_schema: dict[str, Any] | None = None
    """When set, the output must be a JSON document valid against this JSON Schema (constrained decoding
    where the backend supports it)."""
    schema_name: str = "result"
    """Name given to the schema where the backend wants one (OpenAI ``json_schema.name``)."""
    timeout: float | None = None
    """Seconds before the provider gives up on this attempt (raises TransientProviderError)."""
    tools: list[dict[str, Any]] | None = None
    """Tools offered, in OpenAI's format (``{"type": "function", "function": {name, description, parameters}}``)
    under API-safe names; None when the call offers no tools."""
    tool_choice: str | dict[str, Any] | None = None
    """``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function": {"name": ...}}``; None
    without tools."""


@dataclass
class ProviderResponse:
    """What a provider returns for one request."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-specific facts worth recording (e.g. prompt tokens actually evaluated with a KV prefix)."""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Tool calls the model made: ``{"id", "name", "arguments"}`` with ``arguments`` the text the model wrote
    (normally a JSON object). The Model wrapper parses and validates them; providers never raise for bad
    arguments."""


class TransientProviderError(ModelError):
    """One attempt failed in a way worth retrying (rate limit, 5xx, timeout, connection reset, truncated body):
    a :class:`~taskbench.errors.ModelError` that :func:`~taskbench.llm.retry.with_retries` retries."""

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None,
                 refused: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status
        self.refused = refused
        """The connection was refused: nothing listens at the URL (the provider may stop at once)."""


def connection_refused(exc: BaseException) -> bool:
    """Whether ``exc`` or one of its causes is a refused connection (``ECONNREFUSED``: nothing listens there);
    aiohttp keeps the OS error in ``os_error``."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo and len(seen) < 32:
        cur = todo.pop()
        if cur is None or any(cur is s for s in seen):
            continue
        seen.append(cur)
        if isinstance(cur, ConnectionRefusedError):
            return True
        todo += [getattr(cur, "os_error", None), cur.__cause__, cur.__context__]
    return False


class Provider(ABC):
    """Base class of provider adapters. Subclasses set ``name`` and implement :meth:`complete`.

    Policy that belongs to a backend lives here, not in callers: :attr:`wrapper_defaults` are the Model
    wrapper's defaults for this backend (e.g. a local model is slow but never flaky, so it gets a long timeout
    and no retries), and :meth:`accepts` says which options the backend takes.
    """

    name: ClassVar[str] = ""
    wrapper_defaults: ClassVar[dict[str, Any]] = {}
    """Defaults for the Model wrapper's options (``timeout``, ``max_retries``, ...) when this backend is used."""
    options: dict[str, Any]

    def __init__(self, model: str, **options: Any) -> None:
        self.model = model
        self.options = options

    @abstractmethod
    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        """Run one request once (no retries)."""

    def identity(self) -> dict[str, Any]:
        """What identifies this backend in the response cache: provider, base URL, model. Never secrets."""
        return {"provider": self.name, "model": self.model, "base_url": self.options.get("base_url")}

    @classmethod
    def accepts(cls, option: str) -> bool:
        """Whether this provider takes the option ``option`` (a keyword of its constructor)."""
        import inspect

        params = inspect.signature(cls.__init__).parameters
        return option in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    def secrets(self) -> list[str]:
        """Secret values this provider holds (API keys), so the Model wrapper can redact them from every error
        and log line: a server that echoes the key in an error body must not get it printed or written."""
        return []

    @property
    def max_concurrency(self) -> int:
        """Default concurrent requests for this backend (the Model wrapper may lower it)."""
        return int(self.options.get("concurrency", 8))

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients, files, model weights."""
