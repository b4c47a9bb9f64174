"""Which samples a run takes: at most N, stratified over the structures (one selection for predict, run,
evaluate --limit and judge), and the file-name-safe form of a model name the run layouts use."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..schema import Sample

STRUCTURE_ORDER: tuple[str, ...] = ("single", "chain", "dag")
"""Round-robin order used by :func:`select_samples`."""


def select_samples(samples: Sequence[Sample], limit: int | None) -> list[Sample]:
    """At most ``limit`` samples, stratified: round robin over single, chain, dag (each in dataset order);
    returned in dataset order. Deterministic."""
    if limit is None or limit >= len(samples):
        return list(samples)
    pools: dict[str, list[Sample]] = {}
    for s in samples:
        pools.setdefault(s.type, []).append(s)
    kinds = [k for k in STRUCTURE_ORDER if k in pools] + [k for k in pools if k not in STRUCTURE_ORDER]
    chosen: set[str] = set()
    while len(chosen) < limit:
        for kind in kinds:
            if pools[kind] and len(chosen) < limit:
                chosen.add(pools[kind].pop(0).id)
    return [s for s in samples if s.id in chosen]


def model_slug(model: str) -> str:
    """A file-name-safe form of 'provider/model'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


__all__ = ["STRUCTURE_ORDER", "model_slug", "select_samples"]
