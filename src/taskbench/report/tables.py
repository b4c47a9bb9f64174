"""Rich tables for evaluation results (built here, printed by the CLI)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from ..eval.metrics import with_added

# column header -> metric key, for strict results (shown when present); the headers are the metric table's
# labels (taskbench.eval.metrics), and an added metric marked headline joins every such list
STRICT_DROP_FIRST = ("BERT-F1", "graph acc", "NED", "parse fail", "R-L", "call fail")
"""Columns of the strict table left out first when a terminal is too narrow (graph accuracy is also in the
exact-match table)."""

STRICT_KEYS = ("step_rougeL", "step_bertscore_f1", "node_micro_f1", "link_f1", "argument_name_f1",
               "argument_value_f1", "edit_distance", "graph_accuracy", "parse_failure_rate", "call_failure_rate")
"""The built-in metrics of the strict table, in order."""


def columns(keys: Sequence[str], *, added: bool = True) -> tuple[tuple[str, str], ...]:
    """(header, key) of the metrics ``keys`` and, with ``added``, of the added headline metrics."""
    return tuple((m.label, m.key) for m in with_added(keys, added=added))


def strict_columns() -> tuple[tuple[str, str], ...]:
    """The strict table's (header, key) columns: the built-in ones and the added headline metrics."""
    return columns(STRICT_KEYS)


STRICT_COLUMNS: tuple[tuple[str, str], ...] = columns(STRICT_KEYS, added=False)
"""The built-in columns of the strict table (:func:`strict_columns` adds the added headline metrics)."""

SHOWN_WHEN_NONZERO = frozenset({"call_failure_rate"})
"""Columns shown only when some group has a nonzero value (calls that failed for good are rare)."""

# the paper's appendix table: exact-match accuracies per tool count
ACCURACY_COLUMNS: tuple[tuple[str, str], ...] = columns(
    ("node_micro_f1", "node_set_accuracy", "link_f1", "edge_set_accuracy", "graph_accuracy"), added=False)

_COMPAT_OF = ("step_rouge1", "step_rouge2", "step_rougeL", "step_bertscore_f1", "node_micro_f1", "node_macro_f1",
              "link_f1", "argument_name_f1", "argument_value_f1", "edit_distance")

COMPAT_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (m.label, m.compat_key or m.key) for m in with_added(_COMPAT_OF, added=False))
"""The compat table's (header, the reference's key) columns."""


def fmt_interval(ci: Sequence[float], *, signed: bool = False) -> str:
    """A confidence interval in percent, written so that negative bounds stay unambiguous: ``[65.1, 72.4]``,
    ``[-3.0, 1.2]`` (``signed``: ``[-3.00, +1.20]``, for differences)."""
    lo, hi = 100 * float(ci[0]), 100 * float(ci[1])
    return f"[{lo:+.2f}, {hi:+.2f}]" if signed else f"[{lo:.1f}, {hi:.1f}]"


def fmt(value: Any, ci: Sequence[float] | None = None) -> str:
    """A metric in percent with two decimals (its 95% CI below as ``[low, high]``); '-' when undefined."""
    if value is None:
        return "-"
    text = f"{100 * float(value):.2f}"
    if ci:
        text += "\n" + fmt_interval(ci)
    return text


def strict_table(
    groups: Mapping[str, Any],
    *,
    title: str = "Strict metrics (%)",
    columns: Sequence[tuple[str, str]] | None = None,
    show_ci: bool = True,
) -> Table:
    """Groups x metrics (``columns``: header, key; default :func:`strict_columns`), each cell with its bootstrap
    95% CI below when present. ``groups``: StrictResult.groups. Empty groups are left out."""
    columns = strict_columns() if columns is None else columns
    shown = [(head, key) for head, key in columns if any(key in g.metrics for g in groups.values())]
    shown = [(head, key) for head, key in shown
             if key not in SHOWN_WHEN_NONZERO or any(g.metrics.get(key) for g in groups.values())]
    table = Table(title=title, show_lines=show_ci)
    table.add_column("group", style="bold", no_wrap=True)
    table.add_column("n", justify="right")
    for head, _ in shown:
        table.add_column(head, justify="right")
    for key, g in groups.items():
        if not g.n_samples:
            continue
        row = [key, str(g.n_samples)]
        row += [fmt(g.metrics.get(k), g.ci.get(k) if show_ci else None) for _, k in shown]
        table.add_row(*row)
    return table


