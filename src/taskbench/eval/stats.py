"""Statistics over per-sample results: bootstrap CIs, paired comparisons, rank correlations. Pure numpy.

Every metric here is a function of *column sums* over samples (``statistic(sums) -> {name: value}``, e.g.
:func:`taskbench.eval.strict.metrics_from_sums`). Resampling is then a matrix product: a replicate is a
vector of per-sample weights ``w`` (how often each sample was drawn) and its sums are ``w @ column``. Micro
metrics (pooled counts) are thus recomputed from resampled counts, not averaged per sample.

- :func:`bootstrap_ci`: percentile bootstrap CI (resample samples with replacement).
- :func:`paired_compare`: two prediction sets on the same gold: the difference A - B, a paired bootstrap CI
  (the same resampled samples for A and B), and a two-sided p-value from a paired approximate randomization
  (sign-flip) test: each replicate swaps A's and B's result on a random half of the samples; p = (1 + #
  replicates with |diff| >= |observed diff|) / (1 + replicates).
- :func:`kendall_tau`, :func:`spearman_rho`: rank correlation of two score lists (scipy.stats).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, Field

Statistic = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]
"""Maps column sums (each with an optional leading batch axis) to named metric values."""

_CHUNK = 256  # replicates per matrix product (bounds memory: CHUNK x n_samples weights)


def rng_for(seed: int, key: str = "") -> np.random.Generator:
    """A generator derived from ``seed`` and a stable key (e.g. the group name), so groups are independent
    and every run with the same seed gives the same numbers."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


