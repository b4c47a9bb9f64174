"""Precision/recall/F1 from counts with scikit-learn 1.2.2's semantics (hand-computed cases)."""

from __future__ import annotations

import numpy as np
import pytest

from taskbench.eval.prf import (
    PRF,
    binary_prf,
    macro_prf,
    micro_prf,
    per_label_prf,
    prf_from_counts,
    safe_divide,
)


def test_single_label() -> None:
    assert prf_from_counts(2, 1, 1) == PRF(pytest.approx(2 / 3), pytest.approx(2 / 3), pytest.approx(2 / 3))
    p, r, f = prf_from_counts(3, 1, 0)
    assert (p, r) == (0.75, 1.0) and f == pytest.approx(2 * 0.75 / 1.75)


def test_zero_division_gives_zero() -> None:
    assert prf_from_counts(0, 0, 0) == PRF(0.0, 0.0, 0.0)
    assert prf_from_counts(0, 3, 0) == PRF(0.0, 0.0, 0.0)  # no gold: recall 0/0 -> 0
    assert prf_from_counts(0, 0, 2) == PRF(0.0, 0.0, 0.0)  # no predictions: precision 0/0 -> 0
    assert safe_divide([1, 0, 2], [2, 0, 0]).tolist() == [0.5, 0.0, 0.0]


def test_per_label_micro_macro() -> None:
    tp, fp, fn = np.array([2, 0, 1, 0]), np.array([0, 1, 1, 0]), np.array([1, 0, 0, 0])
    per = per_label_prf(tp, fp, fn)
    assert per.precision.tolist() == [1.0, 0.0, 0.5, 0.0]
    assert per.recall.tolist() == pytest.approx([2 / 3, 0.0, 1.0, 0.0])
    assert per.f1.tolist() == pytest.approx([0.8, 0.0, 2 / 3, 0.0])
    assert per.support.tolist() == [3, 0, 1, 0]
    micro = micro_prf(tp, fp, fn)  # tp 3, fp 2, fn 1
    assert micro.precision == pytest.approx(3 / 5) and micro.recall == pytest.approx(3 / 4)
    assert micro.f1 == pytest.approx(2 * 0.6 * 0.75 / 1.35)
    macro = macro_prf(tp, fp, fn)  # labels without support count as 0 in the mean
    assert macro.precision == pytest.approx(1.5 / 4)
    assert macro.recall == pytest.approx((2 / 3 + 1) / 4)
    assert macro.f1 == pytest.approx((0.8 + 2 / 3) / 4)  # mean of F1s, not F1 of the means


def test_binary_and_empty() -> None:
    assert binary_prf(1, 1, 0).f1 == pytest.approx(2 / 3)
    assert binary_prf(0, 0, 0) == PRF(0.0, 0.0, 0.0)
    assert macro_prf([], [], []) == PRF(0.0, 0.0, 0.0)
    assert isinstance(micro_prf([1], [0], [0]).f1, float)


def test_f1_operation_order_matches_sklearn() -> None:
    # sklearn computes (1 + beta^2) * p * r / (beta^2 * p + r), i.e. 2 * p * r / (p + r) in that order
    tp, fp, fn = 7, 3, 5
    p, r = tp / (tp + fp), tp / (tp + fn)
    assert prf_from_counts(tp, fp, fn).f1 == 2 * p * r / (p + r)
