"""The public face of the code runner: :class:`Sandbox` (async, with a sync wrapper), :func:`run_code`,
:func:`sandbox_status`."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..._loop import LoopThread
from ...errors import ConfigError, SandboxUnavailableError
from ...schema import CodeError, ToolCall, ToolResult, ToolSpec, python_names
from ._child import SETUP_FAILED, check_report
from ._json import clean, clean_text, count_values, may_hold_surrogates
from ._resources import FILES_PER_MB
from .backend import SANDBOX_UID, as_root, bwrap_path, bwrap_version, interpreter
from .channel import ToolHandler
from .models import LIMIT_NAMES, LimitName, SandboxLimits, SandboxResult, SandboxStatus
from .seccomp import seccomp_status
from .worker import Worker, frame_error

NO_BWRAP = "bwrap (bubblewrap) is not installed (install it: apt-get install bubblewrap)"


class Sandbox:
    """Runs agent-written Python in a confined process; the code reaches tools only through ``handler``.

    ``handler`` is ``async (ToolCall) -> ToolResult`` (``Environment.call`` fits; see :class:`ToolHandler`),
    ``tools`` the specs the code gets one function each for (under their API-safe names). With ``warm=True``
    (default) one sandboxed supervisor serves every run, each run in a fresh process forked from it with empty
    scratch directories; ``warm=False`` starts a new sandbox per run. Use one Sandbox per episode and from one
    event loop; runs on one Sandbox are serialised.

    Where bwrap cannot confine the code, :meth:`run` raises :class:`~taskbench.errors.SandboxUnavailableError`
    unless ``unsafe_local=True``, which runs the code as a plain subprocess of this user, unconfined (limits
    only).
    """

    def __init__(
        self,
        handler: ToolHandler | None = None,
        tools: Iterable[Any] = (),
        *,
        limits: SandboxLimits | Mapping[str, Any] | None = None,
        allow_ports: Iterable[int] = (),
        unsafe_local: bool = False,
        warm: bool = True,
        result_var: str = "result",
        python: str | None = None,
        bwrap: str | None = None,
        readonly_paths: Iterable[str] = (),
        seccomp: bool = True,
    ) -> None:
        self.handler = handler
        self.tools = [ToolSpec.coerce(t) for t in tools]
        self.limits = _limits(SandboxLimits(), limits)
        ports = tuple(int(p) for p in allow_ports)
        bad = [p for p in ports if not 0 < p < 65536]
        if bad:
            raise ConfigError(f"--allow-port {bad[0]}: not a TCP port (1-65535)")
        self.allow_ports = tuple(dict.fromkeys(ports))
        self.unsafe_local = unsafe_local
        self.warm = warm
        self.result_var = result_var
        self.python = python
        self.bwrap = bwrap
        self.readonly_paths = tuple(readonly_paths)
        self.seccomp = seccomp
        self._specs: list[dict[str, Any]] = [
            {"name": t.name, "api": api, "description": t.description, "parameters": t.parameters}
            for t, api in zip(self.tools, python_names([t.name for t in self.tools]), strict=True)
        ]
        self._worker: Worker | None = None
        self._runs = 0
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: LoopThread | None = None

    @classmethod
    def for_environment(cls, env: Any, **options: Any) -> Sandbox:
        """A sandbox whose code calls ``env``'s tools (an :class:`~taskbench.envs.Environment`)."""
        return cls(env.call, env.tools(), **options)

    @property
    def backend(self) -> str:
        return "unsafe-local" if self.unsafe_local else "bwrap"

    @property
    def api_names(self) -> dict[str, str]:
        """Tool name -> the function name the code calls it by."""
        return {s["name"]: s["api"] for s in self._specs}

    # -------------------------------------------------------------------------------------------- async

    async def run(
        self,
        code: str,
        *,
        limits: SandboxLimits | Mapping[str, Any] | None = None,
        files: Mapping[str, str | bytes] | None = None,
        result_var: str | None = None,
    ) -> SandboxResult:
        """Run ``code``; returns stdout, the result variable, the error or limit, the tool calls and seconds.

        ``limits`` overrides this sandbox's limits for the run (a SandboxLimits or a dict of fields);
        ``files`` are written into the working directory first (name -> text or bytes)."""
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop and self._worker is not None:
            raise ConfigError("a Sandbox is used from one event loop only (make one per loop)")
        self._loop = loop
        if self._lock is None:
            self._lock = asyncio.Lock()
        run_limits = _limits(self.limits, limits)
        for name in files or {}:
            _check_file_name(name)
        job: dict[str, Any] = {
            "op": "run",
            "code": code,
            "result_var": result_var or self.result_var,
            "tools": self._specs,
            "limits": run_limits.model_dump(),
            "files": {name: base64.b64encode(data.encode("utf-8") if isinstance(data, str) else data).decode()
                      for name, data in (files or {}).items()},
        }
        async with self._lock:
            worker = await self._ensure_worker(run_limits)
            self._runs += 1
            job["id"] = self._runs
            start = time.monotonic()
            for attempt in range(2):
                try:
                    frame, calls, results = await worker.run(job)
                except BaseException:  # cancelled (or worse) mid-run: that sandbox's state is unknown, drop it
                    self._worker = None
                    await asyncio.shield(worker.close())
                    raise
                # a worker whose child could not set itself up is replaced: the code did not start, so it runs
                # once more on a fresh worker (one the run changed, or that could not be wiped after it, is
                # replaced before the next run: see _ensure_worker)
                setup_failed = _setup_failed(frame) and not calls
                if not self.warm or not worker.alive or frame_error(frame) or setup_failed:
                    await worker.close()
                    self._worker = None
                if not (setup_failed and attempt == 0):
                    break
                worker = await self._ensure_worker(run_limits)
            seconds = time.monotonic() - start
        return build_result(frame, calls, results, run_limits, seconds, self.backend)  # type: ignore[arg-type]

    async def _ensure_worker(self, limits: SandboxLimits) -> Worker:
        worker = self._worker
        if worker is not None and (not worker.alive or worker.disk_mb != limits.disk_mb
                                   or await worker.settle() is not None):
            await worker.close()  # gone, of another disk size, or changed by the last run (or not wiped after it)
            worker = self._worker = None
        if worker is None:
            bwrap = None
            if not self.unsafe_local:
                bwrap = bwrap_path(self.bwrap)
                if bwrap is None:
                    chosen = self.bwrap or os.environ.get("TASKBENCH_BWRAP")
                    raise SandboxUnavailableError(f"{chosen} is not an executable bwrap" if chosen else NO_BWRAP)
            worker = Worker(
                handler=self.handler, python=interpreter(self.python), bwrap=bwrap, allow_ports=self.allow_ports,
                disk_mb=limits.disk_mb, readonly=self.readonly_paths, seccomp=self.seccomp, warm=self.warm,
                frame_limit=16 * max(limits.output_bytes, 1 << 20) + (1 << 20),
            )
            await worker.start()
            self._worker = worker
        return worker

    async def aclose(self) -> None:
        """Stop the warm sandbox, if one is running."""
        if self._worker is not None:
            await self._worker.close()
            self._worker = None

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -------------------------------------------------------------------------------------------- sync

    def run_sync(self, code: str, **options: Any) -> SandboxResult:
        """:meth:`run` for scripts (blocks; runs on this sandbox's private event-loop thread)."""
        if self._runner is None:
            self._runner = LoopThread("taskbench-sandbox")
        return self._runner.run(self.run(code, **options))

    def close(self) -> None:
        """Stop the sandbox used through :meth:`run_sync`."""
        if self._runner is not None:
            self._runner.run(self.aclose())
            self._runner.stop()
            self._runner = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def run_code(code: str, handler: ToolHandler | None = None, tools: Iterable[Any] = (),
                   **options: Any) -> SandboxResult:
    """Run ``code`` once in a fresh sandbox (see :class:`Sandbox` for the options; ``limits``, ``files`` and
    ``result_var`` are taken per run)."""
    per_run = {k: options.pop(k) for k in ("files",) if k in options}
    async with Sandbox(handler, tools, warm=False, **options) as box:
        return await box.run(code, **per_run)


