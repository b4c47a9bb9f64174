"""`taskbench graph build|stats|show`: build a tool graph from a tool library, summarise it, draw it."""

from __future__ import annotations

from pathlib import Path

import typer

from .console import make_console

FORMAT_HELP = "Tool library format: auto (detect), taskbench, openai, mcp or openapi."
DEP_HELP = (
    "Dependency rule: resource (link a->b when an output type of a is an input type of b) or temporal "
    "(every ordered pair). Default: inferred (typed TaskBench tools -> resource, else temporal)."
)
GRAPH_HELP = (
    "A graph_desc.json, a tool library file (any format; the graph is built), a dataset directory or a bundled "
    "dataset name."
)

graph_app = typer.Typer(
    name="graph",
    help="Tool graphs: build one from a tool library, print its statistics, draw it (PNG or interactive HTML).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)


MAX_LINKS_HELP = (
    "Refuse to build a graph with more links than this in memory (default 1,000,000; 0: no limit; about 1.5 kB "
    "per link)."
)


def _graph(path: Path, fmt: str, dependency: str | None, max_links: int | None = None):  # noqa: ANN202
    from ..bundled import resolve
    from ..graph.build import MAX_LINKS, graph_from_path
    from ..graph.loaders import check_format

    check_format(fmt)
    limit = MAX_LINKS if max_links is None else max_links
    return graph_from_path(resolve(path), format=fmt, dependency=dependency, max_links=limit)


@graph_app.command("build")
def build_command(
    tool_desc: Path = typer.Argument(..., help="Tool library: TaskBench tool_desc.json, OpenAI tools, MCP tools/list "
                                     "or OpenAPI 3 JSON, a dataset directory or a bundled dataset name.",
                                     show_default=False),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write graph_desc.json here (default: stdout)."),
    dependency: str | None = typer.Option(None, "--dependency", "-D", help=DEP_HELP),
    fmt: str = typer.Option("auto", "--format", "-f", help=FORMAT_HELP),
    openapi_ids: str = typer.Option(
        "operationId", "--openapi-ids", help="OpenAPI tool names: operationId (else 'METHOD /path') or path."
    ),
    max_links: int | None = typer.Option(
        None, "--max-links", min=0, show_default=False,
        help="Refuse a graph with more links than this (default 1,000,000; 0: no limit). The file is streamed in "
        "constant memory; a dense graph of n tools has about n*n links (1,000 tools: 90 MB).",
    ),
) -> None:
    """Build the tool graph of a tool library and write it as a TaskBench graph_desc.json.

    Built from a released TaskBench tool_desc.json, the links equal the released graph_desc.json exactly.
    A top-level "dependency" key is added only when the rule differs from what the tools imply. The links
    are counted first: a graph larger than --max-links is refused with its size before anything is written.

    Example:

        taskbench graph build data/multimedia/tool_desc.json -o data/multimedia/graph_desc.json

        taskbench graph build spotify_oas.json --format openapi -o spotify_graph.json
    """
    import sys

    from ..bundled import resolve
    from ..dataset.jsonio import atomic_writer
    from ..graph.build import MAX_LINKS, check_size, write_graph
    from ..graph.loaders import check_format, infer_dependency, load_tools

    check_format(fmt)
    library = load_tools(resolve(tool_desc), fmt, dependency, openapi_ids=openapi_ids)
    check_size(library, max_links=MAX_LINKS if max_links is None else max_links, streamed=True)
    extra = {"dependency": library.dependency} if library.dependency != infer_dependency(library.tools) else None
    if output is None:
        stdout = sys.stdout.buffer
        write_graph(library, stdout, extra=extra)
        stdout.flush()
        return
    with atomic_writer(output) as fh:
        count = write_graph(library, fh, extra=extra)
    make_console(stderr=True).print(
        f"wrote {output}: {len(library)} tools, {count:,} links ({library.dependency})", highlight=False, markup=False
    )


@graph_app.command("stats")
def stats_command(
    graph_path: Path = typer.Argument(..., metavar="GRAPH", help=GRAPH_HELP, show_default=False),
    dependency: str | None = typer.Option(None, "--dependency", "-D", help=DEP_HELP),
    fmt: str = typer.Option("auto", "--format", "-f", help=FORMAT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the statistics as JSON instead of a table."),
    max_links: int | None = typer.Option(None, "--max-links", min=0, help=MAX_LINKS_HELP, show_default=False),
) -> None:
    """Print a tool graph's size, density, degree summary, types and connected components.

    Example:

        taskbench graph stats data/huggingface

        taskbench graph stats tools.json --format openai --json
    """
    from rich.table import Table

    from ..graph.stats import graph_stats

    graph = _graph(graph_path, fmt, dependency, max_links)
    st = graph_stats(graph)
    if as_json:
        typer.echo(st.model_dump_json(indent=2))
        return
    table = Table(title=f"tool graph: {graph_path}", show_header=True, header_style="bold")
    table.add_column("statistic")
    table.add_column("value", overflow="fold")

    def top(items: list[tuple[str, int]]) -> str:
        return ", ".join(f"{name} ({d})" for name, d in items)

    def counts(d: dict[str, int]) -> str:
        return ", ".join(f"{k}: {v}" for k, v in d.items()) or "-"

    table.add_row("dependency", st.dependency)
    table.add_row("tools", str(st.nodes))
    table.add_row("links", str(st.links))
    table.add_row("density", f"{st.density:.3f}")
    table.add_row("in-degree min / mean / max", f"{st.in_degree.min} / {st.in_degree.mean:.2f} / {st.in_degree.max}")
    table.add_row("highest in-degree", top(st.in_degree.top))
    table.add_row("out-degree min / mean / max",
                  f"{st.out_degree.min} / {st.out_degree.mean:.2f} / {st.out_degree.max}")
    table.add_row("highest out-degree", top(st.out_degree.top))
    table.add_row("link types", counts(st.link_types))
    if st.dependency == "resource":
        table.add_row("input types (tools)", counts(st.input_types))
        table.add_row("output types (tools)", counts(st.output_types))
        table.add_row("input types no tool produces", ", ".join(st.unproduced_input_types) or "none")
        table.add_row("output types no tool takes", ", ".join(st.unconsumed_output_types) or "none")
    if st.parameters:
        table.add_row("parameters (all tools)", str(st.parameters))
    table.add_row("weakly connected components",
                  f"{st.components} (sizes {', '.join(map(str, st.component_sizes))})")
    table.add_row("isolated tools", ", ".join(st.isolated) or "none")
    make_console().print(table)


@graph_app.command("show")
def show_command(
    graph_path: Path = typer.Argument(..., metavar="GRAPH", help=GRAPH_HELP, show_default=False),
    output: Path = typer.Option(..., "--output", "-o", help="out.png (static picture; also .svg/.pdf) or out.html "
                                "(interactive, self-contained)."),
    dependency: str | None = typer.Option(None, "--dependency", "-D", help=DEP_HELP),
    fmt: str = typer.Option("auto", "--format", "-f", help=FORMAT_HELP),
    layout: str = typer.Option("auto", "--layout", help="auto (circle for dense graphs, else Kamada-Kawai), "
                               "circular, kamada_kawai or spring."),
    title: str | None = typer.Option(None, "--title", help="Heading (default: the input's name)."),
) -> None:
    """Draw a tool graph: a PNG picture, or one HTML page you can pan (drag), zoom (wheel) and hover.

    Tools are coloured by their first output type, links by type. The HTML file needs no network.

    Example:

        taskbench graph show data/huggingface -o huggingface.png

        taskbench graph show data/multimedia/graph_desc.json -o multimedia.html
    """

    from ..errors import ConfigError, did_you_mean
    from ..graph.render import render

    if layout not in ("auto", "circular", "kamada_kawai", "spring"):
        raise ConfigError(f"unknown layout {layout!r} ({did_you_mean(layout, ('auto', 'circular', 'kamada_kawai', 'spring'))})")
    if output.suffix.lower() not in (".png", ".svg", ".pdf", ".html", ".htm"):
        raise ConfigError(f"cannot tell the picture format of {output.name!r} (use a .png or .html file name)")
    graph = _graph(graph_path, fmt, dependency)
    name = title or (graph_path.name if graph_path.is_dir() else graph_path.parent.name or graph_path.stem)
    render(graph, output, title=name, kind=layout)
    make_console(stderr=True).print(f"wrote {output} ({len(graph.nodes)} tools, {len(graph.links)} links)", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the `graph` command group to the main app."""
    app.add_typer(graph_app, name="graph")
