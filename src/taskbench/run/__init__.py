"""The main job (`taskbench run`): predict and evaluate models x datasets into a run directory with a run log
and reports. See :mod:`taskbench.run.job`."""

from .job import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL,
    RUN_LOG_FILE,
    read_run_log,
    run_benchmark,
    run_state,
)
from .resolve import BUNDLED_DEMO_DATASETS, resolve_data
from .spec import RunSpec, default_model

__all__ = [
    "BUNDLED_DEMO_DATASETS",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "RUN_LOG_FILE",
    "RunSpec",
    "default_model",
    "read_run_log",
    "resolve_data",
    "run_benchmark",
    "run_state",
]
