"""The commands as library calls: the main job (`taskbench run`: :mod:`taskbench.run.job`, its spec
:class:`RunSpec`) and a spec and one call for each other command that writes a run (:mod:`.predict`,
:mod:`.evaluate`, :mod:`.generate`, :mod:`.agents`), with the executor choice (:mod:`.executor`).

The names below are imported on first use, so that ``taskbench evaluate`` does not load the main job.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "DEFAULT_LIMIT": "job",
    "DEFAULT_MAX_TOKENS": "job",
    "DEFAULT_MODEL": "job",
    "RUN_LOG_FILE": "job",
    "read_run_log": "job",
    "run_benchmark": "job",
    "run_state": "job",
    "BUNDLED_DEMO_DATASETS": "resolve",
    "resolve_data": "resolve",
    "RunSpec": "spec",
    "default_model": "spec",
    "ExecutorSpec": "executor",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
