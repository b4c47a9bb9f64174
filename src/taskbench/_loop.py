"""An event loop running forever on a daemon thread: how the sync wrappers run async code (they then also
work where a loop is already running, e.g. in a notebook)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A private event loop on its own daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (not from the loop's own thread)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a sync call was made from inside its own event loop; await the async API instead")
        return self.submit(coro).result()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop without waiting: its future, for ``.result(timeout)`` or
        ``asyncio.wrap_future``."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` on the loop's thread (thread-safe)."""
        self.loop.call_soon_threadsafe(callback)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join its thread for up to ``timeout`` s; the loop is closed once it has stopped."""
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout)
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()


__all__ = ["LoopThread"]
