"""What an episode observed: the successful tool responses, and whether a value appeared in one of them.

Success in the default ``solved`` mode asks that every value the checker expects in the answer appeared in a
successful tool response of the episode (:class:`Observed`; calls made from agent code in the sandbox reach the
environment through its ``call`` like any other, so they count). How a value *appears*:

- a **name or text**: its words, in order, inside one string of a response (case, accents and punctuation
  ignored: "Universal City" appears in "Universal City, California"), in any JSON shape (a text response
  that holds JSON, or a Python literal, is read as one). A response does not show what the call's own
  arguments said: searching "Heath Ledger" does not observe "Heath Ledger" (unless the user's query names
  it), so a value cannot be made to appear by asking for it;
- a **date**: a string of a response that is that date (an ISO date or date-time), not echoed from the
  arguments;
- a **number** read from a response by the checker (a runtime, a rating, a count): the response the checker
  read it from was observed (the same operation with the same arguments, or a response equal to it), or the
  number stands under the same key in a record with the same ``id`` (a rating from a search result counts
  for the movie's rating). A number computed by the checker (a count of crew records) needs its source
  response. A literal number (a task file's ``{"all": [5]}``) must appear in a response, not echoed;
- a **yes/no** computed from a response: that response was observed. A yes/no the checker states as a
  literal has nothing to appear in: the task names what must have been observed with an ``observed``
  condition, or it cannot be solved in this mode.

The checker records where each value came from while resolving (:class:`Source`), in-process, against the
episode's initial state.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .answers import find_dates, iso_date, number_spans, words

_STOP = frozenset({"the", "a", "an", "of", "and", "in", "on", "to", "for", "by", "at", "is", "de", "la", "le"})


def parse_content(content: Any) -> Any:
    """A tool result's content as data: JSON text read as JSON, a Python literal (mcp-server-sqlite answers
    so) as one, anything else as it is."""
    if isinstance(content, str):
        text = content.strip()
        if text[:1] in "[{\"" or text in ("true", "false", "null") or text[:1].isdigit() or text[:1] == "-":
            try:
                return json.loads(text)
            except (json.JSONDecodeError, RecursionError, ValueError):
                pass
        if text[:1] in "[{(" and len(text) < 1_000_000:
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
                pass
    return content


@dataclass
class Source:
    """Where the checker read a value: ``op`` with ``args`` answered ``body``; ``expr`` over it gave ``value``
    (``op`` is ``"initial"`` for a value of the initial state: no response to compare)."""

    op: str
    args: dict[str, Any]
    body: Any
    value: Any


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _identity(record: dict[str, Any]) -> str | None:
    ident = record.get("id")
    return None if ident is None or isinstance(ident, (dict, list, bool)) else str(ident)


def _keyed(value: Any, out: set[tuple[str | None, str, float]]) -> None:
    """(record id, key, number) of every number a record states under a key (as a number, or in its text)."""
    if isinstance(value, dict):
        ident = _identity(value)
        for k, v in value.items():
            if _is_number(v):
                out.add((ident, str(k), float(v)))
            elif isinstance(v, str) and len(v) < 5000:
                out.update((ident, str(k), n) for _s, _e, n, w in number_spans(v) if not w)
            else:
                _keyed(v, out)
    elif isinstance(value, list):
        for v in value:
            _keyed(v, out)


def _scalars(value: Any) -> set[str]:
    """The distinct scalar values of a JSON value, as comparable strings ("n:8", "s:christian bale")."""
    out: set[str] = set()
    for leaf in _leaves(value):
        if _is_number(leaf):
            out.add(f"n:{float(leaf)}")
        elif isinstance(leaf, str) and leaf.strip():
            out.add("s:" + " ".join(words(_spaced(leaf))))
    return out


def _spaced(text: str) -> str:
    """A date-time's day and time apart ("2024-06-01T17:00" -> "2024-06-01 17:00"), so its words are found;
    any other "T" stays (a file name such as "/f85poKimEXF3kgCp5wiY9CEv7T7.jpg" is one word)."""
    return re.sub(r"(\d{4}-\d{2}-\d{2})T(?=\d{2}:?\d{2})", r"\1 ", text)


def _echoes(call: _Call, toks: tuple[str, ...], user: frozenset[str] = frozenset()) -> bool:
    """Whether a call's arguments already say the text ``toks`` (a word counts when an argument word of three
    letters or more begins it: "Chris" searched, "Christian Bale" echoed).

    What the user's query said is the user's, not the agent's: a value with words the query did not say is
    echoed when the arguments hold any of those words as the agent's own (a word the query did not say, or a
    number argument: "Star Wars Empire" searched echoes "Star Wars: The Empire Strikes Back"; ``year=1917``
    echoes "1917"), and not echoed when the arguments are the user's words only (a search for "The Godfather
    Part II" shows "The Godfather Part III"). A value made only of the user's words is echoed when the
    arguments hold half its words or more, unless the query says it as one phrase (:meth:`Observed.shows`)."""
    new = [t for t in toks if t not in _STOP and t not in user]
    if not new:
        content = [t for t in toks if t not in _STOP and not t.isdigit()]
        if not content:
            return " " + " ".join(toks) + " " in call.arg_text
        said = sum(t in call.arg_words or any(t.startswith(a) for a in call.arg_words if len(a) >= 3)
                   for t in content)
        return said * 2 >= len(content)
    own = {a for a in call.arg_words if a not in user and a not in _STOP}
    own |= {str(int(n)) for n in call.arg_numbers if float(n).is_integer()}
    return any(t in own or (not t.isdigit() and any(t.startswith(a) for a in own if len(a) >= 3 and not a.isdigit()))
               for t in new)


COVERAGE = 0.8
"""The share of a source response's distinct values a response must hold to count as that response seen."""
SMALL_SOURCE = 5
"""A source response with fewer distinct values counts as seen only in a response of the same tool."""


