"""Attack programs against the code sandbox: every one must be blocked or killed, with the reason reported.

Each attack is real code run in the real bwrap sandbox. Secrets are canaries the test plants where the code
would find them without the sandbox: an environment variable of the parent, a file on the host, the
project's own files, the parent's /proc entry; network attacks only aim at 127.0.0.1 ports and an abstract
socket the test itself opens, and at a non-routable address only inside the sandbox, which has no network.
The host side then checks that nothing arrived and nothing was written.
"""

from __future__ import annotations

import errno
import os
import platform
import secrets
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from taskbench.envs.sandbox import Sandbox, SandboxLimits, sandbox_status

STATUS = sandbox_status()
pytestmark = pytest.mark.skipif(not STATUS.available, reason=f"no bwrap sandbox here: {STATUS.reason}")
ROOT = Path(__file__).resolve().parents[1]
CANARY = "tb-canary-" + secrets.token_hex(8)
ENV_KEY = "TASKBENCH_ATTACK_CANARY"
MACHINE = platform.machine()
SYSCALLS = {  # numbers for the calls libc has no wrapper for
    "x86_64": {"keyctl": 250, "bpf": 321, "io_uring_setup": 425, "perf_event_open": 298, "add_key": 248},
    "aarch64": {"keyctl": 219, "bpf": 280, "io_uring_setup": 425, "perf_event_open": 241, "add_key": 217},
}.get(MACHINE, {})


@dataclass
class Host:
    """What the attacks aim at (all of it exists on the host)."""

    canary_file: Path
    canary_dir: Path
    tcp_port: int
    udp_port: int
    abstract: str
    pid: int
    home: str


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    canary_dir = tmp_path_factory.mktemp("canary")
    canary_file = canary_dir / "secret.txt"
    canary_file.write_text(CANARY)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.settimeout(0.2)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.2)
    abstract = "\0" + CANARY
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(abstract)
    unix.listen(8)
    unix.settimeout(0.2)
    os.environ[ENV_KEY] = CANARY
    h = Host(canary_file, canary_dir, tcp.getsockname()[1], udp.getsockname()[1], abstract, os.getpid(),
             str(Path.home()))
    h.sockets = (tcp, udp, unix)  # type: ignore[attr-defined]
    yield h
    os.environ.pop(ENV_KEY, None)
    for s in (tcp, udp, unix):
        s.close()


@pytest.fixture(scope="module")
def box(host):
    sb = Sandbox(limits=SandboxLimits(wall_seconds=15, cpu_seconds=5))  # started after the canary env var is set
    yield sb
    sb.close()


def run(box, code, **limits):
    return box.run_sync(code, limits=limits or None)


def blocked(out, *types):
    """The attack's own report: ``result`` is the exception type (or list of them) it ran into."""
    assert out.ok, out.error
    got = out.result if isinstance(out.result, list) else [out.result]
    assert got and all(g in types for g in got), got
    return got


TRY = (
    "def attempt(fn):\n"
    "    try:\n"
    "        fn()\n"
    "        return 'DONE'\n"
    "    except BaseException as e:\n"
    "        return type(e).__name__\n"
)

CTYPES = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def errname(rc):\n"
    "    return 'OK' if rc >= 0 else __import__('errno').errorcode[ctypes.get_errno()]\n"
)


# ================================================================================================ files


def test_read_etc_shadow(box):
    assert Path("/etc/shadow").exists() or os.geteuid() != 0
    out = run(box, "data = open('/etc/shadow').read()")
    assert out.error.type == "FileNotFoundError" and out.error.line == 1


def test_read_etc_passwd_and_list_etc(box):
    out = run(box, TRY + "import os\nresult = [attempt(lambda: open('/etc/passwd').read()), sorted(os.listdir('/etc'))]")
    assert out.result[0] == "FileNotFoundError" and set(out.result[1]) <= {"ld.so.cache"}


def test_read_ssh_keys(box, host):
    paths = [os.path.join(host.home, ".ssh"), "/root/.ssh", "~/.ssh"]
    code = TRY + f"import os\nresult = [attempt(lambda p=p: os.listdir(os.path.expanduser(p))) for p in {paths!r}]"
    blocked(run(box, code), "FileNotFoundError")


