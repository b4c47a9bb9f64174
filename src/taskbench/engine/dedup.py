"""Near-duplicate user requests: a benchmark of paraphrases measures little.

Requests are compared with rapidfuzz's ``token_sort_ratio`` (0-100, word order ignored, case and punctuation
folded). A request whose score against an *earlier* request is at least the threshold is flagged as a
duplicate of the earliest such request; the first of a group is never flagged. The comparison runs in blocks
of rows through ``rapidfuzz.process.cdist`` (C++, ``score_cutoff`` prunes), so 10,000 requests (10^8 pairs)
stay in seconds and bounded memory (see docs/generate.md for the measured figure).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DEFAULT_THRESHOLD", "near_duplicates"]

DEFAULT_THRESHOLD = 90.0
"""Default similarity (0-100) from which two requests count as near duplicates."""


def near_duplicates(
    texts: Sequence[str], *, threshold: float = DEFAULT_THRESHOLD, block: int = 1024, workers: int = 1
) -> list[int | None]:
    """For each text, the index of the earliest earlier text it nearly repeats (score >= ``threshold``), else
    None. Empty texts are never duplicates."""
    import numpy as np
    from rapidfuzz import fuzz, process
    from rapidfuzz.utils import default_process

    if not 0 < threshold <= 100:
        raise ValueError(f"threshold must be in (0, 100], not {threshold}")
    n = len(texts)
    out: list[int | None] = [None] * n
    clean = [default_process(t or "") for t in texts]
    for start in range(0, n, block):
        stop = min(start + block, n)
        # rows start..stop-1 against columns 0..stop-1 (only earlier columns count)
        scores = process.cdist(
            clean[start:stop], clean[:stop], scorer=fuzz.token_sort_ratio, processor=None,
            score_cutoff=threshold, dtype=np.uint8, workers=workers,
        )
        for r in range(stop - start):
            i = start + r
            if not clean[i]:
                continue
            row = scores[r, :i]
            hits = np.flatnonzero(row >= threshold)
            for j in hits:
                if clean[j]:
                    out[i] = int(j)
                    break
    return out
