"""`taskbench run`: the main job - predict and evaluate models x datasets, print the leaderboard, write a run
directory (run log, report.md, report.html)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from .console import make_console
from .options import (
    MAX_CONCURRENCY,
    MAX_REPLICATES,
    MAX_SEED,
    api_key_env_option,
    base_url_option,
    endpoint_concurrency_option,
    max_retries_option,
    model_option,
    no_cache_option,
    provider_option,
    timeout_option,
)
from .predict import (
    DEMOS_HELP,
    EXECUTOR_HELP,
    PLAN_HELP,
    RAY_ADDRESS_HELP,
    SHORTLIST_HELP,
    WORKERS_HELP,
    base_urls,
)

CLI_COLUMNS = ("dataset", "model", "samples", "n-F1", "e-F1", "v-F1", "NED", "parse fail", "call fail", "compat n-F1",
               "compat v-F1", "predict s")
"""Columns of the leaderboard printed at the end (report.md has them all)."""

# the help names run/spec.py's defaults; importing taskbench.run here would load the data model on every
# command's start (tests/test_run_spec.py checks these agree)
DEFAULT_OUTPUT = Path("runs/default")
DEFAULT_SHOTS = 2
DEFAULT_SHORTLIST = 10


def run_command(
    model: list[str] | None = model_option(
        required=False,
        help="Model(s) as provider/model, repeatable. Default: $TASKBENCH_MODEL, else the embedded "
        "llamacpp/qwen2.5-coder-0.5b.",
    ),
    data: list[str] | None = typer.Option(
        None, "--data", "-d",
        help="Dataset directories or bundled names, repeatable. Default: huggingface, multimedia, dailylifeapis.",
    ),
    output: Path = typer.Option(
        DEFAULT_OUTPUT, "--output", "-o", help="Run directory; an existing one is resumed."
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
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, max=MAX_CONCURRENCY, help="Requests in flight per model."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="Sampling temperature."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", help="Most tokens per answer (default 1024; 512 for embedded models)."
    ),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Sampling seed (and bootstrap seed)."),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=0, max=MAX_REPLICATES,
                                   help="Bootstrap replicates for strict CIs (0 = none)."),
    no_cache: bool = no_cache_option(),
    base_url: list[str] | None = base_url_option(replicas=True),
    endpoint_concurrency: int | None = endpoint_concurrency_option(),
    api_key_env: str | None = api_key_env_option(),
    timeout: float | None = timeout_option(),
    max_retries: int | None = max_retries_option(),
    option: list[str] | None = provider_option(),
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
        "dataset directory or a tool file ({format_titles}).",
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

    from ..predict.progress import RichPredictDisplay
    from ..run.executor import ExecutorSpec
    from ..run.job import run_benchmark
    from ..run.spec import RunSpec
    from .options import parse_model_options

    spec = RunSpec(
        models=list(model) if model else None, datasets=list(data) if data else None, output=output, shots=shots,
        demos=demos, shortlist=shortlist, plan=plan, limit=limit, structured=structured, reformat=reformat,
        concurrency=concurrency, temperature=temperature, max_tokens=max_tokens, seed=seed, bootstrap=bootstrap,
        cache=not no_cache, base_url=base_urls(base_url), endpoint_concurrency=endpoint_concurrency,
        api_key_env=api_key_env, timeout=timeout, max_retries=max_retries, model_options=parse_model_options(option),
        generate=generate, generate_tools=generate_tools, agents=_names(agents) if agents is not None else None,
        agent_tasks=_names(agent_tasks) if agent_tasks else None,
        executor=ExecutorSpec(executor, ray_address, workers),
    ).resolved()  # defaults, checks, executor choice: RunSpec; run_benchmark(RunSpec()) is this command
    err = make_console(stderr=True, quiet=quiet)
    display = RichPredictDisplay(err)
    from ..engine.progress import RichGenerateDisplay

    stage_displays = {"generate": RichGenerateDisplay(err), "agents": RichPredictDisplay(err)}
    with display:
        log = run_benchmark(spec, display=display, stage_displays=stage_displays)

    _print_results(log, output, display.summaries)
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


REPORT_HAS = "report.md and run_log.json have them"
"""Where the columns a narrow terminal leaves out of `run`'s tables are."""

RUN_DROP_FIRST = ("compat v-F1", "predict s", "parse fail", "compat n-F1", "v-F1", "NED", "e-F1")
"""Leaderboard columns left out first when the terminal is narrow (dataset, model, samples, n-F1 stay)."""


def _print_results(log: Any, output: Path, summaries: Any) -> None:
    """The end of a run on stdout: predictions, leaderboard, verdict, small-n warning, glossary, stages, and
    the next commands with the run's real paths; every table fitted to the terminal (columns left out say so)."""
    from rich.table import Table

    from ..predict.progress import SUMMARY_DROP_FIRST, summary_table
    from ..report.tables import fit_width
    from ..run.report import explanations, next_commands, overview_header, overview_rows, stage_sections

    out = make_console()
    width = out.width
    out.print(fit_width(summary_table(summaries), width, keep=3, drop_first=SUMMARY_DROP_FIRST,
                        more=REPORT_HAS))
    table = Table(title="Leaderboard (overall, %; strict unless marked compat)", title_justify="left")
    head = overview_header()
    from ..eval.metrics import headline_added

    added = {m.label for m in headline_added()}  # an added headline metric is printed too
    keep = [i for i, h in enumerate(head) if h in CLI_COLUMNS or h in added]
    for i in keep:
        table.add_column(head[i], justify="left" if i < 2 else "right")
    for row in overview_rows(log):
        table.add_row(*(row[i] for i in keep))
    shown = [head[i] for i in keep]
    out.print(fit_width(table, width, keep=3, drop_first=RUN_DROP_FIRST, more=REPORT_HAS))
    notes = explanations(log)
    for v in notes["verdicts"]:
        out.print(f"Verdict: {v}", markup=False, highlight=False)
    for w in notes["warnings"]:
        out.print(f"Warning: {w}", style="yellow", markup=False, highlight=False)
    labels = {h.removeprefix("compat ") for h in shown}
    for g in notes["glossary"]:
        if g.split(":")[0] in labels:
            out.print(f"  {g}", style="dim", markup=False, highlight=False)
    for sec in stage_sections(log, output):
        st = Table(title=sec["title"], title_justify="left")
        for i, h in enumerate(sec["head"]):
            st.add_column(h, justify="left" if i == 0 and h == "agent" else "right")
        for row in sec["rows"]:
            st.add_row(*row)
        out.print(fit_width(st, width, keep=1, more=REPORT_HAS))
        for t in sec["text"][:1] + sec["why"]:
            out.print(t.replace("**", ""), markup=False, highlight=False)
    resumed = f" · resumed {log.resumed} time{'s' if log.resumed != 1 else ''}" if log.resumed else ""
    out.print(f"run directory: {output} (report.md, report.html, run_log.json) · {log.seconds:.1f} s{resumed}",
              markup=False, highlight=False)
    out.print("next:", markup=False)
    for c in next_commands(log, output):
        out.print(f"  {c}", markup=False, highlight=False, soft_wrap=True)  # a command stays one line to copy


def _names(text: str) -> list[str]:
    """'a,b' -> ['a', 'b']; 'none' or '' -> []."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    return [] if items in ([], ["none"]) else items


def register(app: typer.Typer) -> None:
    """Add `run` to the CLI."""
    app.command("run")(run_command)
