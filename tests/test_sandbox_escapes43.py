"""The escapes and gaps a red team found in the third round (issue 43, points 1-8), each as the attack it used,
scaled down to run in seconds.

Each attack proves that it got through with a marker the host can see: files the run made and was not charged
for, a supervisor that died of a string, Python objects the host built and kept, seconds the host waited past
the wall limit, a secret of the previous run found in memory, a control character that reached the terminal,
connections the host opened for the code, a run that outlived its wall limit. The test fails when the marker
shows. Everything runs in the real bwrap sandbox, except the rendering test, which renders a result by hand.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from taskbench.cli.sandbox import _render
from taskbench.envs.sandbox import Sandbox, SandboxLimits, SandboxResult, sandbox_status
from taskbench.schema import CodeError, ToolCall, ToolResult

STATUS = sandbox_status()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=f"no bwrap sandbox here: {STATUS.reason}")
ROOT = Path(__file__).resolve().parents[1]
TOKEN = "tb-secret-" + secrets.token_hex(12)
ECHO = [{"name": "echo", "description": "echo", "parameters": {"type": "object"}}]
# The bounds these attacks run into (docs/sandbox.md): values of one call and of one run's calls, values of a
# result, files per MB of scratch.
CALL_VALUES, RUN_VALUES, RESULT_VALUES = 50_000, 200_000, 200_000


def echo(call):
    return ToolResult(call_id=call.id, name=call.name, content={"n": len(call.arguments)})


@pytest.fixture()
def box():
    if not STATUS.available:
        pytest.skip(f"no bwrap sandbox here: {STATUS.reason}")
    sb = Sandbox(echo, ECHO, limits=SandboxLimits(wall_seconds=15, cpu_seconds=5))
    yield sb
    sb.close()


TRY = (
    "def attempt(fn):\n"
    "    try:\n"
    "        fn()\n"
    "        return 'DONE'\n"
    "    except OSError as e:\n"
    "        return __import__('errno').errorcode.get(e.errno, str(e.errno))\n"
)


def run(box, code, **limits):
    return box.run_sync(code, limits=limits or None)


def values(value) -> int:
    """How many JSON values ``value`` holds (containers included)."""
    n, stack = 0, [value]
    while stack:
        item = stack.pop()
        n += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return n


# ================================================================================================ 1: inodes


@needs_sandbox
def test_empty_files_are_capped(box):
    # 417k empty files held 415 MB of kernel memory while the run was charged nothing; here 30k in a 16 MB /tmp
    # (a cap of 256 per MB is 4,096 files), under a memory limit they would not reach at 1 KB each
    code = ("import os\nmade = 0\nfor i in range(30_000):\n"
            "    os.close(os.open(f'/tmp/f{i}', os.O_CREAT | os.O_WRONLY))\n    made += 1\n"
            "import time\ntime.sleep(0.3)\nresult = f'MADE {made}'")
    out = run(box, code, disk_mb=16, memory_mb=64)
    assert out.result is None and out.limit == "output", (out.result, out.limit, out.error)
    assert "files" in out.error.message, out.error.message
    assert run(box, "import os\nresult = len(os.listdir('/tmp'))").result == 0


@needs_sandbox
def test_inodes_and_xattrs_are_charged_as_memory(box):
    # 12k files in each of the three scratch directories: each directory stays under its cap (16,384 at 64 MB),
    # but together they hold about 36 MB of kernel memory, over a 32 MB limit, with no block used
    code = ("import os, time\nfor d in ('/work', '/tmp', '/dev/shm'):\n    for i in range(12_000):\n"
            "        os.close(os.open(f'{d}/f{i}', os.O_CREAT | os.O_WRONLY))\n"
            "time.sleep(0.3)\nresult = 'HELD 36k inodes'")
    out = run(box, code, memory_mb=32)
    assert out.result is None and out.limit == "memory", (out.result, out.limit, out.error)
    # extended attributes take kernel memory too (60 KB each here), counted by the kernel in the same units
    code = ("import os, time\nfor i in range(600):\n    p = f'/tmp/x{i}'\n    open(p, 'w').close()\n"
            "    os.setxattr(p, 'user.a', b'x' * 60_000)\ntime.sleep(0.3)\nresult = 'HELD 36 MB of xattrs'")
    out = run(box, code, memory_mb=32)
    assert out.result is None and out.limit in ("memory", "output"), (out.result, out.limit, out.error)


@needs_sandbox
def test_pages_shared_after_fork_are_divided(box):
    # 40 MB written by the parent, then 3 children that only read it: counted whole in each of the 4 processes
    # that is 160 MB, over 64 MB; divided among them it is 40 MB, and the run must not be stopped
    code = ("import os, time\nblock = bytearray(40 << 20)\nfor j in range(0, len(block), 4096):\n    block[j] = 1\n"
            "kids = []\nfor i in range(3):\n    pid = os.fork()\n    if pid == 0:\n        time.sleep(0.6)\n"
            "        os._exit(0)\n    kids.append(pid)\nfor pid in kids:\n    os.waitpid(pid, 0)\nresult = 'ok'")
    out = run(box, code, memory_mb=64)
    assert out.ok and out.result == "ok", (out.limit, out.error, out.max_rss_mb)


# ================================================================================================ 2: any string


@needs_sandbox
@pytest.mark.parametrize("code", [
    'result = "\\ud800"',
    'result = {"\\udfff": ["a\\ud800b"]}',
    'raise ValueError("\\ud800")',
    'print("\\ud800")\nimport sys\nsys.stderr.write("\\udc80")\nresult = 1',
    'import os\nos.write(1, b"\\xed\\xa0\\x80")\nresult = "ok"',
], ids=["result", "nested", "error", "stdout", "raw-bytes"])
def test_a_lone_surrogate_does_not_kill_the_supervisor(box, code):
    assert run(box, "result = 0").result == 0
    worker = box._worker
    out = run(box, code)
    assert out.error is None or out.error.type != "SandboxError", out.error
    json.loads(out.model_dump_json())  # the result survives being written
    assert box._worker is worker  # its pid 1 is still the same
    assert run(box, "result = 'next'").result == "next"


@needs_sandbox
def test_a_lone_surrogate_in_a_tool_name_or_arguments(box):
    # through call_tool, and straight on the tool socket as JSON escapes
    raw = (b'{"name": "\\ud800x", "arguments": {"k\\udc00": "v\\ud800", "b": "\xed\xa0\x80"}}\n')
    out = run(box, 'try:\n    call_tool("\\ud800x", {"k\\udc00": "v\\ud800"})\nexcept ToolError:\n    pass\n'
                   'import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect("/run/taskbench/tools.sock")\n'
                   f's.sendall({raw!r})\nreply = s.makefile("rb").readline()\n'
                   'result = [echo(s="\\udfff"), reply.decode("ascii")]')
    assert out.ok, out.error
    text = out.model_dump_json()
    json.loads(text)
    assert len(out.calls) == 3 and "\ufffd" in text, text[:300]


@needs_sandbox
def test_a_lone_surrogate_in_the_code_itself(box):
    out = run(box, "x = '\ud800'\nresult = 1")  # a real surrogate character in the code the caller passes
    json.loads(out.model_dump_json())
    assert out.error is None or out.error.type != "SandboxError", out.error


@needs_sandbox
def test_a_forged_report_with_surrogates(box):
    forge = ("import os, sys\nsys.stdout.flush()\nfd = max(int(f) for f in os.listdir('/proc/self/fd'))\n"
             "os.write(fd, b'{\"error\": {\"type\": \"E\\\\ud800\", \"message\": \"\\xed\\xa0\\x80\", \"line\": 1, "
             "\"traceback\": null}, \"result\": \"\\\\\"\\\\\\\\ud800\\\\\"\", \"limit\": null}')\nos._exit(0)\n")
    assert run(box, "result = 0").result == 0
    worker = box._worker
    out = run(box, forge)
    json.loads(out.model_dump_json())
    assert out.error is not None and out.error.type != "SandboxError", out.error
    assert box._worker is worker


@needs_sandbox
def test_cli_json_survives_a_surrogate_tool_name():
    code = 'try:\n    call_tool("\\ud800")\nexcept Exception:\n    pass\nresult = "\\udbff"\n'
    proc = subprocess.run([sys.executable, "-m", "taskbench", "sandbox", "run", "-", "--json"], input=code,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert len(data["calls"]) == 1 and data["result"] is not None


# ================================================================================================ 3: amplification


@needs_sandbox
def test_values_per_call_are_capped_before_parsing():
    # 1 MB of `{}` is 250k Python dicts on the host (and a copy in each ToolCall): 16 such calls were 723 MB
    kept: list[ToolCall] = []

    def keep(call):
        kept.append(call)
        return {"ok": True}

    with Sandbox(keep, ECHO, limits=SandboxLimits(wall_seconds=30)) as sb:
        out = sb.run_sync("ok = refused = 0\nfor i in range(5):\n    try:\n        echo(v=[{}] * 250_000)\n"
                          "        ok += 1\n    except ToolError as e:\n        refused += 1\n        why = e.error\n"
                          "result = [ok, refused, why if refused else '']")
    held = sum(values(c.arguments) for c in kept)
    assert out.result[:2] == [0, 5] and held == 0, (out.result, held)
    assert "values" in out.result[2], out.result


@needs_sandbox
def test_values_per_run_are_capped_before_parsing():
    kept: list[ToolCall] = []

    def keep(call):
        kept.append(call)
        return {"ok": True}

    with Sandbox(keep, ECHO, limits=SandboxLimits(wall_seconds=30)) as sb:
        code = ("ok = refused = 0\nfor i in range(12):\n    try:\n        echo(v=[{}] * 40_000)\n        ok += 1\n"
                "    except ToolError:\n        refused += 1\nresult = [ok, refused]")
        first = sb.run_sync(code)
        second = sb.run_sync(code)  # the cap is per run: the next run has its own
    held = sum(values(c.arguments) for c in kept)
    # each call is 40,004 values (the call, its name, its arguments, the list and 40,000 dicts): four fit a run
    assert first.result == second.result == [4, 8], (first.result, second.result)
    assert held <= 2 * RUN_VALUES, held


def test_values_are_counted_exactly_without_parsing():
    import random

    from taskbench.envs.sandbox._json import count_values

    rng = random.Random(43)
    scalars = [1, 2.5, None, True, "", "a,[{}]", '\\', 'x"y', '"""', "\u00e9[,", ":", "[]{}"]

    def gen(depth=0):
        r = rng.random()
        if depth > 5 or r < 0.3:
            return rng.choice(scalars)
        if r < 0.65:
            return [gen(depth + 1) for _ in range(rng.randint(0, 5))]
        return {rng.choice(["k", "[", ",", 'q"', "\\", "{}", ":"]) + str(i): gen(depth + 1)
                for i in range(rng.randint(0, 4))}

    for _ in range(2000):
        value = gen()
        for style in ({}, {"indent": 1}, {"separators": (",", ":")}, {"ensure_ascii": False}):
            text = json.dumps(value, **style).encode()
            assert count_values(text) == values(value), text
            assert (count_values(text, 10) > 10) == (values(value) > 10), text
    assert count_values(json.dumps([""] * 300_000).encode(), CALL_VALUES) > CALL_VALUES


