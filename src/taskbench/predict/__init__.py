"""Predictions: prompts for the model under test (templates are data files in ``templates/``), k-shot demos,
parsing/repair of model output, and the resumable, crash-safe runner behind ``taskbench predict``."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "PredictOptions": "runner",
    "PredictSummary": "runner",
    "predict_dataset": "runner",
    "select_samples": "runner",
    "build_messages": "prompts",
    "render_prompt": "prompts",
    "extract_json": "parse",
    "make_prediction": "parse",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_EXPORTS))
