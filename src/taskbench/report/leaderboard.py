"""Leaderboards: models x metrics from metrics JSON files, as markdown / HTML (table and plots) / PNG, and
rank correlation.

Reads every metrics layout ``taskbench evaluate`` writes: strict (``{"mode": "strict", "groups": ...}``),
both (``{"strict": ..., "compat": ...}``) and the reference layout (``{"overall_overall": {...}, ...}``, as
``--compat`` and the reference evaluator write). Metric names are mapped to one vocabulary
(the metric table's keys, :mod:`taskbench.eval.metrics`; the columns: :func:`board_metrics`); the model name is the file's stem (the reference names its files ``<llm>.json``).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import ConfigError, InputError, did_you_mean
from ..eval.metrics import BUILTIN, find_metric, metric_table, with_added
from ..eval.metrics import lower_is_better as is_lower_better

BOARD_KEYS = ("step_rougeL", "step_bertscore_f1", "node_micro_f1", "link_f1", "argument_name_f1", "argument_value_f1",
              "edit_distance", "graph_accuracy")
"""The built-in metrics of a leaderboard, in display order."""


def board_metrics() -> tuple[tuple[str, str], ...]:
    """(metric key, column header) of a leaderboard's columns in display order: the built-in ones and the added
    headline metrics (labels and directions: the metric table)."""
    return tuple((m.key, m.label) for m in with_added(BOARD_KEYS))


BOARD_METRICS: tuple[tuple[str, str], ...] = tuple((m.key, m.label) for m in with_added(BOARD_KEYS, added=False))
"""The built-in (metric key, column header) pairs (:func:`board_metrics` adds the added headline metrics)."""

LOWER_IS_BETTER = frozenset(m.key for m in BUILTIN if m.lower_is_better)
"""The built-in lower-is-better metrics (an added one says so in the metric table: :func:`lower_is_better`)."""


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of ``metric`` is better (the metric table's direction)."""
    return is_lower_better(metric)


GLOSSARY_KEYS = ("node_micro_f1", "link_f1", "argument_name_f1", "argument_value_f1", "edit_distance", "step_rougeL",
                 "graph_accuracy", "parse_failure_rate")
"""The metrics every report and CLI table explains first, in order (then every other metric of the table)."""


def glossary() -> tuple[tuple[str, str], ...]:
    """(label, meaning) of every metric: what it measures and which way is better (the metric table's
    explanation and direction), :data:`GLOSSARY_KEYS` first."""
    table = metric_table()
    order = [*GLOSSARY_KEYS, *(k for k in table if k not in GLOSSARY_KEYS)]
    return tuple((table[k].label, table[k].meaning) for k in order if k in table)


GLOSSARY: tuple[tuple[str, str], ...] = tuple(
    (m.label, m.meaning) for m in with_added(GLOSSARY_KEYS, added=False))
"""What each headline column measures and which way is better (:func:`glossary` has every metric)."""

SMALL_N = 30
"""Below this many samples a group's 95% CIs are too wide to rank models on (the report says so)."""


def glossary_lines(shown: Collection[str] | None = None) -> list[str]:
    """``"label: meaning"`` for the glossary entries whose label is in ``shown`` (the headline ones when None)."""
    if shown is None:
        shown = {label for label, _ in GLOSSARY} | {m.label for m in with_added(())}
    return [f"{k}: {v}" for k, v in glossary() if k in shown]


def small_n_warning(n: int | None) -> str | None:
    """A warning when ``n`` samples are too few to rank on (None when there are enough or n is unknown)."""
    if n is None or n >= SMALL_N:
        return None
    return (f"only {n} sample{'s' if n != 1 else ''} per model: the 95% CIs are very wide (at n=3 they can span "
            "[0, 100]), so differences between models of tens of points can be chance; score more samples "
            "(e.g. --limit 0 for all) before drawing conclusions")


