"""`taskbench graph build|edit|stats|show`: build (or infer) a tool graph, correct it by hand, summarise it,
draw it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .console import make_console
from .options import (
    api_key_env_option,
    base_url_option,
    call_options,
    max_retries_option,
    model_option,
    timeout_option,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..schema import ToolGraph

FORMAT_HELP = "Tool library format: {formats}."
DEP_HELP = (
    "Dependency rule: resource (link a->b when an output type of a is an input type of b) or temporal "
    "(every ordered pair). Default: inferred (typed TaskBench tools -> resource, else temporal)."
)
GRAPH_HELP = (
    "A graph_desc.json, a tool library file (any format; the graph is built), a dataset directory or a bundled "
    "dataset name."
)
INFER_HELP = (
    "How links are made: rules (resource types, or temporal = every pair), schema (inferred from what each tool "
    "returns and takes: response/output schemas, parameter names, types and descriptions; each link keeps its "
    "reasons), llm (proposed by --model, kept only between real tools and parameters) or auto (rules for "
    "TaskBench libraries, schema for OpenAI, MCP and OpenAPI tools)."
)
OVERRIDES_HELP = (
    "A JSON or YAML file of hand corrections, {drop: [...], add: [...]}, each link 'SOURCE -> TARGET' or "
    "{source, target, reason} (see `taskbench graph edit --help`)."
)

graph_app = typer.Typer(
    name="graph",
    help="Tool graphs: build or infer one from a tool library, correct it by hand, print its statistics, draw it "
    "(PNG or interactive HTML).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)


MAX_LINKS_HELP = (
    "Refuse to build a graph with more links than this in memory (default 1,000,000; 0: no limit; about 1.5 kB "
    "per link)."
)


def _graph(path: Path, fmt: str, dependency: str | None, infer: str = "auto",
           max_links: int | None = None) -> ToolGraph:
    from ..bundled import resolve
    from ..graph.build import MAX_LINKS, graph_from_path
    from ..graph.loaders import check_format

    check_format(fmt)
    limit = MAX_LINKS if max_links is None else max_links
    return graph_from_path(resolve(path), format=fmt, dependency=dependency, infer=infer, max_links=limit)


def _write_graph(graph: ToolGraph, output: Path | None, what: str) -> None:
    import json

    from ..dataset.jsonio import write_json
    from ..schema import infer_dependency

    doc = graph.to_taskbench()
    if graph.dependency != infer_dependency(list(graph.nodes)):
        doc["dependency"] = graph.dependency
    if output is None:
        typer.echo(json.dumps(doc, ensure_ascii=False, indent=2))
        return
    write_json(output, doc)
    n = len(graph.nodes)
    density = len(graph.links) / (n * (n - 1)) if n > 1 else 0.0
    how = f", {graph.inferred}" if graph.inferred else ""
    console = make_console(stderr=True)
    console.print(
        f"wrote {output}: {n} tools, {len(graph.links)} links, density {density:.3f} ({graph.dependency}{how}){what}",
        highlight=False, markup=False,
    )
    linked = {lk.source for lk in graph.links} | {lk.target for lk in graph.links}
    alone = [t.id for t in graph.nodes if t.id not in linked]
    if alone and n > 1:
        console.print(
            f"note: {len(alone)} of {n} tools have no link (e.g. {alone[0]!r}); chains and DAGs are sampled along "
            "links: check with `taskbench graph show`, add links with `taskbench graph edit`, or try --infer llm",
            highlight=False, markup=False,
        )


@graph_app.command("build")
def build_command(
    tool_desc: Path = typer.Argument(..., help="Tool library: {format_titles}, a dataset directory or a bundled dataset "
                                     "name.",
                                     show_default=False),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write graph_desc.json here (default, or -: stdout)."),
    infer: str = typer.Option("auto", "--infer", "-i", help=INFER_HELP),
    model: str | None = model_option(required=False, env=False, help="provider/model for --infer llm, e.g. "
                                     "llamacpp/qwen2.5-coder-0.5b or openai-compatible/NAME with --base-url."),
    base_url: str | None = base_url_option(),
    api_key_env: str | None = api_key_env_option(),
    timeout: float | None = timeout_option(),
    max_retries: int | None = max_retries_option(),
    concurrency: int | None = typer.Option(None, "--concurrency", "-c", help="Simultaneous model calls "
                                           "(--infer llm).", min=1),
    report: Path | None = typer.Option(None, "--report", help="--infer llm: write what the model proposed, kept "
                                       "and dropped (with why) to this JSON file."),
    overrides: Path | None = typer.Option(None, "--overrides", help=OVERRIDES_HELP),
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
    For OpenAI, MCP and OpenAPI tools the links are inferred (--infer schema): what one tool returns is linked
    to what another takes, e.g. results[].id of GET /search/person to the person_id of
    GET /person/{person_id}/movie_credits, and each link records its reasons (extra "reasons" keys that the
    reference tools ignore). With --infer llm a model proposes links; only links between real tools and real
    parameters are kept. --overrides applies hand corrections last. A top-level "dependency" key is added only
    when the rule differs from what the tools imply. Exit code 1 when model calls failed (the graph is still
    written, from the calls that worked).
    The links are counted first: a rule-built graph larger than --max-links is refused with its size before
    anything is written (and written in constant memory otherwise).

    Example:

        taskbench graph build data/multimedia/tool_desc.json -o data/multimedia/graph_desc.json

        taskbench graph build tmdb_oas.json --openapi-ids path -o tmdb_graph.json

        taskbench graph build tools.json --infer llm --model llamacpp/qwen2.5-coder-0.5b -o graph.json
    """
    from ..bundled import resolve
    from ..errors import ConfigError
    from ..graph.build import MAX_LINKS, make_graph, resolve_infer
    from ..graph.loaders import check_format, load_tools

    check_format(fmt)
    if output is not None and str(output) == "-":  # standard output, as without -o
        output = None
    library = load_tools(resolve(tool_desc), fmt, dependency, openapi_ids=openapi_ids)
    method = resolve_infer(library, infer, dependency)
    limit = MAX_LINKS if max_links is None else max_links
    if method == "rules" and overrides is None:
        _write_rule_graph(library, output, limit)
        return
    if model is not None and method != "llm":
        raise ConfigError("--model is for --infer llm")
    failed = 0
    note = ""
    if method == "llm":
        if model is None:
            raise ConfigError("--infer llm needs --model PROVIDER/MODEL (e.g. llamacpp/qwen2.5-coder-0.5b)")
        from ..graph.infer_llm import infer_graph_llm
        from ..llm import get_model

        options: dict[str, Any] = call_options(None, timeout, max_retries)
        if base_url:
            options["base_url"] = base_url
        if api_key_env:
            options["api_key_env"] = api_key_env
        if concurrency is not None:
            options["concurrency"] = concurrency
        with get_model(model, **options) as llm:
            graph, rep = infer_graph_llm(library, llm)
        failed = rep.failed_calls
        note = (f"; {llm.name}: {rep.calls} calls ({rep.failed_calls} failed), {rep.proposed} links proposed, "
                f"{rep.kept} kept, {rep.dropped} dropped by the rule check")
        if report is not None:
            from dataclasses import asdict

            from ..dataset.jsonio import write_json

            write_json(report, asdict(rep))
    else:
        if report is not None:
            raise ConfigError("--report is for --infer llm")
        graph = make_graph(library, method, dependency, max_links=limit)
    if overrides is not None:
        from ..graph.edit import edit_graph, load_overrides

        edits = load_overrides(overrides, [t.id for t in graph.nodes])
        graph = edit_graph(graph, edits)
        note += f"; {len(edits.drop)} links dropped and {len(edits.add)} added by {overrides}"
    _write_graph(graph, output, note)
    if failed:
        make_console(stderr=True).print(f"taskbench: {failed} model calls failed; the graph lacks their links",
                                        highlight=False)
        raise typer.Exit(1)


