"""`taskbench predict`: run one model on one dataset into a resumable predictions file."""

from __future__ import annotations

from pathlib import Path

import typer

from .console import exit_if_calls_failed, json_option, make_console, print_json, print_table, wide_option
from .options import (
    MAX_CONCURRENCY,
    MAX_SEED,
    api_key_env_option,
    base_url_option,
    call_options,
    endpoint_concurrency_option,
    max_retries_option,
    model_option,
    no_cache_option,
    provider_option,
    timeout_option,
)

DATA_HELP = "Dataset directory in the reference layout, or a bundled dataset name (huggingface, multimedia, dailylifeapis)."
EXECUTOR_HELP = (
    "Where predictions run: 'local' (this process) or 'ray' (sharded over Ray workers, merged in input order; "
    "extra [ray]). Same output, same resume semantics."
)
RAY_ADDRESS_HELP = "Ray cluster to join (auto, or HEAD:6379); default: start a private one on this machine."
WORKERS_HELP = "With --executor ray: shards run at once (default: the cluster's CPUs). --concurrency is per worker."


def base_urls(values: list[str] | None) -> str | list[str] | None:
    """``--base-url`` as given: None, one URL, or a list of replicas."""
    if not values:
        return None
    return values[0] if len(values) == 1 else list(values)


DEMOS_HELP = (
    "How demonstrations are chosen: 'fixed' (the reference scripts' demo ids) or 'retrieved' (per request, the "
    "most similar other samples of the dataset by BM25; never the sample itself or a near duplicate)."
)
SHORTLIST_HELP = (
    "Structured plan output: let the answer choose only among the N tools most relevant to the request (BM25) "
    "plus the demos' tools; 0 = every tool. The prompt still lists every tool."
)
PLAN_HELP = (
    "--plan (default): structured answers fill the bounded, step-aligned task plan (at most 10 steps, each with "
    "its tool and that tool's own arguments; see docs/embedded-model.md). --graph-schema: the reference "
    "task-graph shape (task_steps, task_nodes, task_links) as the schema."
)


def predict_command(
    data: str = typer.Option(..., "--data", "-d", help=DATA_HELP),
    model: str = model_option(),
    output: Path = typer.Option(..., "--output", "-o", help="Predictions file (JSON Lines); resumed if it exists."),
    shots: int = typer.Option(0, "--shots", min=0, max=3, help="Demonstrations in the prompt (0-3)."),
    demos: str = typer.Option("fixed", "--demos", help=DEMOS_HELP),
    shortlist: int = typer.Option(0, "--shortlist", min=0, help=SHORTLIST_HELP),
    plan: bool = typer.Option(True, "--plan/--graph-schema", help=PLAN_HELP),
    structured: bool = typer.Option(
        True, "--structured/--free",
        help="--structured (default): schema-constrained JSON, tool names restricted to the library. "
        "--free: plain text, JSON extracted from it (the reference behaviour).",
    ),
    reformat: bool = typer.Option(
        False, "--reformat", help="With --free: ask the model to rewrite an answer that did not parse."
    ),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, max=MAX_CONCURRENCY, help="Requests in flight at once."),
    limit: int | None = typer.Option(
        None, "--limit", min=0, help="Predict at most N samples, stratified over single/chain/dag; 0 = all."
    ),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="Sampling temperature."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0, help="Nucleus sampling mass."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=16, help="Most tokens per answer (default 1024; 512 for embedded models)."
    ),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Sampling seed sent to the backend."),
    base_url: list[str] | None = base_url_option(replicas=True),
    endpoint_concurrency: int | None = endpoint_concurrency_option(),
    api_key_env: str | None = api_key_env_option(),
    timeout: float | None = timeout_option(),
    max_retries: int | None = max_retries_option(),
    no_cache: bool = no_cache_option(),
    template: Path | None = typer.Option(None, "--template", help="Custom Jinja2 prompt template file."),
    option: list[str] | None = provider_option(),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    wide: bool = wide_option(),
    as_json: bool = json_option(),
    executor: str = typer.Option("local", "--executor", help=EXECUTOR_HELP),
    ray_address: str | None = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    workers: int | None = typer.Option(None, "--workers", min=1, help=WORKERS_HELP),
) -> None:
    """Predict task graphs for a dataset's requests with one model; resumable and crash-safe.

    Writes JSON Lines in the reference predictions format ({id, user_request, result}) plus raw text, parse
    error, finish reason and usage. Rerunning with the same -o skips the ids already written; a killed run
    loses nothing that was written. A call that fails for good (after --max-retries) is written in its place
    as a failure record and retried by the next run.

    Exit codes: 0 every sample has an answer; 1 some model calls failed for good (rerun to retry them);
    2 bad input or options; 130 interrupted.

    Example:

        taskbench predict --data multimedia --model llamacpp/qwen2.5-coder-0.5b -o preds/qwen.jsonl --shots 1 --limit 10

        taskbench predict --data data/dailylifeapis -m openai-compatible/Qwen/Qwen2.5-7B-Instruct --base-url @replicas.txt --executor ray --ray-address auto -c 16 -o preds/q7b.jsonl

        taskbench predict --data dailylifeapis -m llamacpp/qwen2.5-coder-1.5b -o preds/q15.jsonl --shots 2 --demos retrieved
    """

    from ..predict.progress import RichPredictDisplay, summary_table
    from ..run.executor import ExecutorSpec
    from ..run.predict import PredictSpec, predict_spec

    spec = PredictSpec(
        data=data, model=model, output=output, shots=shots, demos=demos, shortlist=shortlist, plan=plan,
        structured=structured, reformat=reformat, concurrency=concurrency, limit=limit, temperature=temperature,
        top_p=top_p, max_tokens=max_tokens, seed=seed, template=template, cache=not no_cache,
        base_url=base_urls(base_url), api_key_env=api_key_env,
        model_options=call_options(option, timeout, max_retries, endpoint_concurrency),
        executor=ExecutorSpec(executor, ray_address, workers),
    )  # the checks, the defaults and the executor choice live in the library: predict_spec(spec) is this command
    console = make_console(stderr=True, quiet=quiet)
    display = RichPredictDisplay(console)
    with display:
        summary = predict_spec(spec, display=display)
    from rich.markup import escape as rich_escape

    from ..predict.progress import SUMMARY_DROP_FIRST

    if as_json:
        print_json({**summary.model_dump(mode="json"), "done": summary.done})
    else:
        out = make_console()
        print_table(out, summary_table([summary]), wide=wide, keep=3, drop_first=SUMMARY_DROP_FIRST)
        for err in summary.errors:
            out.print("[red]failed[/red]", rich_escape(str(err)))
    exit_if_calls_failed(summary.failures, summary.selected, summary.errors)


def register(app: typer.Typer) -> None:
    """Add `predict` to the CLI."""
    app.command("predict")(predict_command)
