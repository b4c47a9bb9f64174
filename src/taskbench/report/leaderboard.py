"""Leaderboards: models x metrics from metrics JSON files, as markdown / HTML (table and plots) / PNG, and
rank correlation.

Reads every metrics layout ``taskbench evaluate`` writes: strict (``{"mode": "strict", "groups": ...}``),
both (``{"strict": ..., "compat": ...}``) and the reference layout (``{"overall_overall": {...}, ...}``, as
``--compat`` and the reference evaluator write). Metric names are mapped to one vocabulary
(:data:`BOARD_METRICS`); the model name is the file's stem (the reference names its files ``<llm>.json``).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import InputError

BOARD_METRICS: tuple[tuple[str, str], ...] = (
    ("step_rougeL", "R-L"),
    ("step_bertscore_f1", "BERT-F1"),
    ("node_micro_f1", "n-F1"),
    ("link_f1", "e-F1"),
    ("argument_name_f1", "t-F1"),
    ("argument_value_f1", "v-F1"),
    ("edit_distance", "NED"),
    ("graph_accuracy", "graph acc"),
)
"""(metric key, column header) in display order; NED is lower-is-better, the rest higher-is-better."""

LOWER_IS_BETTER = {"edit_distance", "parse_failure_rate", "missing_rate"}

_COMPAT_NAMES = {
    "node_micro_f1_no_matching": "node_micro_f1",
    "link_binary_f1": "link_f1",
    "argument_task_argname_binary_f1_no_matching": "argument_name_f1",
    "argument_task_argname_value_binary_f1_no_matching": "argument_value_f1",
    "edit_distance": "edit_distance",
    "step_rouge1": "step_rouge1",
    "step_rouge2": "step_rouge2",
    "step_rougeL": "step_rougeL",
    "step_rougeLsum": "step_rougeLsum",
    "step_bertscore_f1": "step_bertscore_f1",
}

STRUCTURES = ("single", "chain", "dag")


class BoardEntry(BaseModel):
    """One model's metrics, per group, in the board vocabulary."""

    model: str = Field(description="Model name (the metrics file's stem).")
    source: Literal["strict", "compat"] = Field(description="Which layout the numbers came from.")
    path: str = Field(description="The metrics file.")
    groups: dict[str, dict[str, float | None]] = Field(description="'{split}_{n}' -> metric -> value.")

    def value(self, metric: str, group: str = "overall_overall") -> float | None:
        """One metric of one group (None when absent or undefined)."""
        return self.groups.get(group, {}).get(metric)


def entry_from_json(doc: Any, *, model: str, path: str = "", source: str = "auto") -> BoardEntry:
    """A board entry from a metrics document (any layout; ``source`` picks strict/compat in a 'both' file)."""
    if not isinstance(doc, dict):
        raise InputError("not a metrics JSON object", path=path or None)
    if "strict" in doc and "compat" in doc:
        doc = doc["compat"] if source == "compat" else doc["strict"]
    if doc.get("mode") == "strict" and isinstance(doc.get("groups"), dict):
        if source == "compat":
            raise InputError("this file has no compat metrics", path=path or None, hint="use --source strict")
        groups = {k: dict(g.get("metrics") or {}) for k, g in doc["groups"].items() if isinstance(g, dict)}
        return BoardEntry(model=model, source="strict", path=path, groups=groups)
    groups = {}
    for key, block in doc.items():
        if isinstance(block, dict) and "all_samples" in block:
            groups[key] = {new: block[old] for old, new in _COMPAT_NAMES.items() if old in block}
    if not groups:
        raise InputError(
            "no metrics found (expected a taskbench evaluate output or a reference metrics JSON)",
            path=path or None,
        )
    if source == "strict":
        raise InputError("this file has no strict metrics", path=path or None, hint="use --source compat")
    return BoardEntry(model=model, source="compat", path=path, groups=groups)


def load_entries(paths: Sequence[str | Path], *, source: str = "auto") -> list[BoardEntry]:
    """Board entries from metrics files; two files with the same stem are an error."""
    from ..dataset.jsonio import read_json

    out: list[BoardEntry] = []
    seen: dict[str, str] = {}
    for p in paths:
        p = Path(p)
        model = p.stem
        if model in seen:
            raise InputError(f"two metrics files for model {model!r} ({seen[model]})", path=p,
                             hint="rename one of them; the file name is the model name")
        seen[model] = str(p)
        out.append(entry_from_json(read_json(p), model=model, path=str(p), source=source))
    if not out:
        raise InputError("no metrics files given")
    return out


