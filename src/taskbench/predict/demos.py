"""k-shot demonstrations: which gold samples are shown to the model as examples.

The choice, in order (pure and deterministic):

1. The reference scripts' demo ids, when they are in the dataset: temporal domains 38563456, 27267145,
   91005535; Hugging Face 10523150, 14611002, 22067492; Multimedia 30934207, 20566230, 19003517.
2. Then a fixed fallback: the dataset's samples sorted by id (numerically when ids are numbers), taken round
   robin over the structures chain, dag, single (so one demo is a chain, two are a chain and a DAG, three add a
   single-tool case), skipping samples already chosen.

A sample is never predicted with itself as a demo: for that sample its demo is dropped and the next candidate
takes its place, so every prompt has exactly ``shots`` demos (when the dataset has enough samples).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ConfigError
from ..schema import Sample, ToolLibrary

MAX_SHOTS = 3
"""The paper and the reference use 0 to 3 demos."""

REFERENCE_DEMO_IDS: dict[str, tuple[str, ...]] = {
    "temporal": ("38563456", "27267145", "91005535"),
    "huggingface": ("10523150", "14611002", "22067492"),
    "multimedia": ("30934207", "20566230", "19003517"),
}
"""The reference scripts' demo ids per domain (temporal = Daily Life APIs)."""

FALLBACK_STRUCTURES: tuple[str, ...] = ("chain", "dag", "single")
"""Round-robin order of structures for the fallback choice."""


def _id_key(sample_id: str) -> tuple[int, int, str]:
    return (0, int(sample_id), "") if sample_id.isdigit() else (1, 0, sample_id)


def reference_ids(name: str | None, library: ToolLibrary) -> tuple[str, ...]:
    """The reference demo ids that apply to a dataset (by dependency kind, then by domain name)."""
    if library.dependency == "temporal":
        return REFERENCE_DEMO_IDS["temporal"]
    lowered = (name or "").lower()
    for key in ("huggingface", "multimedia"):
        if key in lowered:
            return REFERENCE_DEMO_IDS[key]
    return ()


def demo_candidates(
    samples: Sequence[Sample], library: ToolLibrary, *, name: str | None = None, count: int = MAX_SHOTS + 1
) -> list[Sample]:
    """The first ``count`` demo candidates of a dataset in order of preference (see the module docstring)."""
    by_id = {s.id: s for s in samples}
    out: list[Sample] = [by_id[i] for i in reference_ids(name, library) if i in by_id]
    chosen = {s.id for s in out}
    ordered = sorted(samples, key=lambda s: _id_key(s.id))
    pools = {kind: [s for s in ordered if s.type == kind and s.id not in chosen] for kind in FALLBACK_STRUCTURES}
    others = [s for s in ordered if s.type not in FALLBACK_STRUCTURES]
    while len(out) < count and any(pools.values()):
        for kind in FALLBACK_STRUCTURES:
            if pools[kind] and len(out) < count:
                out.append(pools[kind].pop(0))
    for s in others:
        if len(out) >= count:
            break
        if s.id not in chosen:
            out.append(s)
    return out[:count]


def demos_for(sample_id: str, candidates: Sequence[Sample], shots: int) -> list[Sample]:
    """The ``shots`` demos for one sample: the first candidates that are not the sample itself."""
    if not 0 <= shots <= MAX_SHOTS:
        raise ConfigError(f"--shots must be between 0 and {MAX_SHOTS}, got {shots}")
    return [c for c in candidates if c.id != sample_id][:shots]


__all__ = [
    "FALLBACK_STRUCTURES",
    "MAX_SHOTS",
    "REFERENCE_DEMO_IDS",
    "demo_candidates",
    "demos_for",
    "reference_ids",
]
