"""What a write changed: the difference between the environment's state before and after a chain, as checker
conditions (:mod:`taskbench.envs.restbench.checking`'s ``state`` conditions) and as words for the request
writer."""

from __future__ import annotations

import json
import re
from typing import Any

from .paths import jmes_path

INCIDENTAL = re.compile(r"(snapshot|timestamp|_at$|progress|updated|modified|etag|^version$)", re.I)
"""State keys that change as a side effect (a playlist's snapshot id, a play position): not the task's point."""
IDENTITY_KEYS = ("id", "uri", "name", "title")
MAX_CONDITIONS = 4


def _identity(item: Any) -> tuple[str, Any] | None:
    if isinstance(item, dict):
        for key in IDENTITY_KEYS:
            if isinstance(item.get(key), (str, int)):
                return key, item[key]
    return None


def _name(item: Any) -> str:
    if isinstance(item, dict):
        for key in ("name", "title", "id", "uri"):
            if isinstance(item.get(key), (str, int)):
                return str(item[key])
    return json.dumps(item, ensure_ascii=False)[:60]


def state_changes(before: Any, after: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """(checker conditions, the changes in words) for the difference between two states."""
    conditions: list[dict[str, Any]] = []
    words: list[str] = []

    def walk(b: Any, a: Any, path: list[str]) -> None:
        if b == a or len(conditions) >= MAX_CONDITIONS:
            return
        if path and INCIDENTAL.search(path[-1]):
            return
        where = jmes_path(path) if path else "@"
        label = ".".join(path) or "the state"
        if isinstance(b, dict) and isinstance(a, dict):
            for key in list(b) + [k for k in a if k not in b]:
                walk(b.get(key), a.get(key), [*path, str(key)])
            return
        if isinstance(b, list) and isinstance(a, list):
            added = [x for x in a if x not in b]
            removed = [x for x in b if x not in a]
            for items, test, verb in ((added, "includes", "now includes"), (removed, "excludes", "no longer has")):
                if not items:
                    continue
                ident = [_identity(x) for x in items]
                if all(isinstance(x, (str, int, float)) for x in items):
                    conditions.append({"state": where, test: items})
                elif all(i is not None for i in ident) and len({i[0] for i in ident if i}) == 1:
                    key = ident[0][0]  # type: ignore[index]
                    conditions.append({"state": f"{where}[].{key}", test: [i[1] for i in ident if i]})
                else:
                    continue
                words.append(f"{label} {verb} " + ", ".join(json.dumps(_name(x), ensure_ascii=False) for x in items[:3]))
            if not added and not removed:  # the same items in another order
                conditions.append({"state": where, "equals": a})
                words.append(f"{label} is reordered")
            return
        if isinstance(a, (dict, list)):
            return
        conditions.append({"state": where, "equals": a})
        words.append(f"{label} becomes {json.dumps(a, ensure_ascii=False)}"
                     + (f" (was {json.dumps(b, ensure_ascii=False)})" if isinstance(b, (str, int, float, bool)) else ""))

    walk(before, after, [])
    return conditions, words


__all__ = ["state_changes"]
