"""YAML documents read as safely as JSON: no Python tags, aliases bounded before anything is built, keys and
dates as JSON would have them, and the node tree kept so errors can name a line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError

Key = str | int

YAML_MAX_VALUES = 1_000_000
"""Most values a YAML document may stand for once its aliases are expanded (a "billion laughs" is refused)."""


def read_yaml(text: str, *, path: str | Path | None = None) -> tuple[Any, Any]:
    """(node tree, JSON-compatible value) of a YAML document, read safely: no Python tags, aliases counted
    before anything is built (a document expanding to more than :data:`YAML_MAX_VALUES` values is refused),
    mapping keys as strings and dates as ISO text, as the JSON of the same document would have them;
    ``!!set`` as a list of its members, ``!!pairs`` and ``!!omap`` as lists of ``[key, value]`` pairs,
    ``!!binary`` as text."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML ships with the usual environments
        raise InputError("reading YAML needs PyYAML", path=path, hint="pip install pyyaml, or save the file as JSON") from None
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # its reader already refuses control characters
        node = loader.get_single_node()
        if node is None:
            raise InputError("the file is empty", path=path, hint="expected a JSON or YAML document")
        size = _yaml_size(node, {}, 0)
        if size > YAML_MAX_VALUES:
            raise InputError(
                f"YAML aliases expand to more than {YAML_MAX_VALUES:,} values", path=path,
                line=None, hint="write the document out without '*alias' references that multiply it")
        doc = loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc).splitlines()[0]
        raise InputError(
            f"invalid YAML: {' '.join(str(problem).split())}"
            + (f" (column {mark.column + 1})" if mark is not None else ""),
            path=path, line=mark.line + 1 if mark is not None else None,
            hint="fix the YAML syntax at this position") from None
    except RecursionError:
        raise InputError("YAML nested too deeply", path=path) from None
    except ValueError as exc:  # e.g. an integer longer than Python's conversion limit
        raise InputError(f"invalid YAML value: {exc}", path=path) from None
    finally:
        if loader is not None:
            loader.dispose()
    return node, _json_compatible(doc, 0)


def _yaml_size(node: Any, memo: dict[int, int], depth: int) -> int:
    """How many values ``node`` stands for with every alias expanded (shared nodes are counted once each time
    they are used, as the constructed value would hold them)."""
    if depth > 500:
        raise RecursionError
    hit = memo.get(id(node))
    if hit is not None:
        return hit
    value = getattr(node, "value", None)
    total = 1
    if isinstance(value, list):
        for item in value:
            if isinstance(item, tuple):  # a mapping's (key, value) pair
                total += _yaml_size(item[0], memo, depth + 1) + _yaml_size(item[1], memo, depth + 1)
            else:
                total += _yaml_size(item, memo, depth + 1)
            if total > YAML_MAX_VALUES:
                break
    memo[id(node)] = total
    return total


def _json_compatible(value: Any, depth: int) -> Any:
    import datetime

    if depth > 500:
        raise InputError("YAML nested too deeply")
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else json.dumps(k) if isinstance(k, bool) or k is None else str(k)):
                _json_compatible(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):  # a tuple: a pair of ``!!pairs`` / ``!!omap``
        return [_json_compatible(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):  # ``!!set``: its members, as a JSON list in a stable order
        return [_json_compatible(v, depth + 1) for v in sorted(value, key=lambda v: (type(v).__name__, str(v)))]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and value != value:
        return None
    return value


def yaml_line(node: Any, keys: Sequence[Key]) -> int | None:
    """1-based line where the value at ``keys`` starts in a composed YAML node tree."""
    for key in keys:
        value = getattr(node, "value", None)
        if not isinstance(value, list):
            return None
        if isinstance(key, int):
            if key >= len(value) or isinstance(value[key], tuple):
                return None
            node = value[key]
        else:
            pairs = [item for item in value if isinstance(item, tuple)]
            found = next((v for k, v in pairs if str(getattr(k, "value", "")) == key), None)
            if found is None:
                return None
            node = found
    return int(node.start_mark.line) + 1


__all__ = ["YAML_MAX_VALUES", "read_yaml", "yaml_line"]
