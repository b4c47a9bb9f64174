"""Tasks generated over the offline REST services (issue 41, point 1): how many, how fast, why the rest were
dropped, and a sample to read by hand.

    python benchmarks/bench_generate_executed.py [--out runs/gen-bench] [--tmdb 420] [--spotify 220]
        [--model llamacpp/qwen2.5-coder-1.5b] [--read 30] [--seed 0]

For each API it runs `taskbench generate --method executed` into OUT/<api> (resumable: rerun after a kill and it
continues; an API already finished is only read), then writes OUT/summary.json: plan entries, kept tasks (after
near duplicates are dropped), the drop reasons, failed chain tries and request refusals by code, wall seconds
per API, kept tasks per minute and whether the target is met (only for a run made whole by this invocation: a
resumed run's seconds are only the part it ran), and the load average before and after (llama.cpp's threads spin:
give the machine to one run at a time). It also writes OUT/read.md: `--read` kept tasks drawn at random (seeded)
with their calls and answer, for a person to mark which are requests a user would write and can be answered
from the calls (the target: >= 24 of 30).

The target it measures: >= 500 executable tasks over TMDB and Spotify in <= 60 min of a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def load() -> float:
    return round(os.getloadavg()[0], 2)


def run_api(api: str, n: int, model: str, seed: int, out: Path, options: list[str]) -> dict[str, Any]:
    exe = Path(sys.executable).with_name("taskbench")
    cmd = [str(exe) if exe.exists() else "taskbench", "generate", "--method", "executed", "--env",
           f"restbench-{api}", "-n", str(n), "-m", model, "--seed", str(seed), "-o", str(out / api), "-q"]
    for option in options:
        cmd += ["-O", option]
    print("+", " ".join(cmd), flush=True)
    raw = out / api / "data_raw.json"
    resumed = raw.exists() and raw.stat().st_size > 0
    before, start = load(), time.monotonic()
    code = subprocess.call(cmd)
    seconds = round(time.monotonic() - start, 1)
    if code != 0:
        raise SystemExit(f"bench_generate_executed: generate over {api} exited {code}")
    stats = json.loads((out / api / "statistics.json").read_text())  # after finalize: near duplicates dropped
    rows = [json.loads(line) for line in raw.read_text().splitlines() if line.strip()]
    return {"api": api, "entries": len(rows), "kept": stats["kept"], "failed": stats.get("failed", 0),
            "dropped": stats["dropped"], "chain_tries_failed": stats.get("chain_tries_failed", {}),
            "request_refusals": stats.get("requests_refused", {}), "seconds": seconds, "resumed": resumed,
            "kept_per_minute": round(stats["kept"] / (seconds / 60), 1) if seconds and not resumed else None,
            "load_before": before, "load_after": load()}


def reading_sheet(out: Path, apis: list[str], count: int, seed: int) -> str:
    kept: list[dict[str, Any]] = []
    for api in apis:
        kept += [json.loads(line) for line in (out / api / "data_raw.json").read_text().splitlines()
                 if line.strip() and json.loads(line).get("kept")]
    rng = random.Random(seed)
    lines = [f"# {min(count, len(kept))} generated tasks drawn at random (seed {seed}) of {len(kept)}", "",
             "Mark each: would a user write this request, and do the calls answer it?", ""]
    for i, rec in enumerate(rng.sample(kept, min(count, len(kept))), 1):
        task = rec["task"]
        calls = " -> ".join(f"{s['tool']} {json.dumps(s['arguments'])} [{s['extract']}]" for s in rec["steps"])
        lines += [f"{i}. **{task['id']}**: {task['query']}", f"   - calls: {calls}",
                  f"   - answer: {json.dumps(rec['target'].get('values'))[:200]}", "   - verdict: ", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/gen-bench"))
    ap.add_argument("--tmdb", type=int, default=420, help="plan entries over TMDB (0: skip)")
    ap.add_argument("--spotify", type=int, default=220, help="plan entries over Spotify (0: skip)")
    ap.add_argument("--model", default="llamacpp/qwen2.5-coder-1.5b", help="the request writer")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--read", type=int, default=30, help="kept tasks drawn for reading by hand")
    ap.add_argument("-O", "--option", action="append", default=None,
                    help="a model option (repeatable; default for llamacpp/ models: n_threads=2)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    plan = [(api, n) for api, n in (("tmdb", args.tmdb), ("spotify", args.spotify)) if n > 0]
    options = args.option if args.option is not None else (["n_threads=2"] if args.model.startswith("llamacpp/")
                                                           else [])
    runs = [run_api(api, n, args.model, args.seed, args.out, options) for api, n in plan]
    total = sum(r["kept"] for r in runs)
    seconds = sum(r["seconds"] for r in runs)
    whole = not any(r["resumed"] for r in runs)  # a resumed run's seconds are only this invocation's part
    summary = {"runs": runs, "kept": total, "seconds": round(seconds, 1),
               "kept_per_minute": round(total / (seconds / 60), 1) if seconds and whole else None,
               "target": ">= 500 kept in <= 3600 s", "met": (total >= 500 and seconds <= 3600) if whole else None}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "read.md").write_text(reading_sheet(args.out, [a for a, _ in plan], args.read, args.seed) + "\n")
    for r in runs:
        print(f"{r['api']}: {r['kept']} kept of {r['entries']} entries in {r['seconds']:.0f} s "
              f"(load {r['load_before']} -> {r['load_after']}); dropped: "
              + ", ".join(f"{k} {v}" for k, v in r["dropped"].items()) + (" (resumed)" if r["resumed"] else ""))
    print(f"total: {total} kept in {seconds:.0f} s; wrote {args.out / 'summary.json'} and {args.out / 'read.md'}")


if __name__ == "__main__":
    main()