@needs_sandbox
def test_values_of_a_result_are_capped(box):
    out = run(box, "result = [{}] * 300_000")
    assert out.result is None and out.error is not None and out.error.type == "ResultError", out.error
    assert "values" in out.error.message
    assert run(box, "result = list(range(100_000))").result[-1] == 99_999


# ================================================================================================ 4: sync handlers


@needs_sandbox
def test_a_sync_handler_does_not_hold_the_host_past_the_wall_limit():
    release = threading.Event()

    def stuck(call):  # a plain function: it runs in a thread the host cannot stop
        release.wait(12)
        return {"late": True}

    async def main():
        async with Sandbox(stuck, ECHO, limits=SandboxLimits(wall_seconds=1)) as sb:
            return await sb.run("result = echo()")

    start = time.monotonic()
    try:
        out = asyncio.run(main())
        elapsed = time.monotonic() - start
    finally:
        release.set()
    assert out.limit == "wall", (out.limit, out.error)
    assert elapsed < 6, elapsed  # 1 s of wall time, sandbox start and stop; before: the handler's 12 s


@needs_sandbox
def test_stuck_sync_handlers_are_capped():
    release = threading.Event()
    calls = []

    def stuck(call):
        calls.append(call)
        release.wait(30)
        return {"late": True}

    code = ("import threading\nerrors = []\n"
            "def one():\n    try:\n        echo()\n    except ToolError as e:\n        errors.append(e.error)\n"
            "threads = [threading.Thread(target=one) for _ in range(12)]\n"
            "for t in threads:\n    t.start()\nimport time\ntime.sleep(5)\n")
    before = threading.active_count()
    try:
        with Sandbox(stuck, ECHO, limits=SandboxLimits(wall_seconds=0.8)) as sb:
            outs = [sb.run_sync(code) for _ in range(4)]  # each run leaves up to 12 calls stuck in the handler
            during = threading.active_count() - before
    finally:
        release.set()
    assert all(o.limit == "wall" for o in outs), [o.limit for o in outs]
    assert during <= 32 + 2 and len(calls) <= 32, (during, len(calls))  # 32 handler threads, the loop, a spare