@graph_app.command("edit")
def edit_command(
    graph_path: Path = typer.Argument(..., metavar="GRAPH", help=GRAPH_HELP, show_default=False),
    drop: list[str] = typer.Option([], "--drop", help="Remove the link 'SOURCE -> TARGET' (repeatable)."),
    add: list[str] = typer.Option([], "--add", help="Add the link 'SOURCE -> TARGET' (repeatable)."),
    reason: str | None = typer.Option(None, "--reason", help="Why the --add links exist (kept as their reason)."),
    overrides: Path | None = typer.Option(None, "--overrides", help=OVERRIDES_HELP),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the edited graph here (default: "
                                       "GRAPH itself when it is a graph_desc.json file)."),
    dependency: str | None = typer.Option(None, "--dependency", "-D", help=DEP_HELP),
    fmt: str = typer.Option("auto", "--format", "-f", help=FORMAT_HELP),
) -> None:
    """Correct a tool graph by hand: drop and add links, checked against the graph's tools.

    Links are 'SOURCE -> TARGET' (quote them; tool names may hold spaces). An overrides file lists both in
    JSON or YAML:

        drop:
          - GET /search/movie -> GET /movie/top_rated
        add:
          - source: GET /tv/{tv_id}
            target: GET /network/{network_id}
            reason: networks[].id is the network id

    Drops apply before adds. An unknown tool (with the closest name suggested), a link to drop that the graph
    does not have, a self link or, in resource graphs, a link without a shared type is an error (exit 2) and
    nothing is written. The edits are recorded in the graph's "edits" list; `taskbench sample` (and generation)
    read the edited file like any graph_desc.json.

    Example:

        taskbench graph edit graph.json --drop "GET /search/movie -> GET /movie/top_rated" --add "A -> B" --reason "B takes A's id"

        taskbench graph edit graph.json --overrides fixes.yaml -o graph.fixed.json
    """
    from ..bundled import resolve
    from ..errors import ConfigError
    from ..graph.build import is_graph_document
    from ..graph.edit import GraphEdits, LinkEdit, edit_graph, load_overrides, parse_link
    from ..graph.loaders import JsonSource

    if not drop and not add and overrides is None:
        raise ConfigError("nothing to edit: give --drop, --add or --overrides")
    source_path = resolve(graph_path)
    graph = _graph(graph_path, fmt, dependency)
    names = [t.id for t in graph.nodes]
    edits = GraphEdits()
    if overrides is not None:
        edits.extend(load_overrides(overrides, names))
    edits.drop += [LinkEdit(*parse_link(text, names, origin="--drop"), None, "--drop") for text in drop]
    edits.add += [LinkEdit(*parse_link(text, names, origin="--add"), None, "--add") for text in add]
    edited = edit_graph(graph, edits, reason=reason)
    if output is None:
        if not (source_path.is_file() and is_graph_document(JsonSource.read(source_path).doc)):
            raise ConfigError(f"{graph_path} is not a graph_desc.json file; pass -o to say where to write")
        output = source_path
    _write_graph(edited, output, f"; {len(edits.drop)} dropped, {len(edits.add)} added")


