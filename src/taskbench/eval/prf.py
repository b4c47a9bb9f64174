"""Precision / recall / F1 from counts, with scikit-learn 1.2.2 semantics.

The reference evaluator feeds flattened label arrays to ``sklearn.metrics.precision_recall_fscore_support``.
Everything it reports is a function of three counts per label (true positives, false positives, false
negatives), so we score from counts: per sample once, summed per group. Semantics kept from scikit-learn 1.2.2:

- precision = tp / (tp + fp), recall = tp / (tp + fn); a zero denominator gives 0 (sklearn warns and returns 0);
- F1 = 2 * p * r / (p + r), 0 when p + r == 0 (same operation order as sklearn, so results are bit-identical);
- micro: the three counts summed over the labels, then the formulas above;
- macro: the unweighted mean of the per-label precision, recall and F1 (labels without support count as 0);
- binary: the formulas for the positive label only.

All functions are pure and accept Python ints or numpy arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "PRF",
    "PRFArrays",
    "binary_prf",
    "macro_prf",
    "micro_prf",
    "per_label_prf",
    "prf_from_counts",
    "safe_divide",
]


class PRF(NamedTuple):
    """Precision, recall and F1 (floats in [0, 1])."""

    precision: float
    recall: float
    f1: float


class PRFArrays(NamedTuple):
    """Per-label precision, recall, F1 (float64 arrays) and support (int64 array: tp + fn)."""

    precision: NDArray[np.float64]
    recall: NDArray[np.float64]
    f1: NDArray[np.float64]
    support: NDArray[np.int64]


def safe_divide(num: ArrayLike, den: ArrayLike) -> NDArray[np.float64]:
    """Element-wise ``num / den`` with 0 where ``den == 0`` (scikit-learn's zero_division behaviour)."""
    num_a = np.asarray(num, dtype=np.float64)
    den_a = np.asarray(den, dtype=np.float64)
    den_safe = np.where(den_a == 0, 1.0, den_a)
    return np.where(den_a == 0, 0.0, num_a / den_safe)


def _f1(precision: NDArray[np.float64], recall: NDArray[np.float64]) -> NDArray[np.float64]:
    denom = precision + recall
    denom_safe = np.where(denom == 0.0, 1.0, denom)
    return 2 * precision * recall / denom_safe


def per_label_prf(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> PRFArrays:
    """Per-label scores from per-label counts (``average=None`` in scikit-learn)."""
    tp_a = np.asarray(tp, dtype=np.int64)
    fp_a = np.asarray(fp, dtype=np.int64)
    fn_a = np.asarray(fn, dtype=np.int64)
    precision = safe_divide(tp_a, tp_a + fp_a)
    recall = safe_divide(tp_a, tp_a + fn_a)
    return PRFArrays(precision, recall, _f1(precision, recall), tp_a + fn_a)


def prf_from_counts(tp: int, fp: int, fn: int) -> PRF:
    """Scores of one label (or of summed counts) as plain floats."""
    res = per_label_prf(np.array([tp]), np.array([fp]), np.array([fn]))
    return PRF(float(res.precision[0]), float(res.recall[0]), float(res.f1[0]))


def micro_prf(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> PRF:
    """Micro average: counts summed over labels (``average='micro'``)."""
    return prf_from_counts(int(np.sum(tp)), int(np.sum(fp)), int(np.sum(fn)))


def macro_prf(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> PRF:
    """Macro average: unweighted mean of per-label scores over all given labels (``average='macro'``)."""
    res = per_label_prf(tp, fp, fn)
    if res.precision.size == 0:
        return PRF(0.0, 0.0, 0.0)
    return PRF(float(np.mean(res.precision)), float(np.mean(res.recall)), float(np.mean(res.f1)))


def binary_prf(tp: int, fp: int, fn: int) -> PRF:
    """Binary average for the positive label (``average='binary'``, pos_label=1)."""
    return prf_from_counts(tp, fp, fn)
