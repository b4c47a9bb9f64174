"""One running supervisor (see ``_supervisor.py``): started in a bwrap sandbox or as an unconfined subprocess,
spoken to over a socket pair, one snippet at a time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
from collections import deque
from typing import Any

from ...errors import SandboxUnavailableError
from .backend import RUN_DIR, WORKDIR, Interpreter, Launch, bwrap_launch, local_launch, write_id_maps
from .channel import MAX_REQUEST, PortForward, ToolChannel, ToolHandler

START_TIMEOUT = 20.0  # seconds for bwrap + the interpreter to come up (a loaded 2-core machine is slow)
BACKSTOP = 5.0  # seconds past the wall limit before the parent kills a supervisor that does not answer
SETTLE_TIMEOUT = 20.0  # seconds for the supervisor's cleanup after a run (killing, reaping, emptying the scratch)


class Worker:
    """A supervisor process and the channels it may use."""

    def __init__(
        self,
        *,
        handler: ToolHandler | None,
        python: Interpreter,
        bwrap: str | None,
        allow_ports: tuple[int, ...] = (),
        disk_mb: int = 64,
        readonly: tuple[str, ...] = (),
        seccomp: bool = True,
        warm: bool = True,
        frame_limit: int = 64 * 1024 * 1024,
    ) -> None:
        self.handler = handler
        self.python = python
        self.bwrap = bwrap  # None: unsafe local
        self.allow_ports = allow_ports
        self.disk_mb = disk_mb
        self.readonly = readonly
        self.seccomp = seccomp
        self.warm = warm
        self.frame_limit = frame_limit
        self.proc: asyncio.subprocess.Process | None = None
        self.tools: ToolChannel | None = None
        self.forwards: list[PortForward] = []
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.ipc: str | None = None
        self.workdir: str | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.python_version = ""
        self._stderr: deque[bytes] = deque(maxlen=64)
        self._stderr_task: asyncio.Task[None] | None = None
        self._info_fd: int | None = None
        self.init_pid: int | None = None  # the sandbox's init (pid 1 inside), as the host sees it
        self.runs = 0
        self._unsettled = False  # the supervisor's cleanup after the last run has not been read yet

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None and self.writer is not None

    # -------------------------------------------------------------------------------------------- start

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.ipc = tempfile.mkdtemp(prefix="tb-sandbox-")
        sockets: dict[str, str] = {}
        try:
            self.tools = ToolChannel(os.path.join(self.ipc, "tools.sock"), self.handler)
            await self.tools.start()
            sockets["tools.sock"] = self.tools.path
            for port in self.allow_ports:
                fwd = PortForward(port, os.path.join(self.ipc, f"port-{port}.sock"))
                await fwd.start()
                self.forwards.append(fwd)
                sockets[f"port-{port}.sock"] = fwd.path
            await self._spawn(sockets)
        except BaseException:
            await self.close()
            raise

    async def _spawn(self, sockets: dict[str, str]) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        confined = self.bwrap is not None
        try:
            if confined:
                assert self.bwrap is not None
                launch = bwrap_launch(self.bwrap, self.python, child.fileno(), sockets, disk_mb=self.disk_mb,
                                      readonly=self.readonly, seccomp=self.seccomp)
                hello = {"pidns": True, "workdir": WORKDIR, "scratch": [WORKDIR, "/tmp", "/dev/shm"],
                         "tools_socket": f"{RUN_DIR}/tools.sock",
                         "ports": [[p, f"{RUN_DIR}/port-{p}.sock"] for p in self.allow_ports]}
            else:
                self.workdir = tempfile.mkdtemp(prefix="tb-unsafe-work-")
                launch = local_launch(self.python, child.fileno(), self.workdir)
                hello = {"pidns": False, "workdir": self.workdir, "scratch": [self.workdir],
                         "tools_socket": sockets["tools.sock"], "ports": []}
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *launch.argv, pass_fds=launch.pass_fds, stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=launch.env,
                    cwd=launch.cwd, start_new_session=True, user=launch.user, group=launch.user,
                    extra_groups=[] if launch.user is not None else None,
                )
            except OSError as exc:
                for fd in (launch.info_fd, launch.block_fd):
                    if fd is not None:
                        os.close(fd)
                raise SandboxUnavailableError(f"could not start {launch.argv[0]}: {exc}") from exc
            finally:
                for fd in launch.close_after:
                    os.close(fd)
            child.close()
            self._stderr_task = asyncio.create_task(self._drain_stderr())
            if launch.info_fd is not None:
                await self._map_ids(launch)
            self.reader, self.writer = await asyncio.open_unix_connection(sock=parent, limit=self.frame_limit)
        except BaseException:
            child.close()
            if self.writer is None:
                parent.close()
            raise
        self._send({"op": "hello", "warm": self.warm, "max_call": MAX_REQUEST, **hello})
        try:
            line = await asyncio.wait_for(self.reader.readline(), START_TIMEOUT)
        except asyncio.TimeoutError:
            line = b""
        if not line:
            detail = await self._failure_detail()
            raise SandboxUnavailableError(f"the sandbox did not start ({detail})")
        self._close_info()
        ready = json.loads(line)
        self.python_version = str(ready.get("python", ""))

    async def _map_ids(self, launch: Launch) -> None:
        """Read the pid of the sandbox's init from bwrap's info pipe; as root, bwrap (running as the sandbox
        uid) then waits until we have written its id maps. The info pipe stays open until the supervisor
        answers (bwrap writes more to it, and dies of SIGPIPE if it is closed)."""
        assert launch.info_fd is not None
        loop = asyncio.get_running_loop()
        data = b""
        pid = None
        self._info_fd = launch.info_fd
        os.set_blocking(launch.info_fd, False)
        try:
            deadline = loop.time() + START_TIMEOUT
            while pid is None:
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_reader(launch.info_fd, _resolve, ready)
                try:
                    await asyncio.wait_for(ready, max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    break
                finally:
                    loop.remove_reader(launch.info_fd)
                try:
                    chunk = os.read(launch.info_fd, 4096)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                data += chunk
                m = re.search(rb'"child-pid"\s*:\s*(\d+)', data)
                if m:
                    pid = int(m.group(1))
            if pid is None:
                detail = await self._failure_detail()
                raise SandboxUnavailableError(f"bwrap did not start its namespace ({detail})")
            self.init_pid = pid
            if launch.block_fd is not None:
                try:
                    write_id_maps(pid)
                except OSError as exc:
                    raise SandboxUnavailableError(f"could not write the sandbox's uid map: {exc}") from exc
                os.write(launch.block_fd, b"1")
        finally:
            if launch.block_fd is not None:
                os.close(launch.block_fd)

    def _close_info(self) -> None:
        if self._info_fd is not None:
            os.close(self._info_fd)
            self._info_fd = None

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while True:
            chunk = await self.proc.stderr.read(4096)
            if not chunk:
                return
            self._stderr.append(chunk)

    async def _failure_detail(self) -> str:
        if self.proc is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 5)
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1)
        text = b"".join(self._stderr).decode("utf-8", "replace").strip()
        lines = [ln for ln in text.splitlines() if ln.strip()]
        code = self.proc.returncode if self.proc is not None else None
        tail = lines[-1] if lines else "no message"
        return f"{tail}; exit status {code}" if code is not None else tail

    # -------------------------------------------------------------------------------------------- runs

    def _send(self, obj: dict[str, Any]) -> None:
        assert self.writer is not None
        # ASCII JSON: a lone surrogate in the caller's code or files is sent as its escape, never fails to encode
        self.writer.write(json.dumps(obj).encode("ascii") + b"\n")

    async def run(self, job: dict[str, Any]) -> tuple[dict[str, Any], list[Any], list[Any]]:
        """Run one snippet; returns the supervisor's frame (or one made up when it died) and the tool calls."""
        assert self.reader is not None and self.tools is not None
        self.runs += 1
        self.tools.begin(int(job.get("id") or self.runs), int(job["limits"].get("tool_calls", 1000)))
        wall = float(job["limits"]["wall_seconds"])
        try:
            self._send(job)
            await self.writer.drain()  # type: ignore[union-attr]
            line = await asyncio.wait_for(self.reader.readline(), wall + BACKSTOP)
        except asyncio.TimeoutError:
            await self.kill()
            frame: dict[str, Any] = {"op": "done", "limit": "wall", "report": None, "lost": "the supervisor did not answer"}
        except (ConnectionError, ValueError, asyncio.LimitOverrunError) as exc:
            await self.kill()
            frame = {"op": "done", "report": None, "lost": f"the sandbox channel failed: {exc}"}
        else:
            if not line:
                detail = await self._failure_detail()
                await self.kill()
                frame = {"op": "done", "report": None,
                         "lost": f"the sandbox's supervisor died during the run, killed by the code or the "
                                 f"system ({detail})"}
            else:
                frame = _parse_frame(line)
                if frame_error(frame):
                    await self.kill()
                else:
                    self._unsettled = True
        calls, results = self.tools.end()
        frame["refused_calls"] = int(self.tools.refused)
        return frame, calls, results

    async def settle(self) -> str | None:
        """Wait for the supervisor's cleanup after the last run (it answers a run first and cleans up after, so
        that the caller does not wait for it); why this worker must not serve another run, or None."""
        if not self._unsettled:
            return None
        self._unsettled = False
        if not self.alive or self.reader is None:
            return "the sandbox is gone"
        try:
            line = await asyncio.wait_for(self.reader.readline(), SETTLE_TIMEOUT)
        except (asyncio.TimeoutError, ConnectionError, ValueError, asyncio.LimitOverrunError):
            line = b""
        msg = _parse_frame(line) if line else {}
        if msg.get("op") != "clean":
            return "the supervisor did not finish its cleanup after the run"
        tainted = msg.get("tainted")
        return str(tainted)[:500] if tainted else None

    # -------------------------------------------------------------------------------------------- stop

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 5)
        # bwrap's --die-with-parent normally takes the namespace down with it; make sure (its init dies, and
        # with it every process of the sandbox)
        if self.init_pid is not None and _is_namespace_init(self.init_pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.init_pid, 9)
        self.init_pid = None
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    async def close(self) -> None:
        """Stop the supervisor and everything in its sandbox, and remove the sockets and scratch directories.
        (By SIGKILL: nothing in a sandbox is worth a graceful shutdown, and it is the fastest way out.)"""
        await self.kill()
        self._close_info()
        if self._stderr_task is not None:
            # the stderr pipe ends once every process of the sandbox is gone; wait for that, so that the
            # subprocess transport closes on this loop
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 5)
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._stderr_task
            self._stderr_task = None
        if self.tools is not None:
            await self.tools.aclose()
        for fwd in self.forwards:
            await fwd.aclose()
        self.forwards = []
        for path in (self.ipc, self.workdir):
            if path:
                shutil.rmtree(path, ignore_errors=True)
        self.ipc = self.workdir = None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _is_namespace_init(pid: int) -> bool:
    """Whether ``pid`` is (still) a process that is pid 1 of its own PID namespace (not a recycled pid)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    ids = line.split()[1:]
                    return len(ids) >= 2 and ids[-1] == "1"
    except OSError:
        return False
    return False


def _parse_frame(line: bytes) -> dict[str, Any]:
    """The supervisor's answer; one that is not a JSON object is a lost run (the worker is then replaced)."""
    try:
        frame = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return {"op": "done", "report": None, "lost": f"the supervisor's answer is not JSON ({type(exc).__name__})"}
    if not isinstance(frame, dict):
        return {"op": "done", "report": None, "lost": "the supervisor's answer is not a JSON object"}
    return frame


def frame_error(frame: dict[str, Any]) -> str | None:
    """Why a frame is not a proper result (the worker died or stopped answering), if so."""
    lost = frame.get("lost")
    return str(lost) if lost else None


__all__ = ["BACKSTOP", "SETTLE_TIMEOUT", "START_TIMEOUT", "Worker", "frame_error"]
