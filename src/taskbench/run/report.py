"""report.md and report.html of a run directory (built from the RunLog; the HTML is self-contained).

Per dataset: the leaderboard (strict and reference-compatible numbers, via :mod:`taskbench.report.leaderboard`)
and its plot (per structure and per tool count; PNG files under ``plots/``, inlined in the HTML as data
URIs). Then a run summary: timings, tokens, parse failures, cache hits, configuration and software.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

from ..eval.metrics import with_added
from ..schema import RunEntry, RunLog
from ..schema.run import AgentsStageSummary, GenerateStageSummary

SUMMARY_KEYS = ("node_micro_f1", "link_f1", "argument_value_f1", "edit_distance", "step_rougeL", "graph_accuracy",
                "parse_failure_rate", "call_failure_rate")
"""The built-in headline strict metrics of the overview table (group overall_overall), in order."""


def summary_metrics() -> tuple[tuple[str, str], ...]:
    """(key, label) of the overview table's strict metrics: the built-in ones, then the added headline metrics
    (labels: the metric table, :mod:`taskbench.eval.metrics`)."""
    return tuple((m.key, m.label) for m in with_added(SUMMARY_KEYS))


SUMMARY_METRICS: tuple[tuple[str, str], ...] = tuple((m.key, m.label) for m in with_added(SUMMARY_KEYS, added=False))
"""The built-in (key, label) pairs of :data:`SUMMARY_KEYS`; :func:`summary_metrics` adds the added headline
metrics."""

COMPAT_SUMMARY: tuple[tuple[str, str], ...] = (
    ("node_micro_f1_no_matching", "n-F1"),
    ("link_binary_f1", "e-F1"),
    ("argument_task_argname_value_binary_f1_no_matching", "v-F1"),
    ("edit_distance", "NED"),
    ("step_rougeL", "R-L"),
)
"""Headline compat metrics (the reference evaluator's keys, group overall_overall)."""


def _pct(v: Any) -> str:
    return "-" if v is None or not isinstance(v, (int, float)) or v != v else f"{100 * float(v):.2f}"


def strict_overall(entry: RunEntry) -> dict[str, Any]:
    """The strict overall_overall metrics of an entry ({} when not scored)."""
    group = entry.strict.groups.get("overall_overall") if entry.strict is not None else None
    return dict(group.metrics) if group is not None else {}


def compat_overall(entry: RunEntry) -> dict[str, Any]:
    """The compat overall_overall metrics of an entry ({} when not scored)."""
    return dict((entry.compat or {}).get("overall_overall") or {})


def overview_rows(log: RunLog) -> list[list[str]]:
    """One row per (dataset, model): samples, strict headline metrics, compat n-F1, tokens, seconds."""
    rows = []
    for e in log.entries:
        s, c = strict_overall(e), compat_overall(e)
        rows.append(
            [e.dataset, e.model, f"{len(e.records)}/{len(e.sample_ids)}"]
            + [_pct(s.get(k)) for k, _ in summary_metrics()]
            + [_pct(c.get(k)) for k, _ in COMPAT_SUMMARY]
            + [f"{e.usage.prompt_tokens + e.usage.completion_tokens:,}", f"{e.predict_seconds:.1f}"]
        )
    return rows


def overview_header() -> list[str]:
    """Column headers of :func:`overview_rows`."""
    return (["dataset", "model", "samples"] + [h for _, h in summary_metrics()]
            + [f"compat {h}" for _, h in COMPAT_SUMMARY] + ["tokens", "predict s"])


STRICT_COMPAT = ("Strict: every selected gold sample counts, a missing or unparseable prediction scores as an "
                 "empty graph. Compat: the reference TaskBench evaluator's numbers (unparseable predictions are "
                 "dropped, so compat can look better than strict).")


def explanations(log: RunLog) -> dict[str, list[str]]:
    """What the report says above and below its numbers: one verdict line per dataset, the small-sample
    warnings, and the glossary of the columns shown."""
    from ..report.leaderboard import glossary_lines, small_n_warning, verdict

    verdicts, warnings = [], []
    for ds, boards in _boards(log).items():
        if "strict" in boards:
            verdicts.append(verdict(boards["strict"], ds))
    ns = sorted({len(e.sample_ids) for e in log.entries if e.strict is not None})
    if ns and (w := small_n_warning(ns[0])):
        warnings.append(w[0].upper() + w[1:] + ".")
    shown = {h for _, h in summary_metrics()} | {"t-F1"}
    return {"verdicts": verdicts, "warnings": warnings, "glossary": glossary_lines(shown)}


def next_commands(log: RunLog, run_dir: str | Path) -> list[str]:
    """The commands to look further into a run directory, with its real paths."""
    from ..report.view.index import viewer_url

    d = Path(run_dir)
    out = [f"open {d / 'report.html'}  (report.md next to it)",
           f"taskbench view {d}  (every sample, prediction and trajectory in the browser: {viewer_url(d)})"]
    if any(e.metrics_path for e in log.entries):
        out.append(f"taskbench leaderboard {d}  (every dataset of this run, or pass metrics files)")
    for st in log.stages:
        if st.kind == "generate":
            out.append(f"taskbench review {d / st.path} --include-rejected  (the generated samples)")
        elif st.kind == "agents":
            out.append(f"taskbench agents show {d / st.path}  (the episodes; add --task ID for one trajectory)")
    return out


def _boards(log: RunLog) -> dict[str, dict[str, Any]]:
    """Per dataset: strict and compat leaderboards."""
    from ..report.leaderboard import build_board, entry_from_json

    out: dict[str, dict[str, Any]] = {}
    datasets = list(dict.fromkeys(e.dataset for e in log.entries))
    for ds in datasets:
        scored = [e for e in log.entries if e.dataset == ds and e.strict is not None]
        if not scored:
            continue
        boards: dict[str, Any] = {}
        for source in ("strict", "compat"):
            docs = [(e, (e.strict.model_dump(mode="json") if e.strict is not None else None) if source == "strict"
                     else e.compat) for e in scored]
            entries = [entry_from_json(doc, model=e.model, source=source) for e, doc in docs if doc]
            if entries:
                boards[source] = build_board(entries)
        out[ds] = boards
    return out


def write_plots(log: RunLog, run_dir: Path) -> dict[str, Path]:
    """One PNG per dataset (strict n-F1 per structure and per tool count), under ``plots/``."""
    from ..report.leaderboard import plot_board

    out: dict[str, Path] = {}
    (run_dir / "plots").mkdir(parents=True, exist_ok=True)
    for ds, boards in _boards(log).items():
        if "strict" in boards:
            out[ds] = plot_board(boards["strict"], run_dir / "plots" / f"{ds}.png")
    return out


def render_markdown(log: RunLog, plots: dict[str, Path] | None = None, run_dir: Path | None = None) -> str:
    """report.md: overview, per-dataset leaderboards (strict and compat) and plots, run facts."""
    from ..report.leaderboard import to_markdown

    plots = plots or {}
    cfg = log.config
    lines = [
        f"# taskbench run `{log.run_id}`",
        "",
        f"Status: **{log.status}** · {log.seconds:.1f} s · models: {', '.join(cfg.models)} · "
        f"datasets: {', '.join(cfg.datasets)} · shots: {cfg.shots} · "
        f"limit: {cfg.limit if cfg.limit else 'all'} per dataset · "
        f"output: {'structured' if cfg.structured else 'free text'} · max tokens: {cfg.max_tokens}",
        "",
    ]
    notes = explanations(log)
    if notes["verdicts"]:
        lines += [f"**Verdict:** {v}" for v in notes["verdicts"]] + [""]
    if notes["warnings"]:
        lines += [f"> **Warning:** {w}" for w in notes["warnings"]] + [""]
    lines += ["## Overview (overall, values in %)", "", STRICT_COMPAT, ""]
    head = overview_header()
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join([":---", ":---"] + ["---:"] * (len(head) - 2)) + "|")
    for row in overview_rows(log):
        lines.append("| " + " | ".join(row) + " |")
    for ds, boards in _boards(log).items():
        lines += ["", f"## {ds}", ""]
        for source, board in boards.items():
            lines += [f"**{source}** " + to_markdown(board).rstrip(), ""]
        if ds in plots:
            rel = plots[ds].relative_to(run_dir) if run_dir else plots[ds]
            lines += [f"![{ds}: n-F1 per structure and tool count]({rel.as_posix()})", ""]
    for sec in stage_sections(log, run_dir):
        lines += ["", f"## {sec['title']}", ""]
        for t in sec["text"]:
            lines += [t, ""]
        lines.append("| " + " | ".join(sec["head"]) + " |")
        lines.append("|" + "|".join("---:" if i or sec["head"][0] != "agent" else ":---"
                                    for i in range(len(sec["head"]))) + "|")
        lines += ["| " + " | ".join(r) + " |" for r in sec["rows"]]
        for w in sec["why"]:
            lines += ["", w]
    lines += ["", "## What the numbers mean", ""] + [f"- {g}" for g in notes["glossary"]]
    if run_dir is not None:
        lines += ["", "## Next", ""] + [f"- `{c}`" for c in next_commands(log, run_dir)]
    lines += ["", "## Run", ""]
    lines += _facts_md(log)
    return "\n".join(lines).rstrip() + "\n"


AGENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("episodes", "episodes"),
    ("success_rate", "success %"),
    ("correct_path_f1", "path F1 (paper) %"),
    ("correct_path_lcs", "path LCS (authors' code) %"),
    ("correct_path_contains", "path contained (RestBench) %"),
    ("turns", "turns"),
    ("model_calls", "model calls"),
    ("tokens", "tokens"),
    ("wall_seconds", "seconds"),
)
"""Columns of the agents stage's table (the comparison rows of its metrics.json; means per episode)."""


def _num(v: Any, pct: bool = False, whole: bool = False) -> str:
    if v is None or not isinstance(v, (int, float)) or v != v:
        return "-"
    if pct:
        return f"{100 * float(v):.1f}"
    if whole:
        return f"{float(v):,.0f}"
    return f"{v:,}" if isinstance(v, int) else f"{float(v):,.1f}"


def agents_title(agents: list[str]) -> str:
    """The agents section's title, after the agents actually run."""
    con = any(a.startswith("conagents") for a in agents)
    base = [a for a in agents if not a.startswith("conagents")]
    if con and base:
        pretty = {"react": "ReAct"}
        return f"Agents (ConAgents against {', '.join(pretty.get(b, b) for b in base)})"
    return f"Agents ({', '.join(agents) or 'none'})"


