"""Cohen's kappa between reviewers: known values, scikit-learn as an oracle, undefined cases, pairs."""

from __future__ import annotations

import random

import pytest

from taskbench.eval.agreement import cohen_kappa, observed_agreement, pairwise_agreement


def test_textbook_example():
    # 50 items, yes/no: both yes 20, a yes b no 5, a no b yes 10, both no 15 -> p_o 0.7, p_e 0.5, kappa 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert observed_agreement(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_matches_scikit_learn_on_random_outcomes():
    sklearn = pytest.importorskip("sklearn.metrics", reason="scikit-learn is the oracle here")
    rng = random.Random(3)
    labels = ["correct", "discard", "fix"]
    for n in (5, 17, 200):
        a = [rng.choice(labels) for _ in range(n)]
        b = [x if rng.random() < 0.6 else rng.choice(labels) for x in a]
        assert cohen_kappa(a, b) == pytest.approx(sklearn.cohen_kappa_score(a, b), abs=1e-12)


def test_perfect_and_undefined():
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == pytest.approx(1.0)
    assert cohen_kappa([], []) is None and observed_agreement([], []) is None
    # both raters gave one label to everything: chance agreement is certain, kappa undefined
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        cohen_kappa(["a"], ["a", "b"])


def test_pairwise_uses_shared_items_only():
    ratings = {
        "ana": {"1": "correct", "2": "fix", "3": "discard", "4": "correct"},
        "bo": {"1": "correct", "2": "fix", "3": "correct"},
        "cy": {"9": "correct"},
    }
    pairs = {(p.a, p.b): p for p in pairwise_agreement(ratings)}
    assert list(pairs) == [("ana", "bo"), ("ana", "cy"), ("bo", "cy")]
    ab = pairs[("ana", "bo")]
    assert ab.n == 3 and ab.agreement == pytest.approx(2 / 3)
    assert ab.kappa == pytest.approx(cohen_kappa(["correct", "fix", "discard"], ["correct", "fix", "correct"]))
    assert ab.confusion == {"correct": {"correct": 1}, "fix": {"fix": 1}, "discard": {"correct": 1}}
    assert pairs[("ana", "cy")].n == 0 and pairs[("ana", "cy")].kappa is None