def verdict(board: Leaderboard, dataset: str | None = None) -> str:
    """One line: who leads on the ranking metric, by how much, and whether the CIs settle it."""
    m = board.rank_by
    where = f" on {dataset}" if dataset else ""
    rows = [r for r in board.rows if r.get(m) is not None]
    if not rows:
        return f"No {header(m)} scores{where}."

    def show(r: Mapping[str, Any]) -> str:
        return f"{r['model']} ({cell_text(r, m)}, n={_n(r)})"

    if len(rows) == 1:
        return f"{show(rows[0])} is the only model scored{where}: {header(m)} {_cell(rows[0][m])}%."
    best, second = rows[0], rows[1]
    gap = abs(100 * (best[m] - second[m]))
    a, b = (best.get("ci") or {}).get(m), (second.get("ci") or {}).get(m)
    if a and b and a[0] <= b[1] and b[0] <= a[1]:
        settled = "; their 95% CIs overlap, so the order is not settled"
    elif a and b:
        settled = "; their 95% CIs do not overlap"
    else:
        settled = ""
    if gap == 0:
        return f"{show(best)} and {show(second)} tie on {header(m)}{where}{settled}."
    return f"{show(best)} leads{where} on {header(m)}, {gap:.2f} points ahead of {show(second)}{settled}."

_COMPAT_NAMES = {
    str(m.compat_key): m.key for m in (find_metric(k) for k in (
        "node_micro_f1", "link_f1", "argument_name_f1", "argument_value_f1", "edit_distance", "step_rouge1",
        "step_rouge2", "step_rougeL", "step_rougeLsum", "step_bertscore_f1")) if m is not None
}
"""The reference's metric keys -> the metric table's (its ``compat_key``)."""

STRUCTURES = ("single", "chain", "dag")


class BoardEntry(BaseModel):
    """One model's metrics, per group, in the board vocabulary."""

    model: str = Field(description="Model name (the metrics file's stem).")
    source: Literal["strict", "compat"] = Field(description="Which layout the numbers came from.")
    path: str = Field(description="The metrics file.")
    groups: dict[str, dict[str, float | None]] = Field(description="'{split}_{n}' -> metric -> value.")
    n: dict[str, int | None] = Field(
        default_factory=dict,
        description="'{split}_{n}' -> samples scored (strict: gold samples; compat: gold samples with a prediction).",
    )
    ci: dict[str, dict[str, tuple[float, float] | None]] = Field(
        default_factory=dict, description="'{split}_{n}' -> metric -> bootstrap 95% CI (strict files only)."
    )
    warnings: list[str] = Field(default_factory=list, description="Coverage warnings the evaluation recorded.")

    def value(self, metric: str, group: str = "overall_overall") -> float | None:
        """One metric of one group (None when absent or undefined)."""
        return self.groups.get(group, {}).get(metric)

    def interval(self, metric: str, group: str = "overall_overall") -> tuple[float, float] | None:
        """The 95% CI of one metric of one group (None when not computed)."""
        ci = self.ci.get(group, {}).get(metric)
        return (float(ci[0]), float(ci[1])) if ci and ci[0] is not None and ci[1] is not None else None

    def samples(self, group: str = "overall_overall") -> int | None:
        """How many samples one group was scored on (None when unknown)."""
        return self.n.get(group)


def entry_from_json(doc: Any, *, model: str, path: str = "", source: str = "auto") -> BoardEntry:
    """A board entry from a metrics document (any layout, told apart by :class:`MetricsFile`; ``source`` picks
    strict/compat in a 'both' file)."""
    from ..schema.scores import MetricsFile

    if not isinstance(doc, dict):
        raise InputError("not a metrics JSON object", path=path or None)
    try:
        metrics = MetricsFile.from_json(doc, model=model)
    except ValueError as exc:  # pydantic's ValidationError is one
        if MetricsFile.layout(doc) is None:
            raise InputError(str(exc), path=path or None, hint=_what_it_is(doc)) from None
        raise InputError(f"not a readable metrics file: {str(exc).splitlines()[0]}", path=path or None) from None
    if metrics.strict is not None and (source == "strict" or (source == "auto" and metrics.mode != "compat")
                                       or metrics.compat is None):
        if source == "compat":
            raise InputError("this file has no compat metrics", path=path or None, hint="use --source strict")
        strict = metrics.strict
        groups = {k: _numbers(g.metrics) for k, g in strict.groups.items()}
        n: dict[str, int | None] = {k: g.n_samples for k, g in strict.groups.items()}
        ci = {k: _intervals(g.ci) for k, g in strict.groups.items()}
        return BoardEntry(model=model, source="strict", path=path, groups=groups, n=n, ci=ci,
                          warnings=list(strict.warnings))
    if source == "strict":
        raise InputError("this file has no strict metrics", path=path or None, hint="use --source compat")
    compat_groups: dict[str, dict[str, float | None]] = {}
    compat_n: dict[str, int | None] = {}
    for key, block in (metrics.compat or {}).items():
        compat_groups[key] = _numbers({new: block[old] for old, new in _COMPAT_NAMES.items() if old in block})
        compat_n[key] = block["all_samples"] if isinstance(block["all_samples"], int) else None
    return BoardEntry(model=model, source="compat", path=path, groups=compat_groups, n=compat_n)


