"""Yield of `taskbench generate` directories made with the same graph, seed and plan (free vs guided, ...).

Reads each directory's ``data_raw.json`` (complete or not: a run cut into pieces is read as far as it got),
keeps the plan entries that every directory has answered or failed (the common prefix, so the modes are
compared on the same entries), recomputes the critics' verdicts with the current code
(``taskbench.engine.output.assess``) and prints per directory: entries, rule / LLM / both passed, kept per
structure (single, chain, dag) and per size, model seconds per entry and per kept sample, and the rule critic's
reasons. ``--judge`` adds the mean judge scores of the kept samples when ``DIR/judge/*.jsonl`` exist.

    .venv/bin/python benchmarks/bench_yield.py gen/free gen/guided
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def read_raw(directory: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    path = directory / "data_raw.json"
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out[str(rec["id"])] = rec
    return out


def rows_of(directory: Path, ids: list[str], raw: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    from taskbench.engine.output import assess
    from taskbench.graph.build import graph_from_path

    graph = graph_from_path(directory)  # its tool_desc.json and graph_desc.json
    library = graph.library
    rows = []
    for i in ids:
        rec = raw[i]
        _, verdicts = assess(rec, library, graph)
        rule, llm = verdicts["rule"].passed is True, verdicts["llm"].passed is True
        rows.append({
            "id": i, "mode": rec["type"], "size": rec["n_tools"], "rule": rule, "llm": llm, "both": rule and llm,
            "failed": bool(rec.get("failed")), "seconds": float((rec.get("usage") or {}).get("seconds") or 0.0),
            "reasons": sorted({r.split(":", 1)[0] for r in verdicts["rule"].reasons}),
        })
    return rows


def judge_scores(directory: Path, kept: set[str]) -> dict[str, float]:
    sums: Counter[str] = Counter()
    n = 0
    for path in sorted((directory / "judge").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            scores = rec.get("scores") or (rec.get("result") if isinstance(rec.get("result"), dict) else None)
            if str(rec.get("id")) in kept and isinstance(scores, dict):
                n += 1
                for k in ("naturalness", "complexity", "alignment"):
                    if isinstance(scores.get(k), (int, float)):
                        sums[k] += scores[k]
    return {k: round(v / n, 2) for k, v in sums.items()} | {"n": n} if n else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    raws = {d: read_raw(d) for d in args.dirs}
    common = sorted(set.intersection(*(set(r) for r in raws.values())))
    # the common prefix of the plan (ids are the entry numbers)
    prefix = [i for n, i in enumerate(common) if int(i) == n]
    print(f"plan entries compared: {len(prefix)} (the common prefix 0..{len(prefix) - 1})\n")
    print("| run | entries | rule passed | LLM passed | both (kept) | kept single / chain / dag | model s / entry | "
          "model s / kept | judge N / C / A |")
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |")
    figures: dict[str, Any] = {}
    for d in args.dirs:
        rows = rows_of(d, prefix, raws[d])
        kept = [r for r in rows if r["both"]]
        by_mode = {m: (sum(1 for r in kept if r["mode"] == m), sum(1 for r in rows if r["mode"] == m))
                   for m in ("single", "chain", "dag")}
        secs = sum(r["seconds"] for r in rows)
        per_kept = f"{secs / len(kept):.1f}" if kept else "- (none kept)"
        judge = judge_scores(d, {r["id"] for r in kept})
        jtext = (f"{judge['naturalness']} / {judge['complexity']} / {judge['alignment']} (n={judge['n']})"
                 if judge else "-")
        print(f"| {d.name} | {len(rows)} | {sum(r['rule'] for r in rows)} | {sum(r['llm'] for r in rows)} | "
              f"{len(kept)} | " + " / ".join(f"{k}/{n}" for k, n in by_mode.values()) +
              f" | {secs / max(len(rows), 1):.1f} | {per_kept} | {jtext} |")
        sizes = sorted({r["size"] for r in rows})
        figures[d.name] = {
            "entries": len(rows), "rule": sum(r["rule"] for r in rows), "llm": sum(r["llm"] for r in rows),
            "kept": len(kept), "by_mode": by_mode,
            "by_size": {s: (sum(1 for r in kept if r["size"] == s), sum(1 for r in rows if r["size"] == s))
                        for s in sizes},
            "seconds": secs, "judge": judge,
            "rule_reasons": dict(Counter(c for r in rows for c in r["reasons"]).most_common()),
        }
    print()
    for name, f in figures.items():
        print(f"{name}: kept by size " + ", ".join(f"{s}: {k}/{n}" for s, (k, n) in f["by_size"].items())
              + f"; rule reasons {f['rule_reasons']}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
