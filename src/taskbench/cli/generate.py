"""`taskbench generate`: the Back-Instruct data engine, tool graph in, benchmark directory out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from .console import exit_if_calls_failed, json_option, make_console, print_json, print_table, wide_option
from .options import (
    MAX_CONCURRENCY,
    MAX_SEED,
    PANEL,
    api_key_env_option,
    base_url_option,
    call_options,
    max_retries_option,
    model_option,
    no_cache_option,
    provider_option,
    timeout_option,
)
from .predict import RAY_ADDRESS_HELP, WORKERS_HELP


def generate_command(
    tools: Path | None = typer.Option(
        None, "--tools", help="A tool library ({format_titles}), a dataset directory or a bundled dataset name; its tool graph is built.", show_default=False),
    graph: Path | None = typer.Option(
        None, "--graph", help="A tool graph (graph_desc.json, e.g. from `taskbench graph build`).", show_default=False),
    output: Path | None = typer.Option(None, "--output", "-o", show_default=False,
                                       help="Output directory (the reference layout); resumed if it exists."),
    out_alias: Path | None = typer.Option(None, "--out", hidden=True, help="Old name of --output (one release)."),
    n: int | None = typer.Option(None, "--n", "-n", min=0, help="Plan entries to generate (samples attempted)."),
    model: str | None = model_option(required=False),
    seed: int | None = typer.Option(None, "--seed", "-s", min=0, max=MAX_SEED, help="Plan seed (default 0): the same seed, the same plan."),
    method: str | None = typer.Option(
        None, "--method", help="back-instruct (default: one call, as released), two-stage (the paper's equations 1 "
        "and 2), no-edges (edges withheld), self-instruct (the model picks tools from the whole library), executed "
        "(tasks over --env: calls sampled and made first, arguments from the environment's own data, the checker "
        "from what the calls returned, the model writes the request last; writes tasks.jsonl)."),
    mode_weights: str | None = typer.Option(
        None, "--mode-weights", help="single,chain,dag weights (default 3,7,8), or 'chain=1,dag=1'."),
    size_weights: str | None = typer.Option(
        None, "--size-weights", help="Tool-count weights for chain/dag, e.g. '2=1,3=1' (default 2..10 = "
        ".1,.2,.3,.2,.1,.05,.025,.025,.025; a dag has at least 3)."),
    critic_model: str | None = typer.Option(
        None, "--critic-model", help="A separate LLM critic (provider/model): one more call per answered sample. "
        "Default: the generator's own check_by_teacher."),
    check: bool | None = typer.Option(
        None, "--check/--no-check", help="Ask for the template's check_by_teacher self-check (default: on)."),
    guided: bool | None = typer.Option(
        None, "--guided/--free", help="Guided (default for back-instruct and two-stage): the answer schema fixes "
        "the sampled nodes, in a topological order, and the sampled links; the model writes the request, steps "
        "and argument values. Free: the model writes the graph too (the released engine)."),
    keep: str = typer.Option("both", "--keep", help="Critics a sample must pass for data.json: both, rule, llm, none."),
    dedup: str = typer.Option("flag", "--dedup", help="Near-duplicate requests: flag (duplicate_of), drop (to "
                              "data_error.json) or off."),
    dedup_threshold: float = typer.Option(90.0, "--dedup-threshold", min=1, max=100,
                                          help="Similarity 0-100 (rapidfuzz token_sort_ratio) from which requests "
                                          "count as near duplicates."),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, max=MAX_CONCURRENCY, help="Samples in flight at once."),
    temperature: float | None = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature (default 0.7, as the "
                                             "reference engine)."),
    top_p: float | None = typer.Option(None, "--top-p", min=0.0, max=1.0, help="Nucleus sampling mass (default 1.0)."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", min=64, help="Most tokens per answer (default 2048); "
                                          "an answer cut off here is a failed attempt."),
    base_url: str | None = base_url_option(),
    critic_base_url: str | None = typer.Option(None, "--critic-base-url", help="Server URL of the critic model.",
                                               rich_help_panel=PANEL),
    api_key_env: str | None = api_key_env_option(),
    timeout: float | None = timeout_option(),
    max_retries: int | None = max_retries_option(),
    no_cache: bool = no_cache_option(),
    option: list[str] | None = provider_option(),
    env: str | None = typer.Option(
        None, "--env", help="An executable environment of these tools (mcp:<command>, ...): its state (tables, "
        "files) goes into the prompt, and each sample's gold graph is run in it; one that fails is rejected "
        "(the exec critic). The runs change the environment: point it at a copy of your data.",
        show_default=False),
    fmt: str = typer.Option("auto", "--format", "-f", help="Format of --tools: {formats}."),
    dependency: str | None = typer.Option(None, "--dependency", "-D", help="Override: resource or temporal."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    wide: bool = wide_option(),
    as_json: bool = json_option(),
    executor: str = typer.Option(
        "local", "--executor", help="Where the plan entries run: 'local' (this process) or 'ray' (sharded over Ray "
        "workers by plan entry; critics and near-duplicates decided after the merge: the same directory)."),
    ray_address: str | None = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    workers: int | None = typer.Option(None, "--workers", min=1, help=WORKERS_HELP),
) -> None:
    """Generate a benchmark from a tool graph with the Back-Instruct data engine (TaskBench paper, section 2.3).

    The seeded sampling plan (as `taskbench sample`) gives N subgraphs; for each, the model writes the task
    steps, a self-contained user request and the tool invocation graph, schema-constrained (tool names,
    each tool's argument names, array lengths), with its check_by_teacher self-check. Critics: the rule critic
    (nodes and links equal the subgraph's; arguments fit the tools) and the LLM critic. Writes DIR in the
    reference layout: data_raw.json (every attempt), data.json + user_requests.json (samples passing --keep),
    data_error.json (the rest, with reasons), tool_desc.json, graph_desc.json, statistics.json (pass rates by
    mode and size), header.json (the run header: the arguments).

    Rerunning the same command generates only what is not done yet (a killed run loses nothing written; failed
    calls are retried). The directory remembers its arguments: another --seed, --method, --model, weights or
    graph is refused; a larger --n extends the plan; `taskbench generate -o DIR` alone resumes with the
    recorded arguments; another --keep or --dedup re-filters without a model call.

    Exit codes: 0 every plan entry has an answer (whatever the critics said); 1 some model calls failed for
    good (rerun to retry them); 2 bad input or options; 130 interrupted.

    Example:

        taskbench generate --tools multimedia --output gen/mm --n 30 --model llamacpp/qwen2.5-coder-0.5b

        taskbench generate --graph tmdb_graph.json -o gen/tmdb -n 200 -m openai-compatible/Qwen2.5-7B-Instruct --base-url http://127.0.0.1:8000/v1 -c 16 --method two-stage

        taskbench generate --graph sqlite_graph.json --env "mcp:mcp-server-sqlite --db-path shop.db" -o gen/shop -n 20 -m llamacpp/qwen2.5-coder-0.5b

        taskbench generate --tools dailylifeapis -o /shared/gen/daily -n 5000 -m openai-compatible/qwen7b --base-url http://gpu1:8000/v1 --executor ray --ray-address auto -c 16
    """
    from ..engine.progress import RichGenerateDisplay, statistics_table
    from ..predict.progress import RichPredictDisplay
    from ..run.executor import ExecutorSpec
    from ..run.generate import EXECUTED, GenerateSpec, generate_spec

    spec = GenerateSpec(
        output=output or out_alias, tools=tools, graph=graph, n=n, model=model, seed=seed, method=method,
        mode_weights=mode_weights, size_weights=size_weights, critic_model=critic_model, check=check, guided=guided,
        keep=keep, dedup=dedup, dedup_threshold=dedup_threshold, concurrency=concurrency, temperature=temperature,
        top_p=top_p, max_tokens=max_tokens, cache=not no_cache, base_url=base_url, critic_base_url=critic_base_url,
        api_key_env=api_key_env, model_options=call_options(option, timeout, max_retries), env=env, format=fmt,
        dependency=dependency, executor=ExecutorSpec(executor, ray_address, workers),
    ).resolved()  # the recorded arguments, the defaults, the checks: generate_spec(spec) is this command
    console = make_console(stderr=True, quiet=quiet)
    if spec.method == EXECUTED:
        progress = RichPredictDisplay(console)
        with progress:
            executed = generate_spec(spec, display=progress)
        _print_executed(executed)
        return
    display = RichGenerateDisplay(console)
    with display:
        summary = generate_spec(spec, display=display)
    out = Path(str(spec.output))
    options = spec.options()
    stats = summary.statistics
    if as_json:
        print_json(stats)
        exit_if_calls_failed(summary.failed_calls, summary.planned, summary.errors)
        return
    from ..report.tables import why_not_kept

    screen = make_console()
    table = statistics_table(stats, title=f"{out}: {summary.method} · {summary.model}"
                             + (f" · critic {summary.critic_model}" if summary.critic_model else ""))
    print_table(screen, table, wide=wide, keep=1, drop_first=STATISTICS_DROP_FIRST,
                more="--wide shows them; statistics.json has every figure")
    grown = f" (plan extended from {summary.extended_from})" if summary.extended_from is not None else ""
    screen.print(
        f"{summary.planned} planned{grown}: {summary.skipped} done before, {summary.written} written now, "
        f"{summary.failed_calls} failed calls; {stats.get('kept', 0)} kept in data.json (--keep {options.keep}), "
        f"{summary.calls} calls ({summary.cache_hits} cached), {summary.prompt_tokens:,}/"
        f"{summary.completion_tokens:,} tokens, {summary.seconds:.1f} s", markup=False, highlight=False
    )
    why = why_not_kept(stats.get("reasons_by_critic") or {})
    if why:
        rejected = int(stats.get("answered", 0)) - int(stats.get("kept", 0))
        screen.print(f"not kept ({rejected}), by critic: {why} (each sample's reasons: {out / 'data_error.json'})",
                     markup=False, highlight=False)
        if not stats.get("kept"):
            screen.print(f"to keep them anyway: taskbench generate -o {out} --keep none (no model call)",
                         markup=False, highlight=False)
    exit_if_calls_failed(summary.failed_calls, summary.planned, summary.errors)


def _print_executed(summary: Any) -> None:
    """What ``generate --method executed`` did (its statistics are in the output directory)."""
    stats = summary.statistics
    out = summary.output
    screen = make_console()
    dropped = ", ".join(f"{k} {v}" for k, v in summary.dropped.items()) or "none"
    refused = ", ".join(f"{k} {v}" for k, v in stats.get("requests_refused", {}).items()) or "none"
    screen.print(f"{out}: {summary.entries} entries, {summary.kept} tasks kept in {Path(out) / 'tasks.jsonl'} "
                 f"({stats.get('operations_used', 0)} operations; {dict(stats.get('types', {}))}); dropped: {dropped}; "
                 f"requests refused: {refused}; {summary.seconds:.0f} s", highlight=False)
    exit_if_calls_failed(summary.failed, summary.entries, [])


STATISTICS_DROP_FIRST = ("request words", "avg links", "avg nodes", "dups", "attempts", "gold executed")
"""Columns of the critic table that give way first at a narrow width: per group how many were planned, what each
critic passed and how many were kept stay."""


def register(app: typer.Typer) -> None:
    """Add `generate` to the CLI."""
    app.command("generate")(generate_command)
