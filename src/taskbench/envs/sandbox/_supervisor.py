"""The program that runs *inside* the sandbox: a supervisor that runs agent code, one snippet at a time.

Standard library only, Python >= 3.8, and it never imports taskbench: it runs on the sandbox's interpreter
with no site-packages (``python -I -S``), and is mounted into the sandbox as a read-only file, with its three
sibling modules (``MODULES``) beside it, each read-only as well: ``_forkserver.py`` (the fork server),
``_child.py`` (the run's process: the code's API, its limits and alarms, its report) and ``_resources.py`` (the
rlimits, the memory sampler, the state a fork inherits). It imports them from its own directory, which is on
``sys.path`` only while it does: the code's ``sys.path`` is that of a bare ``python -I -S``.

Protocol (one JSON object per line on the control socket, fd given by ``--control FD``; the supervisor writes
ASCII JSON, so that any string the code produced, a lone surrogate included, can be sent):

    parent -> {"op": "hello", "pidns": true, "scratch": ["/work", "/tmp", "/dev/shm"], "workdir": "/work",
               "tools_socket": "/run/taskbench/tools.sock", "ports": [[8000, "/run/taskbench/port-8000.sock"]]}
    sup    -> {"op": "ready", "python": "3.11.7", "pid": 1}
    parent -> {"op": "run", "id": 1, "code": "...", "result_var": "result", "tools": [...], "limits": {...},
               "files": {"data.csv": "<base64>"}}
    sup    -> {"op": "done", "id": 1, "stdout": "...", "stderr": "...", "report": {...} | null, "limit": ...,
               "limit_reason": null | "...", "status": {...}, "cpu_seconds": 0.01, "max_rss_kb": 9000,
               "seconds": 0.003}
    sup    -> {"op": "clean", "id": 1, "tainted": null | "why this supervisor must not serve another run"}
    parent -> {"op": "exit"}

The answer to a run comes as soon as its processes are killed; the cleanup (reaping them, emptying the scratch,
checking state) follows, and its outcome comes as ``clean``, which the parent reads before its next run.

Each snippet runs in a process forked by the *fork server*, a process the supervisor forks once at the start,
before any run, and that never holds run data: so each run starts from the same clean interpreter state, and
nothing of an earlier run's code, output or result is in the memory it inherits (the supervisor handles all of
those). The run's process reads its job from a pipe. Afterwards every process the run left behind is killed
(every process of the sandbox's own PID namespace but the supervisor and the fork server; its process group
otherwise), the scratch directories are emptied (locked directories included) and their modes and extended
attributes restored, and SysV IPC objects left in the sandbox's IPC namespace are removed. The child reports its
result on a private pipe; the supervisor's one loop enforces the wall-time, output and memory limits (memory:
the anonymous and shared memory of every process of the run plus the scratch tmpfs, blocks and inodes, sampled
every ``SAMPLE`` seconds; see ``_resources.Memory``) and the files cap of the scratch directories. It then
checks its own state and the fork server's (limits, priority, CPU affinity, scratch directories) against what
they were at the start; a difference it cannot undo marks it ``tainted``, and the parent replaces it.

In the bwrap sandbox this process is pid 1 (``bwrap --as-pid-1``): not dumpable, and, as a namespace's init,
deaf to every signal from inside that it has no handler for (it has none: SIGINT is ignored too).
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:  # imported on the host, as part of taskbench (sandbox.py reads constants)
    from ._child import READ, SETUP_FAILED, preload, read_report
    from ._forkserver import ForkServer, serve_forks
    from ._resources import INODE_KB, SAMPLE, Memory, dumpable, own_state, prctl, usage
else:  # the entry point in the sandbox, run as a script: its sibling files are mounted beside it (MODULES)
    # appended, not prepended: no file beside this one can stand in for a module of the standard library
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    try:
        from _child import READ, SETUP_FAILED, preload, read_report
        from _forkserver import ForkServer, serve_forks
        from _resources import INODE_KB, SAMPLE, Memory, dumpable, own_state, prctl, usage
    finally:
        del sys.path[-1]  # the code's sys.path is a bare `python -I -S`'s (what is imported stays in sys.modules)

MODULES = ("_resources", "_child", "_forkserver")  # the sibling files, mounted beside this one
GRACE = 0.5  # seconds between the child's own wall-time alarm and the supervisor's SIGKILL


# ================================================================================================ supervisor


class Supervisor:
    def __init__(self, control_fd: int) -> None:
        self.ctl = socket.socket(fileno=control_fd)
        self.reader = self.ctl.makefile("rb")
        self.hello: dict[str, Any] = {}
        self.baseline: dict[str, Any] = {}
        self.modes: dict[str, int] = {}
        self.inodes: dict[str, int] = {}  # inode units each scratch directory uses when empty
        self.forks: ForkServer | None = None
        self.after: tuple[int, list[int]] | None = None  # the last run's pid and open pipes, until cleaned up

    def send(self, obj: dict[str, Any]) -> None:
        # ASCII JSON: a lone surrogate the code produced is sent as its escape, never fails to encode
        self.ctl.sendall(json.dumps(obj).encode("ascii") + b"\n")

    def serve(self) -> None:
        dumpable(0)  # the code cannot read this process's memory or fds through /proc
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as pid 1, no signal from inside then reaches us
        line = self.reader.readline()
        if not line:
            return
        self.hello = json.loads(line)
        if not self.hello.get("pidns"):
            prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: the runs' processes become our children
        for root in self.hello.get("scratch") or []:
            try:
                self.modes[root] = os.stat(root).st_mode & 0o7777
                st = os.statvfs(root)
                self.inodes[root] = st.f_files - st.f_ffree
            except OSError:
                pass
        self.baseline = own_state()
        if self.hello.get("warm"):
            preload()
        # forked now, before "ready" (so before any job can have reached this process): the runs are forked from
        # a process that never holds run data (this one does: jobs, outputs, reports)
        self.forks = ForkServer.start(self.hello)
        self.send({"op": "ready", "python": sys.version.split()[0], "pid": os.getpid()})
        while True:
            line = self.reader.readline()
            if not line:
                return
            msg = json.loads(line)
            if msg.get("op") == "run":
                try:
                    frame = self.run(msg, line)
                except BaseException as exc:
                    self.send({"op": "done", "id": msg.get("id"), "report": None,
                               "lost": f"the supervisor failed: {type(exc).__name__}: {exc}"[:500]})
                    return
                self.send(frame)
                try:  # after the answer: the caller does not wait for it, the next run does
                    tainted = self.cleanup()
                except BaseException as exc:
                    tainted = f"the cleanup after the run failed ({type(exc).__name__})"
                self.send({"op": "clean", "id": msg.get("id"), "tainted": tainted})
            elif msg.get("op") == "exit":
                return

    def run(self, job: dict[str, Any], line: bytes) -> dict[str, Any]:
        assert self.forks is not None
        limits = job["limits"]
        start = time.monotonic()
        pidns = bool(self.hello.get("pidns"))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        res_r, res_w = os.pipe()
        job_r, job_w = os.pipe()
        pid = self.forks.spawn([out_w, err_w, res_w, job_r])
        for fd in (out_w, err_w, res_w, job_r):
            os.close(fd)
        if pid is None:  # the fork server is gone or failed to fork: the run did not start
            for fd in (out_r, err_r, res_r, job_w):
                os.close(fd)
            return {"op": "done", "id": job.get("id"), "stdout": "", "stderr": "", "truncated": False,
                    "report": None, "limit": None, "status": {"exit": SETUP_FAILED}, "cpu_seconds": None,
                    "max_rss_kb": None, "seconds": round(time.monotonic() - start, 6)}
        cap = int(limits["output_bytes"])
        outputs = {out_r: bytearray(), err_r: bytearray()}
        result = bytearray()
        limit: str | None = None
        why: str | None = None
        total = 0
        sel = selectors.DefaultSelector()
        for fd in (out_r, err_r, res_r):
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        os.set_blocking(job_w, False)
        sel.register(job_w, selectors.EVENT_WRITE)
        pending = memoryview(line)
        pidfd = _pidfd(pid)
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ)
        memory = Memory(limits, self.scratch_use, self.others) if pidns else None
        next_sample = start + SAMPLE
        deadline = start + float(limits["wall_seconds"]) + GRACE
        exited = False
        status = rusage = None
        open_fds = {out_r, err_r, res_r}
        while open_fds or not exited:
            now = time.monotonic()
            if now >= deadline:
                limit = limit or "wall"
                break
            if memory is not None and now >= next_sample:
                over = memory.sample(deadline)
                if over is not None:
                    limit, why = over
                    break
                next_sample = time.monotonic() + SAMPLE
                continue  # the deadline first, again
            timeout = deadline - now if pidfd is not None else min(0.01, deadline - now)
            if memory is not None:
                timeout = min(timeout, max(0.0, next_sample - now))
            for key, _ in sel.select(timeout):
                fd = key.fd
                if fd == job_w:
                    try:
                        n = os.write(job_w, pending[:READ])
                    except BlockingIOError:
                        continue
                    except OSError:  # the process is gone before it read its job
                        n = len(pending)
                    pending = pending[n:]
                    if not pending:
                        sel.unregister(job_w)
                        os.close(job_w)
                        job_w = -1
                    continue
                if fd == pidfd:
                    sel.unregister(pidfd)
                    os.close(pidfd)
                    pidfd = None
                    continue
                try:
                    data = os.read(fd, READ)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(fd)
                    open_fds.discard(fd)
                    continue
                if fd == res_r:
                    result += data
                    if len(result) > max(cap, 1 << 20) * 2:
                        limit = "output"
                else:
                    room = cap - total
                    outputs[fd] += data[:max(room, 0)]
                    total += len(data)
                    if total > cap:
                        limit = "output"
            if limit:
                break
            while not exited:  # orphans of the code are ours to reap as well (init, or a subreaper)
                try:
                    got, st, ru = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if got == 0:
                    break
                self._reaped(got)
                if got == pid:
                    exited, status, rusage = True, st, ru
                    if open_fds:  # processes it started may still hold the pipes: stop waiting for them
                        total = self._drain(open_fds, outputs, result, cap, total)
            if exited and open_fds:
                break
        if total > cap:
            limit = limit or "output"
        peak_kb = memory.peak_kb if memory is not None else 0
        cpu, hwm = None, None
        if not exited:  # stop every process of the run at once; reaping them (which can take a while) comes later
            cpu, hwm = usage(pid)
            self._signal_all(pid)
            try:
                got, st, ru = os.wait4(pid, os.WNOHANG)
                if got == pid:
                    exited, status, rusage = True, st, ru
            except ChildProcessError:
                pass
        if pidns:
            peak_kb = max(peak_kb, self.scratch_use(0)[0])  # the files it left count until they are wiped
        sel.close()
        left = [fd for fd in (out_r, err_r, res_r, job_w, pidfd) if fd is not None and fd >= 0]
        self.after = (pid, left)
        report = read_report(bytes(result)) if result and limit != "output" else None
        max_rss = max(rusage.ru_maxrss if rusage else (hwm or 0), peak_kb) or None
        if rusage is not None:
            cpu = rusage.ru_utime + rusage.ru_stime
        return {
            "op": "done",
            "id": job.get("id"),
            "stdout": bytes(outputs[out_r]).decode("utf-8", "replace"),
            "stderr": bytes(outputs[err_r]).decode("utf-8", "replace"),
            "truncated": total > cap,
            "report": report,
            "limit": limit,
            "limit_reason": why,
            "status": _status(status) if exited else {"signal": "SIGKILL"},
            "cpu_seconds": round(cpu, 6) if cpu is not None else None,
            "max_rss_kb": max_rss,
            "seconds": round(time.monotonic() - start, 6),
        }

    def cleanup(self) -> str | None:
        """Kill and reap what is left of the last run, empty the scratch, and check that nothing the next run
        would inherit changed; what could not be undone, if anything (the parent then replaces this
        supervisor)."""
        assert self.forks is not None
        after, self.after = self.after, None
        if after is not None:
            pid, fds = after
            self._kill_all(pid)
            self._reap()
            if self.hello.get("pidns"):
                _remove_sysv_ipc()
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        tainted = self._wipe() or self._changed()
        if tainted is None and self.forks.check() is not None:
            # the run killed, stopped or changed the fork server: start a fresh one (a new interpreter)
            self.forks.stop()
            self.forks = ForkServer.start(self.hello, fresh=True)
            tainted = self.forks.check()
        return tainted

    def scratch_use(self, files_cap: int) -> tuple[int, str | None]:
        """What the run's files take in the scratch tmpfs now, KB: their blocks, and 1 KB per inode unit (the
        kernel's own measure: an inode, a directory entry, or 1 KB of extended attributes); and the directory
        that holds more than ``files_cap`` units, if one does."""
        total = 0
        full = None
        for root in self.hello.get("scratch") or []:
            try:
                st = os.statvfs(root)
            except OSError:
                continue
            units = max(0, st.f_files - st.f_ffree - self.inodes.get(root, 0))
            total += (st.f_blocks - st.f_bfree) * st.f_frsize // 1024 + units * INODE_KB
            if files_cap and units > files_cap and full is None:
                full = (f"{root} holds more than {files_cap} files, directories and links (extended attributes "
                        "count 1 per KB)")
        return total, full

    def _reaped(self, pid: int) -> None:
        if self.forks is not None and pid == self.forks.pid:
            self.forks.dead = True

    def _changed(self) -> str | None:
        """What the run changed in this process, if anything."""
        now = own_state()
        for key, value in self.baseline.items():
            if now.get(key) != value:
                return f"the run changed the supervisor's {key}"
        return None

    def _drain(self, open_fds: set[int], outputs: dict[int, bytearray], result: bytearray, cap: int,
               total: int) -> int:
        for fd in list(open_fds):
            while True:
                try:
                    data = os.read(fd, READ)
                except (BlockingIOError, OSError):
                    break
                if not data:
                    break
                if fd in outputs:
                    room = cap - total
                    outputs[fd] += data[:max(room, 0)]
                    total += len(data)
                else:
                    result += data
        return total

    def others(self) -> list[int]:
        """Every process of this sandbox but this one, its init and the fork server."""
        keep = {1, os.getpid(), self.forks.pid if self.forks is not None else 0}
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]

    def _signal_all(self, pid: int) -> None:
        """SIGKILL every process of the run, without waiting for any."""
        if self.hello.get("pidns"):
            for other in self.others():
                try:
                    os.kill(other, signal.SIGKILL)
                except OSError:
                    pass
        else:
            for kill, target in ((os.killpg, pid), (os.kill, pid)):
                try:
                    kill(target, signal.SIGKILL)
                except OSError:
                    pass

    def _kill_all(self, pid: int) -> None:
        if self.hello.get("pidns"):
            # again until none is left (a fork bomb forks while it is being killed; the dead are reaped by init)
            deadline = time.monotonic() + 2.0
            while True:
                self._signal_all(pid)
                self._reap()
                if not self.others() or time.monotonic() > deadline:
                    break
                time.sleep(0.001)
        else:
            self._signal_all(pid)

    def _reap(self) -> None:
        while True:
            try:
                got, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if got == 0:
                return
            self._reaped(got)

    def _wipe(self) -> str | None:
        """Empty the scratch directories and restore their modes and extended attributes; what could not be
        undone, if anything (the parent then replaces this supervisor)."""
        for root in self.hello.get("scratch") or []:
            try:
                if root in self.modes and os.stat(root).st_mode & 0o7777 != self.modes[root]:
                    os.chmod(root, self.modes[root])
                _clear_xattrs(root)
                with os.scandir(root) as it:
                    entries = [(e.path, e.is_dir(follow_symlinks=False)) for e in it]
                for path, is_dir in entries:
                    if is_dir:
                        _rmtree(path)
                    else:
                        os.unlink(path)
                if os.listdir(root):
                    return f"{root} could not be emptied"
            except FileNotFoundError:
                if os.path.isdir(root):
                    return f"{root} could not be emptied"
                return f"{root} is gone"
            except (OSError, RecursionError) as exc:
                return f"{root} could not be emptied ({type(exc).__name__})"
        return None


def _clear_xattrs(path: str) -> None:
    """Remove the extended attributes (user.*, POSIX ACLs) the code set on a scratch root: they would carry
    from one run to the next. Raises OSError when one stays."""
    try:
        names = os.listxattr(path)
    except OSError:  # no xattrs on this filesystem
        return
    for name in names:
        try:
            os.removexattr(path, name)
        except OSError:
            pass
    if any(n.startswith(("user.", "system.posix_acl")) for n in os.listxattr(path)):
        raise OSError(errno.EPERM, "an extended attribute could not be removed", path)


def _rmtree(path: str) -> None:
    """Remove a directory tree the code left, unlocking each directory first (mode 000 or 0500 included: they
    are the sandbox uid's own). Raises when something stays (the caller then replaces the supervisor)."""
    os.chmod(path, 0o700)
    with os.scandir(path) as it:
        entries = [(e.path, e.is_dir(follow_symlinks=False)) for e in it]
    for child, is_dir in entries:
        if is_dir:
            _rmtree(child)
        else:
            os.unlink(child)
    os.rmdir(path)


def _remove_sysv_ipc() -> None:
    """Remove the SysV shared memory segments, message queues and semaphore sets the run left in the sandbox's
    IPC namespace (they outlive their processes). With the seccomp filter none can be made and this reads three
    empty files; without it this is what releases their memory at the end of the run."""
    found = []
    for kind, field in (("shm", 1), ("msg", 1), ("sem", 1)):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                ids = [int(line.split()[field]) for line in fh.read().splitlines()[1:] if line.split()]
        except (OSError, ValueError, IndexError):
            continue
        found += [(kind, i) for i in ids]
    if not found:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for kind, ident in found:  # IPC_RMID (0)
        if kind == "shm":
            libc.shmctl(ident, 0, None)
        elif kind == "msg":
            libc.msgctl(ident, 0, None)
        else:
            libc.semctl(ident, 0, 0)


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def _status(status: int | None) -> dict[str, Any] | None:
    if status is None:
        return None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return {"signal": name}
    return {"exit": os.WEXITSTATUS(status)}


def main(argv: list[str]) -> None:
    if "--fork-server" in argv:  # a fresh fork server, started by a supervisor that has handled runs
        sock = socket.socket(fileno=int(argv[argv.index("--fork-server") + 1]))
        hello = json.loads(sock.recv(1 << 16) or b"{}")
        if hello.get("warm"):
            preload()
        serve_forks(sock, hello, os.getppid())
    fd = int(argv[argv.index("--control") + 1])
    Supervisor(fd).serve()


if __name__ == "__main__":
    main(sys.argv)
