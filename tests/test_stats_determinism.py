"""The same data with the same seed gives the same CI, whichever other groups (--splits) are scored with it."""

from __future__ import annotations

import numpy as np

from taskbench.eval.stats import bootstrap_groups


def _mean(sums):
    return {"mean": sums["x"] / np.maximum(sums["n"], 1e-12)}


def test_a_groups_ci_does_not_depend_on_the_other_groups() -> None:
    rng = np.random.default_rng(1)
    n = 40
    columns = {"x": rng.random(n), "n": np.ones(n)}
    kind = np.array(["single", "chain", "dag", "chain"] * 10)
    overall = np.ones(n, dtype=bool)
    alone = bootstrap_groups(columns, {"overall": overall}, _mean, n_boot=300, seed=7, key="strict")
    split = bootstrap_groups(columns, {"overall": overall, **{k: kind == k for k in ("single", "chain", "dag")}},
                             _mean, n_boot=300, seed=7, key="strict")
    other = bootstrap_groups(columns, {"chain": kind == "chain", "overall": overall}, _mean, n_boot=300, seed=7,
                             key="strict")
    # equal up to float32 summation order (1e-8), far below the 0.01 points a report prints
    for a, b in ((alone, split), (alone, other), (split, other)):
        assert np.allclose(a["overall"]["mean"], b["overall"]["mean"], rtol=0, atol=1e-6)
    assert np.allclose(split["chain"]["mean"], other["chain"]["mean"], rtol=0, atol=1e-6)
