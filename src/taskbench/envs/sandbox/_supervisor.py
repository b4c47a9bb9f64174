"""The program that runs *inside* the sandbox: a supervisor that runs agent code, one snippet at a time.

Standard library only, Python >= 3.8, and it never imports taskbench: it runs on the sandbox's interpreter
with no site-packages, and is mounted into the sandbox as a single read-only file.

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
every ``SAMPLE`` seconds; see ``_Memory``) and the files cap of the scratch directories. It then checks its own
state and the fork server's (limits, priority, CPU affinity, scratch directories) against what they were at the
start; a difference it cannot undo marks it ``tainted``, and the parent replaces it.

In the bwrap sandbox this process is pid 1 (``bwrap --as-pid-1``): not dumpable, and, as a namespace's init,
deaf to every signal from inside that it has no handler for (it has none: SIGINT is ignored too).
"""

from __future__ import annotations

import array
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
SAMPLE_BUDGET = 0.02  # CPU seconds one sample may spend dividing shared pages (reading smaps_rollup)
SLOW_READ = 0.002  # CPU seconds past which a process's smaps_rollup is too slow to read again in this run
INODE_KB = 1  # KB of memory charged per inode unit of the scratch tmpfs (the kernel's own estimate, 1 KB)
FILES_PER_MB = 256  # inode units per MB of a scratch directory's size (one per 4 KB, as a file system)
MESSAGE_MAX = 4000  # characters of an error message in a report (longer ones are cut by the child)
TRACEBACK_MAX = 20000  # characters of a traceback in a report
LIMITS = ("cpu", "wall", "memory", "processes", "files", "output")
SCRIPT = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""  # this file, to start it afresh


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
        try:
            data = payload.encode("utf-8") + b"\n"
        except UnicodeEncodeError:  # a lone surrogate: sent as its JSON escape (it arrives as U+FFFD)
            data = json.dumps({"name": name, "arguments": arguments}).encode("ascii") + b"\n"
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
    """Processes and threads alive in this PID namespace (a zombie, about to be reaped, does not count)."""
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue
                n += len(os.listdir(f"/proc/{pid}/task"))
            except (OSError, IndexError):
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