def test_home_directory_shows_nothing_but_the_interpreter(box, host):
    out = run(box, f"import os\nresult = sorted(os.listdir({host.home!r})) if os.path.isdir({host.home!r}) else []")
    allowed = set()
    prefix = STATUS.python.split(" ")[0] if STATUS.python else ""
    if prefix.startswith(host.home.rstrip("/") + "/"):
        allowed.add(prefix[len(host.home.rstrip("/")) + 1:].split("/")[0])
    assert set(out.result) <= allowed, out.result
    assert set(os.listdir(host.home)) - allowed  # the host's home does hold more


def test_read_the_projects_files(box):
    assert (ROOT / "pyproject.toml").exists()
    paths = [str(ROOT / "pyproject.toml"), str(ROOT / "src" / "taskbench" / "__init__.py"), str(ROOT / "tests")]
    code = TRY + f"import os\nresult = [attempt(lambda p=p: os.listdir(p) if os.path.isdir(p) else open(p).read()) for p in {paths!r}]"
    blocked(run(box, code), "FileNotFoundError")


def test_import_the_project_or_site_packages(box):
    code = TRY + "result = [attempt(lambda: __import__('taskbench')), attempt(lambda: __import__('pydantic'))]"
    blocked(run(box, code), "ModuleNotFoundError")


def test_read_a_host_file_by_its_path(box, host):
    out = run(box, f"data = open({str(host.canary_file)!r}).read()")
    assert out.error.type == "FileNotFoundError"


def test_search_the_filesystem_for_secrets(box, host):
    code = (
        "import os\nfound = []\n"
        "for top in ['/etc', '/run', '/work', '/tmp', '/dev/shm', '/root', '/home', '/var', '/opt', '/srv', '/mnt']:\n"
        "    for d, dirs, files in os.walk(top):\n"
        "        for f in files:\n"
        "            p = os.path.join(d, f)\n"
        "            try:\n"
        "                with open(p, 'rb') as fh:\n"
        f"                    if {CANARY.encode()!r} in fh.read(1 << 20):\n"
        "                        found.append(p)\n"
        "            except OSError:\n"
        "                pass\n"
        "        if 'pyproject.toml' in files or 'secret.txt' in files:\n"
        "            found.append(d)\n"
        "result = found\n"
    )
    out = run(box, code)
    assert out.ok and out.result == []


def test_environment_variables_of_the_parent(box):
    assert os.environ.get(ENV_KEY) == CANARY
    out = run(box, "import os\nresult = [sorted(os.environ), os.environ.get('" + ENV_KEY + "')]")
    assert out.result == [["HOME", "LANG", "PATH", "PWD", "TMPDIR"], None]


def test_secrets_in_proc_of_other_processes(box):
    code = (
        "import os\nhits = []\nseen = []\n"
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    seen.append(int(pid))\n"
        "    for name in ('environ', 'cmdline'):\n"
        "        try:\n"
        f"            if {CANARY.encode()!r} in open(f'/proc/{{pid}}/{{name}}', 'rb').read():\n"
        "                hits.append((pid, name))\n"
        "        except OSError:\n"
        "            pass\n"
        "result = [hits, seen]\n"
    )
    out = run(box, code)
    hits, seen = out.result
    assert hits == [] and max(seen) < 100  # only the sandbox's own few processes are visible


def test_proc_of_the_parent_by_its_host_pid(box, host):
    code = TRY + f"result = attempt(lambda: open('/proc/{host.pid}/environ', 'rb').read())"
    blocked(run(box, code), "FileNotFoundError")


def test_escape_through_proc_root_links(box):
    code = TRY + ("import os\nresult = [attempt(lambda: open('/proc/1/root/etc/shadow').read()),\n"
                  "          attempt(lambda: open('/proc/self/root/etc/shadow').read()),\n"
                  f"          attempt(lambda: open('/proc/1/root{ROOT}/pyproject.toml').read())]\n"
                  "try:\n    result.append(sorted(os.listdir('/proc/1/root')) == sorted(os.listdir('/')))\n"
                  "except PermissionError:\n    result.append(True)\n")
    out = run(box, code)
    assert out.result[3] is True  # init's root is the sandbox's root, not the host's
    blocked(out.model_copy(update={"result": out.result[:3]}), "FileNotFoundError", "PermissionError")


