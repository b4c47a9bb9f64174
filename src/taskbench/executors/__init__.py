"""Executors: where the work of a run happens - this process, or a Ray cluster.

:mod:`.sharded` holds the protocol (a serialisable :class:`ShardedJob`, shard files merged in input order) and
:class:`LocalExecutor`; :mod:`.ray` the :class:`~taskbench.executors.ray.RayExecutor` (extra ``[ray]``);
:mod:`.predict` and :mod:`.evaluate` the jobs of ``predict``/``run`` and ``evaluate``.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .sharded import (
    Executor,
    LocalExecutor,
    ShardedJob,
    ShardedRun,
    arun_job,
    merge_shards,
    run_job,
    shard_dir,
)

EXECUTORS = ("local", "ray")


def get_executor(name: str, *, address: str | None = None, workers: int | None = None, **options: Any) -> Executor:
    """An executor by name: ``local`` (``workers`` threads of this process) or ``ray`` (``address``: None for a
    private local cluster, ``auto`` or ``HOST:PORT`` for a running one)."""
    if name == "local":
        if address:
            raise ConfigError("--ray-address needs --executor ray")
        return LocalExecutor(workers or 1, **options)
    if name == "ray":
        from .ray import RayExecutor

        return RayExecutor(address, workers=workers, **options)
    raise ConfigError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")


__all__ = [
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "ShardedJob",
    "ShardedRun",
    "arun_job",
    "get_executor",
    "merge_shards",
    "run_job",
    "shard_dir",
]
