"""`taskbench agents eval|show|ratings|export-sft|span-data|distill|distill-eval|compare|plot`: run ConAgents and
the baselines in an environment, read one trajectory, the human ratings of a run, export and build distillation
data, train and score role students, compare two runs, plot the paper's analyses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from .console import is_stdout, json_option, make_console, print_json, print_table, wide_option
from .options import (
    MAX_CONCURRENCY,
    MAX_REPLICATES,
    MAX_SEED,
    PANEL,
    api_key_env_option,
    base_url_option,
    max_retries_option,
    model_option,
    no_cache_option,
    timeout_option,
)
from .predict import RAY_ADDRESS_HELP

agents_app = typer.Typer(
    name="agents",
    help="Tool-using agents in an environment: ConAgents (grounding, execution, review; automatic and adaptive "
    "protocols) and the paper's baselines (ReAct, a code agent, plan-then-execute, Reflexion, ReAct@N, DFSDT and "
    "ToolLLM@N, RestGPT, alpha-UMi); their trajectories and metrics.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

AGENTS_HELP = ("Agents, comma-separated: {agents} (ConAgents variants: conagents-auto-no-plan-review, ...-a2b4 "
               "for alpha=2 beta=4).")


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


@agents_app.command("eval")
def eval_command(
    env: str = typer.Option(..., "--env", "-e", help="Environment: restbench-tmdb, restbench-spotify, "
                            "taskbench-huggingface|multimedia|dailylifeapis, or mcp:COMMAND (an MCP server)."),
    agent: list[str] = typer.Option(..., "--agent", "-a", help=AGENTS_HELP),
    model: str = model_option(help="Model (provider/model) of every role without its own."),
    model_grounding: str | None = typer.Option(None, "--model-grounding", help="Model of the grounding agent "
                                               "(a SPAN student: llamacpp/BASE+ADAPTER_DIR, see `agents distill`)."),
    model_execution: str | None = typer.Option(None, "--model-execution", help="Model of the execution agent."),
    model_review: str | None = typer.Option(None, "--model-review", help="Model of the review agent."),
    model_react: str | None = typer.Option(None, "--model-react", help="Model of ReAct (a ReAct student: "
                                           "llamacpp/BASE+ADAPTER_DIR trained on the same tasks, for a fair "
                                           "comparison with ConAgents' students)."),
    students: bool = typer.Option(False, "--students", help="Each ConAgents role and ReAct use its student in "
                                  "taskbench/bundled/students (LoRA adapters of llamacpp/qwen2.5-coder-0.5b trained on "
                                  "generated REST tasks by `make students`, docs/distill.md); a role without one plays "
                                  "the base, and the run's header says which model played which role. --model must "
                                  "be that base; --model-ROLE still overrides one role."),
    tools: str = typer.Option("gold+10", "--tools", help="Tools offered: gold | gold+10 (10 seeded random "
                              "distractors, the paper's setting) | all."),
    seeds: int = typer.Option(1, "--repeats", min=1, max=1000, help="Episodes per (agent, task), with seeds 0..K-1 (see "
                              "`agents show --seed`); gives pass^k (use --temperature > 0, or the episodes repeat)."),
    seeds_alias: int | None = typer.Option(None, "--seeds", min=1, max=1000, hidden=True, help="Old name of --repeats."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N tasks of the environment."),
    task: list[str] | None = typer.Option(None, "--task", "-t", help="Only these task ids (comma-separated, repeatable)."),
    tasks_file: Path | None = typer.Option(None, "--tasks", help="Tasks from this JSON Lines file instead of the "
                                           "environment's own: {id, query, gold_path, setup, checker} a line "
                                           "(any environment, e.g. mcp:...; see docs/mcp.md), or from a dataset "
                                           "directory that `generate --env` (or `review --export`) wrote: one "
                                           "task per sample.", show_default=False),
    task_set: str | None = typer.Option(None, "--task-set", help="RestBench: restbench | own | all | auto "
                                        "(default auto: RestBench's queries when its files are found)."),
    output: Path = typer.Option(..., "--output", "-o", help="Run directory (resumed if it exists)."),
    alpha: int = typer.Option(3, "--alpha", min=0, max=20, help="Planning-review calibration turns (conagents-auto)."),
    beta: int = typer.Option(3, "--beta", min=0, max=20, help="Execution-review calibration turns."),
    ablation: list[str] | None = typer.Option(None, "--ablation", help="Also run ConAgents variants: "
                                              "no-plan-review, no-exec-review, compiler-feedback, fault-route (comma-separated)."),
    sweep_turns: str | None = typer.Option(None, "--sweep-turns", help="Also run ConAgents with the turn limit(s) "
                                           "1..5: alpha, beta or both (the paper's Figure 3)."),
    max_steps: int = typer.Option(8, "--max-steps", min=1, help="Step cap per episode (plan/act steps)."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="Sampling temperature."),
    retry_temperature: float = typer.Option(0.7, "--retry-temperature", min=0.01, max=2.0, help="react@N, "
                                            "toolllm@N, reflexion: the least temperature of trials 2..N (each "
                                            "trial also samples with its own seed; trial 1 keeps --temperature)."),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, max=MAX_CONCURRENCY, help="Episodes at once "
                                    "(one environment each; an MCP server's data is copied per episode, and a server "
                                    "whose data cannot be copied is refused above 1 for tasks with a set-up)."),
    unsafe_local: bool = typer.Option(False, "--unsafe-local", help="Run agent code WITHOUT confinement where "
                                      "bwrap is missing (only for code you would run yourself)."),
    base_url: str | None = base_url_option(),
    api_key_env: str | None = api_key_env_option(),
    timeout: float | None = timeout_option(),
    max_retries: int | None = max_retries_option(),
    option: list[str] | None = typer.Option(None, "--option", "-O", rich_help_panel=PANEL, help="Provider option KEY=VALUE, e.g. "
                                            "-O n_threads=1 (repeatable)."),
    no_cache: bool = no_cache_option(),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=0, max=MAX_REPLICATES,
                                   help="Bootstrap replicates of the CIs (0: none)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    wide: bool = wide_option(),
    as_json: bool = json_option(),
    executor: str = typer.Option(
        "local", "--executor", help="Where episodes run: 'local' (this process) or 'ray' (sharded over Ray workers "
        "by episode, each worker with its own environments and sandboxes; metrics after the merge)."),
    ray_address: str | None = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    workers: int | None = typer.Option(None, "--workers", min=1, help="With --executor ray: shards run at once "
                                       "(default: the cluster's CPUs). --concurrency is per worker."),
) -> None:
    """Run agents on an environment's tasks and score them; resumable and crash-safe.

    Every (agent, task, seed) is one episode: its trajectory is written event by event to
    OUTPUT/trajectories/AGENT/TASK__sSEED.jsonl, its record to OUTPUT/episodes.jsonl, and OUTPUT/metrics.json
    holds per agent the success rate (the environment's checker), three correct-path rates (F1, the
    paper's definition; LCS, the authors' code; gold path contained, RestBench), what review did (revisions,
    reroutes, retries), extra calls on successes, turns, tokens, tokens per solved task, seconds,
    bootstrap CIs, pass^k, a paired comparison of every two agents, a per-task table and the comparison
    table printed at the end. A rerun with the same -o resumes: finished episodes are kept, interrupted ones
    are run again, episodes whose model calls failed for good are retried.

    Exit codes: 0 every episode finished; 1 some episodes crashed (a model call failed for good, or the agent or
    the checker broke: each counts as a failure in every rate; rerun to retry them); 2 bad input or options, or
    no sandbox for the code agents (see --unsafe-local); 130 interrupted.

    Examples:

        taskbench agents eval --env restbench-tmdb --agent conagents-auto,conagents-adaptive,react --model llamacpp/qwen2.5-coder-0.5b --tools gold+10 --limit 20 -o runs/tmdb -O n_threads=1

        taskbench agents eval --env taskbench-multimedia --agent conagents-auto --ablation no-plan-review,compiler-feedback --model openai/gpt-4o-mini -o runs/mm

        taskbench agents eval --env restbench-tmdb --agent conagents-auto,react --model openai-compatible/qwen7b --base-url http://gpu1:8000/v1 --executor ray --ray-address auto -c 4 -o /shared/runs/tmdb
    """
    from ..predict.progress import RichPredictDisplay
    from ..report.agents import mechanism_markdown, paired_markdown
    from ..run.agents import AgentsSpec, agents_eval_spec
    from ..run.executor import ExecutorSpec
    from .options import call_options

    role_models = {r: m for r, m in (("grounding", model_grounding), ("execution", model_execution),
                                     ("review", model_review), ("react", model_react)) if m}
    spec = AgentsSpec(
        env=env, agents=agent, model=model, output=output, role_models=role_models, students=students, tools=tools,
        repeats=seeds_alias or seeds, limit=limit, task_ids=task, tasks_file=tasks_file, task_set=task_set,
        alpha=alpha, beta=beta, ablations=ablation or (), sweep=sweep_turns, max_steps=max_steps,
        temperature=temperature, retry_temperature=retry_temperature, concurrency=concurrency,
        unsafe_local=unsafe_local, bootstrap=bootstrap, cache=not no_cache, base_url=base_url,
        api_key_env=api_key_env, model_options=call_options(option, timeout, max_retries),
        executor=ExecutorSpec(executor, ray_address, workers),
    )  # the run's config, the checks and the executor choice live in the library: agents_eval_spec(spec) is this
    from pydantic import ValidationError

    from ..errors import options_error

    try:
        spec.config()  # a bad option fails before the progress display starts
    except ValidationError as exc:  # a value the flags let through: one line naming the flag
        raise options_error(exc) from None
    console = make_console(stderr=True, quiet=quiet)
    display = RichPredictDisplay(console)
    with display:
        result = agents_eval_spec(spec, display=display)
    if as_json:
        print_json(result.metrics)
        _exit_if_failed(result)
        return
    out = make_console()
    _print_comparison(out, result.metrics, "Agents (rates in %, means per episode)", wide)
    _print_failures(out, result.metrics)
    mech = mechanism_markdown(result.metrics)
    if mech:
        out.print("\nwhat review did:\n" + mech, markup=False, highlight=False)
    paired = paired_markdown(result.metrics)
    if paired:
        out.print("\npaired (A - B, same tasks):\n" + paired, markup=False, highlight=False)
    out.print(f"\n{result.episodes} episodes ({result.skipped} from an earlier run), {result.seconds:.1f} s; "
              f"metrics: {Path(result.output) / 'metrics.json'}", highlight=False)
    _exit_if_failed(result)


def _exit_if_failed(result: Any) -> None:
    """Exit 1 with one line when episodes' model calls failed for good."""
    if result.failed:
        from ..envs.tasks import SETUP_FAILED

        errors = [e.split(": ", 1)[-1] for e in result.errors]
        setup = [e for e in errors if e.startswith(SETUP_FAILED)]
        if setup:  # the task file's set-up, not the model: rerunning gives the same
            typer.echo(f"taskbench: episodes failed because a task's set-up failed ({setup[0]}); fix the task file "
                       "(or the server's data), then rerun", err=True)
            raise typer.Exit(2)
        first = errors[0] if errors else "unknown"
        typer.echo(f"taskbench: {result.failed} of {result.episodes} episodes crashed (a model call failed for good, "
                   f"or the agent or the checker broke; first: {first}); they count as failures in every rate; "
                   "rerun the same command to retry them", err=True)
        raise typer.Exit(1)