def test_read_the_supervisors_memory_and_fds(box):
    code = TRY + ("import os\nsup = os.getppid()\n"
                  "result = [attempt(lambda: open(f'/proc/{sup}/mem', 'rb').read(16)),\n"
                  "          attempt(lambda: os.listdir(f'/proc/{sup}/fd')),\n"
                  "          attempt(lambda: open(f'/proc/{sup}/environ', 'rb').read())]")
    blocked(run(box, code), "PermissionError")


def test_no_sys(box):
    blocked(run(box, TRY + "import os\nresult = attempt(lambda: os.listdir('/sys'))"), "FileNotFoundError")


# ================================================================================================ writes


def test_write_outside_the_workdir(box, host):
    targets = ["/evil", "/usr/evil", "/etc/evil", "/run/taskbench/evil", "/root/evil", "/dev/evil", "/proc/evil",
               "/work/../evil", str(host.canary_dir / "evil"), os.path.join(STATUS.python.split(" ")[0], "evil")]
    code = TRY + f"result = [attempt(lambda p=p: open(p, 'w').write('x')) for p in {targets!r}]"
    got = blocked(run(box, code), "OSError", "FileNotFoundError", "PermissionError", "NotADirectoryError")
    assert len(got) == len(targets)
    assert sorted(os.listdir(host.canary_dir)) == ["secret.txt"]


def test_symlink_to_a_host_file(box, host):
    code = TRY + (f"import os\nos.symlink({str(host.canary_file)!r}, 'a')\nos.symlink('/etc/shadow', 'b')\n"
                  "os.symlink('../../../../../../etc/passwd', 'c')\n"
                  "result = [attempt(lambda p=p: open(p).read()) for p in ('a', 'b', 'c')]")
    blocked(run(box, code), "FileNotFoundError")


def test_symlink_swap_to_write_through_a_link(box):
    code = TRY + ("import os\nos.symlink('/usr/lib/os-release', 'x')\nos.symlink('/usr/bin', 'd')\n"
                  "result = [attempt(lambda: open('x', 'w').write('pwned')), attempt(lambda: open('d/evil', 'w'))]")
    blocked(run(box, code), "OSError", "PermissionError")


def test_hardlink_a_system_file(box):
    code = TRY + "import os\nresult = attempt(lambda: os.link('/usr/bin/env', '/work/env'))"
    blocked(run(box, code), "OSError", "PermissionError")


def test_chmod_a_system_file(box):
    code = TRY + "import os\nresult = [attempt(lambda: os.chmod('/usr/bin/env', 0o777)), attempt(lambda: os.chown('/work', 0, 0))]"
    blocked(run(box, code), "OSError", "PermissionError")


def test_remount_the_root_writable(box):
    code = CTYPES + "rc = libc.mount(None, b'/', None, 32 | 4096, None)\nresult = errname(rc)"  # MS_REMOUNT|MS_BIND
    assert run(box, code).result == "EPERM"


def test_write_kernel_settings(box):
    code = TRY + ("result = [attempt(lambda: open('/proc/sys/kernel/core_pattern', 'w').write('|/work/x')),\n"
                  "          attempt(lambda: open('/proc/sysrq-trigger', 'w').write('b'))]")
    blocked(run(box, code), "OSError", "PermissionError", "FileNotFoundError")


# ================================================================================================ kernel surface


def test_nested_user_namespace(box):
    code = CTYPES + "result = [errname(libc.unshare(0x10000000)), errname(libc.unshare(0x20000))]"
    assert run(box, code).result == ["EPERM", "EPERM"]


