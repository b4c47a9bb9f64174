"""Benchmark: how well an inferred tool graph covers real multi-step API use (RestBench TMDB and Spotify).

For each spec in ../shared/reference/restbench (``tmdb_oas.json`` with ``tmdb.json``, ``spotify_oas.json``
with ``spotify.json``) it builds the graph with ``--infer schema`` (or ``--infer llm --model M``) and reports:

- recall: the share of consecutive gold steps (a, b) of the queries' solutions that are links a -> b of the
  graph (a step from an operation to itself counts, and can never be a link);
- density: links / (n (n - 1));
- the steps that are not links (``--misses``).

Targets (issue 10): recall >= 0.90 on TMDB and >= 0.80 on Spotify at a density of 0.3 or less.

Gold solutions are strings such as ``"GET /search/person"``; a few carry stray spaces or typos
(``"GET /person/{movie_id}/movie_credits"``, ``"GET /track/{id}"``). They are mapped onto the spec's
operations here, by this script only: exact match after trimming, else the operation with the same method
whose path matches with parameter names ignored, else the closest path with the same method (difflib ratio
>= 0.8). Steps that map to nothing are reported and counted as misses.

    .venv/bin/python benchmarks/bench_graph_infer.py
    .venv/bin/python benchmarks/bench_graph_infer.py --misses
    .venv/bin/python benchmarks/bench_graph_infer.py --infer llm --model llamacpp/qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SHARED = Path(os.environ.get("TASKBENCH_SHARED", ROOT.parent / "shared"))
RESTBENCH = SHARED / "reference" / "restbench"
SPECS = {"tmdb": ("tmdb_oas.json", "tmdb.json", 0.90), "spotify": ("spotify_oas.json", "spotify.json", 0.80)}
MAX_DENSITY = 0.3

_PARAM = re.compile(r"\{[^}]*\}")


def map_step(step: str, names: list[str]) -> str | None:
    """The operation a gold solution step names (see the module docstring), or None."""
    step = " ".join(step.split())
    if step in names:
        return step
    method, _, path = step.partition(" ")
    same = [n for n in names if n.split(" ", 1)[0] == method.upper()]
    shape = _PARAM.sub("{}", path)
    by_shape = [n for n in same if _PARAM.sub("{}", n.split(" ", 1)[1]) == shape]
    if len(by_shape) == 1:
        return by_shape[0]
    paths = {n.split(" ", 1)[1]: n for n in same}
    close = difflib.get_close_matches(path, list(paths), n=1, cutoff=0.8)
    return paths[close[0]] if close else None


def measure(name: str, infer: str, model: str | None, concurrency: int | None) -> dict:
    from taskbench.graph import load_tools
    from taskbench.graph.infer import infer_graph

    spec, queries, target = SPECS[name]
    library = load_tools(RESTBENCH / spec, "openapi", openapi_ids="path")
    start = time.perf_counter()
    if infer == "schema":
        graph = infer_graph(library)
        extra: dict = {}
    else:
        from taskbench.graph.infer_llm import infer_graph_llm
        from taskbench.llm import get_model

        llm = get_model(model or "llamacpp/qwen2.5-coder-0.5b", **({"concurrency": concurrency} if concurrency else {}))
        graph, report = infer_graph_llm(library, llm)
        extra = {"proposed": report.proposed, "kept": report.kept, "dropped": report.dropped,
                 "repeated": report.repeated, "calls": report.calls, "failed_calls": report.failed_calls,
                 "errors": report.errors, "model": llm.name, "usage": llm.usage.model_dump(),
                 "why_dropped": _count(_why(r["why"]) for r in report.rejected)}
    seconds = time.perf_counter() - start
    names = library.names
    links = {(lk.source, lk.target) for lk in graph.links}
    steps = hits = 0
    misses: list[tuple[str, str, str]] = []
    unmapped: set[str] = set()
    for q in json.loads((RESTBENCH / queries).read_text(encoding="utf-8")):
        sol = q["solution"]
        mapped = [map_step(s, names) for s in sol]
        for raw, op in zip(sol, mapped, strict=True):
            if op is None:
                unmapped.add(raw)
        for (a, b), raw in zip(zip(mapped, mapped[1:], strict=False), zip(sol, sol[1:], strict=False), strict=True):
            steps += 1
            if a is not None and b is not None and (a, b) in links:
                hits += 1
            else:
                misses.append((str(a or raw[0]), str(b or raw[1]), q["query"]))
    n = len(names)
    density = len(graph.links) / (n * (n - 1))
    return {
        "spec": name, "infer": infer, "tools": n, "links": len(graph.links), "density": density,
        "steps": steps, "hits": hits, "recall": hits / steps if steps else 0.0, "target_recall": target,
        "ok": hits / steps >= target and density <= MAX_DENSITY, "seconds": seconds,
        "link_types": _count(lk.type or "" for lk in graph.links), "unmapped": sorted(unmapped),
        "misses": misses, **extra,
    }


def _why(text: str) -> str:
    """The kind of a rule-check rejection."""
    for words in ("is not a tool", "is not a parameter", "does not return", "cannot feed itself", "not an object"):
        if words in text:
            return words
    return text


def _count(items) -> dict:  # noqa: ANN001
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--infer", choices=("schema", "llm"), default="schema")
    ap.add_argument("--model", help="provider/model for --infer llm (default llamacpp/qwen2.5-coder-0.5b)")
    ap.add_argument("--concurrency", type=int)
    ap.add_argument("--spec", choices=sorted(SPECS), action="append", help="only these specs (repeatable)")
    ap.add_argument("--misses", action="store_true", help="list the gold steps that are not links")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    if not RESTBENCH.is_dir():
        print(f"skipped: {RESTBENCH} is absent", file=sys.stderr)
        return 0
    results = [measure(s, args.infer, args.model, args.concurrency) for s in (args.spec or list(SPECS))]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        load = os.getloadavg()[0]
        print(f"inferred tool graphs ({args.infer}) vs RestBench gold steps; load average {load:.2f}")
        for r in results:
            print(f"  {r['spec']:8s} tools {r['tools']:3d}  links {r['links']:4d}  density {r['density']:.3f}  "
                  f"recall {r['hits']}/{r['steps']} = {r['recall']:.3f} (target {r['target_recall']:.2f})  "
                  f"{'OK' if r['ok'] else 'BELOW TARGET'}  {r['seconds']:.2f} s  types {r['link_types']}")
            if "proposed" in r:
                print(f"           {r['model']}: {r['calls']} calls ({r['failed_calls']} failed), "
                      f"{r['proposed']} links proposed, {r['kept']} kept, {r['dropped']} dropped by the rule check, "
                      f"{r['repeated']} repeated; dropped: {r['why_dropped']}")
                for err in r["errors"]:
                    print(f"           failed: {err[:160]}")
            if r["unmapped"]:
                print(f"           unmapped gold steps: {r['unmapped']}")
            if args.misses:
                for a, b, q in r["misses"]:
                    print(f"    miss {a} -> {b}    ({q[:70]})")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
