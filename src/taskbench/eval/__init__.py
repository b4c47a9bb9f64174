"""Scoring predictions against gold task graphs.

- :mod:`.compat`: the reference TaskBench evaluator's numbers (``evaluate_compat``, ``score_samples_compat``);
- :mod:`.rouge`: per-sample ROUGE identical to ``rouge-score`` (``rouge_per_sample``);
- :mod:`.prf`: precision / recall / F1 from counts with scikit-learn's semantics;
- :mod:`.groups`: split groups (``{split}_{n}``) and their sample masks.
"""

from .compat import CompatResult, CompatSampleScore, evaluate_compat, score_samples_compat
from .groups import Group, make_groups
from .prf import binary_prf, macro_prf, micro_prf, per_label_prf, prf_from_counts
from .rouge import ROUGE_KEYS, rouge_per_sample

__all__ = [
    "ROUGE_KEYS",
    "CompatResult",
    "CompatSampleScore",
    "Group",
    "binary_prf",
    "evaluate_compat",
    "macro_prf",
    "make_groups",
    "micro_prf",
    "per_label_prf",
    "prf_from_counts",
    "rouge_per_sample",
    "score_samples_compat",
]