def run_code_sync(code: str, handler: ToolHandler | None = None, tools: Iterable[Any] = (),
                  **options: Any) -> SandboxResult:
    """:func:`run_code` for scripts."""
    with Sandbox(handler, tools, warm=False, **{k: v for k, v in options.items() if k != "files"}) as box:
        return box.run_sync(code, **({"files": options["files"]} if "files" in options else {}))


def sandbox_status(bwrap: str | None = None, python: str | None = None) -> SandboxStatus:
    """Whether agent code can be confined here (runs one trivial snippet in the sandbox, once per process)."""
    chosen = bwrap or os.environ.get("TASKBENCH_BWRAP") or None
    return _status(bwrap_path(chosen), chosen, python)


@functools.lru_cache(maxsize=8)
def _status(path: str | None, chosen: str | None, python: str | None) -> SandboxStatus:
    interp = interpreter(python)
    status = SandboxStatus(available=False, bwrap=path, version=bwrap_version(path) if path else None,
                           seccomp=seccomp_status(), uid=SANDBOX_UID if as_root() else os.getuid(),
                           python=f"{interp.executable} ({interp.version})")
    if path is None:
        status.reason = f"{chosen} is not an executable bwrap" if chosen else NO_BWRAP
        return status
    runner = LoopThread("taskbench-sandbox-probe")
    try:
        out = runner.run(run_code("result = 6 * 7", bwrap=path, python=python))
    except SandboxUnavailableError as exc:
        status.reason = exc.reason
        return status
    finally:
        runner.stop()
    if out.result != 42:
        status.reason = f"the sandbox ran but gave a wrong answer ({out.error.message if out.error else out.result})"
        return status
    status.available = True
    return status


