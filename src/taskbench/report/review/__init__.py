"""Human verification of a generated dataset: ``taskbench review DIR`` (the paper's last quality gate).

- :mod:`.session`: :class:`ReviewSession` loads a dataset directory's samples and answers the page (index,
  one sample, previews of edits checked by the rule critic, decisions);
- :mod:`.log`: the append-only, crash-safe review log (``review_log.jsonl``) of :class:`Decision` lines;
- :mod:`.export`: conflicting decisions resolved by a documented rule, the verified dataset written with
  fixes applied and discards dropped, ``alignment_ids.json`` and the human-verification table;
- :mod:`.app`: the FastAPI app serving the page (needs the ``review`` extra: fastapi, uvicorn).

Agreement between reviewers (Cohen's kappa) is :mod:`taskbench.eval.agreement`.
"""

from __future__ import annotations

from ..._lazy import lazy_exports

_EXPORTS = {
    "Decision": "log",
    "ReviewLog": "log",
    "ReviewSession": "session",
    "ExportReport": "export",
    "export_review": "export",
    "resolve": "export",
    "verification_table": "export",
    "create_app": "app",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