def stage_sections(log: RunLog, run_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """One section per stage of the run (generation, agents): title, text lines, table head and rows, and
    ``why``: the lines that explain what did not work (samples not kept, episodes failed: the top reasons), so
    that no zero stands without its reason (``run_dir`` puts the real paths into the commands they name)."""
    root = Path(run_dir) if run_dir is not None else Path("RUN_DIR")
    out: list[dict[str, Any]] = []
    for st in log.stages:
        state = f"Status: **{st.status}** · {st.seconds:.1f} s · model {st.model} · directory `{st.path}/`"
        text = [state] + ([f"Error: {st.error}"] if st.error else [])
        if st.kind == "generate":
            g = st.summary if isinstance(st.summary, GenerateStageSummary) else GenerateStageSummary()
            text.append(f"Back-instructed samples from the {g.tools or '?'} tool library ({g.method}); "
                        "a sample goes into data.json when it passes the rule critic and the model's own check "
                        f"(the LLM critic). {g.calls or 0} model calls, {g.cache_hits or 0} from the "
                        f"cache, {g.tokens or 0:,} tokens.")
            head = ["planned", "answered", "failed calls", "rule critic", "LLM critic", "both", "kept"]
            rows = [[_num(v) for v in (g.planned, g.answered, g.failed_calls, g.rule_critic, g.llm_critic,
                                       g.both_critics, g.kept)]]
            for ex in g.examples:
                text.append(f"Kept `{ex.id}` ({ex.type}): \"{ex.user_request}\" -> "
                            + " -> ".join(str(t) for t in ex.tools))
            out.append({"title": "Generation (TaskBench data engine)", "text": text, "head": head, "rows": rows,
                        "why": _why_generation(g, root / st.path)})
        else:
            a = st.summary if isinstance(st.summary, AgentsStageSummary) else AgentsStageSummary()
            text.append(f"Agents on {a.env or '?'} tasks {', '.join(a.tasks)} "
                        f"({a.tools} tools, at most {a.max_steps} steps); success by the environment's "
                        "checker; correct path against the gold calls three ways: F1 (the paper's definition), "
                        "LCS (the authors' code), contained (RestBench); the code runs in the sandbox. "
                        f"Trajectories: `taskbench agents show {root / st.path}`.")
            if a.role_models:
                played = ", ".join(f"{role} {model}" for role, model in a.role_models.items())
                text.append(f"Models by role: {played}" + (" (+student:ROLE: the shipped SPAN student of that role, "
                                                            "docs/distill.md)."
                                                            if any("+student:" in m for m in a.role_models.values())
                                                            else "."))
            head = ["agent"] + [h for _, h in AGENT_COLUMNS]
            rows = [[str(r.get("agent"))] + [_num(r.get(k), pct=k in ("success_rate", "correct_path_f1",
                                                                      "correct_path_lcs", "correct_path_contains"),
                                                  whole=k == "tokens")
                                             for k, _ in AGENT_COLUMNS] for r in a.comparison]
            run = [str(r.get("agent")) for r in a.comparison] or list(log.config.agents)
            out.append({"title": agents_title(run), "text": text, "head": head, "rows": rows,
                        "why": _why_agents(a)})
    return out


def _why_generation(g: GenerateStageSummary, directory: Path) -> list[str]:
    """Why generated samples were not kept (the critics' top reasons), and the way on when none was."""
    from ..report.tables import why_not_kept

    why = why_not_kept(g.reasons)
    if why is None:
        return []
    answered, kept = g.answered or 0, g.kept or 0
    lines = [f"Not kept: {answered - kept} of {answered}; by critic: {why} (each sample's reasons: "
             f"`{directory / 'data_error.json'}`)."]
    if not kept:
        lines.append(f"To keep them anyway (no model call): `taskbench generate -o {directory} --keep none`.")
    return lines


def _why_agents(a: AgentsStageSummary) -> list[str]:
    """Per agent with failed episodes: how many of its episodes failed and the top reasons."""
    from ..report.tables import why_failed

    lines = []
    for row in a.comparison:
        name = str(row.get("agent"))
        why = why_failed(a.failures.get(name) or {})
        if why is None:
            continue
        episodes = int(row.get("episodes") or 0)
        failed = episodes - round((row.get("success_rate") or 0.0) * episodes)
        lines.append(f"Why `{name}` failed ({failed} of {episodes} episodes): {why}.")
    return lines


def _facts(log: RunLog) -> list[tuple[str, str]]:
    env = log.environment
    facts = [
        ("started", log.started),
        ("finished", log.finished or "-"),
        ("wall seconds", f"{log.seconds:.1f}" + (f" over {len(log.passes)} passes (resumed {log.resumed} "
                                                  f"time{'s' if log.resumed != 1 else ''})" if log.resumed else "")),
        ("tokens (prompt/completion)", f"{log.usage.prompt_tokens:,}/{log.usage.completion_tokens:,}"),
        ("generation seconds", f"{log.usage.seconds:.1f}"),
        ("seeds", ", ".join(f"{k}={v}" for k, v in log.seeds.items())),
        ("taskbench", env.taskbench + (f" (git {env.git_revision[:12]}{' dirty' if env.git_dirty else ''})"
                                        if env.git_revision else "")),
        ("python / platform", f"{env.python} / {env.platform} / {env.cpu_count} CPUs"),
        ("packages", ", ".join(f"{k} {v}" for k, v in env.packages.items())),
    ]
    for i, p in enumerate(log.passes if log.resumed else [], 1):
        facts.append((f"pass {i}", f"{p.status}; started {p.started}; {p.seconds:.1f} s"
                       + (f"; at {p.stage}" if p.stage and p.status != "complete" else "")
                       + (f"; {p.error}" if p.error else "")))
    for e in log.entries:
        facts.append((
            f"{e.model} · {e.dataset}",
            f"{e.status}; {len(e.records)} records, {e.parse_failures} without JSON, {e.failures} failed calls, "
            f"{e.cache_hits} cache hits; predict {e.predict_seconds:.1f} s, evaluate {e.evaluate_seconds:.1f} s",
        ))
    return facts


def _facts_md(log: RunLog) -> list[str]:
    out = ["| | |", "|:---|:---|"]
    out += [f"| {k} | {v} |" for k, v in _facts(log)]
    return out


def inline_html(text: str) -> str:
    """Escape ``text`` and turn its markdown `code` and **bold** spans into HTML."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def render_html(log: RunLog, plots: dict[str, Path] | None = None, run_dir: Path | None = None) -> str:
    """report.html: the same content as report.md in one self-contained page (plots inlined), rendered from the
    autoescaped template ``report/templates/run_report.html`` (only :func:`inline_html`'s spans are markup)."""
    from ..report.leaderboard import cell_text, header

    plots = plots or {}
    datasets = []
    for ds, boards in _boards(log).items():
        shown = []
        for source, board in boards.items():
            rows = [[str(i), r["model"], "-" if r.get("n") is None else str(r["n"])]
                    + [cell_text(r, m) for m in board.metrics] for i, r in enumerate(board.rows, 1)]
            shown.append({"source": source, "rank_by": header(board.rank_by),
                          "head": ["#", "model", "n"] + [header(m) for m in board.metrics], "rows": rows})
        plot = plots.get(ds)
        datasets.append({"name": ds, "boards": shown, "plot": base64.b64encode(plot.read_bytes()).decode("ascii")
                         if plot is not None and plot.is_file() else None})
    viewer = None
    if run_dir is not None:
        from ..report.view.index import viewer_url

        viewer = {"dir": str(run_dir), "url": viewer_url(run_dir)}
    notes = explanations(log)
    page = page_environment().get_template("run_report.html").render(
        log=log, cfg=log.config, style=_STYLE, viewer=viewer, notes=notes, strict_compat=STRICT_COMPAT,
        overview={"head": overview_header(), "rows": overview_rows(log)}, datasets=datasets,
        sections=stage_sections(log, run_dir),
        glossary=[g.partition(": ")[::2] for g in notes["glossary"]],
        next_commands=next_commands(log, run_dir) if run_dir is not None else [],
        facts=[[k, v] for k, v in _facts(log)],
    )
    return str(page) + "\n"


def page_environment() -> Any:
    """The autoescaped environment of ``report/templates``, with the ``inline`` filter (:func:`inline_html`)."""
    from markupsafe import Markup

    from .._templates import jinja_environment

    env = jinja_environment(package="taskbench.report", what="page template", html=True)
    env.filters["inline"] = lambda text: Markup(inline_html(str(text)))
    return env


_STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child,"
          "td:nth-child(2),th:nth-child(2){text-align:left}img{max-width:100%}code{background:#f4f4f4}"
          ".warning{background:#fff4e0;border-left:4px solid #e69500;padding:6px 10px}"
          "dt{font-weight:bold;float:left;width:6em}dd{margin:0 0 4px 7em}")


def write_reports(log: RunLog, run_dir: str | Path, *, plots: bool = True) -> tuple[Path, Path]:
    """Write report.md and report.html (and plots/*.png) into ``run_dir``."""
    from ..dataset.jsonio import _atomic_write

    run_dir = Path(run_dir)
    pngs = write_plots(log, run_dir) if plots else {}
    md, page = run_dir / "report.md", run_dir / "report.html"
    _atomic_write(md, render_markdown(log, pngs, run_dir))
    _atomic_write(page, render_html(log, pngs, run_dir))
    return md, page


__all__ = [
    "COMPAT_SUMMARY",
    "STRICT_COMPAT",
    "agents_title",
    "explanations",
    "inline_html",
    "next_commands",
    "SUMMARY_METRICS",
    "summary_metrics",
    "compat_overall",
    "overview_header",
    "overview_rows",
    "render_html",
    "render_markdown",
    "stage_sections",
    "strict_overall",
    "write_plots",
    "write_reports",
]