@agents_app.command("show")
def show_command(
    run: Path = typer.Argument(..., help="A run directory of `taskbench agents eval`, or one trajectory file."),
    task: str | None = typer.Option(None, "--task", "-t", help="Task id to show (default: list the episodes)."),
    agent: str | None = typer.Option(None, "--agent", "-a", help="Agent of the episode (default: the first)."),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Seed of the episode."),
    full: bool = typer.Option(False, "--full", help="Also print every prompt sent to the models."),
    as_json: bool = json_option(),
) -> None:
    """Print one trajectory readably: plans, code, tool calls, reviews, the answer and the verdict.

    Without --task, lists the run's episodes (agent, task, seed, success, stop reason, calls, tokens); a task id
    that is not in the run is refused with the close ones. --json: the episode records (or the trajectory's
    events) as JSON.

    Examples:

        taskbench agents show runs/tmdb

        taskbench agents show runs/tmdb --task tmdb-own-02 --agent conagents-auto
    """
    from ..agents.eval import load_run
    from ..agents.show import run_table
    from ..dataset.trajectories import read_trajectory
    from ..errors import InputError

    console = make_console()
    if run.is_file():
        _show_trajectory(console, read_trajectory(run), full, as_json)
        return
    _, records = load_run(run)
    if task is None:
        if as_json:
            print_json([r.model_dump(mode="json") for r in records.values()
                        if agent is None or r.agent == agent])
        else:
            console.print(run_table(records.values(), [agent] if agent else None))
        return
    matches = [r for r in records.values() if r.task == task and (0 if r.seed is None else r.seed) == seed
               and (agent is None or r.agent == agent)]
    if not matches:
        agents = sorted({str(r.agent) for r in records.values() if r.task == task})
        if agents:
            hint = f"agents with this task: {', '.join(agents)}"
        else:
            from ..errors import did_you_mean

            tasks = sorted({str(r.task) for r in records.values()})
            hint = f"{did_you_mean(task, tasks)}; its tasks: {_few(tasks)}"
        raise InputError(f"no episode of task {task!r} (seed {seed}{', agent ' + agent if agent else ''})",
                         path=run, hint=hint)
    rel = matches[0].trajectory
    if rel is None:
        raise InputError("the episode record names no trajectory file", path=run)
    _show_trajectory(console, read_trajectory(run / rel), full, as_json)