def accuracy_table(groups: Mapping[str, Any], *, title: str = "Exact-match accuracy (%)") -> Table:
    """The paper's per-tool-count table: node-set, edge-set and graph accuracy (no CIs)."""
    return strict_table(groups, title=title, columns=ACCURACY_COLUMNS, show_ci=False)


def compat_table(metrics: Mapping[str, Mapping[str, Any]], *, title: str = "Compat metrics (%)") -> Table:
    """Groups x the reference's headline keys, with its supports (groups without samples are left out)."""
    shown = [(h, k) for h, k in COMPAT_COLUMNS if any(k in g for g in metrics.values())]
    table = Table(title=title)
    table.add_column("group", style="bold", no_wrap=True)
    table.add_column("samples", justify="right")
    table.add_column("supported", justify="right")
    for head, _ in shown:
        table.add_column(head, justify="right")
    for key, g in metrics.items():
        if not g.get("all_samples"):
            continue  # a group without samples has nothing to show
        row = [key, str(g.get("all_samples", "-")), str(g.get("node_supports", "-"))]
        row += [fmt(g.get(k)) for _, k in shown]
        table.add_row(*row)
    return table


def taxonomy_table(summary: Any) -> Table:
    """Error category counts (a TaxonomySummary)."""
    table = Table(title=f"Errors over {summary.total} predictions ({summary.correct} without error)")
    table.add_column("category")
    table.add_column("predictions", justify="right")
    table.add_column("%", justify="right")
    for cat, count in summary.counts.items():
        share = 100 * count / summary.total if summary.total else 0.0
        table.add_row(cat.replace("_", " "), str(count), f"{share:.1f}")
    return table


COMPARISON_HEADLINE = ("node_micro_f1", "link_f1", "argument_name_f1", "argument_value_f1", "edit_distance",
                       "step_rougeL", "graph_accuracy", "parse_failure_rate")
"""The metrics `compare` shows first (the strict table's headline metrics); ``wide`` adds the rest."""


def comparison_table(comparison: Any, *, wide: bool = False) -> Table:
    """A - B per group and metric (a Comparison): the metric, A, B, the difference, its paired 95% CI and the
    p-value. One group: no group column (the title names it). Without ``wide`` only the headline metrics
    (:data:`COMPARISON_HEADLINE`) are rows; the caption counts the others."""
    labels = {key: head for head, key in strict_columns()}
    groups = {k: g for k, g in comparison.groups.items() if g.results}
    one = len(groups) == 1
    where = f" · {next(iter(groups))} ({next(iter(groups.values())).n_samples} samples)" if one else ""
    table = Table(title=f"{comparison.a} - {comparison.b} (paired, %){where}", title_justify="left",
                  caption_justify="left")
    heads = ([] if one else ["group"]) + ["metric", comparison.a, comparison.b, "diff", "95% CI", "p"]
    for col in heads:
        table.add_column(col, justify="left" if col in ("group", "metric") else "right",
                         no_wrap=col in ("diff", "95% CI", "p"))
    hidden: set[str] = set()
    headline = {m.key for m in with_added(COMPARISON_HEADLINE)}
    for key, g in groups.items():
        for r in g.results:
            if not wide and r.metric not in headline:
                hidden.add(r.metric)
                continue
            ci = fmt_interval((r.ci_low, r.ci_high), signed=True) if r.ci_low is not None else "-"
            diff = f"{100 * r.diff:+.2f}" if r.diff is not None else "-"
            p = f"{r.p_value:.3f}" if r.p_value is not None else "-"
            name = labels.get(r.metric, r.metric)
            name = f"{name} ({r.metric})" if name != r.metric and wide else name
            table.add_row(*([] if one else [key]), name, fmt(r.a), fmt(r.b), diff, ci, p)
    notes = ["p: two-sided, paired randomization test; 95% CI of the difference by paired bootstrap"]
    if hidden:
        notes.append(f"{len(hidden)} more metrics per group: --wide shows them, --json gives every figure")
    table.caption = "\n".join(notes)
    return table


