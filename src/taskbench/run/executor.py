"""Where a command's work runs: this process, or sharded over an executor (:mod:`taskbench.executors`).

Every command that can shard (``run``, ``predict``, ``evaluate``, ``generate``, ``agents eval``) takes an
:class:`ExecutorSpec` in its spec, and its library call makes the choice: :func:`executor_scope` gives None for
an in-process run, or an executor it opens and closes. A caller that keeps one executor for several calls
passes the executor object itself instead (it is used as given and not closed).

This module imports no executor until one is asked for, so the in-process commands never load Ray.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, did_you_mean

EXECUTOR_NAMES: tuple[str, ...] = ("local", "ray")
"""``local``: in this process; ``ray``: sharded over Ray workers (extra ``[ray]``)."""


@dataclass(frozen=True)
class ExecutorSpec:
    """``--executor``, ``--ray-address`` and ``--workers`` of a command."""

    name: str = "local"
    """``local`` (this process) or ``ray``."""
    address: str | None = None
    """Ray cluster to join (``auto``, ``HOST:6379``); None: start a private one on this machine."""
    workers: int | None = None
    """Shards run at once (default: the cluster's CPUs)."""

    def check(self) -> ExecutorSpec:
        """The spec, if its options go together (else :class:`ConfigError`)."""
        if self.name not in EXECUTOR_NAMES:
            raise ConfigError(f"unknown executor {self.name!r} ({did_you_mean(self.name, EXECUTOR_NAMES)})")
        if self.name == "local" and (self.address or self.workers):
            raise ConfigError("--ray-address and --workers need --executor ray")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"--workers must be >= 1, not {self.workers}")
        return self

    @property
    def sharded(self) -> bool:
        """True when the work runs on an executor rather than in this process."""
        return self.name != "local"


def check_executor(executor: ExecutorSpec | Any | None) -> bool:
    """Check an executor choice (a spec's options, or an executor object as given); True when the work is
    sharded (anything but an in-process run)."""
    if executor is None:
        return False
    if isinstance(executor, ExecutorSpec):
        return executor.check().sharded
    if not callable(getattr(executor, "amap", None)):
        raise ConfigError(f"executor: expected an ExecutorSpec or an executor (taskbench.executors), not "
                          f"{type(executor).__name__}")
    return True


def open_executor(spec: ExecutorSpec) -> Any:
    """The executor of ``spec`` (the caller closes it), or None for an in-process run."""
    spec.check()
    if not spec.sharded:
        return None
    from ..executors import get_executor

    return get_executor(spec.name, address=spec.address, workers=spec.workers)


@contextlib.contextmanager
def executor_scope(executor: ExecutorSpec | Any | None) -> Iterator[Any]:
    """The executor to run on: None for in-process work (``None`` or a local spec), the one a spec opens
    (closed on leaving), or an executor object as given (left open: its owner closes it)."""
    if executor is None:
        yield None
        return
    if not isinstance(executor, ExecutorSpec):
        yield executor
        return
    opened = open_executor(executor)
    try:
        yield opened
    finally:
        if opened is not None:
            opened.close()


__all__ = ["EXECUTOR_NAMES", "ExecutorSpec", "check_executor", "executor_scope", "open_executor"]
