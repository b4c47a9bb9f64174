"""Agreement between human reviewers: Cohen's kappa, pairwise over reviewers.

Pure functions over labels. :func:`cohen_kappa` is Cohen's (1960) kappa of two raters over the same items,
``(p_o - p_e) / (1 - p_e)``, with ``p_e`` from each rater's own label frequencies (what scikit-learn's
``cohen_kappa_score`` computes, unweighted). It is undefined (None) when there are no items or when chance
agreement is certain (``p_e == 1``: both raters gave one and the same label to everything).
:func:`pairwise_agreement` applies it to every pair of reviewers over the items both rated.
:func:`fleiss_kappa` is Fleiss' (1971) kappa of any number of raters (each item rated by at least two; the
number may differ between items), the overall kappa the ConAgents paper reports for its human evaluation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations

from pydantic import BaseModel, Field

__all__ = ["PairAgreement", "cohen_kappa", "fleiss_kappa", "observed_agreement", "pairwise_agreement"]


def observed_agreement(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Share of items both raters labelled the same (None for no items)."""
    if len(a) != len(b):
        raise ValueError(f"rater label lists differ in length ({len(a)} vs {len(b)})")
    if not a:
        return None
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels for the same items, in the same order (None when undefined)."""
    p_o = observed_agreement(a, b)
    if p_o is None:
        return None
    n = len(a)
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[label] * cb[label] for label in ca.keys() & cb.keys()) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


class PairAgreement(BaseModel):
    """How two reviewers agree over the items both rated."""

    a: str = Field(description="First reviewer.")
    b: str = Field(description="Second reviewer.")
    n: int = Field(description="Items both reviewers rated.")
    agreement: float | None = Field(description="Observed agreement: share of those items with the same label.")
    kappa: float | None = Field(description="Cohen's kappa over those items; None when undefined.")
    confusion: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Counts by a's label, then b's label."
    )


def pairwise_agreement(ratings: Mapping[str, Mapping[str, str]]) -> list[PairAgreement]:
    """Cohen's kappa for every pair of reviewers. ``ratings`` is ``{reviewer: {item id: label}}``; each pair is
    scored over the items both rated. Pairs are in sorted reviewer order."""
    out = []
    for a, b in combinations(sorted(ratings), 2):
        shared = sorted(ratings[a].keys() & ratings[b].keys())
        la = [ratings[a][i] for i in shared]
        lb = [ratings[b][i] for i in shared]
        confusion: dict[str, dict[str, int]] = {}
        for x, y in zip(la, lb, strict=True):
            row = confusion.setdefault(x, {})
            row[y] = row.get(y, 0) + 1
        out.append(PairAgreement(a=a, b=b, n=len(shared), agreement=observed_agreement(la, lb),
                                 kappa=cohen_kappa(la, lb), confusion=confusion))
    return out


def fleiss_kappa(items: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' kappa over ``items``, each the labels its raters gave (items with fewer than two labels are left
    out): ``(P - P_e) / (1 - P_e)``, with ``P`` the mean per-item agreement over rater pairs and ``P_e`` the sum of
    squared label shares over all labels given. None when no item has two labels or chance agreement is certain."""
    rated = [list(labels) for labels in items if len(labels) >= 2]
    if not rated:
        return None
    totals: Counter[str] = Counter()
    per_item = []
    for labels in rated:
        n = len(labels)
        counts = Counter(labels)
        totals.update(counts)
        per_item.append((sum(c * c for c in counts.values()) - n) / (n * (n - 1)))
    given = sum(totals.values())
    p_e = sum((c / given) ** 2 for c in totals.values())
    if p_e >= 1.0:
        return None
    return (sum(per_item) / len(per_item) - p_e) / (1.0 - p_e)