def fit_width(table: Table, width: int | None, *, keep: int = 2, drop_first: Sequence[str | Sequence[str]] = (),
              more: str = "a wider terminal shows them") -> Table:
    """Make ``table`` readable at ``width`` columns without truncating a number.

    Every column gets at least the width of its longest word (numbers and intervals never get cut; text
    wraps at spaces). When even that does not fit, whole columns are left out: first those whose header is in
    ``drop_first`` (in that order; a tuple of headers goes together, e.g. the two values beside their
    difference), then from the right, never the first ``keep``; the caption names them
    (quoted, so a short name reads as one) and says where they are (``more``, e.g. the command's ``--wide``).
    ``width`` None: the table is returned as it is."""
    if width is None:
        return table

    def words(cell: Any) -> int:
        return max((len(w) for w in str(cell).split()), default=0)

    def lines(cell: Any) -> int:
        return max((len(line) for line in str(cell).splitlines()), default=0)

    from rich.padding import Padding

    _, right, _, left = Padding.unpack(table.padding)

    def need(columns: Sequence[Any]) -> int:
        """The width of ``columns`` at their ``min_width``, with rich's own padding and separators."""
        n = len(columns)
        if not n:
            return 0
        if table.box is not None:  # every box draws a separator between columns (a space in the simple ones)
            separators = n - 1 + (2 if table.show_edge else 0)
        else:
            separators = 0
        between = max(left, right) if table.collapse_padding else left + right
        padding = between * (n - 1) + ((left + right) if table.pad_edge else 0)
        return sum(c.min_width or 0 for c in columns) + padding + separators

    natural = {id(c): max([lines(c.header), *(lines(x) for x in c.cells)]) for c in table.columns}
    for column in table.columns:
        column.min_width = max([words(column.header), *(words(c) for c in column.cells)])
        if column.no_wrap:
            column.min_width = natural[id(column)]
    if need(table.columns) - sum(c.min_width or 0 for c in table.columns) + sum(natural.values()) <= width:
        return table  # fits as it is
    dropped: list[str] = []
    order: list[tuple[str, ...]] = [(h,) if isinstance(h, str) else tuple(h) for h in drop_first]
    order += [(str(c.header),) for c in reversed(table.columns[keep:])]
    for headers in order:
        if need(table.columns) <= width:
            break
        for header in headers:
            index = next((i for i, c in enumerate(table.columns) if str(c.header) == header and i >= keep), None)
            if index is not None:
                dropped.append(header)
                del table.columns[index]
    # fixed widths: each column its minimum, the room left shared out to the columns that want more
    slack = width - need(table.columns)
    for column in table.columns:
        column.width = column.min_width
    growing = [c for c in table.columns if natural[id(c)] > (c.width or 0)]
    while slack > 0 and growing:  # one character at a time, round robin: similar columns stay alike
        for column in list(growing):
            if slack <= 0:
                break
            column.width = (column.width or 0) + 1
            slack -= 1
            if column.width >= natural[id(column)]:
                growing.remove(column)
    if dropped:
        names = ", ".join(f"'{h}'" for h in dropped)
        note = f"not shown at {width} columns: {names} ({more})"
        table.caption = f"{table.caption}\n{note}" if table.caption else note
        table.caption_justify = "left"
    return table