def test_clone_with_namespace_flags(box):
    # clone(CLONE_NEWUSER | SIGCHLD) through the raw syscall: the seccomp filter checks the flags
    number = {"x86_64": 56, "aarch64": 220}.get(MACHINE)
    if number is None:
        pytest.skip(f"no clone number for {MACHINE}")
    code = CTYPES + f"rc = libc.syscall({number}, 0x10000000 | 17, 0, 0, 0, 0)\nresult = errname(rc)"
    assert run(box, code).result == "EPERM"


def test_join_another_namespace(box):
    code = CTYPES + "fd = os.open('/proc/1/ns/mnt', os.O_RDONLY)\nresult = errname(libc.setns(fd, 0))"
    out = run(box, code)
    assert out.result == "EPERM" or (out.error and out.error.type == "PermissionError")


def test_chroot(box):
    assert run(box, CTYPES + "result = errname(libc.chroot(b'/tmp'))").result == "EPERM"


def test_ptrace_the_supervisor(box):
    code = CTYPES + "result = errname(libc.ptrace(16, os.getppid(), None, None))"  # PTRACE_ATTACH
    assert run(box, code).result == "EPERM"


def test_process_vm_readv_of_the_supervisor(box):
    code = CTYPES + (
        "class iovec(ctypes.Structure):\n    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
        "buf = ctypes.create_string_buffer(64)\nlocal = iovec(ctypes.cast(buf, ctypes.c_void_p), 64)\n"
        "remote = iovec(0x400000, 64)\n"
        "rc = libc.process_vm_readv(os.getppid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)\n"
        "result = errname(rc)\n"
    )
    assert run(box, code).result == "EPERM"


@pytest.mark.parametrize("call", ["keyctl", "add_key", "bpf", "io_uring_setup", "perf_event_open"])
def test_kernel_attack_surface_syscalls(box, call):
    if call not in SYSCALLS:
        pytest.skip(f"no syscall number for {call} on {MACHINE}")
    code = CTYPES + f"result = errname(libc.syscall({SYSCALLS[call]}, 0, 0, 0, 0, 0))"
    assert run(box, code).result == "EPERM"


def test_x32_abi_syscall_is_killed(box):
    if MACHINE != "x86_64":
        pytest.skip("x32 is an x86_64 ABI")
    out = run(box, CTYPES + "libc.syscall(0x40000000 + 101, 16, 1, 0, 0)\nresult = 'survived'")  # x32 ptrace
    assert out.result is None and out.signal == "SIGSYS" and out.error.type == "Crash"


def test_become_root_or_keep_capabilities(box):
    code = TRY + ("import os\ncaps = [l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm', 'NoNewPrivs'))]\n"
                  "result = [attempt(lambda: os.setuid(0)), attempt(lambda: os.setgid(0)), os.getuid(), caps]")
    out = run(box, code)
    assert out.result[:2] == ["PermissionError", "PermissionError"]
    assert out.result[2] != 0 and out.result[3] == ["0000000000000000", "0000000000000000", "1"]


def test_raise_a_hard_limit(box):
    code = TRY + ("import resource\nresult = [attempt(lambda: resource.setrlimit(resource.RLIMIT_NPROC, (10**6, 10**6))),\n"
                  "          attempt(lambda: resource.setrlimit(resource.RLIMIT_AS, (-1, -1)))]")
    blocked(run(box, code), "ValueError", "PermissionError")


def test_inject_input_into_a_terminal(box):
    code = TRY + CTYPES + (
        "import fcntl, termios\n"
        "def sti():\n    fd = os.open('/dev/tty', os.O_RDWR)\n    fcntl.ioctl(fd, termios.TIOCSTI, b'x')\n"
        "def sti0():\n    fcntl.ioctl(0, termios.TIOCSTI, b'x')\n"
        "result = [attempt(sti), attempt(sti0)]\n"
    )
    blocked(run(box, code), "OSError", "PermissionError")


# ================================================================================================ ctypes, mmap


def test_mmap_a_read_only_file_for_writing(box):
    code = TRY + ("import mmap, os\nfd = os.open('/usr/bin/env', os.O_RDONLY)\n"
                  "result = [attempt(lambda: mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_WRITE)),\n"
                  "          attempt(lambda: open('/dev/mem', 'rb')), attempt(lambda: open('/dev/kmem', 'rb'))]")
    blocked(run(box, code), "PermissionError", "FileNotFoundError", "OSError")