# ================================================================================================ 5: warm memory


KILL_OTHERS = ("import os, signal\nme = os.getpid()\n"
               "others = [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, me)]\n"
               "for p in others:\n    os.kill(p, signal.{sig})\n")


@needs_sandbox
@pytest.mark.parametrize("then", ["", KILL_OTHERS.format(sig="SIGKILL")], ids=["warm", "fork-server-killed"])
def test_the_next_run_cannot_read_the_previous_runs_data_from_memory(box, then):
    half = len(TOKEN) // 2
    left, right = TOKEN[:half], TOKEN[half:]
    plant = f"secret = {left!r} + {right!r}\nprint(secret * 40)\nresult = secret * 40\n" + then
    # search every readable mapping of this process for the token, found as its two halves side by side (the
    # code holds only the halves, apart)
    scan = (f"import re\nleft, right = {left.encode()!r}, {right.encode()!r}\nhits = 0\n"
            "mem = open('/proc/self/mem', 'rb', 0)\n"
            "for line in open('/proc/self/maps'):\n"
            "    span, perms = line.split()[:2]\n"
            "    if not perms.startswith('r') or '[v' in line:\n        continue\n"
            "    lo, hi = (int(x, 16) for x in span.split('-'))\n"
            "    try:\n        mem.seek(lo)\n        data = mem.read(hi - lo)\n    except OSError:\n        continue\n"
            "    for m in re.finditer(re.escape(left), data):\n"
            "        hits += data[m.end():m.end() + len(right)] == right\n"
            "result = hits")
    first = run(box, plant)
    assert first.ok and first.result.startswith(TOKEN)
    second = run(box, scan)
    assert second.ok and second.result == 0, (second.result, second.error)


