"""The program that runs *inside* the sandbox: a supervisor that runs agent code, one snippet at a time.

Standard library only, Python >= 3.8, and it never imports taskbench: it runs on the sandbox's interpreter
with no site-packages, and is mounted into the sandbox as a single read-only file.

Protocol (one JSON object per line on the control socket, fd given by ``--control FD``):

    parent -> {"op": "hello", "pidns": true, "scratch": ["/work", "/tmp", "/dev/shm"], "workdir": "/work",
               "tools_socket": "/run/taskbench/tools.sock", "ports": [[8000, "/run/taskbench/port-8000.sock"]]}
    sup    -> {"op": "ready", "python": "3.11.7", "pid": 2}
    parent -> {"op": "run", "id": 1, "code": "...", "result_var": "result", "tools": [...], "limits": {...},
               "files": {"data.csv": "<base64>"}}
    sup    -> {"op": "done", "id": 1, "stdout": "...", "stderr": "...", "report": {...} | null, "limit": ...,
               "status": {...}, "cpu_seconds": 0.01, "max_rss_kb": 9000, "seconds": 0.003,
               "tainted": null | "why this supervisor must not serve another run"}
    parent -> {"op": "exit"}

Each snippet runs in a child forked from this process, so it starts from the same clean interpreter state;
afterwards every process it left behind is killed (``kill(-1)`` inside the sandbox's own PID namespace, its
process group otherwise), the scratch directories are emptied (locked directories included) and their modes
and extended attributes restored, and SysV IPC objects left in the sandbox's IPC namespace are removed. The
child reports its result on a private pipe; the supervisor enforces the wall-time, output and memory limits
(memory: every process of the run, by proportional set size, plus the scratch tmpfs, sampled every
``SAMPLE`` seconds) and reads the child's exit status and usage. It then checks its own state (limits,
priority, CPU affinity, scratch directories) against what it was at the start; a difference it cannot undo
marks it ``tainted``, and the parent replaces it.

In the bwrap sandbox this process is pid 1 (``bwrap --as-pid-1``): not dumpable, and, as a namespace's init,
deaf to every signal from inside that it has no handler for (it has none: SIGINT is ignored too).
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
SAMPLE = 0.02  # seconds between two samples of the run's memory
MESSAGE_MAX = 4000  # characters of an error message in a report (longer ones are cut by the child)
TRACEBACK_MAX = 20000  # characters of a traceback in a report
LIMITS = ("cpu", "wall", "memory", "processes", "files", "output")


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

    def __init__(self, path: str, max_call: int) -> None:
        import threading

        self.path = path
        self.max_call = max_call
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
        data = payload.encode("utf-8") + b"\n"
        if len(data) > self.max_call:
            raise ToolError(f"tool call larger than {self.max_call} bytes: refused", tool=name)
        try:
            sock, reader = self._conn()
            sock.sendall(data)
            line = reader.readline()
        except OSError as exc:
            line = b""
            if exc.errno == errno.EMFILE:
                raise
        if not line:
            self.local.conn = None
            raise ToolError("the tool channel closed", tool=name)
        reply = json.loads(line)
        if reply.get("error") is not None:
            raise ToolError(reply["error"], tool=name, status=reply.get("status"))
        return reply.get("content")


def _api_module(job: dict[str, Any], client: _Client) -> Any:
    """The documented API: ``call_tool``, ``ToolError`` and one function per tool (Python names)."""
    mod: Any = types.ModuleType("taskbench_sandbox", "Tools of this sandbox: call_tool(name, **arguments), "
                                                "ToolError, and one function per tool.")

    real = {spec["name"] for spec in job.get("tools") or []}

    def call_tool(name: str, arguments: dict[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """Call the tool ``name`` (its name, or its Python name) with ``arguments`` (a dict) and/or keyword
        arguments; returns its JSON result or raises ToolError with the tool's error text and status."""
        args = dict(arguments or {})
        args.update(kwargs)
        if name not in real:
            name = mod.tool_names.get(name, name)
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
    lim(resource.RLIMIT_MSGQUEUE, 0)  # no POSIX message queue (seccomp denies them too, where it is loaded)
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
        return _bounded({"type": type(exc).__name__, "message": exc.msg or str(exc), "line": exc.lineno,
                         "traceback": tb})
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == AGENT_FILE]
    line = frames[-1].lineno if frames else None
    parts = ["Traceback (most recent call last):\n"]
    parts += traceback.format_list(frames)
    parts += traceback.format_exception_only(type(exc), exc)
    message = str(exc)
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        message = repr(exc.args[0])
    return _bounded({"type": type(exc).__name__, "message": message, "line": line,
                     "traceback": "".join(parts).rstrip()})


