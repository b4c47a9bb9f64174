"""Scoring predictions against gold task graphs.

- :mod:`.api`: ``evaluate`` (strict and/or compat), ``compare_predictions``, ``write_metrics``;
- :mod:`.compat`: the reference TaskBench evaluator's numbers (``evaluate_compat``, ``score_samples_compat``);
- :mod:`.strict`, :mod:`.taxonomy`, :mod:`.stats`: strict scoring, error taxonomy, bootstrap and tests;
- :mod:`.rouge`: per-sample ROUGE identical to ``rouge-score`` (``rouge_per_sample``);
- :mod:`.prf`: precision / recall / F1 from counts with scikit-learn's semantics;
- :mod:`.groups`: split groups (``{split}_{n}``) and their sample masks;
- :mod:`.agreement`: Cohen's kappa between human reviewers (``cohen_kappa``, ``pairwise_agreement``).

The names below are imported on first use, so that importing one evaluator module does not load the others.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "PairAgreement": "agreement",
    "cohen_kappa": "agreement",
    "pairwise_agreement": "agreement",
    "CompatResult": "compat",
    "CompatSampleScore": "compat",
    "evaluate_compat": "compat",
    "score_samples_compat": "compat",
    "Group": "groups",
    "make_groups": "groups",
    "binary_prf": "prf",
    "macro_prf": "prf",
    "micro_prf": "prf",
    "per_label_prf": "prf",
    "prf_from_counts": "prf",
    "ROUGE_KEYS": "rouge",
    "rouge_per_sample": "rouge",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

