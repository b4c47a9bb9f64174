"""A pool of replica endpoints behind one HTTP provider: least-loaded choice, a concurrency limit per endpoint,
failover, and health checks that take a failing endpoint out and put it back.

Used by the ``openai`` / ``openai-compatible`` providers when ``base_url`` names several servers (vLLM or
SGLang replicas of one model). The pool is pure bookkeeping: which endpoint takes the next request, and what a
failure means for it. The provider sends the requests and runs the probes (``probe(endpoint)``).

- **Choice.** The endpoint with the fewest requests in flight relative to its limit among the healthy ones
  (ties go round-robin), so a slow replica gets less work. When every healthy endpoint is at its limit, a
  request waits for a slot.
- **Out.** A connection error, a 5xx or a timeout takes the endpoint out and starts a probe; a 429 takes it out
  for its Retry-After (default 1 s) and needs no probe (the server is alive, just busy). The request that failed
  goes to another endpoint at once (:meth:`EndpointPool.acquire` with ``exclude``), so a dead replica costs a
  request no retry and no backoff; only when every endpoint failed it does the Model wrapper's retry policy
  take over.
- **Back in.** The probe (``GET <base_url>/models``; any HTTP answer means the server is up) runs after a
  cooldown that doubles with each consecutive failure (``cooldown`` .. ``max_cooldown``); the first answer puts
  the endpoint back.
- **Nothing healthy.** Requests then go to the endpoint expected back soonest rather than failing without
  trying, which also makes a pool of one behave exactly like a plain client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import ModelError

logger = logging.getLogger("taskbench.llm.pool")


class NoEndpointLeft(ModelError):
    """Every endpoint of the pool was tried for this request (the openai provider turns it into a
    :class:`~taskbench.llm.base.TransientProviderError`)."""


@dataclass
class Endpoint:
    """One replica and what the pool knows about it."""

    index: int
    url: str
    limit: int
    in_flight: int = 0
    down_until: float = 0.0
    """Monotonic time before which the endpoint is out (0: in)."""
    needs_probe: bool = False
    """Out until a health probe answers (connection errors, 5xx, timeouts); a 429 only waits ``down_until``."""
    failures: int = 0
    """Consecutive failures (requests and probes); resets on success."""
    served: int = 0
    errors: int = 0
    last_error: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    """The provider's per-endpoint objects (SDK clients)."""

    def healthy(self, now: float) -> bool:
        return not self.needs_probe and now >= self.down_until

    def stats(self) -> dict[str, Any]:
        return {"url": self.url, "in_flight": self.in_flight, "served": self.served, "errors": self.errors,
                "healthy": self.healthy(time.monotonic()), "last_error": self.last_error}