class Leaderboard(BaseModel):
    """Models x metrics for one group, ranked by one metric."""

    group: str = Field(description="The split group the table shows (e.g. overall_overall).")
    rank_by: str = Field(description="Metric the rows are sorted by.")
    metrics: list[str] = Field(description="Metric keys shown (columns).")
    rows: list[dict[str, Any]] = Field(description="{'model', metric: value, ...} best first.")
    entries: list[BoardEntry] = Field(description="All entries (for per-structure/per-count plots).")


def build_board(
    entries: Sequence[BoardEntry], *, group: str = "overall_overall", rank_by: str = "node_micro_f1"
) -> Leaderboard:
    """Rank the entries by ``rank_by`` in ``group`` (missing values last)."""
    metrics = [k for k, _ in BOARD_METRICS if any(e.value(k, group) is not None for e in entries)]
    if rank_by not in {k for k, _ in BOARD_METRICS} and not any(e.value(rank_by, group) is not None for e in entries):
        raise InputError(f"unknown --rank-by metric {rank_by!r}", hint="one of " + ", ".join(k for k, _ in BOARD_METRICS))
    sign = 1.0 if rank_by in LOWER_IS_BETTER else -1.0

    def key(e: BoardEntry) -> tuple[int, float, str]:
        v = e.value(rank_by, group)
        return (v is None, sign * v if v is not None else 0.0, e.model)

    rows = []
    for e in sorted(entries, key=key):
        rows.append({"model": e.model, **{m: e.value(m, group) for m in metrics}})
    return Leaderboard(group=group, rank_by=rank_by, metrics=metrics, rows=rows, entries=list(entries))


def header(metric: str) -> str:
    """The short column header of a metric key (e.g. node_micro_f1 -> n-F1)."""
    return dict(BOARD_METRICS).get(metric, metric)


def _cell(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.2f}"


def to_markdown(board: Leaderboard, correlations: Sequence[Mapping[str, Any]] | None = None) -> str:
    """A GitHub-flavoured markdown table (percent), with the rank correlation table when given."""
    heads = ["#", "model"] + [header(m) for m in board.metrics]
    lines = [
        f"Leaderboard ({board.group}, ranked by {header(board.rank_by)}; values in %)",
        "",
        "| " + " | ".join(heads) + " |",
        "|" + "|".join(["---:", ":---"] + ["---:"] * len(board.metrics)) + "|",
    ]
    for i, row in enumerate(board.rows, 1):
        lines.append("| " + " | ".join([str(i), row["model"]] + [_cell(row[m]) for m in board.metrics]) + " |")
    if correlations:
        lines += ["", "| metric | models | Kendall's tau | Spearman's rho |", "|:---|---:|---:|---:|"]
        for c in correlations:
            lines.append(f"| {header(c['metric'])} | {c['n']} | {_num(c['kendall_tau'])} | {_num(c['spearman_rho'])} |")
    return "\n".join(lines) + "\n"


def _num(v: float | None) -> str:
    return "-" if v is None or v != v else f"{v:.3f}"


def to_html(
    board: Leaderboard,
    correlations: Sequence[Mapping[str, Any]] | None = None,
    *,
    plots: bool = True,
    metric: str | None = None,
) -> str:
    """A self-contained HTML page with the table, the plots of :func:`plot_board` (for ``metric``, default
    the ranking metric) as an inline PNG data URI (no network needed), and the rank correlations when given.
    ``plots=False`` leaves the figure out."""
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in ["#", "model"] + [header(m) for m in board.metrics])
    body = "".join(
        "<tr>" + f"<td>{i}</td><td>{e(row['model'])}</td>"
        + "".join(f"<td>{_cell(row[m])}</td>" for m in board.metrics) + "</tr>\n"
        for i, row in enumerate(board.rows, 1)
    )
    figure = ""
    if plots:
        shown = header(metric or board.rank_by)
        uri = "data:image/png;base64," + base64.b64encode(plot_png(board, metric=metric)).decode("ascii")
        figure = (f"<h2>{e(shown)} per structure and per tool count</h2>"
                  f"<img src=\"{uri}\" alt=\"{e(shown)} per structure and per tool count\">")
    corr = ""
    if correlations:
        rows = "".join(
            f"<tr><td>{e(header(c['metric']))}</td><td>{c['n']}</td><td>{_num(c['kendall_tau'])}</td>"
            f"<td>{_num(c['spearman_rho'])}</td></tr>\n"
            for c in correlations
        )
        corr = ("<h2>Rank correlation</h2><table><tr><th>metric</th><th>models</th><th>Kendall's tau</th>"
                f"<th>Spearman's rho</th></tr>\n{rows}</table>")
    title = f"Leaderboard ({e(board.group)}, ranked by {e(header(board.rank_by))}; values in %)"
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:nth-child(2){text-align:left}"
             "img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title><style>{style}</style>"
            f"</head><body><h1>{title}</h1><table><tr>{head}</tr>\n{body}</table>{figure}{corr}</body></html>\n")


