"""Whole-process speed of `taskbench predict`, as a user runs it, beside the reference `inference.py`.

A loopback OpenAI-compatible server in its own process (the one of ``bench_harness.py``) answers every chat
completion after ``--delay`` seconds. A dataset of ``--n`` samples (the bundled huggingface samples repeated
under new ids) is predicted with ``--concurrency`` requests in flight, free-text mode (what the reference does),
no cache. The bound is ``n / concurrency * delay`` seconds (2.0 s for 640 requests, 64 in flight, 200 ms); the
figure is the bound divided by the command's wall time (1.0 = as fast as the wire allows), measured from
process start to process exit: interpreter start, imports, dataset load, client set-up, the requests, writing.

With ``--reference PATH/inference.py --reference-python PY`` the reference script (microsoft/JARVIS
``taskbench/inference.py``, not part of this project: bring it yourself, with click, aiohttp and emoji in its
own venv) runs against the same server on the same data, alternating with ours. Best and median of
``--repeat`` runs are printed with the load average.

Usage::

    .venv/bin/python benchmarks/bench_predict_process.py [--n 640] [--concurrency 64] [--delay 0.2] [--repeat 5] \
        [--reference /tmp/ref/inference.py --reference-python /tmp/refvenv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_harness import start_server  # noqa: E402


def make_dataset(root: Path, n: int) -> Path:
    from taskbench.bundled import path as bundled_path

    src = bundled_path("huggingface")
    data = root / "data_huggingface"
    data.mkdir(parents=True)
    shutil.copy(src / "tool_desc.json", data / "tool_desc.json")
    shutil.copy(src / "graph_desc.json", data / "graph_desc.json")
    base = [json.loads(line) for line in (src / "data.json").read_text().splitlines() if line.strip()]
    with (data / "data.json").open("w") as d, (data / "user_requests.json").open("w") as u:
        for i in range(n):
            rec = dict(base[i % len(base)])
            rec["id"] = f"{90000000 + i}"
            d.write(json.dumps(rec) + "\n")
            u.write(json.dumps({"id": rec["id"], "user_request": rec["user_request"]}) + "\n")
    return data


def run_ours(data: Path, port: int, out: Path, concurrency: int) -> float:
    if out.exists():
        out.unlink()
    cmd = [str(Path(sys.executable).parent / "taskbench"), "predict", "--data", str(data),
           "-m", "openai-compatible/bench", "--base-url", f"http://127.0.0.1:{port}/v1", "-c", str(concurrency),
           "--free", "--no-cache", "-q", "-o", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"taskbench predict failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall


def run_reference(script: Path, python: str, data: Path, port: int, concurrency: int) -> float:
    preds = data / "predictions"
    if preds.exists():
        shutil.rmtree(preds)
    cmd = [python, str(script), "--data_dir", str(data), "--api_addr", "127.0.0.1", "--api_port", str(port),
           "--multiworker", str(concurrency), "--llm", "bench", "--dependency_type", "resource",
           "--log_first_detail", "True"]  # without it the script fails (it adds to an unset list)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=data.parent)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"reference failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=640)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--reference", type=Path, default=None, help="path of the reference inference.py")
    ap.add_argument("--reference-python", default=sys.executable)
    args = ap.parse_args()
    bound = args.n / args.concurrency * args.delay
    server, port = start_server(args.delay)
    rows: dict[str, list[float]] = {"taskbench predict": []}
    if args.reference:
        rows["reference inference.py"] = []
    load0 = os.getloadavg()[0]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = make_dataset(Path(tmp), args.n)
            out = Path(tmp) / "preds.jsonl"
            for _ in range(args.repeat):
                rows["taskbench predict"].append(run_ours(data, port, out, args.concurrency))
                if args.reference:
                    rows["reference inference.py"].append(
                        run_reference(args.reference, args.reference_python, data, port, args.concurrency))
    finally:
        server.terminate()
        server.wait()
    print(f"n={args.n} concurrency={args.concurrency} delay={args.delay}s bound={bound:.2f}s "
          f"load1 before={load0:.2f} after={os.getloadavg()[0]:.2f} cpus={os.cpu_count()}")
    print(f"{'command':<24} {'best s':>8} {'median s':>9} {'bound/best':>11} {'bound/median':>13}")
    for name, walls in rows.items():
        best, med = min(walls), statistics.median(walls)
        print(f"{name:<24} {best:>8.2f} {med:>9.2f} {bound / best:>11.2f} {bound / med:>13.2f}")


if __name__ == "__main__":
    main()
