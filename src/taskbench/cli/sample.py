"""`taskbench sample`: a seeded plan of tool subgraphs (single / chain / dag) from a tool graph."""

from __future__ import annotations

from pathlib import Path

import typer

from .console import make_console
from .options import MAX_SEED


def sample_command(
    graph_path: Path = typer.Argument(
        ..., metavar="GRAPH", show_default=False,
        help="A graph_desc.json, a tool library file (the graph is built), a dataset directory or a bundled dataset name.",
    ),
    n: int = typer.Option(..., "--n", "-n", help="Number of subgraphs to plan.", min=0),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Plan seed: the same seed gives the same plan anywhere."),
    mode_weights: str = typer.Option(
        "3,7,8", "--mode-weights", help="single,chain,dag weights (or 'chain=1,dag=1' to drop single)."
    ),
    size_weights: str | None = typer.Option(
        None, "--size-weights",
        help="Weights of the tool count for chain/dag, e.g. '2=1,3=1'. Default: 2..10 = "
        ".1,.2,.3,.2,.1,.05,.025,.025,.025.",
    ),
    start: int = typer.Option(0, "--start", help="First entry index (entries start..n-1; for resuming).", min=0),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the plan as JSON Lines here (default, or -: stdout)."),
    dependency: str | None = typer.Option(None, "--dependency", "-D", help="Override: resource or temporal."),
    fmt: str = typer.Option("auto", "--format", "-f", help="Tool library format: {formats}."),
    max_links: int | None = typer.Option(
        None, "--max-links", min=0, show_default=False,
        help="Refuse to build a graph with more links than this in memory (default 1,000,000; 0: no limit; about "
        "1.5 kB per link).",
    ),
) -> None:
    """Plan N tool subgraphs, one JSON line each: index, seed, mode, size, nodes (topological order), links.

    Modes single:chain:dag are drawn 3:7:8, chain/dag sizes 2..10 with the TaskBench weights (dag >= 3).
    Entry i depends only on (graph, seed, i): a longer plan starts with the shorter one, a resumed run agrees.

    Example:

        taskbench sample data/multimedia --n 100 --seed 7 -o plan.jsonl

        taskbench sample data/huggingface/graph_desc.json --n 5 --mode-weights 0,1,1
    """
    from collections import Counter

    from rich.table import Table

    from ..dataset.jsonio import dumps_line, write_jsonl
    from ..errors import ConfigError
    from ..graph.build import MAX_LINKS, graph_from_path
    from ..graph.loaders import check_format
    from ..graph.sampling import MODES, check_plan_size, iter_plan, parse_weights

    check_format(fmt)
    if output is not None:  # the plan is held to be written whole (without -o it streams, one line at a time)
        check_plan_size(n)
    modes = parse_weights(mode_weights, MODES)
    sizes = None
    if size_weights is not None:
        raw = parse_weights(size_weights)
        try:
            sizes = {int(k): v for k, v in raw.items()}
        except ValueError:
            raise ConfigError(f"size weights need integer sizes, got {size_weights!r}") from None
    from ..bundled import resolve

    limit = MAX_LINKS if max_links is None else max_links
    graph = graph_from_path(resolve(graph_path), format=fmt, dependency=dependency, max_links=limit)
    entries = iter_plan(graph, seed, n, start=start, mode_weights=modes, size_weights=sizes)
    if output is None or str(output) == "-":  # standard output
        for entry in entries:
            typer.echo(dumps_line(entry.to_record()))
        return
    plan = list(entries)
    write_jsonl(output, [e.to_record() for e in plan])
    table = Table(title=f"wrote {output}: {len(plan)} subgraphs (seed {seed})")
    table.add_column("mode")
    table.add_column("count", justify="right")
    table.add_column("sizes", overflow="fold")
    for mode in MODES:
        got = [e.size for e in plan if e.mode == mode]
        if got:
            hist = ", ".join(f"{k}: {v}" for k, v in sorted(Counter(got).items()))
            table.add_row(mode, str(len(got)), hist)
    make_console(stderr=True).print(table)


def register(app: typer.Typer) -> None:
    """Add `taskbench sample` to the main app."""
    app.command("sample")(sample_command)
