"""Part of the sandbox's supervisor (see ``_supervisor.py``): the run's process, which runs the agent's code.

Standard library only, and it never imports taskbench: mounted read-only into the sandbox beside the supervisor.

Forked by the fork server (``_forkserver.py``), the process becomes the supervisor's child, reads its job from a
pipe (:func:`child_entry`), sets its own limits and alarms, gives the code its API (``call_tool``, ``ToolError``,
one function per tool, the module ``taskbench_sandbox``; the tool client; the relays of the allowed ports), runs
the code and writes a report on a private pipe (:func:`run_child`). The report is checked by the supervisor and
again by the parent (:func:`check_report`, :func:`read_report`): the code can forge it, but not break either.
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
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

if TYPE_CHECKING or __package__:  # imported on the host, as part of taskbench
    from ._resources import dumpable, prctl, set_limits
else:  # in the sandbox: a sibling file, imported by the supervisor's entry point
    from _resources import dumpable, prctl, set_limits

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
READ = 65536
MESSAGE_MAX = 4000  # characters of an error message in a report (longer ones are cut by the child)
TRACEBACK_MAX = 20000  # characters of a traceback in a report
LIMITS = ("cpu", "wall", "memory", "processes", "files", "output")


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
        set_limits(limits, bool(hello.get("pidns")))
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


def child_entry(fds: list[int], hello: dict[str, Any], sup_pid: int, quiet: dict[int, Any]) -> NoReturn:
    """The run's process, forked by the fork server: once it is the supervisor's child, it reads its job from the
    job pipe (nothing of it was ever in the memory it was forked from) and runs it."""
    try:
        out_w, err_w, res_w, job_r = fds
        deadline = time.monotonic() + 5.0
        while os.getppid() != sup_pid:  # the intermediate process is exiting: we become the supervisor's child
            if time.monotonic() > deadline:
                os._exit(SETUP_FAILED)
            time.sleep(0.0002)
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the code's process dies with its supervisor
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
        dumpable(1)
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


def preload() -> None:
    """Import what runs need, so that forked runs start with it (warm supervisors)."""
    import base64  # noqa: F401
    import linecache  # noqa: F401
    import threading  # noqa: F401
    import traceback  # noqa: F401
