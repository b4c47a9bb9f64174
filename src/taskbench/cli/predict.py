"""`taskbench predict`: run one model on one dataset into a resumable predictions file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from .console import make_console

DATA_HELP = "Dataset directory in the reference layout, or a bundled dataset name (huggingface, multimedia, dailylifeapis)."
MODEL_HELP = "Model as provider/model, e.g. llamacpp/qwen2.5-coder-0.5b, openai/gpt-4o-mini, openai-compatible/NAME."
OPTION_HELP = "Provider option KEY=VALUE (VALUE parsed as JSON when it can be), repeatable, e.g. -O n_ctx=4096."
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


def parse_model_options(items: list[str] | None) -> dict[str, Any]:
    """``["k=v", ...]`` -> ``{k: json-or-string}``."""
    from ..errors import ConfigError

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--option expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def prompt_options(demos: str, shortlist: int, plan: bool) -> dict[str, Any]:
    """The PredictOptions fields of --demos, --shortlist and --plan/--graph-schema (checked)."""
    from ..errors import ConfigError

    if demos not in ("fixed", "retrieved"):
        raise ConfigError(f"--demos must be 'fixed' or 'retrieved', not {demos!r}")
    return {"demo_selection": demos, "shortlist": shortlist or None, "plan": plan}


def predict_command(
    data: str = typer.Option(..., "--data", help=DATA_HELP),
    model: str = typer.Option(..., "--model", "-m", help=MODEL_HELP),
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
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, help="Requests in flight at once."),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="Predict at most N samples, stratified over single/chain/dag."
    ),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling mass."),
    max_tokens: int = typer.Option(1024, "--max-tokens", help="Most tokens per answer."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed sent to the backend."),
    base_url: str | None = typer.Option(None, "--base-url", help="Server URL for openai-compatible models."),
    api_key_env: str | None = typer.Option(
        None, "--api-key-env", help="Name of the environment variable holding the API key."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    template: Path | None = typer.Option(None, "--template", help="Custom Jinja2 prompt template file."),
    option: list[str] | None = typer.Option(None, "--option", "-O", help=OPTION_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Predict task graphs for a dataset's requests with one model; resumable and crash-safe.

    Writes JSON Lines in the reference predictions format ({id, user_request, result}) plus raw text, parse
    error, finish reason and usage. Rerunning with the same -o skips the ids already written; a killed run
    loses nothing that was written.

    Example:

        taskbench predict --data multimedia --model llamacpp/qwen2.5-coder-0.5b -o preds/qwen.jsonl --shots 1 --limit 10

        taskbench predict --data dailylifeapis -m llamacpp/qwen2.5-coder-1.5b -o preds/q15.jsonl --shots 2 --demos retrieved
    """

    from ..errors import ConfigError
    from ..predict.progress import RichPredictDisplay, summary_table
    from ..predict.runner import PredictOptions, open_model, predict_file
    from ..run.resolve import resolve_data

    if reformat and structured:
        raise ConfigError("--reformat needs --free (structured output always parses)")
    options = PredictOptions(
        shots=shots, structured=structured, reformat=reformat, limit=limit, concurrency=concurrency,
        temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed,
        template=str(template) if template else None, **prompt_options(demos, shortlist, plan),
    )
    path = resolve_data(data)
    m = open_model(
        model, concurrency=concurrency, cache=not no_cache, base_url=base_url, api_key_env=api_key_env,
        options=parse_model_options(option),
    )
    console = make_console(stderr=True, quiet=quiet)
    display = RichPredictDisplay(console)
    try:
        with display:
            summary = predict_file(path, m, output, options, display=display, close_model=True)
    finally:
        m.close()  # no-op when predict_file closed it; releases it when loading the dataset failed
    out = make_console()
    out.print(summary_table([summary]))
    for err in summary.errors:
        out.print(f"[red]failed[/red] {err}")
    if summary.failures:
        out.print(f"{summary.failures} model call(s) failed; rerun the same command to retry them.")


def register(app: typer.Typer) -> None:
    """Add `predict` to the CLI."""
    app.command("predict")(predict_command)
