"""Plots and tables of an agent run's metrics document (``metrics.json`` of ``taskbench agents eval``).

- :func:`plot_tokens`: tokens per solved task against success rate, one point per agent (the paper's
  Figure 4: which agent buys its successes with fewer tokens);
- :func:`plot_turns`: success rate against the turn limits alpha / beta, one line per protocol (Figure 3),
  from a run with ``--sweep-turns``;
- :func:`comparison_markdown`: the comparison table as Markdown; :func:`paired_rows`: one pair's paired
  comparison as table rows; :func:`failure_lines`: why each agent's failed episodes failed;
- :func:`read_metrics`: a ``metrics.json`` read and the parts the plots use checked (one-line errors).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..dataset.jsonio import read_json
from ..errors import InputError, validation_message

COMPARISON_COLUMNS = (
    ("agent", "agent"),
    ("episodes", "episodes"),
    ("crashed", "crashed"),
    ("success_rate", "success %"),
    ("correct_path_f1", "path F1 (paper) %"),
    ("correct_path_lcs", "path LCS (authors' code) %"),
    ("correct_path_contains", "path contained (RestBench) %"),
    ("extra_calls", "extra calls"),
    ("turns", "turns"),
    ("tokens", "tokens/episode"),
    ("tokens_per_solved", "tokens/solved"),
    ("attempts", "trials"),
    ("wall_seconds", "s/episode"),
)

RATES = ("success_rate", "correct_path_f1", "correct_path_lcs", "correct_path_contains")


def _cell(value: Any, key: str) -> str:
    if value is None:
        return "-"
    if key in RATES:
        return f"{100 * float(value):.1f}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


def comparison_rows(metrics: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the comparison table (rates in %; the labels of the run report's agents table), with
    the success rate's 95% CI."""
    head = [label for _, label in COMPARISON_COLUMNS] + ["success 95% CI"]
    rows = []
    for row in metrics.get("comparison", []):
        ci = ((metrics.get("agents") or {}).get(row["agent"], {}).get("ci95") or {}).get("success_rate")
        cells = [_cell(row.get(k), k) for k, _ in COMPARISON_COLUMNS]
        cells.append(f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f}" if ci else "-")
        rows.append(cells)
    return head, rows


PAIRED_LABELS = {"success_rate": "success %", "correct_path_f1": "path F1 %", "correct_path_lcs": "path LCS %",
                 "correct_path_contains": "path contained %", "tokens": "tokens/episode"}


