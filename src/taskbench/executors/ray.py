"""The Ray executor: each call (a shard) is a Ray task on a cluster (``pip install "taskbench[ray]"``).

- ``address=None`` starts a private local cluster for this process (stopped by :meth:`RayExecutor.close`; a
  :class:`~taskbench.executors.reaper.Reaper` stops what is left of it when this process is killed instead);
  ``"auto"`` or ``"HOST:PORT"`` joins a running one (``ray start --head`` on the head node, ``ray start
  --address HEAD:6379`` on the others).
- A task whose worker process dies (killed, out of memory, its node lost) is run again by Ray
  (``max_retries``); a shard task resumes from its shard file, so nothing written is lost or written twice.
  An exception raised *by* the task is not retried: it comes back to the driver as itself.
- Tasks get plain data only (the job's class path and JSON payload, the shard's ids, the shard file's path):
  models are rebuilt inside each worker from their config, never pickled live. Workers need taskbench
  installed (or ``runtime_env={"py_modules": [...]}``) and, on several nodes, the output directory and the
  response cache on storage every node reaches (see docs/scale.md).
- Ray's usage statistics are off unless ``RAY_USAGE_STATS_ENABLED`` says otherwise, and the driver does not
  echo worker output (``log_to_driver=False``): library code never prints.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ConfigError, MissingDependencyError, TaskbenchError

logger = logging.getLogger("taskbench.executors")


def _ray() -> Any:
    try:
        import ray
    except ModuleNotFoundError as exc:
        raise MissingDependencyError("ray", "ray", "--executor ray") from exc
    return ray


class RayExecutor:
    """Runs calls as Ray tasks (see the module docstring). ``resources`` (custom Ray resources each task needs,
    e.g. ``{"gpu_node": 1}``) places the tasks on the nodes that offer them."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        num_cpus: float = 1.0,
        max_retries: int = 3,
        runtime_env: dict[str, Any] | None = None,
        init_options: dict[str, Any] | None = None,
        poll_interval: float = 0.25,
        resources: dict[str, float] | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"workers must be >= 1, not {workers}")
        if num_cpus <= 0:
            raise ConfigError(f"num_cpus per task must be > 0, not {num_cpus}")
        self.address = address or None
        self._workers = workers
        self.requested_workers = workers
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.runtime_env = runtime_env
        self.init_options = dict(init_options or {})
        self.poll_interval = poll_interval
        self.resources = dict(resources or {})
        self._started = False
        self._remote: dict[Any, Any] = {}
        self._reaper: Any = None

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, workers={self._workers})"

    def _init(self) -> Any:
        ray = _ray()
        if ray.is_initialized():
            return ray
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if self.address is None:
            # a private cluster on this machine, bound to loopback (nothing listens on other interfaces), as many
            # CPUs as workers asked for
            options["num_cpus"] = int(max(1, (self._workers or os.cpu_count() or 1) * self.num_cpus))
            options["_node_ip_address"] = "127.0.0.1"
        else:
            options["address"] = self.address
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        options.update(self.init_options)
        if self.address is None:  # the private cluster goes when this process goes, however it ends
            from .reaper import Reaper

            self._reaper = Reaper().start()
        try:
            ray.init(**options)
        except BaseException as exc:
            self._stop_reaper()
            if isinstance(exc, ConnectionError):
                raise ConfigError(f"cannot reach the Ray cluster at {self.address!r} ({exc}); start it with "
                                  "`ray start --head` or give --ray-address HOST:PORT") from exc
            raise
        self._started = True
        self._warn_about_the_cache(ray)
        return ray

    @staticmethod
    def _warn_about_the_cache(ray: Any) -> None:
        """Several nodes and the default SQLite cache: each node would keep its own file (and SQLite's WAL is not
        safe on a network file system)."""
        from ..llm.cache import CACHE_URL_ENV

        try:
            nodes = [n for n in ray.nodes() if n.get("Alive")]
        except Exception:  # pragma: no cover - a cluster that cannot list its nodes
            return
        if len(nodes) > 1 and not os.environ.get(CACHE_URL_ENV):
            logger.warning(
                "%d Ray nodes and no %s: each node's workers use their own SQLite response cache (not safe on a "
                "network file system); set %s=redis://HOST:6379/0 or dir:///shared/path to share one",
                len(nodes), CACHE_URL_ENV, CACHE_URL_ENV)

    def start(self) -> RayExecutor:
        """Start (or join) the cluster now rather than at the first job."""
        self._init()
        return self

    @property
    def workers(self) -> int:
        """Shards run at once: as given, else the cluster's CPUs / ``num_cpus``."""
        if self._workers is not None:
            return self._workers
        ray = self._init()
        cpus = float(ray.cluster_resources().get("CPU", 1))
        return max(1, int(cpus // self.num_cpus))

    async def amap(
        self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], *, poll: Callable[[], None] | None = None
    ) -> list[Any]:
        ray = self._init()
        remote = self._remote.get(fn)
        if remote is None:
            extra: dict[str, Any] = {"resources": self.resources} if self.resources else {}
            remote = self._remote[fn] = ray.remote(num_cpus=self.num_cpus, max_retries=self.max_retries,
                                                   retry_exceptions=False, **extra)(fn)
        refs = [remote.remote(*args) for args in calls]
        pending = list(refs)
        try:
            while pending:
                _, pending = ray.wait(pending, num_returns=len(pending), timeout=0)
                if poll is not None:
                    poll()
                if pending:
                    await asyncio.sleep(self.poll_interval)
            return [self._get(ray, r) for r in refs]
        except BaseException:
            for r in pending:
                ray.cancel(r, force=True)
            raise

    @staticmethod
    def _get(ray: Any, ref: Any) -> Any:
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, TaskbenchError):
                raise cause from None  # an InputError in a worker is the user's error, as locally
            raise
        except ray.exceptions.RayError as exc:  # worker died more often than max_retries, node lost, ...
            raise TaskbenchError(f"a Ray task failed for good: {type(exc).__name__}: {exc}; rerun the same "
                                 "command to resume (the records written so far are kept)") from exc

    def close(self) -> None:
        """Stop the local cluster this executor started (a joined cluster keeps running)."""
        if self._started:
            _ray().shutdown()
            self._started = False
        self._stop_reaper()

    def _stop_reaper(self) -> None:
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.close()

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["RayExecutor"]
