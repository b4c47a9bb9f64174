"""Predictions: prompts for the model under test (templates are data files in ``templates/``), k-shot demos,
parsing/repair of model output, and the resumable, crash-safe runner behind ``taskbench predict``."""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "PredictOptions": "runner",
    "PredictSummary": "runner",
    "predict_dataset": "runner",
    "select_samples": "runner",
    "build_messages": "prompts",
    "render_prompt": "prompts",
    "extract_result": "parse",
    "make_prediction": "parse",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