def _numbers(block: Any) -> dict[str, float | None]:
    """The numeric metrics of a block (anything else, e.g. a per-type table, is left out)."""
    if not isinstance(block, dict):
        return {}
    return {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
            for k, v in block.items() if v is None or isinstance(v, (int, float))}


def _intervals(block: Any) -> dict[str, tuple[float, float] | None]:
    if not isinstance(block, dict):
        return {}
    out: dict[str, tuple[float, float] | None] = {}
    for k, v in block.items():
        ok = isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v)
        out[k] = (float(v[0]), float(v[1])) if ok else None
    return out


def _what_it_is(doc: Any) -> str:
    """A hint naming what a JSON document that holds no metrics looks like."""
    if isinstance(doc, dict) and isinstance(doc.get("rows"), list) and "rank_by" in doc:
        return "this is a leaderboard (taskbench leaderboard -o board.json); pass the metrics files it was made from"
    if isinstance(doc, dict) and {"a", "b", "groups"} <= set(doc):
        return "this is a comparison (taskbench compare -o); pass metrics files from taskbench evaluate -o"
    if isinstance(doc, dict) and "fingerprint" in doc and "kind" in doc and "identity" in doc:
        return ("this is a run header (what a command was asked to do), not metrics; pass the metrics file "
                "beside it, or the folder: taskbench leaderboard DIR")
    if isinstance(doc, dict) and "id" in doc and ("result" in doc or "task_nodes" in doc):
        return _FILE_KINDS["prediction" if "result" in doc else "gold"]
    return "pass the JSON that taskbench evaluate -o (or the reference evaluator) wrote"


_FILE_KINDS = {
    "prediction": "this is a predictions file (JSON Lines of {\"id\", \"result\"}), not metrics; score it first: "
    "taskbench evaluate --data DATASET -p FILE -o metrics/MODEL.json",
    "gold": "this is a gold data file (JSON Lines of samples), not metrics; leaderboards read the metrics JSON "
    "that taskbench evaluate -o writes",
}


def _read_metrics(path: Path) -> Any:
    """The metrics document of ``path``; a JSON Lines predictions or gold file is named for what it is."""
    from ..dataset.jsonio import read_json

    try:
        return read_json(path)
    except InputError:
        kind = _jsonl_kind(path)
        if kind is None:
            raise
        raise InputError(f"not a metrics file: {_FILE_KINDS[kind]}", path=path) from None


def _jsonl_kind(path: Path) -> str | None:
    """'prediction' or 'gold' when the first line of ``path`` is such a record, else None."""
    import json

    try:
        with path.open("rb") as fh:
            first = fh.readline(1 << 20)
        rec = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(rec, dict) or "id" not in rec:
        return None
    if "result" in rec:
        return "prediction"
    if any(k in rec for k in ("task_nodes", "tool_nodes", "user_request", "instruction")):
        return "gold"
    return None


