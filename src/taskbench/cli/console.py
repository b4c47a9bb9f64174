"""The one place the command line makes its rich consoles.

On a terminal rich measures the window. Piped or redirected output (``make demo > log``, CI logs) would get
rich's 80-column default, which truncates the wide metric tables; there we use ``$COLUMNS`` or 120.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

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


WIDE_HELP = "Show every column, however wide (default: the columns that fit the terminal, most needed first)."
JSON_HELP = "Print the result as JSON on stdout instead of tables (progress and warnings stay on stderr)."
MORE = "--wide shows them, --json gives every figure"
"""What a table's "not shown" note offers."""


def wide_option() -> Any:
    """``--wide``: every column of the tables, however wide."""
    import typer

    return typer.Option(False, "--wide", help=WIDE_HELP)


def json_option() -> Any:
    """``--json``: the result as JSON on stdout, no tables."""
    import typer

    return typer.Option(False, "--json", help=JSON_HELP)


def is_stdout(path: object) -> bool:
    """Whether an ``--output`` value is ``-`` (standard output)."""
    return path is not None and str(path) == "-"


def print_table(console: Console, table: object, *, wide: bool = False, keep: int = 2,
                drop_first: Sequence[str | Sequence[str]] = (), more: str = MORE) -> None:
    """Print ``table`` fitted to the console (:func:`taskbench.report.tables.fit_width`: what is needed first
    stays, the rest is named under the table with ``more``), or with ``wide`` at its natural width."""
    from rich.measure import Measurement
    from rich.table import Table

    from ..report.tables import fit_width

    assert isinstance(table, Table)
    if wide:  # rich clamps a print's width to the console's: widen the console for this one table
        natural = Measurement.get(console, console.options.update_width(100_000), table).maximum
        width = console.width
        console.width = max(width, natural)
        try:
            console.print(table)
        finally:
            console.width = width
        return
    console.print(fit_width(table, console.width, keep=keep, drop_first=drop_first, more=more))


def print_json(value: object) -> None:
    """``value`` as indented JSON on stdout (not through rich: no wrapping, no markup)."""
    import json

    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()
