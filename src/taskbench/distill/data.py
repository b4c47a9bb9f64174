"""Training examples of one role, read from a SPAN data directory (``ROLE.jsonl``, one chat a line), with the
held-out rule enforced: an example from a RestBench environment is refused (its queries are the test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..agents.config import ROLES
from ..agents.selection import is_held_out
from ..errors import ConfigError, InputError


def load_examples(data: str | Path, role: str) -> list[dict[str, Any]]:
    """The chats of ``data/ROLE.jsonl`` (``{"messages": [...], "meta": {...}}``, the last message the
    assistant's target). Raises InputError (``file:line``) for a malformed line or an example whose
    ``meta.env`` is a held-out RestBench environment."""
    if role not in ROLES:
        raise ConfigError(f"--role {role!r}: expected one of {', '.join(ROLES)}")
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
            if is_held_out(meta.get("env")):
                raise InputError(f"an example from {meta.get('env')!r}: RestBench queries are the held-out test "
                                 "of the students and never training data", path=path, line=n,
                                 hint="rebuild the data with `taskbench agents export-sft --select` or span-data")
            out.append({"messages": msgs, "meta": meta})
    if not out:
        raise InputError(f"{role}.jsonl holds no examples", path=path)
    return out


__all__ = ["load_examples"]