def load_entries(paths: Sequence[str | Path], *, source: str = "auto",
                 models: Sequence[str] | None = None) -> list[BoardEntry]:
    """Board entries from metrics files (``models``: their names, default the file stems); two files for one
    model are an error."""
    if source not in ("auto", "strict", "compat"):
        raise ConfigError(f"--source must be auto, strict or compat, not {source!r} "
                          f"({did_you_mean(source, ('auto', 'strict', 'compat'))})")
    out: list[BoardEntry] = []
    seen: dict[str, str] = {}
    for i, p in enumerate(paths):
        p = Path(p)
        model = models[i] if models is not None else p.stem
        if model in seen:
            raise InputError(f"two metrics files for model {model!r} ({seen[model]})", path=p,
                             hint="rename one of them (the file name is the model name), or give files of one "
                             "dataset at a time")
        seen[model] = str(p)
        out.append(entry_from_json(_read_metrics(p), model=model, path=str(p), source=source))
    if not out:
        raise InputError("no metrics files given")
    return out


def _doc_label(path: Path) -> tuple[str | None, str | None]:
    """(dataset, model) a metrics file records about itself (top-level "dataset"/"model"), else (None, None)."""
    import json

    try:
        with path.open("rb") as fh:
            head = fh.read(1 << 16)
        doc = json.loads(head) if len(head) < (1 << 16) else None
    except (OSError, ValueError, RecursionError):
        return None, None
    if not isinstance(doc, dict):
        return None, None
    ds, model = doc.get("dataset"), doc.get("model")
    if not isinstance(ds, str) or not isinstance(model, str):  # a compat-only file: its run header says
        from ..dataset.header import read_header

        try:
            header = read_header(path, "evaluate")
        except InputError:
            header = None
        if header is not None:
            ds = ds if isinstance(ds, str) else header.config.get("dataset")
            model = model if isinstance(model, str) else header.config.get("model")
    return (ds if isinstance(ds, str) else None), (model if isinstance(model, str) else None)


def _run_models(run_dir: Path) -> dict[str, tuple[str, str]]:
    """metrics path (resolved) -> (dataset, model) from a run directory's run log ({} when there is none)."""
    from ..dataset.jsonio import read_json

    log = run_dir / "run_log.json"
    if not log.is_file():
        return {}
    try:
        doc = read_json(log)
    except InputError:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for e in doc.get("entries") or [] if isinstance(doc, dict) else []:
        if isinstance(e, dict) and e.get("metrics_path"):
            out[str((run_dir / e["metrics_path"]).resolve())] = (str(e.get("dataset")), str(e.get("model")))
    return out


def expand_sources(paths: Sequence[str | Path]) -> list[tuple[str, str, Path]]:
    """(dataset, model, file) for every metrics file named by ``paths``: files, run directories of
    `taskbench run` (their metrics/<dataset>/<model>.json, named by the run log), directories of metrics files
    and glob patterns. The dataset is what the file or the run log records, else the folder of a run's
    metrics/<dataset>/ layout, else "" (one board)."""
    import glob

    from ..dataset.header import is_header_file

    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists() and any(ch in str(raw) for ch in "*?["):
            matched = sorted(glob.glob(str(raw), recursive=True))
            if not matched:
                raise InputError(f"no file matches {str(raw)!r}", hint="pass the folder of the metrics files, "
                                 "e.g. taskbench leaderboard metrics/")
            files += [Path(m) for m in matched]
        elif p.is_dir():
            found = sorted((p / "metrics").glob("*/*.json")) if (p / "metrics").is_dir() else sorted(
                f for f in p.glob("*.json") if not f.name.startswith("."))
            found = [f for f in found if not is_header_file(f)]  # run headers hold no scores
            if not found:
                raise InputError("no metrics files in this directory (expected RUN_DIR/metrics/*/*.json or *.json)",
                                 path=p)
            files += found
        else:
            files.append(p)
    # a glob over a folder of evaluate outputs (metrics/*.json) also gives the run headers that older versions
    # wrote beside each file (X.json.header.json): they name a run, they hold no scores
    headers: list[Path] = [f for f in files if is_header_file(f) and f.is_file()]
    files = [f for f in files if f not in headers]
    if headers and not files:
        folder = headers[0].parent
        raise InputError(f"only run headers given ({len(headers)} *.header.json), no metrics files", path=folder,
                         hint=f"pass the metrics files, or their folder: taskbench leaderboard {folder}")
    out: list[tuple[str, str, Path]] = []
    runs: dict[Path, dict[str, tuple[str, str]]] = {}
    for f in files:
        ds, model = _doc_label(f) if f.is_file() else (None, None)
        in_run = f.parent.parent.name == "metrics"
        if in_run:
            root = f.parent.parent.parent
            named = runs.setdefault(root, _run_models(root)).get(str(f.resolve()))
            if named:
                ds, model = ds or named[0], model or named[1]
            ds = ds or f.parent.name
        out.append((ds or "", model or f.stem, f))
    return out


