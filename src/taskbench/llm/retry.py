"""Retries with exponential backoff and full jitter, bounded in attempts and in total time.

Pure policy (:class:`RetryPolicy`, :meth:`RetryPolicy.delay`) plus one async driver (:func:`call_with_retries`)
that the :class:`taskbench.llm.Model` wrapper uses; providers never retry themselves. Clock, sleep and the
random source are injectable so the policy is tested without waiting.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from ..errors import ModelError
from .base import TransientProviderError

T = TypeVar("T")

logger = logging.getLogger("taskbench.llm")


MAX_RETRIES = 100
"""The most retries of one call a Model takes (``max_retries``): more only hammers a server that keeps failing."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry transient failures (429, 5xx, timeouts, resets, truncated bodies)."""

    max_retries: int = 5
    """Retries after the first attempt (so at most ``max_retries + 1`` requests)."""
    max_total_seconds: float = 600.0
    """Bound on the whole call: attempts plus waits. No retry starts (and no wait begins) past it."""
    base_delay: float = 0.5
    """First backoff ceiling in seconds; doubles each retry (full jitter draws uniformly below it)."""
    max_delay: float = 30.0
    """Largest backoff ceiling in seconds (Retry-After from the server may ask for more)."""

    def delay(self, retry: int, retry_after: float | None, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``retry`` (0-based): full jitter on an exponential ceiling,
        never less than the server's ``Retry-After``."""
        ceiling = min(self.max_delay, self.base_delay * (2.0**retry))
        wait = ceiling * rand()
        if retry_after is not None and retry_after > wait:
            wait = float(retry_after)
        return wait


@dataclass
class RetryOutcome:
    """How a call with retries went."""

    retries: int = 0
    """Failed attempts that were retried."""
    waited: float = 0.0
    """Seconds spent sleeping between attempts."""


async def call_with_retries(
    attempt: Callable[[float | None], Awaitable[T]],
    policy: RetryPolicy,
    *,
    timeout: float | None,
    describe: str = "model call",
    outcome: RetryOutcome | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
    rand: Callable[[], float] = random.random,
    redact: Callable[[str], str] = str,
) -> T:
    """Run ``attempt(timeout_for_this_attempt)`` until it succeeds, retrying :class:`TransientProviderError`.

    The per-attempt timeout is ``timeout`` capped by what is left of ``policy.max_total_seconds``. Gives up with
    :class:`ModelError` after ``policy.max_retries`` retries, or when the next wait (including a server's
    Retry-After) would cross the total bound. Other exceptions propagate at once (permanent failures).
    """
    outcome = outcome if outcome is not None else RetryOutcome()
    start = clock()
    deadline = start + policy.max_total_seconds
    retry = 0
    while True:
        remaining = deadline - clock()
        per_attempt = remaining if timeout is None else min(timeout, remaining)
        try:
            return await attempt(per_attempt)
        except TransientProviderError as exc:
            last = exc
        attempts = retry + 1
        elapsed = clock() - start
        why = redact(_describe_error(last))
        if retry >= policy.max_retries:
            raise ModelError(
                f"{describe} failed after {attempts} attempt{'s' if attempts != 1 else ''} "
                f"in {elapsed:.1f} s (max_retries={policy.max_retries}); last error: {why}"
            ) from last
        wait = policy.delay(retry, last.retry_after, rand)
        if clock() + wait >= deadline:
            reason = (
                f"the server's Retry-After of {last.retry_after:g} s"
                if last.retry_after is not None and wait == last.retry_after
                else f"a {wait:.1f} s backoff"
            )
            raise ModelError(
                f"{describe} failed after {attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.1f} s: "
                f"{reason} would exceed the total time bound of {policy.max_total_seconds:g} s; "
                f"last error: {why}"
            ) from last
        logger.info("%s: attempt %d failed (%s); retrying in %.2f s", describe, attempts, why, wait)
        outcome.retries += 1
        outcome.waited += wait
        retry += 1
        await sleep(wait)


def _describe_error(exc: TransientProviderError) -> str:
    text = str(exc) or type(exc).__name__
    if exc.status is not None and str(exc.status) not in text:
        text = f"HTTP {exc.status}: {text}"
    return text


__all__ = ["MAX_RETRIES", "RetryOutcome", "RetryPolicy", "call_with_retries"]
