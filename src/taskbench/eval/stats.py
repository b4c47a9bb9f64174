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
from pydantic import BaseModel, ConfigDict, Field

from .runtime import one_blas_thread

Statistic = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]
"""Maps column sums (each with an optional leading batch axis) to named metric values."""

_CHUNK = 256  # replicates per matrix product (bounds memory: CHUNK x n_samples weights)

MAX_REPLICATES = 10_000
"""The most bootstrap or permutation replicates one call takes: the replicates are kept for the percentiles, so
memory and time grow with them (the bundled multimedia set, 30 samples: 10,000 took 7 s and 0.3 GB on two
cores, 100,000 took 62 s and 2.2 GB); 1,000 (the default) already gives 95% CIs to about a percent."""


def check_replicates(count: int, option: str = "--bootstrap") -> None:
    """:class:`~taskbench.errors.ConfigError` unless ``0 <= count <=`` :data:`MAX_REPLICATES`."""
    from ..errors import ConfigError

    if count < 0 or count > MAX_REPLICATES:
        raise ConfigError(f"{option} {count:,}: replicates must be between 0 and {MAX_REPLICATES:,} (1,000 is "
                          "plenty for a 95% interval)")


def rng_for(seed: int, key: str = "") -> np.random.Generator:
    """A generator derived from ``seed`` and a stable key (e.g. the group name), so groups are independent
    and every run with the same seed gives the same numbers. A negative seed is a ConfigError."""
    if seed < 0:
        from ..errors import ConfigError

        raise ConfigError(f"--seed {seed}: a seed is an integer >= 0")
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


class _Stacked:
    """All columns side by side in one (n, k) matrix, so a batch of replicates is one matrix product."""

    def __init__(self, columns: Mapping[str, np.ndarray]) -> None:
        self.keys = list(columns)
        arrays = [np.asarray(columns[k], dtype=float) for k in self.keys]
        self.shapes = [a.shape[1:] for a in arrays]
        self.matrix = np.concatenate([a.reshape(len(a), -1) for a in arrays], axis=1)

    @classmethod
    def of(cls, keys: list[str], shapes: list[tuple[int, ...]], matrix: np.ndarray) -> _Stacked:
        """A stack from its parts (``matrix``: the columns side by side, as :meth:`__init__` lays them)."""
        out = cls.__new__(cls)
        out.keys, out.shapes, out.matrix = list(keys), list(shapes), matrix
        return out

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
    idx += np.arange(n_boot)[:, None] * n  # in place: one (n_boot, n) integer array alive, not three
    counts = np.bincount(idx.ravel(), minlength=n_boot * n)
    del idx
    return counts.reshape(n_boot, n).astype(float)


def _quantile_sorted(x: np.ndarray, m: int, q: float) -> float:
    """The ``q`` quantile of the sorted finite values ``x[:m]`` (numpy's default "linear" method)."""
    h = (m - 1) * q
    i = int(np.floor(h))
    if i + 1 >= m:
        return float(x[m - 1])
    a, b, t = float(x[i]), float(x[i + 1]), h - i
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


def _percentile_ci(values: np.ndarray, alpha: float) -> tuple[float, float] | None:
    finite = np.sort(values[np.isfinite(values)])
    if finite.size == 0:
        return None
    return _quantile_sorted(finite, finite.size, alpha / 2), _quantile_sorted(finite, finite.size, 1 - alpha / 2)


def _percentile_cis(replicates: Mapping[str, np.ndarray], alpha: float) -> dict[str, tuple[float, float] | None]:
    """:func:`_percentile_ci` of many equally long replicate vectors (one sort for all)."""
    if not replicates:
        return {}
    names = list(replicates)
    mat = np.stack([replicates[k] for k in names])
    finite = np.isfinite(mat)
    mat = np.sort(np.where(finite, mat, np.inf), axis=1)  # undefined replicates last
    counts = finite.sum(axis=1)
    out: dict[str, tuple[float, float] | None] = {}
    for r, k in enumerate(names):
        m = int(counts[r])
        out[k] = (
            (_quantile_sorted(mat[r], m, alpha / 2), _quantile_sorted(mat[r], m, 1 - alpha / 2)) if m else None
        )
    return out


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
    return _poisson_table()[rng.integers(0, _POISSON_LEVELS, size=(n_boot, n), dtype=np.uint16)]


