"""The Back-Instruct data engine: plan -> prompt -> generate -> parse -> critics -> dataset.

:mod:`taskbench.engine.critics` holds the rule-based critics (pure checks on a sample).
"""

from .critics import ISSUE_CODES, Issue, check_against_sampled, check_dataset, check_sample, issue_counts

__all__ = ["ISSUE_CODES", "Issue", "check_against_sampled", "check_dataset", "check_sample", "issue_counts"]
