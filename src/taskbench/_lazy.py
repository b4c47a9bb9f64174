"""Lazy package exports (PEP 562): a package lists ``name -> submodule`` and imports the submodule on first use,
so ``import taskbench`` and the command line don't pay for what they don't touch."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> tuple[
    Callable[[str], Any], Callable[[], list[str]]
]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a public name to the submodule (relative to
    ``package``) that defines it; a resolved name is cached in the package's ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
