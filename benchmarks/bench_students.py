"""The shipped students end to end (issue 41): ConAgents (both protocols) and ReAct with their students against
the same agents with the base 0.5B model, on held-out RestBench queries, paired.

    python benchmarks/bench_students.py [--out runs/students-bench] [--limit 20] [--repeats 3] [--apis tmdb,spotify]
        [--agents conagents-auto-grounded,react] [--grounding students/grounding --review students/review ...]

For each API it runs `taskbench agents eval` twice into OUT/<api>-students and OUT/<api>-base (the same tasks,
tool setting, seeds and budgets; the first N RestBench queries, which no student saw: the trainer refuses them),
then `taskbench agents compare` for each agent (students against base) and for ConAgents against ReAct within
the students' run (its metrics.json holds the paired comparisons). Every run resumes: rerunning continues where
a kill stopped it. It writes OUT/summary.json: per run and agent success, pass^k, path rates, model calls,
tokens per episode and per solved task, seconds per episode, review counters; the paired differences with their
CIs and p-values; the wall time and the load average before and after each run (llama.cpp's threads spin: give
the machine to one run at a time, and read a figure with its load).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

AGENTS = "conagents-auto,conagents-adaptive,react"
BASE = "llamacpp/qwen2.5-coder-0.5b"


def load() -> float:
    return round(os.getloadavg()[0], 2)


def taskbench(*args: str) -> None:
    exe = Path(sys.executable).with_name("taskbench")
    cmd = [str(exe) if exe.exists() else "taskbench", *args]
    print("+", " ".join(cmd), flush=True)
    code = subprocess.call(cmd)
    if code not in (0, 1):  # 1: some episodes crashed (counted as failures; rerun retries them)
        raise SystemExit(f"{' '.join(cmd[:4])} exited {code}")


def summary_of(run: Path) -> dict[str, Any]:
    doc = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for name, m in (doc.get("agents") or {}).items():
        keep = ("episodes", "crashed", "tasks", "successes", "success_rate", "ci95", "pass_hat_k", "correct_path_f1",
                "correct_path_lcs", "correct_path_contains", "model_calls", "turns", "tokens", "tokens_per_solved",
                "prompt_tokens", "completion_tokens", "wall_seconds", "model_seconds", "mechanism", "stops",
                "failures", "counters")
        out[name] = {k: m.get(k) for k in keep if k in m}
    out["paired"] = doc.get("paired")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/students-bench")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--apis", default="tmdb,spotify")
    ap.add_argument("--agents", default=AGENTS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-base", action="store_true", help="students only (the base control is the expensive half)")
    for role in ("grounding", "execution", "review", "react"):
        ap.add_argument(f"--{role}", metavar="ADAPTER", help=f"the {role} student to use (an adapter directory or "
                        "GGUF file) instead of the shipped ones; any of these replaces --students")
    ap.add_argument("--max-steps", type=int, default=None, help="the step cap (default: agents eval's)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"limit": args.limit, "repeats": args.repeats, "agents": args.agents, "runs": {}}
    for api in [a for a in args.apis.split(",") if a]:
        kinds = ["students"] + ([] if args.skip_base else ["base"])
        for kind in kinds:
            run = out / f"{api}-{kind}"
            before, start = load(), time.perf_counter()
            common = ["agents", "eval", "--env", f"restbench-{api}", "--task-set", "restbench", "--agent", args.agents,
                      "--model", BASE, "--tools", "gold+10", "--limit", str(args.limit), "--repeats",
                      str(args.repeats), "-O", f"n_threads={args.threads}", "--bootstrap", "1000", "-q", "-o", str(run)]
            if args.max_steps is not None:
                common += ["--max-steps", str(args.max_steps)]
            given = {r: getattr(args, r) for r in ("grounding", "execution", "review", "react") if getattr(args, r)}
            students = ([x for r, a in given.items() for x in (f"--model-{r}", f"{BASE}+{a}")] if given
                        else ["--students"])
            taskbench(*common, *(students if kind == "students" else []))
            summary["runs"][run.name] = {"seconds": round(time.perf_counter() - start, 1), "load_before": before,
                                         "load_after": load(), **summary_of(run)}
        if not args.skip_base:
            for agent in args.agents.split(","):
                target = out / f"{api}-compare-{agent}.json"
                taskbench("agents", "compare", str(out / f"{api}-students"), str(out / f"{api}-base"), "--agent-a", agent,
                          "--agent-b", agent, "-o", str(target))
                summary["runs"].setdefault("compare", {})[f"{api}:{agent}"] = json.loads(target.read_text())
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    print(json.dumps({k: {a: {m: v.get(m) for m in ("success_rate", "model_calls", "tokens_per_solved")}
                          for a, v in r.items() if isinstance(v, dict) and "success_rate" in v}
                      for k, r in summary["runs"].items() if k != "compare"}, indent=1))


if __name__ == "__main__":
    main()
