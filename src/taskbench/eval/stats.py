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
from contextlib import AbstractContextManager, nullcontext
from typing import Any

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


def _percentile_ci(values: np.ndarray, alpha: float) -> tuple[float, float] | None:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    lo, hi = np.percentile(finite, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(lo), float(hi)


# ----------------------------------------------------------------------------------- Poisson bootstrap

_POISSON_LEVELS = 1 << 16
_poisson_table_cache: list[np.ndarray] = []


def _poisson_table() -> np.ndarray:
    """Poisson(1) quantiles of 65,536 equally likely levels: ``table[u]`` for a uniform 16-bit ``u`` is a
    Poisson(1) draw (each probability exact to 2^-16; values 0..8)."""
    if not _poisson_table_cache:
        k = np.arange(20)
        pmf = np.exp(-1.0) / np.cumprod(np.concatenate([[1.0], np.arange(1, 20)]))
        cdf = np.cumsum(pmf)
        u = (np.arange(_POISSON_LEVELS) + 0.5) / _POISSON_LEVELS
        _poisson_table_cache.append(k[np.searchsorted(cdf, u, side="right")].astype(np.float32))
    return _poisson_table_cache[0]


def poisson_weights(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` x ``n`` Poisson(1) weights (float32): row b says how often each sample occurs in replicate b.

    The Poisson bootstrap (each sample drawn an independent Poisson(1) number of times) is the standard
    large-data form of the bootstrap: it agrees with resampling n of n with replacement as n grows, any subset
    of the samples is itself Poisson-resampled (so all split groups share one draw), and it needs only 16
    random bits per weight."""
    raw = rng.bytes(2 * n * n_boot)
    return _poisson_table()[np.frombuffer(raw, dtype="<u2").reshape(n_boot, n)]


_EXACT_F32 = float(1 << 24)


def _one_blas_thread() -> AbstractContextManager[Any]:
    """Run BLAS single-threaded: the bootstrap does many small matrix products, for which thread start-up and
    synchronisation cost more than the work (on a busy machine, ten times more)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency; without it BLAS picks its threads
        return nullcontext()
    return threadpool_limits(1, user_api="blas")


def bootstrap_groups(
    columns: Mapping[str, np.ndarray],
    groups: Mapping[str, np.ndarray],
    statistic: Statistic,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    key: str = "",
    alpha: float = 0.05,
) -> dict[str, dict[str, tuple[float, float] | None]]:
    """Percentile bootstrap ``(1 - alpha)`` CIs of every scalar metric ``statistic`` returns, for many groups
    of rows (``groups``: name -> boolean row mask) at once.

    One Poisson bootstrap draw serves all groups: a replicate weights every sample, and each group's sums are
    the weighted sums over its rows. Rows are partitioned into cells (rows that belong to the same groups), a
    replicate's sums are computed once per cell (one matrix product per cell and chunk of replicates) and a
    group's sums are the sum of its cells', so the cost does not grow with the number of groups.
    Integer-valued columns are multiplied in float32, which is exact for them (every partial sum stays below
    2^24); other columns in float64. Replicates where a metric is undefined (e.g. a group that drew no sample)
    are left out of its percentiles; a metric undefined in every replicate gets None.
    """
    out: dict[str, dict[str, tuple[float, float] | None]] = {g: {} for g in groups}
    if n_boot <= 0 or not columns or not groups:
        return out
    keys = list(columns)
    arrays = [np.asarray(columns[k], dtype=float) for k in keys]
    n = len(arrays[0])
    if n == 0:
        return out
    names = [g for g in groups if np.asarray(groups[g]).any()]
    if not names:
        return out
    member = np.stack([np.asarray(groups[g], dtype=bool) for g in names], axis=1)
    used = member.any(axis=1)
    cells, cell_of = np.unique(member[used], axis=0, return_inverse=True)
    rows = np.flatnonzero(used)[np.argsort(cell_of.ravel(), kind="stable")]
    bounds = np.concatenate([[0], np.cumsum(np.bincount(cell_of.ravel(), minlength=len(cells)))])
    # column blocks: exact integers (float32) and the rest (float64), in cell order
    shapes = [a.shape[1:] for a in arrays]
    flat = [a.reshape(n, -1)[rows] for a in arrays]
    int_like = [
        bool(f.size == 0 or (np.array_equal(f, np.round(f)) and np.abs(f).max() * 16 * len(rows) < _EXACT_F32))
        for f in flat
    ]
    widths = [f.shape[1] for f in flat]
    m32 = np.concatenate([f for f, ok in zip(flat, int_like, strict=True) if ok] or [np.zeros((len(rows), 0))],
                         axis=1).astype(np.float32)
    m64 = np.concatenate([f for f, ok in zip(flat, int_like, strict=True) if not ok] or [np.zeros((len(rows), 0))],
                         axis=1)
    rng = rng_for(seed, key)
    chunk = max(1, min(n_boot, 4_000_000 // len(rows)))
    parts: dict[str, dict[str, list[np.ndarray]]] = {g: {} for g in names}
    with _one_blas_thread():
        _replicate_groups(names, keys, shapes, widths, int_like, cells, bounds, m32, m64, statistic, parts,
                          n_boot=n_boot, chunk=chunk, rng=rng)
    for g in names:
        out[g] = {m: _percentile_ci(np.concatenate(v), alpha) for m, v in parts[g].items()}
    return out


def _replicate_groups(
    names: list[str], keys: list[str], shapes: list[tuple[int, ...]], widths: list[int], int_like: list[bool],
    cells: np.ndarray, bounds: np.ndarray, m32: np.ndarray, m64: np.ndarray, statistic: Statistic,
    parts: dict[str, dict[str, list[np.ndarray]]], *, n_boot: int, chunk: int, rng: np.random.Generator,
) -> None:
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        w = poisson_weights(m32.shape[0], b, rng)
        w64 = w.astype(np.float64) if m64.shape[1] else None
        cell_sums = []
        for c in range(len(cells)):
            lo, hi = bounds[c], bounds[c + 1]
            s32 = (w[:, lo:hi] @ m32[lo:hi]).astype(np.float64)
            s64 = w64[:, lo:hi] @ m64[lo:hi] if w64 is not None else np.zeros((b, 0))
            cell_sums.append((s32, s64))
        for gi, g in enumerate(names):
            in_group = np.flatnonzero(cells[:, gi])
            s32 = sum(cell_sums[c][0] for c in in_group)
            s64 = sum(cell_sums[c][1] for c in in_group)
            sums: dict[str, np.ndarray] = {}
            i32 = i64 = 0
            for k, shape, width, ok in zip(keys, shapes, widths, int_like, strict=True):
                if ok:
                    block = s32[:, i32 : i32 + width]
                    i32 += width
                else:
                    block = s64[:, i64 : i64 + width]
                    i64 += width
                sums[k] = block[:, 0] if not shape else block.reshape((b,) + shape)
            for metric, values in statistic(sums).items():
                values = np.asarray(values, dtype=float)
                if values.ndim == 1:
                    parts[g].setdefault(metric, []).append(values)
        done += b


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

    Poisson bootstrap (:func:`poisson_weights`) over the rows of ``columns``, ``n_boot`` replicates; replicates
    where a metric is undefined (NaN) are left out of its percentiles; a metric undefined in every replicate
    gets None. (:func:`bootstrap_groups` does many groups of rows at once.)
    """
    if n_boot <= 0 or not columns or len(next(iter(columns.values()))) == 0:
        return {}
    n = len(next(iter(columns.values())))
    return bootstrap_groups(columns, {"": np.ones(n, dtype=bool)}, statistic, n_boot=n_boot, seed=seed,
                            key=key, alpha=alpha)[""]


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
    "bootstrap_groups",
    "column_sums",
    "kendall_tau",
    "paired_compare",
    "poisson_weights",
    "resample_weights",
    "rng_for",
    "spearman_rho",
]