_WEIGHTS_PER_CHUNK = 8_000_000  # replicates x samples per block of weights (32 MB as float32)


def _cells(member: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows with the same group memberships form a cell: (cell of each row, membership row of each cell)."""
    n_groups = member.shape[1]
    if n_groups <= 62:
        code = member.astype(np.int64) @ (np.int64(1) << np.arange(n_groups, dtype=np.int64))
        codes, cell_of = np.unique(code, return_inverse=True)
        cells = ((codes[:, None] >> np.arange(n_groups)) & 1).astype(bool)
        return cell_of.ravel(), cells
    cells, cell_of = np.unique(member, axis=0, return_inverse=True)
    return cell_of.ravel(), cells


class _GroupSums:
    """Per-sample columns in cell order, and weighted sums per group for blocks of replicates."""

    def __init__(self, columns: Mapping[str, np.ndarray], groups: Mapping[str, np.ndarray]) -> None:
        self.keys = list(columns)
        arrays = [np.asarray(columns[k], dtype=float) for k in self.keys]
        n = len(arrays[0])
        self.names = [g for g in groups if np.asarray(groups[g]).any()]
        member = np.zeros((n, len(self.names)), dtype=bool)
        for j, g in enumerate(self.names):
            member[:, j] = groups[g]
        used = np.flatnonzero(member.any(axis=1))
        cell_of, self.cells = _cells(member[used])
        order = np.argsort(cell_of, kind="stable")
        self.rows = used[order]
        self.bounds = np.concatenate([[0], np.cumsum(np.bincount(cell_of, minlength=len(self.cells)))])
        self.shapes = [a.shape[1:] for a in arrays]
        self.widths = [int(np.prod(sh)) if sh else 1 for sh in self.shapes]
        flat = np.concatenate([a.reshape(n, -1)[self.rows] for a in arrays], axis=1)
        # float32 products: exact for counts (every partial sum stays below 2^24); sums of real-valued columns
        # (ROUGE, NED) carry ~1e-6 relative rounding, far below the bootstrap's Monte Carlo error
        exact = np.abs(flat).max(initial=0.0) * 8 * len(self.rows) < float(1 << 24)
        self.dtype = np.float32 if exact else np.float64
        self.matrix = flat.astype(self.dtype)

    def sums(self, weights: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        """Group -> column -> weighted sums (one row per replicate); ``weights`` is replicates x rows."""
        w = weights.astype(self.dtype, copy=False)
        cell_sums = [
            (w[:, lo:hi] @ self.matrix[lo:hi]).astype(np.float64)
            for lo, hi in zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist(), strict=True)
        ]
        b = len(weights)
        out: dict[str, dict[str, np.ndarray]] = {}
        for j, g in enumerate(self.names):
            # a zero start (not the int 0) keeps the type an array; the sums are the same
            total = sum((cell_sums[c] for c in np.flatnonzero(self.cells[:, j])), np.zeros_like(cell_sums[0]))
            sums: dict[str, np.ndarray] = {}
            start = 0
            for k, shape, width in zip(self.keys, self.shapes, self.widths, strict=True):
                block = total[:, start : start + width]
                sums[k] = block[:, 0] if not shape else block.reshape((b,) + shape)
                start += width
            out[g] = sums
        return out


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

    One Poisson bootstrap draw (:func:`poisson_weights`) serves all groups: a replicate weights every sample,
    and each group's sums are the weighted sums over its rows. Rows are partitioned into cells (rows that
    belong to the same groups); a block of replicates costs one matrix product per cell, and a group's sums
    are the sum of its cells', so the cost hardly grows with the number of groups. Replicates where a metric
    is undefined (e.g. a group that drew no sample) are left out of its percentiles; a metric undefined in
    every replicate gets None.
    """
    check_replicates(n_boot)
    out: dict[str, dict[str, tuple[float, float] | None]] = {g: {} for g in groups}
    if n_boot <= 0 or not columns or not groups or len(next(iter(columns.values()))) == 0:
        return out
    table = _GroupSums(columns, groups)
    if not table.names:
        return out
    rng = rng_for(seed, key)
    # the weights are drawn for every sample in input order (then picked in cell order), and the blocks are
    # sized by the number of samples: a group's replicates, so its CI, do not depend on which other groups
    # (--splits) are scored alongside it
    n_all = len(next(iter(columns.values())))
    chunk = max(1, min(n_boot, _WEIGHTS_PER_CHUNK // n_all))
    parts: dict[str, dict[str, list[np.ndarray]]] = {g: {} for g in table.names}
    done = 0
    with one_blas_thread():
        while done < n_boot:
            b = min(chunk, n_boot - done)
            for g, sums in table.sums(poisson_weights(n_all, b, rng)[:, table.rows]).items():
                for metric, values in statistic(sums).items():
                    values = np.asarray(values, dtype=float)
                    if values.ndim == 1:
                        parts[g].setdefault(metric, []).append(values)
            done += b
    for g in table.names:
        out[g] = _percentile_cis({m: np.concatenate(v) for m, v in parts[g].items()}, alpha)
    return out


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

    model_config = ConfigDict(defer_build=True)  # built on first use: `evaluate` never needs it

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
    check_replicates(n_boot)
    check_replicates(n_perm, "--permutations")
    keys = [k for k in columns_a if k in columns_b]
    ca = {k: np.asarray(columns_a[k], dtype=float) for k in keys}
    cb = {k: np.asarray(columns_b[k], dtype=float) for k in keys}
    n = len(ca["n"])
    sa, sb = column_sums(ca), column_sums(cb)
    ma, mb = statistic(sa), statistic(sb)
    names = [k for k, v in ma.items() if np.ndim(v) == 0 and k in mb]
    observed = {k: float(ma[k]) - float(mb[k]) for k in names}

    rng = rng_for(seed, "compare:" + key)
    boot: dict[str, list[np.ndarray]] = {k: [] for k in names}
    stacked_a, stacked_b = _Stacked(ca), _Stacked(cb)
    del ca, cb  # the stacked matrices hold the same values; at 28,271 samples x 145 columns each copy is 33 MB
    done = 0
    while n > 0 and done < n_boot:
        b = min(_CHUNK, n_boot - done)
        w = resample_weights(n, b, rng)
        ra, rb = statistic(stacked_a.sums(w)), statistic(stacked_b.sums(w))
        del w  # before the next chunk's weights are drawn (each is b x n floats)
        for k in names:
            boot[k].append(np.asarray(ra[k], dtype=float) - np.asarray(rb[k], dtype=float))
        done += b

    diffs = _Stacked.of(keys, stacked_a.shapes, stacked_a.matrix - stacked_b.matrix)  # a - b, column by column
    del stacked_a, stacked_b
    extreme = dict.fromkeys(names, 0)
    valid = dict.fromkeys(names, 0)
    done = 0
    while n > 0 and done < n_perm:
        b = min(_CHUNK, n_perm - done)
        swap = rng.integers(0, 2, size=(b, n)).astype(float)
        moved = diffs.sums(swap)
        del swap
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
    "MAX_REPLICATES",
    "PairedResult",
    "Statistic",
    "bootstrap_ci",
    "bootstrap_groups",
    "check_replicates",
    "column_sums",
    "kendall_tau",
    "paired_compare",
    "poisson_weights",
    "resample_weights",
    "rng_for",
    "spearman_rho",
]
