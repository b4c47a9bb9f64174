"""The seccomp filter loaded into the sandbox (bwrap ``--seccomp FD``): a deny list of the system calls that
confined code has no business making and that widen the kernel's attack surface.

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
    return program, f"seccomp: {len(DENIED) - len(skipped) + 1} system calls denied"


def seccomp_program() -> bytes | None:
    """The compiled BPF program (bytes to hand to bwrap), or None when libseccomp is unavailable."""
    return _compile()[0]


def seccomp_status() -> str:
    """One line: what the filter denies, or why there is none."""
    return _compile()[1]


__all__ = ["DENIED", "seccomp_program", "seccomp_status"]