def _few(items: list[str], n: int = 6) -> str:
    return ", ".join(items[:n]) + (f", ... ({len(items) - n} more)" if len(items) > n else "")


def _show_trajectory(console: Any, trajectory: Any, full: bool, as_json: bool) -> None:
    from ..agents.show import render

    if as_json:
        print_json(trajectory.model_dump(mode="json"))
    else:
        console.print(render(trajectory, full=full))


@agents_app.command("ratings")
def ratings_command(
    run: Path = typer.Argument(..., help="The run directory whose trajectories were rated (`taskbench review "
                               "DATASET --trajectories RUN`)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Where to write the results (default "
                                       "RUN/human_eval.json)."),
) -> None:
    """The human evaluation's results, after the rating session: per agent the mean Executability and Utility,
    the kappas, and which rated item was which agent (the rating page and its API never show these, so raters
    stay blind). Writes RUN/human_eval.json and prints the per-agent table.

    Example:

        taskbench agents ratings runs/tmdb
    """
    from ..report.review.human_eval import EXPORT_FILE, HumanEval

    store = HumanEval(run)
    doc = store.export(output)
    console = make_console()
    console.print(f"{doc['rated_items']} of {doc['items_total']} items rated by {len(doc['raters'])} raters "
                  f"({', '.join(doc['raters']) or 'none'})", highlight=False)
    if doc["per_agent"]:
        console.print("| agent | items | ratings | executability | utility |\n|---|---|---|---|---|", markup=False,
                      highlight=False)
        for agent, e in doc["per_agent"].items():
            console.print(f"| {agent} | {e['items']} | {e['ratings']} | {e['executability']} | {e['utility']} |",
                          markup=False, highlight=False)
    for dim, agree in doc["agreement"].items():
        console.print(f"{dim}: Fleiss' kappa {agree['fleiss_kappa']} over {agree['items_with_two_or_more']} items "
                      "rated twice or more", highlight=False)
    console.print(f"wrote {output or Path(run) / EXPORT_FILE}", highlight=False)


