"""The seven escapes a red team found (issue 18), each as the attack program it used.

Every attack proves its escape with a marker (a socket it created, bytes it wrote into init, memory it kept past
its bound, a secret the next run read, a host-side exception, calls the host kept): the test fails when the
marker shows. Like tests/test_sandbox_attacks.py, everything runs in the real bwrap sandbox; nothing here
reaches beyond the sandbox but the host's own /proc, read to check that nothing changed.
"""

from __future__ import annotations

import errno
import os
import platform
import secrets

import pytest

from taskbench.envs.sandbox import Sandbox, SandboxLimits, sandbox_status
from taskbench.schema import ToolResult

STATUS = sandbox_status()
pytestmark = pytest.mark.skipif(not STATUS.available, reason=f"no bwrap sandbox here: {STATUS.reason}")
SECCOMP = STATUS.seccomp.startswith("seccomp:")
needs_seccomp = pytest.mark.skipif(not SECCOMP, reason=f"no seccomp filter here: {STATUS.seccomp}")
MACHINE = platform.machine()
SOCKET_NR = {"x86_64": 41, "aarch64": 198}.get(MACHINE)
TOKEN = "tb-secret-" + secrets.token_hex(8)

TRY = (
    "def attempt(fn):\n"
    "    try:\n"
    "        fn()\n"
    "        return 'DONE'\n"
    "    except OSError as e:\n"
    "        return __import__('errno').errorcode.get(e.errno, str(e.errno))\n"
    "    except BaseException as e:\n"
    "        return type(e).__name__\n"
)
CTYPES = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def errname(rc):\n"
    "    return 'OK' if rc >= 0 else __import__('errno').errorcode[ctypes.get_errno()]\n"
)


def echo(call):
    return ToolResult(call_id=call.id, name=call.name, content={"n": len(str(call.arguments))})


@pytest.fixture()
def box():
    sb = Sandbox(echo, [{"name": "echo", "description": "echo", "parameters": {"type": "object"}}],
                 limits=SandboxLimits(wall_seconds=15, cpu_seconds=5))
    yield sb
    sb.close()


def run(box, code, **limits):
    return box.run_sync(code, limits=limits or None)


# ================================================================================================ 1: socket families


@needs_seccomp
def test_socket_families_outside_the_allowlist(box):
    # AF_VSOCK (40) reaches the hypervisor's address space, which no network namespace covers; the others are
    # kernel attack surface the code has no use for. Creating the socket is the marker: nothing is bound.
    families = {"vsock": 40, "packet": 17, "alg": 38, "tipc": 30, "key": 15, "bluetooth": 31, "can": 29,
                "xdp": 44, "appletalk": 5, "x25": 9, "rds": 21, "llc": 26, "unspec": 0, "beyond": 200}
    code = TRY + "import socket\nresult = {}\n"
    for name, fam in families.items():
        code += f"result[{name!r}] = attempt(lambda: socket.socket({fam}, socket.SOCK_DGRAM if {fam} != 40 else socket.SOCK_STREAM).close())\n"
    out = run(box, code)
    assert out.ok, out.error
    assert all(v == "EAFNOSUPPORT" for v in out.result.values()), out.result


@needs_seccomp
def test_vsock_with_junk_in_the_upper_bits(box):
    # the kernel reads the family as a 32-bit int: 0x1_00000028 is AF_VSOCK to it
    if SOCKET_NR is None:
        pytest.skip(f"no socket syscall number for {MACHINE}")
    code = CTYPES + (f"rc = libc.syscall({SOCKET_NR}, ctypes.c_long(0x100000028), 1, 0)\n"
                     "result = errname(rc)\nif rc >= 0: os.close(rc)\n")
    assert run(box, code).result in ("EAFNOSUPPORT", "EPERM")


@needs_seccomp
def test_netlink_is_route_only(box):
    code = TRY + ("import socket\nresult = [attempt(lambda p=p: socket.socket(16, socket.SOCK_RAW, p).close())"
                  " for p in (4, 9, 15, 12)]")  # sock_diag, audit, kobject_uevent, netfilter
    out = run(box, code)
    assert out.result == ["EPROTONOSUPPORT"] * 4, out.result


def test_the_families_the_code_needs_still_work(box):
    code = ("import socket\na, b = socket.socketpair()\na.send(b'x')\n"
            "s6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)\ns6.bind(('::1', 0))\n"
            "s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns4.bind(('127.0.0.1', 0))\n"
            "nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\n"
            "result = [b.recv(1).decode(), [n for _, n in socket.if_nameindex()]]")
    out = run(box, code)
    assert out.result == ["x", ["lo"]], out.error


