"""Executable TaskBench domains: tools as deterministic functions over typed artifacts (huggingface, multimedia)
or over a seeded daily-life world (dailylifeapis); graph execution, comparison, and the environments.

- :mod:`.artifacts`: :class:`Artifact`, content-addressed by provenance;
- :mod:`.dailylife`: :class:`DailyLifeWorld`, the stateful simulation of the Daily Life APIs;
- :mod:`.execute`: :class:`DomainRuntime` (run one call, run a whole :class:`~taskbench.schema.TaskGraph`) and
  :func:`compare_executions`;
- :mod:`.env`: the environments ``taskbench-huggingface``, ``taskbench-multimedia``, ``taskbench-dailylifeapis``.
"""

from .artifacts import Artifact, make_literal, normalise_literal
from .dailylife import DailyLifeWorld
from .execute import COMMUTATIVE, DomainRuntime, ExecutionCheck, GraphExecution, compare_executions

__all__ = [
    "COMMUTATIVE",
    "Artifact",
    "DailyLifeWorld",
    "DomainRuntime",
    "ExecutionCheck",
    "GraphExecution",
    "compare_executions",
    "make_literal",
    "normalise_literal",
]
