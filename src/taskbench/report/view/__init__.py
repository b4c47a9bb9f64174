"""`taskbench view`: one local web app over every run, sample, prediction and agent trajectory.

It is the review app (:mod:`taskbench.report.review.app`) with more routes, not a second app:

- :mod:`.index`: finds run directories of every kind and reads their headers (the one door to run data);
- :mod:`.samples`: the per-entry sample index, pages and one sample (gold against predicted);
- :mod:`.boards`: the leaderboard across runs and the paired comparison;
- :mod:`.agents`: episodes and trajectory timelines; :mod:`.generation`: critic pass rates, rejects, duplicates;
- :mod:`.routes`: the FastAPI routes and the page.
"""

from __future__ import annotations

from ..._lazy import lazy_exports

_EXPORTS = {
    "ViewIndex": "index",
    "find_runs": "index",
    "read_run_header": "index",
    "SampleTable": "samples",
    "view_router": "routes",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