# ================================================================================================ 2: the sandbox's init


def _host_cmdlines_with(marker: bytes) -> list[int]:
    hits = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if marker in fh.read():
                        hits.append(int(pid))
            except OSError:
                pass
    return hits


def test_code_cannot_write_init_memory(box):
    # rewrite pid 1's argv through /proc/1/mem: the host's ps would show the marker
    marker = TOKEN.encode()
    code = (
        "import os\n"
        "fields = open('/proc/1/stat').read().rsplit(')', 1)[1].split()\n"
        "arg_start = int(fields[45])\n"
        "try:\n"
        "    fd = os.open('/proc/1/mem', os.O_RDWR)\n"
        f"    os.pwrite(fd, {marker!r} + b'\\0', arg_start)\n"
        "    result = 'WROTE INIT'\n"
        "except OSError as e:\n"
        "    result = type(e).__name__\n"
    )
    out = run(box, code)
    hits = _host_cmdlines_with(marker)
    assert out.result == "PermissionError" and hits == [], (out.result, out.error, hits)


def test_code_cannot_read_init_memory_or_signal_it_away(box):
    code = TRY + ("import os, signal\n"
                  "result = [attempt(lambda: open('/proc/1/mem', 'rb').read(1)),\n"
                  "          attempt(lambda: os.listdir('/proc/1/fd'))]\n"
                  "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGKILL):\n"
                  "    os.kill(1, s)\n")
    out = run(box, code)
    assert out.result == ["EACCES", "EACCES"], out.result
    again = run(box, "import os\nresult = [os.getppid(), len([p for p in os.listdir('/proc') if p.isdigit()])]")
    # init is the supervisor; besides it only its fork server (which never holds run data) and this run
    assert again.ok and again.result == [1, 3], again


# ================================================================================================ 3: memory


@needs_seccomp
def test_sysv_shared_memory_is_not_kept_past_the_run(box):
    code = CTYPES + (
        "libc.shmget.restype = ctypes.c_int\nlibc.shmat.restype = ctypes.c_void_p\n"
        "sid = libc.shmget(0, 96 << 20, 0o1600)\n"  # IPC_PRIVATE, IPC_CREAT | 0600
        "if sid < 0:\n    result = errname(sid)\nelse:\n"
        "    addr = libc.shmat(sid, None, 0)\n    ctypes.memset(addr, 1, 96 << 20)\n    libc.shmdt(ctypes.c_void_p(addr))\n"
        "    result = 'KEPT 96 MB'\n"
    )
    first = run(box, code, memory_mb=64)
    second = run(box, "result = open('/proc/sysvipc/shm').read().splitlines()[1:]")
    assert first.result in ("ENOSYS", "EPERM") and second.result == [], (first.result, second.result)


def test_sysv_segments_are_removed_at_the_end_of_a_run_without_seccomp():
    with Sandbox(seccomp=False, limits=SandboxLimits(wall_seconds=15)) as sb:
        code = CTYPES + ("libc.shmget.restype = ctypes.c_int\n"
                         "result = [libc.shmget(0, 1 << 20, 0o1600), libc.msgget(0, 0o1600), libc.semget(0, 1, 0o1600)]")
        first = sb.run_sync(code)
        assert first.ok and all(i >= 0 for i in first.result), first
        left = sb.run_sync("result = [open(f'/proc/sysvipc/{k}').read().splitlines()[1:] for k in ('shm', 'msg', 'sem')]")
        assert left.result == [[], [], []], left.result


@needs_seccomp
def test_memfd_cannot_hold_memory_beyond_the_bound(box):
    code = TRY + ("import os\nfds = []\n"
                  "def grab():\n"
                  "    for i in range(4):\n"
                  "        fd = os.memfd_create(f'm{i}')\n        os.write(fd, b'x' * (40 << 20))\n        fds.append(fd)\n"
                  "got = attempt(grab)\n"
                  "result = f'HELD {40 * len(fds)} MB' if fds else got\n")
    out = run(box, code, memory_mb=64)
    assert out.result in ("EPERM", "ENOSYS"), out.result