# ------------------------------------------------------------------------------------------------ results


def _check_file_name(name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"file name {name!r}: give a relative path inside the working directory (no '..')")


def _limits(base: SandboxLimits, override: SandboxLimits | Mapping[str, Any] | None) -> SandboxLimits:
    if override is None:
        return base
    if isinstance(override, SandboxLimits):
        return override
    try:
        return SandboxLimits.model_validate({**base.model_dump(), **dict(override)})
    except Exception as exc:
        raise ConfigError(f"bad sandbox limits: {exc}".splitlines()[0]) from exc


def _limit_message(limit: str, limits: SandboxLimits, error: dict[str, Any] | None, reason: str | None = None) -> str:
    kind = (error or {}).get("type", "")
    detail = (error or {}).get("message", "")
    if limit == "output" and reason:  # the supervisor's own measure: the scratch directories' files cap
        return (f"disk limit exceeded ({limits.disk_mb} MB and {limits.disk_mb * FILES_PER_MB} files per scratch "
                f"directory): {reason}")
    if limit == "cpu":
        return f"CPU time limit exceeded ({limits.cpu_seconds:g} s): the code was stopped; make it do less work"
    if limit == "wall":
        return (f"wall time limit exceeded ({limits.wall_seconds:g} s): the code was stopped (an endless loop, "
                "or waiting on something that never comes?)")
    if limit == "memory":
        return f"memory limit exceeded ({limits.memory_mb} MB): {kind or 'MemoryError'}"
    if limit == "processes":
        return (f"process/thread limit reached ({limits.processes} at once): {kind}: {detail}").rstrip(": ")
    if limit == "files":
        return f"open-file limit reached ({limits.open_files} descriptors): {kind}: {detail}".rstrip(": ")
    if kind == "OSError" or "File too large" in detail or "No space" in detail:
        return f"disk limit exceeded ({limits.disk_mb} MB per file and per scratch directory): {detail}"
    return (f"output limit exceeded ({limits.output_bytes} bytes of stdout, stderr and result): the code was "
            "stopped; print less")


def _setup_failed(frame: dict[str, Any]) -> bool:
    status = frame.get("status")
    return not frame.get("report") and isinstance(status, dict) and status.get("exit") == SETUP_FAILED


MAX_DEPTH = 100  # levels of nesting of a result value
MAX_RESULT_VALUES = 200_000  # JSON values in a result, counted before it is parsed


