"""`taskbench` entry point: registers the command modules and turns taskbench errors into one line + exit 2.

Each command module (``taskbench.cli.<name>``) defines ``register(app)``; heavy imports happen inside the
command functions so that ``taskbench --help`` and quick commands start fast.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import signal
import sys
from typing import Any

import typer
import typer.main

from ..errors import TaskbenchError

app = typer.Typer(
    name="taskbench",
    help="Build task-automation benchmarks from tool libraries, run models on them and score them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command and group
)

# Modules that contribute commands, in the order `--help` lists them.
COMMAND_MODULES = [
    "run",
    "predict",
    "evaluate",
    "leaderboard",
    "graph",
    "sample",
    "generate",
    "data",
    "review",
    "view",
    "serve",
    "sandbox",
    "agents",
    "doctor",
]


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"taskbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the taskbench version and exit."
    ),
) -> None:
    """taskbench: tool graphs -> benchmark samples -> model predictions -> scores.

    Start with `taskbench run` (the embedded model on the bundled demo datasets).
    """


def _compact_help() -> None:
    from .help import install

    install()


_compact_help()


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"taskbench.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"taskbench.cli.{name}":
                continue  # command not built yet
            raise
        module.register(app)


_register()


STDOUT_OUTPUTS = frozenset({"evaluate", "compare", "leaderboard", "agents compare", "graph build", "sample"})
"""Commands whose ``--output -`` writes to standard output (their JSON); every other ``--output -`` is refused
(it would create a file named ``-``)."""


def _guard_stdout(command: object, path: str = "") -> None:
    """Give every ``--output`` of ``command`` and its subcommands a check of the value ``-`` (see
    :data:`STDOUT_OUTPUTS`)."""
    for param in getattr(command, "params", ()):
        if param.name in ("output", "out_alias") and not getattr(param, "_stdout_guard", False):
            param.callback = _refuse_dash(param.callback, allowed=path in STDOUT_OUTPUTS)
            param._stdout_guard = True
    for name, sub in (getattr(command, "commands", None) or {}).items():
        _guard_stdout(sub, f"{path} {name}".strip())


def _refuse_dash(inner: Any, *, allowed: bool) -> Any:
    def callback(ctx: Any, param: Any, value: Any) -> Any:
        if value is not None and str(value) == "-" and not allowed:
            from ..errors import ConfigError

            raise ConfigError(f"{'/'.join(param.opts)} -: this command writes files it can resume or read back, "
                              "not a stream; give a path (standard output is for the JSON of evaluate, compare, "
                              "leaderboard, agents compare, graph build and sample)")
        return inner(ctx, param, value) if inner is not None else value

    return callback


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM (a scheduler stopping a job, `kill PID`) ends a command like Ctrl-C does, so it can finish its
    # records and mark its run log "interrupted" instead of vanishing mid-run.
    raise KeyboardInterrupt


class _StderrHandler(logging.Handler):
    """Log lines as ``taskbench: message`` on whatever ``sys.stderr`` is at the moment (a live progress bar
    redirects it, so the lines print above the bar instead of through it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(f"taskbench: {_clean(self.format(record))}", file=sys.stderr)
        except Exception:  # pragma: no cover - never let logging break a command
            self.handleError(record)


_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _clean(text: str) -> str:
    """``text`` without any secret the user passed in this process (API keys, ``$NAME`` values of ``mcp:``
    specs; :func:`taskbench.llm.redact.remembered`), on one line: newlines, terminal escapes and bidi controls
    (from a file name, a value, a server's answer) are shown as ``\\n``, ``\\x1b``, ``\\u202e``. The last guard
    before a line reaches the terminal."""
    from ..llm.redact import redact_known, remembered

    secrets = remembered()
    text = redact_known(text, secrets) if secrets else text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _logging() -> None:
    """Show the library's log lines (retries, skipped records) on stderr: INFO by default,
    ``TASKBENCH_LOG_LEVEL`` (e.g. WARNING, DEBUG) to change it."""
    logger = logging.getLogger("taskbench")
    if any(isinstance(h, _StderrHandler) for h in logger.handlers):
        return
    level = os.environ.get("TASKBENCH_LOG_LEVEL", "INFO").upper()
    logger.setLevel(getattr(logging, level, logging.INFO))
    logger.addHandler(_StderrHandler())
    logger.propagate = False


def _tolerant_streams() -> None:
    """Text that UTF-8 cannot encode (a lone surrogate from a ``"\\ud800"`` escape in the input) is printed as
    a backslash escape instead of ending the command in a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        # surrogateescape and surrogatepass fail on a lone surrogate too (or on any non-ASCII text in ASCII)
        if reconfigure is not None and getattr(stream, "errors", None) in ("strict", "surrogateescape",
                                                                            "surrogatepass"):
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # pragma: no cover - a stream that cannot change now
                pass


def _is_path(annotation: object) -> bool:
    import pathlib
    import typing

    if annotation is pathlib.Path:
        return True
    return any(_is_path(a) for a in typing.get_args(annotation))


def _empty_path(argv: list[str]) -> str | None:
    """The option of the command line ``argv`` that was given an empty path (``-o ''``, ``--output=``: an unset
    shell variable; a path option would read it as the current directory), or None."""
    from typer.main import get_command

    cmd: Any = get_command(app)
    i = 0
    while i < len(argv) and argv[i] in getattr(cmd, "commands", {}):
        cmd = cmd.commands[argv[i]]
        i += 1
    names = {o for p in getattr(cmd, "params", []) if _is_path(getattr(getattr(p, "type_descriptor", None),
                                                                           "annotation", None))
             for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))}
    rest = argv[i:]
    for k, word in enumerate(rest):
        nxt = rest[k + 1] if k + 1 < len(rest) else None
        if word == "--":
            break
        if word in names and nxt is not None and not nxt.strip():
            return word
        name, eq, value = word.partition("=")
        if eq and name in names and not value.strip():
            return name
    return None


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    _logging()
    _tolerant_streams()
    if argv is None:  # the real entry point (not a test calling main in-process): a native crash leaves a record
        from ..dataset.liveness import enable_crash_log

        enable_crash_log()
    if os.path.isfile(".env"):  # TASKBENCH_* defaults (e.g. TASKBENCH_MODEL); imported only when there is one
        from ..run.spec import load_dotenv

        load_dotenv()
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)
    try:  # typer >= 0.23 carries its own copy of click; its exceptions are the ones raised here
        from typer._click import exceptions as cx
    except ImportError:  # pragma: no cover - older typer on the real click
        from click import exceptions as cx  # type: ignore[no-redef]

    words = list(sys.argv[1:] if argv is None else argv)
    empty = _empty_path(words)
    if empty is not None:
        print(f"taskbench: error: {empty} was given an empty path; give a file or directory name (see: taskbench "
              f"{' '.join(w for w in words[:2] if not w.startswith('-'))} --help)", file=sys.stderr)
        sys.exit(2)
    command = typer.main.get_command(app)
    _guard_stdout(command)
    try:
        code = command.main(args=argv, standalone_mode=False)
    except cx.NoArgsIsHelpError as exc:  # `taskbench` or a group alone: its help
        exc.show()
        sys.exit(0)
    except cx.ClickException as exc:  # a usage error: one line, like every other error
        where = exc.ctx.command_path if isinstance(exc, cx.UsageError) and exc.ctx is not None else "taskbench"
        print(f"taskbench: error: {_clean(exc.format_message())} (see: {where} --help)", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("taskbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except TaskbenchError as exc:
        print(f"taskbench: error: {_clean(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except OSError as exc:
        if exc.filename is None:  # not about a path the user gave: a bug to see whole
            raise
        # a path the user gave that the system refused where no reader expected it (a name too long, no
        # permission, a full disk): one line naming it
        name = str(exc.filename)
        shown = name if len(name) <= 200 else f"{name[:80]}...{name[-80:]} ({len(name)} characters)"
        print(f"taskbench: error: {_clean(shown)}: {_clean(exc.strerror or str(exc))}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("taskbench: interrupted", file=sys.stderr)
        sys.exit(130)
    code = code if isinstance(code, int) else 0
    if code == 130:
        print("taskbench: interrupted", file=sys.stderr)
    sys.exit(code)  # as in click's standalone mode: main() always ends in SystemExit


if __name__ == "__main__":  # pragma: no cover
    main()