@agents_app.command("export-sft")
def export_sft_command(
    runs: list[Path] = typer.Argument(..., help="Run directories of `taskbench agents eval`."),
    output: Path = typer.Option(..., "--output", "-o", help="Directory for grounding/execution/review.jsonl."),
    all_turns: bool = typer.Option(False, "--all-turns", help="Keep turns that were sent back for revision too."),
    select: bool = typer.Option(False, "--select", help="Apply SPAN's task selection first: >= --min-tools "
                                "candidate tools, gold tools documented in >= --min-doc-words words, none "
                                "unavailable, no near-duplicate query; RestBench (the held-out test) dropped."),
    min_tools: int = typer.Option(10, "--min-tools", min=0, help="--select: candidate tools at least."),
    min_doc_words: int = typer.Option(100, "--min-doc-words", min=0, help="--select: words of documentation "
                                      "per gold tool at least (the paper: 100)."),
) -> None:
    """Write one chat-format JSON Lines training set per role (grounding, execution, review) from the
    successful ConAgents trajectories of the runs: the first half of SPAN (specialised action distillation).

    Each line is {"messages": [..., {"role": "assistant", "content": teacher's answer}], "meta": {...}}; a plan
    is kept only when the call it led to succeeded with the plan's own values and no review sent it back; code
    that failed (or whose tool calls failed) or was sent back, and failed turns, are left out (unless
    --all-turns). OUTPUT/manifest.json counts what was used and skipped, and the turns left out by reason.

    Example:

        taskbench agents export-sft runs/tmdb runs/spotify -o sft/
    """
    from ..agents.sft import export_sft

    selection = {"min_tools": min_tools, "min_doc_words": min_doc_words} if select else None
    summary = export_sft(runs, output, all_turns=all_turns, selection=selection)
    console = make_console()
    counts = ", ".join(f"{role} {n}" for role, n in summary.examples.items())
    console.print(f"{summary.successful} successful ConAgents trajectories of {summary.trajectories}: {counts} "
                  f"examples -> {output}", highlight=False)
    for reason, n in summary.skipped.items():
        console.print(f"  skipped {n}: {reason}", highlight=False)
    for problem in summary.problems[:5]:
        console.print(f"  [red]unreadable[/red] {problem}", highlight=False)