def paired_rows(pair: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of one pair of a metrics document's ``paired`` list: per metric A, B, the difference
    (points for rates), its paired 95% CI and the p-value, as the columns ``metric, A, B, diff, 95% CI, p``."""
    head = ["metric", str(pair.get("a")), str(pair.get("b")), "diff", "95% CI", "p"]
    rows = []
    for m in pair.get("metrics", []):
        key = str(m.get("metric"))
        rate = key in RATES
        scale = 100.0 if rate else 1.0

        def num(v: Any, signed: bool = False, scale: float = scale, rate: bool = rate) -> str:
            if v is None:
                return "-"
            x = scale * float(v)
            if rate:
                return f"{x:+.1f}" if signed else f"{x:.1f}"
            return f"{x:+,.0f}" if signed else f"{x:,.0f}"

        ci = m.get("ci95")
        ci_text = f"[{num(ci[0], True)}, {num(ci[1], True)}]" if ci and ci[0] is not None else "-"
        p = m.get("p_value")
        rows.append([PAIRED_LABELS.get(key, key), num(m.get("a")), num(m.get("b")), num(m.get("diff"), True),
                     ci_text, f"{p:.3f}" if p is not None else "-"])
    return head, rows


def failure_lines(metrics: Mapping[str, Any], *, top: int = 3) -> list[str]:
    """One line per agent with failed episodes: how many of its episodes failed and the top reasons (early
    stops, the checker's reasons), from the metrics document's ``agents.<name>.failures``."""
    from .tables import why_failed

    lines = []
    for name, summary in (metrics.get("agents") or {}).items():
        why = why_failed(summary.get("failures") or {}, top=top)
        if why is None:
            continue
        n = summary.get("episodes", 0)
        failed = n - int(summary.get("successes") or 0)
        lines.append(f"- {name}: {failed} of {n} episodes failed: {why}")
    return lines


def mechanism_markdown(metrics: Mapping[str, Any]) -> str:
    """One line per ConAgents agent: what review did (verdicts asking for a change, revisions and how many
    changed the plan, reroutes to grounding, code rewrites and how many fixed a failed run, episodes where it
    acted and their success), and per pair the episodes whose outcome differs (solved by one only)."""
    lines = []
    for name, summary in (metrics.get("agents") or {}).items():
        m = summary.get("mechanism")
        if not name.startswith("conagents") or not m:
            continue
        acted = m.get("success_when_acted")
        lines.append(f"- {name}: {m.get('reviews', 0)} reviews, {m.get('revise_verdicts', 0)} asked for a change; "
                     f"{m.get('revisions', 0)} plan revisions ({m.get('plans_changed', 0)} changed the plan), "
                     f"{m.get('reroutes', 0)} reroutes to grounding, {m.get('retries', 0)} code rewrites "
                     f"({m.get('retries_fixed', 0)} fixed a failed run); acted in {m.get('episodes_acted', 0)} "
                     f"episodes" + (f" (success {100 * acted:.1f}%)" if acted is not None else ""))
    for pair in metrics.get("paired", []):
        f = pair.get("flips")
        if f and (f.get("a_only") or f.get("b_only")):
            lines.append(f"- outcomes that differ, {pair['a']} vs {pair['b']}: solved by the first only "
                         f"{f['a_only']}, by the second only {f['b_only']} (of {f['episodes']} episodes)")
    return "\n".join(lines)


def comparison_markdown(metrics: Mapping[str, Any]) -> str:
    """The comparison table (rates in %) with 95% CIs of the success rate, as Markdown. The three path
    rates: F1 (the paper's correct path rate), LCS (the authors' evaluation code), contained (RestBench's)."""
    head = [label for _, label in COMPARISON_COLUMNS] + ["success 95% CI"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in metrics.get("comparison", []):
        ci = ((metrics.get("agents") or {}).get(row["agent"], {}).get("ci95") or {}).get("success_rate")
        cells = [_cell(row.get(k), k) for k, _ in COMPARISON_COLUMNS]
        cells.append(f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f}" if ci else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_markdown(metrics: Mapping[str, Any], metric: str = "success_rate") -> str:
    """One line per pair of agents: the difference of ``metric`` (points for rates), its paired 95% CI and
    p-value, on the tasks both finished."""
    lines = []
    rate = metric in RATES
    scale = 100.0 if rate else 1.0
    unit = " pts" if rate else ""
    for pair in metrics.get("paired", []):
        m = next((x for x in pair.get("metrics", []) if x.get("metric") == metric), None)
        if m is None or m.get("diff") is None:
            continue
        ci = m.get("ci95")
        ci_text = f", 95% CI {scale * ci[0]:+.1f} to {scale * ci[1]:+.1f}" if ci and ci[0] is not None else ""
        p = m.get("p_value")
        lines.append(f"- {pair['a']} - {pair['b']}: {metric} {scale * m['diff']:+.1f}{unit}{ci_text}"
                     f"{f', p = {p:.3f}' if p is not None else ''} ({m.get('tasks', 0)} tasks)")
    return "\n".join(lines)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> Path:
    """Lay out and write ``fig`` as a PNG at ``path`` (its directory made)."""
    from ..dataset.jsonio import atomic_writer

    fig.tight_layout()
    out = Path(path)
    with atomic_writer(out) as fh:  # a full disk leaves no half picture
        fig.savefig(fh, dpi=110, format=out.suffix.lstrip(".").lower() or "png")
    return out


class _ComparisonRow(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    agent: str = Field(description="Agent name.")
    tokens: float | None = Field(default=None, description="Tokens per episode.")
    tokens_per_solved: float | None = Field(default=None, description="Tokens per solved task.")
    success_rate: float | None = Field(default=None, description="Success rate 0..1.")


class _SweepPoint(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    protocol: str = Field(description="Protocol of the point.")
    alpha: int = Field(description="Planning-review turn limit.")
    beta: int = Field(description="Execution-review turn limit.")
    success_rate: float | None = Field(default=None, description="Success rate 0..1.")
    ablation: Any = Field(default=None, description="The ablation of the point, if any.")


class _PlottedMetrics(BaseModel):
    """The parts of a metrics document the plots read."""

    model_config = ConfigDict(extra="allow")

    comparison: list[_ComparisonRow] = Field(default_factory=list, description="One row per agent.")
    turns_sweep: list[_SweepPoint] = Field(default_factory=list, description="Points of --sweep-turns.")


def read_metrics(path: str | Path) -> dict[str, Any]:
    """A ``metrics.json`` of ``taskbench agents eval``; what is not JSON, not an object, or of the wrong shape
    where the plots read it raises :class:`InputError` naming the file."""
    doc = read_json(path)
    hint = "rerun `taskbench agents eval` into this directory to rewrite it"
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object (a metrics document of taskbench agents eval)", path=path,
                         hint=hint)
    try:
        _PlottedMetrics.model_validate(doc)
    except ValidationError as exc:
        raise InputError(f"not a metrics document: {validation_message(exc)}", path=path, hint=hint) from None
    return doc


def plot_tokens(metrics: Mapping[str, Any], path: str | Path) -> Path:
    """Figure 4: tokens per solved task (x, log scale when spread) against success rate (y), per agent."""
    plt = _pyplot()
    rows = [r for r in metrics.get("comparison", []) if r.get("tokens") is not None]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    try:
        for r in rows:
            x = r.get("tokens_per_solved")
            y = 100 * float(r.get("success_rate") or 0.0)
            if x is None:  # nothing solved: show it at its tokens per episode, marked
                ax.scatter([r["tokens"]], [y], marker="x", color="grey")
                ax.annotate(f"{r['agent']} (none solved)", (r["tokens"], y), fontsize=8, xytext=(4, 4),
                            textcoords="offset points")
                continue
            ax.scatter([x], [y], s=40)
            ax.annotate(r["agent"], (x, y), fontsize=8, xytext=(4, 4), textcoords="offset points")
        xs = [r.get("tokens_per_solved") or r.get("tokens") for r in rows]
        if xs and min(xs) > 0 and max(xs) / min(xs) > 20:
            ax.set_xscale("log")
        ax.set_xlabel("tokens per solved task (x: tokens per episode, none solved)")
        ax.set_ylabel("success rate (%)")
        ax.set_title(f"{metrics.get('env', '')} · tools {metrics.get('tools', '')} · {metrics.get('tasks', 0)} tasks")
        ax.grid(alpha=0.3)
        return _save(fig, path)
    finally:
        plt.close(fig)


def plot_turns(metrics: Mapping[str, Any], path: str | Path) -> Path:
    """Figure 3: success rate against the turn limit, one line per (protocol, which limit varies)."""
    plt = _pyplot()
    sweep = [s for s in metrics.get("turns_sweep", []) if not s.get("ablation")]
    lines: dict[str, list[tuple[int, float]]] = {}
    for s in sweep:
        rate = s.get("success_rate")
        if rate is None:
            continue
        a, b = int(s["alpha"]), int(s["beta"])
        if a == b:
            lines.setdefault(f"{s['protocol']} (alpha = beta)", []).append((a, rate))
        if b == 3:
            lines.setdefault(f"{s['protocol']} (alpha, beta = 3)", []).append((a, rate))
        if a == 3:
            lines.setdefault(f"{s['protocol']} (beta, alpha = 3)", []).append((b, rate))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    try:
        for label, points in sorted(lines.items()):
            points = sorted(set(points))
            if len(points) < 2:
                continue
            ax.plot([p[0] for p in points], [100 * p[1] for p in points], marker="o", label=label)
        ax.set_xlabel("maximum calibration turns")
        ax.set_ylabel("success rate (%)")
        ax.set_title(f"{metrics.get('env', '')}: success against the turn limits")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        return _save(fig, path)
    finally:
        plt.close(fig)


__all__ = [
    "PAIRED_LABELS", "RATES", "comparison_markdown", "failure_lines", "mechanism_markdown", "paired_markdown",
    "paired_rows", "plot_tokens", "plot_turns", "read_metrics",
]
