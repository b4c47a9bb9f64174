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
from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import compress, count

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
    ref_c: Counter[str | tuple[str, ...]]  # tokens (n = 1) or n-grams
    pred_c: Counter[str | tuple[str, ...]]
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


def rouge_per_sample_simple(
    predictions: Sequence[str], references: Sequence[str]
) -> dict[str, NDArray[np.float64]]:
    """The same scores one pair at a time in plain Python (the readable version; tests check the fast one
    against it and against ``rouge-score``)."""
    if len(predictions) != len(references):
        raise ValueError(
            f"predictions and references differ in length ({len(predictions)} != {len(references)})"
        )
    n = len(predictions)
    out = {key: np.zeros(n, dtype=np.float64) for key in ROUGE_KEYS}
    tok = RougeTokenizer()
    r1, r2, rl, rlsum = (out[k] for k in ROUGE_KEYS)
    for i, (pred, ref) in enumerate(zip(predictions, references, strict=True)):
        ref_t = tok.tokens(ref)
        pred_t = tok.tokens(pred)
        r1[i] = _ngram_f(ref_t, pred_t, 1)
        r2[i] = _ngram_f(ref_t, pred_t, 2)
        rl[i] = _lcs_f(ref_t, pred_t)
        ref_s, pred_s = tok.sentences(ref), tok.sentences(pred)
        m = sum(map(len, ref_s))
        k = sum(map(len, pred_s))
        if m and k:
            rlsum[i] = _fmeasure(summary_lcs_hits(ref_s, pred_s), k, m)
    return out


# ------------------------------------------------------------------------------------- the fast engine
#
# Tokens are encoded as code points (one character per token), so a sentence is a str: hashing, equality,
# set operations and rapidfuzz's LCS all run in C, and numpy gets the token ids of many texts at once with
# one np.frombuffer over their UTF-32 encoding.

_CELL_BUDGET = 4_000_000  # cells of LCS table per batch (bytes for uint8 tables)
_ENCODE_BLOCK = 1000  # texts tokenised at a time


_CODE_BASE = 11  # codes start above "\n" (10), which stays the line separator
# bytes outside [a-z0-9\n] become spaces; newlines become a one-byte marker token
_SPACE_TABLE = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789\n" else 32 for c in range(256))
_LINE_MARK = b"\x01"


def _encode_texts(texts: Sequence[str]) -> dict[str, list[str]]:
    """Each distinct text -> its sentences for rougeLsum: the lines that have tokens, each line as a
    string with one character (code point) per token.

    All texts are tokenised in one pass. rouge-score lowercases, then takes the runs of ``[a-z0-9]``;
    lowercasing works character by character, and after it every non-ASCII character is a separator, so
    the lowercased, newline-joined texts are encoded to ASCII with ``?`` for the rest, every byte outside
    ``[a-z0-9\n]`` becomes a space, each newline a marker token, and a whitespace split yields every
    line's tokens. Lines without tokens are dropped: they add nothing to any ROUGE variant.
    """
    distinct = list(dict.fromkeys(texts))
    # a new token gets the next code point (in order of first appearance) the moment it is looked up
    vocab: defaultdict[bytes, str] = defaultdict(map(chr, count(_CODE_BASE)).__next__)
    vocab[_LINE_MARK] = "\n"
    out: dict[str, list[str]] = {}
    # in blocks of texts: the temporary token objects of one block reuse the memory of the previous one
    for lo in range(0, len(distinct), _ENCODE_BLOCK):
        block = distinct[lo : lo + _ENCODE_BLOCK]
        raw = "\n".join(block).lower().encode("ascii", "replace").translate(_SPACE_TABLE)
        tokens = raw.replace(b"\n", b" \x01 ").split()
        try:
            lines = "".join(map(vocab.__getitem__, tokens)).split("\n")
        except ValueError:  # more distinct tokens than code points
            raise OverflowError("too many distinct tokens for the fast ROUGE engine") from None
        del raw, tokens
        pos = 0
        for text in block:
            end = pos + text.count("\n") + 1
            out[text] = [line for line in lines[pos:end] if line]
            pos = end
    return out


def _codes(strings: list[str]) -> NDArray[np.int64]:
    """Code points of the concatenation of ``strings``."""
    joined = "".join(strings)
    return np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)


