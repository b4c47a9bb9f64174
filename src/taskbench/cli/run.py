"""`taskbench run`: the main job - predict and evaluate models x datasets, print the leaderboard, write a run
directory (run log, report.md, report.html)."""

from __future__ import annotations

from pathlib import Path

import typer

from .console import make_console
from .predict import (
    BASE_URL_HELP,
    DEMOS_HELP,
    ENDPOINT_HELP,
    EXECUTOR_HELP,
    OPTION_HELP,
    PLAN_HELP,
    RAY_ADDRESS_HELP,
    RETRIES_HELP,
    SHORTLIST_HELP,
    TIMEOUT_HELP,
    WORKERS_HELP,
    base_urls,
    call_options,
    make_executor,
    prompt_options,
)

CLI_COLUMNS = ("dataset", "model", "samples", "n-F1", "e-F1", "v-F1", "NED", "parse fail", "call fail", "compat n-F1",
               "compat v-F1", "predict s")
"""Columns of the leaderboard printed at the end (report.md has them all)."""

DEFAULT_SHOTS = 2
"""Demonstrations in the default run (the embedded model, no --shots): measured on the released TaskBench gold
samples, the 0.5B model with 2 retrieved demos scored node F1 0.37 / 0.19 / 0.59 (huggingface / multimedia /
dailylifeapis) against 0.28 / 0.00 / 0.50 zero-shot, and zero-shot it sometimes walks the whole tool list
until the token limit (docs/embedded-model.md)."""

DEFAULT_SHORTLIST = 10
"""Tool shortlist of the default run: the answer chooses among the 10 tools most similar to the request plus
the demos' tools. Measured on the gold samples with 2 retrieved demos, the 0.5B model's node F1 went from
0.37 / 0.19 / 0.59 to 0.37 / 0.38 / 0.71; the shortlist kept 87% / 92% / 93% of the gold tools (all 86 gold
samples). Other models get every tool unless --shortlist is given: the recall is a ceiling for a strong model."""