@agents_app.command("span-data")
def span_data_command(
    env: str = typer.Option(..., "--env", "-e", help="An executable environment with gold graphs: "
                            "taskbench-multimedia | taskbench-huggingface | taskbench-dailylifeapis, or any "
                            "environment with --tasks (RestBench's own queries are the held-out test: only "
                            "generated tasks are played there)."),
    output: Path = typer.Option(..., "--output", "-o", help="Directory for grounding/execution/review.jsonl."),
    tasks_file: Path | None = typer.Option(None, "--tasks", help="Play the tasks of this file (`taskbench generate "
                                           "--method executed` writes DIR/tasks.jsonl): the teacher plays each "
                                           "task's executed plan."),
    protocol: list[str] | None = typer.Option(None, "--protocol", help="ConAgents protocols the teacher plays: "
                                              "conagents-auto (default), conagents-adaptive, or both "
                                              "(comma-separated)."),
    react: bool = typer.Option(False, "--react", help="Also play ReAct (native tool calls) and write react.jsonl, "
                               "for a ReAct student trained on the same tasks."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most N selected tasks."),
    offset: int = typer.Option(0, "--offset", min=0, help="Skip the first N selected tasks (held-out data: "
                               "--offset past the training run's --limit)."),
    perturb: float = typer.Option(0.5, "--perturb", min=0.0, max=1.0, help="Share of tasks with one perturbed "
                                  "step (wrong tool, missing or wrong argument, faulty code) for review targets."),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Seed of the perturbations."),
    min_tools: int = typer.Option(10, "--min-tools", min=0, help="Candidate tools at least (the paper: 10)."),
    min_doc_words: int = typer.Option(100, "--min-doc-words", min=0, help="Words of documentation per gold tool "
                                      "at least (the paper: 100; TaskBench tools have 17-57)."),
    unsafe_local: bool = typer.Option(False, "--unsafe-local", help="Run the gold programs unconfined where "
                                      "bwrap is missing."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Gold trajectories for SPAN: play the environment's tasks with a gold teacher in the real ConAgents
    protocol and write one chat training set per role (the gold steps as plans, sandbox-checked programs,
    calibrations of perturbed actions with the right route). Counts of what each selection rule removed are
    printed and kept in OUTPUT/manifest.json.

    Example:

        taskbench agents span-data --env taskbench-multimedia --min-doc-words 20 -o span/

        taskbench agents span-data --env restbench-tmdb --tasks gen/tmdb/tasks.jsonl --protocol conagents-auto,conagents-adaptive --react --min-doc-words 0 -o span/tmdb
    """
    from ..agents.span import build_gold
    from ..predict.progress import RichPredictDisplay

    console = make_console(stderr=True, quiet=quiet)
    display = RichPredictDisplay(console)
    with display:
        summary = build_gold(env, output, limit=limit, offset=offset, perturb=perturb, seed=seed, min_tools=min_tools,
                             min_doc_words=min_doc_words, unsafe_local=unsafe_local, display=display,
                             tasks_file=str(tasks_file) if tasks_file is not None else None,
                             protocols=tuple(_split(protocol)) or ("conagents-auto",), react=react)
    out = make_console()
    removed = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in summary["removed"].items())
    counts = ", ".join(f"{r} {n}" for r, n in summary["examples"].items())
    out.print(f"{summary['candidates']} tasks, {summary['played']} played, {summary['solved']} solved; removed: "
              f"{removed}\nexamples: {counts} -> {output}", highlight=False)


@agents_app.command("distill")
def distill_command(
    role: str = typer.Option(..., "--role", help="grounding | execution | review | react (the ReAct agent's "
                             "tool-call turns, react.jsonl)."),
    data: str = typer.Option(..., "--data", help="Directory with ROLE.jsonl (span-data or export-sft); several, "
                             "comma-separated (DIR1,DIR2), are read interleaved."),
    base: str = typer.Option("llamacpp/qwen2.5-coder-0.5b", "--base", help="Base model: llamacpp/ALIAS or a "
                             ".gguf path (loaded dequantised by transformers; no hub)."),
    output: Path = typer.Option(..., "--output", "-o", help="Adapter directory (PEFT adapter, adapter.gguf, "
                                "train_log.jsonl, distill.json)."),
    rank: int = typer.Option(8, "--rank", min=1, help="LoRA rank."),
    alpha: float = typer.Option(16.0, "--alpha", help="LoRA alpha (scale alpha/rank)."),
    lr: float = typer.Option(2e-4, "--lr", help="Learning rate (the paper: 5e-5 for Mistral-8x7B)."),
    epochs: int = typer.Option(1, "--epochs", min=1, help="Passes over the examples."),
    max_length: int = typer.Option(1024, "--max-length", min=16, help="Longer examples are skipped (counted)."),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Seed of the example order and the adapter's initialisation."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N examples."),
    max_same_target: int | None = typer.Option(None, "--max-same-target", min=1, help="At most N examples of "
                                               "any one answer, drawn by --seed (the review's accept verdict is "
                                               "most of its gold targets; counted in distill.json)."),
    targets: str = typer.Option("q_proj,k_proj,v_proj,o_proj", "--targets", help="Modules to adapt."),
    layers: int | None = typer.Option(None, "--layers", min=1, help="Adapt only the top N layers: the backward "
                                      "pass stops below them, so a step costs less (default: every layer)."),
    checkpoint_every: int = typer.Option(50, "--checkpoint-every", min=1, help="Examples between checkpoints."),
    resume: bool = typer.Option(False, "--resume", help="Continue the training in OUTPUT from its checkpoint."),
    threads: int | None = typer.Option(None, "--threads", min=1, help="torch CPU threads."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Train one ConAgents role's student (or the ReAct agent's) with LoRA (SPAN) on the prompts the embedded
    provider renders; the adapter is also written as a GGUF LoRA, so `--model-ROLE llamacpp/BASE+OUTPUT` in
    `agents eval` runs the student embedded.

    Example:

        taskbench agents distill --role grounding --data span/ --base llamacpp/qwen2.5-coder-0.5b -o students/grounding --epochs 2
    """
    from pydantic import ValidationError
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..distill.train import DistillConfig, check, distill
    from ..errors import options_error

    try:
        config = DistillConfig(role=role, data=str(data), base=base, rank=rank, alpha=alpha, lr=lr, epochs=epochs,
                               max_length=max_length, seed=seed, limit=limit, max_same_target=max_same_target,
                               checkpoint_every=checkpoint_every,
                               threads=threads, targets=_split([targets]), layers=layers)
    except ValidationError as exc:  # --lr 0: one line naming the flag
        raise options_error(exc) from None
    check(config, output, resume=resume)  # bad input is one line, before any progress bar is drawn
    console = make_console(stderr=True, quiet=quiet)
    columns = (TextColumn(f"distill {role}"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"),
               TimeRemainingColumn())
    with Progress(*columns, console=console, disable=quiet) as bar:
        job = bar.add_task("distill", total=None, loss="-")

        def progress(done: int, total: int, loss: float | None) -> None:
            bar.update(job, completed=done, total=total, loss=f"{loss:.3f}" if loss is not None else "-")

        result = distill(config, output, resume=resume, progress=progress)
    make_console().print(
        f"{result.examples} examples ({result.skipped_too_long} longer than --max-length skipped"
        + (f", {result.dropped_repeated} over --max-same-target dropped" if max_same_target else "")
        + f"), {result.steps} "
        f"steps, loss {result.first_loss:.3f} -> {result.last_loss:.3f}, {result.seconds:.0f} s "
        f"({result.seconds_per_example} s/example, peak RSS {result.peak_rss_mb:.0f} MB)\n"
        f"adapter: {output}  (run it: --model-{role} llamacpp/BASE+{output})", highlight=False)


@agents_app.command("distill-eval")
def distill_eval_command(
    role: str = typer.Option(..., "--role", help="grounding | execution | review | react."),
    data: Path = typer.Option(..., "--data", help="Directory with held-out ROLE.jsonl (span-data --offset past "
                              "the training tasks)."),
    model: str = typer.Option(..., "--model", "-m", help="The model to score: a student "
                              "llamacpp/BASE+ADAPTER, the base llamacpp/BASE, or any model string."),
    output: Path | None = typer.Option(None, "--output", "-o", help="JSON file for the scores and every "
                                       "example's answer."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most N examples."),
    offset: int = typer.Option(0, "--offset", min=0, help="Skip the first N examples."),
    option: list[str] | None = typer.Option(None, "--option", "-O", help="Model option KEY=VALUE "
                                            "(n_threads=2 ...)."),
    unsafe_local: bool = typer.Option(False, "--unsafe-local", help="Run programs unconfined where bwrap is "
                                      "missing."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Score a model in one ConAgents role on held-out SPAN examples: next-tool accuracy and argument match
    (grounding), execution success of its code in the sandbox and result match, its result equal to the
    target code's (execution), verdict and route accuracy (review). A student is refused on tasks its adapter
    was trained on.

    Example:

        taskbench agents distill-eval --role grounding --data span-heldout/ --model llamacpp/qwen2.5-coder-0.5b+students/grounding
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..dataset.jsonio import write_json
    from ..distill.data import load_examples
    from ..distill.evaluate import score_role
    from .options import parse_model_options

    load_examples(data, role)  # bad input is one line, before any progress bar is drawn
    options = parse_model_options(option)
    console = make_console(stderr=True, quiet=quiet)
    with Progress(TextColumn(f"{role} {model}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, disable=quiet) as bar:
        job = bar.add_task("score", total=None)
        doc = score_role(data, role, model, limit=limit, offset=offset, unsafe_local=unsafe_local, options=options,
                         progress=lambda done, total: bar.update(job, completed=done, total=total))
    if output is not None:
        write_json(output, doc)
    scores = ", ".join(f"{k} {v}" for k, v in doc["scores"].items())
    make_console().print(f"{role} {model}: {scores} ({doc['seconds']:.0f} s)", highlight=False)


COMPARISON_DROP_FIRST = ("s/episode", "trials", "extra calls", "turns", "tokens/solved",
                         "path contained (RestBench) %", "path LCS (authors' code) %", "episodes")
"""Columns of the agents' table that give way first at a narrow width: the agent, its success rate with the
CI, the paper's path rate and the tokens per episode stay."""


def _print_comparison(out: Any, metrics: Any, title: str, wide: bool = False) -> None:
    """The comparison table of an agents metrics document, fitted to the terminal's width."""
    from rich.table import Table

    from ..report.agents import comparison_rows

    head, rows = comparison_rows(metrics)
    table = Table(title=title, title_justify="left")
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*r)
    print_table(out, table, wide=wide, keep=2, drop_first=COMPARISON_DROP_FIRST)


def _print_failures(out: Any, metrics: Any) -> None:
    """Why the failed episodes failed, per agent (the top reasons); nothing when every episode succeeded."""
    from ..report.agents import failure_lines

    lines = failure_lines(metrics)
    if lines:
        out.print("\nwhy episodes failed:\n" + "\n".join(lines), markup=False, highlight=False)


@agents_app.command("compare")
def compare_command(
    run_a: Path = typer.Argument(..., help="Run A: a directory of `taskbench agents eval`."),
    run_b: Path = typer.Argument(..., help="Run B: another one on the same environment."),
    agent_a: str | None = typer.Option(None, "--agent-a", help="The agent of run A (needed when it ran several)."),
    agent_b: str | None = typer.Option(None, "--agent-b", help="The agent of run B (needed when it ran several)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="JSON file for the whole comparison (- : to "
                                       "stdout, as --json)."),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=0, max=MAX_REPLICATES,
                                  help="Bootstrap and permutation replicates."),
    wide: bool = wide_option(),
    as_json: bool = json_option(),
) -> None:
    """Paired comparison of one agent in two runs (A - B on the tasks and seeds both finished): success, the
    correct path rates, tokens, with paired 95% CIs and p-values, the episodes solved by one only, and what
    review did in each. For what one `agents eval` run cannot hold: the same agent with other role models,
    e.g. ConAgents with SPAN students against ConAgents with the base. Settings other than the models on which
    the runs disagree are printed; runs of two environments are refused.

    First the paired table (metric, A, B, the difference, its 95% CI, p: at 80 columns A and B give way
    first), then each run's figures, why episodes failed and what review did. --wide shows every column,
    --json (or -o -) prints the whole comparison.

    Example:

        taskbench agents compare runs/tmdb-students runs/tmdb-base --agent-b conagents-auto
    """

    from rich.table import Table

    from ..agents.eval import compare_runs
    from ..dataset.jsonio import write_json
    from ..report.agents import mechanism_markdown, paired_rows

    doc = compare_runs(run_a, run_b, agent_a=agent_a, agent_b=agent_b, n_boot=bootstrap)
    for key, (a, b) in doc["differs"].items():
        typer.echo(f"taskbench: warning: the runs differ in {key}: {a} / {b}", err=True)
    to_stdout = as_json or is_stdout(output)
    if to_stdout:
        print_json(doc)
    else:
        out = make_console()
        for run in doc["runs"]:
            models = ", ".join(f"{k} {v}" for k, v in run["models"].items())
            out.print(f"{run['label']}: {run['episodes']} episodes; {models}", markup=False, highlight=False)
        for pair in doc.get("paired", []):
            head, rows = paired_rows(pair)
            table = Table(title=f"A - B, paired on the {doc['tasks']} tasks both finished (rates in %)",
                          title_justify="left", caption_justify="left",
                          caption="p: paired randomization test; 95% CI of the difference by paired bootstrap")
            for i, h in enumerate(head):
                table.add_column(h, justify="left" if i == 0 else "right", no_wrap=i >= 3)
            for r in rows:
                table.add_row(*r)
            # LCS credits an answer with no call (the finish token): it is read beside F1, the paper's rate
            print_table(out, table, wide=wide, keep=1, drop_first=[(head[1], head[2])])
        _print_comparison(out, doc, "Each run (rates in %, means per episode)", wide)
        _print_failures(out, doc)
        mech = mechanism_markdown(doc)
        if mech:
            out.print("\nwhat review did:\n" + mech, markup=False, highlight=False)
    if output is not None and not is_stdout(output):
        write_json(output, doc)
        make_console(stderr=to_stdout).print(f"wrote {output}", markup=False, highlight=False)


@agents_app.command("plot")
def plot_command(
    run: Path = typer.Argument(..., help="A run directory of `taskbench agents eval` (or its metrics.json)."),
    output: Path = typer.Option(..., "--output", "-o", help="PNG file to write."),
    figure: str = typer.Option("tokens", "--figure", help="tokens: tokens per solved task against success, per "
                               "agent (Figure 4); turns: success against alpha/beta (Figure 3, needs "
                               "--sweep-turns)."),
) -> None:
    """Plot the paper's analyses from a run's metrics.

    Examples:

        taskbench agents plot runs/tmdb -o tokens.png

        taskbench agents plot runs/sweep --figure turns -o turns.png
    """
    from ..errors import ConfigError, InputError
    from ..report.agents import plot_tokens, plot_turns, read_metrics

    path = run / "metrics.json" if run.is_dir() else run
    if not path.is_file():
        raise InputError("no metrics.json (run `taskbench agents eval` first)", path=path)
    metrics = read_metrics(path)
    if figure == "tokens":
        plot_tokens(metrics, output)
    elif figure == "turns":
        if len(metrics.get("turns_sweep") or []) < 2:
            raise ConfigError("--figure turns needs a run with several turn limits (taskbench agents eval "
                              "--sweep-turns alpha|beta|both)")
        plot_turns(metrics, output)
    else:
        raise ConfigError(f"--figure {figure!r}: expected tokens or turns")
    make_console().print(f"wrote {output}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add `agents` to the CLI."""
    app.add_typer(agents_app, name="agents")
