"""Aggregation: every strict metric from per-sample column sums, vectorised.

:func:`metrics_from_sums` computes every metric from column sums over any leading batch axis, so the same
function gives the point estimate, bootstrap replicates and permutation replicates
(:mod:`taskbench.eval.stats`). Micro scores pool counts over the group; macro scores average per-tool F1 over
the library tools that occur (in gold or prediction) in the group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .groups import make_groups


def _div(num: np.ndarray, den: np.ndarray, empty: float = np.nan) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.full(np.broadcast_shapes(num.shape, den.shape), empty)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _prf(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P, R, F1 from counts; NaN where nothing was expected or predicted, 0 where one side is empty."""
    nothing = (tp + fp + fn) == 0
    p = np.where(nothing, np.nan, _div(tp, tp + fp, 0.0))
    r = np.where(nothing, np.nan, _div(tp, tp + fn, 0.0))
    f = _div(2 * tp, 2 * tp + fp + fn)
    return p, r, f


HEADLINE = (
    "step_rouge1",
    "step_rouge2",
    "step_rougeL",
    "step_rougeLsum",
    "step_bertscore_precision",
    "step_bertscore_recall",
    "step_bertscore_f1",
    "node_micro_precision",
    "node_micro_recall",
    "node_micro_f1",
    "node_macro_precision",
    "node_macro_recall",
    "node_macro_f1",
    "link_precision",
    "link_recall",
    "link_f1",
    "argument_name_f1",
    "argument_value_f1",
    "edit_distance",
    "node_set_accuracy",
    "edge_set_accuracy",
    "graph_accuracy",
    "parse_failure_rate",
    "call_failure_rate",
    "missing_rate",
)
"""Every metric :func:`metrics_from_sums` can report, in display order (missing columns -> left out)."""

_MEAN_COLUMNS = {
    "step_rouge1": "step_rouge1",
    "step_rouge2": "step_rouge2",
    "step_rougeL": "step_rougeL",
    "step_rougeLsum": "step_rougeLsum",
    "step_bertscore_precision": "step_bertscore_precision",
    "step_bertscore_recall": "step_bertscore_recall",
    "step_bertscore_f1": "step_bertscore_f1",
    "edit_distance": "ned",
    "node_set_accuracy": "node_set_match",
    "graph_accuracy": "graph_match",
    "parse_failure_rate": "parse_failure",
    "call_failure_rate": "call_failure",
    "missing_rate": "missing",
}


def metrics_from_sums(sums: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every metric from column sums. Scalars give scalars; a leading batch axis (bootstrap replicates) is
    kept. Per-tool columns have the tool axis last."""
    out: dict[str, np.ndarray] = {}
    n = sums["n"]
    for metric, col in _MEAN_COLUMNS.items():
        if col in sums:
            out[metric] = _div(sums[col], n)
    p, r, f = _prf(sums["node_tp"], sums["node_fp"], sums["node_fn"])
    out["node_micro_precision"], out["node_micro_recall"], out["node_micro_f1"] = p, r, f
    tp, fp, fn = sums["tool_tp"], sums["tool_fp"], sums["tool_fn"]
    present = (tp + fp + fn) > 0
    tp_, tr_, tf_ = _prf(tp, fp, fn)
    k = present.sum(axis=-1)
    for name, per in (("precision", tp_), ("recall", tr_), ("f1", tf_)):
        out[f"node_macro_{name}"] = _div(np.where(present, per, 0.0).sum(axis=-1), k)
    p, r, f = _prf(sums["link_tp"], sums["link_fp"], sums["link_fn"])
    out["link_precision"], out["link_recall"], out["link_f1"] = p, r, f
    out["argument_name_f1"] = _prf(sums["arg_name_tp"], sums["arg_name_fp"], sums["arg_name_fn"])[2]
    out["argument_value_f1"] = _prf(sums["arg_value_tp"], sums["arg_value_fp"], sums["arg_value_fn"])[2]
    out["edge_set_accuracy"] = _div(sums["edge_set_match"], sums["edge_defined"])
    return {k: out[k] for k in HEADLINE if k in out}


def per_tool_from_sums(sums: Mapping[str, np.ndarray], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{tool: {precision, recall, f1-score, support}}`` for tools that occur in gold or prediction."""
    tp, fp, fn = sums["tool_tp"], sums["tool_fp"], sums["tool_fn"]
    p, r, f = _prf(tp, fp, fn)
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
