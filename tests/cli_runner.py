"""Run the taskbench command line in-process for tests: exit code, stdout and stderr."""

from __future__ import annotations

from typing import Any

from taskbench.cli.main import main


def run(capsys: Any, *args: str) -> tuple[int, str, str]:
    """``taskbench ARGS`` through ``main`` (exit code as the shell sees it: 0 for a normal return or
    ``SystemExit(None)``, 1 for a non-integer code), with what it printed."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err
