"""Scale-out: wall time of a sharded prediction run against the latency bound, local and on Ray.

Loopback OpenAI-compatible servers (each its own process, plain asyncio) answer every chat completion after
``--delay`` seconds (default 0.2) and serve at most ``--slots`` requests at once (default 16), as a model server
with a fixed batch size would; further requests queue at the server. The dataset is the bundled ``multimedia``
set repeated to ``--n`` samples (default 2560) with fresh ids; predictions are structured, cache off.

For each row, ``bound`` is the shortest possible wall time: ``ceil(n / min(in_flight, endpoints * slots)) *
delay``, where ``in_flight = workers * concurrency`` (``--concurrency`` per worker, default 16). ``ratio`` =
bound / wall (1.0 = the bound; higher is better). The rows:

- ``local``: ``predict_dataset`` in this process (one worker), over 1 and over several endpoints;
- ``ray W``: ``--executor ray`` with W workers (1, 2, 4), over 1 and over several endpoints. The Ray cluster
  (2 CPUs here) is started once before the rows and not counted; each row's time includes what a real run pays:
  scheduling the shard tasks, every worker loading the dataset and building its model, merging the shards.

The figure to beat is the local run's ratio. The 1-minute load average before and after is printed: on a
shared machine the figures are only comparable within one run of this script.

Usage::

    .venv/bin/python benchmarks/bench_ray.py [--n 2560] [--delay 0.2] [--slots 16] [--concurrency 16]
        [--endpoints 4] [--workers 1,2,4] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_harness import http_response, serve_http  # noqa: E402

CANNED = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"task_steps": [], "task_nodes": []}'},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
}


# ------------------------------------------------------------------------------------------------ server


async def _serve(delay: float, slots: int) -> None:
    ok = http_response(json.dumps(CANNED).encode())
    listing = http_response(json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]}).encode())
    sem = asyncio.Semaphore(slots)

    async def answer(head: bytes, body: bytes) -> bytes:
        if head.startswith(b"GET"):
            return listing
        async with sem:  # a server with `slots` sequences in its batch
            await asyncio.sleep(delay)
        return ok

    await serve_http(answer)


def start_server(delay: float, slots: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve-only", "--delay", str(delay), "--slots", str(slots)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"


# ------------------------------------------------------------------------------------------------ data


def make_dataset(root: Path, n: int) -> Path:
    """The bundled multimedia dataset repeated to ``n`` samples with fresh ids."""
    from taskbench.run.resolve import resolve_data

    src = resolve_data("multimedia")
    root.mkdir(parents=True, exist_ok=True)
    for name in ("tool_desc.json", "graph_desc.json"):
        if (src / name).exists():
            (root / name).write_bytes((src / name).read_bytes())
    base = [json.loads(x) for x in (src / "data.json").read_text().splitlines() if x.strip()]
    with (root / "data.json").open("w") as fh:
        for i in range(n):
            rec = dict(base[i % len(base)])
            rec["id"] = f"b{i:06d}"
            fh.write(json.dumps(rec) + "\n")
    return root


# ------------------------------------------------------------------------------------------------ runs


def _config(urls: list[str], concurrency: int) -> Any:
    from taskbench.llm.config import ModelConfig

    return ModelConfig(spec="openai-compatible/bench", options={
        "base_url": urls[0] if len(urls) == 1 else urls, "cache": False, "concurrency": concurrency,
        "max_retries": 2, "timeout": 60})


async def run_local(data: Path, out: Path, urls: list[str], concurrency: int) -> float:
    from taskbench.dataset.layout import load_dataset
    from taskbench.predict.runner import PredictOptions, predict_dataset

    ds = load_dataset(data)
    model = _config(urls, concurrency).open()
    t0 = time.perf_counter()
    try:
        s = await predict_dataset(model, ds.library, ds.samples, out, PredictOptions(concurrency=concurrency))
    finally:
        await model.aclose()
    assert s.complete, s.errors
    return time.perf_counter() - t0


async def run_ray(executor: Any, data: Path, out: Path, urls: list[str], concurrency: int, workers: int) -> float:
    from taskbench.executors.predict import apredict_sharded
    from taskbench.predict.runner import PredictOptions

    t0 = time.perf_counter()
    s = await apredict_sharded(data, _config(urls, concurrency), out, PredictOptions(concurrency=concurrency),
                               executor=executor, shards=workers)
    assert s.complete, s.errors
    return time.perf_counter() - t0


def bound(n: int, in_flight: int, endpoints: int, slots: int, delay: float) -> float:
    return math.ceil(n / min(in_flight, endpoints * slots)) * delay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2560)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=16, help="requests in flight per worker")
    ap.add_argument("--endpoints", type=int, default=4, help="servers of the 'several endpoints' rows")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only-local", action="store_true", help="the local rows only (no Ray)")
    ap.add_argument("--serve-only", action="store_true")
    args = ap.parse_args()
    if args.serve_only:
        asyncio.run(_serve(args.delay, args.slots))
        return

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    load0 = os.getloadavg()[0]
    procs = []
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = make_dataset(root / "data", args.n)
        try:
            servers = [start_server(args.delay, args.slots) for _ in range(args.endpoints)]
            procs = [p for p, _ in servers]
            all_urls = [u for _, u in servers]
            shapes = [(1, all_urls[:1]), (len(all_urls), all_urls)]

            def row(kind: str, workers: int, urls: list[str], wall: float, in_flight: int | None = None) -> None:
                in_flight = in_flight or workers * args.concurrency
                b = bound(args.n, in_flight, len(urls), args.slots, args.delay)
                rows.append({"run": kind, "workers": workers, "endpoints": len(urls), "in_flight": in_flight,
                             "wall_s": round(wall, 3), "bound_s": round(b, 3), "ratio": round(b / wall, 3)})
                print(f"{kind:>6} workers={workers} endpoints={len(urls)} wall={wall:6.2f}s bound={b:5.2f}s "
                      f"ratio={b / wall:.3f}", flush=True)

            for e, urls in shapes:
                wall = asyncio.run(run_local(data, root / f"local-{e}.jsonl", urls, args.concurrency))
                row("local", 1, urls, wall)
            # one process with as many requests in flight as the widest Ray row, over every endpoint
            wide = max(int(w) for w in args.workers.split(",")) * args.concurrency
            wall = asyncio.run(run_local(data, root / "local-wide.jsonl", all_urls, wide))
            row("local", 1, all_urls, wall, in_flight=wide)
            if not args.only_local:
                from taskbench.executors.ray import RayExecutor

                t0 = time.perf_counter()
                executor = RayExecutor(workers=max(int(w) for w in args.workers.split(","))).start()
                start = time.perf_counter() - t0
                print(f"ray cluster start: {start:.1f} s (not counted)", flush=True)
                try:
                    for w in (int(x) for x in args.workers.split(",")):
                        for e, urls in shapes:
                            wall = asyncio.run(run_ray(executor, data, root / f"ray-{w}-{e}.jsonl", urls,
                                                       args.concurrency, w))
                            row("ray", w, urls, wall)
                finally:
                    executor.close()
        finally:
            for p in procs:
                p.terminate()
                p.wait(10)
    load1 = os.getloadavg()[0]
    print(f"\nn={args.n} delay={args.delay}s slots/server={args.slots} concurrency/worker={args.concurrency} "
          f"cpus={os.cpu_count()} load average (1 min) before={load0:.2f} after={load1:.2f}\n")
    print("| run | workers | endpoints | in flight | wall s | bound s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['run']} | {r['workers']} | {r['endpoints']} | {r['in_flight']} | {r['wall_s']:.2f} | "
              f"{r['bound_s']:.2f} | {r['ratio']:.3f} |")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: v for k, v in vars(args).items() if k != "json"},
                                         "load": [load0, load1], "rows": rows}, indent=2, default=str))


if __name__ == "__main__":
    main()