@needs_sandbox
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSTOP", "SIGTERM", "SIGUSR1", "SIGSEGV"])
def test_the_fork_server_outlives_what_a_run_does_to_it(box, sig):
    # the runs are forked by a fork server; a run can signal it (same uid): the sandbox stays usable, and the
    # same worker serves on (a killed or stopped fork server is replaced by a fresh interpreter, not a sandbox)
    assert run(box, "result = 0").result == 0
    worker = box._worker
    out = run(box, KILL_OTHERS.format(sig=sig) + "result = len(others)")
    assert out.ok and out.result == 1, (out.result, out.error)
    for i in range(2):
        assert run(box, f"result = {i}").result == i
    assert box._worker is worker
    # the fork server, fresh or not, is as closed to the run as the supervisor: its memory and descriptors
    probe = TRY + ("import os\nme = os.getpid()\n"
                   "others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, me)]\n"
                   "result = [[attempt(lambda: open(f'/proc/{p}/mem', 'r+b').close()),\n"
                   "           attempt(lambda: os.listdir(f'/proc/{p}/fd'))] for p in others]")
    assert run(box, probe).result == [["EACCES", "EACCES"]]


# ================================================================================================ 6: terminal


CONTROL = ("\x1b]52;c;c2VjcmV0\x07", "\x1b]0;pwned\x07", "\x1b[2K", "\x9b31m", "\r", "\x08", "\u202e")