@dataclass
class _Call:
    name: str
    args: dict[str, Any]
    content: Any
    text: str = ""  # " | "-separated word keys of every string leaf
    dates: set[str] = field(default_factory=set)
    numbers: set[float] = field(default_factory=set)
    keyed: set[tuple[str | None, str, float]] = field(default_factory=set)
    canonical: str = ""
    scalars: set[str] = field(default_factory=set)
    arg_text: str = ""
    arg_words: set[str] = field(default_factory=set)
    arg_numbers: set[float] = field(default_factory=set)
    arg_dates: set[str] = field(default_factory=set)


class Observed:
    """The successful calls of an episode, indexed for :meth:`shows` (see the module docstring).

    ``calls``: (tool name, arguments, result content) of each call that succeeded, in order."""

    def __init__(self, calls: Iterable[tuple[str, dict[str, Any], Any]] = ()) -> None:
        self.calls: list[_Call] = []
        for name, args, content in calls:
            self.add(name, args, content)

    def add(self, name: str, args: dict[str, Any] | None, content: Any) -> None:
        """Index one more successful call."""
        self.calls.append(self._index(name, dict(args or {}), parse_content(content)))

    def __len__(self) -> int:
        return len(self.calls)

    @staticmethod
    def _index(name: str, args: dict[str, Any], content: Any) -> _Call:
        call = _Call(name=name, args=args, content=content)
        parts: list[str] = []
        for leaf in _leaves(content):
            if isinstance(leaf, str):
                parts.append(" ".join(words(_spaced(leaf))))
                day = iso_date(leaf)
                if day:
                    call.dates.add(day)
                elif len(leaf) < 5000:
                    call.dates.update(d for _s, _e, r in find_dates(leaf) for d in r)
                    call.numbers.update(n for _s, _e, n, w in number_spans(_spaced(leaf)) if not w)
            elif _is_number(leaf):
                call.numbers.add(float(leaf))
        call.text = " | " + " | ".join(parts) + " | "
        _keyed(content, call.keyed)
        call.canonical = _canonical(content)
        call.scalars = _scalars(content)
        call.arg_text = " " + " ".join(" ".join(words(str(v))) for v in _leaves(args) if v is not None) + " "
        for leaf in _leaves(args):
            if isinstance(leaf, str):
                call.arg_words.update(words(leaf))
                call.arg_dates.update(d for _s, _e, r in find_dates(leaf) for d in r)
                if iso_date(leaf):
                    call.arg_dates.add(iso_date(leaf) or "")
                call.arg_numbers.update(n for _s, _e, n, w in number_spans(leaf) if not w)
            elif _is_number(leaf):
                call.arg_numbers.add(float(leaf))
        return call

    # ------------------------------------------------------------------------------------------ rules

    def shows(self, value: Any, sources: list[Source] | None = None, *, query: str = "",
              answers: list[Any] | None = None) -> bool:
        """Whether ``value`` appeared in a successful response (see the module docstring); ``sources``:
        where the checker read it; ``query``: the user's words (what the user named may be echoed);
        ``answers``: every value the checker expects - a call whose arguments already hold one of them (and
        the query does not) was made by an agent that knew the answer, so its response shows none of them."""
        if value is None:
            return False
        if isinstance(value, bool):  # computed by the checker: the response it was computed from was seen
            read = [s for s in sources or [] if s.op != "initial"]
            return bool(read) and all(self.saw_source(s) for s in read)
        if _is_number(value):
            return self._shows_number(float(value), sources or [])
        if isinstance(value, (dict, list)):
            leaves = [v for v in _leaves(value) if v is not None]
            return bool(leaves) and all(self.shows(v, sources, query=query, answers=answers) for v in leaves)
        text = str(value)
        day = iso_date(text)
        if day:
            return any(day in c.dates and day not in c.arg_dates for c in self.calls)
        toks = words(text)
        if not toks:
            return False
        needle = " " + " ".join(toks) + " "
        asked = " " + " ".join(words(query)) + " "
        user = frozenset(asked.split())
        known = [t for t in (words(str(a)) for a in answers or [] if isinstance(a, str))
                 if t and " " + " ".join(t) + " " not in asked]
        for c in self.calls:
            if needle not in c.text:
                continue
            if needle in asked or not (_echoes(c, toks, user) or any(_echoes(c, t, user) for t in known)):
                return True
        return False

    def _shows_number(self, value: float, sources: list[Source]) -> bool:
        bodies = [s for s in sources if s.op != "initial"]
        if not bodies:  # a literal, or a value of the initial state: it must appear, not echoed
            return any(value in c.numbers and value not in c.arg_numbers for c in self.calls)
        for source in bodies:
            if self.saw_source(source):
                return True
            places: set[tuple[str | None, str, float]] = set()
            _keyed(source.body, places)
            wanted = {(ident, k) for ident, k, n in places if ident is not None and n == value}
            if wanted and any((ident, k, value) in c.keyed for c in self.calls for ident, k in wanted):
                return True
        return False

    def saw_source(self, source: Source) -> bool:
        """Whether the episode saw the response the checker read: it made the same request (the same operation,
        with at least its arguments), or got a response equal to it, or one holding :data:`COVERAGE` of its
        distinct values (not from the call's own arguments; a source of fewer than :data:`SMALL_SOURCE` values:
        in a response of the same tool, so "SELECT COUNT(*) ..." seen another way counts)."""
        canonical = _canonical(source.body)
        wanted = {str(k): _canonical(v) if isinstance(v, (dict, list)) else str(v) for k, v in source.args.items()}
        values = _scalars(source.body)
        for c in self.calls:
            if c.canonical == canonical:
                return True
            if c.name == source.op:
                have = {str(k): _canonical(v) if isinstance(v, (dict, list)) else str(v) for k, v in c.args.items()}
                if all(have.get(k) == v for k, v in wanted.items()):
                    return True
            if not values or (len(values) < SMALL_SOURCE and c.name != source.op):
                continue
            fresh = {v for v in values & c.scalars if not (v.startswith("n:") and float(v[2:]) in c.arg_numbers)
                     and not (v.startswith("s:") and f" {v[2:]} " in c.arg_text)}
            if len(fresh) >= COVERAGE * len(values):
                return True
        return False


__all__ = ["Observed", "Source", "parse_content"]
