"""Executed-task generation (``taskbench generate --method executed``): tasks whose calls are made before their
request is written, over any environment whose tools return JSON (the offline RestBench services, an OpenAPI
service, an MCP server). See :mod:`.job` for the flow."""

from .job import (
    DATA_FILE,
    DROP_CODES,
    LENGTHS,
    RAW_FILE,
    STATS_FILE,
    TASKS_FILE,
    ExecutedOptions,
    ExecutedSummary,
    agenerate_executed,
    finalize,
    task_line,
)
from .request import REQUEST_CODES

__all__ = ["DATA_FILE", "DROP_CODES", "LENGTHS", "RAW_FILE", "REQUEST_CODES", "STATS_FILE", "TASKS_FILE",
           "ExecutedOptions", "ExecutedSummary", "agenerate_executed", "finalize", "task_line"]
