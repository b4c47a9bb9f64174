"""Bootstrap CIs, paired comparison and rank correlations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from taskbench.eval.stats import (
    bootstrap_ci,
    column_sums,
    kendall_tau,
    paired_compare,
    resample_weights,
    rng_for,
    spearman_rho,
)
from taskbench.eval.strict import metrics_from_sums


def micro_f1(s):
    return {"f1": 2 * s["tp"] / (2 * s["tp"] + s["fp"] + s["fn"]), "mean": s["x"] / s["n"]}


def columns(n=60, seed=0, p=0.7):
    rng = np.random.default_rng(seed)
    tp = rng.integers(0, 4, n).astype(float)
    return {
        "n": np.ones(n),
        "tp": tp,
        "fp": rng.integers(0, 2, n).astype(float),
        "fn": rng.integers(0, 2, n).astype(float),
        "x": (rng.random(n) < p).astype(float),
    }


def test_resample_weights_are_draw_counts():
    w = resample_weights(10, 5, rng_for(1))
    assert w.shape == (5, 10) and (w.sum(axis=1) == 10).all() and (w >= 0).all()


def test_vectorised_replicates_equal_explicit_resampling():
    cols = columns()
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 60, size=60)
    w = np.bincount(idx, minlength=60)[None, :].astype(float)
    vec = micro_f1(column_sums(cols, w))
    explicit = micro_f1(column_sums({k: v[idx] for k, v in cols.items()}))
    assert vec["f1"][0] == pytest.approx(explicit["f1"]) and vec["mean"][0] == pytest.approx(explicit["mean"])


def test_bootstrap_is_seeded_and_covers_point():
    cols = columns()
    point = micro_f1(column_sums(cols))
    a = bootstrap_ci(cols, micro_f1, n_boot=500, seed=1, key="g")
    assert a == bootstrap_ci(cols, micro_f1, n_boot=500, seed=1, key="g")
    assert a != bootstrap_ci(cols, micro_f1, n_boot=500, seed=2, key="g")
    for k in ("f1", "mean"):
        lo, hi = a[k]
        assert lo < point[k] < hi
    # a mean of 60 Bernoulli(0.7): the CI half-width is about 1.96 * sqrt(.21 / 60) = 0.116
    lo, hi = a["mean"]
    assert 0.15 < hi - lo < 0.32


def test_paired_identical_inputs():
    cols = columns()
    res = paired_compare(cols, cols, micro_f1, n_boot=200, n_perm=200, seed=0)
    for r in res:
        assert r.diff == 0.0 and r.ci_low == 0.0 and r.ci_high == 0.0 and r.p_value == 1.0


def test_paired_clear_difference_is_significant():
    a, b = columns(n=200, seed=1, p=0.9), columns(n=200, seed=1, p=0.9)
    b["x"] = np.where(np.arange(200) % 2 == 0, 0.0, b["x"])  # B fails half of what A gets right
    res = {r.metric: r for r in paired_compare(a, b, micro_f1, n_boot=400, n_perm=400, seed=0)}
    m = res["mean"]
    assert m.diff > 0.3 and m.ci_low > 0 and m.p_value < 0.01
    assert res["f1"].diff == 0.0 and res["f1"].p_value == 1.0  # tp/fp/fn identical


def test_paired_with_strict_metrics_shape():
    n = 30
    cols = {"n": np.ones(n), "node_tp": np.ones(n), "node_fp": np.zeros(n), "node_fn": np.zeros(n),
            "tool_tp": np.ones((n, 2)), "tool_fp": np.zeros((n, 2)), "tool_fn": np.zeros((n, 2))}
    for k in ("link", "arg_name", "arg_value"):
        cols.update({f"{k}_tp": np.zeros(n), f"{k}_fp": np.zeros(n), f"{k}_fn": np.zeros(n)})
    cols.update({"edge_set_match": np.zeros(n), "edge_defined": np.zeros(n)})
    res = {r.metric: r for r in paired_compare(cols, cols, metrics_from_sums, n_boot=50, n_perm=50)}
    assert res["node_micro_f1"].p_value == 1.0
    assert res["link_f1"].diff is None and res["link_f1"].p_value is None  # undefined on both sides


def _paper_tau(x, y):
    pairs = list(itertools.combinations(range(len(x)), 2))
    c = sum(1 for i, j in pairs if (x[i] - x[j]) * (y[i] - y[j]) > 0)
    d = sum(1 for i, j in pairs if (x[i] - x[j]) * (y[i] - y[j]) < 0)
    return (c - d) / (len(x) * (len(x) - 1) / 2)


def _paper_rho(x, y):
    rx = np.argsort(np.argsort(x)) + 1
    ry = np.argsort(np.argsort(y)) + 1
    n = len(x)
    return 1 - 6 * float(((rx - ry) ** 2).sum()) / (n * (n * n - 1))


@pytest.mark.parametrize(
    "x,y,tau,rho",
    [
        ([1, 2, 3, 4, 5], [1, 3, 2, 4, 5], 0.8, 0.9),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0, -1.0),
        ([0.9, 0.5, 0.7, 0.1], [10, 2, 8, 1], 1.0, 1.0),
    ],
)
def test_rank_correlation_hand_cases(x, y, tau, rho):
    assert kendall_tau(x, y) == pytest.approx(tau) == pytest.approx(_paper_tau(x, y))
    assert spearman_rho(x, y) == pytest.approx(rho) == pytest.approx(_paper_rho(x, y))


def test_rank_correlation_random_against_paper_formulas():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.permutation(8).tolist(), rng.permutation(8).tolist()
        assert kendall_tau(x, y) == pytest.approx(_paper_tau(x, y))
        assert spearman_rho(x, y) == pytest.approx(_paper_rho(x, y))


def test_rank_correlation_errors():
    with pytest.raises(ValueError):
        kendall_tau([1], [1])
    assert np.isnan(spearman_rho([1, 1, 1], [1, 2, 3]))
