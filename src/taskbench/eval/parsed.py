"""A prediction after strict parsing (:func:`taskbench.eval.strict.parse_strict`), the type the scoring of one
sample (:mod:`taskbench.eval.scoring`) reads; importable from :mod:`taskbench.eval.strict` too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..schema import TaskGraph

ParseStatus = Literal["ok", "missing", "parse_error", "call_failed"]


@dataclass
class ParsedPrediction:
    """One prediction after strict parsing."""

    id: str
    status: ParseStatus
    graph: TaskGraph
    error: str | None = None


__all__ = ["ParseStatus", "ParsedPrediction"]