def _no_controls(text: str) -> bool:
    return not any(c in text for c in ("\x1b", "\x07", "\x9b", "\r", "\x08", "\u202e"))


def test_cli_escapes_everything_a_run_printed(capsys):
    fake = "\n-- result: 42\n"
    result = SandboxResult(
        stdout="out " + "".join(CONTROL) + fake, stderr="err " + "".join(CONTROL) + fake,
        error=CodeError(type="Value\x1b]0;t\x07Error", message="boom" + "".join(CONTROL) + fake, line=3,
                        traceback="Traceback\n  x" + "".join(CONTROL) + fake),
        calls=[ToolCall(id="1", name="to\x1b]52;c;eA==\x07ol" + fake)],
        results=[ToolResult(call_id="1", name="t", content=1)],
    )
    _render(result)
    out, err = capsys.readouterr()
    assert _no_controls(out) and _no_controls(err), (out, err)
    lines = (out + err).splitlines()
    assert not [ln for ln in lines if ln.startswith("-- result")], lines  # no result line: the run set none
    assert err.splitlines()[-1].startswith("-- bwrap")


@needs_sandbox
def test_cli_escapes_a_real_runs_output():
    code = ("import sys\nsys.stdout.write('\\x1b]52;c;c2VjcmV0\\x07\\n-- result: 42\\n')\n"
            "sys.stderr.write('\\x1b]0;title\\x07\\n-- result: 42\\n')\n"
            "raise ValueError('\\x1b[2K\\n-- result: 42')\n")
    proc = subprocess.run([sys.executable, "-m", "taskbench", "sandbox", "run", "-"], input=code,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 1, proc.stderr
    assert _no_controls(proc.stdout) and _no_controls(proc.stderr), (proc.stdout, proc.stderr)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert not [ln for ln in lines if ln.startswith("-- result")], lines


# ================================================================================================ 7: relay


@needs_sandbox
def test_connections_through_an_allowed_port_are_capped():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(512)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept():
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    # straight to the relay's Unix socket (it is bound into the sandbox), bypassing the in-sandbox listener
    code = (f"import socket, time\nconns = []\nfor i in range(120):\n"
            f"    s = socket.socket(socket.AF_UNIX)\n    s.connect('/run/taskbench/port-{port}.sock')\n"
            "    s.sendall(b'x')\n    conns.append(s)\ntime.sleep(2)\nresult = len(conns)")
    try:
        with Sandbox(allow_ports=[port], limits=SandboxLimits(wall_seconds=15, open_files=256)) as sb:
            out = sb.run_sync(code)
        time.sleep(0.3)
    finally:
        done.set()
        thread.join(2)
        for conn in accepted:
            conn.close()
        server.close()
    assert out.ok, out.error
    assert len(accepted) <= 32, len(accepted)


# ================================================================================================ 8: sampler


@needs_sandbox
def test_the_wall_limit_holds_while_the_sampler_is_slowed(box):
    # many mappings in many busy processes make each memory sample slow (1.8 million mappings ended a 3 s run at
    # 8.3 s); the main process blocks the wall-time alarm, so only the supervisor can end the run
    code = ("import ctypes, os, signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
            "libc = ctypes.CDLL(None, use_errno=True)\nlibc.mmap.restype = ctypes.c_void_p\n"
            "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]\n"
            "def grow():\n    for i in range(60_000):\n        libc.mmap(None, 4096, i % 2, 0x22, -1, 0)\n"
            "    while True:\n        pass\n"
            "for k in range(15):\n    if os.fork() == 0:\n        grow()\ngrow()\n")
    out = run(box, code, wall_seconds=1.5, processes=16, cpu_seconds=30)
    assert out.limit == "wall", (out.limit, out.error)
    assert out.seconds < 1.5 + 0.5 + 0.8, out.seconds
