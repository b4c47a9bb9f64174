"""Generation runs for the viewer: critic pass rates per method (and per structure), the rejected samples with
the critics' reasons, and the near-duplicates, read from a `taskbench generate` output.

The files are streamed a line at a time and only what the page shows is kept (tallies, the first
:data:`MAX_LISTED` rejected samples and duplicates, and the byte offset of each kept sample, from which the
requests those duplicates repeat are read), so memory grows by an offset per sample, not by the samples; a line
over :data:`MAX_GEN_LINE` is counted, not parsed, and past :data:`MAX_GEN_READ` bytes a file is not read further
(the page says how much was read). The result is computed once per version of the files (size and mtime) and
shared between identical requests."""

from __future__ import annotations

import json
from typing import Any

from ...errors import InputError
from .cache import Memo
from .files import Outside
from .samples import _big_lines, _read_at, arr, bound, clip, counts, obj

__all__ = ["MAX_GEN_LINE", "MAX_GEN_READ", "MAX_LISTED", "generation", "not_kept"]

MAX_LISTED = 500
"""Most rejected samples and near-duplicates listed."""

MAX_GEN_LINE = 1 << 20
"""A generated sample line longer than this is counted, not read (a real one is a few KB)."""

MAX_GEN_READ = 64 << 20
"""Bytes of ``data.json`` and of ``data_error.json`` read at most; the rest of a larger file is not read."""

_RESULTS: Memo[dict[str, Any]] = Memo(keep=8)


def _critics(rec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, v in list(obj(rec.get("critics")).items())[:20]:
        if isinstance(v, dict):
            out[str(name)[:40]] = {"passed": v.get("passed") if isinstance(v.get("passed"), bool) else None,
                                   "reasons": [clip(str(r), 600) for r in arr(v.get("reasons"))[:20]]}
    return out


def _records(run: Any, name: str, notes: list[str], offsets: dict[str, int] | None = None) -> Any:
    """The JSON objects of ``name`` in the run directory, one at a time (bounded, see the module docstring);
    ``offsets`` receives the byte offset of each record by id."""
    try:
        file = run.file(name)
    except Outside as exc:
        notes.append(str(exc))
        return
    if not file.is_file():
        return
    too_big = 0
    try:
        for offset, line, big in _big_lines(file, MAX_GEN_LINE):
            if offset > MAX_GEN_READ:
                notes.append(f"{name} is {file.size() / 1e6:.0f} MB: only its first {MAX_GEN_READ >> 20} MB were read "
                             "(counts and rates below are over that part; statistics.json has the totals)")
                break
            if big:
                too_big += 1
                continue
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(rec, dict):
                if offsets is not None:
                    offsets[clip(str(rec.get("id")), 200)] = offset
                yield rec
    except InputError as exc:
        notes.append(str(exc))
    if too_big:
        notes.append(f"{name}: {too_big:,} lines over {MAX_GEN_LINE >> 20} MB were not read")


def _compute(run: Any, statistics: dict[str, Any]) -> dict[str, Any]:
    per_method: dict[str, dict[str, Any]] = {}
    rejected: list[dict[str, Any]] = []
    duplicates: list[dict[str, Any]] = []
    counts = {"rejected": 0, "duplicates": 0, "kept": 0}
    notes: list[str] = []

    def tally(rec: dict[str, Any]) -> None:
        method = str(rec.get("method") or "unknown")[:60]
        if method not in per_method and len(per_method) >= 50:
            method = "(other)"
        m = per_method.setdefault(method, {"attempts": 0, "critics": {}})
        m["attempts"] += 1
        for name, v in _critics(rec).items():
            c = m["critics"].setdefault(name, {"passed": 0, "failed": 0, "unknown": 0})
            c["passed" if v["passed"] is True else "failed" if v["passed"] is False else "unknown"] += 1

    wanted: dict[str, list[dict[str, Any]]] = {}
    where: dict[str, int] = {}
    for rec in _records(run, "data.json", notes, where):
        tally(rec)
        counts["kept"] += 1
        if rec.get("duplicate_of") is not None:
            counts["duplicates"] += 1
            if len(duplicates) < MAX_LISTED:
                d = {"id": clip(str(rec.get("id")), 200), "of": clip(str(rec["duplicate_of"]), 200),
                     "request": clip(bound(rec.get("user_request")), 600), "of_request": None}
                duplicates.append(d)
                wanted.setdefault(d["of"], []).append(d)
    if wanted:  # the requests the listed duplicates repeat: their lines, read by offset
        file = run.file("data.json")
        for of, listed in wanted.items():
            rec = _read_at(file, where[of]) if of in where else None
            if isinstance(rec, dict):
                for d in listed:
                    d["of_request"] = clip(bound(rec.get("user_request")), 600)
    for rec in _records(run, "data_error.json", notes):
        tally(rec)
        counts["rejected"] += 1
        if len(rejected) < MAX_LISTED:
            nodes = arr(rec.get("task_nodes"))
            rejected.append({"id": clip(str(rec.get("id")), 200), "type": bound(rec.get("type"), text=40),
                             "request": clip(bound(rec.get("user_request")), 600),
                             "tools": [str(n.get("task"))[:200] for n in nodes[:20] if isinstance(n, dict)],
                             "critics": _critics(rec),
                             "reasons": [clip(str(r), 600) for r in arr(rec.get("reasons"))[:20]]})
    for m in per_method.values():
        for c in m["critics"].values():
            judged = c["passed"] + c["failed"]
            c["rate"] = c["passed"] / judged if judged else None
    return {"per_method": per_method, "by_mode": bound(obj(statistics.get("by_mode")), items=50),
            "rejected": rejected, "duplicates": duplicates, "counts": counts, "listed_max": MAX_LISTED,
            "notes": notes[:20]}


def generation(run: Any, statistics: dict[str, Any]) -> dict[str, Any]:
    """Pass rates per method over the judged samples (kept and rejected), the rejected samples with reasons
    (``data_error.json``), the near-duplicates (``duplicate_of`` in ``data.json``); ``run``: the
    :class:`~.index.RunInfo` of a generation run (its files are read through :meth:`RunInfo.file`)."""
    stamps = []
    for name in ("data.json", "data_error.json"):
        try:
            stamps.append(run.file(name).stamp())
        except InputError:
            stamps.append(None)
    return _RESULTS.get((str(run.path), *stamps), lambda: _compute(run, statistics))


def not_kept(run: Any, statistics: dict[str, Any]) -> dict[str, Any] | None:
    """Why samples were not kept, from ``statistics.json`` as the index read it (``reasons_by_critic``,
    ``answered``, ``kept``): the critics' top reasons with their samples, labelled as ``taskbench generate``
    and report.md say them (:func:`~taskbench.report.tables.not_kept_reasons`), and when none was kept the
    command that keeps them anyway; None when the run names no reason."""
    from ..tables import not_kept_reasons

    by_critic = {clip(str(c), 60): counts(codes) for c, codes in list(obj(statistics.get("reasons_by_critic")).items())[:20]}
    rows = not_kept_reasons(by_critic)
    if not rows:
        return None
    answered, kept = (v if isinstance(v, int) and not isinstance(v, bool) else None
                      for v in (statistics.get("answered"), statistics.get("kept")))
    return {"answered": answered, "kept": kept,
            "not_kept": answered - kept if answered is not None and kept is not None else None,
            "reasons": [{"reason": reason, "count": n} for reason, n in rows],
            "keep_none": clip(f"taskbench generate -o {run.path} --keep none", 2000) if kept == 0 else None}