class EndpointPool:
    """Endpoints of one model (see the module docstring)."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        limit: int,
        cooldown: float = 0.5,
        max_cooldown: float = 30.0,
        probe: Callable[[Endpoint], Awaitable[bool]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not urls:
            raise ValueError("an endpoint pool needs at least one URL")
        self.endpoints = [Endpoint(i, url, max(1, int(limit))) for i, url in enumerate(urls)]
        self.cooldown = cooldown
        self.max_cooldown = max_cooldown
        self.probe = probe
        self.clock = clock
        self._turn = 0
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._probes: dict[int, asyncio.Task[None]] = {}

    def __len__(self) -> int:
        return len(self.endpoints)

    def _changes(self) -> asyncio.Event:
        """The event set at the next change of the pool (a slot freed, an endpoint back); one per loop."""
        loop = asyncio.get_running_loop()
        if self._event is None or self._loop is not loop:
            self._event = asyncio.Event()
            self._loop = loop
            self._probes = {}
        return self._event

    def _changed(self) -> None:
        if self._event is not None:
            event, self._event = self._event, asyncio.Event()
            event.set()

    def _pick(self, exclude: set[int]) -> Endpoint | None | bool:
        """An endpoint with a free slot; ``True`` when one exists but all are busy (wait); None when every
        endpoint is excluded."""
        now = self.clock()
        open_ = [e for e in self.endpoints if e.index not in exclude]
        if not open_:
            return None
        pool = [e for e in open_ if e.healthy(now)]
        if not pool:  # nothing healthy: the one expected back soonest (a pool of one always sends)
            pool = [min(open_, key=lambda e: (e.down_until, e.index))]
        free = [e for e in pool if e.in_flight < e.limit]
        if not free:
            return True
        n = len(self.endpoints)
        self._turn = (self._turn + 1) % n
        return min(free, key=lambda e: (e.in_flight / e.limit, (e.index - self._turn) % n))

    async def acquire(self, exclude: set[int] | None = None) -> Endpoint:
        """The endpoint for the next attempt (waits for a free slot); :class:`NoEndpointLeft` when every
        endpoint is in ``exclude``."""
        exclude = exclude or set()
        while True:
            changes = self._changes()
            got = self._pick(exclude)
            if got is None:
                raise NoEndpointLeft
            if isinstance(got, Endpoint):
                got.in_flight += 1
                return got
            # every healthy endpoint is at its limit: wait for a release, or for an endpoint to come back
            now = self.clock()
            soon = [e.down_until - now for e in self.endpoints if not e.needs_probe and e.down_until > now]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changes.wait(), max(min(soon), 0.01) if soon else None)

    def release(self, endpoint: Endpoint, *, error: str | None = None, probe: bool = True,
                wait: float | None = None) -> None:
        """An attempt on ``endpoint`` ended: fine (``error`` None), or failed with ``error``. ``probe``: take
        the endpoint out until a health probe answers; otherwise out for ``wait`` seconds (a 429)."""
        endpoint.in_flight -= 1
        if error is None:
            endpoint.served += 1
            if not endpoint.needs_probe:
                endpoint.failures = 0
        else:
            self._fail(endpoint, error, probe=probe, wait=wait)
        self._changed()

    def _fail(self, endpoint: Endpoint, error: str, *, probe: bool, wait: float | None) -> None:
        endpoint.errors += 1
        endpoint.failures += 1
        endpoint.last_error = error
        now = self.clock()
        if probe:
            delay = min(self.max_cooldown, self.cooldown * 2 ** (endpoint.failures - 1))
            if not endpoint.needs_probe and len(self.endpoints) > 1:
                # a pool of one has nothing to take it out of: the retry line already says what failed
                then = f"health probe in {delay:.1f} s" if self.probe is not None else f"back in {delay:.1f} s"
                logger.warning("endpoint %s taken out (%s); %s", endpoint.url, error, then)
            endpoint.needs_probe = True
            endpoint.down_until = max(endpoint.down_until, now + delay)
            self._start_probe(endpoint)
        else:
            endpoint.down_until = max(endpoint.down_until, now + (wait if wait is not None else 1.0))

    def _start_probe(self, endpoint: Endpoint) -> None:
        if self.probe is None or len(self.endpoints) == 1:
            # a pool of one has nowhere else to send: its next request is the probe
            endpoint.needs_probe = False
            return
        task = self._probes.get(endpoint.index)
        if task is None or task.done():
            self._probes[endpoint.index] = asyncio.ensure_future(self._probe_loop(endpoint))

    async def _probe_loop(self, endpoint: Endpoint) -> None:
        assert self.probe is not None
        while endpoint.needs_probe:
            await asyncio.sleep(max(0.0, endpoint.down_until - self.clock()))
            try:
                alive = await self.probe(endpoint)
            except Exception as exc:  # a probe never raises out of the pool
                alive = False
                endpoint.last_error = f"probe: {type(exc).__name__}: {exc}"
            if alive:
                endpoint.needs_probe = False
                endpoint.failures = 0
                endpoint.down_until = 0.0
                logger.warning("endpoint %s answers again; back in the pool", endpoint.url)
                self._changed()
                return
            endpoint.failures += 1
            delay = min(self.max_cooldown, self.cooldown * 2 ** (endpoint.failures - 1))
            endpoint.down_until = self.clock() + delay

    async def aclose(self) -> None:
        """Stop the probes."""
        probes, self._probes = list(self._probes.values()), {}
        for task in probes:
            task.cancel()
        for task in probes:
            with contextlib.suppress(BaseException):
                await task

    def stats(self) -> list[dict[str, Any]]:
        """Per endpoint: URL, requests in flight, served, errors, healthy, last error."""
        return [e.stats() for e in self.endpoints]


def parse_urls(base_url: str | Sequence[str] | None) -> list[str]:
    """The endpoint URLs of a ``base_url`` option: one URL, a list, a comma-separated string, or ``@FILE`` (one
    URL per line; blank lines and ``#`` comments skipped). Duplicates are dropped, order kept."""
    from ...errors import ConfigError

    if base_url is None:
        return []
    items = [base_url] if isinstance(base_url, str) else list(base_url)
    urls: list[str] = []
    for item in items:
        item = str(item).strip()
        if item.startswith("@"):
            from pathlib import Path

            path = Path(item[1:]).expanduser()
            try:
                if path.exists() and not path.is_file():
                    raise ConfigError(f"{path}: not a regular file (give a text file of base URLs, one a line)")
                if path.stat().st_size > 1 << 20:
                    raise ConfigError(f"{path}: over 1 MB; a file of base URLs holds one URL a line")
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise ConfigError(f"{path}: cannot read the file of base URLs ({exc.strerror or exc})") from None
            except UnicodeDecodeError as exc:
                raise ConfigError(f"{path}: not UTF-8 text at byte {exc.start} (a file of base URLs, one a "
                                  "line)") from None
            found = [ln.split("#", 1)[0].strip() for ln in lines]
            found = [u for u in found if u]
            if not found:
                raise ConfigError(f"{path}: no base URLs in the file (one URL per line)")
            urls.extend(found)
        else:
            urls.extend(u.strip() for u in item.split(",") if u.strip())
    for url in urls:
        if not url.lower().startswith(("http://", "https://")) or any(c.isspace() or ord(c) < 32 for c in url):
            raise ConfigError(f"base URL {url[:200]!r} must start with http:// or https:// (and hold no spaces or "
                              "control characters)")
    return list(dict.fromkeys(urls))


__all__ = ["Endpoint", "EndpointPool", "NoEndpointLeft", "parse_urls"]