def _bounded(error: dict[str, Any]) -> dict[str, Any]:
    def cut(text: str, n: int) -> str:
        return text if len(text) <= n else text[:n - 20] + f" ... ({len(text) - n + 20} more)"

    error["type"] = cut(str(error["type"]), 200)
    error["message"] = cut(str(error["message"]), MESSAGE_MAX)
    error["traceback"] = cut(error["traceback"], TRACEBACK_MAX) if error["traceback"] else None
    return error


def check_report(report: Any) -> str | None:
    """What is wrong with a run's report (it comes from the code's own process, so it may be forged), or None.
    A report is ``{"result": JSON text | None, "error": {type, message, line, traceback} | None, "limit": ...}``
    within the bounds an honest child keeps to. Used by the supervisor and again by the parent."""
    if not isinstance(report, dict):
        return f"the report is {type(report).__name__}, not an object"
    if set(report) - {"result", "error", "limit"}:
        return "the report has unknown fields"
    if not (report.get("result") is None or isinstance(report["result"], str)):
        return "its result is not JSON text"
    if not (report.get("limit") is None or report["limit"] in LIMITS):
        return "its limit is not one of " + ", ".join(LIMITS)
    error = report.get("error")
    if error is None:
        return None
    if not isinstance(error, dict) or set(error) - {"type", "message", "line", "traceback"}:
        return "its error is not an object of type, message, line, traceback"
    kinds = {"type": (str, 200), "message": (str, MESSAGE_MAX), "traceback": (str, TRACEBACK_MAX)}
    for key, (kind, size) in kinds.items():
        value = error.get(key)
        if key != "traceback" and value is None:
            return f"its error has no {key}"
        if value is not None and (not isinstance(value, kind) or len(value) > size):
            return f"its error's {key} is not a string of at most {size} characters"
    line = error.get("line")
    if not (line is None or (type(line) is int and 0 < line < 1 << 31)):
        return "its error's line is not a line number"
    return None


