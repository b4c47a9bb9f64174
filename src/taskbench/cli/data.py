"""`taskbench data list|check|fetch|judge`: the bundled demo datasets, the rule critic over a dataset, the
downloads of TaskBench (the hub) and RestBench (RestGPT's repository), the LLM judge of generated samples."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from . import options
from .console import exit_if_calls_failed, json_option, make_console, print_json, print_table
from .options import MAX_CONCURRENCY

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

data_app = typer.Typer(
    name="data",
    help="Datasets: list the bundled demo datasets, check a dataset with the rule critic, download TaskBench or "
    "RestBench, judge generated samples.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)


def _console(stderr: bool = False) -> Console:
    return make_console(stderr=stderr, highlight=False, soft_wrap=True)


def _dataset_dir(arg: str) -> Path:
    """A bundled dataset name or a directory."""
    from .. import bundled

    if bundled.is_bundled(arg) and not Path(arg).is_dir():
        return bundled.path(arg)
    return Path(arg)


@data_app.command("list")
def list_command(as_json: bool = json_option()) -> None:
    """List the bundled demo datasets: dependency kind, tools, graph links, samples by type, tools per sample.

    The names work wherever a dataset directory is expected (e.g. `taskbench data check multimedia`).

    Example:

        taskbench data list
    """
    from collections import Counter

    from rich import box
    from rich.table import Table

    from .. import bundled
    from ..dataset import load_dataset

    heads = ("name", "kind", "tools", "links", "samples", "single", "chain", "dag", "sizes")
    rows: list[dict[str, Any]] = []
    for name in bundled.names():
        ds = load_dataset(bundled.path(name))
        kinds = Counter(s.type for s in ds.samples)
        sizes = [s.n_tools for s in ds.samples] or [0]
        rows.append({"name": name, "kind": ds.library.dependency, "tools": len(ds.library),
                     "links": len(ds.graph.links) if ds.graph is not None else 0, "samples": len(ds.samples),
                     "single": kinds.get("single", 0), "chain": kinds.get("chain", 0), "dag": kinds.get("dag", 0),
                     "sizes": [min(sizes), max(sizes)], "path": str(bundled.path(name))})
    if as_json:
        print_json(rows)
        return
    table = Table(title="Bundled demo datasets", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True)
    for col in heads:
        table.add_column(col, justify="left" if col in ("name", "kind") else "right", no_wrap=True)
    for row in rows:
        low, high = row["sizes"]
        table.add_row(*(f"{low}-{high}" if h == "sizes" else str(row[h]) for h in heads))
    console = _console()
    print_table(console, table, more="--json gives every figure")


@data_app.command("check")
def check_command(
    dataset: str = typer.Argument(
        ..., metavar="DIR", help="Dataset directory (reference or hub layout) or a bundled dataset name.",
        show_default=False,
    ),
    dependency: str | None = typer.Option(
        None, "--dependency", "-D", help="Override the library's dependency kind: resource or temporal."
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit with code 1 when any sample has an issue or any record is unusable."
    ),
    show: int = typer.Option(20, "--show", help="How many individual issues to print (0: only the summary)."),
    no_sampled: bool = typer.Option(
        False, "--no-sampled", help="Skip the check against each sample's sampled_nodes/sampled_links."
    ),
    as_json: bool = json_option(),
) -> None:
    """Load a dataset and run the rule critic on every sample; print a summary table of issue codes.

    Checks: tools exist and are used once, one step per node, n_tools, type vs shape (single/chain/dag),
    `<node-j>` references and types (resource), parameter names (temporal), links vs the tool graph, and
    nodes/links vs the sampled subgraph. Records that cannot be read as samples at all (broken JSON, no
    usable id, a field of the wrong type, a repeated id) are listed with file:line as `unusable`; the rest
    are still checked.

    Example:

        taskbench data check multimedia --strict

        taskbench data check ~/.cache/taskbench/data_huggingface --show 50
    """
    from rich.table import Table

    from ..dataset import load_dataset
    from ..engine.critics import ISSUE_CODES, check_dataset, issue_counts
    from ..graph.loaders import check_dependency

    check_dependency(dependency)
    ds = load_dataset(_dataset_dir(dataset), dependency=dependency)
    results = check_dataset(ds.samples, ds.library, ds.graph, dependency=dependency, sampled=not no_sampled)
    counts = issue_counts(results)
    flagged = sum(1 for issues in results.values() if issues)
    if as_json:
        print_json({"dataset": str(ds.root), "samples": len(ds.samples), "tools": len(ds.library),
                    "clean": len(ds.samples) - flagged, "flagged": flagged,
                    "counts": {**counts, **({"unusable": len(ds.problems)} if ds.problems else {})},
                    "unusable": [str(e) for e in ds.problems],
                    "issues": {sid: [{"code": i.code, "message": i.message} for i in issues]
                               for sid, issues in results.items() if issues}})
        if strict and (flagged or ds.problems):
            raise typer.Exit(1)
        return
    console = _console()
    unusable = f", {len(ds.problems)} unusable" if ds.problems else ""
    console.print(
        f"{ds.root}: {len(ds.samples)} samples, {len(ds.library)} tools ({dependency or ds.library.dependency}); "
        f"{len(ds.samples) - flagged} clean, {flagged} with issues{unusable}", markup=False,
    )
    if ds.problems:
        counts = {**counts, "unusable": len(ds.problems)}
    if counts:
        table = Table(title="Issues by code (samples affected)")
        table.add_column("code")
        table.add_column("samples", justify="right")
        table.add_column("meaning", overflow="fold")
        meaning = {**ISSUE_CODES, "unusable": "a record that cannot be read as a sample (listed with file:line)"}
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(code, str(n), meaning.get(code, ""))
        console.print(table)
        shown = 0
        for err in ds.problems:
            if shown >= show:
                break
            console.print(f"  unusable: {err}", markup=False)
            shown += 1
        for sample_id, issues in results.items():
            for issue in issues:
                if shown >= show:
                    break
                console.print(f"  {sample_id}  {issue.code}: {issue.message}", markup=False)
                shown += 1
        total = sum(len(v) for v in results.values()) + len(ds.problems)
        if show > 0 and total > shown:  # --show 0 asks for the summary alone
            console.print(f"  ... {total - shown} more (use --show N)")
    if strict and (flagged or ds.problems):
        raise typer.Exit(1)


@data_app.command("fetch")
def fetch_command(
    name: str = typer.Argument(..., metavar="NAME", help="What to download: 'taskbench' (the released TaskBench, "
                               "from the Hugging Face hub) or 'restbench' (RestBench, from RestGPT's GitHub "
                               "repository).", show_default=False),
    domain: str = typer.Option(
        "all", "--domain", help="taskbench: huggingface, multimedia, dailylifeapis or all; restbench: tmdb, "
        "spotify or all."
    ),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Download cache (default: taskbench: the huggingface_hub cache, "
        "~/.cache/huggingface; restbench: ~/.cache/taskbench/restbench, where the RestBench environments look)."
    ),
    revision: str | None = typer.Option(None, "--revision", help="Branch, tag or commit (taskbench: of the hub "
                                        "dataset; restbench: of RestGPT's repository, default the pinned "
                                        "release, whose SHA-256 hashes are checked)."),
    source: str | None = typer.Option(None, "--source", help="restbench: another base URL serving the "
                                      "repository's raw files as <URL>/<revision>/<path> (a mirror; default "
                                      "$TASKBENCH_RESTBENCH_URL, else raw.githubusercontent.com)."),
    force: bool = typer.Option(False, "--force", help="restbench: download again even when the cached files "
                               "check out."),
) -> None:
    """Download a released dataset, check it, cache it, and print where it is.

    taskbench: the released TaskBench (hub dataset microsoft/Taskbench); needs the optional extra:
    pip install "taskbench[hub]". The printed folders work as --data for other commands (the hub's
    tool_nodes/... names and user_requests.jsonl are understood; its parquet files need pyarrow). HF_ENDPOINT
    picks another hub.

    restbench: RestBench as released (MIT; 100 TMDB queries and the 54-operation TMDB spec, 57 Spotify queries
    and the 40-operation Spotify spec) with its LICENSE and a SOURCE.json of where and when. In the default
    cache, `agents eval --env restbench-tmdb` uses it (RestBench's queries instead of our own tasks);
    elsewhere, point $TASKBENCH_RESTBENCH_DIR at the printed folder. Offline, $TASKBENCH_RESTBENCH_DIR (or a
    shared/reference/restbench beside the checkout) is read directly and nothing is fetched.

    Files are cached; running it again is cheap.

    Example:

        taskbench data fetch taskbench --domain multimedia --cache-dir ~/.cache/taskbench

        taskbench data fetch restbench
    """
    from ..errors import ConfigError, did_you_mean

    known = ("taskbench", "restbench")
    what = name.lower()
    if what not in known:
        raise ConfigError(f"unknown dataset {name!r} to fetch ({did_you_mean(name, known)})")
    if what == "restbench":
        _fetch_restbench(domain, cache_dir, revision, source, force)
        return
    if source is not None or force:
        raise ConfigError("--source and --force are for `data fetch restbench` (the hub has HF_ENDPOINT)")
    from ..dataset.hub import fetch_taskbench, resolve_domains

    dirs = fetch_taskbench(resolve_domains(domain), cache_dir=cache_dir, revision=revision)
    for dom, path in dirs.items():
        typer.echo(f"{dom}\t{path}")


def _fetch_restbench(domain: str, cache_dir: Path | None, revision: str | None, source: str | None,
                     force: bool) -> None:
    """`data fetch restbench`: the files into the cache; one line per API on stdout (API, folder), what was
    checked on stderr."""
    from ..dataset.restbench import default_restbench_cache, fetch_restbench, restbench_apis

    result = fetch_restbench(restbench_apis(domain), cache_dir=cache_dir, revision=revision, source=source,
                             force=force)
    for api in result.counts:
        typer.echo(f"{api}\t{result.directory}")
    parts = "; ".join(f"{api}: {c.get('queries', 0)} queries, {c.get('operations', 0)} operations"
                      for api, c in result.counts.items())
    check = ("SHA-256 of the pinned release checked" if result.verified
             else f"revision {result.revision}: shape checked, not the pinned release (unverified)")
    fetched = f"downloaded {len(result.downloaded)} file(s)" if result.downloaded else "already cached"
    note = (f"RestBench ({result.licence} licence, LICENSE beside it): {parts}; {check}; {fetched}")
    if result.directory.resolve() != default_restbench_cache().resolve():
        note += f"; use it with TASKBENCH_RESTBENCH_DIR={result.directory}"
    typer.echo(f"taskbench: {note}", err=True)


@data_app.command("judge")
def judge_command(
    dirs: list[Path] = typer.Argument(..., metavar="DIR...", help="Generated dataset directories (one per method, "
                                      "for the paper's Table 2).", show_default=False),
    model: str = options.model_option(help="The judge, as provider/model."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Judge at most N samples per directory "
                                     "(stratified over single/chain/dag; the paper rated 50)."),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, max=MAX_CONCURRENCY, help="Requests in flight at once."),
    base_url: str | None = options.base_url_option(),
    api_key_env: str | None = options.api_key_env_option(),
    timeout: float | None = options.timeout_option(),
    max_retries: int | None = options.max_retries_option(),
    option: list[str] | None = options.provider_option(),
    no_cache: bool = options.no_cache_option(),
    output: Path | None = typer.Option(None, "--output", "-o", help="Also write the table here (.json or .md)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Score generated samples with an LLM judge: Naturalness, Complexity, Alignment (1-5), the human-evaluation
    dimensions of the TaskBench paper; prints its Table 2 per generation method, with the judge named.

    One schema-constrained call per sample, resumable (DIR/judge/<judge>.jsonl); the scores go into each
    sample's `scores` in data.json and the table into DIR/judge.json. Exit 1 when judge calls failed for good
    (rerun to retry them).

    Example:

        taskbench data judge gen/back-instruct gen/no-edges gen/self-instruct --model openai/gpt-4o-mini --limit 50
    """
    import json

    from rich.table import Table

    from ..dataset.jsonio import check_writable, write_text
    from ..engine.judge import judge
    from ..predict.progress import RichPredictDisplay
    from ..predict.runner import open_model

    if output is not None:  # before any model call: not a traceback after all of them
        check_writable(output)
    m = open_model(model, concurrency=concurrency, cache=not no_cache, base_url=base_url, api_key_env=api_key_env,
                   options=options.call_options(option, timeout, max_retries))
    display = RichPredictDisplay(make_console(stderr=True, quiet=quiet))
    try:
        with display:
            summary = judge([_dataset_dir(str(d)) for d in dirs], m, limit=limit, concurrency=concurrency,
                            display=display, close_model=True)
    finally:
        m.close()  # a no-op when judge closed it; releases it when reading the directories failed
    table = Table(title=f"LLM judge {summary.judge}: mean scores 1-5 (the paper's Table 2 dimensions)",
                  title_justify="left")
    for col in ("method", "n", "naturalness", "complexity", "alignment", "overall"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for method, row in summary.table.items():
        table.add_row(method, str(row["n"]), *(f"{row[k]:.2f}" for k in ("naturalness", "complexity", "alignment",
                                                                          "overall")))
    _console().print(table)
    if output is not None:
        if output.suffix == ".md":
            lines = [f"Judge: {summary.judge}", "", "| method | n | naturalness | complexity | alignment | overall |",
                     "|---|---|---|---|---|---|"]
            lines += [f"| {k} | {r['n']} | {r['naturalness']:.2f} | {r['complexity']:.2f} | {r['alignment']:.2f} | "
                      f"{r['overall']:.2f} |" for k, r in summary.table.items()]
            write_text(output, "\n".join(lines) + "\n")
        else:
            write_text(output, json.dumps({"judge": summary.judge, "table": summary.table}, indent=2) + "\n")
    if summary.unusable:
        typer.echo(f"taskbench: {summary.unusable} judge answers gave no scores (cut off or not JSON)", err=True)
    exit_if_calls_failed(summary.failed_calls, summary.selected, summary.errors, "judge calls")


def register(app: typer.Typer) -> None:
    """Add the `data` command group to the main app."""
    app.add_typer(data_app, name="data")
