"""Near-duplicate user requests: a benchmark of paraphrases measures little.

Two requests are near duplicates when rapidfuzz's ``token_sort_ratio`` (0-100; case, punctuation and word
order folded) reaches the threshold; it is computed as ``ratio`` over each text's words sorted once. A request
that nearly repeats an *earlier* one is flagged as a duplicate of the earliest such request; the first of a
group is never flagged.

- Up to :data:`EXACT_LIMIT` requests every pair is scored, in blocks of rows through ``rapidfuzz.process.cdist``
  (C++, ``score_cutoff`` prunes; memory bounded by the block).
- Above it, MinHash LSH (``datasketch``) over each request's word set proposes the candidate pairs (Jaccard
  ``LSH_JACCARD`` or more, a bound well below what a score of 90 needs), and each candidate is scored exactly,
  so nothing is flagged that does not reach the threshold; a pair LSH misses is missed (measured recall in
  docs/generate.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import MissingDependencyError

__all__ = ["DEFAULT_THRESHOLD", "EXACT_LIMIT", "near_duplicates"]

DEFAULT_THRESHOLD = 90.0
"""Default similarity (0-100) from which two requests count as near duplicates."""

EXACT_LIMIT = 4000
"""Up to this many requests every pair is compared; above it MinHash LSH proposes candidates."""

LSH_JACCARD = 0.5
"""Word-set Jaccard similarity from which LSH proposes a pair for exact scoring."""


def _clean(texts: Sequence[str]) -> list[str]:
    from rapidfuzz.utils import default_process

    return [" ".join(sorted(default_process(t or "").split())) for t in texts]


def _exact(clean: list[str], threshold: float, block: int, workers: int) -> list[int | None]:
    import numpy as np
    from rapidfuzz import fuzz, process

    n = len(clean)
    out: list[int | None] = [None] * n
    for start in range(0, n, block):
        stop = min(start + block, n)
        # rows start..stop-1 against columns 0..stop-1 (only earlier columns count)
        scores = process.cdist(clean[start:stop], clean[:stop], scorer=fuzz.ratio, processor=None,
                               score_cutoff=threshold, dtype=np.uint8, workers=workers)
        for r in range(stop - start):
            i = start + r
            if not clean[i]:
                continue
            for j in np.flatnonzero(scores[r, :i] >= threshold):
                if clean[j]:
                    out[i] = int(j)
                    break
    return out


def _minhash(clean: list[str], threshold: float, num_perm: int = 128) -> list[int | None]:
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependencyError("datasketch", None, f"near-duplicate detection over more than {EXACT_LIMIT} "
                                     "requests") from exc
    from rapidfuzz import fuzz

    lsh = MinHashLSH(threshold=LSH_JACCARD, num_perm=num_perm)
    out: list[int | None] = [None] * len(clean)
    sets = [[w.encode("utf-8") for w in sorted(set(text.split()))] for text in clean]
    hashes = MinHash.bulk(sets, num_perm=num_perm, seed=1)
    for i, (text, m) in enumerate(zip(clean, hashes, strict=True)):
        if not text:
            continue
        hits = sorted(int(k) for k in lsh.query(m))
        for j in hits:
            if fuzz.ratio(text, clean[j], score_cutoff=threshold):
                out[i] = j
                break
        lsh.insert(str(i), m)
    return out


def near_duplicates(
    texts: Sequence[str],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    block: int = 1024,
    workers: int = 1,
    method: str = "auto",
) -> list[int | None]:
    """For each text, the index of the earliest earlier text it nearly repeats (score >= ``threshold``), else
    None. Empty texts are never duplicates. ``method``: ``exact``, ``minhash`` or ``auto`` (exact up to
    :data:`EXACT_LIMIT` texts)."""
    if not 0 < threshold <= 100:
        raise ValueError(f"threshold must be in (0, 100], not {threshold}")
    if method not in ("auto", "exact", "minhash"):
        raise ValueError(f"method must be auto, exact or minhash, not {method!r}")
    clean = _clean(texts)
    if method == "minhash" or (method == "auto" and len(clean) > EXACT_LIMIT):
        return _minhash(clean, threshold)
    return _exact(clean, threshold, block, workers)