def run_command(
    model: list[str] | None = typer.Option(
        None, "--model", "-m",
        help="Model(s) as provider/model, repeatable. Default: the embedded llamacpp/qwen2.5-coder-0.5b.",
    ),
    data: list[str] | None = typer.Option(
        None, "--data", "-d",
        help="Dataset directories or bundled names, repeatable. Default: huggingface, multimedia, dailylifeapis.",
    ),
    output: Path = typer.Option(
        Path("runs/default"), "--output", "-o", help="Run directory; an existing one is resumed."
    ),
    shots: int | None = typer.Option(
        None, "--shots", min=0, max=3,
        help=f"Demonstrations in the prompt (0-3); default {DEFAULT_SHOTS} for the default model, else 0.",
    ),
    demos: str | None = typer.Option(
        None, "--demos", help=f"{DEMOS_HELP} Default 'retrieved' for the default model, else 'fixed'."
    ),
    shortlist: int | None = typer.Option(
        None, "--shortlist", min=0, help=f"{SHORTLIST_HELP} Default {DEFAULT_SHORTLIST} for the default model, else 0."
    ),
    plan: bool = typer.Option(True, "--plan/--graph-schema", help=PLAN_HELP),
    limit: int | None = typer.Option(
        None, "--limit", min=0,
        help="Samples per dataset, stratified over single/chain/dag; 0 = all. Default: all, except with the "
        "default model, where it is 3 per dataset (one single, one chain, one DAG) so the whole main job fits in "
        "about 5 minutes on 2 cores.",
    ),
    structured: bool = typer.Option(
        True, "--structured/--free", help="Schema-constrained output (default) or free text + JSON extraction."
    ),
    reformat: bool = typer.Option(False, "--reformat", help="With --free: repair pass for unparseable answers."),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, help="Requests in flight per model."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", help="Most tokens per answer (default 1024; 512 for embedded models)."
    ),
    seed: int = typer.Option(0, "--seed", help="Sampling seed (and bootstrap seed)."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap replicates for strict CIs (0 = none)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    base_url: list[str] | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    endpoint_concurrency: int | None = typer.Option(None, "--endpoint-concurrency", min=1, help=ENDPOINT_HELP),
    api_key_env: str | None = typer.Option(
        None, "--api-key-env", help="Name of the environment variable holding the API key (openai and "
        "openai-compatible models); the key itself is never written anywhere.",
    ),
    timeout: float | None = typer.Option(None, "--timeout", min=0.1, help=TIMEOUT_HELP),
    max_retries: int | None = typer.Option(None, "--max-retries", min=0, help=RETRIES_HELP),
    option: list[str] | None = typer.Option(None, "--option", "-O", help=OPTION_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    executor: str = typer.Option("local", "--executor", help=EXECUTOR_HELP),
    ray_address: str | None = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    workers: int | None = typer.Option(None, "--workers", min=1, help=WORKERS_HELP),
    generate: int | None = typer.Option(
        None, "--generate", min=0,
        help="Generation stage: back-instruct this many samples (with the rule and LLM critics) from "
        "--generate-tools with the first model, into RUN_DIR/generated. Default 3 with the default model, else 0 "
        "(no stage).",
    ),
    generate_tools: str = typer.Option(
        "multimedia", "--generate-tools", help="Tool library of the generation stage: a bundled dataset name, a "
        "dataset directory or a tool file (TaskBench, OpenAI tools, MCP, OpenAPI).",
    ),
    agents: str | None = typer.Option(
        None, "--agents",
        help="Agents stage: comma-separated agents run with the first model on bundled offline TMDB tasks, into "
        "RUN_DIR/agents (code runs in the bwrap sandbox). Default 'conagents-auto,conagents-adaptive,react' with "
        "the default model, else none. 'none' turns it off.",
    ),
    agent_tasks: str | None = typer.Option(
        None, "--agent-tasks", help="Comma-separated task ids of the agents stage, from our bundled TMDB tasks "
        "tmdb-own-01 ... tmdb-own-20 (default tmdb-own-02,tmdb-own-05).",
    ),
) -> None:
    """Predict and evaluate models on datasets; print the leaderboard and write a run directory.

    With no arguments, all three capabilities on the embedded model llamacpp/qwen2.5-coder-0.5b: (1) scoring on
    the three bundled demo datasets, 3 per dataset, stratified (one single, one chain, one DAG), structured output
    (the bounded task plan), 2 demos retrieved per request, the tool choice shortlisted to 10 tools plus the
    demos' tools; (2) a generation of 3 samples from the multimedia tools with both critics; (3) ConAgents under
    both protocols against ReAct on 2 offline TMDB tasks (gold tools, 3 steps, 14 model calls per episode at most). The run directory holds run_log.json (config, versions,
    git revision, seeds, timings, usage, every prediction, strict and compat metrics, the stages' figures),
    report.md, report.html (self-contained, with plots), predictions/, metrics/, generated/ and agents/.
    Rerunning with the same -o resumes every part.

    Exit codes: 0 complete; 1 incomplete (some model calls failed for good, or a stage stopped on an error:
    the report says so, rerunning retries them); 2 bad input or options; 130 interrupted.

    Examples:

        taskbench run

        taskbench run --model llamacpp/qwen2.5-coder-0.5b --data multimedia --limit 0 --shots 1 -o runs/mm

        taskbench run -m openai/gpt-4o-mini -m openai-compatible/qwen --base-url http://127.0.0.1:8000/v1 -d dailylifeapis -o runs/cmp

        taskbench run -m openai-compatible/qwen --base-url http://n1:8000/v1 --base-url http://n2:8000/v1 --executor ray --ray-address auto -o runs/big
    """

    from ..errors import ConfigError
    from ..predict.progress import RichPredictDisplay, summary_table
    from ..predict.runner import PredictOptions
    from ..run.job import DEFAULT_LIMIT, DEFAULT_MODEL, default_max_tokens, run_benchmark
    from ..run.report import overview_header, overview_rows
    from ..run.resolve import BUNDLED_DEMO_DATASETS

    if reformat and structured:
        raise ConfigError("--reformat needs --free (structured output always parses)")
    models = list(model or [DEFAULT_MODEL])
    default_model = models == [DEFAULT_MODEL]
    if limit is None:
        limit = DEFAULT_LIMIT if default_model else 0
    if max_tokens is None:
        max_tokens = min(default_max_tokens(m) for m in models)
    if shots is None:
        shots = DEFAULT_SHOTS if default_model else 0
    if demos is None:
        demos = "retrieved" if default_model else "fixed"
    if shortlist is None:
        shortlist = DEFAULT_SHORTLIST if default_model else 0
    options = PredictOptions(
        shots=shots, structured=structured, reformat=reformat, limit=limit or None, concurrency=concurrency,
        temperature=temperature, max_tokens=max_tokens, seed=seed, **prompt_options(demos, shortlist, plan),
    )
    model_options = call_options(option, timeout, max_retries)
    if endpoint_concurrency is not None:
        model_options["endpoint_concurrency"] = endpoint_concurrency
    from ..run.stages import DEFAULT_AGENTS, DEFAULT_GENERATE

    if generate is None:
        generate = DEFAULT_GENERATE if default_model else 0
    stage_agents = _names(agents) if agents is not None else (list(DEFAULT_AGENTS) if default_model else [])
    tasks = _names(agent_tasks) if agent_tasks else None
    if stage_agents:
        from ..agents.config import parse_agent

        for name in stage_agents:  # a bad name is refused before any model is loaded
            parse_agent(name)
    runner = make_executor(executor, ray_address, workers)
    err = make_console(stderr=True, quiet=quiet)
    display = RichPredictDisplay(err)
    from ..engine.progress import RichGenerateDisplay

    stage_displays = {"generate": RichGenerateDisplay(err), "agents": RichPredictDisplay(err)}
    try:
        with display:
            log = run_benchmark(
                output, models=models, datasets=list(data or BUNDLED_DEMO_DATASETS), options=options,
                cache=not no_cache, model_options=model_options, bootstrap=bootstrap, seed=seed,
                display=display, base_url=base_urls(base_url), api_key_env=api_key_env, executor=runner,
                generate=generate, generate_tools=generate_tools, agents=stage_agents, agent_tasks=tasks,
                stage_displays=stage_displays,
            )
    finally:
        if runner is not None:
            runner.close()
    from rich.table import Table

    out = make_console()
    out.print(summary_table(display.summaries))
    table = Table(title="Leaderboard (overall, %; strict unless marked compat)", title_justify="left")
    head = overview_header()
    keep = [i for i, h in enumerate(head) if h in CLI_COLUMNS]
    for i in keep:
        table.add_column(head[i], justify="left" if i < 2 else "right")
    for row in overview_rows(log):
        table.add_row(*(row[i] for i in keep))
    out.print(table)
    from ..run.report import stage_sections

    for sec in stage_sections(log):
        st = Table(title=sec["title"], title_justify="left")
        for i, h in enumerate(sec["head"]):
            st.add_column(h, justify="left" if i == 0 and h == "agent" else "right")
        for row in sec["rows"]:
            st.add_row(*row)
        out.print(st)
        for t in sec["text"][:1]:
            out.print(t.replace("**", ""), markup=False)
    out.print(f"run directory: {output} (report.md, report.html, run_log.json) · {log.seconds:.1f} s")
    if log.status == "incomplete":
        failed = sum(e.failures for e in log.entries)
        if failed:
            first = next((e.error for e in log.entries if e.error), "unknown")
            typer.echo(f"taskbench: run incomplete: {failed} model calls failed for good (first: {first}); "
                       f"rerun the same command to retry them", err=True)
        for stage in log.stages:
            if stage.status == "incomplete":
                typer.echo(f"taskbench: run incomplete: the {stage.kind} stage is incomplete: {stage.error}; "
                           f"rerun the same command to retry it", err=True)
            elif stage.status != "complete":
                typer.echo(f"taskbench: run incomplete: the {stage.kind} stage failed: {stage.error}; fix that and "
                           f"rerun (what is done is kept)", err=True)
        raise typer.Exit(1)


def _names(text: str) -> list[str]:
    """'a,b' -> ['a', 'b']; 'none' or '' -> []."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    return [] if items in ([], ["none"]) else items


def register(app: typer.Typer) -> None:
    """Add `run` to the CLI."""
    app.command("run")(run_command)
