"""Process-level helpers for the evaluator's hot paths: the cyclic garbage collector and BLAS threads."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while scoring.

    The parsed JSON is millions of live objects: with the collector on, every collection walks them again,
    and nothing the evaluator builds forms reference cycles. On the way out, the objects allocated meanwhile
    are moved to the oldest generation without being scanned (``gc.freeze`` + ``gc.unfreeze``); otherwise the
    first collection after re-enabling would walk all of them at once. Nested use is fine (only the
    outermost block re-enables the collector)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def one_blas_thread() -> AbstractContextManager[Any]:
    """Run BLAS single-threaded in this block: the bootstrap does many small matrix products, for which
    starting and synchronising threads costs more than the work (on a busy machine, ten times more)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency; without it BLAS picks its threads
        return nullcontext()
    limits: AbstractContextManager[Any] = threadpool_limits(1, user_api="blas")  # threadpoolctl has no hints
    return limits


__all__ = ["gc_paused", "one_blas_thread"]