def _child_entry(fds: list[int], hello: dict[str, Any], sup_pid: int, quiet: dict[int, Any]) -> NoReturn:
    """The run's process, forked by the fork server: once it is the supervisor's child, it reads its job from the
    job pipe (nothing of it was ever in the memory it was forked from) and runs it."""
    try:
        out_w, err_w, res_w, job_r = fds
        deadline = time.monotonic() + 5.0
        while os.getppid() != sup_pid:  # the intermediate process is exiting: we become the supervisor's child
            if time.monotonic() > deadline:
                os._exit(SETUP_FAILED)
            time.sleep(0.0002)
        _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the code's process dies with its supervisor
        if os.getppid() != sup_pid:
            os._exit(SETUP_FAILED)
        chunks = []
        while True:
            chunk = os.read(job_r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(job_r)
        job = json.loads(b"".join(chunks))
        del chunks
        for sig, handler in quiet.items():  # the dispositions the fork server changed, as the supervisor has them
            signal.signal(sig, handler)
        os.setpgid(0, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        high = min(1023, soft - 1) if soft > 16 else 15
        os.dup2(res_w, high)
        os.closerange(3, high)  # the pipes' other ends, the fork server's socket: nothing else is left
        os.closerange(high + 1, hard if 0 < hard < (1 << 20) else (1 << 20))
        _dumpable(1)
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


# ================================================================================================ fork server


def _quiet_signals() -> list[int]:
    """Every signal the fork server ignores: all that can be caught, but SIGCHLD (it waits for its children) and
    the harmless SIGCONT. Only SIGKILL and SIGSTOP then reach it, and the supervisor notices both."""
    skip = {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGCONT}
    return [int(s) for s in signal.valid_signals() if s not in skip]


def _fork_server(sock: socket.socket, hello: dict[str, Any], sup_pid: int) -> NoReturn:
    """Fork the run's processes. Started by the supervisor before any run, it never holds run data: a request is
    one word and four descriptors; the job itself goes from the supervisor to the run's process through a pipe.
    Each run's process is forked through an intermediate process that exits at once, so that it becomes the
    supervisor's child (the supervisor is the namespace's init, or a subreaper without one)."""
    keep = sock.fileno()
    os.closerange(3, keep)  # the control socket and everything else of the supervisor's
    os.closerange(keep + 1, 1 << 16)
    _dumpable(0)  # as the supervisor: a run cannot read or write its memory (an exec made a fresh one dumpable)
    _prctl(1, signal.SIGKILL)  # dies with the supervisor
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
    baseline = _own_state()
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
                now = _own_state()
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
                _child_entry(fds, hello, sup_pid, quiet)
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
                _fork_server(theirs, hello, sup_pid)
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


# ================================================================================================ sampler


class _Memory:
    """The memory sampling of one run (in the run's loop, every ``SAMPLE`` s).

    Each sample reads, for every process of the run, its resident anonymous and shared memory (``RssAnon`` +
    ``RssShmem`` of ``/proc/PID/status``: counters, read in constant time whatever the process does to its
    address space) and adds what the run's files take in the scratch tmpfs. Only when that total is over the
    limit are the pages the processes share (a forked child shares its parent's until it writes them) divided
    among them, from ``/proc/PID/smaps_rollup`` (``Pss_Anon`` + ``Pss_Shmem``), which walks every mapping of a
    process: within a CPU budget per sample, never past the wall-time deadline, and never again for a process
    whose rollup was slow to read. What is not divided in time counts whole, so making the division slow only
    ends the run sooner."""

    def __init__(self, sup: Supervisor, limits: dict[str, Any]) -> None:
        self.sup = sup
        self.limit_kb = int(limits["memory_mb"]) * 1024
        self.files_cap = _files_cap(limits)
        self.peak_kb = 0
        self.slow: set[int] = set()

    def sample(self, deadline: float) -> tuple[str, str | None] | None:
        """The limit the run is over now, with why, if any (None also when the deadline came first)."""
        scratch, full = self.sup.scratch_use(self.files_cap)
        if full is not None:
            return "output", full
        whole: dict[int, int] = {}
        for pid in self.sup.others():
            if time.monotonic() >= deadline:
                return None
            whole[pid] = _anon_kb(pid)
        total = scratch + sum(whole.values())
        if total > self.limit_kb:
            total = scratch
            budget = SAMPLE_BUDGET
            for pid, kb in whole.items():
                if time.monotonic() >= deadline:
                    return None
                if pid in self.slow or budget <= 0:
                    total += kb
                    continue
                cpu, wall = time.thread_time(), time.monotonic()
                divided = _pss_anon_kb(pid)
                cpu, wall = time.thread_time() - cpu, time.monotonic() - wall
                budget -= cpu
                if cpu > SLOW_READ or wall > 10 * SLOW_READ:
                    self.slow.add(pid)
                total += kb if divided is None else min(kb, divided)
        self.peak_kb = max(self.peak_kb, total)
        return ("memory", None) if total > self.limit_kb else None


def _anon_kb(pid: int) -> int:
    """Resident anonymous and shared memory of a process, KB (constant time; readable for any process)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith((b"RssAnon:", b"RssShmem:")):
                    total += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return total


def _pss_anon_kb(pid: int) -> int | None:
    """Anonymous and shared memory of a process with shared pages divided among their sharers, KB (None when it
    cannot be read: the process made itself not dumpable)."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith((b"Pss_Anon:", b"Pss_Shmem:")):
                    total += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return total


def _usage(pid: int) -> tuple[float | None, int | None]:
    """CPU seconds (its own and its reaped children's) and peak resident size (KB) of a live process."""
    cpu = hwm = None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        cpu = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return cpu, hwm


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
        self.inodes: dict[str, int] = {}  # inode units each scratch directory uses when empty
        self.forks: ForkServer | None = None
        self.after: tuple[int, list[int]] | None = None  # the last run's pid and open pipes, until cleaned up

    def send(self, obj: dict[str, Any]) -> None:
        # ASCII JSON: a lone surrogate the code produced is sent as its escape, never fails to encode
        self.ctl.sendall(json.dumps(obj).encode("ascii") + b"\n")

    def serve(self) -> None:
        _dumpable(0)  # the code cannot read this process's memory or fds through /proc
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as pid 1, no signal from inside then reaches us
        line = self.reader.readline()
        if not line:
            return
        self.hello = json.loads(line)
        if not self.hello.get("pidns"):
            _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: the runs' processes become our children
        for root in self.hello.get("scratch") or []:
            try:
                self.modes[root] = os.stat(root).st_mode & 0o7777
                st = os.statvfs(root)
                self.inodes[root] = st.f_files - st.f_ffree
            except OSError:
                pass
        self.baseline = _own_state()
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
        memory = _Memory(self, limits) if pidns else None
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
            cpu, hwm = _usage(pid)
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


def _files_cap(limits: dict[str, Any]) -> int:
    """Inode units each scratch directory may hold: FILES_PER_MB for each MB of its size."""
    return int(limits["disk_mb"]) * FILES_PER_MB


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
    if "--fork-server" in argv:  # a fresh fork server, started by a supervisor that has handled runs
        sock = socket.socket(fileno=int(argv[argv.index("--fork-server") + 1]))
        hello = json.loads(sock.recv(1 << 16) or b"{}")
        if hello.get("warm"):
            preload()
        _fork_server(sock, hello, os.getppid())
    fd = int(argv[argv.index("--control") + 1])
    Supervisor(fd).serve()


if __name__ == "__main__":
    main(sys.argv)