def load_grouped(paths: Sequence[str | Path], *, source: str = "auto") -> dict[str, list[BoardEntry]]:
    """:func:`load_entries` over :func:`expand_sources`, one list per dataset (in the order first seen)."""
    groups: dict[str, list[tuple[str, Path]]] = {}
    for ds, model, f in expand_sources(paths):
        groups.setdefault(ds, []).append((model, f))
    return {ds: load_entries([f for _, f in items], source=source, models=[m for m, _ in items])
            for ds, items in groups.items()}


def results_table(boards: Mapping[str, Leaderboard]) -> tuple[list[str], list[list[str]]]:
    """One row per model, per dataset its headline metrics (%), as BFCL's data_overall.csv: (header, rows)."""
    shown = ("node_micro_f1", "link_f1", "argument_value_f1", "edit_distance")
    head = ["model"] + [f"{ds or 'all'} {header(m)}" for ds in boards for m in shown]
    models = list(dict.fromkeys(r["model"] for b in boards.values() for r in b.rows))
    rows = []
    for model in models:
        row = [model]
        for b in boards.values():
            found = next((r for r in b.rows if r["model"] == model), {})
            row += [_cell(found.get(m)) if found else "" for m in shown]
        rows.append(row)
    return head, rows


class Leaderboard(BaseModel):
    """Models x metrics for one group, ranked by one metric."""

    group: str = Field(description="The split group the table shows (e.g. overall_overall).")
    rank_by: str = Field(description="Metric the rows are sorted by.")
    metrics: list[str] = Field(description="Metric keys shown (columns).")
    rows: list[dict[str, Any]] = Field(
        description="{'model', 'n' (samples scored), metric: value, ..., 'ci': {metric: [low, high]}} best first."
    )
    entries: list[BoardEntry] = Field(description="All entries (for per-structure/per-count plots).")
    warnings: list[str] = Field(
        default_factory=list,
        description="Why the rows may not be comparable: mixed scoring modes, different sample counts, coverage "
        "warnings recorded by the evaluations.",
    )


def build_board(
    entries: Sequence[BoardEntry], *, group: str = "overall_overall", rank_by: str = "node_micro_f1"
) -> Leaderboard:
    """Rank the entries by ``rank_by`` in ``group`` (missing values last). A group no entry has is a
    :class:`ConfigError` with a suggestion; so is an unknown ranking metric."""
    known_groups = list(dict.fromkeys(k for e in entries for k in e.groups))
    if group not in known_groups:
        raise ConfigError(f"unknown --group {group!r} ({did_you_mean(group, known_groups)})")
    shown = board_metrics()
    metrics = [k for k, _ in shown if any(e.value(k, group) is not None for e in entries)]
    known_metrics = list(dict.fromkeys([k for k, _ in shown] + [m for e in entries for m in e.groups.get(group, {})]))
    if rank_by not in known_metrics:
        raise ConfigError(f"unknown --rank-by metric {rank_by!r} ({did_you_mean(rank_by, known_metrics)})")
    sign = 1.0 if lower_is_better(rank_by) else -1.0

    def key(e: BoardEntry) -> tuple[int, float, str]:
        v = e.value(rank_by, group)
        return (v is None, sign * v if v is not None else 0.0, e.model)

    rows = []
    for e in sorted(entries, key=key):
        ci = {m: list(iv) for m in metrics if (iv := e.interval(m, group)) is not None}
        rows.append({"model": e.model, "n": e.samples(group), **{m: e.value(m, group) for m in metrics}, "ci": ci})
    return Leaderboard(group=group, rank_by=rank_by, metrics=metrics, rows=rows, entries=list(entries),
                       warnings=board_warnings(entries, group))


