"""Harness throughput: how close does the Model wrapper get to the latency bound of a slow server?

A loopback OpenAI-compatible server (plain asyncio, HTTP/1.1 keep-alive, its own process so it does not share
the client's GIL) answers every chat completion after ``--delay`` seconds (default 0.2). The client fires
``--n`` requests through ``taskbench.llm.Model`` (openai-compatible provider, official SDK, cache off) with
``--concurrency`` in flight (default 64). The bound is ``concurrency / delay`` requests/s (320/s by default).

Reported: requests/s divided by the bound (target >= 0.9) and client CPU time per request
(``time.process_time`` delta / n; target < 1 ms), for each of the SDK's HTTP transports: ``aiohttp``
(``openai.DefaultAioHttpClient``, extra ``openai[aiohttp]``; the provider's default when importable) and
``httpx`` (httpx2, the fallback). For attribution the same load is also sent through the bare SDK
(``AsyncOpenAI``, no wrapper) and through bare ``aiohttp`` / ``httpx2`` (no SDK). With ``--repeat N`` each
client runs N times in the same process: the ratio is the fastest run's, the CPU figure the leanest run's (all
runs are kept in ``--json``). The 1-minute load average before and after is printed: the figures are only
meaningful on an otherwise idle machine.

Usage::

    .venv/bin/python benchmarks/bench_harness.py [--n 1280] [--concurrency 64] [--delay 0.2] [--repeat 3] [--only model]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

CANNED = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"ok": true}'}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
}


# ------------------------------------------------------------------------------------------------ server


def http_response(payload: bytes) -> bytes:
    """A complete HTTP/1.1 200 response with a JSON body."""
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(payload)}\r\n\r\n".encode() + payload)


async def serve_http(answer: Callable[[bytes, bytes], Awaitable[bytes]]) -> None:
    """A minimal keep-alive HTTP/1.1 server on a free loopback port (printed on stdout, then served forever):
    each request's head and body go to ``answer``, whose bytes are the whole response. The benchmarks' servers
    run this in their own process so that their CPU is not the client's."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                writer.write(await answer(head, body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


async def _serve(delay: float) -> None:
    response = http_response(json.dumps(CANNED).encode())

    async def answer(head: bytes, body: bytes) -> bytes:
        await asyncio.sleep(delay)
        return response

    await serve_http(answer)


def start_server(delay: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-only", "--delay", str(delay)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, port


# ------------------------------------------------------------------------------------------------ clients


async def _drive(n: int, concurrency: int, one: Any) -> tuple[float, float]:
    """Run ``n`` calls of ``one(i)`` with ``concurrency`` in flight; (wall seconds, CPU seconds)."""
    sem = asyncio.Semaphore(concurrency)

    async def job(i: int) -> None:
        async with sem:
            await one(i)

    ru0, cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time(), time.perf_counter()
    await asyncio.gather(*(job(i) for i in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    _LAST_SPLIT[:] = [ru1.ru_utime - ru0.ru_utime, ru1.ru_stime - ru0.ru_stime]
    return wall, cpu


_LAST_SPLIT: list[float] = [0.0, 0.0]
"""User and system CPU seconds of the last measured run."""


async def bench_model(base_url: str, n: int, concurrency: int, transport: str) -> dict[str, Any]:
    from taskbench.llm import get_model

    model = get_model(
        "openai-compatible/bench",
        base_url=base_url,
        concurrency=concurrency,
        cache=False,
        timeout=30.0,
        transport=transport,
    )
    assert model.provider.transport == transport  # type: ignore[attr-defined]
    messages = [{"role": "user", "content": "benchmark request"}]

    async def one(i: int) -> None:
        out = await model.generate(messages)
        assert out.text == '{"ok": true}'

    await _drive(concurrency, concurrency, one)  # warm-up: open the connections
    wall, cpu = await _drive(n, concurrency, one)
    await model.aclose()
    return {"wall": wall, "cpu": cpu}


async def bench_sdk(base_url: str, n: int, concurrency: int, transport: str) -> dict[str, Any]:
    import httpx2
    import openai

    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client_cls = openai.DefaultAioHttpClient if transport == "aiohttp" else httpx2.AsyncClient
    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0, http_client=client_cls(limits=limits))

    async def one(i: int) -> None:
        await client.chat.completions.create(
            model="bench", messages=[{"role": "user", "content": "benchmark request"}], temperature=0.0
        )

    await _drive(concurrency, concurrency, one)
    wall, cpu = await _drive(n, concurrency, one)
    await client.close()
    return {"wall": wall, "cpu": cpu}


async def bench_httpx(base_url: str, n: int, concurrency: int, transport: str) -> dict[str, Any]:
    import httpx2

    client = httpx2.AsyncClient(
        limits=httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    )
    payload = {"model": "bench", "messages": [{"role": "user", "content": "benchmark request"}]}

    async def one(i: int) -> None:
        resp = await client.post(base_url + "/chat/completions", json=payload)
        resp.json()

    await _drive(concurrency, concurrency, one)
    wall, cpu = await _drive(n, concurrency, one)
    await client.aclose()
    return {"wall": wall, "cpu": cpu}


async def bench_aiohttp(base_url: str, n: int, concurrency: int, transport: str) -> dict[str, Any]:
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))
    payload = {"model": "bench", "messages": [{"role": "user", "content": "benchmark request"}]}

    async def one(i: int) -> None:
        async with session.post(base_url + "/chat/completions", json=payload) as resp:
            await resp.json()

    await _drive(concurrency, concurrency, one)
    wall, cpu = await _drive(n, concurrency, one)
    await session.close()
    return {"wall": wall, "cpu": cpu}


