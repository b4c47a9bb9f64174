"""Where ``--data`` points: a dataset directory, or the name of a bundled demo dataset."""

from __future__ import annotations

from pathlib import Path

BUNDLED_DEMO_DATASETS: tuple[str, ...] = ("huggingface", "multimedia", "dailylifeapis")
"""The bundled demo datasets `taskbench run` uses by default, in report order."""


def bundled_names() -> list[str]:
    """Names of the bundled datasets."""
    from .. import bundled

    return bundled.names()


def resolve_data(spec: str | Path) -> Path:
    """A dataset directory for ``spec``: an existing directory, else a bundled dataset of that name."""
    from ..bundled import resolve_dir

    return resolve_dir(spec)


__all__ = ["BUNDLED_DEMO_DATASETS", "bundled_names", "resolve_data"]
