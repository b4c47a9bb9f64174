"""Where ``--data`` points: a dataset directory, or the name of a bundled demo dataset."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, InputError

BUNDLED_DEMO_DATASETS: tuple[str, ...] = ("huggingface", "multimedia", "dailylifeapis")
"""The bundled demo datasets `taskbench run` uses by default, in report order."""


def bundled_names() -> list[str]:
    """Names of the bundled datasets that are installed."""
    try:
        from .. import bundled
    except ImportError:  # pragma: no cover
        return []
    names = getattr(bundled, "names", None)
    if callable(names):
        return list(names())
    root = Path(bundled.__file__).parent
    return sorted(p.name for p in root.iterdir() if (p / "tool_desc.json").is_file())


def resolve_data(spec: str | Path) -> Path:
    """A dataset directory for ``spec``: an existing directory, else a bundled dataset of that name."""
    path = Path(spec)
    if path.is_dir():
        return path
    name = str(spec)
    if "/" not in name and "\\" not in name:
        from .. import bundled

        finder = getattr(bundled, "path", None)
        if callable(finder):
            try:
                found = Path(finder(name))
            except (KeyError, ValueError, LookupError, FileNotFoundError):
                found = None
            except (InputError, ConfigError):
                found = None
            if found is not None and found.is_dir():
                return found
        candidate = Path(bundled.__file__).parent / name
        if (candidate / "tool_desc.json").is_file():
            return candidate
    known = ", ".join(bundled_names()) or "none installed"
    raise InputError(
        "no such dataset directory or bundled dataset",
        path=spec,
        hint=f"pass a directory in the reference layout or a bundled name ({known})",
    )


__all__ = ["BUNDLED_DEMO_DATASETS", "bundled_names", "resolve_data"]
