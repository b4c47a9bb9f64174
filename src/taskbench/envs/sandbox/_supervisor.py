"""The program that runs *inside* the sandbox: a supervisor that runs agent code, one snippet at a time.

Standard library only, Python >= 3.8, and it never imports taskbench: it runs on the sandbox's interpreter
with no site-packages, and is mounted into the sandbox as a single read-only file.

Protocol (one JSON object per line on the control socket, fd given by ``--control FD``):

    parent -> {"op": "hello", "pidns": true, "scratch": ["/work", "/tmp"], "workdir": "/work",
               "tools_socket": "/run/taskbench/tools.sock", "ports": [[8000, "/run/taskbench/port-8000.sock"]]}
    sup    -> {"op": "ready", "python": "3.11.7", "pid": 2}
    parent -> {"op": "run", "id": 1, "code": "...", "result_var": "result", "tools": [...], "limits": {...},
               "files": {"data.csv": "<base64>"}}
    sup    -> {"op": "done", "id": 1, "stdout": "...", "stderr": "...", "report": {...} | null, "limit": ...,
               "status": {...}, "cpu_seconds": 0.01, "max_rss_kb": 9000, "seconds": 0.003}
    parent -> {"op": "exit"}

Each snippet runs in a child forked from this process, so it starts from the same clean interpreter state;
afterwards every process it left behind is killed (``kill(-1)`` inside the sandbox's own PID namespace, its
process group otherwise) and the scratch directories are emptied. The child reports its result on a private
pipe; the supervisor enforces the wall-time and output limits and reads the child's exit status and usage.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import resource
import selectors
import signal
import socket
import sys
import time
import types
from collections.abc import Callable
from typing import Any, BinaryIO, NoReturn

# Imported on first use, so that a cold start stays cheap (a warm supervisor imports them up front, before any
# agent code runs, see ``preload``): base64 (files), threading (tool client, port relay), traceback and
# linecache (error reports).

AGENT_FILE = "<agent>"
SETUP_FAILED = 71  # exit status of a child that could not set itself up (the sandbox's fault, not the code's)

# Bound now, before any agent code runs: the code may replace module attributes (json.dumps = None) without
# breaking the report of its own run.
_dumps = json.dumps
_write = os.write
_exit = os._exit
_getpid = os.getpid
_setitimer = signal.setitimer
_signal = signal.signal
GRACE = 0.5  # seconds between the child's own wall-time alarm and the supervisor's SIGKILL
READ = 65536


# ================================================================================================ child side


class LimitExceeded(BaseException):
    """Raised in the agent's code when the CPU or wall-time alarm fires (a BaseException: a bare
    ``except Exception`` in the agent's code does not swallow it)."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


class ToolError(Exception):
    """A tool call failed: ``error`` is the tool's error text, ``status`` its HTTP status (if any),
    ``tool`` the tool's name."""

    def __init__(self, error: str, tool: str = "", status: int | None = None) -> None:
        super().__init__(error if status is None else f"{error} (status {status})")
        self.error = error
        self.tool = tool
        self.status = status


class _Client:
    """The agent's side of the tool channel: one connection per thread to the tool socket, JSON lines."""

    def __init__(self, path: str) -> None:
        import threading

        self.path = path
        self.local = threading.local()

    def _conn(self) -> tuple[socket.socket, BinaryIO]:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self.path)
            conn = self.local.conn = (sock, sock.makefile("rb"))
        return conn

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if not self.path:
            raise ToolError("this sandbox has no tools", tool=name)
        try:
            payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"arguments of {name!r} must be JSON values: {exc}") from None
        sock, reader = self._conn()
        sock.sendall(payload.encode("utf-8") + b"\n")
        line = reader.readline()
        if not line:
            self.local.conn = None
            raise ToolError("the tool channel closed", tool=name)
        reply = json.loads(line)
        if reply.get("error") is not None:
            raise ToolError(reply["error"], tool=name, status=reply.get("status"))
        return reply.get("content")