def _aiohttp_available() -> bool:
    from taskbench.llm.providers.openai import aiohttp_available

    return aiohttp_available()


# (name, function, transport): Model and bare SDK over each SDK transport, then bare HTTP clients (no SDK)
RUNS: list[tuple[str, Any, str]] = [
    ("model/aiohttp", bench_model, "aiohttp"),
    ("model/httpx", bench_model, "httpx"),
    ("sdk/aiohttp", bench_sdk, "aiohttp"),
    ("sdk/httpx", bench_sdk, "httpx"),
    ("aiohttp", bench_aiohttp, "aiohttp"),
    ("httpx", bench_httpx, "httpx"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1280, help="requests per measured run")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.2, help="server answer delay in seconds")
    parser.add_argument(
        "--only",
        action="append",
        help="run only these clients (repeatable): a name such as 'model/aiohttp', or a prefix such as 'model'",
    )
    parser.add_argument("--repeat", type=int, default=1, help="measured runs per client; the best is reported")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--serve-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_only:
        asyncio.run(_serve(args.delay))
        return

    proc, port = start_server(args.delay)
    base_url = f"http://127.0.0.1:{port}/v1"
    bound = args.concurrency / args.delay
    results: dict[str, Any] = {
        "n": args.n,
        "concurrency": args.concurrency,
        "delay_s": args.delay,
        "bound_rps": bound,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    results["loadavg_before"] = os.getloadavg()
    have_aiohttp = _aiohttp_available()
    names = []
    try:
        for name, fn, transport in RUNS:
            if args.only and not any(name == o or name.split("/")[0] == o for o in args.only):
                continue
            if transport == "aiohttp" and not have_aiohttp:
                continue
            names.append(name)
            runs = []
            for _ in range(args.repeat):
                r = asyncio.run(fn(base_url, args.n, args.concurrency, transport))
                r["split"] = list(_LAST_SPLIT)
                runs.append(r)
            fastest = min(runs, key=lambda r: r["wall"])
            leanest = min(runs, key=lambda r: r["cpu"])
            rps = args.n / fastest["wall"]
            results[name] = {
                "requests_per_s": round(rps, 1),
                "ratio_to_bound": round(rps / bound, 3),
                "cpu_ms_per_request": round(1000 * leanest["cpu"] / args.n, 3),
                "user_ms_per_request": round(1000 * leanest["split"][0] / args.n, 3),
                "system_ms_per_request": round(1000 * leanest["split"][1] / args.n, 3),
                "runs": [
                    {"ratio_to_bound": round(args.n / r["wall"] / bound, 3),
                     "cpu_ms_per_request": round(1000 * r["cpu"] / args.n, 3)}
                    for r in runs
                ],
                "wall_s": round(fastest["wall"], 3),
            }
    finally:
        proc.terminate()
        proc.wait(10)
    results["loadavg_after"] = os.getloadavg()
    print(f"load average before {results['loadavg_before'][0]:.2f}, after {results['loadavg_after'][0]:.2f}")
    for name in names:
        if name in results:
            r = results[name]
            print(
                f"{name:13s} {r['requests_per_s']:7.1f} req/s  ratio {r['ratio_to_bound']:.3f} (target >= 0.9)  "
                f"CPU {r['cpu_ms_per_request']:.3f} ms/request (target < 1 ms; user {r['user_ms_per_request']:.3f}"
                f" + kernel {r['system_ms_per_request']:.3f})"
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