def test_mmap_a_huge_anonymous_region(box):
    out = run(box, "import mmap\nm = mmap.mmap(-1, 64 * 1024 ** 3)\n", memory_mb=256)
    assert out.limit == "memory" and out.error.line == 2


def test_ctypes_writes_to_its_own_memory_stay_inside(box):
    # ctypes can corrupt the code's own process: that kills only that process, reported as a crash
    out = run(box, "import ctypes\nctypes.string_at(0)\n")
    assert out.error.type == "Crash" and out.signal == "SIGSEGV"


# ================================================================================================ processes


def test_subprocess_and_os_system_stay_confined(box, host):
    code = (
        "import os, subprocess\n"
        f"p = subprocess.run(['sh', '-c', 'id -u; cat /etc/shadow; cat {host.canary_file}; ls /root; env'],\n"
        "                   capture_output=True, text=True)\n"
        "rc = os.system('cat /etc/passwd > /dev/null 2>&1')\n"
        "result = [p.stdout, p.stderr, rc != 0]\n"
    )
    out = run(box, code)
    stdout, stderr, failed = out.result
    assert failed and stdout.splitlines()[0] == str(STATUS.uid) and CANARY not in stdout
    assert "No such file" in stderr and "HOME=/work" in stdout


def test_signals_cannot_reach_the_parent(box, host):
    code = TRY + (f"import os, signal\nresult = [attempt(lambda: os.kill({host.pid}, signal.SIGKILL)),\n"
                  "          attempt(lambda: os.kill(1, signal.SIGKILL))]")
    out = run(box, code)
    assert out.result[0] == "ProcessLookupError"  # the parent's pid does not exist in the sandbox
    assert out.result[1] in ("DONE", "PermissionError")  # the sandbox's own init ignores it
    assert run(box, "result = 1").result == 1


def test_kill_everything_it_can_see(box):
    assert run(box, "result = 1").result == 1
    worker = box._worker
    out = run(box, "import os\nos.system('kill -9 -1')\nimport time\ntime.sleep(3)\n")
    # it can only kill its own run's processes: its supervisor is the sandbox's init, which no signal from
    # inside reaches (issue 18: it used to kill the supervisor, and bwrap's init could be taken over)
    assert out.error.type == "Crash" and out.signal == "SIGKILL" and out.seconds < 3
    assert run(box, "result = 'alive'").result == "alive" and box._worker is worker


# ================================================================================================ network


def test_connect_to_a_loopback_port_that_is_not_allowed(box, host):
    code = TRY + (f"import socket\nresult = [attempt(lambda: socket.create_connection(('127.0.0.1', {host.tcp_port}), timeout=2)),\n"
                  f"          attempt(lambda: socket.create_connection(('localhost', {host.tcp_port}), timeout=2))]")
    got = blocked(run(box, code), "ConnectionRefusedError", "gaierror", "OSError")
    assert got[0] == "ConnectionRefusedError"
    tcp = host.sockets[0]  # type: ignore[attr-defined]
    with pytest.raises(TimeoutError):
        tcp.accept()


def test_udp_to_a_host_port_never_arrives(box, host):
    code = f"import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'{CANARY}', ('127.0.0.1', {host.udp_port}))\nresult = 'sent'"
    run(box, code)
    udp = host.sockets[1]  # type: ignore[attr-defined]
    with pytest.raises(TimeoutError):
        udp.recv(100)


