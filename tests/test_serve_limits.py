"""`taskbench serve` bounds what a client can make it hold (issue 43, point 16).

- a body announced larger than ``--max-request-mb`` gets a 413 before a byte of it is read, and one sent in
  chunks a 413 as soon as it passes the limit: the server's memory stays flat under 200 MB bodies;
- a client that does not send its request (headers and body) within ``--request-timeout`` seconds (silent,
  dribbling headers, a body cut short) gets a 408 and is closed, so slow clients hold nothing for long and a
  good request is still answered while they wait;
- the model's own time is not the client's: an answer that takes longer than the timeout is still sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD = json.dumps({"model": "echo", "messages": [{"role": "user", "content": "hi"}]}).encode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _ask(port: int, body: bytes = GOOD, timeout: float = 30) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskbench", "serve", "--model", "mock/echo", "--served-name", "echo", "--port",
         str(port), "--request-timeout", "2", "--max-request-mb", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "TASKBENCH_CACHE": str(tmp_path_factory.mktemp("c"))},
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if _ask(port, timeout=2)[0] == 200:
                break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"serve did not start: {proc.communicate()[1][-2000:]}")
        time.sleep(0.2)
    yield port, proc
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err[-3000:]


def _read_all(s: socket.socket) -> bytes:
    """What the server sends until it closes the connection."""
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except OSError:  # a reset after the answer
        pass
    return data


def _status(data: bytes) -> int:
    head = data.split(b"\r\n", 1)[0].split()
    return int(head[1]) if len(head) > 1 and head[1].isdigit() else -1


def _body(data: bytes) -> dict:
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def test_a_body_announced_too_large_is_refused_before_it_is_read(server):
    port, proc = server
    before = _rss_kb(proc.pid)
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 200000000\r\n\r\n" + b"x" * 65536)
            start = time.monotonic()
            data = _read_all(s)
            assert time.monotonic() - start < 5
        assert _status(data) == 413 and _body(data)["error"]["code"] == "request_too_large"
    assert _rss_kb(proc.pid) - before < 50_000
    assert _ask(port)[0] == 200


def test_a_chunked_body_is_cut_off_at_the_limit(server):
    port, proc = server
    before = _rss_kb(proc.pid)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        sent = 0
        try:
            while sent < 200 * 1024 * 1024:
                s.sendall(b"100000\r\n" + b"y" * 0x100000 + b"\r\n")
                sent += 0x100000
        except OSError:  # the server answered and closed
            pass
        data = _read_all(s)
    assert _status(data) == 413
    assert sent < 50 * 1024 * 1024  # refused long before 200 MB went through
    assert _rss_kb(proc.pid) - before < 50_000


@pytest.mark.parametrize("sends", [b"", b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n",
                                   b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"mo"],
                         ids=["silent", "headers-unfinished", "body-unfinished"])
def test_a_slow_client_gets_a_408_and_is_closed(server, sends):
    port, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(sends)
        start = time.monotonic()
        data = _read_all(s)  # until the server closes
        took = time.monotonic() - start
    assert 1.5 < took < 8, took
    assert _status(data) == 408


def test_a_dribbling_client_is_cut_at_the_deadline_and_good_requests_go_on(server):
    port, _ = server
    slow = []
    for _ in range(40):  # 40 slowloris connections at once
        s = socket.create_connection(("127.0.0.1", port), timeout=15)
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
        slow.append(s)
    try:
        assert _ask(port, timeout=10)[0] == 200  # answered while they wait
        start = time.monotonic()
        for s in slow:
            try:
                s.sendall(b"X")  # one byte more keeps a naive server waiting
            except OSError:
                pass
        closed = 0
        for s in slow:
            try:
                s.settimeout(max(0.1, 10 - (time.monotonic() - start)))
                while s.recv(4096):
                    pass
                closed += 1
            except OSError:
                closed += 1
        assert closed == len(slow) and time.monotonic() - start < 10
    finally:
        for s in slow:
            s.close()


def test_the_models_time_is_not_the_clients():
    """In-process: a model that takes 2.5 s answers though the client deadline is 1 s."""
    import uvicorn

    from taskbench.llm import get_model
    from taskbench.llm.server import create_app, limit_requests, timed_protocol

    model = get_model("mock/echo", cache=False, delay=2.5)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(limit_requests(create_app(model, served_name="echo"), max_bytes=1024 * 1024),
                            log_level="warning", lifespan="off", http=timed_protocol(1.0))
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not srv.started:
            time.sleep(0.05)
        status, body = _ask(port)
        assert status == 200, body
        assert json.loads(body)["choices"][0]["message"]["content"] == "hi"
    finally:
        srv.should_exit = True
        thread.join(10)
        asyncio.run(model.aclose())
