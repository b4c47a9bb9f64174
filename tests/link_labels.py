"""Recall and precision of inferred links against the hand labels in tests/data/specs/links.json (also the
table in docs/graph.md: `python tests/link_labels.py`). A spec's labels are its 'hand' links, written before
the rules, plus its 'added' ones, labelled later (the file's '_added' says which and why); `--hand` scores the
first alone."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

SPECS = Path(__file__).parent / "data" / "specs"
LABELLED = ("hand", "added")


def labels() -> dict[str, dict[str, list[list[str]]]]:
    doc = json.loads((SPECS / "links.json").read_text(encoding="utf-8"))
    return {k: v for k, v in doc.items() if not k.startswith("_")}


def spec_file(name: str) -> Path:
    return next(p for p in sorted(SPECS.glob(f"{name}.*")) if p.suffix in (".json", ".yaml", ".yml"))


def score(name: str, which: str | Sequence[str] = LABELLED) -> tuple[int, int, int]:
    """(correct, inferred, labelled) pairs for one spec, against the label lists ``which``."""
    from taskbench.graph import graph_from_path

    graph = graph_from_path(spec_file(name))
    found = {(lk.source, lk.target) for lk in graph.links}
    kinds = [which] if isinstance(which, str) else list(which)
    want = {(a, b) for kind in kinds for a, b in labels()[name].get(kind, [])}
    return len(found & want), len(found), len(want)


if __name__ == "__main__":
    which = ("hand",) if "--hand" in sys.argv[1:] else LABELLED
    print("| spec | labelled | inferred | correct | recall | precision |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in labels():
        ok, got, want = score(name, which)
        prec = f"{ok / got:.2f}" if got else "-"
        print(f"| {name} | {want} | {got} | {ok} | {ok / want:.2f} | {prec} |")
