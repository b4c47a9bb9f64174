"""Training examples of one role, read from a SPAN data directory (``ROLE.jsonl``, one chat a line), with the
held-out rule enforced: an example from a RestBench environment is refused (its queries are the test)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..agents.config import ROLES
from ..envs.heldout import held_out_reason
from ..errors import ConfigError, InputError


TRAINED_ROLES = (*ROLES, "react")
"""Roles a student can be trained for: ConAgents' three and ReAct (native tool calls)."""


def load_examples(data: str | Path, role: str) -> list[dict[str, Any]]:
    """The chats of ``data/ROLE.jsonl`` (``{"messages": [...], "meta": {...}}``, the last message the
    assistant's target; ReAct's also ``"tools"``). ``data`` may name several directories, comma-separated (the
    TMDB and the Spotify data of one student), their examples interleaved (the first of each, then the second
    of each, ...), so that a limit takes some of every one. Raises InputError (``file:line``) for a
    malformed line or an example of a held-out test task (:func:`taskbench.envs.heldout.held_out_reason`)."""
    if role not in TRAINED_ROLES:
        raise ConfigError(f"--role {role!r}: expected one of {', '.join(TRAINED_ROLES)}")
    parts = [p for p in str(data).split(",") if p.strip()]
    if len(parts) > 1:  # interleaved, so that --limit takes some of every directory
        sets = [load_examples(part.strip(), role) for part in parts]
        return [row for i in range(max(len(s) for s in sets)) for s in sets if i < len(s) for row in [s[i]]]
    path = Path(data) / f"{role}.jsonl"
    if not path.is_file():
        raise InputError(f"no {role}.jsonl in the data directory", path=Path(data),
                         hint="write it with `taskbench agents span-data` or `taskbench agents export-sft`")
    out: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not JSON: {exc.msg}", path=path, line=n) from None
            msgs = row.get("messages") if isinstance(row, dict) else None
            if not isinstance(msgs, list) or len(msgs) < 2 or not all(isinstance(m, dict) for m in msgs) \
                    or msgs[-1].get("role") != "assistant":
                raise InputError("expected {\"messages\": [..., {\"role\": \"assistant\", ...}]}", path=path, line=n)
            meta = row.get("meta") if isinstance(row.get("meta"), dict) else {}
            calls = meta.get("calls") if isinstance(meta.get("calls"), list) else None
            why = held_out_reason(meta.get("env"), str(meta.get("task") or ""), meta.get("query"), calls)
            if why is None and str(meta.get("env") or "").startswith("restbench") and calls is None:
                why = f"{meta.get('task')}: a generated RestBench task whose calls are not recorded, so the held-out " \
                      "rule cannot be checked"
            if why is not None:
                raise InputError(f"an example from {meta.get('env')!r} is held-out test data ({why}): RestBench "
                                 "queries, our own tasks and their (entity, path) pairs are never training data",
                                 path=path, line=n, hint="rebuild the data with `taskbench agents span-data --tasks` "
                                 "from a generated task file, or `export-sft --select`")
            example: dict[str, Any] = {"messages": msgs, "meta": meta}
            if isinstance(row.get("tools"), list):
                example["tools"] = row["tools"]
            out.append(example)
    if not out:
        raise InputError(f"{role}.jsonl holds no examples", path=path)
    return out


def cap_repeats(rows: list[dict[str, Any]], most: int | None, seed: int = 0) -> tuple[list[dict[str, Any]], int]:
    """``rows`` with at most ``most`` examples of any one answer (the target text), the kept ones drawn by
    ``seed`` and left in their order; -> (rows, how many were dropped). A role whose targets are mostly one
    answer (the review's accept verdict: 100 of 111 gold examples) teaches a student that answer alone."""
    if most is None:
        return rows, 0
    by_target: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_target[str(r["messages"][-1].get("content") or "")].append(i)
    rng = random.Random(seed)
    keep: set[int] = set()
    for target in sorted(by_target):
        idx = by_target[target]
        keep.update(idx if len(idx) <= most else rng.sample(idx, most))
    return [r for i, r in enumerate(rows) if i in keep], len(rows) - len(keep)


__all__ = ["TRAINED_ROLES", "cap_repeats", "load_examples"]
