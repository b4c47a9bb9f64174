"""Fields of a JSON result, and the ways to pick from them, each written three ways: a JMESPath expression (the
checker and the solution script), Python over ``response`` (the execution agent's code) and a phrase (what the
request writer and the grounding agent's ``target`` say).

A field path is what the link inference writes: ``results[].id``, ``tracks.items[].artists[].id``,
``item.album.id``. Its first ``[]`` is a list the task picks one item of (:class:`Pick`); later ``[]`` take the
first item.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _jkey(key: str) -> str:
    return key if _KEY.match(key) else json.dumps(key)


def _pkey(key: str) -> str:
    return f"[{key!r}]"


def jmes_path(parts: list[str]) -> str:
    """``['tracks', 'items']`` -> ``tracks.items`` (keys JMESPath cannot write bare are quoted)."""
    return ".".join(_jkey(p) for p in parts)


def py_path(parts: list[str]) -> str:
    """``['tracks', 'items']`` -> ``['tracks']['items']``."""
    return "".join(_pkey(p) for p in parts)


@dataclass(frozen=True)
class FieldPath:
    """A path split at its first list: ``list_parts`` (empty when there is none), then ``rest`` (inner lists
    become their first item)."""

    list_parts: tuple[str, ...] | None
    rest: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        segments = [s for s in text.split(".") if s]
        for i, seg in enumerate(segments):
            if seg.endswith("[]"):
                head = [*segments[:i], seg[:-2]]
                tail = [s[:-2] + "[0]" if s.endswith("[]") else s for s in segments[i + 1:]]
                return cls(tuple(p for p in head if p), tuple(tail))
        return cls(None, tuple(segments))

    def rest_jmes(self) -> str:
        return ".".join(_jkey(p[:-3]) + "[0]" if p.endswith("[0]") else _jkey(p) for p in self.rest)

    def rest_py(self) -> str:
        return "".join(_pkey(p[:-3]) + "[0]" if p.endswith("[0]") else _pkey(p) for p in self.rest)


def get(value: Any, parts: tuple[str, ...] | list[str]) -> Any:
    """The value at ``parts`` (``name[0]`` takes a list's first item); None when it is not there."""
    for p in parts:
        index = p.endswith("[0]")
        key = p[:-3] if index else p
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
        if index:
            if not isinstance(value, list) or not value:
                return None
            value = value[0]
    return value


def _lit(value: Any) -> str:
    """A JMESPath raw string or literal."""
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "`" + json.dumps(value) + "`"


@dataclass(frozen=True)
class Pick:
    """How one item of a list is chosen.

    ``how``: ``first`` (the list's order: a search's best match, a ranking's top), ``where`` (the first item
    whose ``key`` equals ``value``), ``max`` / ``min`` (the item with the largest / smallest ``by``, among
    those with ``key == value`` when a key is given)."""

    how: str
    key: str | None = None
    value: Any = None
    by: str | None = None

    def _filter_j(self, lst: str) -> str:
        if self.key is not None:
            return f"{lst}[?{_jkey(self.key)}=={_lit(self.value)}]"
        return lst

    def _filter_p(self, lst: str) -> str:
        if self.key is not None:
            return f"[x for x in {lst} if x.get({self.key!r}) == {self.value!r}]"
        return lst

    def item_jmes(self, lst: str) -> str:
        """JMESPath of the chosen item (of the list at ``lst``)."""
        if self.how == "first":
            return f"{lst}[0]"
        if self.how == "where":
            return f"{self._filter_j(lst)} | [0]"
        assert self.by is not None
        fn = "max_by" if self.how == "max" else "min_by"
        cond = f"{_jkey(self.by)}"
        if self.key is not None:
            cond = f"{_jkey(self.key)}=={_lit(self.value)} && {cond}"
        return f"{fn}({lst}[?{cond}], &{_jkey(self.by)})"

    def item_py(self, lst: str) -> str:
        """Python of the chosen item (``lst`` a Python expression of the list)."""
        if self.how == "first":
            return f"{lst}[0]"
        if self.how == "where":
            return f"{self._filter_p(lst)}[0]"
        assert self.by is not None
        fn = "max" if self.how == "max" else "min"
        base = self._filter_p(lst)
        return f"{fn}([x for x in {base} if x.get({self.by!r})], key=lambda x: x[{self.by!r}])"

    def choose(self, items: list[Any]) -> Any:
        """The chosen item of ``items`` (None when there is none), as the expressions choose it."""
        pool = [x for x in items if isinstance(x, dict)]
        if self.key is not None:
            pool = [x for x in pool if x.get(self.key) == self.value]
        if self.how in ("first", "where"):
            return pool[0] if pool else None
        pool = [x for x in pool if x.get(self.by)]
        if not pool:
            return None
        values = [x[self.by] for x in pool]
        if len({type(v) for v in values}) != 1:
            return None
        best = max(values) if self.how == "max" else min(values)
        return next(x for x in pool if x[self.by] == best)

    def phrase(self, noun: str) -> str:
        """``the first item of cast``, ``the crew entry whose job is "Director" with the latest release_date``."""
        where = f" whose {self.key} is {json.dumps(self.value, ensure_ascii=False)}" if self.key else ""
        if self.how == "first":
            return f"the first {noun}{where}"
        if self.how == "where":
            return f"the first {noun}{where}"
        word = _superlative(self.by or "", self.how)
        return f"the {noun}{where} with the {word} {self.by}"


def _superlative(by: str, how: str) -> str:
    dated = re.search(r"date|time|year|_at$|air", by)
    if dated:
        return "latest" if how == "max" else "earliest"
    return "highest" if how == "max" else "lowest"


__all__ = ["FieldPath", "Pick", "get", "jmes_path", "py_path"]
