"""Generation runs for the viewer: critic pass rates per method (and per structure), the rejected samples with
the critics' reasons, and the near-duplicates, read from a `taskbench generate` output with size limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .samples import _lines, arr, clip, obj

__all__ = ["MAX_LISTED", "generation"]

MAX_LISTED = 500
"""Most rejected samples and near-duplicates listed."""


def _critics(rec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    critics = obj(rec.get("critics"))
    for name, v in critics.items():
        if isinstance(v, dict):
            out[str(name)[:40]] = {"passed": v.get("passed"),
                                   "reasons": [clip(str(r), 600) for r in (v.get("reasons") or [])[:20]]}
    return out


def generation(run_dir: Path, statistics: dict[str, Any]) -> dict[str, Any]:
    """Pass rates per method over the judged samples (kept and rejected), the rejected samples
    with reasons (``data_error.json``), the near-duplicates (``duplicate_of`` in ``data.json``)."""
    per_method: dict[str, dict[str, Any]] = {}
    rejected: list[dict[str, Any]] = []
    duplicates: list[dict[str, Any]] = []
    counts = {"rejected": 0, "duplicates": 0, "kept": 0}
    requests: dict[str, str] = {}

    def tally(rec: dict[str, Any]) -> None:
        method = str(rec.get("method") or "unknown")[:60]
        m = per_method.setdefault(method, {"attempts": 0, "critics": {}})
        m["attempts"] += 1
        for name, v in _critics(rec).items():
            c = m["critics"].setdefault(name, {"passed": 0, "failed": 0, "unknown": 0})
            c["passed" if v["passed"] is True else "failed" if v["passed"] is False else "unknown"] += 1

    def records(name: str) -> list[dict[str, Any]]:
        path = run_dir / name
        if not path.is_file():
            return []
        out = []
        for _, line in _lines(path):
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(rec, dict):
                out.append(rec)
        return out

    kept = records("data.json")
    errors = records("data_error.json")
    for rec in kept + errors:
        tally(rec)
    for rec in kept:
        counts["kept"] += 1
        rid = str(rec.get("id"))
        requests[rid] = str(rec.get("user_request") or "")
        if rec.get("duplicate_of") is not None:
            counts["duplicates"] += 1
            if len(duplicates) < MAX_LISTED:
                duplicates.append({"id": rid, "of": str(rec["duplicate_of"]),
                                   "request": clip(rec.get("user_request"), 600)})
    for d in duplicates:
        d["of_request"] = clip(requests.get(d["of"]), 600)
    for rec in errors:
        counts["rejected"] += 1
        if len(rejected) < MAX_LISTED:
            nodes = arr(rec.get("task_nodes"))
            rejected.append({"id": str(rec.get("id"))[:200], "type": rec.get("type"),
                             "request": clip(rec.get("user_request"), 600),
                             "tools": [str(n.get("task"))[:200] for n in nodes[:20] if isinstance(n, dict)],
                             "critics": _critics(rec),
                             "reasons": [clip(str(r), 600) for r in (rec.get("reasons") or [])[:20]]})
    for m in per_method.values():
        for c in m["critics"].values():
            judged = c["passed"] + c["failed"]
            c["rate"] = c["passed"] / judged if judged else None
    by_mode = obj(statistics.get("by_mode"))
    return {"per_method": per_method, "by_mode": by_mode, "rejected": rejected, "duplicates": duplicates,
            "counts": counts, "listed_max": MAX_LISTED}