def _board_figure(board: Leaderboard, metric: str | None) -> Any:
    """The two-panel matplotlib figure of :func:`plot_board` (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    metric = metric or board.rank_by
    models = [r["model"] for r in board.rows]
    entries = {e.model: e for e in board.entries}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / max(len(models), 1)
    x = np.arange(len(STRUCTURES))
    for i, m in enumerate(models):
        vals = [entries[m].value(metric, f"{s}_overall") for s in STRUCTURES]
        ax1.bar(x + i * width - 0.4 + width / 2, [100 * v if v is not None else np.nan for v in vals],
                width, label=m)
    ax1.set_xticks(x, STRUCTURES)
    ax1.set_ylabel(f"{header(metric)} (%)")
    ax1.set_title(f"{header(metric)} per structure")
    counts = [str(n) for n in range(1, 11)]
    for m in models:
        vals = [entries[m].value(metric, f"overall_{n}") for n in counts]
        ax2.plot(range(1, 11), [100 * v if v is not None else np.nan for v in vals], marker="o", label=m)
    ax2.set_xticks(range(1, 11))
    ax2.set_xlabel("number of tools")
    ax2.set_ylabel(f"{header(metric)} (%)")
    ax2.set_title(f"{header(metric)} per tool count")
    for ax in (ax1, ax2):
        ax.set_ylim(0, 105)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = ax2.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(models), 6), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def _save_figure(board: Leaderboard, target: Any, metric: str | None) -> None:
    import matplotlib.pyplot as plt

    fig = _board_figure(board, metric)
    try:
        fig.savefig(target, dpi=110, format="png")
    finally:
        plt.close(fig)


def plot_png(board: Leaderboard, *, metric: str | None = None) -> bytes:
    """The figure of :func:`plot_board` as PNG bytes."""
    buf = io.BytesIO()
    _save_figure(board, buf, metric)
    return buf.getvalue()


def plot_board(board: Leaderboard, path: str | Path, *, metric: str | None = None) -> Path:
    """A PNG with two panels for ``metric`` (default the ranking metric): grouped bars per structure
    (single/chain/dag) and a line per model over the tool count (1..10)."""
    path = Path(path)
    _save_figure(board, path, metric)
    return path


def read_ranking(path: str | Path, *, group: str = "overall_overall", metric: str = "node_micro_f1") -> dict[str, float]:
    """Scores per model from another source: ``{"model": score}``, a list of model names best first, or a
    board JSON (``taskbench leaderboard -o board.json``) whose ``metric`` column is used."""
    from ..dataset.jsonio import read_json

    doc = read_json(path)
    if isinstance(doc, list) and all(isinstance(m, str) for m in doc):
        return {m: float(len(doc) - i) for i, m in enumerate(doc)}
    if isinstance(doc, dict) and isinstance(doc.get("rows"), list):
        return {r["model"]: r[metric] for r in doc["rows"] if r.get(metric) is not None}
    if isinstance(doc, dict) and all(isinstance(v, (int, float)) for v in doc.values()) and doc:
        return {str(k): float(v) for k, v in doc.items()}
    raise InputError(
        "expected {\"model\": score, ...}, a list of model names best first, or a leaderboard JSON",
        path=path,
    )


def rank_correlations(board: Leaderboard, other: Mapping[str, float]) -> list[dict[str, Any]]:
    """Kendall's tau and Spearman's rho between each board metric and ``other`` over the shared models.

    Lower-is-better metrics are negated first, so +1 always means the same order."""
    from ..eval.stats import kendall_tau, spearman_rho

    out = []
    for m in board.metrics:
        pairs = [(r[m], other[r["model"]]) for r in board.rows if r["model"] in other and r[m] is not None]
        tau = rho = None
        if len(pairs) >= 2:
            sign = -1.0 if m in LOWER_IS_BETTER else 1.0
            xs = [sign * a for a, _ in pairs]
            ys = [b for _, b in pairs]
            tau, rho = kendall_tau(xs, ys), spearman_rho(xs, ys)
        out.append({"metric": m, "n": len(pairs), "kendall_tau": tau, "spearman_rho": rho})
    return out


__all__ = [
    "BOARD_METRICS",
    "BoardEntry",
    "Leaderboard",
    "build_board",
    "entry_from_json",
    "header",
    "load_entries",
    "plot_board",
    "plot_png",
    "rank_correlations",
    "read_ranking",
    "to_html",
    "to_markdown",
]
