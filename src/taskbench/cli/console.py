"""The one place the command line makes its rich consoles.

On a terminal rich measures the window. Piped or redirected output (``make demo > log``, CI logs) would get
rich's 80-column default, which truncates the wide metric tables; there we use ``$COLUMNS`` or 120.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

PIPE_WIDTH = 120


def make_console(*, stderr: bool = False, quiet: bool = False, **kwargs: object) -> Console:
    """A rich Console for stdout (or stderr) that stays readable when the output is not a terminal."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not stream.isatty():
        try:
            width = int(os.environ.get("COLUMNS", PIPE_WIDTH))
        except ValueError:
            width = PIPE_WIDTH
    return Console(stderr=stderr, quiet=quiet, width=width, **kwargs)  # type: ignore[arg-type]


def exit_if_calls_failed(failed: int, total: int, errors: Sequence[str], what: str = "model calls") -> None:
    """When ``failed`` > 0: the one-line reason on stderr (the first error, without its record id) and exit
    code 1, the rule of every command whose calls can fail for good (a rerun retries them)."""
    if not failed:
        return
    import typer

    first = errors[0].split(": ", 1)[-1] if errors else "unknown"
    typer.echo(f"taskbench: {failed} of {total} {what} failed for good (first: {first}); "
               f"rerun the same command to retry them", err=True)
    raise typer.Exit(1)
