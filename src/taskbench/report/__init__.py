"""Reports: rich tables for the terminal, the leaderboard (markdown, HTML, PNG) and its plots."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BoardEntry": "leaderboard",
    "Leaderboard": "leaderboard",
    "build_board": "leaderboard",
    "load_entries": "leaderboard",
    "plot_board": "leaderboard",
    "to_html": "leaderboard",
    "to_markdown": "leaderboard",
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
