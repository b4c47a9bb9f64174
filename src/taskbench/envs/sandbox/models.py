"""What a sandbox run is configured with and what it returns: :class:`SandboxLimits`, :class:`SandboxResult`,
:class:`SandboxStatus`."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ...schema import CodeError, CodeRunEvent, CodeToolCall, ToolCall, ToolResult

LimitName = Literal["cpu", "wall", "memory", "processes", "files", "output"]
"""The limit that stopped a run (``output`` also covers the disk quota of the scratch directories)."""
LIMIT_NAMES: tuple[str, ...] = get_args(LimitName)

Backend = Literal["bwrap", "unsafe-local"]


class SandboxLimits(BaseModel):
    """Resource limits of one run. At a limit the run's processes are killed and the result names the limit."""

    model_config = ConfigDict(extra="forbid")

    cpu_seconds: float = Field(default=10.0, gt=0, description="CPU seconds of the code's process (RLIMIT_CPU).")
    wall_seconds: float = Field(
        default=30.0, gt=0, description="Wall-clock seconds of the run, tool calls included; the caller has the "
        "result at most half a second later, whatever the code or a tool handler still does.",
    )
    memory_mb: int = Field(
        default=512, ge=32, description="Memory of the run, MB: the address space of each of its processes "
        "(RLIMIT_AS), and, in the bwrap sandbox, all its processes' anonymous and shared memory plus its files in "
        "the scratch directories (blocks, and 1 KB per inode) together, sampled every 20 ms.",
    )
    processes: int = Field(
        default=32, ge=1,
        description="Processes and threads the code may have at once, its own main thread included (RLIMIT_NPROC "
        "in the sandbox's user namespace; not enforced with unsafe_local).",
    )
    open_files: int = Field(default=64, ge=8, description="Open file descriptors per process (RLIMIT_NOFILE).")
    output_bytes: int = Field(
        default=1_000_000, ge=1024, description="Bytes of stdout + stderr (and of the result value) kept; past it "
        "the run is killed."
    )
    disk_mb: int = Field(
        default=64, ge=1, description="Size of each scratch directory (/work, /tmp, /dev/shm) and of any one file, MB; "
        "each directory also holds at most 256 files, directories and links per MB (bwrap sandbox).",
    )
    tool_calls: int = Field(
        default=1000, ge=0, description="Tool calls the code may make in one run; past it a call raises ToolError "
        "(and is not recorded)."
    )


class SandboxResult(BaseModel):
    """What one run of agent code produced. ``error`` and ``limit`` are None when it ran to the end."""

    model_config = ConfigDict(extra="ignore")

    stdout: str = Field(default="", description="What the code printed (truncated at the output limit).")
    stderr: str = Field(default="", description="What it wrote to stderr (same limit, shared with stdout).")
    result: JsonValue = Field(default=None, description="Value of the result variable (JSON), None if unset.")
    error: CodeError | None = Field(default=None, description="The exception, or the limit, that ended the run.")
    limit: LimitName | None = Field(default=None, description="The limit that stopped the run, if one did.")
    calls: list[ToolCall] = Field(default_factory=list, description="Tool calls the code made, in order.")
    results: list[ToolResult] = Field(default_factory=list, description="Their results, in the same order.")
    seconds: float = Field(default=0.0, description="Wall seconds of the run (as the parent measured it).")
    cpu_seconds: float | None = Field(default=None, description="CPU seconds the code's process used.")
    max_rss_mb: float | None = Field(
        default=None, description="Peak memory of the run, MB: the larger of the code's process's peak resident "
        "size and the sampled total of all its processes and scratch files (bwrap sandbox).",
    )
    refused_calls: int = Field(default=0, description="Tool calls refused (over the per-run cap or too large).")
    exit: int | None = Field(default=None, description="Exit status of the code's process, if it exited.")
    signal: str | None = Field(default=None, description="Signal that killed the code's process, if one did.")
    truncated: bool = Field(default=False, description="Whether stdout/stderr were cut at the output limit.")
    backend: Backend = Field(default="bwrap", description="bwrap (confined) or unsafe-local (not confined).")

    @property
    def ok(self) -> bool:
        """True when the code ran to its end without an exception or a limit."""
        return self.error is None and self.limit is None

    @property
    def tool_calls(self) -> list[str]:
        """Names of the tools called, in order."""
        return [c.name for c in self.calls]

    def event(self, code: str, role: str = "execution") -> CodeRunEvent:
        """This run as a trajectory event."""
        errors = [r.error for r in self.results] + ["no result recorded"] * (len(self.calls) - len(self.results))
        return CodeRunEvent(
            role=role,  # type: ignore[arg-type]
            code=code, stdout=self.stdout, result=self.result, error=self.error, limit=self.limit,
            tool_calls=self.tool_calls, seconds=self.seconds,
            calls=[CodeToolCall(name=c.name, arguments=c.arguments, error=err)
                   for c, err in zip(self.calls, errors, strict=False)],
        )

    def feedback(self) -> str:
        """The run as text for the agent that wrote the code: output, result, and the error to repair."""
        parts = []
        if self.stdout:
            parts.append("stdout:\n" + self.stdout.rstrip("\n"))
        if self.stderr and self.error is None:
            parts.append("stderr:\n" + self.stderr.rstrip("\n"))
        if self.error is not None:
            where = f" (line {self.error.line})" if self.error.line else ""
            parts.append(f"error{where}: {self.error.type}: {self.error.message}")
            if self.error.traceback:
                parts.append(self.error.traceback)
        elif self.result is not None:
            import json

            parts.append("result: " + json.dumps(self.result, ensure_ascii=False)[:2000])
        return "\n".join(parts) or "(no output)"


class SandboxStatus(BaseModel):
    """Whether agent code can be confined here, and how."""

    model_config = ConfigDict(extra="ignore")

    available: bool = Field(description="Whether the bwrap sandbox works on this machine.")
    reason: str = Field(default="", description="Why not, in one line (with the fix), when it does not.")
    bwrap: str | None = Field(default=None, description="Path of the bwrap executable.")
    version: str | None = Field(default=None, description="bwrap version.")
    seccomp: str = Field(default="", description="What the seccomp filter denies, or why there is none.")
    uid: int | None = Field(default=None, description="Uid the code runs as (outside the sandbox).")
    python: str | None = Field(default=None, description="Interpreter the code runs on.")


__all__ = ["Backend", "LIMIT_NAMES", "LimitName", "SandboxLimits", "SandboxResult", "SandboxStatus"]