def test_abstract_unix_socket_of_the_host(box, host):
    code = TRY + (f"import socket\ns = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                  f"result = attempt(lambda: s.connect({host.abstract!r}))")
    blocked(run(box, code), "ConnectionRefusedError")
    with pytest.raises(TimeoutError):
        host.sockets[2].accept()  # type: ignore[attr-defined]


def test_unix_sockets_of_the_host_by_path(box):
    code = TRY + ("import socket, glob\n"
                  "def connect(p):\n    s = socket.socket(socket.AF_UNIX)\n    s.connect(p)\n"
                  "paths = ['/run/docker.sock', '/var/run/dbus/system_bus_socket', '/tmp/.X11-unix/X0']\n"
                  "result = [attempt(lambda p=p: connect(p)) for p in paths] + [str(len(glob.glob('/tmp/tb-sandbox-*')))]")
    out = run(box, code)
    assert out.result[:3] == ["FileNotFoundError"] * 3 and out.result[3] == "0"


def test_no_route_off_the_machine(box):
    # a non-routable address, inside a namespace that has no network at all: fails at once, sends nothing
    code = TRY + "import socket\nresult = attempt(lambda: socket.create_connection(('10.255.255.1', 80), timeout=1))"
    out = run(box, code)
    assert out.result == "OSError"
    code = "import socket\ntry:\n    socket.create_connection(('10.255.255.1', 80), timeout=1)\nexcept OSError as e:\n    result = e.errno"
    assert run(box, code).result == errno.ENETUNREACH


def test_dns_and_interfaces(box):
    code = TRY + ("import socket\nresult = [attempt(lambda: socket.getaddrinfo('example.com', 80)),\n"
                  "          [n for _, n in socket.if_nameindex()]]")
    out = run(box, code)
    assert out.result == ["gaierror", ["lo"]]


def test_raw_sockets(box):
    code = TRY + "import socket\nresult = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))"
    blocked(run(box, code), "PermissionError")


# ================================================================================================ resources


def test_fork_bomb(box):
    out = run(box, "import os\nwhile True:\n    os.fork()\n", processes=16, wall_seconds=10)
    assert out.limit == "processes" and out.error.type == "LimitExceeded" and out.seconds < 10
    assert run(box, "import os\nresult = len([p for p in os.listdir('/proc') if p.isdigit()])").result <= 3


def test_thread_bomb(box):
    out = run(box, "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(60,)).start()\n",
              processes=16)
    assert out.limit == "processes"


def test_memory_bomb(box):
    out = run(box, "chunks = []\nwhile True:\n    chunks.append(' ' * 10 ** 7)\n", memory_mb=256)
    assert out.limit == "memory" and "256 MB" in out.error.message and out.error.line == 3


@pytest.mark.slow
def test_infinite_loop(box):
    out = run(box, "while True:\n    pass\n", cpu_seconds=1, wall_seconds=20)
    assert out.limit == "cpu" and out.seconds < 15


def test_sleep_forever_with_signals_ignored(box):
    code = ("import signal, time\nfor s in (signal.SIGALRM, signal.SIGXCPU, signal.SIGTERM):\n"
            "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    time.sleep(1)\n")
    out = run(box, code, wall_seconds=1)
    assert out.limit == "wall" and out.signal == "SIGKILL"


def test_huge_output(box):
    out = run(box, "import sys\nwhile True:\n    sys.stdout.write('A' * 65536)\n", output_bytes=100_000)
    assert out.limit == "output" and len(out.stdout) == 100_000 and out.truncated


def test_huge_output_from_a_child_process(box):
    out = run(box, "import os\nos.system('yes')\n", output_bytes=50_000)
    assert out.limit == "output" and len(out.stdout) <= 50_000


def test_fill_the_disk(box):
    code = "i = 0\nwhile True:\n    open(f'/tmp/f{i}', 'wb').write(b'x' * 1_000_000)\n    i += 1\n"
    out = run(box, code, disk_mb=8)
    assert out.limit == "output" and "disk" in out.error.message


def test_exhaust_file_descriptors(box):
    out = run(box, "import socket\nsocks = []\nwhile True:\n    socks.append(socket.socket())\n", open_files=32)
    assert out.limit == "files"


def test_a_daemon_does_not_outlive_its_run(box):
    code = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        time.sleep(300)\n    os._exit(0)\ntime.sleep(0.2)\nresult = 'spawned'")
    assert run(box, code).result == "spawned"
    procs = run(box, "import os\nresult = [open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') if p.isdigit()]")
    assert len(procs.result) <= 3  # bwrap's init, the supervisor, this run


def test_host_still_fine(host):
    assert threading.active_count() >= 1 and os.getpid() == host.pid
    assert host.canary_file.read_text() == CANARY