def board_warnings(entries: Sequence[BoardEntry], group: str = "overall_overall") -> list[str]:
    """Why the entries may not be comparable in ``group`` (one line each; empty when they are)."""
    out: list[str] = []
    modes = {s: [e.model for e in entries if e.source == s] for s in ("strict", "compat")}
    if modes["strict"] and modes["compat"]:
        out.append(
            f"mixed scoring modes: {_names(modes['strict'])} strict, {_names(modes['compat'])} compat "
            "(the reference's rules drop what strict counts): their numbers are not comparable; score every "
            "file the same way, or pick one with --source"
        )
    counts = {e.model: e.samples(group) for e in entries if e.samples(group) is not None}
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{m} n={k}" for m, k in counts.items())
        out.append(f"different sample counts in {group}: {shown}; the models were not scored on the same samples")
    for e in entries:
        for w in e.warnings:
            out.append(f"{e.model}: {w}")
    return out


def _names(models: Sequence[str], n: int = 4) -> str:
    return ", ".join(models[:n]) + (f" and {len(models) - n} more" if len(models) > n else "")


def header(metric: str) -> str:
    """The short column header of a metric key (e.g. node_micro_f1 -> n-F1)."""
    return dict(board_metrics()).get(metric, metric)


def _cell(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.2f}"


def cell_text(row: Mapping[str, Any], metric: str, *, sep: str = " ") -> str:
    """A board cell: the value in percent and, when computed, its 95% CI as ``[low, high]`` after ``sep``."""
    from .tables import fmt_interval

    text = _cell(row.get(metric))
    ci = (row.get("ci") or {}).get(metric)
    if ci is not None and row.get(metric) is not None:
        text += sep + fmt_interval(ci)
    return text


def _n(row: Mapping[str, Any]) -> str:
    return "-" if row.get("n") is None else str(row["n"])


def to_markdown(board: Leaderboard, correlations: Sequence[Mapping[str, Any]] | None = None) -> str:
    """A GitHub-flavoured markdown table (percent), with the rank correlation table when given."""
    heads = ["#", "model", "n"] + [header(m) for m in board.metrics]
    with_ci = any(r.get("ci") for r in board.rows)
    lines = [
        f"Leaderboard ({board.group}, ranked by {header(board.rank_by)}; values in %"
        + ("; [95% CI]" if with_ci else "") + ")",
        "",
        "| " + " | ".join(heads) + " |",
        "|" + "|".join(["---:", ":---", "---:"] + ["---:"] * len(board.metrics)) + "|",
    ]
    for i, row in enumerate(board.rows, 1):
        cells = [str(i), row["model"], _n(row)] + [cell_text(row, m) for m in board.metrics]
        lines.append("| " + " | ".join(cells) + " |")
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
    figure = None
    if plots:
        uri = "data:image/png;base64," + base64.b64encode(plot_png(board, metric=metric)).decode("ascii")
        figure = {"shown": header(metric or board.rank_by), "uri": uri}
    rows = [{"model": row["model"], "n": _n(row),
             "cells": [(_cell(row.get(m)), cell_text(row, m, sep="\n").partition("\n")[2]) for m in board.metrics]}
            for row in board.rows]
    corr = [{"metric": header(c["metric"]), "n": c["n"], "tau": _num(c["kendall_tau"]), "rho": _num(c["spearman_rho"])}
            for c in correlations or ()]
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:nth-child(2){text-align:left}"
             "img{max-width:100%}")
    page = _page_template("leaderboard.html").render(
        title=f"Leaderboard ({board.group}, ranked by {header(board.rank_by)}; values in %)", style=style,
        heads=["#", "model", "n"] + [header(m) for m in board.metrics], rows=rows, figure=figure, correlations=corr)
    return str(page) + "\n"


def _page_template(name: str) -> Any:
    """A page template of ``report/templates`` (autoescaped: every value is escaped unless marked safe)."""
    from .._templates import jinja_environment

    return jinja_environment(package="taskbench.report", what="page template", html=True).get_template(name)


