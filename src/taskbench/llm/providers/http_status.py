"""HTTP error statuses of an OpenAI-compatible server -> the errors to raise: one rule for the SDK transport
(:mod:`~taskbench.llm.providers.openai`) and the native one (:mod:`~taskbench.llm.providers.native_http`), in a
module of its own so that neither transport imports the other for it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import ModelError
from ..base import TransientProviderError
from ..redact import clip


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (delta seconds or an HTTP date), else None."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(float(value) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    import time

    return max(when.timestamp() - time.time(), 0.0)


_RETRYABLE_STATUS = (408, 409, 425, 429)
"""HTTP statuses retried (besides every 5xx)."""


def map_status(status: int, message: str, headers: Any, provider: str, secrets: Sequence[str] = ()) -> Exception:
    """An HTTP error status -> the error to raise: transient (retried, honouring ``Retry-After``) for 408, 409,
    425, 429 and 5xx, else a ModelError with a hint. One rule for the SDK and the native transport. The server's
    ``message`` is redacted (``secrets`` and anything key-shaped), then cut to 300 characters."""
    message = clip(message, 300, secrets) or "no body"
    if status in _RETRYABLE_STATUS or status >= 500:
        return TransientProviderError(f"HTTP {status}: {message}", status=status, retry_after=_retry_after(headers))
    hint = ""
    if status == 401:
        hint = " (check the API key in the environment variable named by api_key_env)"
    elif status == 404:
        hint = " (check the model name and base_url)"
    return ModelError(f"{provider}: HTTP {status}: {message}{hint}")


__all__ = ["map_status"]
