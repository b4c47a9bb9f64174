"""Cost per execution of the code sandbox: p50 and p95 wall seconds over N runs of a trivial snippet.

Modes (each measured in the same process, one after the other):

- ``warm``: one sandbox (bwrap + supervisor) serves all runs; each run is a fresh process forked from the
  supervisor, with empty scratch directories (the default for agents);
- ``warm+tool``: the same, the snippet making one tool call through the socket to an async handler;
- ``cold``: a new bwrap sandbox per run (``warm=False``): namespaces, mounts, interpreter start-up, handshake;
- ``unsafe-local``: the unconfined subprocess backend, warm, for comparison;
- ``bare-python``: ``python -I -S -c pass`` as a plain subprocess: the floor any process-based runner pays
  for a cold start.

The time is what the caller of ``Sandbox.run`` waits (``time.perf_counter`` around the await). The 1-minute
load average before and after is printed: on a shared machine the figures move with it.

Usage::

    .venv/bin/python benchmarks/bench_sandbox.py [--n 200] [--only warm,cold] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

SNIPPET = "result = 1 + 1"
TOOL_SNIPPET = "result = add(a=1, b=1)"


def _quantiles(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=100, method="inclusive")
    return {"n": len(xs), "p50_ms": round(q[49] * 1000, 2), "p95_ms": round(q[94] * 1000, 2),
            "min_ms": round(xs[0] * 1000, 2), "max_ms": round(xs[-1] * 1000, 2),
            "mean_ms": round(statistics.fmean(xs) * 1000, 2)}


async def _timed(box: Any, code: str, n: int) -> list[float]:
    await box.run(code)  # start-up is not part of a warm run's cost
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = await box.run(code)
        times.append(time.perf_counter() - t0)
        if not out.ok or out.result != 2:
            raise SystemExit(f"benchmark snippet failed: {out.error}")
    return times


async def _modes(n: int, only: set[str]) -> dict[str, dict[str, float]]:
    from taskbench.envs.sandbox import Sandbox
    from taskbench.schema import ToolResult, ToolSpec

    async def handler(call):  # noqa: ANN001, ANN202
        return ToolResult(call_id=call.id, name=call.name, content=call.arguments["a"] + call.arguments["b"])

    tools = [ToolSpec(name="add", parameters={"type": "object", "properties": {"a": {}, "b": {}}})]
    out: dict[str, dict[str, float]] = {}
    if "warm" in only:
        async with Sandbox() as box:
            out["warm"] = _quantiles(await _timed(box, SNIPPET, n))
    if "warm+tool" in only:
        async with Sandbox(handler, tools) as box:
            out["warm+tool"] = _quantiles(await _timed(box, TOOL_SNIPPET, n))
    if "cold" in only:
        async with Sandbox(warm=False) as box:
            out["cold"] = _quantiles(await _timed(box, SNIPPET, n))
    if "unsafe-local" in only:
        async with Sandbox(unsafe_local=True) as box:
            out["unsafe-local"] = _quantiles(await _timed(box, SNIPPET, n))
    if "bare-python" in only:
        from taskbench.envs.sandbox.backend import interpreter

        exe = interpreter().executable
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            subprocess.run([exe, "-I", "-S", "-c", "pass"], check=True)
            times.append(time.perf_counter() - t0)
        out["bare-python"] = _quantiles(times)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="runs per mode (default 200)")
    parser.add_argument("--only", default="warm,warm+tool,cold,unsafe-local,bare-python",
                        help="comma-separated modes")
    parser.add_argument("--json", dest="json_out", help="write the figures here")
    args = parser.parse_args(argv)
    from taskbench.envs.sandbox import sandbox_status

    status = sandbox_status()
    if not status.available:
        print(f"sandbox unavailable: {status.reason}", file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    figures = asyncio.run(_modes(args.n, set(args.only.split(","))))
    load_after = os.getloadavg()[0]
    print(f"sandbox: bwrap {status.version}, {status.seccomp}, uid {status.uid}, {status.python}")
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after; {os.cpu_count()} CPUs")
    print(f"{'mode':<14}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}{'min ms':>10}{'max ms':>10}")
    for mode, q in figures.items():
        print(f"{mode:<14}{q['n']:>5}{q['p50_ms']:>10.2f}{q['p95_ms']:>10.2f}{q['min_ms']:>10.2f}{q['max_ms']:>10.2f}")
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump({"figures": figures, "load_before": load_before, "load_after": load_after,
                       "cpus": os.cpu_count(), "status": status.model_dump()}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