CRITIC_LABELS = {"rule": "rule critic", "llm": "LLM critic", "exec": "gold execution", "dedup": "near-duplicates",
                 "checklist": "checklist critic"}
"""How the generation's critics are named where their reasons are shown."""

STOP_LABELS = {"step_cap": "step cap reached", "call_cap": "model-call cap reached", "no_plan": "no plan made",
               "no_answer": "no answer given", "context_full": "the history outgrew the model's context window"}
"""How an agent episode's early stops are named where failures are explained."""


def _ranked(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _top(counts: Mapping[str, int], top: int, sep: str = ", ", form: str = "{k} {v}") -> str:
    items = _ranked(counts)
    text = sep.join(form.format(k=k, v=v) for k, v in items[:top])
    return text + (f"{sep}{len(items) - top} more" if len(items) > top else "")


def top_reasons(counts: Mapping[str, int], *, top: int = 5) -> list[tuple[str, int]]:
    """``(reason, count)`` rows, most frequent first (ties by name), at most ``top`` of them, the rest summed
    as one ``("other", count)`` row: the reasons of a zero as a list (the viewer's)."""
    items = _ranked(counts)
    if len(items) <= top:
        return items
    return [*items[:top], ("other", sum(v for _, v in items[top:]))]


def not_kept_reasons(reasons_by_critic: Mapping[str, Mapping[str, int]], *, top: int = 5) -> list[tuple[str, int]]:
    """Why generated samples were not kept as :func:`top_reasons` rows, each ``critic label: issue code``
    (the labels and codes :func:`why_not_kept` prints) with its samples."""
    return top_reasons({f"{CRITIC_LABELS.get(critic, critic)}: {code}": n
                        for critic, codes in reasons_by_critic.items() for code, n in codes.items()}, top=top)


def failed_reasons(failures: Mapping[str, int], *, top: int = 5) -> list[tuple[str, int]]:
    """Why an agent's episodes failed as :func:`top_reasons` rows, each labelled as :func:`why_failed` says
    it (:func:`failure_label`) with its episodes."""
    return top_reasons({failure_label(k): v for k, v in failures.items()}, top=top)


def why_not_kept(reasons_by_critic: Mapping[str, Mapping[str, int]], *, top: int = 3) -> str | None:
    """One line: why generated samples were not kept, per critic its top issue codes with their counts
    (``rule critic: request_empty 3; LLM critic: not_executable 3, not_correct 3``); None when none failed."""
    parts = [f"{CRITIC_LABELS.get(critic, critic)}: {_top(codes, top)}"
             for critic, codes in reasons_by_critic.items() if codes]
    return "; ".join(parts) or None


def failure_label(key: str) -> str:
    """A failure key of the agents' metrics (``stop:step_cap``, ``checker:<reason>``) as a reader says it."""
    kind, _, what = key.partition(":")
    if kind == "stop":
        return STOP_LABELS.get(what, f"stopped: {what}")
    if kind == "checker":
        return f"answer rejected: {what}"
    return key


def why_failed(failures: Mapping[str, int], *, top: int = 3) -> str | None:
    """One line: why an agent's episodes failed, the top reasons with their counts (``step cap reached (2) ·
    answer rejected: the answer does not mention [...] (1)``); None when none failed."""
    if not failures:
        return None
    return _top({failure_label(k): v for k, v in failures.items()}, top, sep=" · ", form="{k} ({v})")


__all__ = [
    "CRITIC_LABELS",
    "STOP_LABELS",
    "accuracy_table",
    "failed_reasons",
    "failure_label",
    "not_kept_reasons",
    "top_reasons",
    "why_failed",
    "why_not_kept",
    "COMPARISON_HEADLINE",
    "comparison_table",
    "compat_table",
    "fit_width",
    "fmt",
    "fmt_interval",
    "strict_table",
    "taxonomy_table",
]
