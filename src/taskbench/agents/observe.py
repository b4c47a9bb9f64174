"""What an agent sees of a tool result, and whether the answer was within it.

The agents that read tool results in their prompt (ReAct, Reflexion, DFSDT, alpha-UMi; RestGPT's parser when
its code fails) get :func:`observation`: the raw JSON when it fits the observation budget
(``Budgets.observation_chars``, 1,500 characters); otherwise a **digest** that keeps the structure and, in
every list of records, every record's identifying fields. A cut at a fixed character count would hide every
record past the first few (a film's crew comes after its cast, so the director of a film with 60 cast members
was never seen), while the agents that write code read the whole response. The digest is the first of these
that fits (the first within the budget, the others within :data:`VIEW_FACTOR` times the budget):

1. the JSON with empty values dropped and long texts cut (:data:`LONG_TEXT` characters);
2. every list of records as a table (``{"count", "fields", "rows", "not_shown"}``, and ``same_as`` for a field
   whose values repeat an earlier field's in every record, shown once) of the fields whose values are short
   scalars (ids, names, titles, roles, dates, numbers, flags, short texts; nested objects flattened
   into dotted names such as ``album.name``; a nested list of records as each one's identifying fields);
3. the same tables with the identifying fields alone (ids, names and titles, roles such as ``character`` and
   ``job``, dates);
4. without the ids of related things beside a record's own ``id`` (``credit_id``, ``cast_id``), rows cut
   evenly across the lists when even that exceeds the larger bound (``more`` says how many rows a list did not
   show).

The first line of a digest says it is one and how long the result was.

:func:`answer_in_view` says whether the values a task's checker expects in the answer appear in texts an agent
saw; :class:`Views` collects, per episode, what each tool result was and what was shown of it (a result read
by code counts as seen whole) and summarises both (``view`` in the outcome's details; ``answer_in_view`` in the
episode record).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

VIEW_FACTOR = 4
"""A digest may take up to this many times the observation budget when a smaller one would drop identifying
fields (the identifying fields of every record are what the digest is for)."""

LONG_TEXT = 100
"""Characters a text keeps in a digest (an overview, a biography)."""

SHORT = 80
"""The longest text that counts as a short scalar (a table column)."""

_ID = re.compile(r"^(id|ids|uri|key|iso_\w+)$|_(id|ids|uri|key)$|Id$", re.I)
_NAME = re.compile(r"^(name|title|character|job|department|role|type|media_type|label)$|_(name|title)$", re.I)
_DATE = re.compile(r"(^|_)(date|birthday|deathday|year|air_date)$", re.I)


def identifying(key: str) -> bool:
    """Whether a record's field identifies it (an id, a name or title, a role, a date)."""
    return bool(_ID.search(key) or _NAME.search(key) or _DATE.search(key))


def _keeps(mode: str, key: str, keys: Sequence[str]) -> bool:
    """Whether a table in ``mode`` keeps the field ``key`` (of a record with the fields ``keys``): ``short``
    every short field, ``identifying`` the identifying ones, ``names`` those but the ids of related things
    beside a record's own ``id`` (``credit_id``, ``cast_id``, ``snapshot_id``)."""
    leaf = key.rsplit(".", 1)[-1]
    if mode == "short":
        return True
    if not identifying(leaf):
        return False
    return mode == "identifying" or not (key != "id" and _ID.search(leaf) and leaf not in ("uri", "ids")
                                         and "id" in keys)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def _short(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) or (isinstance(value, str) and len(value) <= SHORT)


def _lean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lean(v) for k, v in value.items() if not _empty(v)}
    if isinstance(value, list):
        return [_lean(v) for v in value]
    if isinstance(value, str) and len(value) > LONG_TEXT:
        return value[:LONG_TEXT] + "..."
    return value


