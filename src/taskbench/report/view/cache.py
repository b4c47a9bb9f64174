"""Results the viewer computes once and shares: a small least-recently-used map whose builds are single-flight.

Two identical requests that arrive together (three users opening the same Compare, a page and its refresh)
wait for one computation instead of running it twice each; a key carries the size and mtime of the files it was
built from, so a changed file is read again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["Memo", "release_memory"]

T = TypeVar("T")

_libc: Any = None


def release_memory() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; nothing elsewhere). A build reads
    and parses a large file and keeps a small index of it: without this the process keeps the pages the
    parsing used, and its resident memory stays at the build's peak."""
    global _libc
    if _libc is None:
        try:
            import ctypes
            import ctypes.util

            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


class Memo(Generic[T]):
    """At most ``keep`` results by key, the least recently used dropped first; :meth:`get` builds a missing
    one once, however many threads ask for it at the same time (thread-safe)."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._items: OrderedDict[Hashable, T] = OrderedDict()
        self._building: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The result for ``key``, built by ``build()`` when missing (an exception is not kept: the next
        request builds again)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            flight = self._building.setdefault(key, threading.Lock())
        with flight:
            with self._lock:
                if key in self._items:  # built by the thread this one waited for
                    self._items.move_to_end(key)
                    return self._items[key]
            try:
                value = build()
            except BaseException:
                with self._lock:
                    self._building.pop(key, None)
                raise
            finally:
                release_memory()
            self.put(key, value)
            with self._lock:
                self._building.pop(key, None)
            return value

    def put(self, key: Hashable, value: T) -> None:
        """Keep ``value`` for ``key`` (the least recently used dropped past :attr:`keep`)."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.keep:
                self._items.popitem(last=False)

    def peek(self, key: Hashable) -> T | None:
        """The result for ``key`` when it is built (None otherwise); builds nothing."""
        with self._lock:
            return self._items.get(key)

    def clear(self) -> None:
        """Forget every result."""
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
