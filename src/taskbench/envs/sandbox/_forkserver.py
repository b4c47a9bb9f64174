"""Part of the sandbox's supervisor (see ``_supervisor.py``): the fork server, which forks the run's processes.

Standard library only, and it never imports taskbench: mounted read-only into the sandbox beside the supervisor.

The supervisor forks the fork server once at its start, before any run (:meth:`ForkServer.start`), so each run's
process starts from the same clean interpreter state. The fork server never holds run data: a request is one
word and four descriptors (the ends of the run's stdout, stderr, report and job pipes); the job goes from the
supervisor to the run's process through its pipe (``_child.child_entry``). It ignores every signal it can; a
fork server that a run killed, stopped or changed is replaced by a fresh interpreter (the supervisor's file run
with ``--fork-server``), not forked from the supervisor, which by then has held run data.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING or __package__:  # imported on the host, as part of taskbench
    from ._child import child_entry
    from ._resources import dumpable, own_state, prctl
else:  # in the sandbox: a sibling file, imported by the supervisor's entry point
    from _child import child_entry
    from _resources import dumpable, own_state, prctl

SCRIPT = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""  # the supervisor, to start it afresh


def _quiet_signals() -> list[int]:
    """Every signal the fork server ignores: all that can be caught, but SIGCHLD (it waits for its children) and
    the harmless SIGCONT. Only SIGKILL and SIGSTOP then reach it, and the supervisor notices both."""
    skip = {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGCONT}
    return [int(s) for s in signal.valid_signals() if s not in skip]


def serve_forks(sock: socket.socket, hello: dict[str, Any], sup_pid: int) -> NoReturn:
    """Fork the run's processes. Started by the supervisor before any run, it never holds run data: a request is
    one word and four descriptors; the job itself goes from the supervisor to the run's process through a pipe.
    Each run's process is forked through an intermediate process that exits at once, so that it becomes the
    supervisor's child (the supervisor is the namespace's init, or a subreaper without one)."""
    keep = sock.fileno()
    os.closerange(3, keep)  # the control socket and everything else of the supervisor's
    os.closerange(keep + 1, 1 << 16)
    dumpable(0)  # as the supervisor: a run cannot read or write its memory (an exec made a fresh one dumpable)
    prctl(1, signal.SIGKILL)  # dies with the supervisor
    if os.getppid() != sup_pid:
        os._exit(0)
    quiet: dict[int, Any] = {}
    for sig in _quiet_signals():
        try:
            quiet[sig] = signal.getsignal(sig)
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            quiet.pop(sig, None)
    quiet = {sig: (signal.SIG_DFL if handler is None else handler) for sig, handler in quiet.items()}
    baseline = own_state()
    while True:
        try:
            msg, ancillary, _, _ = sock.recvmsg(16, socket.CMSG_SPACE(8 * array.array("i").itemsize))
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        fds = _received_fds(ancillary)
        try:
            if msg == b"fork" and len(fds) == 4:
                _fork_run(sock, fds, hello, sup_pid, quiet)
            elif msg == b"check":
                now = own_state()
                changed = [key for key, value in baseline.items() if now.get(key) != value]
                sock.send(("changed its " + ", ".join(changed)).encode() if changed else b"ok")
        except OSError:
            os._exit(0)
        finally:
            for fd in fds:
                os.close(fd)


def _fork_run(sock: socket.socket, fds: list[int], hello: dict[str, Any], sup_pid: int,
              quiet: dict[int, Any]) -> None:
    try:
        mid = os.fork()
    except OSError:
        sock.send(b"0")
        return
    if mid == 0:
        pid = 0
        try:
            pid = os.fork()
            if pid == 0:
                child_entry(fds, hello, sup_pid, quiet)
        except BaseException:
            pass
        try:
            sock.send(str(max(pid, 0)).encode())
        finally:
            os._exit(0)
    os.waitpid(mid, 0)


def _received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    return list(fds)


class ForkServer:
    """The supervisor's side of the fork server."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.dead = False

    @classmethod
    def start(cls, hello: dict[str, Any], fresh: bool = False) -> ForkServer:
        """Fork the fork server; ``fresh``: as a new interpreter (fork, then exec at once), for a supervisor
        that has handled runs: nothing of its memory is then in the fork server's."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sup_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                if fresh:
                    fd = theirs.fileno()
                    os.set_inheritable(fd, True)
                    os.closerange(3, fd)
                    os.closerange(fd + 1, 1 << 16)
                    os.execv(sys.executable, [sys.executable, "-I", "-S", "-B", SCRIPT, "--fork-server", str(fd)])
                serve_forks(theirs, hello, sup_pid)
            finally:
                os._exit(0)
        theirs.close()
        if fresh:
            try:
                ours.send(json.dumps(hello).encode("ascii"))
            except OSError:
                pass
        return cls(pid, ours)

    def stop(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.sock.close()
        self.dead = True

    def spawn(self, fds: list[int]) -> int | None:
        """Fork a run's process with these pipe ends (stdout, stderr, report, job); its pid, or None."""
        reply = self._ask(b"fork", fds, 10.0)
        return int(reply) if reply and reply.isdigit() and int(reply) > 0 else None

    def check(self) -> str | None:
        """Why the fork server can serve no further run (the run killed it, stopped it, changed its limits)."""
        if self.dead:
            return "the run killed the fork server"
        try:
            os.kill(self.pid, signal.SIGCONT)  # the run may have stopped it
        except OSError:
            return "the run killed the fork server"
        reply = self._ask(b"check", [], 5.0)
        if reply == b"ok":
            return None
        return "the fork server " + (reply.decode("ascii", "replace") if reply else "stopped answering")

    def _ask(self, word: bytes, fds: list[int], timeout: float) -> bytes | None:
        if self.dead:
            return None
        try:
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
            self.sock.sendmsg([word], rights)
            self.sock.settimeout(timeout)
            return self.sock.recv(64) or None
        except OSError:
            return None
        finally:
            try:
                self.sock.settimeout(None)
            except OSError:
                pass

