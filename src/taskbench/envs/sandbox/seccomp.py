"""The seccomp filter loaded into the sandbox (bwrap ``--seccomp FD``): a deny list of the system calls that
confined code has no business making and that widen the kernel's attack surface, a socket-family allowlist,
and rules that keep the code's hands off every process but its own.

- sockets: only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (NETLINK_ROUTE only: Python's ``if_nameindex`` and
  glibc's ``getaddrinfo`` use it) can be created; any other family (AF_VSOCK, which reaches the hypervisor and
  which no network namespace covers, AF_PACKET, AF_ALG, ...) fails with ``EAFNOSUPPORT``, another netlink
  protocol with ``EPROTONOSUPPORT``;
- memory outside the address-space limit and state that outlives a run: SysV shared memory, message queues and
  semaphores, POSIX message queues, ``memfd_create`` and ``memfd_secret`` fail with ``ENOSYS`` (as on a kernel
  built without them; ``shm_open`` and ``multiprocessing`` use files in /dev/shm, a size-capped tmpfs);
- other processes: ``prlimit`` with new limits, ``setpriority``, ``ioprio_set`` and the ``sched_set*`` calls
  work on the caller only (pid 0); on another pid, or on a whole user or process group, they fail with
  ``EPERM``: the code cannot lower its supervisor's limits or priority.

Compiled with libseccomp (through ``pyseccomp``) once per process, for the machine's own architecture. A call
from another ABI (32-bit ``int 0x80``, x32) kills the process; a denied call fails with ``EPERM`` (``clone3``
with ``ENOSYS``, so that the C library falls back to ``clone``, whose namespace flags are checked). When
libseccomp cannot be loaded the sandbox still runs, confined by namespaces and limits only, and
:func:`seccomp_status` says why.
"""

from __future__ import annotations

import errno
import functools
import tempfile

# Denied outright: tracing and reading other processes, (un)mounting and namespace games, kernel keyrings,
# BPF and perf, kernel modules, reboot/swap/clock changes, handle-based opens (open_by_handle_at escapes),
# userfaultfd and io_uring (frequent exploit primitives), NUMA page moves, personality changes.
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "unshare", "setns",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "quotactl_fd",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "nfsservctl", "uselib", "vhangup",
    "iopl", "ioperm", "_sysctl", "sysfs", "ustat",
    "mbind", "migrate_pages", "move_pages", "set_mempolicy",
    "personality", "fanotify_init", "landlock_create_ruleset",
)

# Socket families the code may create (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK), and the netlink protocol it may
# use (NETLINK_ROUTE). Every other family number below AF_LIMIT is denied one by one; AF_LIMIT and above (and
# any junk in the upper 32 bits, which the kernel drops) at once.
ALLOWED_FAMILIES = (1, 2, 10, 16)
AF_NETLINK, NETLINK_ROUTE = 16, 0
AF_LIMIT = 64
# No state that outlives a run, no memory outside RLIMIT_AS: SysV IPC, POSIX message queues, memfd.
NO_IPC = (
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
    "semctl", "semtimedop", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr", "memfd_create", "memfd_secret",
)
# Calls that act on another process when their pid argument is not 0 (the caller): (name, index of the pid).
SELF_ONLY = (
    ("sched_setaffinity", 0), ("sched_setscheduler", 0), ("sched_setparam", 0), ("sched_setattr", 0),
)

# clone(2) with any namespace flag (a nested user namespace would give the code capabilities inside it).
CLONE_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
# ioctl requests that push input into a terminal (TIOCSTI) or drive the console (TIOCLINUX).
DENIED_IOCTLS = (0x5412, 0x541C)


@functools.lru_cache(maxsize=1)
def _compile() -> tuple[bytes | None, str]:
    try:
        import pyseccomp as sc
    except Exception as exc:  # ImportError, or RuntimeError("Unable to find libseccomp")
        return None, f"seccomp unavailable: {exc}"
    try:
        f = sc.SyscallFilter(defaction=sc.ALLOW)
        f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
        skipped = []
        for name in DENIED:
            try:
                f.add_rule(sc.ERRNO(errno.EPERM), name)
            except Exception:  # not a syscall on this architecture
                skipped.append(name)
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        for fam in range(AF_LIMIT):
            if fam not in ALLOWED_FAMILIES:
                f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, fam))
        f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.GE, AF_LIMIT))
        f.add_rule(sc.ERRNO(errno.EPROTONOSUPPORT), "socket", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, AF_NETLINK),
                   sc.Arg(2, sc.NE, NETLINK_ROUTE))
        for name in NO_IPC:
            try:
                f.add_rule(sc.ERRNO(errno.ENOSYS), name)
            except Exception:  # not a syscall on this architecture (or unknown to this libseccomp)
                skipped.append(name)
        # prlimit64(pid, resource, new, old): setting another process's limits (reading them is harmless)
        f.add_rule(sc.ERRNO(errno.EPERM), "prlimit64", sc.Arg(0, sc.NE, 0), sc.Arg(2, sc.NE, 0))
        # setpriority(which, who, prio) and ioprio_set(which, who, prio): this process only
        f.add_rule(sc.ERRNO(errno.EPERM), "setpriority", sc.Arg(0, sc.NE, 0))  # PRIO_PROCESS
        f.add_rule(sc.ERRNO(errno.EPERM), "setpriority", sc.Arg(1, sc.NE, 0))
        f.add_rule(sc.ERRNO(errno.EPERM), "ioprio_set", sc.Arg(0, sc.NE, 1))  # IOPRIO_WHO_PROCESS
        f.add_rule(sc.ERRNO(errno.EPERM), "ioprio_set", sc.Arg(1, sc.NE, 0))
        for name, index in SELF_ONLY:
            f.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(index, sc.NE, 0))
        for flag in CLONE_NS_FLAGS:
            f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        for request in DENIED_IOCTLS:
            f.add_rule(sc.ERRNO(errno.EPERM), "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
        with tempfile.TemporaryFile() as fh:
            f.export_bpf(fh)
            fh.seek(0)
            program = fh.read()
    except Exception as exc:
        return None, f"seccomp unavailable: could not compile the filter ({type(exc).__name__}: {exc})"
    denied = len(DENIED) + len(NO_IPC) - len(skipped) + 1
    return program, (f"seccomp: {denied} system calls denied, sockets of families {ALLOWED_FAMILIES} only, "
                     "priority and limits of the caller only")


def seccomp_program() -> bytes | None:
    """The compiled BPF program (bytes to hand to bwrap), or None when libseccomp is unavailable."""
    return _compile()[0]


def seccomp_status() -> str:
    """One line: what the filter denies, or why there is none."""
    return _compile()[1]


__all__ = ["ALLOWED_FAMILIES", "DENIED", "NO_IPC", "seccomp_program", "seccomp_status"]
