"""`taskbench leaderboard`: models x metrics from metrics JSON files; markdown / HTML / PNG / JSON."""

from __future__ import annotations

from pathlib import Path

import typer

from .console import is_stdout, json_option, make_console, print_json, print_table, wide_option


def leaderboard_command(
    files: list[str] = typer.Argument(
        ..., metavar="PATH...", help="Metrics JSON files (one per model; the model is what the file records, else "
        "its stem), run directories of `taskbench run` (every dataset's metrics) or glob patterns.",
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the board: .md (markdown), .html, .png (plots), .json, or .csv (one "
        "row per model, each dataset's headline metrics: the results table across models and datasets); - : the "
        "JSON on stdout (as --json).",
    ),
    wide: bool = wide_option(),
    as_json: bool = json_option(),
    against: Path | None = typer.Option(
        None, "--against", help="Another ranking ({model: score}, [best, ..., worst] or a board .json): report "
        "Kendall's tau and Spearman's rho between it and each metric's ranking.",
    ),
    group: str = typer.Option(
        "overall_overall", "--group", help="Split group of the table: overall_overall, single_overall, "
        "chain_overall, dag_overall or overall_N (N tools)."
    ),
    rank_by: str = typer.Option("node_micro_f1", "--rank-by", help="Metric to sort by (e.g. step_rougeL, link_f1)."),
    source: str = typer.Option(
        "auto", "--source", help="In files holding both: use 'strict' (auto) or 'compat' numbers."
    ),
) -> None:
    """Rank models by their metrics files and render the board; plots show the ranking metric per
    structure (single/chain/dag) and per tool count, with the samples behind each bar.

    Each cell shows the value and, for strict files, its bootstrap 95% CI as [low, high]. Warnings on stderr
    say when rows are not comparable: files scored in different modes (strict vs compat), on different
    sample counts, or whose evaluation reported coverage problems.

    Files of several datasets (a run directory, or RUN/metrics/*/*.json) give one board per dataset. A folder
    of metrics files works as well as its files (`taskbench leaderboard metrics/`); run headers that a glob
    catches beside them are skipped.

    At 80 columns the board keeps the ranking metric, n-F1, e-F1 and v-F1 first; --wide shows every column.

    Example:

        taskbench leaderboard metrics/*.json -o board.md --against human_ranking.json

        taskbench leaderboard runs/default runs/big -o results.csv

        taskbench leaderboard metrics/*.json --group chain_overall --rank-by link_f1
    """
    from rich.table import Table

    from ..dataset.jsonio import write_json
    from ..errors import ConfigError
    from ..eval.strict import to_jsonable
    from ..report.leaderboard import (
        build_board,
        cell_text,
        header,
        load_grouped,
        plot_board,
        rank_correlations,
        read_ranking,
        results_table,
        to_html,
        to_markdown,
    )

    to_stdout = as_json or is_stdout(output)
    if is_stdout(output):
        output = None
    suffix = output.suffix.lower() if output is not None else ""
    if output is not None and suffix not in (".md", ".html", ".htm", ".png", ".json", ".csv"):
        raise ConfigError(f"unsupported output {output.name!r}; use .md, .html, .png, .json or .csv")
    grouped = load_grouped(files, source=source)
    boards = {ds: build_board(entries, group=group, rank_by=rank_by) for ds, entries in grouped.items()}
    if len(boards) > 1 and suffix in (".html", ".htm", ".png"):
        raise ConfigError(f"{len(boards)} datasets ({', '.join(boards)}): {suffix} holds one board; pass one "
                          "dataset's files, or write .md, .json or .csv")
    ranking = read_ranking(against, group=group) if against else None
    correlations = {ds: rank_correlations(b, ranking) if ranking is not None else None for ds, b in boards.items()}

    docs = {}
    for ds, b in boards.items():
        doc = b.model_dump(mode="json", exclude={"entries"})
        if correlations[ds] is not None:
            doc["correlations"] = correlations[ds]
        docs[ds] = doc
    json_doc = to_jsonable(docs[next(iter(docs))] if len(docs) == 1 else {"datasets": docs})
    console = make_console(stderr=to_stdout)  # with --json, stdout carries the JSON alone
    if to_stdout:
        print_json(json_doc)
    for ds, board in ({} if to_stdout else boards).items():
        with_ci = any(r.get("ci") for r in board.rows)
        title = (f"Leaderboard{' ' + ds if ds else ''} ({board.group}, ranked by {header(board.rank_by)}; %"
                 + ("; [95% CI]" if with_ci else "") + ")")
        table = Table(title=title, show_lines=with_ci, title_justify="left")
        table.add_column("#", justify="right")
        table.add_column("model", style="bold", overflow="fold")
        table.add_column("n", justify="right")
        for m in board.metrics:
            table.add_column(header(m), justify="right")
        for i, row in enumerate(board.rows, 1):
            n = "-" if row.get("n") is None else str(row["n"])
            table.add_row(str(i), row["model"], n, *[cell_text(row, m, sep="\n") for m in board.metrics])
        first = {board.rank_by, "node_micro_f1", "link_f1", "argument_value_f1"}
        print_table(console, table, wide=wide, keep=3,
                    drop_first=[header(m) for m in ("step_bertscore_f1", "graph_accuracy", "step_rougeL",
                                                    "edit_distance", "argument_name_f1") if m not in first])
        corr = correlations[ds]
        if corr and against is not None:  # correlations come only with --against
            ct = Table(title=f"Rank correlation with {against.name}")
            for col in ("metric", "models", "Kendall's tau", "Spearman's rho"):
                ct.add_column(col)
            for c in corr:
                ct.add_row(c["metric"], str(c["n"]), _coefficient(c["kendall_tau"]), _coefficient(c["spearman_rho"]))
            console.print(ct)
    for ds, board in boards.items():
        _warn([f"{ds}: {w}" if ds and len(boards) > 1 else w for w in board.warnings])
    if output is None:
        return
    from ..dataset.jsonio import _atomic_write

    only = next(iter(boards))
    if suffix == ".md":
        _atomic_write(output, "\n".join((f"## {ds}\n\n" if ds else "") + to_markdown(b, correlations[ds])
                                        for ds, b in boards.items()))
    elif suffix in (".html", ".htm"):
        _atomic_write(output, to_html(boards[only], correlations[only]))
    elif suffix == ".png":
        plot_board(boards[only], output)
    elif suffix == ".csv":
        import csv
        import io

        head, rows = results_table(boards)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(head)
        writer.writerows(rows)
        _atomic_write(output, buf.getvalue())
    else:
        write_json(output, json_doc)
    console.print(f"wrote {output}", markup=False, highlight=False)


def _coefficient(v: float | None) -> str:
    """A rank correlation to 3 decimals; ``-`` when undefined (None or NaN)."""
    return "-" if v is None or v != v else f"{v:.3f}"


def _warn(lines: list[str]) -> None:
    console = make_console(stderr=True, soft_wrap=True, highlight=False)
    for line in lines:
        console.print(f"taskbench: warning: {line}", markup=False)


def register(app: typer.Typer) -> None:
    """Add `leaderboard` to the taskbench app."""
    app.command("leaderboard")(leaderboard_command)