def html_cell(row: Mapping[str, Any], metric: str) -> str:
    """A board cell as HTML: the value, and its CI on a second, smaller line."""
    value = _cell(row.get(metric))
    ci = cell_text(row, metric, sep="\n").partition("\n")[2]
    return value + (f"<br><small>{html.escape(ci)}</small>" if ci else "")


def _board_figure(board: Leaderboard, metric: str | None) -> Any:
    """The two-panel matplotlib figure of :func:`plot_board` (the caller closes it).

    Left: one bar per model and structure with its 95% CI as an error bar (strict files) and its value and
    sample count above it; a 0 is drawn as a thick line on the axis in the model's colour (a bar of height 0
    is invisible); a structure a model has no samples of gets a hatched stub labelled "no data". Right: one line
    per model over the tool counts that have samples (with CI error bars); counts no model has samples of are
    left out and named in the title. Tick labels give the samples per group when every model has the same
    count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    metric = metric or board.rank_by
    models = [r["model"] for r in board.rows]
    entries = {e.model: e for e in board.entries}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    width = 0.8 / max(len(models), 1)
    x = np.arange(len(STRUCTURES))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]

    def err(e: BoardEntry, group: str, v: float) -> list[list[float]] | None:
        ci = e.interval(metric, group)
        if ci is None:
            return None
        return [[max(0.0, 100 * (v - ci[0]))], [max(0.0, 100 * (ci[1] - v))]]

    for i, m in enumerate(models):
        color = colors[i % len(colors)]
        pos = x + i * width - 0.4 + width / 2
        for xp, s in zip(pos, STRUCTURES, strict=True):
            group = f"{s}_overall"
            v, n = entries[m].value(metric, group), entries[m].samples(group)
            if v is None:
                ax1.bar(xp, 6, width, color="none", edgecolor=color, hatch="//", linewidth=0.8)
                ax1.text(xp, 7, "no data", ha="center", va="bottom", fontsize=7, rotation=90, color="#555")
                continue
            yerr = err(entries[m], group, v)
            ax1.bar(xp, 100 * v, width, color=color, label=m if s == STRUCTURES[0] else None, yerr=yerr,
                    capsize=3, error_kw={"elinewidth": 0.9, "ecolor": "#333"})
            if v == 0:  # visible in the model's colour
                ax1.hlines(0.8, xp - width * 0.45, xp + width * 0.45, colors=color, linewidth=4)
            top = 100 * v + (yerr[1][0] if yerr else 0.0)
            ax1.text(xp, top + 1.5, f"{100 * v:.0f}" + (f"\nn={n}" if n is not None else ""), ha="center",
                     va="bottom", fontsize=7)
    ax1.set_xticks(x, [_tick(s, [entries[m].samples(f"{s}_overall") for m in models]) for s in STRUCTURES])
    ax1.set_ylabel(f"{header(metric)} (%)")
    ax1.set_title(f"{header(metric)} per structure (bars: 95% CI)" if any(
        e.interval(metric, f"{s}_overall") for e in entries.values() for s in STRUCTURES)
        else f"{header(metric)} per structure")
    counts = [str(n) for n in range(1, 11)
              if any(entries[m].value(metric, f"overall_{n}") is not None for m in models)]
    missing = [str(n) for n in range(1, 11) if str(n) not in counts]
    xs = np.arange(len(counts))
    for i, m in enumerate(models):
        color = colors[i % len(colors)]
        vals = [entries[m].value(metric, f"overall_{n}") for n in counts]
        ys = [100 * v if v is not None else np.nan for v in vals]
        errs = [err(entries[m], f"overall_{n}", v) if v is not None else None for n, v in zip(counts, vals,
                                                                                               strict=True)]
        low = [e[0][0] if e else 0.0 for e in errs]
        high = [e[1][0] if e else 0.0 for e in errs]
        ax2.errorbar(xs + (i - (len(models) - 1) / 2) * 0.06, ys, yerr=[low, high] if any(errs) else None,
                     marker="o", label=m, color=color, capsize=3, elinewidth=0.9)
    if counts:
        ax2.set_xticks(xs, [_tick(n, [entries[m].samples(f"overall_{n}") for m in models]) for n in counts],
                       fontsize=8)
        ax2.set_xlim(-0.5, len(counts) - 0.5)
    else:
        ax2.text(0.5, 0.5, "no samples with a tool count", ha="center", transform=ax2.transAxes)
    ax2.set_xlabel("number of tools")
    ax2.set_ylabel(f"{header(metric)} (%)")
    left_out = f" (no samples: {_ranges(missing)})" if missing and counts else ""
    ax2.set_title(f"{header(metric)} per tool count{left_out}")
    for ax in (ax1, ax2):
        ax.set_ylim(0, 115)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = ax2.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(models), 6), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def _ranges(values: Sequence[str]) -> str:
    """'3, 5-10' for ['3', '5', '6', ..., '10']."""
    nums = sorted(int(v) for v in values)
    out: list[str] = []
    start = prev = nums[0]
    for n in nums[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


def _tick(label: str, ns: Sequence[int | None]) -> str:
    """A tick label with the group's sample count when every model has the same one."""
    known = {n for n in ns if n is not None}
    return f"{label}\nn={known.pop()}" if len(known) == 1 and None not in ns else label


