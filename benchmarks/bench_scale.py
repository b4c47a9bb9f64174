"""Scale at the released TaskBench size (28,271 samples): predict against loopback replicas, evaluate 17 files.

``predict``: the bundled multimedia set repeated to ``--n`` samples (default 28,271) with fresh ids; ``--replicas``
loopback OpenAI-compatible servers (each its own process; from bench_ray.py) that answer after ``--delay`` s (0.2)
and serve at most ``--slots`` requests at once each (64); structured predictions, cache off.

- ``--run local``: one process, ``-c`` requests in flight (default 256) spread over the replicas;
- ``--run ray``: ``--executor ray`` with ``--workers`` shards (default 4) of ``-c / workers`` requests in flight
  each, over the same replicas (a private Ray cluster started before the timer; its start is printed apart).

``bound`` is the shortest possible wall time, ``ceil(n / min(in_flight, replicas * slots)) * delay``; ratio =
bound / wall (1.0 is the bound). The whole process is timed: loading the dataset, every prompt, every answer
parsed, the records written (and for Ray: scheduling, each worker loading the data, the merge).

``evaluate``: a synthetic gold set of ``--n`` samples (bench_evaluate.py's generator: single/chain/DAG graphs,
1-10 tools) and ``--files`` prediction files of it (each its own seed of perturbations; default 17, the
leaderboard's models), scored with ``taskbench evaluate`` (strict, the default bootstrap):

- ``--run local``: one ``taskbench evaluate`` process per file, one after the other;
- ``--run sharded``: the same with ``--executor ray --workers W`` (the strict scoring sharded; a private cluster
  per command, as a user would run it).

It reports the wall time of all files and the peak resident memory of the largest process (``ru_maxrss`` of the
children; for Ray, the driver's, and the largest worker's from sampling /proc every 0.2 s). ``--files`` may be
cut (say 3 of 17) on a busy machine: the report says how many were measured.

    .venv/bin/python benchmarks/bench_scale.py predict --run local
    .venv/bin/python benchmarks/bench_scale.py predict --run ray --workers 4
    .venv/bin/python benchmarks/bench_scale.py evaluate --run local --files 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
N_RELEASED = 28_271


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def predict(args: argparse.Namespace) -> dict[str, Any]:
    from bench_ray import make_dataset, run_local, run_ray, start_server

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    load0 = _load()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = make_dataset(root / "data", args.n)
        servers = [start_server(args.delay, args.slots) for _ in range(args.replicas)]
        urls = [u for _, u in servers]
        try:
            if args.run == "local":
                wall = asyncio.run(run_local(data, root / "local.jsonl", urls, args.concurrency))
                started = 0.0
            else:
                from taskbench.executors.ray import RayExecutor

                t0 = time.perf_counter()
                executor = RayExecutor(workers=args.workers).start()
                started = time.perf_counter() - t0
                try:
                    wall = asyncio.run(run_ray(executor, data, root / "ray.jsonl", urls,
                                               args.concurrency // args.workers, args.workers))
                finally:
                    executor.close()
        finally:
            for p, _ in servers:
                p.terminate()
                p.wait(10)
    in_flight = args.concurrency if args.run == "local" else (args.concurrency // args.workers) * args.workers
    bound = math.ceil(args.n / min(in_flight, args.replicas * args.slots)) * args.delay
    return {"bench": "predict", "run": args.run, "n": args.n, "replicas": args.replicas, "slots": args.slots,
            "delay": args.delay, "workers": args.workers if args.run == "ray" else 1, "in_flight": in_flight,
            "wall_s": round(wall, 2), "bound_s": round(bound, 2), "ratio": round(bound / wall, 3),
            "ray_start_s": round(started, 1), "load": [load0, _load()], "cpus": os.cpu_count()}


def _peak_rss_of_tree(root_pid: int, stop: threading.Event, peak: dict[str, int]) -> None:
    """Sample the resident memory of every process below ``root_pid`` (kB) until ``stop``; keep the largest
    worker's (any descendant's) peak."""
    while not stop.is_set():
        kids = {root_pid}
        try:
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        stat = (entry / "stat").read_text()
                        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
                    except (OSError, ValueError):
                        continue
                    if ppid in kids or any(ppid == k for k in kids):
                        kids.add(int(entry.name))
            for pid in kids - {root_pid}:
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            peak["worker_kb"] = max(peak.get("worker_kb", 0), int(line.split()[1]))
                except OSError:
                    continue
        except OSError:
            pass
        stop.wait(0.2)


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    import random

    from bench_evaluate import load_library, make_gold, make_prediction

    load0 = _load()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rng = random.Random(0)
        tools = load_library()
        gold = make_gold(rng, tools, args.n)
        data = root / "data"
        data.mkdir()
        (data / "tool_desc.json").write_text(json.dumps({"nodes": tools}))
        (data / "data.json").write_text("".join(json.dumps(g) + "\n" for g in gold))
        files = []
        for k in range(args.files):
            r = random.Random(1000 + k)
            path = root / f"model-{k:02d}.jsonl"
            with path.open("w") as fh:
                for g in gold:
                    p = make_prediction(r, g, tools)
                    if p is not None:
                        fh.write(json.dumps(p) + "\n")
            files.append(path)
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        peak: dict[str, int] = {}
        t0 = time.perf_counter()
        for k, path in enumerate(files):
            cmd = [sys.executable, "-m", "taskbench", "evaluate", "--data", str(data), "--predictions", str(path),
                   "-o", str(root / f"metrics-{k:02d}.json")]
            if args.run == "sharded":
                cmd += ["--executor", "ray", "--workers", str(args.workers)]
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
            stop = threading.Event()
            watcher = threading.Thread(target=_peak_rss_of_tree, args=(proc.pid, stop, peak), daemon=True)
            watcher.start()
            _, err = proc.communicate()
            stop.set()
            watcher.join()
            if proc.returncode != 0:
                raise SystemExit(f"evaluate failed ({proc.returncode}): {err.decode()[-2000:]}")
            print(f"  file {k + 1}/{len(files)}: {time.perf_counter() - t0:.1f} s so far", flush=True)
        wall = time.perf_counter() - t0
    driver_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"bench": "evaluate", "run": args.run, "n": args.n, "files": args.files, "of_files": 17,
            "workers": args.workers if args.run == "sharded" else 1, "wall_s": round(wall, 1),
            "wall_per_file_s": round(wall / args.files, 1), "peak_rss_driver_mb": round(driver_kb / 1024, 1),
            "peak_rss_worker_mb": round(peak.get("worker_kb", 0) / 1024, 1), "load": [load0, _load()],
            "cpus": os.cpu_count()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="bench", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--run", choices=["local", "ray"], required=True)
    p.add_argument("--n", type=int, default=N_RELEASED)
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--slots", type=int, default=64)
    p.add_argument("--replicas", type=int, default=4)
    p.add_argument("-c", "--concurrency", type=int, default=256, help="requests in flight in all")
    p.add_argument("--workers", type=int, default=4)
    e = sub.add_parser("evaluate")
    e.add_argument("--run", choices=["local", "sharded"], required=True)
    e.add_argument("--n", type=int, default=N_RELEASED)
    e.add_argument("--files", type=int, default=17)
    e.add_argument("--workers", type=int, default=2)
    for q in (p, e):
        q.add_argument("--json", type=Path, help="append the result as a JSON line to this file")
    args = ap.parse_args()
    result = predict(args) if args.bench == "predict" else evaluate(args)
    print(json.dumps(result))
    if args.json:
        with args.json.open("a") as fh:
            fh.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
