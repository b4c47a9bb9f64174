"""The escapes and gaps a red team found in the third round (issue 43, points 1-8), each as the attack it used,
scaled down to run in seconds.

Each attack proves that it got through with a marker the host can see: files the run made and was not charged
for, a supervisor that died of a string, Python objects the host built and kept, seconds the host waited past
the wall limit, a secret of the previous run found in memory, a control character that reached the terminal,
connections the host opened for the code, a run that outlived its wall limit. The test fails when the marker
shows. Everything runs in the real bwrap sandbox, except the rendering test, which renders a result by hand.
"""

from __future__ import annotations

import secrets

import pytest

from taskbench.envs.sandbox import Sandbox, SandboxLimits, sandbox_status
from taskbench.schema import ToolResult

STATUS = sandbox_status()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=f"no bwrap sandbox here: {STATUS.reason}")
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
