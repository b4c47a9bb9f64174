"""What two runs that should agree are compared on: every file's bytes under a run directory, with a run
header's write times left out (the only thing a rerun or another executor may change)."""

from __future__ import annotations

import json
from pathlib import Path


def run_files(root: Path) -> dict[str, bytes]:
    """Every file's bytes by relative path; a header.json without its created/updated times."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.name == "header.json":
                doc = {k: v for k, v in json.loads(data).items() if k not in ("created", "updated")}
                data = json.dumps(doc, sort_keys=True).encode()
            out[str(p.relative_to(root))] = data
    return out