def _f_vec(hits: NDArray[np.int64], n_pred: NDArray[np.int64], n_ref: NDArray[np.int64]) -> NDArray[np.float64]:
    """rouge-score's F-measure, element-wise, with the same floating-point operations."""
    precision = hits / np.maximum(n_pred, 1)
    recall = hits / np.maximum(n_ref, 1)
    denom = precision + recall
    with np.errstate(invalid="ignore", divide="ignore"):
        f = 2 * precision * recall / denom
    return np.where(denom > 0, f, 0.0)


def _clipped_hits(keys_a: NDArray[np.int64], keys_b: NDArray[np.int64], scale: int, n: int) -> NDArray[np.int64]:
    """Per sample, the sum over distinct keys of min(occurrences in a, occurrences in b); ``key // scale`` is
    the sample. One sort: the side is tagged in the lowest bit, so within a run of equal keys a's copies come
    first and b's last."""
    if not keys_a.size or not keys_b.size:
        return np.zeros(n, dtype=np.int64)
    top = int(max(keys_a.max(), keys_b.max()))
    tagged = np.concatenate((keys_a, keys_b))
    if 2 * top + 1 < 2**31:
        tagged = tagged.astype(np.int32)  # smaller keys sort faster
    tagged <<= 1
    tagged[keys_a.size :] |= 1
    tagged.sort(kind="stable")  # timsort: the keys come in runs (sample by sample)
    key = tagged >> 1
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    run = np.diff(np.append(starts, key.size))
    in_b = np.add.reduceat(tagged & 1, starts)
    hits = np.minimum(run - in_b, in_b)
    shared = hits > 0
    return np.bincount(key[starts[shared]] // scale, weights=hits[shared], minlength=n).astype(np.int64)


def _bigram_hits(ref: str, pred: str) -> int:
    grams_r = Counter(zip(ref, ref[1:], strict=False))
    grams_p = Counter(zip(pred, pred[1:], strict=False))
    return sum((grams_r & grams_p).values())


def _batch_lcs(
    ref: NDArray[np.int64], rlen: NDArray[np.int64], cand: NDArray[np.int64], clen: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``lcs_indices`` for a batch of padded pairs: returns (pair, position in ref) of every chosen index.

    Row i of the table is the running maximum (along the candidate) of max(row above, diagonal + match),
    which equals the textbook recurrence. The walk is the one of :func:`lcs_indices`, for all pairs at once,
    on flat cell indices: a match moves diagonally and picks the row's token; otherwise it moves left when
    the left cell is strictly larger than the upper one, else up. A pair leaves the walk at a cell of value
    0 (no match is left there; the table's first row and column are 0, so this also stops it at an edge).
    """
    b, r = ref.shape
    c = cand.shape[1]
    dtype = np.uint8 if min(r, c) < 255 else np.int32
    table = np.zeros((b, r + 1, c + 1), dtype=dtype)
    match = np.zeros((b, r + 1, c + 1), dtype=bool)
    for i in range(r):
        eq = np.equal(ref[:, i : i + 1], cand, out=match[:, i + 1, 1:])
        prev = table[:, i, :]
        row = prev[:, :-1] + eq.view(np.uint8).astype(dtype, copy=False)
        np.maximum(row, prev[:, 1:], out=row)
        np.maximum.accumulate(row, axis=1, out=table[:, i + 1, 1:])
    width = c + 1
    block = (r + 1) * width
    flat_t = table.reshape(-1)
    flat_m = match.reshape(-1)
    cell = np.arange(b, dtype=np.int64) * block + rlen * width + clen
    cell = cell[flat_t[cell] > 0]
    picked: list[NDArray[np.int64]] = []
    while cell.size:
        is_match = flat_m[cell]
        picked.append(cell[is_match])
        go_left = flat_t[cell - 1] > flat_t[cell - width]
        cell = cell - np.where(is_match, width + 1, np.where(go_left, 1, width))
        cell = cell[flat_t[cell] > 0]
    if not picked:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    cells = np.concatenate(picked)
    return cells // block, (cells % block) // width - 1


def _padded(
    codes: NDArray[np.int64], starts: NDArray[np.int64], lens: NDArray[np.int64], width: int, fill: int
) -> NDArray[np.int64]:
    cols = np.arange(width)
    idx = starts[:, None] + cols[None, :]
    inside = cols[None, :] < lens[:, None]
    return np.where(inside, codes[np.minimum(idx, max(codes.size - 1, 0))] if codes.size else fill, fill)


def _union_lcs_positions(
    pair_ref: list[str], pair_cand: list[str]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(pair, position) of the LCS indices rouge-score picks, for every (ref, cand) sentence pair."""
    n = len(pair_ref)
    rlen = np.fromiter(map(len, pair_ref), dtype=np.int64, count=n)
    clen = np.fromiter(map(len, pair_cand), dtype=np.int64, count=n)
    rcodes, ccodes = _codes(pair_ref), _codes(pair_cand)
    rstart = np.concatenate(([0], np.cumsum(rlen)[:-1]))
    cstart = np.concatenate(([0], np.cumsum(clen)[:-1]))
    order = np.lexsort((rlen, clen))  # by candidate length, then reference length: little padding
    out_pair: list[NDArray[np.int64]] = []
    out_pos: list[NDArray[np.int64]] = []
    # batches: runs of equal candidate length, split so that a padded table stays within the cell budget
    sorted_c = clen[order]
    bounds = np.flatnonzero(np.diff(sorted_c)) + 1
    for lo_run, hi_run in zip(np.r_[0, bounds].tolist(), np.r_[bounds, n].tolist(), strict=True):
        width = int(sorted_c[lo_run])
        max_r = int(rlen[order[lo_run:hi_run]].max())
        step = max(1, _CELL_BUDGET // ((max_r + 1) * (width + 1)))
        for lo in range(lo_run, hi_run, step):
            idx = order[lo : min(lo + step, hi_run)]
            rmax = int(rlen[idx].max())
            ref = _padded(rcodes, rstart[idx], rlen[idx], rmax, -1)
            cand = _padded(ccodes, cstart[idx], clen[idx], width, -2)
            p, pos = _batch_lcs(ref, rlen[idx], cand, clen[idx])
            out_pair.append(idx[p])
            out_pos.append(pos)
    if not out_pair:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return np.concatenate(out_pair), np.concatenate(out_pos)


def _mark_lcs(chosen: NDArray[np.bool_], refs: list[str], cands: list[str], starts: list[int]) -> None:
    """Mark in ``chosen`` the LCS positions rouge-score picks for each (ref, cand) pair, the ref sentence
    starting at ``starts[k]`` in the concatenated reference tokens."""
    if refs:
        pair, pos = _union_lcs_positions(refs, cands)
        chosen[np.asarray(starts, dtype=np.int64)[pair] + pos] = True


def _union_positions(
    ref_sents: list[list[str]],
    pred_sents: list[list[str]],
    n_ref: NDArray[np.int64],
    n_pred: NDArray[np.int64],
    size: int,
) -> NDArray[np.bool_]:
    """Which reference token positions (in the concatenation of all references) are in the union LCS of
    their sentence with the candidate sentences of the same sample.

    The union does not depend on the order candidates are taken in, which allows two exact shortcuts:
    a candidate identical to the sentence covers all of it; and after a first round (each sentence with
    the candidate on the same line, or the first one), another candidate is only run when it contains a
    token at a position still uncovered, since an LCS only picks positions whose token occurs in the
    candidate.
    """
    chosen = np.zeros(size, dtype=bool)
    refs_1: list[str] = []
    cands_1: list[str] = []
    starts_1: list[int] = []
    pending: list[tuple[str, int, list[str], str]] = []
    full_start: list[int] = []
    full_len: list[int] = []
    start = 0
    for refs, preds, m, k in zip(ref_sents, pred_sents, n_ref.tolist(), n_pred.tolist(), strict=True):
        if not m or not k:
            start += m
            continue
        cand_set = set(preds)  # sentences are never empty (lines without tokens are dropped)
        several = len(cand_set) > 1
        for line, r in enumerate(refs):
            if r in cand_set:  # an identical sentence: its LCS is all of r
                full_start.append(start)
                full_len.append(len(r))
            else:
                first = preds[line] if line < len(preds) else preds[0]
                refs_1.append(r)
                cands_1.append(first)
                starts_1.append(start)
                if several:
                    pending.append((r, start, preds, first))
            start += len(r)
    if full_start:
        lens = np.asarray(full_len, dtype=np.int64)
        offsets = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        chosen[np.repeat(np.asarray(full_start, dtype=np.int64), lens) + offsets] = True
    _mark_lcs(chosen, refs_1, cands_1, starts_1)
    if pending:
        refs_2: list[str] = []
        cands_2: list[str] = []
        starts_2: list[int] = []
        open_flags = (~chosen).view(np.uint8).tobytes()
        types: dict[str, set[str]] = {}
        for r, pos, preds, first in pending:
            uncovered = set(compress(r, open_flags[pos : pos + len(r)]))
            if uncovered:
                for c in dict.fromkeys(preds):
                    if c != first:
                        t = types.get(c)
                        if t is None:
                            t = types[c] = set(c)
                        if not t.isdisjoint(uncovered):
                            refs_2.append(r)
                            cands_2.append(c)
                            starts_2.append(pos)
        _mark_lcs(chosen, refs_2, cands_2, starts_2)
    return chosen


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
    try:
        encoded = _encode_texts([*references, *predictions])
    except OverflowError:
        return rouge_per_sample_simple(predictions, references)
    ref_sents = [encoded[t] for t in references]
    pred_sents = [encoded[t] for t in predictions]
    ref_text = ["".join(s) for s in ref_sents]
    pred_text = ["".join(s) for s in pred_sents]
    n_ref = np.fromiter(map(len, ref_text), dtype=np.int64, count=n)
    n_pred = np.fromiter(map(len, pred_text), dtype=np.int64, count=n)
    ref_codes, pred_codes = _codes(ref_text), _codes(pred_text)
    ref_sample = np.repeat(np.arange(n, dtype=np.int64), n_ref)
    pred_sample = np.repeat(np.arange(n, dtype=np.int64), n_pred)
    vsize = int(max(ref_codes.max(initial=0), pred_codes.max(initial=0))) + 1
    out: dict[str, NDArray[np.float64]] = {}

    # ROUGE-1: clipped unigram overlap
    keys_r1 = ref_sample * vsize + ref_codes
    keys_p1 = pred_sample * vsize + pred_codes
    out["rouge1"] = _f_vec(_clipped_hits(keys_r1, keys_p1, vsize, n), n_pred, n_ref)

    # ROUGE-2: clipped bigram overlap (bigrams never cross samples)
    if n * vsize * vsize < 2**61:
        same_r = ref_sample[1:] == ref_sample[:-1]
        same_p = pred_sample[1:] == pred_sample[:-1]
        kr = ((ref_sample[1:] * vsize + ref_codes[:-1]) * vsize + ref_codes[1:])[same_r]
        kp = ((pred_sample[1:] * vsize + pred_codes[:-1]) * vsize + pred_codes[1:])[same_p]
        hits2 = _clipped_hits(kr, kp, vsize * vsize, n)
    else:  # astronomically many distinct tokens: count per sample
        hits2 = np.array(
            [_bigram_hits(r, p) for r, p in zip(ref_text, pred_text, strict=True)], dtype=np.int64
        )
    out["rouge2"] = _f_vec(hits2, np.maximum(n_pred - 1, 0), np.maximum(n_ref - 1, 0))

    # ROUGE-L: LCS length of the whole token sequences
    lcs = np.fromiter(
        (LCSseq.similarity(r, p) if r and p else 0 for r, p in zip(ref_text, pred_text, strict=True)),
        dtype=np.int64,
        count=n,
    )
    out["rougeL"] = _f_vec(lcs, n_pred, n_ref)

    # ROUGE-Lsum: union LCS per reference sentence, then clipped hits per token type.
    chosen = _union_positions(ref_sents, pred_sents, n_ref, n_pred, ref_codes.size)
    hits_lsum = _clipped_hits(keys_r1[chosen], keys_p1, vsize, n)
    f_lsum = _f_vec(hits_lsum, n_pred, n_ref)
    out["rougeLsum"] = np.where((n_ref > 0) & (n_pred > 0), f_lsum, 0.0)
    return {key: out[key] for key in ROUGE_KEYS}
