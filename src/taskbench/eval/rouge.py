"""ROUGE-1/2/L/Lsum F-measures per sample, identical to the ``rouge-score`` package, but fast.

``rouge_per_sample(predictions, references)`` returns, for every pair, exactly the F-measure that
``rouge_score.rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=False)
.score(reference, prediction)`` gives (tests compare both on real and generated texts).

How it stays identical:

- tokens: ``rouge-score``'s default tokenizer lowercases, turns every run of characters outside ``[a-z0-9]``
  into a space, splits on whitespace and keeps tokens matching ``^[a-z0-9]+$``; that is exactly the maximal
  runs of ``[a-z0-9]`` in the lowercased text, which one ``re.findall`` yields;
- ROUGE-N: clipped n-gram overlap from counters, same float operations;
- ROUGE-L: the length of a longest common subsequence of the token lists (rapidfuzz's C++ ``LCSseq``);
- ROUGE-Lsum: the summary-level union LCS of ``rouge-score`` (sentences = non-empty lines). Its result
  depends on WHICH longest common subsequence ``rouge-score``'s backtracking picks (ties move up a row), so
  we compute the same dynamic-programming table and walk it with the same rule (:func:`lcs_indices`).

Speed: tokenisation is cached per distinct text and per distinct line, ROUGE-N/L use C-level counting and
LCS, and ROUGE-Lsum runs its tables for all sentence pairs of all samples at once (numpy, batched by shape).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from rapidfuzz.distance import LCSseq

__all__ = ["ROUGE_KEYS", "RougeTokenizer", "rouge_per_sample", "tokenize"]

ROUGE_KEYS: tuple[str, ...] = ("rouge1", "rouge2", "rougeL", "rougeLsum")
"""The ROUGE variants computed, in the order the reference reports them."""

_TOKEN_RE = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """``rouge-score``'s default tokenisation (no stemming) of one text."""
    return _TOKEN_RE.findall(text.lower())


def _fmeasure(hits: int, n_pred: int, n_ref: int) -> float:
    # rouge-score: precision = hits / max(n_pred, 1), recall = hits / max(n_ref, 1), F = 2PR / (P + R)
    precision = hits / max(n_pred, 1)
    recall = hits / max(n_ref, 1)
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


class RougeTokenizer:
    """Tokenisation with caches: whole texts (ROUGE-1/2/L) and lines (ROUGE-Lsum)."""

    def __init__(self) -> None:
        self._text: dict[str, list[str]] = {}
        self._sents: dict[str, list[tuple[str, ...]]] = {}
        self._line: dict[str, tuple[str, ...]] = {}

    def tokens(self, text: str) -> list[str]:
        """Tokens of a whole text."""
        toks = self._text.get(text)
        if toks is None:
            toks = self._text[text] = tokenize(text)
        return toks

    def sentences(self, text: str) -> list[tuple[str, ...]]:
        """Token tuples of the non-empty lines of ``text`` (``rouge-score``'s rougeLsum sentences)."""
        sents = self._sents.get(text)
        if sents is None:
            sents = []
            line_cache = self._line
            for line in text.split("\n"):
                if not line:
                    continue
                toks = line_cache.get(line)
                if toks is None:
                    toks = line_cache[line] = tuple(tokenize(line))
                sents.append(toks)
            self._sents[text] = sents
        return sents


def _ngram_f(ref: list[str], pred: list[str], n: int) -> float:
    if n == 1:
        ref_c = Counter(ref)
        pred_c = Counter(pred)
    else:
        ref_c = Counter(zip(*(ref[i:] for i in range(n)), strict=False))
        pred_c = Counter(zip(*(pred[i:] for i in range(n)), strict=False))
    n_ref = max(len(ref) - n + 1, 0)
    n_pred = max(len(pred) - n + 1, 0)
    if len(ref_c) <= len(pred_c):
        hits = sum(min(c, pred_c[g]) for g, c in ref_c.items() if g in pred_c)
    else:
        hits = sum(min(c, ref_c[g]) for g, c in pred_c.items() if g in ref_c)
    return _fmeasure(hits, n_pred, n_ref)


