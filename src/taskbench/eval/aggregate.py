"""Aggregation: every strict metric from per-sample column sums, vectorised.

:func:`metrics_from_sums` (the metric table's, :mod:`taskbench.eval.metrics`) computes every metric from column
sums over any leading batch axis, so the same function gives the point estimate, bootstrap replicates and
permutation replicates (:mod:`taskbench.eval.stats`). Micro scores pool counts over the group; macro scores
average per-tool F1 over the library tools that occur (in gold or prediction) in the group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .groups import make_groups
from .metrics import BUILTIN, metrics_from_sums, prf

HEADLINE: tuple[str, ...] = tuple(m.key for m in BUILTIN)
"""Every built-in metric :func:`metrics_from_sums` can report, in display order (missing columns -> left out;
the metric table, :mod:`taskbench.eval.metrics`, holds them and any added ones)."""


def per_tool_from_sums(sums: Mapping[str, np.ndarray], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{tool: {precision, recall, f1-score, support}}`` for tools that occur in gold or prediction."""
    tp, fp, fn = sums["tool_tp"], sums["tool_fp"], sums["tool_fn"]
    p, r, f = prf(tp, fp, fn)
    out: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(names):
        if tp[i] + fp[i] + fn[i] > 0:
            out[name] = {
                "precision": float(p[i]),
                "recall": float(r[i]),
                "f1-score": float(f[i]),
                "support": int(tp[i] + fn[i]),
            }
    return out


def split_groups(splits: Sequence[str], n_tools: Sequence[str], mode: str) -> list[tuple[str, str]]:
    """The ``(split, n_tools)`` groups in the reference's order (see :func:`taskbench.eval.groups.make_groups`)."""
    return [(g.split, g.n_tools) for g in make_groups(splits, n_tools, mode)]


def to_jsonable(value: Any) -> Any:
    """NaN -> None, numpy scalars -> Python numbers (for JSON output)."""
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return None if np.isnan(v) else v
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    return value



__all__ = ["HEADLINE", "metrics_from_sums", "per_tool_from_sums", "split_groups", "to_jsonable"]