def _save_figure(board: Leaderboard, target: Any, metric: str | None) -> None:
    import matplotlib.pyplot as plt

    fig = _board_figure(board, metric)
    try:
        fig.savefig(target, dpi=110, format="png", bbox_inches="tight", pad_inches=0.15)
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
    from ..dataset.jsonio import atomic_writer

    path = Path(path)
    with atomic_writer(path) as fh:  # a full disk leaves no half picture
        _save_figure(board, fh, metric)
    return path


def read_ranking(path: str | Path, *, group: str = "overall_overall", metric: str | None = None) -> dict[str, float]:
    """Scores per model from another source, higher is better: ``{"model": score}``, a list of model names
    best first, or a board JSON (``taskbench leaderboard -o board.json``). A board is read by ``metric``
    (default: the metric it was ranked by; a lower-is-better one is negated) and must show ``group``."""
    from ..dataset.jsonio import read_json

    doc = read_json(path)
    if isinstance(doc, list) and all(isinstance(m, str) for m in doc):
        return {m: float(len(doc) - i) for i, m in enumerate(doc)}
    if isinstance(doc, dict) and isinstance(doc.get("rows"), list):
        board_group = doc.get("group")
        if board_group is not None and board_group != group:
            raise InputError(
                f"this board shows group {board_group!r}, not {group!r}", path=path,
                hint=f"rebuild it with --group {group} or pass --group {board_group}",
            )
        key = metric or str(doc.get("rank_by") or "node_micro_f1")
        sign = -1.0 if lower_is_better(key) else 1.0
        out: dict[str, float] = {}
        for i, r in enumerate(doc["rows"]):
            value = r.get(key) if isinstance(r, dict) else None
            if value is None and isinstance(r, dict):
                continue
            if not isinstance(r, dict) or not isinstance(r.get("model"), str) \
                    or isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise InputError(f"board row #{i + 1} is not {{\"model\": NAME, {key!r}: NUMBER, ...}}", path=path,
                                 hint="pass a board that taskbench leaderboard -o board.json wrote")
            out[r["model"]] = sign * float(value)
        return out
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
            sign = -1.0 if lower_is_better(m) else 1.0
            xs = [sign * a for a, _ in pairs]
            ys = [b for _, b in pairs]
            tau, rho = kendall_tau(xs, ys), spearman_rho(xs, ys)
        out.append({"metric": m, "n": len(pairs), "kendall_tau": tau, "spearman_rho": rho})
    return out


__all__ = [
    "BOARD_KEYS",
    "BOARD_METRICS",
    "GLOSSARY",
    "GLOSSARY_KEYS",
    "board_metrics",
    "glossary",
    "lower_is_better",
    "SMALL_N",
    "glossary_lines",
    "small_n_warning",
    "verdict",
    "BoardEntry",
    "Leaderboard",
    "board_warnings",
    "build_board",
    "cell_text",
    "entry_from_json",
    "header",
    "html_cell",
    "expand_sources",
    "load_entries",
    "load_grouped",
    "results_table",
    "plot_board",
    "plot_png",
    "rank_correlations",
    "read_ranking",
    "to_html",
    "to_markdown",
]