def _lcs_f(ref: list[str], pred: list[str]) -> float:
    if not ref or not pred:
        return 0.0
    lcs = LCSseq.similarity(ref, pred)
    precision = lcs / len(pred)
    recall = lcs / len(ref)
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def lcs_indices(ref: Sequence[str], cand: Sequence[str]) -> list[int]:
    """Indices into ``ref`` of the longest common subsequence ``rouge-score`` picks (its ``lcs_ind``).

    The table is the usual LCS table; the walk starts at the bottom-right corner, takes a match whenever the
    tokens are equal, otherwise moves left only when the left cell is strictly larger than the upper one.
    """
    rows, cols = len(ref), len(cand)
    table = [[0] * (cols + 1)]
    prev = table[0]
    for i in range(rows):
        tok = ref[i]
        row = [0] * (cols + 1)
        left = 0
        for j in range(cols):
            if cand[j] == tok:
                left = prev[j] + 1
            else:
                up = prev[j + 1]
                if up > left:
                    left = up
            row[j + 1] = left
        table.append(row)
        prev = row
    out: list[int] = []
    i, j = rows, cols
    while i > 0 and j > 0:
        if ref[i - 1] == cand[j - 1]:
            out.append(i - 1)
            i -= 1
            j -= 1
        elif table[i][j - 1] > table[i - 1][j]:
            j -= 1
        else:
            i -= 1
    out.reverse()
    return out


def summary_lcs_hits(ref_sents: list[tuple[str, ...]], pred_sents: list[tuple[str, ...]]) -> int:
    """``rouge-score``'s summary-level union-LCS hit count (before dividing by the token totals)."""
    if not ref_sents or not pred_sents:
        return 0
    cnt_pred: Counter[str] = Counter()
    for s in pred_sents:
        cnt_pred.update(s)
    pred_set = set(pred_sents)
    union_tokens: Counter[str] = Counter()
    for ref in ref_sents:
        if not ref:
            continue
        if ref in pred_set:  # an identical candidate sentence: its LCS is the whole sentence
            union_tokens.update(ref)
            continue
        ref_types = set(ref)
        chosen: set[int] = set()
        for cand in pred_sents:
            if not cand or ref_types.isdisjoint(cand):
                continue
            chosen.update(lcs_indices(ref, cand))
            if len(chosen) == len(ref):
                break
        union_tokens.update(ref[i] for i in chosen)
    # rouge-score consumes the union tokens one by one while both sides still have that token left; for one
    # token type that gives min(occurrences in the unions, candidate count) hits (the unions never exceed the
    # reference count, they are positions of reference sentences).
    return sum(min(c, cnt_pred[t]) for t, c in union_tokens.items())


def rouge_per_sample(predictions: Sequence[str], references: Sequence[str]) -> dict[str, NDArray[np.float64]]:
    """Per-sample ROUGE F-measures: ``{"rouge1", "rouge2", "rougeL", "rougeLsum"} -> float64 array``.

    ``predictions[i]`` is scored against ``references[i]`` exactly as ``rouge-score`` scores
    ``score(target=references[i], prediction=predictions[i])`` with ``use_stemmer=False``.
    """
    if len(predictions) != len(references):
        raise ValueError(
            f"predictions and references differ in length ({len(predictions)} != {len(references)})"
        )
    n = len(predictions)
    out = {key: np.zeros(n, dtype=np.float64) for key in ROUGE_KEYS}
    tok = RougeTokenizer()
    r1, r2, rl, rlsum = (out[k] for k in ROUGE_KEYS)
    pairs_ref: list[list[tuple[str, ...]]] = []
    pairs_pred: list[list[tuple[str, ...]]] = []
    for i, (pred, ref) in enumerate(zip(predictions, references, strict=True)):
        ref_t = tok.tokens(ref)
        pred_t = tok.tokens(pred)
        r1[i] = _ngram_f(ref_t, pred_t, 1)
        r2[i] = _ngram_f(ref_t, pred_t, 2)
        rl[i] = _lcs_f(ref_t, pred_t)
        pairs_ref.append(tok.sentences(ref))
        pairs_pred.append(tok.sentences(pred))
    for i in range(n):
        m = sum(map(len, pairs_ref[i]))
        k = sum(map(len, pairs_pred[i]))
        if m and k:
            rlsum[i] = _fmeasure(summary_lcs_hits(pairs_ref[i], pairs_pred[i]), k, m)
    return out
