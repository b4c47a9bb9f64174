"""Execution cost: graph execution throughput (``evaluate --execute``) and MCP call round trips.

``graphs``: the bundled gold samples of the three domains, repeated to ``--n`` samples per domain (ids made
unique), are scored against predictions that are the gold itself (every sample succeeds) with
:func:`taskbench.eval.execution.score_execution` (two executions and one comparison per sample). Reported:
samples per second and microseconds per sample, the best of ``--repeat`` runs.

``mcp``: ``--calls`` sequential ``echo`` calls through :class:`taskbench.envs.mcp.MCPEnvironment` to the test
server (``tests/data/mcp_server.py``, a real subprocess over stdio); reported: start-up seconds, p50 / p95 /
max milliseconds per call, and the seconds shutdown took.

The 1-minute load average is printed before and after: the figures mean little on a busy machine.

Usage::

    .venv/bin/python benchmarks/bench_execution.py graphs [--n 3000] [--repeat 3]
    .venv/bin/python benchmarks/bench_execution.py mcp [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bench_graphs(n: int, repeat: int) -> None:
    from taskbench.bundled import path as bundled_path
    from taskbench.dataset.layout import read_raw_records
    from taskbench.eval.execution import score_execution
    from taskbench.graph.loaders import load_tool_library

    for domain in ("huggingface", "multimedia", "dailylifeapis"):
        root = bundled_path(domain)
        lib = load_tool_library(root / "tool_desc.json", None, name=domain)
        base = read_raw_records(root / "data.json")
        gold = [{**base[i % len(base)], "id": f"{i:08d}"} for i in range(n)]
        preds = [{"id": g["id"], "result": {k: g[k] for k in ("task_steps", "task_nodes", "task_links")}} for g in gold]
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            rows = score_execution(gold, preds, lib)
            best = min(best, time.perf_counter() - t0)
        assert all(r.success for r in rows)
        nodes = sum(len(g["task_nodes"]) for g in gold)
        print(f"{domain:14s} n={n} nodes={nodes}: {n / best:8.0f} samples/s, {1e6 * best / n:6.0f} us/sample "
              f"(best of {repeat})")


def bench_mcp(calls: int) -> None:
    from taskbench.envs.mcp import MCPEnvironment
    from taskbench.schema import ToolCall

    server = ROOT / "tests" / "data" / "mcp_server.py"
    t0 = time.perf_counter()
    env = MCPEnvironment([sys.executable, str(server)])
    startup = time.perf_counter() - t0

    async def run() -> list[float]:
        out = []
        for i in range(calls):
            t = time.perf_counter()
            r = await env.call(ToolCall(id=str(i), name="echo", arguments={"text": f"hello {i}"}))
            out.append(time.perf_counter() - t)
            assert r.ok, r.error
        return out

    times = sorted(asyncio.run(run()))
    t0 = time.perf_counter()
    env.close()
    shutdown = time.perf_counter() - t0
    p50 = statistics.median(times) * 1e3
    p95 = times[int(0.95 * (len(times) - 1))] * 1e3
    print(f"mcp echo: start-up {startup:.2f} s; {calls} calls p50 {p50:.2f} ms, p95 {p95:.2f} ms, "
          f"max {times[-1] * 1e3:.2f} ms; shutdown {shutdown:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    g = sub.add_parser("graphs")
    g.add_argument("--n", type=int, default=3000)
    g.add_argument("--repeat", type=int, default=3)
    m = sub.add_parser("mcp")
    m.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    if args.what == "graphs":
        bench_graphs(args.n, args.repeat)
    else:
        bench_mcp(args.calls)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
