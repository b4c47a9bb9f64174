"""Near-duplicate detection of the data engine: it lives in :mod:`taskbench.dataset.dedup` (the agents' SPAN data
selection uses it too, and agents sit beside the engine, not above it); re-exported here."""

from __future__ import annotations

from ..dataset.dedup import *  # noqa: F403
from ..dataset.dedup import __all__ as __all__  # noqa: PLE0605
