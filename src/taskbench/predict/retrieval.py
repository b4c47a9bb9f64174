"""Per-request context for the model: demonstrations chosen by similarity, and a tool shortlist.

Both are lexical (BM25, the ``bm25s`` package: sparse-matrix BM25, numpy only), deterministic and pure given
their inputs:

- :class:`DemoRetriever` ranks a pool of gold samples (the dataset's samples) by the BM25 similarity of their
  requests to the request at hand and returns the best ``k``. The sample itself is never returned (same id),
  nor a near duplicate of it (same request text after normalisation, or a normalised Indel similarity of at
  least ``near_duplicate`` = 0.9), so a prompt cannot hand the model its own answer.
- :class:`ToolShortlist` ranks the tools of a library by the BM25 similarity of their name, description and
  argument names to the request; the structured-output schema's tool choice is then restricted to the best
  ``k`` (the prompt still lists every tool, so the shared prompt prefix stays cached). Tools of the retrieved
  demos can be added, since similar requests tend to use the same tools.
- :func:`shortlist_recall` measures what a shortlist costs: the share of gold tools it keeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import MissingDependencyError
from ..schema import Sample, ToolLibrary

NEAR_DUPLICATE = 0.9
"""Normalised Indel similarity (rapidfuzz ``ratio`` / 100) from which two requests count as duplicates."""

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by can could do for from has have help i in into is it its me my of on or our "
    "please so that the their then them this to up us we what which will with would you your".split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stop words; file extensions and names split (``example.wav`` gives
    ``example``, ``wav``), underscores split (``get_weather`` gives ``get``, ``weather``)."""
    return [w for w in _WORD.findall(text.lower().replace("_", " ")) if w not in _STOP]


def _normalised(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _bm25(corpus: Sequence[list[str]]) -> Any:  # bm25s ships no type hints
    try:
        import bm25s
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependencyError("bm25s", None, "demo retrieval and tool shortlists") from exc
    index = bm25s.BM25()
    # an empty document would make bm25s drop the vocabulary entry; give it a token that matches nothing
    index.index([doc or ["\x00"] for doc in corpus], show_progress=False)
    return index


class _Ranker:
    """BM25 scores of a fixed corpus for any query (ties broken by corpus order)."""

    def __init__(self, documents: Sequence[list[str]]) -> None:
        self.size = len(documents)
        self._index = _bm25(documents) if documents else None

    def scores(self, query: str) -> np.ndarray:
        if self._index is None:
            return np.zeros(0)
        q = tokens(query)
        if not q:
            return np.zeros(self.size)
        return np.asarray(self._index.get_scores(q), dtype=float)

    def ranking(self, query: str) -> list[int]:
        s = self.scores(query)
        return sorted(range(self.size), key=lambda i: (-s[i], i))


class DemoRetriever:
    """The ``k`` pool samples whose requests are most similar to a request (see the module docstring)."""

    def __init__(self, pool: Sequence[Sample], *, near_duplicate: float = NEAR_DUPLICATE) -> None:
        self.pool = list(pool)
        self.near_duplicate = near_duplicate
        self._texts = [_normalised(s.user_request) for s in self.pool]
        self._ranker = _Ranker([tokens(s.user_request) for s in self.pool])

    def is_near_duplicate(self, a: str, b: str) -> bool:
        """True when two requests are the same or nearly the same text."""
        from rapidfuzz.distance import Indel

        na, nb = _normalised(a), _normalised(b)
        return na == nb or Indel.normalized_similarity(na, nb) >= self.near_duplicate

    def retrieve(self, sample_id: str | None, request: str, k: int) -> list[Sample]:
        """The best ``k`` demos for ``request`` (the sample ``sample_id`` and near duplicates excluded)."""
        if k <= 0:
            return []
        out: list[Sample] = []
        for i in self._ranker.ranking(request):
            cand = self.pool[i]
            if cand.id == sample_id or self.is_near_duplicate(cand.user_request, request):
                continue
            out.append(cand)
            if len(out) == k:
                break
        return out


def tool_document(tool: object) -> list[str]:
    """The tokens a tool is found by: its name, description and argument names or types."""
    parts = [getattr(tool, "id", ""), getattr(tool, "desc", "")]
    parts += [p.name for p in getattr(tool, "parameters", None) or []]
    parts += list(getattr(tool, "input_types", None) or [])
    return tokens(" ".join(parts))


class ToolShortlist:
    """The tools of a library ranked by similarity to a request."""

    def __init__(self, library: ToolLibrary) -> None:
        self.library = library
        self.names = list(library.names)
        self._ranker = _Ranker([tool_document(t) for t in library.tools])

    def rank(self, request: str) -> list[str]:
        """Every tool name, most relevant first."""
        return [self.names[i] for i in self._ranker.ranking(request)]

    def shortlist(self, request: str, k: int, *, also: Iterable[str] = ()) -> list[str]:
        """The ``k`` most relevant tools plus the tools in ``also`` (e.g. the retrieved demos' tools) that
        are in the library, in library order."""
        chosen = set(self.rank(request)[: max(k, 0)])
        chosen.update(n for n in also if n in self.library)
        return [n for n in self.names if n in chosen]


@dataclass(frozen=True)
class Recall:
    """How many gold tools a set of shortlists kept."""

    kept: int
    gold: int
    samples_complete: int
    samples: int

    @property
    def recall(self) -> float:
        """Kept gold tool occurrences / gold tool occurrences (1.0 when there were none)."""
        return self.kept / self.gold if self.gold else 1.0

    @property
    def complete_rate(self) -> float:
        """Share of samples whose shortlist holds every one of their gold tools."""
        return self.samples_complete / self.samples if self.samples else 1.0


def shortlist_recall(pairs: Iterable[tuple[Sequence[str], Iterable[str]]]) -> Recall:
    """Recall of shortlists over ``(gold tool names, shortlist)`` pairs: each distinct gold tool of a sample
    counts once (a tool called twice is kept or lost as one)."""
    kept = gold = complete = n = 0
    for gold_tools, shortlist in pairs:
        wanted = set(gold_tools)
        have = set(shortlist)
        hit = len(wanted & have)
        kept += hit
        gold += len(wanted)
        complete += int(hit == len(wanted))
        n += 1
    return Recall(kept, gold, complete, n)


__all__ = [
    "NEAR_DUPLICATE",
    "DemoRetriever",
    "Recall",
    "ToolShortlist",
    "shortlist_recall",
    "tokens",
    "tool_document",
]
