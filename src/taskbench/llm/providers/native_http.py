"""The ``native`` transport of the OpenAI-style providers: chat completions over a bare aiohttp session.

The official SDK is the reference client, but importing it builds about 700 pydantic models (a second or more of
start-up on a busy 2-core machine) and every request walks through its request builder, auth hooks and httpx
compatibility layer. A benchmark that runs ``taskbench predict`` as a whole process
(``benchmarks/bench_predict_process.py``) showed that this, not the network, decided the wall time. This client
sends the same ``POST {base_url}/chat/completions`` with the same body, headers and timeouts, and maps every
failure to the same errors as the SDK path (:func:`map_status`, connection errors and timeouts to
:class:`TransientProviderError`), so answers, retries and the cache are unchanged. It is the default for
``openai-compatible`` (``transport="native"``); ``openai/`` keeps the SDK.
"""

from __future__ import annotations

import asyncio
import errno
import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..base import TransientProviderError, connection_refused
from ..redact import clip
from .http_status import map_status


def _error_message(text: str, secrets: Sequence[str] = ()) -> str:
    """What an error body says (its ``error.message`` when it has one), redacted, then cut to 300 characters."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return clip(text, 300, secrets) or "no body"
    err = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(err, dict) and err.get("message"):
        text = str(err["message"])
    elif isinstance(err, str):
        text = err
    elif isinstance(doc, dict) and doc.get("message"):
        text = str(doc["message"])
    return clip(text, 300, secrets) or "no body"


class BodyEncoder:
    """The JSON bytes of request bodies, encoding a schema sent with every request once.

    A structured prediction sends the same JSON Schema with each request (a TaskBench plan schema over the
    multimedia library is about 140 kB), and encoding it again per request was half of the client's CPU at the
    released size (``benchmarks/bench_scale.py``, profiled with py-spy). The schema inside ``response_format``
    (or vLLM's ``guided_json``) is recognised by identity; the encoder keeps the object alive while its encoding
    is cached, so an id is never taken by another object. A schema must not be changed in place after it was
    sent (taskbench builds each schema once per dataset and never changes it); a changed schema needs a new
    dict. At most ``size`` schemas are kept (least recently used first out)."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._cache: OrderedDict[int, tuple[Any, bytes]] = OrderedDict()

    def _schema(self, schema: Any) -> bytes:
        hit = self._cache.get(id(schema))
        if hit is not None and hit[0] is schema:
            self._cache.move_to_end(id(schema))
            return hit[1]
        data = _dumps(schema)
        self._cache[id(schema)] = (schema, data)
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return data

    def encode(self, body: dict[str, Any]) -> bytes:
        """``json.dumps(body, ensure_ascii=False)`` as UTF-8, with the schema's cached encoding spliced in."""
        fmt = body.get("response_format")
        spec = fmt.get("json_schema") if isinstance(fmt, dict) else None
        if isinstance(fmt, dict) and isinstance(spec, dict) and isinstance(spec.get("schema"), dict):
            inner = _splice(spec, "schema", self._schema(spec["schema"]))
            return _splice(body, "response_format", _splice(fmt, "json_schema", inner))
        if isinstance(body.get("guided_json"), dict):
            return _splice(body, "guided_json", self._schema(body["guided_json"]))
        return _dumps(body)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _splice(doc: dict[str, Any], key: str, encoded: bytes) -> bytes:
    """``doc`` encoded as ``json.dumps`` would (its separators, its key order), ``doc[key]`` given as
    ``encoded``."""
    parts = [_dumps(str(k)) + b": " + (encoded if k == key else _dumps(v)) for k, v in doc.items()]
    return b"{" + b", ".join(parts) + b"}"


def chat_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, keeping a query string the base URL carries (``...?api-version=1``)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))


class NativeClient:
    """One aiohttp session (a connection pool of ``limit``) posting chat completions to one URL."""

    def __init__(self, url: str, headers: dict[str, str], *, limit: int, timeout: float | None, provider: str,
                 secrets: Sequence[str] = ()) -> None:
        import aiohttp

        self.url = url
        self.provider = provider
        self.secrets = list(secrets)
        self._aiohttp = aiohttp
        self._encoder = BodyEncoder()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max(1, limit), limit_per_host=max(1, limit), ttl_dns_cache=300),
            timeout=aiohttp.ClientTimeout(total=timeout),
            headers={"Content-Type": "application/json", "Accept": "application/json", **headers},
            json_serialize=json.dumps,
        )

    async def post(self, body: dict[str, Any], timeout: float | None) -> Any:
        """POST ``body``; the decoded JSON answer, or the mapped error."""
        aiohttp = self._aiohttp
        data = self._encoder.encode(body)
        try:
            kwargs: dict[str, Any] = {"data": data}
            if timeout is not None:
                kwargs["timeout"] = aiohttp.ClientTimeout(total=timeout)
            async with self._session.post(self.url, **kwargs) as resp:
                text = await resp.text()
                if resp.status >= 400:
                    raise map_status(resp.status, _error_message(text, self.secrets), resp.headers, self.provider,
                                     self.secrets)
        except (TimeoutError, asyncio.TimeoutError):
            raise TransientProviderError(f"no answer within {timeout} s (timeout)") from None
        except aiohttp.ClientPayloadError as exc:
            raise TransientProviderError(
                f"connection error (truncated response body: {clip(str(exc), 300, self.secrets)})") from None
        except aiohttp.ClientError as exc:
            kind = type(exc).__name__
            if isinstance(exc, OSError) and exc.errno == errno.ECONNRESET:
                kind = "ConnectionResetError"
            text_exc = clip(str(exc), 300, self.secrets)
            raise TransientProviderError(
                f"connection error ({kind}: {text_exc})" if text_exc else f"connection error ({kind})",
                refused=connection_refused(exc)) from None
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            why = clip(f"{type(exc).__name__}: {exc}", 300, self.secrets)
            raise TransientProviderError(f"invalid response body ({why})") from None

    async def probe(self, timeout: float) -> bool:
        """``GET <base>/models``: True when the server answers below 500 (a health check)."""
        aiohttp = self._aiohttp
        url = self.url[: -len("/chat/completions")] + "/models" if self.url.endswith("/chat/completions") else self.url
        try:
            async with self._session.get(url, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                return bool(resp.status < 500)
        except (aiohttp.ClientError, TimeoutError, asyncio.TimeoutError):
            return False

    async def close(self) -> None:
        await self._session.close()


__all__ = ["BodyEncoder", "NativeClient", "chat_url", "map_status"]
