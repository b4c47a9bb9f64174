"""Reports: rich tables for the terminal, the leaderboard (markdown, HTML, PNG) and its plots."""

from __future__ import annotations

from .._lazy import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

