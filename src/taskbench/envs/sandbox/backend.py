"""How the supervisor process is started: confined by bubblewrap, or (``unsafe_local``) as a plain subprocess.

The bwrap sandbox (see docs/sandbox.md for the threat model):

- new user, PID, network, IPC, UTS and cgroup namespaces: the code sees only its own processes, has no network
  but its own loopback, and cannot signal anything outside;
- a read-only root made of ``/usr`` (plus the merged-/usr symlinks) and the interpreter's own prefix with its
  site-packages hidden; fresh ``/proc`` and ``/dev``; size-capped tmpfs scratch directories ``/work`` (the
  working directory) and ``/tmp``; nothing of ``/etc``, ``/home``, ``/root`` or the project;
- an empty environment (``PATH``, ``HOME=/work``, ``TMPDIR``, ``LANG`` only);
- the supervisor's files (``SUPERVISOR_FILES``: the entry point and its sibling modules), the tool socket and
  one socket per allowed port, bound read-only under ``/run/taskbench``;
- a seccomp filter (:mod:`.seccomp`) and ``no_new_privs``;
- the supervisor itself is the sandbox's pid 1 (``--as-pid-1``: bwrap installs no init of its own). It is not
  dumpable, so code of the same uid can neither read nor write its memory (``/proc/1/mem``) nor open its fds,
  and as a namespace's init it receives no signal from inside that it has not asked for (it asks for none):
  the code cannot kill it, stop it, or run code in it.

As root, bwrap itself runs as an unprivileged uid (65534) whose user namespace maps only that uid and root:
bwrap can still reach the interpreter under a root-only path while setting up, but the code runs as 65534 with
no capabilities, so RLIMIT_NPROC applies (it never does to uid 0) and a file the code could somehow reach is
still guarded by its owner's permission bits.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from ._supervisor import MODULES
from .seccomp import seccomp_program

SANDBOX_UID = 65534
RUN_DIR = "/run/taskbench"
WORKDIR = "/work"
SUPERVISOR = Path(__file__).with_name("_supervisor.py")
# what is mounted under RUN_DIR, read-only: the supervisor (the entry point) and the modules it imports, beside it
SUPERVISOR_FILES = {"supervisor.py": SUPERVISOR,
                    **{f"{name}.py": SUPERVISOR.with_name(f"{name}.py") for name in MODULES}}
_MERGED = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True)
class Interpreter:
    """The Python the code runs on: its executable, prefix, and the directories to hide (site-packages)."""

    executable: str
    prefix: str
    hidden: tuple[str, ...] = ()
    version: str = ""


@functools.lru_cache(maxsize=8)
def interpreter(python: str | None = None) -> Interpreter:
    """Our own base interpreter by default (not the venv: the sandbox gets the standard library only)."""
    if python is None:
        exe = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
        prefix = os.path.realpath(sys.base_prefix)
        paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
        version = ".".join(map(str, sys.version_info[:3]))
    else:
        probe = (
            "import json,sys,sysconfig;"
            "p=sysconfig.get_paths(vars={'base':sys.base_prefix,'platbase':sys.base_exec_prefix});"
            "print(json.dumps({'exe':sys.executable,'prefix':sys.base_prefix,'paths':p,"
            "'version':'.'.join(map(str,sys.version_info[:3]))}))"
        )
        out = subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, timeout=30, check=True)
        info = json.loads(out.stdout)
        exe, prefix, paths, version = (os.path.realpath(info["exe"]), os.path.realpath(info["prefix"]),
                                       info["paths"], info["version"])
    hidden = []
    for key in ("purelib", "platlib"):
        path = os.path.realpath(paths.get(key, ""))
        if path and os.path.isdir(path) and path not in hidden:
            hidden.append(path)
    debian = Path(prefix) / "lib" / "python3" / "dist-packages"
    if debian.is_dir():
        hidden.append(str(debian))
    return Interpreter(exe, prefix, tuple(hidden), version)


def bwrap_path(bwrap: str | None = None) -> str | None:
    """The bwrap executable: ``bwrap``, else ``$TASKBENCH_BWRAP``, else ``bwrap`` on PATH; None if missing."""
    bwrap = bwrap or os.environ.get("TASKBENCH_BWRAP") or None
    if bwrap is not None:
        return bwrap if os.access(bwrap, os.X_OK) else None
    return shutil.which("bwrap") or next((p for p in ("/usr/bin/bwrap", "/bin/bwrap") if os.access(p, os.X_OK)),
                                         None)


@functools.lru_cache(maxsize=4)
def bwrap_version(bwrap: str) -> str | None:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().split()[-1] if out.returncode == 0 and out.stdout.strip() else None


def as_root() -> bool:
    return os.geteuid() == 0


@dataclass
class Launch:
    """What to exec and which descriptors to hand over (the caller closes ``close_after`` once started)."""

    argv: list[str]
    pass_fds: list[int] = field(default_factory=list)
    close_after: list[int] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    user: int | None = None
    info_fd: int | None = None  # read end: bwrap's JSON info (the pid of the sandbox's init)
    block_fd: int | None = None  # write end: release bwrap once we wrote its uid map (as root)


SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": WORKDIR, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def bwrap_launch(
    bwrap: str,
    python: Interpreter,
    control_fd: int,
    sockets: dict[str, str],
    *,
    disk_mb: int,
    readonly: tuple[str, ...] = (),
    seccomp: bool = True,
) -> Launch:
    """The bwrap command line for one supervisor. ``sockets`` maps names under /run/taskbench to host paths."""
    fds: list[int] = []
    root = as_root()
    args = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent", "--new-session", "--clearenv",
            "--as-pid-1"]
    for key, value in SANDBOX_ENV.items():
        args += ["--setenv", key, value]
    launch = Launch(argv=args, env={})
    info_r, info_w = os.pipe()  # bwrap reports the pid of the sandbox's init here
    args += ["--info-fd", str(info_w)]
    fds.append(info_w)
    launch.info_fd = info_r
    if root:
        block_r, block_w = os.pipe()
        args += ["--userns-block-fd", str(block_r)]
        fds.append(block_r)
        launch.block_fd, launch.user = block_w, SANDBOX_UID
    else:
        args += ["--disable-userns"]
    args += ["--ro-bind", "/usr", "/usr"]
    for path in _MERGED:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    if not python.prefix.startswith("/usr/"):
        args += ["--ro-bind", python.prefix, python.prefix]
    exe_dir = os.path.dirname(python.executable)
    if not (exe_dir.startswith("/usr/") or exe_dir.startswith(python.prefix + "/")):
        args += ["--ro-bind", exe_dir, exe_dir]
    for path in python.hidden:
        args += ["--tmpfs", path, "--remount-ro", path]
    for path in readonly:
        real = os.path.realpath(path)
        args += ["--ro-bind", real, real]
    size = str(int(disk_mb) * 1024 * 1024)
    args += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
             "--size", size, "--tmpfs", WORKDIR, "--size", size, "--tmpfs", "/tmp"]
    for name, source in SUPERVISOR_FILES.items():
        data = _memfd(f"taskbench-{name}", source.read_bytes())
        fds.append(data)
        args += ["--ro-bind-data", str(data), f"{RUN_DIR}/{name}"]
    for name, host in sockets.items():
        args += ["--ro-bind", host, f"{RUN_DIR}/{name}"]
    program = seccomp_program() if seccomp else None
    if program is not None:
        sfd = _memfd("taskbench-seccomp", program)
        fds.append(sfd)
        args += ["--seccomp", str(sfd)]
    args += ["--remount-ro", "/", "--chdir", WORKDIR, "--",
             python.executable, "-I", "-S", "-B", f"{RUN_DIR}/supervisor.py", "--control", str(control_fd)]
    launch.pass_fds = [control_fd, *fds]
    launch.close_after = fds
    return launch


def local_launch(python: Interpreter, control_fd: int, workdir: str) -> Launch:
    """The unconfined supervisor (``unsafe_local``): same protocol, limits set with setrlimit, no namespaces."""
    env = {**SANDBOX_ENV, "HOME": workdir, "TMPDIR": workdir}
    return Launch(
        argv=[python.executable, "-I", "-S", "-B", str(SUPERVISOR), "--control", str(control_fd)],
        pass_fds=[control_fd], env=env, cwd=workdir,
    )


def write_id_maps(pid: int) -> None:
    """Map the sandbox uid/gid to itself and root to root in bwrap's new user namespace (we are root)."""
    mapping = f"0 0 1\n{SANDBOX_UID} {SANDBOX_UID} 1\n"
    with open(f"/proc/{pid}/uid_map", "w") as fh:
        fh.write(mapping)
    with open(f"/proc/{pid}/gid_map", "w") as fh:
        fh.write(mapping)


__all__ = [
    "Interpreter",
    "Launch",
    "RUN_DIR",
    "SANDBOX_UID",
    "SUPERVISOR_FILES",
    "WORKDIR",
    "as_root",
    "bwrap_launch",
    "bwrap_path",
    "bwrap_version",
    "interpreter",
    "local_launch",
    "write_id_maps",
]