def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _flat(record: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """A record's fields, nested objects flattened into dotted names (``album.name``, ``tracks.total``)."""
    out: dict[str, Any] = {}
    for k, v in record.items():
        if isinstance(v, dict) and v and depth < 2:
            out.update(_flat(v, f"{prefix}{k}.", depth + 1))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _leaf(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def _cell(value: Any, mode: str) -> tuple[bool, Any]:
    """(whether a table shows this value, what it shows): a short scalar as it is; a short list of scalars;
    a list of records as each one's identifying fields (they name related records: a person's films)."""
    if _short(value):
        return True, value
    if isinstance(value, list) and value and all(_short(v) for v in value) and len(_dump(value)) <= SHORT:
        return mode == "short", value
    if _records(value):
        named = [{k: v for k, v in _flat(r).items() if identifying(_leaf(k)) and _short(v)} for r in value]
        return any(named), named
    return False, None


def _repeats(fields: Sequence[str], cells: dict[str, list[tuple[bool, Any]]]) -> dict[str, str]:
    """The fields whose shown value is, in every record, that of an earlier field (TMDB's ``original_name``
    beside ``name``), each with that field: a table shows the column once and says so (``same_as``), which
    leaves room for more records."""
    same: dict[str, str] = {}
    for j, k in enumerate(fields):
        for earlier in fields[:j]:
            if earlier not in same and cells[k] == cells[earlier] and any(shown for shown, _ in cells[k]):
                same[k] = earlier
                break
    return same


def _tables(value: Any, mode: str, tables: list[dict[str, Any]]) -> Any:
    """``value`` with every list of records made a table of the fields ``mode`` keeps (``short`` |
    ``identifying``); the tables are also collected in ``tables`` (for cutting rows)."""
    if _records(value):
        flat = [_flat(r) for r in value]
        keys: list[str] = []
        for record in flat:
            keys.extend(k for k in record if k not in keys)
        cells = {k: [_cell(r.get(k), mode) for r in flat] for k in keys}
        fields = [k for k in keys if any(shown for shown, _ in cells[k])
                  and (_keeps(mode, k, keys) or _records(next((r.get(k) for r in flat if r.get(k) is not None),
                                                              None)))]
        fields.sort(key=lambda k: not identifying(_leaf(k)))  # the identifying fields first
        same = _repeats(fields, cells)
        fields = [k for k in fields if k not in same]
        rows = [[cells[k][i][1] if cells[k][i][0] else None for k in fields] for i in range(len(flat))]
        table = {"count": len(value), "fields": fields, "rows": rows,
                 "not_shown": [k for k in keys if k not in fields and k not in same]}
        if same:
            table["same_as"] = same
        tables.append(table)
        return table
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if _empty(v):
                continue
            out[k] = v[:LONG_TEXT] + "..." if isinstance(v, str) and len(v) > LONG_TEXT else _tables(v, mode, tables)
        return out
    if isinstance(value, list):
        return [_tables(v, mode, tables) for v in value]
    return value


def _cut_rows(digest: Any, tables: list[dict[str, Any]], bound: int) -> str:
    """The digest with rows cut, evenly across its tables (small tables whole, the rest sharing what is left),
    until it fits ``bound``."""
    whole = [list(t["rows"]) for t in tables]
    for t in tables:
        t["rows"] = []
    base = len(_dump(digest)) + 20 * len(tables)  # 20: room for each table's "more"
    room = max(0, bound - base)
    order = sorted(range(len(tables)), key=lambda i: len(_dump(whole[i])))
    for n, i in enumerate(order):
        share = room // (len(order) - n)
        kept, used = [], 0
        for row in whole[i]:
            size = len(_dump(row)) + 2  # the row and its ", "
            if used + size > share:
                break
            kept.append(row)
            used += size
        tables[i]["rows"] = kept
        if len(kept) < len(whole[i]):
            tables[i]["more"] = len(whole[i]) - len(kept)
        room -= used
    return _dump(digest)


def observation(content: Any, limit: int) -> str:
    """What an agent reads of a tool result ``content`` under the budget ``limit`` (see the module docstring):
    the JSON when it fits, else a digest that keeps every record's identifying fields."""
    text = content if isinstance(content, str) else _dump(content)
    if len(text) <= limit:
        return text
    value = content
    if isinstance(content, str):
        try:
            value = json.loads(content)
        except ValueError:  # plain text has no structure to keep: cut it, saying how much was cut
            return content[:limit] + f" ... [{len(content) - limit} more characters cut]"
    head = f"[a long result ({len(text)} characters), shown as a digest: {{note}}]\n"
    lean = _dump(_lean(value))
    if len(lean) + 80 <= limit:
        return head.format(note="empty fields left out, long texts cut") + lean
    bound = limit * VIEW_FACTOR
    candidates = []
    for mode in ("short", "identifying", "names"):
        tables: list[dict[str, Any]] = []
        digest = _tables(value, mode, tables)
        candidates.append((mode, digest, tables, _dump(digest)))
    note = {"short": "lists of records as tables of their short fields",
            "identifying": "lists of records as tables of their identifying fields",
            "names": "lists of records as tables of their ids, names, roles and dates"}
    for mode, _, tables, dumped in candidates:
        if tables and len(head.format(note=note[mode])) + len(dumped) <= bound:
            return head.format(note=note[mode]) + dumped
    mode, digest, tables, _ = candidates[-1]
    if not tables:  # no list of records: the lean JSON, cut
        first = head.format(note="empty fields left out, long texts cut, then cut")
        room = max(0, bound - len(first) - 40)
        return first + lean[:room] + f" ... [{max(0, len(lean) - room)} more characters cut]"
    first = head.format(note=note[mode] + ", rows cut evenly (more: rows not shown)")
    return first + _cut_rows(digest, tables, bound - len(first))


# ---------------------------------------------------------------------------------------------- in view


_MENTIONED = {"all": None, "any": 1, "of": None, "picks": 1}


def answer_in_view(expected: Any, texts: Sequence[str]) -> bool | None:
    """Whether the values a resolved checker (a task's ``answer``: a list of conditions) expects the answer to
    state appear in ``texts`` (what an agent saw: JSON, so a value counts when its words appear in a row, not
    when an answer would assert it): every value of ``all``, one of ``any`` and of ``picks``,
    ``at_least`` of ``of``. None when the checker asks the answer for no value (an end-state task, a yes/no
    question) or the task has no resolved checker."""
    from ..envs.restbench.answers import key as words_of

    if not isinstance(expected, list):
        return None
    seen = f" {words_of(' '.join(texts))} "

    def mentions(text: str, value: Any) -> bool:  # the value's words, in a row, among what was seen
        needle = words_of(str(value))
        return bool(needle) and f" {needle} " in text

    verdicts = []
    for cond in expected:
        if not isinstance(cond, dict):
            continue
        for key, need in _MENTIONED.items():
            if key not in cond:
                continue
            values = cond[key] if isinstance(cond[key], list) else [cond[key]]
            if key == "of":
                need = int(cond.get("at_least", 1))
            found = sum(1 for v in values if mentions(seen, v))
            verdicts.append(found >= (len(values) if need is None else min(need, len(values))) and bool(values))
    return all(verdicts) if verdicts else None


@dataclass
class Views:
    """Per episode: each tool result that reached an agent, whole, and what the agent saw of it."""

    full: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)

    def add(self, full: str, shown: str) -> None:
        self.full.append(full)
        self.shown.append(shown)

    def summary(self, expected: Any) -> dict[str, Any]:
        """``results`` seen, how many were ``cut`` (shown other than whole), the characters of both, and
        whether the answer's values were in what was shown (``answer_in_view``) and in the results at all
        (``answer_in_results``); the last two None where :func:`answer_in_view` is."""
        return {"results": len(self.full), "cut": sum(1 for f, s in zip(self.full, self.shown, strict=True) if f != s),
                "full_chars": sum(len(f) for f in self.full), "shown_chars": sum(len(s) for s in self.shown),
                "answer_in_view": answer_in_view(expected, self.shown),
                "answer_in_results": answer_in_view(expected, self.full)}


__all__ = ["LONG_TEXT", "SHORT", "VIEW_FACTOR", "Views", "answer_in_view", "identifying", "observation"]
