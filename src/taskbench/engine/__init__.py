"""The Back-Instruct data engine: plan -> prompt -> generate -> parse -> critics -> dataset.

- :mod:`.generate`: ``taskbench generate`` (methods, the one runner, resume, the directory's arguments)
  writing one :class:`~taskbench.schema.generation.GenerationRecord` per plan entry to data_raw.json
- :mod:`.prompts` and ``templates/``: the prompts (data files, our wording of the paper's templates)
- :mod:`.schemas`: the JSON Schemas that constrain the answers
- :mod:`.parse`: answer -> :class:`~taskbench.schema.Sample` (name normalisation, ``<node-j>``), check_by_teacher
- :mod:`.critics`: the rule critic (pure checks on a sample); :mod:`.dedup`: near-duplicate requests
- :mod:`.checklist`: the checklist critic (the model points at the request's words for each step, the code
  checks them); :mod:`.calibration`: a critic's calibration set (verified samples and broken copies) and its scores
- :mod:`.output`: data_raw.json -> data.json, user_requests.json, data_error.json, statistics.json
- :mod:`.judge`: ``taskbench data judge`` (naturalness, complexity, alignment)
"""

from .._lazy import lazy_exports
from .critics import (
    ISSUE_CODES,
    Issue,
    check_against_sampled,
    check_dataset,
    check_sample,
    issue_counts,
    rule_verdict,
)

_LAZY = {
    "GenerateOptions": "generate",
    "GenerateSummary": "generate",
    "METHODS": "generate",
    "agenerate": "generate",
    "generate": "generate",
    "finalize_dataset": "output",
    "judge": "judge",
    "ajudge": "judge",
    "near_duplicates": "dedup",
}

__all__ = [
    "ISSUE_CODES",
    "Issue",
    "check_against_sampled",
    "check_dataset",
    "check_sample",
    "issue_counts",
    "rule_verdict",
    *sorted(_LAZY),
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
