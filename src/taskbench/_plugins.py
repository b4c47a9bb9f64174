"""Registries of the extension points, and plugins: modules outside taskbench that add to them.

:class:`Registry` is the one registry type behind the three extension points: agents
(:mod:`taskbench.agents.registry`), metrics (:mod:`taskbench.eval.metrics`) and tool-library formats
(:mod:`taskbench.graph.formats`). Reading one first imports what it is made of: the modules that register the
built-in entries, every module of its extension package (so a new module dropped into
``agents/baselines/``, ``eval/metrics/`` or ``graph/formats/`` registers itself), then the plugins.

A plugin is an ordinary Python module whose import registers what it adds, with
:func:`taskbench.agents.registry.register_agent`, :func:`taskbench.eval.metric_table.register_metric` and
:func:`taskbench.graph.formats.register_tool_format` (docs/extending.md has one worked example of each).

From Python, importing the module is enough. For the command line, name it in ``TASKBENCH_PLUGINS``: module
names (``mypkg.agents``) or paths of ``.py`` files, separated by commas (a ``.env`` file in the working
directory may set it, as any ``TASKBENCH_*`` setting). :func:`load_plugins` imports them the first time one of
the three registries is read, so ``taskbench --help`` and the commands that read no registry pay nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")
V = TypeVar("V")

PLUGINS_ENV = "TASKBENCH_PLUGINS"
"""Environment variable naming the plugin modules (comma-separated module names or ``.py`` paths)."""

_loaded: set[str] = set()
_loading = False


def plugin_names(value: str | None = None) -> list[str]:
    """The plugins ``value`` (default: ``$TASKBENCH_PLUGINS``) names, in order, without duplicates."""
    text = os.environ.get(PLUGINS_ENV, "") if value is None else value
    return list(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))


def load_plugins() -> list[str]:
    """Import the plugins ``$TASKBENCH_PLUGINS`` names that are not imported yet; returns the names imported now.

    A plugin that cannot be imported raises :class:`~taskbench.errors.ConfigError` naming it and the error (and
    is tried again on the next call). Reentrant calls (a plugin reading a registry while it registers) return
    at once."""
    global _loading
    if _loading:
        return []
    done = []
    _loading = True
    try:
        for name in plugin_names():
            if name in _loaded:
                continue
            _import(name)
            _loaded.add(name)
            done.append(name)
    finally:
        _loading = False
    return done


def _import(name: str) -> None:
    """Import one plugin: a ``.py`` file by path, else a module by name."""
    by_path = name.endswith(".py") or os.sep in name or "/" in name
    path = Path(name).expanduser()
    if by_path and not path.is_file():
        raise ConfigError(f"plugin {name!r} ({PLUGINS_ENV}): no such file (give a module name or the path of a "
                          ".py file)")
    try:
        if not by_path:
            importlib.import_module(name)
            return
        module_name = f"taskbench_plugin_{path.stem}"
        if module_name in sys.modules:
            return
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
            raise ImportError("not a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
    except Exception as exc:
        raise ConfigError(f"plugin {name!r} ({PLUGINS_ENV}) failed to load: {type(exc).__name__}: {exc} (fix it, "
                          f"or remove it from {PLUGINS_ENV})") from exc


class Registry(Generic[T]):
    """Named entries of one extension point, in registration order (built-ins first, then the modules of the
    extension package, then plugins).

    ``what`` names an entry in errors (``"agent"``); ``builtins``: modules whose import registers the built-in
    entries; ``package``: the extension package whose every module is imported on first read (None: none).
    """

    def __init__(self, what: str, *, builtins: Sequence[str] = (), package: str | None = None) -> None:
        self.what = what
        self.builtins = tuple(builtins)
        self.package = package
        self._entries: dict[str, T] = {}
        self._ready = False
        self._readying = False

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Add ``entry`` under ``name``. A name taken by another entry is refused (a plugin that would silently
        change a built-in agent or metric is a mistake) unless ``replace``; registering the same entry again is
        a no-op (a module imported twice)."""
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ConfigError(f"a {self.what} needs a non-empty name without surrounding spaces, not {name!r}")
        old = self._entries.get(name)
        if old is not None and old != entry and not replace:
            raise ConfigError(f"{self.what} {name!r} is already registered (choose another name, or pass "
                              "replace=True to replace it on purpose)")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry (tests, and a plugin undoing what it added); an unknown name is ignored."""
        self._entries.pop(name, None)

    def _load(self) -> None:
        if self._ready or self._readying:
            return
        self._readying = True
        try:
            for module in self.builtins:
                importlib.import_module(module)
            if self.package is not None:
                pkg = importlib.import_module(self.package)
                for info in pkgutil.iter_modules(getattr(pkg, "__path__", [])):
                    if not info.name.startswith("_"):
                        importlib.import_module(f"{self.package}.{info.name}")
            self._ready = True
        finally:
            self._readying = False

    def registered(self) -> dict[str, T]:
        """The entries registered so far, without importing anything (a copy)."""
        return dict(self._entries)

    def entries(self) -> dict[str, T]:
        """Every entry by name (a copy), built-ins and plugins loaded."""
        self._load()
        load_plugins()
        return dict(self._entries)

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self.entries())

    def find(self, name: str) -> T | None:
        """The entry named ``name``, or None."""
        entry = self._entries.get(name)
        return entry if entry is not None else self.entries().get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None


def name_list(names: Sequence[str], last: str = "or") -> str:
    """``a, b or c`` (``last`` joins the last two)."""
    items = list(names)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}" if items else ""


class LiveView(Generic[T]):
    """A read-only sequence computed on each use (the module constants that keep their old names as views of a
    registry: ``BASE_AGENTS``, ...)."""

    def __init__(self, compute: Callable[[], Sequence[T]]) -> None:
        self._compute = compute

    def __iter__(self) -> Iterator[T]:
        return iter(self._compute())

    def __len__(self) -> int:
        return len(self._compute())

    def __contains__(self, item: object) -> bool:
        return item in self._compute()

    def __getitem__(self, index: int) -> T:
        return self._compute()[index]

    def __repr__(self) -> str:
        return repr(tuple(self._compute()))


class LiveMapping(Mapping[str, V]):
    """A read-only mapping computed on each use (``ROLES_OF``, ``RETRY_NAMES``, ...: views of a registry)."""

    def __init__(self, compute: Callable[[], Mapping[str, V]]) -> None:
        self._compute = compute

    def __getitem__(self, key: str) -> V:
        return self._compute()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._compute())

    def __len__(self) -> int:
        return len(self._compute())


__all__ = ["PLUGINS_ENV", "LiveMapping", "LiveView", "Registry", "load_plugins", "name_list", "plugin_names"]