def _depth(value: Any) -> int:
    """Nesting depth of a JSON value (iterative: the value may be deeper than the recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _load_result(text: str) -> tuple[Any, str | None]:
    """The result value from its JSON text (a lone surrogate in it becomes U+FFFD), or why it cannot be had."""
    data = text.encode("utf-8", "surrogatepass")
    if count_values(data, MAX_RESULT_VALUES) > MAX_RESULT_VALUES:
        return None, (f"the result holds more than {MAX_RESULT_VALUES} JSON values; return less (a summary, or "
                      "write the data to a file and return its name)")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None, "the result could not be read back as JSON"
    if _depth(value) > MAX_DEPTH:
        return None, f"the result is nested more than {MAX_DEPTH} levels deep"
    return (clean(value) if may_hold_surrogates(data) else value), None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def build_result(
    frame: dict[str, Any],
    calls: list[ToolCall],
    results: list[ToolResult],
    limits: SandboxLimits,
    seconds: float,
    backend: str,
) -> SandboxResult:
    """A :class:`SandboxResult` from the supervisor's frame (or from what the parent knows when it died).

    Everything in the frame is checked first: the report in it was written by the code's own process, which can
    forge it; what does not check out becomes the run's ``ReportError``, never an exception here."""
    raw = frame.get("report") or {}
    problem = check_report(raw)
    report: dict[str, Any] = raw if problem is None else {
        "error": {"type": "ReportError", "message": f"the run's report could not be read: {problem}"}}
    error: dict[str, Any] | None = report.get("error")
    if error is not None:  # its strings come from the code's process: a lone surrogate becomes U+FFFD
        error = {k: clean_text(v) if isinstance(v, str) else v for k, v in error.items()}
    limit: LimitName | None = None
    for candidate in (frame.get("limit"), report.get("limit")):
        if limit is None and candidate in LIMIT_NAMES:
            limit = candidate
    raw_status = frame.get("status")
    status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    sig = status.get("signal") if isinstance(status.get("signal"), str) else None
    if not isinstance(status.get("exit"), int) or isinstance(status.get("exit"), bool):
        status = {**status, "exit": None}
    cpu = _number(frame.get("cpu_seconds"))
    rss = _number(frame.get("max_rss_kb"))
    if not limit and sig in ("SIGXCPU", "SIGKILL") and cpu is not None and cpu >= int(-(-limits.cpu_seconds // 1)):
        limit = "cpu"
    if not limit and sig == "SIGXFSZ":
        limit = "output"
    lost = frame_error(frame)
    code_error: CodeError | None = None
    if limit:
        base = error or {}
        reason = frame.get("limit_reason") if limit == frame.get("limit") else None
        code_error = CodeError(type="LimitExceeded", message=_limit_message(
                                   limit, limits, error, clean_text(str(reason)[:500]) if reason else None),
                               line=base.get("line"), traceback=base.get("traceback"))
    elif lost:
        code_error = CodeError(type="SandboxError", message=lost)
    elif error:
        code_error = CodeError(type=str(error.get("type") or "Error"), message=str(error.get("message") or ""),
                               line=error.get("line"), traceback=error.get("traceback"))
    elif sig:
        hint = " (out of memory?)" if rss and rss * 1024 >= 0.8 * limits.memory_mb * 1024 * 1024 else ""
        code_error = CodeError(type="Crash", message=f"the process was killed by {sig}{hint}")
    elif not report and status.get("exit") == SETUP_FAILED:
        code_error = CodeError(type="SandboxError", message="the code's process could not set itself up")
    elif not report and status.get("exit"):
        code_error = CodeError(type="Exit", message=f"the code ended its process with exit status "
                               f"{status.get('exit')} before its result was reported (os._exit?)")
    value = None
    if report.get("result") is not None:
        value, why = _load_result(report["result"])
        if why is not None and code_error is None:
            code_error = CodeError(type="ResultError", message=why)
    stdout, stderr = (clean_text(frame[k]) if isinstance(frame.get(k), str) else "" for k in ("stdout", "stderr"))
    return SandboxResult(
        stdout=stdout, stderr=stderr, result=value, error=code_error,
        limit=limit, calls=calls, results=results, seconds=round(seconds, 6), cpu_seconds=cpu,
        max_rss_mb=round(rss / 1024, 2) if rss else None, exit=status.get("exit"), signal=sig,
        truncated=bool(frame.get("truncated")), backend=backend,  # type: ignore[arg-type]
        refused_calls=int(frame.get("refused_calls") or 0),
    )


__all__ = ["Sandbox", "build_result", "run_code", "run_code_sync", "sandbox_status"]
