"""Data-engine throughput: how close does `taskbench generate` get to the latency bound of a slow server?

A loopback OpenAI-compatible server (plain asyncio, HTTP/1.1 keep-alive, its own process) answers every chat
completion after ``--delay`` seconds (default 0.2) with the smallest JSON document valid against the request's
``response_format`` schema (so every answer parses; the critics reject most of them, which costs the same as
accepting them). The client runs :func:`taskbench.engine.generate.agenerate` on the bundled multimedia graph
(openai-compatible provider, cache off) for ``--n`` plan entries with ``--concurrency`` in flight.

The bound is ``n * calls_per_sample * delay / concurrency`` seconds (two calls per sample for two-stage).
Reported per method, after a warm-up run (imports, connections): the ratio bound / wall of the generation
pass (1.0 = every request overlapped perfectly; target >= 0.9), the client's CPU time per sample over the whole
call (prompt, schema, parse, critics, the fsynced record, and the output files; target < 5 ms) and, apart, the
time to write the output files (finalize: critics, dedup, statistics, over every record). Then the time of the
near-duplicate check over ``--dedup`` requests (default 8,000: the released TaskBench requests from ../shared
when present, else synthetic ones), with MinHash LSH and exactly (every pair), and MinHash's recall. The 1-minute load average before
and after is printed: the figures mean something only on an otherwise idle machine.

Usage::

    .venv/bin/python benchmarks/bench_generate.py [--n 640] [--concurrency 64] [--delay 0.2]
        [--method back-instruct --method two-stage] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_harness import http_response, serve_http  # noqa: E402

# ------------------------------------------------------------------------------------------------ server


async def _serve(delay: float) -> None:
    from taskbench.llm.providers.mock import minimal_instance

    answers: dict[str, bytes] = {}

    def reply(body: bytes) -> bytes:
        req = json.loads(body or b"{}")
        fmt = req.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        key = json.dumps(schema, sort_keys=True) if schema else ""
        if key not in answers:
            content = json.dumps(minimal_instance(schema)) if schema else "ok"
            answers[key] = http_response(json.dumps({
                "id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": "bench",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 800, "completion_tokens": 150, "total_tokens": 950},
            }).encode())
        return answers[key]

    async def answer(head: bytes, body: bytes) -> bytes:
        await asyncio.sleep(delay)
        return reply(body)

    await serve_http(answer)


def start_server(delay: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve-only", "--delay", str(delay)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


# ------------------------------------------------------------------------------------------------ client


async def bench(base_url: str, n: int, concurrency: int, method: str, out: Path) -> dict[str, Any]:
    from taskbench import bundled
    from taskbench.engine.generate import GenerateOptions, agenerate
    from taskbench.engine.output import finalize_dataset
    from taskbench.graph.build import graph_from_path
    from taskbench.llm import get_model

    graph = graph_from_path(bundled.path("multimedia"))
    model = get_model("openai-compatible/bench", base_url=base_url, concurrency=concurrency, cache=False,
                      timeout=60.0, max_retries=0)
    options = GenerateOptions(n=n, seed=1, method=method, concurrency=concurrency)
    await agenerate(graph, model, out.with_name("warmup"), options.model_copy(update={"n": concurrency}))
    cpu0, t0 = time.process_time(), time.perf_counter()
    summary = await agenerate(graph, model, out, options)
    total, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    f0 = time.perf_counter()
    finalize_dataset(out, graph.library, graph, keep="both")
    finalize = time.perf_counter() - f0
    await model.aclose()
    assert summary.complete and summary.written == n, summary
    # summary.seconds: the runner's pass (prompts, calls, parsing, critics, records); the rest of ``total`` is
    # the output files, timed again on their own as ``finalize``
    return {"wall": summary.seconds, "total": total, "cpu": cpu, "finalize": finalize, "calls": summary.calls}


def _requests(n: int) -> tuple[list[str], str]:
    """``n`` real requests (the released TaskBench user_requests.json files under ../shared, all domains), else
    synthetic ones (every 10th a reworded copy of an earlier one)."""
    import random

    shared = Path(os.environ.get("TASKBENCH_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    texts: list[str] = []
    for path in sorted((shared / "reference" / "taskbench").glob("*/user_requests.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.append(json.loads(line)["user_request"])
    if len(texts) >= n:
        return texts[:n], "the released TaskBench requests"
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(3000)]
    texts = []
    for i in range(n):
        if i % 10 == 9:
            base = texts[rng.randrange(len(texts))].split()
            rng.shuffle(base)
            texts.append(" ".join(base))
        else:
            texts.append(" ".join(rng.choices(vocab, weights=[1 / (k + 1) for k in range(3000)],
                                              k=rng.randint(20, 40))))
    return texts, "synthetic requests"


def bench_dedup(n: int) -> dict[str, Any]:
    """Near-duplicate detection over ``n`` requests: the method ``auto`` picks, and for up to 8,000 requests the
    exact pairwise scores to measure MinHash's recall against."""
    from taskbench.engine.dedup import near_duplicates

    texts, source = _requests(n)
    out: dict[str, Any] = {"n": len(texts), "source": source}
    t0 = time.perf_counter()
    fast = near_duplicates(texts, method="minhash")
    out["minhash_s"] = round(time.perf_counter() - t0, 3)
    out["minhash_flagged"] = sum(1 for f in fast if f is not None)
    if len(texts) <= 8000:
        t0 = time.perf_counter()
        exact = near_duplicates(texts, method="exact")
        out["exact_s"] = round(time.perf_counter() - t0, 3)
        out["exact_flagged"] = sum(1 for f in exact if f is not None)
        found = sum(1 for a, b in zip(fast, exact, strict=True) if b is not None and a is not None)
        out["minhash_recall"] = round(found / out["exact_flagged"], 4) if out["exact_flagged"] else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=640, help="plan entries per run")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.2, help="server answer delay in seconds")
    parser.add_argument("--method", action="append", help="back-instruct (default) and/or two-stage, ...")
    parser.add_argument("--dedup", type=int, default=8000, help="requests for the near-duplicate timing (0: skip)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--serve-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_only:
        asyncio.run(_serve(args.delay))
        return
    methods = args.method or ["back-instruct", "two-stage"]
    proc, port = start_server(args.delay)
    base_url = f"http://127.0.0.1:{port}/v1"
    results: dict[str, Any] = {"n": args.n, "concurrency": args.concurrency, "delay_s": args.delay,
                               "cpus": os.cpu_count(), "python": sys.version.split()[0],
                               "loadavg_before": os.getloadavg()}
    try:
        for method in methods:
            with tempfile.TemporaryDirectory() as tmp:
                r = asyncio.run(bench(base_url, args.n, args.concurrency, method, Path(tmp) / "gen"))
            per_sample = r["calls"] / args.n
            bound = args.n * per_sample * args.delay / args.concurrency
            results[method] = {
                "wall_s": round(r["wall"], 3),
                "total_s": round(r["total"], 3),
                "bound_s": round(bound, 3),
                "ratio_to_bound": round(bound / r["wall"], 3),
                "samples_per_s": round(args.n / r["wall"], 1),
                "cpu_ms_per_sample": round(1000 * r["cpu"] / args.n, 3),
                "finalize_s": round(r["finalize"], 3),
                "calls_per_sample": per_sample,
            }
    finally:
        proc.terminate()
        proc.wait(10)
    if args.dedup:
        results["dedup"] = bench_dedup(args.dedup)
    results["loadavg_after"] = os.getloadavg()
    print(f"load average before {results['loadavg_before'][0]:.2f}, after {results['loadavg_after'][0]:.2f}; "
          f"n={args.n}, concurrency={args.concurrency}, delay={args.delay}s")
    for method in methods:
        r = results[method]
        print(f"{method:14s} generation {r['wall_s']:.2f} s (with the files {r['total_s']:.2f} s), bound {r['bound_s']:.2f} s, ratio {r['ratio_to_bound']:.3f} "
              f"(target >= 0.9), {r['samples_per_s']:.1f} samples/s, CPU {r['cpu_ms_per_sample']:.2f} ms/sample "
              f"(target < 5), output files {r['finalize_s']:.2f} s")
    if args.dedup:
        d = results["dedup"]
        exact = (f"; exact {d['exact_s']:.2f} s ({d['exact_flagged']} flagged), MinHash recall {d['minhash_recall']}"
                 if "exact_s" in d else "")
        print(f"near duplicates over {d['n']} {d['source']}: MinHash {d['minhash_s']:.2f} s "
              f"({d['minhash_flagged']} flagged){exact}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