def test_memory_of_all_the_runs_processes_counts(box):
    # each child stays under RLIMIT_AS (64 MB) but together they hold 4 x 40 MB
    code = ("import os, time\n"
            "for i in range(4):\n"
            "    if os.fork() == 0:\n"
            "        block = bytearray(40 << 20)\n"
            "        for j in range(0, len(block), 4096):\n            block[j] = 1\n"
            "        open(f'/work/held{i}', 'w').close()\n"
            "        time.sleep(30)\n"
            "        os._exit(0)\n"
            "deadline = time.time() + 10\n"
            "while time.time() < deadline and len([f for f in os.listdir('/work') if f.startswith('held')]) < 4:\n"
            "    time.sleep(0.05)\n"
            "time.sleep(0.5)\n"
            "result = 'HELD 160 MB'\n")
    out = run(box, code, memory_mb=64)
    assert out.limit == "memory" and out.result is None, (out.result, out.limit, out.error)
    assert out.max_rss_mb is not None and out.max_rss_mb >= 64, out.max_rss_mb  # the real peak, not one process's


def test_scratch_files_count_as_memory(box):
    code = ("import time\nfor d in ('/work', '/tmp', '/dev/shm'):\n"
            "    open(f'{d}/big', 'wb').write(b'x' * (30 << 20))\n"
            "time.sleep(0.5)\nresult = 'HELD 90 MB'\n")
    out = run(box, code, memory_mb=64, disk_mb=32)
    assert out.limit == "memory" and out.result is None, (out.result, out.limit, out.error)


def test_peak_of_a_normal_run_is_reported(box):
    out = run(box, "b = bytearray(30 << 20)\nfor j in range(0, len(b), 4096):\n    b[j] = 1\nresult = len(b)")
    assert out.ok and out.max_rss_mb is not None and 30 <= out.max_rss_mb < 200, out.max_rss_mb


# ================================================================================================ 4: warm worker poisoning


@pytest.mark.parametrize("path", ["/work", "/tmp", "/dev/shm"])
def test_chmod_a_scratch_directory_does_not_poison_the_worker(box, path):
    assert run(box, f"import os\nos.chmod({path!r}, 0)\nresult = 'done'").result == "done"
    for _ in range(2):
        out = run(box, f"import os\nopen({path!r} + '/f', 'w').write('x')\nresult = oct(os.stat({path!r}).st_mode & 0o777)")
        assert out.ok, out.error


def test_prlimit_on_the_supervisor_does_not_poison_the_worker(box):
    code = TRY + ("import os, resource\nsup = os.getppid()\n"
                  "result = [attempt(lambda: resource.prlimit(sup, resource.RLIMIT_NOFILE, (16, 16))),\n"
                  "          attempt(lambda: resource.prlimit(sup, resource.RLIMIT_AS, (40 << 20, 40 << 20))),\n"
                  "          attempt(lambda: resource.prlimit(sup, resource.RLIMIT_NPROC, (1, 1)))]")
    first = run(box, code)
    for _ in range(2):
        out = run(box, "import resource\nresult = [len(bytearray(100 << 20)), resource.getrlimit(resource.RLIMIT_NOFILE)[0]]")
        assert out.ok and out.result[0] == 100 << 20, (first.result, out.error)
    if SECCOMP:
        assert first.result == ["EPERM"] * 3, first.result


def test_renice_the_supervisor_does_not_last(box):
    code = TRY + ("import os\nresult = [attempt(lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)),\n"
                  "          attempt(lambda: os.setpriority(os.PRIO_USER, 0, 19)),\n"
                  "          attempt(lambda: os.sched_setaffinity(os.getppid(), {0}))]")
    first = run(box, code)
    out = run(box, "import os\nresult = [os.getpriority(os.PRIO_PROCESS, 0), len(os.sched_getaffinity(0))]")
    # the priority the sandbox started with is this process's own (the tests may run under nice)
    assert out.result == [os.getpriority(os.PRIO_PROCESS, 0), len(os.sched_getaffinity(0))], (first.result, out.result)


@pytest.mark.skipif(os.geteuid() != 0, reason="poisons the worker from the host through /proc/PID/root (root only)")
def test_a_worker_whose_setup_fails_is_replaced(box):
    # poisoned from outside, between runs (so no check after a run can have repaired it): the next run's
    # process cannot set itself up; the run is retried once on a fresh worker (the code had not started)
    assert run(box, "result = 1").result == 1
    worker = box._worker
    box._runner.run(worker.settle())  # the supervisor's cleanup after that run is over (it would repair this)
    os.chmod(f"/proc/{worker.init_pid}/root/work", 0)
    out = run(box, "result = 2")
    assert out.ok and out.result == 2, out.error
    assert box._worker is not worker
    assert run(box, "result = 3").result == 3


