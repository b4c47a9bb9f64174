"""The one display object for generation progress: a rich progress bar on an injected Console.

Columns: label, bar, done/total, rate, ETA, then the pass rates of the rule critic, the LLM critic and both
over the attempts finished so far in this run, and the failed calls. Nothing is printed unless a Console is
given; tests pass ``Console(file=StringIO(), get_time=...)``.
"""

from __future__ import annotations

from typing import Any

from rich.progress import ProgressColumn, TextColumn
from rich.table import Table

from ..progress import RichBarDisplay
from ..schema.generation import GenerationRecord, parse_generation_record

__all__ = ["RichGenerateDisplay", "statistics_table"]


def _pct(passed: int, total: int) -> str:
    return f"{100 * passed / total:.0f}%" if total else "--"


class RichGenerateDisplay(RichBarDisplay):
    """A progress bar per generation run with the critics' pass rates as they come."""

    def _columns(self) -> list[ProgressColumn]:
        return [TextColumn("{task.fields[rates]}"), TextColumn("[red]{task.fields[failed]} failed")]

    def _rates(self) -> str:
        n = self.attempts
        sep = " " if self.narrow else " · "  # a narrow terminal keeps its columns for the label
        return f"rule {_pct(self.rule, n)}{sep}llm {_pct(self.llm, n)}{sep}both {_pct(self.both, n)}"

    def _reset(self) -> dict[str, Any]:
        self.attempts = self.rule = self.llm = self.both = self.failed = 0
        return {"rates": self._rates(), "failed": 0}

    def advance(self, record: dict[str, Any], *, failed: bool) -> None:
        """One plan entry finished (a line of data_raw.json; ``failed``: its model call failed for good)."""
        rec = parse_generation_record(record)
        if failed or not isinstance(rec, GenerationRecord):
            self.failed += 1
        else:
            rule, llm = rec.critics.get("rule") is True, rec.critics.get("llm") is True
            self.attempts += 1
            self.rule += rule
            self.llm += llm
            self.both += rule and llm
        self._progress.update(self._task, advance=1, rates=self._rates(), failed=self.failed)


def _cell(group: dict[str, Any], key: str) -> str:
    value = group.get(key) or {}
    rate = value.get("rate")
    return f"{value.get('passed', 0)} ({100 * rate:.1f}%)" if rate is not None else "-"


def statistics_table(stats: dict[str, Any], *, title: str | None = None) -> Table:
    """The paper's critic table from statistics.json: one row per mode, per size and overall (with a "gold
    executed" column when the run executed its gold graphs, ``generate --env``)."""
    table = Table(title=title or "Critics (pass counts and rates over attempts)", title_justify="left")
    executed = "exec_critic" in stats  # generate --env: the gold graphs ran in the environment
    for col in ("group", "planned", "attempts", "LLM critic", "rule critic", "both",
                *(("gold executed",) if executed else ()), "kept", "dups", "avg nodes", "avg links",
                "request words"):
        table.add_column(col, justify="left" if col == "group" else "right")

    def row(name: str, g: dict[str, Any]) -> None:
        table.add_row(name, str(g.get("planned", 0)), str(g.get("attempts", 0)), _cell(g, "llm_critic"),
                      _cell(g, "rule_critic"), _cell(g, "both_critics"),
                      *((_cell(g, "exec_critic"),) if executed else ()), str(g.get("kept", 0)),
                      str(g.get("duplicates", 0)), f"{g['avg_nodes']:.2f}" if "avg_nodes" in g else "-",
                      f"{g['avg_links']:.2f}" if "avg_links" in g else "-",
                      f"{g['avg_request_words']:.1f}" if "avg_request_words" in g else "-")

    for mode, g in (stats.get("by_mode") or {}).items():
        row(mode, g)
    for size, g in (stats.get("by_size") or {}).items():
        row(f"{size} tool{'s' if size != '1' else ''}", g)
    row("overall", stats)
    return table
