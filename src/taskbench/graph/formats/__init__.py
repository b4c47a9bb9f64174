"""Tool-library formats: the one registry that ``load_tools``, ``graph build --format``, ``generate --format`` and
their help read.

A :class:`ToolFormat` says how to recognise a parsed document (JSON or YAML) of its kind and how to turn it into
:class:`~taskbench.schema.Tool` objects. The built-in formats (``taskbench``, ``openai``, ``mcp``, ``openapi``)
are registered by :mod:`taskbench.graph.loaders`; a new one is a module that calls :func:`register_tool_format`,
either dropped into this package (every module here is imported on first use) or named in
``TASKBENCH_PLUGINS`` (see :mod:`taskbench._plugins` and docs/extending.md).

``format="auto"`` tries each format's ``detect`` in registration order (built-ins first) and takes the first
that says yes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._plugins import Registry, name_list
from ...errors import InputError, did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    from ...schema import Tool

AUTO = "auto"
"""The format name that detects the format from the document's shape."""


@dataclass(frozen=True)
class ToolFormat:
    """One tool-library format."""

    name: str
    """What ``--format`` takes (lower case, no spaces)."""
    title: str
    """What the document is, for help texts (``"OpenAI tools"``)."""
    load: Callable[..., list[Tool]]
    """``load(src)`` -> the tools of a parsed document (:class:`~taskbench.dataset.tool_desc.JsonSource`:
    ``src.doc`` is the document, ``src.error(message, *keys)`` an :class:`InputError` naming the line of a
    key path). It raises :class:`InputError` for a document it cannot read; tool ids must be unique."""
    detect: Callable[[Any], bool] | None = None
    """``detect(doc)`` -> True when a parsed document is in this format (for ``format="auto"``); None: only
    by name."""
    options: tuple[str, ...] = ()
    """Keyword options ``load`` takes (the loader passes the ones it has, e.g. ``ids`` for openapi)."""
    named_by_file: bool = True
    """The library takes the file's stem as its name (a TaskBench library is named by its directory)."""


_FORMATS: Registry[ToolFormat] = Registry("tool library format", builtins=("taskbench.graph.loaders",),
                                          package=__name__)


def register_tool_format(fmt: ToolFormat, *, replace: bool = False) -> ToolFormat:
    """Add a tool-library format (see :class:`ToolFormat`); its name becomes a ``--format`` choice."""
    if fmt.name == AUTO:
        raise InputError(f"{AUTO!r} is not a format name (it means: detect the format)")
    return _FORMATS.register(fmt.name, fmt, replace=replace)


def unregister_tool_format(name: str) -> None:
    """Remove a registered format (tests, plugins)."""
    _FORMATS.unregister(name)


def tool_formats() -> dict[str, ToolFormat]:
    """Every registered format by name, built-ins first."""
    return _FORMATS.entries()


def format_names() -> list[str]:
    """What ``format=`` accepts: ``auto`` and every registered format."""
    return [AUTO, *_FORMATS.names()]


def get_format(name: str) -> ToolFormat:
    """The format named ``name``; an unknown name raises :class:`InputError` with the close one."""
    fmt = _FORMATS.find(name) if name != AUTO else None
    if fmt is None:
        raise InputError(f"unknown tool library format {name!r}", hint=did_you_mean(name, format_names()))
    return fmt


def check_format(name: str) -> str:
    """Validate a ``format`` name (``auto`` or a registered format)."""
    if name != AUTO:
        get_format(name)
    return name


def detect_format(doc: Any) -> str | None:
    """The first registered format whose ``detect`` accepts the parsed document, or None."""
    for fmt in tool_formats().values():
        if fmt.detect is not None and fmt.detect(doc):
            return fmt.name
    return None


def formats_help() -> str:
    """The ``--format`` choices for help texts: ``auto (detect), taskbench, openai, mcp or openapi``."""
    return name_list([f"{AUTO} (detect)", *_FORMATS.names()])


def titles_help() -> str:
    """What a tool library file may be, for help texts: ``TaskBench tool_desc.json, OpenAI tools, ...``."""
    return name_list([f.title for f in tool_formats().values()])


__all__ = [
    "AUTO",
    "ToolFormat",
    "check_format",
    "detect_format",
    "format_names",
    "formats_help",
    "get_format",
    "register_tool_format",
    "titles_help",
    "tool_formats",
    "unregister_tool_format",
]