# ================================================================================================ 5: leaks between runs


def _leak(box, plant: str, read: str):
    first = run(box, plant)
    second = run(box, read)
    return first, second


def test_dev_shm_is_emptied_between_runs(box):
    first, second = _leak(box, f"open('/dev/shm/s', 'w').write({TOKEN!r})\nresult = 1",
                          "import os\nresult = [open('/dev/shm/' + f).read() for f in os.listdir('/dev/shm')]")
    assert first.ok and TOKEN not in str(second.result), second.result


@pytest.mark.parametrize("mode", [0, 0o500, 0o100])
def test_locked_directories_do_not_survive_the_wipe(box, mode):
    plant = (f"import os\nos.makedirs('/work/d/e')\nopen('/work/d/e/s', 'w').write({TOKEN!r})\n"
             f"os.makedirs('/tmp/d')\nopen('/tmp/d/s', 'w').write({TOKEN!r})\n"
             f"os.chmod('/work/d/e', {mode})\nos.chmod('/work/d', {mode})\nos.chmod('/tmp/d', {mode})\nresult = 1")
    read = ("import os\nfound = []\nfor top in ('/work', '/tmp'):\n"
            "    for root, dirs, files in os.walk(top):\n        for d in dirs:\n"
            "            try:\n                os.chmod(os.path.join(root, d), 0o700)\n            except OSError:\n                pass\n"
            "    for root, dirs, files in os.walk(top):\n        for f in files:\n"
            "            found.append(open(os.path.join(root, f)).read())\n"
            "result = [found, sorted(os.listdir('/work')), sorted(os.listdir('/tmp'))]")
    first, second = _leak(box, plant, read)
    assert first.ok and second.result == [[], [], []], second.result


@needs_seccomp
def test_posix_message_queues_do_not_carry_between_runs(box):
    plant = CTYPES + ("rt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
                      "q = rt.mq_open(b'/tbleak', os.O_CREAT | os.O_WRONLY, 0o600, None)\n"
                      f"result = errname(q) if q < 0 else errname(rt.mq_send(q, {TOKEN.encode()!r}, {len(TOKEN)}, 0))")
    read = CTYPES + ("rt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
                     "q = rt.mq_open(b'/tbleak', os.O_RDONLY, 0, None)\nbuf = ctypes.create_string_buffer(8192)\n"
                     "result = errname(q) if q < 0 else buf.raw[:max(0, rt.mq_receive(q, buf, 8192, None))].decode()")
    first, second = _leak(box, plant, read)
    assert first.result != "OK" and TOKEN not in str(second.result), (first.result, second.result)


@needs_seccomp
def test_sysv_message_queues_do_not_carry_between_runs(box):
    plant = CTYPES + ("q = libc.msgget(0x7b1, 0o1600)\nmsg = ctypes.create_string_buffer(8 + 64)\n"
                      f"ctypes.memmove(ctypes.addressof(msg), (1).to_bytes(8, 'little') + {TOKEN.encode()!r}, 8 + {len(TOKEN)})\n"
                      f"result = errname(q) if q < 0 else errname(libc.msgsnd(q, msg, {len(TOKEN)}, 0))")
    read = CTYPES + ("q = libc.msgget(0x7b1, 0)\nmsg = ctypes.create_string_buffer(8 + 64)\n"
                     "n = libc.msgrcv(q, msg, 64, 0, 0o4000) if q >= 0 else -1\n"  # IPC_NOWAIT
                     "result = msg.raw[8:8 + n].decode() if n > 0 else errname(q)")
    first, second = _leak(box, plant, read)
    assert first.result != "OK" and TOKEN not in str(second.result), (first.result, second.result)


def test_extended_attributes_of_the_scratch_roots_do_not_carry(box):
    plant = TRY + f"import os\nresult = [attempt(lambda d=d: os.setxattr(d, 'user.s', {TOKEN.encode()!r})) for d in ('/work', '/tmp', '/dev/shm')]"
    read = "import os\nresult = [[os.getxattr(d, a).decode() for a in os.listxattr(d)] for d in ('/work', '/tmp', '/dev/shm')]"
    first, second = _leak(box, plant, read)
    assert TOKEN not in str(second.result), (first.result, second.result)


# ================================================================================================ 6: forged reports


FORGE = ("import os, sys\nsys.stdout.flush()\n"
         "fd = max(int(f) for f in os.listdir('/proc/self/fd'))\n"
         "os.write(fd, {doc})\nos._exit(0)\n")