class _Stacked:
    """All columns side by side in one (n, k) matrix, so a batch of replicates is one matrix product."""

    def __init__(self, columns: Mapping[str, np.ndarray]) -> None:
        self.keys = list(columns)
        arrays = [np.asarray(columns[k], dtype=float) for k in self.keys]
        self.shapes = [a.shape[1:] for a in arrays]
        self.matrix = np.concatenate([a.reshape(len(a), -1) for a in arrays], axis=1)

    def sums(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        total = weights @ self.matrix
        out: dict[str, np.ndarray] = {}
        start = 0
        for k, shape in zip(self.keys, self.shapes, strict=True):
            width = int(np.prod(shape)) if shape else 1
            block = total[:, start : start + width]
            out[k] = block[:, 0] if not shape else block.reshape((len(weights),) + shape)
            start += width
        return out


def column_sums(columns: Mapping[str, np.ndarray], weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Sums of each column over samples; with ``weights`` (B x n) one row of sums per replicate."""
    if weights is None:
        return {k: np.asarray(v).sum(axis=0) for k, v in columns.items()}
    return _Stacked(columns).sums(weights)


def resample_weights(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` x ``n`` draw counts: row b says how often each sample occurs in bootstrap replicate b."""
    if n == 0 or n_boot == 0:
        return np.zeros((n_boot, n))
    idx = rng.integers(0, n, size=(n_boot, n))
    flat = (idx + (np.arange(n_boot)[:, None] * n)).ravel()
    return np.bincount(flat, minlength=n_boot * n).reshape(n_boot, n).astype(float)


def _replicates(
    columns: Mapping[str, np.ndarray], statistic: Statistic, n_boot: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    n = len(next(iter(columns.values())))
    stacked = _Stacked(columns)
    parts: dict[str, list[np.ndarray]] = {}
    done = 0
    while done < n_boot:
        b = min(_CHUNK, n_boot - done)
        w = resample_weights(n, b, rng)
        for k, v in statistic(stacked.sums(w)).items():
            parts.setdefault(k, []).append(np.asarray(v, dtype=float))
        done += b
    return {k: np.concatenate(v) for k, v in parts.items()}


def _percentile_ci(values: np.ndarray, alpha: float) -> tuple[float, float] | None:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    lo, hi = np.percentile(finite, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(lo), float(hi)


def bootstrap_ci(
    columns: Mapping[str, np.ndarray],
    statistic: Statistic,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    key: str = "",
    alpha: float = 0.05,
) -> dict[str, tuple[float, float] | None]:
    """Percentile bootstrap ``(1 - alpha)`` CI of every metric ``statistic`` returns (scalar metrics only).

    Samples (rows of ``columns``) are resampled with replacement ``n_boot`` times; replicates where a metric is
    undefined (NaN) are left out of its percentiles; a metric undefined in every replicate gets None.
    """
    if n_boot <= 0 or not columns or len(next(iter(columns.values()))) == 0:
        return {}
    reps = _replicates(columns, statistic, n_boot, rng_for(seed, key))
    return {k: _percentile_ci(v, alpha) for k, v in reps.items() if v.ndim == 1}


class PairedResult(BaseModel):
    """A paired comparison of one metric: A - B on the same samples."""

    metric: str = Field(description="Metric name.")
    a: float | None = Field(description="The metric for prediction set A (None when undefined).")
    b: float | None = Field(description="The metric for prediction set B.")
    diff: float | None = Field(description="a - b.")
    ci_low: float | None = Field(default=None, description="Lower end of the paired bootstrap CI of a - b.")
    ci_high: float | None = Field(default=None, description="Upper end of the paired bootstrap CI of a - b.")
    p_value: float | None = Field(
        default=None, description="Two-sided p-value of the paired approximate randomization (sign-flip) test."
    )


def _f(x: np.ndarray | float) -> float | None:
    v = float(x)
    return None if np.isnan(v) else v


def paired_compare(
    columns_a: Mapping[str, np.ndarray],
    columns_b: Mapping[str, np.ndarray],
    statistic: Statistic,
    *,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
    key: str = "",
    alpha: float = 0.05,
) -> list[PairedResult]:
    """Compare two prediction sets scored on the same samples (row i of A and B = the same gold sample).

    CI: paired percentile bootstrap of a - b (one set of resampled rows for both). p-value: approximate
    randomization; under the null hypothesis A and B are exchangeable per sample, so each replicate swaps
    them on a random subset of rows: p = (1 + #{|d*| >= |d|}) / (1 + n_perm). Identical inputs give diff 0,
    a CI of (0, 0) and p = 1.
    """
    keys = [k for k in columns_a if k in columns_b]
    ca = {k: np.asarray(columns_a[k], dtype=float) for k in keys}
    cb = {k: np.asarray(columns_b[k], dtype=float) for k in keys}
    n = len(ca["n"])
    ma = statistic(column_sums(ca))
    mb = statistic(column_sums(cb))
    names = [k for k, v in ma.items() if np.ndim(v) == 0 and k in mb]
    observed = {k: float(ma[k]) - float(mb[k]) for k in names}

    rng = rng_for(seed, "compare:" + key)
    boot: dict[str, list[np.ndarray]] = {k: [] for k in names}
    stacked_a, stacked_b = _Stacked(ca), _Stacked(cb)
    done = 0
    while n > 0 and done < n_boot:
        b = min(_CHUNK, n_boot - done)
        w = resample_weights(n, b, rng)
        ra, rb = statistic(stacked_a.sums(w)), statistic(stacked_b.sums(w))
        for k in names:
            boot[k].append(np.asarray(ra[k], dtype=float) - np.asarray(rb[k], dtype=float))
        done += b

    extreme = dict.fromkeys(names, 0)
    valid = dict.fromkeys(names, 0)
    sa, sb = column_sums(ca), column_sums(cb)
    diffs = _Stacked({k: ca[k] - cb[k] for k in keys})
    done = 0
    while n > 0 and done < n_perm:
        b = min(_CHUNK, n_perm - done)
        swap = rng.integers(0, 2, size=(b, n)).astype(float)
        moved = diffs.sums(swap)
        pa = {k: sa[k] - moved[k] for k in keys}
        pb = {k: sb[k] + moved[k] for k in keys}
        ra, rb = statistic(pa), statistic(pb)
        for k in names:
            d = np.asarray(ra[k], dtype=float) - np.asarray(rb[k], dtype=float)
            ok = np.isfinite(d)
            valid[k] += int(ok.sum())
            if np.isfinite(observed[k]):
                extreme[k] += int((np.abs(d[ok]) >= abs(observed[k]) - 1e-12).sum())
        done += b

    out = []
    for k in names:
        ci = _percentile_ci(np.concatenate(boot[k]), alpha) if boot[k] else None
        p = None
        if np.isfinite(observed[k]) and valid[k]:
            p = (1 + extreme[k]) / (1 + valid[k])
        out.append(
            PairedResult(
                metric=k,
                a=_f(ma[k]),
                b=_f(mb[k]),
                diff=_f(observed[k]),
                ci_low=ci[0] if ci else None,
                ci_high=ci[1] if ci else None,
                p_value=p,
            )
        )
    return out


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau between two score lists over the same items (tau-b; without ties it is the paper's
    (concordant - discordant) / (n (n - 1) / 2))."""
    from scipy.stats import kendalltau

    if len(x) != len(y) or len(x) < 2:
        raise ValueError("Kendall's tau needs two equally long lists of at least 2 items")
    if len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan")  # a constant ranking has no order to agree with
    return float(kendalltau(x, y).statistic)


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho between two score lists (ties get the average rank; without ties it equals the paper's
    1 - 6 sum d^2 / (n (n^2 - 1)))."""
    from scipy.stats import spearmanr

    if len(x) != len(y) or len(x) < 2:
        raise ValueError("Spearman's rho needs two equally long lists of at least 2 items")
    if len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan")
    return float(spearmanr(x, y).statistic)


__all__ = [
    "PairedResult",
    "Statistic",
    "bootstrap_ci",
    "column_sums",
    "kendall_tau",
    "paired_compare",
    "resample_weights",
    "rng_for",
    "spearman_rho",
]