def read_report(data: bytes) -> dict[str, Any]:
    """The first JSON document the child wrote on its report pipe, checked; a forged or broken one becomes a
    ``ReportError`` (the code can write to its own report pipe, but not ahead of the child's report)."""
    try:
        report, _ = json.JSONDecoder().raw_decode(data.decode("utf-8", "replace"))
        problem = check_report(report)
    except (ValueError, RecursionError) as exc:
        problem = f"it is not JSON ({type(exc).__name__})"
    if problem is None:
        return report  # type: ignore[no-any-return]
    return {"result": None, "limit": None, "error": {
        "type": "ReportError", "message": f"the run's report could not be read (did the code write to its report "
        f"pipe?): {problem}", "line": None, "traceback": None}}


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
        client = _Client(hello.get("tools_socket") or "", int(hello.get("max_call") or 1 << 20))
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
            report["error"] = _bounded({
                "type": "ResultError",
                "message": f"the result variable {job.get('result_var') or 'result'!r} is not a JSON value "
                           f"({type(value).__name__}): {exc}",
                "line": None, "traceback": None,
            })
    except SystemExit as exc:
        if exc.code not in (None, 0):
            report["error"] = _bounded({"type": "SystemExit", "message": f"exit status {exc.code}", "line": None,
                                        "traceback": None})
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
        self.baseline: dict[str, Any] = {}
        self.modes: dict[str, int] = {}

    def send(self, obj: dict[str, Any]) -> None:
        self.ctl.sendall(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")

    def serve(self) -> None:
        _dumpable(0)  # the code cannot read this process's memory or fds through /proc
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as pid 1, no signal from inside then reaches us
        line = self.reader.readline()
        if not line:
            return
        self.hello = json.loads(line)
        for root in self.hello.get("scratch") or []:
            try:
                self.modes[root] = os.stat(root).st_mode & 0o7777
            except OSError:
                pass
        self.baseline = _own_state()
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
        pidns = bool(self.hello.get("pidns"))
        memory_kb = int(limits["memory_mb"]) * 1024
        peak_kb = 0
        next_sample = start + SAMPLE
        while open_fds or not exited:
            now = time.monotonic()
            if now >= deadline:
                limit = limit or "wall"
                break
            if pidns and now >= next_sample:
                used = self._memory_kb()
                peak_kb = max(peak_kb, used)
                if used > memory_kb:
                    limit = "memory"
                    break
                next_sample = now + SAMPLE
            timeout = deadline - now if pidfd is not None else min(0.01, deadline - now)
            if pidns:
                timeout = min(timeout, max(0.0, next_sample - now))
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
            while not exited:  # as the namespace's init, orphans of the code are ours to reap as well
                try:
                    got, st, ru = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if got == 0:
                    break
                if got == pid:
                    exited, status, rusage = True, st, ru
                    if open_fds:  # processes it started may still hold the pipes: stop waiting for them
                        total = self._drain(open_fds, outputs, result, cap, total)
            if exited and open_fds:
                break
        if total > cap:
            limit = limit or "output"
        if not exited:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status, rusage = os.wait4(pid, 0)
        if pidns:
            peak_kb = max(peak_kb, self._scratch_kb())  # the files it left count until they are wiped
        self._kill_all(pid)
        self._reap()
        if pidns:
            _remove_sysv_ipc()
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
        tainted = self._wipe()
        report = read_report(bytes(result)) if result and limit != "output" else None
        max_rss = max(rusage.ru_maxrss if rusage else 0, peak_kb) or None
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
            "max_rss_kb": max_rss,
            "seconds": round(time.monotonic() - start, 6),
            "tainted": tainted or self._changed(),
        }

    def _memory_kb(self) -> int:
        """Memory the run holds now, KB: the proportional set size of each of its processes (the resident size
        where that cannot be read) and what its files take in the scratch tmpfs."""
        me = os.getpid()
        total = self._scratch_kb()
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (1, me):
                continue
            try:
                with open(f"/proc/{name}/smaps_rollup", "rb") as fh:
                    for line in fh:
                        if line.startswith(b"Pss:"):
                            total += int(line.split()[1])
                            break
            except (OSError, ValueError):
                try:  # not dumpable (it made itself so): its whole resident size, shared pages included
                    with open(f"/proc/{name}/statm", "rb") as fh:
                        total += int(fh.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
                except (OSError, ValueError, IndexError):
                    pass
        return total

    def _scratch_kb(self) -> int:
        total = 0
        for root in self.hello.get("scratch") or []:
            try:
                st = os.statvfs(root)
            except OSError:
                continue
            total += (st.f_blocks - st.f_bfree) * st.f_frsize // 1024
        return total

    def _changed(self) -> str | None:
        """What the run changed in this process that a fork would pass on to the next run, if anything."""
        now = _own_state()
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


def _own_state() -> dict[str, Any]:
    """What of this process a forked run inherits and could have changed from outside: resource limits,
    priority, CPU affinity."""
    state: dict[str, Any] = {}
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            try:
                state[name] = resource.getrlimit(getattr(resource, name))
            except (OSError, ValueError):
                pass
    try:
        state["priority"] = os.getpriority(os.PRIO_PROCESS, 0)
        state["CPU affinity"] = sorted(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        pass
    return state


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
