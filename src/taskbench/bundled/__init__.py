"""Bundled demo datasets (our own files): ``taskbench.bundled.path(name)`` gives their directory.

One dataset per TaskBench domain, in the reference directory layout (``tool_desc.json``, ``graph_desc.json``,
``data.json``, ``user_requests.json``). Tool ids, types and parameter names are those of the released
libraries; every description and every sample was written for this project (see ``README.md`` here and
``docs/datasets.md``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import ConfigError, InputError, did_you_mean, suggest

__all__ = ["NAMES", "is_bundled", "names", "path", "resolve", "resolve_dir"]

NAMES: tuple[str, ...] = ("huggingface", "multimedia", "dailylifeapis")
"""The bundled datasets, in the paper's order."""


def names() -> list[str]:
    """Names of the bundled datasets."""
    return list(NAMES)


def is_bundled(name: str) -> bool:
    """True when ``name`` is the name of a bundled dataset."""
    return name in NAMES


def path(name: str) -> Path:
    """The directory of the bundled dataset ``name`` (works from a source tree and an installed wheel).

    Raises :class:`~taskbench.errors.ConfigError` for an unknown name.
    """
    if name not in NAMES:
        raise ConfigError(f"unknown bundled dataset {name!r} ({did_you_mean(name, NAMES)})")
    root = resources.files(__name__) / name
    # Regular (unzipped) installs give a real directory; a zipped install cannot serve a directory.
    directory = Path(str(root))
    if not directory.is_dir():
        raise ConfigError(
            f"bundled dataset {name!r} is not on disk at {directory}; reinstall taskbench from a wheel or sdist"
        )
    return directory


MCP_PREFIX = "mcp:"


def resolve(spec: str | Path) -> Path:
    """Where a ``--data``/``GRAPH``/``--tools`` argument points: an existing file or directory as given, else the
    bundled dataset of that name, else, for ``mcp:<server>``, the ``tools/list`` result of that MCP server
    (started, listed and shut down; saved to a temporary file removed at exit). Raises
    :class:`~taskbench.errors.InputError` naming the choices otherwise."""
    if str(spec).startswith(MCP_PREFIX):
        return _mcp_listing(str(spec))
    given = Path(spec)
    if given.exists():
        return given
    if str(spec) in NAMES:
        return path(str(spec))
    close = suggest(str(spec), NAMES)
    raise InputError(
        "no such file or directory, and no bundled dataset of that name",
        path=spec,
        hint=(f"did you mean {close[0]!r}? " if close else "")
        + f"pass a path, mcp:<command> for an MCP server, or one of the bundled datasets: {', '.join(NAMES)}",
    )


_LISTINGS: dict[str, Path] = {}


def _mcp_listing(spec: str) -> Path:
    """The saved ``tools/list`` of the MCP server ``spec`` (one start per process and server)."""
    import atexit
    import re
    import shutil
    import tempfile

    # a typer Path argument folds "http://" into "http:/": put the URL back as written
    text = re.sub(r"\b(https?):/(?!/)", r"\1://", spec[len(MCP_PREFIX):])
    if text in _LISTINGS and _LISTINGS[text].is_file():
        return _LISTINGS[text]
    from ..envs.mcp import save_listing

    directory = tempfile.mkdtemp(prefix="taskbench-mcp-")
    atexit.register(shutil.rmtree, directory, True)
    found = save_listing(text, directory)
    _LISTINGS[text] = found
    return found


def resolve_dir(spec: str | Path) -> Path:
    """Like :func:`resolve`, for arguments that must be a dataset directory."""
    found = resolve(spec)
    if not found.is_dir():
        raise InputError(
            "expected a dataset directory, found a file", path=spec, hint="pass the directory that holds tool_desc.json"
        )
    return found
