"""The one progress bar of the record runner's commands (predict, generate, judge): a rich bar on an
injected Console, with label, bar, done/total, rate, ETA and the columns a subclass adds
(:class:`taskbench.predict.progress.RichPredictDisplay`, :class:`taskbench.engine.progress.RichGenerateDisplay`).
Nothing is printed unless a Console is given; tests pass ``Console(file=StringIO(), get_time=...)``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Samples per second over the task's lifetime."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        if not speed:
            return Text("-- /s", style="progress.data.speed")
        return Text(f"{speed:.2f}/s", style="progress.data.speed")


_D = TypeVar("_D", bound="RichBarDisplay")


class EtaColumn(ProgressColumn):
    """Time left = the time per item of this run so far x the items left. Rich's own estimate keeps the speed
    of the last burst until the next update, so a bar stuck at 4/8 said 0:00:03 left; this one grows while
    nothing finishes. Items an earlier run did (``task.fields["skipped"]``) are not counted as speed."""

    max_refresh = 0.5

    def render(self, task: Any) -> Text:
        if task.finished:
            return Text("0:00:00", style="progress.remaining")
        done = task.completed - task.fields.get("skipped", 0)
        elapsed = task.elapsed
        if done <= 0 or not elapsed or task.total is None:
            return Text("-:--:--", style="progress.remaining")
        left = int(round(elapsed / done * max(0.0, task.total - task.completed)))
        hours, rest = divmod(left, 3600)
        return Text(f"{hours}:{rest // 60:02d}:{rest % 60:02d}", style="progress.remaining")


NARROW = 100
"""Below this console width the bar is short, the rate column is left out and the label gives way (it is cut
with an ellipsis) so that the figures are never cut."""


class RichBarDisplay:
    """A rich progress bar per run (label, bar, done/total, rate, ETA, then the subclass's columns) that keeps
    the runs' summaries; the base of the prediction and the generation displays.

    The figures (done/total, ETA, the subclass's counts) never wrap or get cut: below :data:`NARROW` columns the
    bar shrinks, the rate is left out and the label is cut to the width left (each bar's own at its start)."""

    def __init__(self, console: Console | None = None, *, transient: bool = False) -> None:
        from rich.table import Column

        self.console = console or Console(stderr=True)
        self.summaries: list[Any] = []
        self.narrow = self.console.width < NARROW
        self._label = TextColumn("[bold]{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis"))
        figures = [MofNCompleteColumn(), *(() if self.narrow else (RateColumn(),)), EtaColumn(), *self._columns()]
        for column in figures:
            column._table_column = Column(no_wrap=True)  # rich keeps the column's layout there
        self._figures = figures
        self._progress = Progress(
            self._label,
            BarColumn(bar_width=8 if self.narrow else 40),
            *figures,
            console=self.console,
            transient=transient,
            get_time=self.console.get_time,
        )
        self._task: Any = None
        self._started = False
        self._reset()

    def _columns(self) -> list[ProgressColumn]:
        """The columns after the ETA."""
        return []

    def _reset(self) -> dict[str, Any]:
        """Zero the counters of a new run; the task fields its bar starts with."""
        return {}

    def start(self, label: str, total: int, completed: int) -> None:
        """A run begins (a new bar)."""
        if not self._started:
            self._progress.start()
            self._started = True
        self._task = self._progress.add_task(label, total=total, completed=completed, skipped=completed,
                                             **self._reset())
        self._fit_label()

    SLACK = 6
    """Columns kept free for figures that grow while the bar runs (counts, tokens)."""

    def _fit_label(self) -> None:
        """Give the label what the console leaves after the bar and the figures (measured on the newest bar)."""
        from rich.measure import Measurement

        if not self.narrow:
            return
        task = self._progress.tasks[-1]
        options = self.console.options
        used = 8 + sum(Measurement.get(self.console, options, column(task)).maximum for column in self._figures)
        gaps = len(self._figures) + 1  # one space between columns
        room = self.console.width - used - gaps - self.SLACK
        self._label.get_table_column().width = max(8, room)

    def notice(self, text: str) -> None:
        """A warning worth a line of its own (e.g. that the last run on this output died); shown even when the
        progress display is quiet."""
        import sys

        if self.console.quiet:
            print(f"taskbench: warning: {text}", file=sys.stderr)
        else:
            from rich.markup import escape

            self.console.print(f"taskbench: [yellow]warning:[/yellow] {escape(text)}")

    def finish(self, summary: Any) -> None:
        """A run ended."""
        self.summaries.append(summary)
        if self._task is not None:
            self._progress.update(self._task, completed=summary.skipped + summary.written)

    def close(self) -> None:
        """Stop the live display."""
        if self._started:
            self._progress.stop()
            self._started = False

    def __enter__(self: _D) -> _D:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["EtaColumn", "RateColumn", "RichBarDisplay"]
