"""`taskbench sandbox run|status`: run a Python file in the code sandbox and print the structured result."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # pragma: no cover
    from ..envs.sandbox import SandboxLimits, SandboxResult

sandbox_app = typer.Typer(
    name="sandbox",
    help="The sandbox for agent-written code: run a file in it (try an attack by hand), or check what it "
    "confines here.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

@sandbox_app.command("run")
def run_command(
    file: Path = typer.Argument(..., metavar="FILE.py", help="The Python file to run ('-': read stdin).",
                                show_default=False),
    allow_port: list[int] = typer.Option(
        [], "--allow-port", help="Let the code connect to 127.0.0.1:N (relayed; repeatable). Nothing else "
        "on the network is reachable."
    ),
    timeout: float = typer.Option(30.0, "--timeout", min=0.01, help="Wall-clock limit, seconds (tool calls included)."),
    cpu: float = typer.Option(10.0, "--cpu", help="CPU-time limit, seconds."),
    memory: int = typer.Option(512, "--memory", help="Memory limit, MB: each process's address space, and all the "
                               "run's processes and scratch files (inodes included) together."),
    processes: int = typer.Option(32, "--processes", help="Processes + threads the code may have at once."),
    open_files: int = typer.Option(64, "--files", help="Open file descriptors per process."),
    output: int = typer.Option(1_000_000, "--max-output", help="Bytes of stdout + stderr kept; past it the run stops."),
    disk: int = typer.Option(64, "--disk", help="Size of each scratch directory (/work, /tmp, /dev/shm), MB; "
                             "each holds at most 256 files per MB."),
    result_var: str = typer.Option("result", "--result-var", help="Variable whose value is the run's result."),
    env: str | None = typer.Option(
        None, "--env", "-e", help="Give the code the tools of this environment (e.g. restbench-tmdb, "
        "'mcp:python server.py'); default: no tools."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result as JSON on stdout."),
    unsafe_local: bool = typer.Option(
        False, "--unsafe-local", help="Run WITHOUT confinement (a plain subprocess of yours, limits only). Only "
        "for code you trust, where bwrap cannot run."
    ),
    # the old spellings, for one release: -t meant --timeout (now --task elsewhere), -p --allow-port (now
    # --predictions), --output the byte count (now always a path)
    old_timeout: float | None = typer.Option(None, "-t", hidden=True, help="Old name of --timeout."),
    old_ports: list[int] = typer.Option([], "-p", hidden=True, help="Old name of --allow-port."),
    old_output: int | None = typer.Option(None, "--output", hidden=True, help="Old name of --max-output."),
) -> None:
    """Run FILE.py in the sandbox and print what it printed, its result variable, its error and limits.

    The code runs in a fresh bwrap sandbox: no network (but --allow-port), no view of your files, an empty
    environment, scratch directories /work (the working directory) and /tmp. Inside, call_tool(name, **args)
    and one function per tool of --env are defined (see docs/sandbox.md).

    Without --json, the code's stdout goes to stdout and the summary (result, error with its line, limit, tool
    calls, seconds) to stderr. Everything that comes from the run is printed with its control characters
    escaped (\\x1b...), and a line of its output that starts with '--' gets a backslash, so the code can
    neither drive your terminal nor fake a summary line; --json prints ASCII JSON (the exact text, escaped).

    Examples:

        taskbench sandbox run attack.py --timeout 5 --memory 256

        taskbench sandbox run client.py --allow-port 8000 --json

        echo 'result = sum(range(10))' | taskbench sandbox run - --json

    Exit codes: 0 the code ran to its end; 1 it raised an exception (or crashed); 2 bad usage, or no sandbox
    here and no --unsafe-local; 3 a limit stopped it (cpu, wall, memory, processes, files, output); 4 the
    sandbox itself failed (its supervisor died or stopped answering).
    """
    from ..envs.sandbox import SandboxLimits
    from ..errors import InputError

    where = "<stdin>" if str(file) == "-" else file
    if str(file) == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
    else:
        from ..dataset.jsonio import check_input_file

        check_input_file(file)  # /dev/zero or a FIFO would be read forever
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the code: {exc.strerror or exc}", path=file) from None
    code = _python_source(data, where)
    timeout = old_timeout if old_timeout is not None else timeout
    output = old_output if old_output is not None else output
    allow_port = [*allow_port, *old_ports]
    from pydantic import ValidationError

    from ..errors import options_error

    try:
        limits = SandboxLimits(cpu_seconds=cpu, wall_seconds=timeout, memory_mb=memory, processes=processes,
                               open_files=open_files, output_bytes=output, disk_mb=disk)
    except ValidationError as exc:  # --cpu -1: one line naming the option
        raise options_error(exc) from None
    if unsafe_local:
        typer.echo("taskbench: warning: --unsafe-local: the code runs unconfined, as you", err=True)
    result = _run(code, limits, allow_port, result_var, env, unsafe_local)
    if as_json:
        import json

        from ..dataset.jsonio import model_json

        # ASCII JSON: no character of the run's reaches the terminal raw (control characters, bidirectional
        # overrides and every other non-ASCII character are \u escapes; a lone surrogate in a tool's answer too)
        typer.echo(json.dumps(model_json(result), indent=2))
    else:
        _render(result)
    raise typer.Exit(_exit_code(result))


def _python_source(data: bytes, where: str | Path) -> str:
    """The text of Python source as Python reads it: UTF-8, or the encoding a BOM or a coding cookie names. Bytes
    that do not decode are an InputError (exit 2), not a sandbox failure."""
    import io
    import tokenize

    from ..errors import InputError

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise InputError(f"the code is not text Python can read ({reason}); save it as UTF-8", path=where) from None
    return text[1:] if text.startswith("\ufeff") else text


def _run(code: str, limits: SandboxLimits, ports: list[int], result_var: str, env_name: str | None,
         unsafe_local: bool) -> SandboxResult:
    import asyncio

    from ..envs.sandbox import Sandbox

    async def go() -> SandboxResult:
        env = None
        if env_name:
            from ..envs import open_environment

            env = open_environment(env_name)
            await env.reset(0)
        try:
            box = (Sandbox.for_environment(env, limits=limits, allow_ports=ports, result_var=result_var,
                                           unsafe_local=unsafe_local) if env is not None else
                   Sandbox(limits=limits, allow_ports=ports, result_var=result_var, unsafe_local=unsafe_local))
            async with box:
                return await box.run(code)
        finally:
            if env is not None:
                await env.aclose()

    return asyncio.run(go())


def _exit_code(result: SandboxResult) -> int:
    if result.limit:
        return 3
    if result.error is not None:
        return 4 if result.error.type == "SandboxError" else 1
    return 0


# Characters of a run's text that a terminal would act on rather than show: C0 controls (ESC starts the sequences
# that set the title, write the clipboard (OSC 52), move the cursor or erase lines; CR and BS overwrite), DEL,
# C1 controls (0x9b is a CSI of its own), bidirectional overrides and isolates (they reorder what is shown), line
# and paragraph separators, and lone surrogates. Newlines and tabs stay in multi-line text only.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff"
_UNSAFE_LINE = re.compile(f"[\t\n{_UNSAFE}]")
_UNSAFE_TEXT = re.compile(f"[{_UNSAFE}]")
_SUMMARY_LIKE = re.compile(r"^--", re.M)


def _shown(text: str, *, lines: bool = False) -> str:
    """Text from a run (the code's output, its error, tool names), safe to print: each character a terminal
    would act on becomes a backslash escape (``\\x1b``, ``\\u202e``); in multi-line text a line that starts
    like a line of the summary (``--``) gets a backslash in front, so the code cannot fake one."""
    def escape(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    if not lines:
        return _UNSAFE_LINE.sub(escape, text)
    return _SUMMARY_LIKE.sub(r"\\--", _UNSAFE_TEXT.sub(escape, text))


def _render(result: SandboxResult) -> None:
    """The run for a person: the code's stdout on stdout, its stderr and the summary (lines starting with
    ``--``) on stderr; everything that came from the run goes through :func:`_shown`."""
    import json

    if result.stdout:
        sys.stdout.write(_shown(result.stdout, lines=True))
        sys.stdout.flush()
    err = sys.stderr
    if result.stderr:
        text = _shown(result.stderr, lines=True)
        err.write(text if text.endswith("\n") else text + "\n")
    if result.truncated:
        err.write("-- output truncated at the output limit\n")
    if result.error is not None:
        where = f" at line {result.error.line}" if result.error.line else ""
        if result.error.traceback and result.error.type != "LimitExceeded":
            err.write(_shown(result.error.traceback, lines=True).rstrip("\n") + "\n")
        err.write(f"-- error{where}: {_shown(result.error.type)}: {_shown(result.error.message)}\n")
    if result.limit:
        err.write(f"-- limit: {result.limit}\n")
    if result.result is not None:
        err.write(f"-- result: {_shown(json.dumps(result.result, ensure_ascii=False)[:4000])}\n")
    if result.calls:
        names = ", ".join(_shown(n) for n in result.tool_calls[:10]) + (" ..." if len(result.calls) > 10 else "")
        err.write(f"-- tool calls: {len(result.calls)} ({names})\n")
    usage = [f"{result.seconds:.3f} s"]
    if result.cpu_seconds is not None:
        usage.append(f"cpu {result.cpu_seconds:.3f} s")
    if result.max_rss_mb is not None:
        usage.append(f"peak {result.max_rss_mb:.0f} MB")
    err.write(f"-- {result.backend}: {', '.join(usage)}\n")


@sandbox_app.command("status")
def status_command(
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Say whether agent code can be confined here, and how (bwrap version, seccomp, uid, interpreter).

    Runs one trivial snippet in the sandbox. Exit code 0 when the sandbox works, 2 when it does not.

    Example:

        taskbench sandbox status
    """
    from ..envs.sandbox import sandbox_status

    status = sandbox_status()
    if as_json:
        typer.echo(status.model_dump_json(indent=2))
    else:
        state = "available" if status.available else f"NOT available: {status.reason}"
        typer.echo(f"sandbox: {state}")
        typer.echo(f"bwrap: {status.bwrap or '-'} {status.version or ''}".rstrip())
        typer.echo(status.seccomp)
        typer.echo(f"code runs as uid {status.uid if status.uid is not None else '-'} on {status.python}")
    raise typer.Exit(0 if status.available else 2)


def register(app: typer.Typer) -> None:
    """Add the `sandbox` command group to the main app."""
    app.add_typer(sandbox_app, name="sandbox")