def _write_rule_graph(library: Any, output: Path | None, max_links: int) -> None:
    """A graph built by the resource/temporal rules, streamed to the file in constant memory (dense libraries
    give about n*n links); refused before anything is written when it has more than ``max_links`` links."""
    import sys

    from ..dataset.jsonio import atomic_writer
    from ..graph.build import check_size, write_graph
    from ..schema import infer_dependency

    check_size(library, max_links=max_links, streamed=True)
    extra: dict[str, object] | None = (
        {"dependency": library.dependency} if library.dependency != infer_dependency(library.tools) else None
    )
    if output is None:
        stdout = sys.stdout.buffer
        write_graph(library, stdout, extra=extra)
        stdout.flush()
        return
    with atomic_writer(output) as fh:
        count = write_graph(library, fh, extra=extra)
    make_console(stderr=True).print(
        f"wrote {output}: {len(library)} tools, {count:,} links ({library.dependency}, rules)", highlight=False,
        markup=False,
    )


@graph_app.command("stats")
def stats_command(
    graph_path: Path = typer.Argument(..., metavar="GRAPH", help=GRAPH_HELP, show_default=False),
    dependency: str | None = typer.Option(None, "--dependency", "-D", help=DEP_HELP),
    fmt: str = typer.Option("auto", "--format", "-f", help=FORMAT_HELP),
    infer: str = typer.Option("auto", "--infer", "-i", help="For a tool library file: rules, schema or auto "
                              "(see `graph build --help`)."),
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

    graph = _graph(graph_path, fmt, dependency, infer, max_links)
    st = graph_stats(graph)
    if as_json:
        typer.echo(st.model_dump_json(indent=2))
        return
    from rich.markup import escape

    table = Table(title=escape(f"tool graph: {graph_path}"), show_header=True, header_style="bold")
    table.add_column("statistic")
    table.add_column("value", overflow="fold")

    def top(items: list[tuple[str, int]]) -> str:
        return escape(", ".join(f"{name} ({d})" for name, d in items))

    def counts(d: dict[str, int]) -> str:
        return escape(", ".join(f"{k}: {v}" for k, v in d.items())) or "-"

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
        table.add_row("input types no tool produces", escape(", ".join(st.unproduced_input_types)) or "none")
        table.add_row("output types no tool takes", escape(", ".join(st.unconsumed_output_types)) or "none")
    if st.parameters:
        table.add_row("parameters (all tools)", str(st.parameters))
    table.add_row("weakly connected components",
                  f"{st.components} (sizes {', '.join(map(str, st.component_sizes))})")
    table.add_row("isolated tools", escape(", ".join(st.isolated)) or "none")
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
    infer: str = typer.Option("auto", "--infer", "-i", help="For a tool library file: rules, schema or auto "
                              "(see `graph build --help`)."),
) -> None:
    """Draw a tool graph: a PNG picture, or one HTML page you can pan (drag), zoom (wheel) and hover.

    Tools are coloured by their first output type, links by type. The HTML file needs no network; in it,
    hovering a link shows why it exists (the returned field and the parameter it feeds), and clicking a tool
    lists its links and their reasons in a side panel.

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
    graph = _graph(graph_path, fmt, dependency, infer)
    name = title or _default_title(graph_path)
    render(graph, output, title=name, kind=layout)
    make_console(stderr=True).print(f"wrote {output} ({len(graph.nodes)} tools, {len(graph.links)} links)", highlight=False,
                                   markup=False)


def _default_title(path: Path) -> str:
    """A folder's name; a dataset's conventional file (graph_desc.json) by its folder; any other file by its
    own name (`specs/petstore.yaml` is 'petstore', not 'specs')."""
    if path.is_dir():
        return path.name
    if path.stem in ("graph_desc", "graph", "tool_desc", "tools") and path.parent.name:
        return path.parent.name
    return path.stem or str(path)


def register(app: typer.Typer) -> None:
    """Add the `graph` command group to the main app."""
    app.add_typer(graph_app, name="graph")
