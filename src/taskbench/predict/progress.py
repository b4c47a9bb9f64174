"""The one display object for prediction progress: a rich progress bar on an injected Console.

Columns: label, bar, done/total, rate (samples/s), ETA, failures (failed calls + unparseable answers) and
tokens. Nothing is printed unless a Console is given; tests pass ``Console(file=StringIO(), get_time=...)``.
"""

from __future__ import annotations

from typing import Any

from rich.progress import (
    ProgressColumn,
    TextColumn,
)
from rich.table import Table

from ..progress import RateColumn, RichBarDisplay
from .runner import PredictSummary


class RichPredictDisplay(RichBarDisplay):
    """Shows a progress bar per (model, dataset) run and keeps the summaries for :meth:`summary_table`."""

    summaries: list[PredictSummary]

    def _columns(self) -> list[ProgressColumn]:
        return [TextColumn("[red]{task.fields[failures]} failed"), TextColumn("{task.fields[tokens]:,} tok")]

    def _reset(self) -> dict[str, Any]:
        self._failures = 0
        self._tokens = 0
        return {"failures": 0, "tokens": 0}

    def advance(self, record: dict[str, Any], *, failed: bool) -> None:
        """One sample finished (``failed``: the call failed for good; an unparseable answer counts too)."""
        self._failures += int(failed or record.get("error") is not None)
        usage = record.get("usage")
        if isinstance(usage, dict):
            self._tokens += int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
        self._progress.update(self._task, advance=1, failures=self._failures, tokens=self._tokens)


SUMMARY_DROP_FIRST = ("tokens in/out", "retries", "cached", "new")
"""Columns of :func:`summary_table` that give way first at a narrow width: which run (model, dataset), how far
(done), what went wrong (failed, unparsed) and how long stay."""


def summary_table(summaries: list[PredictSummary]) -> Table:
    """A table of prediction summaries (one row per run): model, dataset, done, failed, unparsed, seconds, then
    new, cached, retries and tokens. Names wrap at their punctuation instead of being cut, numbers never wrap;
    the output files are listed under the table (caption). Fit it to a terminal with
    :func:`taskbench.report.tables.fit_width` (``drop_first=SUMMARY_DROP_FIRST``)."""
    table = Table(title="Predictions", title_justify="left", caption_justify="left")
    table.add_column("model", overflow="fold")
    table.add_column("dataset", overflow="fold")
    for col in ("done", "failed", "unparsed", "seconds", "new", "cached", "retries", "tokens in/out"):
        table.add_column(col, justify="right", no_wrap=True)
    for s in summaries:
        table.add_row(
            s.model,
            s.dataset or "-",
            f"{s.done}/{s.selected}",
            str(s.failures),
            str(s.parse_failures),
            f"{s.seconds:.1f}",
            str(s.written),
            str(s.cache_hits),
            str(s.retries),
            f"{s.prompt_tokens:,}/{s.completion_tokens:,}",
        )
    table.caption = "\n".join(f"{s.dataset or s.model}: {s.output}" for s in summaries)
    return table


__all__ = ["SUMMARY_DROP_FIRST", "RateColumn", "RichBarDisplay", "RichPredictDisplay", "summary_table"]
