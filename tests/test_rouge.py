"""The fast ROUGE engine gives exactly rouge-score's F-measures (|diff| <= 1e-12, in practice bit-equal)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from taskbench.eval.rouge import (
    ROUGE_KEYS,
    lcs_indices,
    rouge_per_sample,
    rouge_per_sample_simple,
    summary_lcs_hits,
    tokenize,
)

SCORER = rouge_scorer.RougeScorer(list(ROUGE_KEYS), use_stemmer=False)
TOL = 1e-12


def reference_scores(preds: list[str], refs: list[str]) -> dict[str, np.ndarray]:
    scores = [SCORER.score(r, p) for p, r in zip(preds, refs, strict=True)]
    return {k: np.array([s[k].fmeasure for s in scores]) for k in ROUGE_KEYS}


def assert_same(preds: list[str], refs: list[str]) -> None:
    want = reference_scores(preds, refs)
    for fn in (rouge_per_sample, rouge_per_sample_simple):
        got = fn(preds, refs)
        assert list(got) == list(ROUGE_KEYS)
        for key in ROUGE_KEYS:
            diff = np.abs(got[key] - want[key])
            worst = int(np.argmax(diff)) if diff.size else 0
            assert diff.size == 0 or diff[worst] <= TOL, (
                fn.__name__,
                key,
                preds[worst],
                refs[worst],
                got[key][worst],
                want[key][worst],
            )


# Words from a tiny vocabulary (many ties for the LCS walk), punctuation, unicode whose lowercase is ASCII
# (Kelvin sign, dotted I), digits, empty lines and blank-only lines.
WORDS = st.sampled_from(
    [
        "a",
        "b",
        "c",
        "the",
        "A",
        "B.",
        "c,",
        "x1",
        "42",
        "\u212a",
        "\u0130",
        "é",
        "ß",
        "Σ",
        "日本",
        "—",
        "!!",
        "",
        " ",
    ]
)
LINE = st.lists(WORDS, max_size=12).map(" ".join)
TEXT = st.lists(LINE, max_size=6).map("\n".join) | st.text(max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=25))
def test_matches_rouge_score_on_generated_texts(pairs: list[tuple[str, str]]) -> None:
    preds, refs = [p for p, _ in pairs], [r for _, r in pairs]
    assert_same(preds, refs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=14), st.lists(st.sampled_from("abc"), max_size=14))
def test_lcs_walk_is_rouge_scores(ref: list[str], cand: list[str]) -> None:
    assert lcs_indices(ref, cand) == rouge_scorer.lcs_ind(ref, cand)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_tokenizer_is_rouge_scores(text: str) -> None:
    assert tokenize(text) == SCORER._tokenizer.tokenize(text)


def test_hand_examples() -> None:
    preds = ["", "the cat", "the cat\nsat on", "A b\n\nc", "cat the", "x"]
    refs = ["", "the cat sat", "the cat sat on", "a B C", "the cat", ""]
    got = rouge_per_sample(preds, refs)
    assert got["rouge1"][1] == pytest.approx(0.8) and got["rouge2"][1] == pytest.approx(2 / 3)
    assert got["rouge1"][0] == 0.0 and got["rougeLsum"][5] == 0.0
    assert got["rougeL"][4] == 0.5 and got["rouge1"][4] == 1.0
    assert_same(preds, refs)


def test_union_lcs_tie_break_matters() -> None:
    # ref "a b" vs candidate "b a": both "a" and "b" are longest common subsequences; rouge-score's walk
    # moves up on ties and picks "a". With a second reference sentence "b" that gives 2 hits; picking "b"
    # would give 1 (the candidate has one "b").
    assert lcs_indices(("a", "b"), ("b", "a")) == [0]
    assert summary_lcs_hits([("a", "b"), ("b",)], [("b", "a")]) == 2
    assert_same(["b a", "b a\nb", "a b\nb a\na"], ["a b\nb", "a b", "b a b\na"])


def test_repeated_sentences_and_pairs_across_samples() -> None:
    refs = ["step one a b\nstep two b a"] * 5 + ["a a a\nb b b"]
    preds = ["step one b a\nstep two a b", "step two b a", "", "x\n\n\n", "step one a b"] + ["b a b a"]
    assert_same(preds, refs)


def test_long_sentences_use_wide_tables() -> None:
    rng = np.random.default_rng(0)
    words = np.array(list("abcdefgh"))
    refs = [" ".join(rng.choice(words, 300)) + "\n" + " ".join(rng.choice(words, 20)) for _ in range(3)]
    preds = [" ".join(rng.choice(words, 280)) for _ in range(3)]
    assert_same(preds, refs)


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        rouge_per_sample(["a"], [])


def test_parity_steps(parity_dir: Path) -> None:
    preds: list[str] = []
    refs: list[str] = []
    for domain in ("huggingface", "multimedia", "dailylifeapis"):
        gold = {}
        for line in (parity_dir / domain / "data.json").read_text().splitlines():
            rec = json.loads(line)
            gold[rec["id"]] = "\n".join(rec["task_steps"])
        for k in (1, 2):
            for line in (
                (parity_dir / domain / "predictions" / f"perturbed_{k}.json").read_text().splitlines()
            ):
                rec = json.loads(line)
                steps = (
                    (rec.get("result") or {}).get("task_steps")
                    if isinstance(rec.get("result"), dict)
                    else None
                )
                if rec["id"] in gold and steps is not None:
                    ok = isinstance(steps, list) and all(isinstance(s, str) for s in steps)
                    preds.append("\n".join(steps) if ok else str(steps))
                    refs.append(gold[rec["id"]])
    assert len(preds) > 100
    assert_same(preds, refs)


def test_vocabulary_beyond_the_surrogate_block() -> None:
    # more than 0xD800 distinct tokens: codes pass through the surrogate range and must still work
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(60_000)]
    refs, preds = [], []
    for k in range(0, 60_000, 60):
        chunk = words[k : k + 60]
        refs.append("\n".join(" ".join(chunk[j : j + 10]) for j in range(0, 60, 10)))
        picked = list(rng.choice(chunk, 40)) + ["w1", "w2"]
        preds.append("\n".join(" ".join(picked[j : j + 7]) for j in range(0, 42, 7)))
    fast = rouge_per_sample(preds, refs)
    simple = rouge_per_sample_simple(preds, refs)
    for key in ROUGE_KEYS:
        assert np.array_equal(fast[key], simple[key]), key
    assert fast["rougeLsum"].min() > 0