def _api_module(job: dict[str, Any], client: _Client) -> Any:
    """The documented API: ``call_tool``, ``ToolError`` and one function per tool (API-safe names)."""
    mod: Any = types.ModuleType("taskbench_sandbox", "Tools of this sandbox: call_tool(name, **arguments), "
                                                "ToolError, and one function per tool.")

    def call_tool(name: str, arguments: dict[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """Call the tool ``name`` with ``arguments`` (a dict) and/or keyword arguments; returns its JSON
        result or raises ToolError with the tool's error text and status."""
        args = dict(arguments or {})
        args.update(kwargs)
        return client.call(name, args)

    mod.call_tool = call_tool
    mod.ToolError = ToolError
    mod.tools = {}
    mod.tool_names = {}
    for spec in job.get("tools") or []:
        fn = _tool_function(call_tool, spec)
        mod.tools[spec["api"]] = fn
        mod.tool_names[spec["api"]] = spec["name"]
    return mod


def _tool_function(call_tool: Callable[..., Any], spec: dict[str, Any]) -> Callable[..., Any]:
    name = spec["name"]

    def tool(arguments: dict[str, Any] | None = None, /, **kwargs: Any) -> Any:
        return call_tool(name, arguments, **kwargs)

    tool.__name__ = tool.__qualname__ = spec["api"]
    props = (spec.get("parameters") or {}).get("properties") or {}
    required = set((spec.get("parameters") or {}).get("required") or [])
    lines = [spec.get("description") or name]
    if name != spec["api"]:
        lines.append(f"Tool name: {name}")
    for pname, schema in props.items():
        kind = schema.get("type", "") if isinstance(schema, dict) else ""
        desc = schema.get("description", "") if isinstance(schema, dict) else ""
        flag = " (required)" if pname in required else ""
        lines.append(f"  {pname}: {kind}{flag} {desc}".rstrip())
    tool.__doc__ = "\n".join(lines)
    return tool


def _set_limits(limits: dict[str, Any], pidns: bool) -> None:
    def lim(which: int, soft: int, hard: int | None = None) -> None:
        try:
            resource.setrlimit(which, (soft, soft if hard is None else hard))
        except (ValueError, OSError):
            pass

    lim(resource.RLIMIT_CORE, 0)
    cpu = max(1, int(-(-float(limits["cpu_seconds"]) // 1)))
    lim(resource.RLIMIT_CPU, cpu, cpu + 1)
    lim(resource.RLIMIT_AS, int(limits["memory_mb"]) * 1024 * 1024)
    lim(resource.RLIMIT_FSIZE, int(limits["disk_mb"]) * 1024 * 1024)
    lim(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    if pidns:  # RLIMIT_NPROC counts the tasks of this uid in the sandbox's own user namespace
        lim(resource.RLIMIT_NPROC, int(limits["processes"]) + _tasks_in_namespace() - 1)


def _tasks_in_namespace() -> int:
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                n += len(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                n += 1
    return n


def _set_alarms(limits: dict[str, Any]) -> None:
    def on_cpu(signum: int, frame: Any) -> None:
        raise LimitExceeded("cpu", f"CPU time limit exceeded ({limits['cpu_seconds']:g} s)")

    def on_wall(signum: int, frame: Any) -> None:
        raise LimitExceeded("wall", f"wall time limit exceeded ({limits['wall_seconds']:g} s)")

    signal.signal(signal.SIGXCPU, on_cpu)
    signal.signal(signal.SIGALRM, on_wall)
    signal.setitimer(signal.ITIMER_REAL, float(limits["wall_seconds"]))


def _forward_ports(ports: list[list[Any]]) -> None:
    """Listen on each allowed port on the sandbox's own loopback and relay every connection to the parent's
    socket for that port (the parent connects it to the real 127.0.0.1:PORT, and to nothing else)."""
    import threading

    for port, path in ports:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", int(port)))
        server.listen(64)
        threading.Thread(target=_accept_loop, args=(server, path), daemon=True).start()


def _accept_loop(server: socket.socket, path: str) -> None:
    import threading

    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(conn, path), daemon=True).start()


def _relay(conn: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        conn.close()
        return
    sel = selectors.DefaultSelector()
    sel.register(conn, selectors.EVENT_READ, upstream)
    sel.register(upstream, selectors.EVENT_READ, conn)
    open_ends = 2
    try:
        while open_ends:
            for key, _ in sel.select():
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                data = source.recv(READ)
                if data:
                    key.data.sendall(data)
                else:
                    sel.unregister(key.fileobj)
                    open_ends -= 1
                    try:
                        key.data.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
    except OSError:
        pass
    finally:
        conn.close()
        upstream.close()


def _error_report(exc: BaseException, code: str) -> dict[str, Any]:
    """Exception type, message, line in the agent's code and the traceback trimmed to the agent's frames."""
    import linecache
    import traceback

    linecache.cache[AGENT_FILE] = (len(code), None, code.splitlines(True), AGENT_FILE)
    if isinstance(exc, SyntaxError) and exc.filename == AGENT_FILE:
        text = (exc.text or "").rstrip("\n")
        tb = f'  File "{AGENT_FILE}", line {exc.lineno}\n    {text.strip()}\n{type(exc).__name__}: {exc.msg}'
        return {"type": type(exc).__name__, "message": exc.msg or str(exc), "line": exc.lineno, "traceback": tb}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == AGENT_FILE]
    line = frames[-1].lineno if frames else None
    parts = ["Traceback (most recent call last):\n"]
    parts += traceback.format_list(frames)
    parts += traceback.format_exception_only(type(exc), exc)
    message = str(exc)
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        message = repr(exc.args[0])
    return {"type": type(exc).__name__, "message": message, "line": line, "traceback": "".join(parts).rstrip()}


def _classify(exc: BaseException) -> str | None:
    """Which limit an uncaught exception means, if any."""
    if isinstance(exc, LimitExceeded):
        return exc.limit
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, OSError):
        if exc.errno == errno.EMFILE:
            return "files"
        if exc.errno == errno.EAGAIN and (getattr(exc, "spawning", False) or _in_spawn(exc)):
            return "processes"
        if exc.errno in (errno.EFBIG, errno.ENOSPC):
            return "output"
        if exc.errno == errno.ENOMEM:
            return "memory"
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        return "processes"
    return None


def _in_spawn(exc: BaseException) -> bool:
    import traceback

    names = {f.name for f in traceback.extract_tb(exc.__traceback__)}
    return bool(names & {"_execute_child", "_launch", "_fork_exec", "spawnv", "fork"})


def _tag_fork() -> None:
    """Wrap os.fork so that a failure at the process limit is recognised as such (subprocess and
    multiprocessing are recognised by their frames)."""
    real_fork = os.fork

    def fork() -> int:
        try:
            return real_fork()
        except OSError as exc:
            exc.spawning = True  # type: ignore[attr-defined]
            raise

    fork.__doc__ = real_fork.__doc__
    os.fork = fork


def run_child(job: dict[str, Any], hello: dict[str, Any], result_fd: int) -> NoReturn:
    """Run one snippet in this (forked) process and write the report to ``result_fd``. Never returns."""
    reserve = bytearray(1 << 20)  # freed on MemoryError so the report can still be written
    report: dict[str, Any] = {"result": None, "error": None, "limit": None}
    me = os.getpid()  # copies of this process that the code forks end here too, but only this one reports
    code = job["code"]
    try:
        limits = job["limits"]
        files = job.get("files") or {}
        if files:
            import base64
        for rel, data in files.items():
            path = os.path.join(hello["workdir"], rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(base64.b64decode(data))
        client = _Client(hello.get("tools_socket") or "")
        api = _api_module(job, client)
        sys.modules["taskbench_sandbox"] = api
        namespace = {"__name__": "__main__", "__builtins__": builtins, "call_tool": api.call_tool,
                     "ToolError": ToolError, **api.tools}
        if hello.get("ports"):
            _forward_ports(hello["ports"])
        _tag_fork()
        _set_limits(limits, bool(hello.get("pidns")))
        _set_alarms(limits)
        try:
            compiled = compile(code, AGENT_FILE, "exec")
            exec(compiled, namespace)
        finally:
            _setitimer(signal.ITIMER_REAL, 0)
        value = namespace.get(job.get("result_var") or "result")
        try:
            report["result"] = _dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            report["error"] = {
                "type": "ResultError",
                "message": f"the result variable {job.get('result_var') or 'result'!r} is not a JSON value "
                           f"({type(value).__name__}): {exc}",
                "line": None, "traceback": None,
            }
    except SystemExit as exc:
        if exc.code not in (None, 0):
            report["error"] = {"type": "SystemExit", "message": f"exit status {exc.code}", "line": None,
                               "traceback": None}
    except BaseException as exc:  # the agent's error, reported for it to repair
        del reserve
        try:
            report["limit"] = _classify(exc)
            report["error"] = _error_report(exc, code)
        except BaseException:  # out of memory even now, or the code broke traceback: the bare facts
            report["limit"] = report["limit"] or ("memory" if isinstance(exc, MemoryError) else None)
            report["error"] = {"type": type(exc).__name__, "message": "", "line": None, "traceback": None}
    finally:
        _setitimer(signal.ITIMER_REAL, 0)
        _signal(signal.SIGALRM, signal.SIG_IGN)
        _signal(signal.SIGXCPU, signal.SIG_IGN)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    if _getpid() != me:
        _exit(0 if report["error"] is None else 1)
    try:
        data = _dumps(report).encode("utf-8")
        view = memoryview(data)
        while view:
            n = _write(result_fd, view)
            view = view[n:]
    except BaseException:
        _exit(70)
    _exit(0)


def _child_entry(job: dict[str, Any], hello: dict[str, Any], out_w: int, err_w: int, res_w: int) -> NoReturn:
    try:
        os.setpgid(0, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        high = min(1023, soft - 1) if soft > 16 else 15
        os.dup2(res_w, high)
        os.closerange(3, high)  # the control socket, the other pipes: nothing of the supervisor's is left
        os.closerange(high + 1, hard if 0 < hard < (1 << 20) else (1 << 20))
        _dumpable(1)
        _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the code's process dies with its supervisor
        if os.getppid() == 1 and not hello.get("pidns"):
            os._exit(SETUP_FAILED)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        # unbuffered: what the code printed before it was killed is not lost
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", write_through=True)
        os.chdir(hello["workdir"])
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    except BaseException:
        os._exit(SETUP_FAILED)
    run_child(job, hello, high)


# ================================================================================================ supervisor


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except Exception:
        pass


def _dumpable(value: int) -> None:
    _prctl(4, value)  # PR_SET_DUMPABLE


class Supervisor:
    def __init__(self, control_fd: int) -> None:
        self.ctl = socket.socket(fileno=control_fd)
        self.reader = self.ctl.makefile("rb")
        self.hello: dict[str, Any] = {}

    def send(self, obj: dict[str, Any]) -> None:
        self.ctl.sendall(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")

    def serve(self) -> None:
        _dumpable(0)  # the code cannot read this process's memory or fds through /proc
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        line = self.reader.readline()
        if not line:
            return
        self.hello = json.loads(line)
        self.send({"op": "ready", "python": sys.version.split()[0], "pid": os.getpid()})
        if self.hello.get("warm"):
            preload()
        while True:
            line = self.reader.readline()
            if not line:
                return
            msg = json.loads(line)
            if msg.get("op") == "run":
                self.send(self.run(msg))
            elif msg.get("op") == "exit":
                return

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        limits = job["limits"]
        start = time.monotonic()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            self.ctl.close()
            _child_entry(job, self.hello, out_w, err_w, res_w)
        for fd in (out_w, err_w, res_w):
            os.close(fd)
        cap = int(limits["output_bytes"])
        outputs = {out_r: bytearray(), err_r: bytearray()}
        result = bytearray()
        limit = None
        total = 0
        sel = selectors.DefaultSelector()
        for fd in (out_r, err_r, res_r):
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        pidfd = _pidfd(pid)
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ)
        deadline = start + float(limits["wall_seconds"]) + GRACE
        exited = False
        status = rusage = None
        open_fds = {out_r, err_r, res_r}
        while open_fds or not exited:
            now = time.monotonic()
            if now >= deadline:
                limit = limit or "wall"
                break
            timeout = deadline - now if pidfd is not None else min(0.01, deadline - now)
            for key, _ in sel.select(timeout):
                fd = key.fd
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
            if not exited:
                got, st, ru = os.wait4(pid, os.WNOHANG)
                if got == pid:
                    exited, status, rusage = True, st, ru
                    if open_fds:  # processes it started may still hold the pipes: stop waiting for them
                        total = self._drain(open_fds, outputs, result, cap, total)
                        break
        if total > cap:
            limit = limit or "output"
        if not exited:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status, rusage = os.wait4(pid, 0)
        self._kill_all(pid)
        self._reap()
        for fd in list(open_fds):
            try:
                sel.unregister(fd)
            except (KeyError, ValueError):
                pass
            os.close(fd)
        if pidfd is not None:
            os.close(pidfd)
        sel.close()
        for fd in (out_r, err_r, res_r):
            if fd not in open_fds:
                os.close(fd)
        self._wipe()
        report = None
        if result and limit != "output":
            try:  # the first document: the code can write to its own report pipe, but not ahead of it
                report, _ = json.JSONDecoder().raw_decode(bytes(result).decode("utf-8", "replace"))
            except ValueError:
                report = None
            if not isinstance(report, dict):
                report = {"result": None, "limit": None, "error": {
                    "type": "ReportError", "message": "the run's report could not be read (did the code write to "
                    "its report pipe?)", "line": None, "traceback": None}}
        return {
            "op": "done",
            "id": job.get("id"),
            "stdout": bytes(outputs[out_r]).decode("utf-8", "replace"),
            "stderr": bytes(outputs[err_r]).decode("utf-8", "replace"),
            "truncated": total > cap,
            "report": report,
            "limit": limit,
            "status": _status(status),
            "cpu_seconds": round(rusage.ru_utime + rusage.ru_stime, 6) if rusage else None,
            "max_rss_kb": rusage.ru_maxrss if rusage else None,
            "seconds": round(time.monotonic() - start, 6),
        }

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

    def _kill_all(self, pid: int) -> None:
        if self.hello.get("pidns"):
            # every process of this sandbox but this one and its init; again until none is left (a fork bomb
            # forks while it is being killed; the dead are reaped by init)
            me = os.getpid()
            deadline = time.monotonic() + 2.0
            while True:
                try:
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    pass
                self._reap()
                others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
                if not others or time.monotonic() > deadline:
                    break
                time.sleep(0.001)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _reap(self) -> None:
        while True:
            try:
                got, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if got == 0:
                return

    def _wipe(self) -> None:
        for root in self.hello.get("scratch") or []:
            try:
                entries = os.listdir(root)
            except OSError:
                continue
            for name in entries:
                path = os.path.join(root, name)
                try:
                    if os.path.isdir(path) and not os.path.islink(path):
                        _rmtree(path)
                    else:
                        os.unlink(path)
                except OSError:
                    pass


def _rmtree(path: str) -> None:
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            full = os.path.join(root, name)
            try:
                (os.unlink if os.path.islink(full) else os.rmdir)(full)
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def preload() -> None:
    """Import what runs need, so that forked runs start with it (warm supervisors)."""
    import base64  # noqa: F401
    import linecache  # noqa: F401
    import threading  # noqa: F401
    import traceback  # noqa: F401


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
    fd = int(argv[argv.index("--control") + 1])
    Supervisor(fd).serve()


if __name__ == "__main__":
    main(sys.argv)