@pytest.mark.parametrize("doc", [
    b'{"error": "str", "result": null, "limit": null}',
    b'{"error": null, "result": {"a": 1}, "limit": null}',
    b'{"error": null, "result": "' + b"[" * 100_000 + b"]" * 100_000 + b'", "limit": null}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"error": {"type": 5, "message": ["x"], "line": "one", "traceback": 7}, "result": null, "limit": null}',
    b'{"error": null, "result": null, "limit": "bogus"}',
    b'{"error": {"type": "E", "message": "' + b"m" * 300_000 + b'"}, "result": null, "limit": null}',
    b'"just a string"',
], ids=["error-str", "result-dict", "result-deep", "report-deep", "error-types", "limit-bogus", "error-huge",
        "not-object"])
def test_forged_report_is_the_runs_error(box, doc):
    out = run(box, FORGE.format(doc=repr(doc)))  # must not raise on the host
    assert out.error is not None and out.error.type in ("ReportError", "ResultError"), out.error
    assert len(out.error.message) < 1000
    assert run(box, "result = 'next'").result == "next"


def test_deeply_nested_result_is_an_error_not_a_crash(box):
    out = run(box, "r = x = []\nfor _ in range(100_000):\n    x.append([])\n    x = x[0]\nresult = r")
    assert out.error is not None and out.result is None


# ================================================================================================ 7: tool-call flood


def test_calls_per_run_are_capped(box):
    code = ("n = 0\nrefused = 0\nfor i in range(3000):\n"
            "    try:\n        echo(i=i)\n        n += 1\n"
            "    except ToolError as e:\n        refused += 1\n        last = e.error\n"
            "result = [n, refused, last if refused else '']")
    out = run(box, code)
    cap = SandboxLimits().tool_calls if hasattr(SandboxLimits(), "tool_calls") else None
    assert cap is not None and out.result[0] == cap and len(out.calls) == cap, (cap, out.result[:2], len(out.calls))
    assert "limit" in out.result[2]


def test_big_calls_are_refused_and_not_kept(box):
    code = ("big = 'x' * (4 << 20)\nok = refused = 0\nfor i in range(12):\n"
            "    try:\n        echo(data=big)\n        ok += 1\n"
            "    except ToolError:\n        refused += 1\n"
            "result = [ok, refused]")
    out = run(box, code)
    kept = sum(len(str(c.arguments)) for c in out.calls)
    assert out.result == [0, 12] and kept < (2 << 20), (out.result, kept)


def test_a_deep_frame_gets_an_error_reply(box):
    code = ("import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/run/taskbench/tools.sock')\n"
            # 10,000 levels: under the cap on values per call (which refuses a deeper one before it is parsed)
            "s.sendall(b'{\"name\": \"echo\", \"arguments\": {\"a\": ' + b'[' * 10000 + b']' * 10000 + b'}}\\n')\n"
            "s.settimeout(5)\nreply = s.makefile('rb').readline()\n"
            "result = reply.decode() if reply else 'NO REPLY'")
    out = run(box, code)
    assert out.result != "NO REPLY" and "deep" in out.result, out.result
    assert out.calls == []


def test_connections_to_the_tool_socket_are_capped(box):
    code = ("import socket\nconns = []\nfor i in range(120):\n"
            "    s = socket.socket(socket.AF_UNIX)\n    s.connect('/run/taskbench/tools.sock')\n"
            "    try:\n        s.sendall(b'x' * 65536)\n    except OSError:\n        pass\n    conns.append(s)\n"
            # the server closes what is over the cap as it accepts it; on two busy cores that can take more than a
            # moment, so wait (up to 8 s) until no more than the cap are open, reading any reply to its end
            "import time\nfor s in conns:\n    s.setblocking(False)\n"
            "closed = set()\ndeadline = time.monotonic() + 8\nwhile True:\n    alive = 0\n"
            "    for i, s in enumerate(conns):\n        if i in closed:\n            continue\n"
            "        try:\n            while s.recv(65536):\n                pass\n            closed.add(i)\n"
            "        except BlockingIOError:\n            alive += 1\n        except OSError:\n            closed.add(i)\n"
            "    if alive <= 16 or time.monotonic() > deadline:\n        break\n    time.sleep(0.1)\n"
            "result = alive")
    out = run(box, code, open_files=256)
    assert out.ok and out.result <= 16, (out.result, out.error)


def test_errno_constants():  # the attacks above name errno values the way the sandbox reports them
    assert errno.errorcode[errno.EAFNOSUPPORT] == "EAFNOSUPPORT"
