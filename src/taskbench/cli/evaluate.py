"""`taskbench evaluate` and `taskbench compare`: score predictions, compare two prediction sets."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .console import is_stdout, json_option, make_console, print_json, print_table, wide_option
from .options import MAX_REPLICATES, MAX_SEED

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

    from ..eval.api import EvaluationResult

SPLITS_HELP = "Task structures to report: 'all' or a comma list of overall,single,chain,dag."
N_TOOLS_HELP = "Tool counts to report: 'all' or a comma list of overall,1..10."
MODE_HELP = "Group layout: 'add' = each split overall + overall per tool count; 'mul' = every combination."
METRICS_HELP = (
    "Metric families: 'all' (adds bertscore, as the reference) or a comma list of {metric_families}. Default: "
    "{default_metrics}."
)
ALIGN_HELP = (
    "Score only the ids of one alignment set from alignment_ids.json: human (all of data.json), node, link, "
    "both_node_link, self-check or all."
)
EXECUTE_HELP = (
    "Also run every gold and predicted graph on the domain's executable tools and report execution success "
    "(the prediction produces the gold's final artifacts, or its end state) per structure and tool count."
)
DEP_HELP = "Override the dataset's dependency kind: resource (links from `<node-j>` arguments) or temporal (task_links)."


def _one_blas_thread() -> None:
    """Ask OpenBLAS for one thread before numpy loads (unless the user chose otherwise): the evaluator's matrix
    products are small, and idle OpenBLAS worker threads spin for a while after start-up, which costs about
    0.1 s of CPU per run."""
    import os

    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def evaluate_command(
    data: str = typer.Option(..., "--data", "-d", help="Dataset directory (tool_desc.json + data.json) or a bundled dataset name."),
    predictions: Path = typer.Option(
        ..., "--predictions", "-p", help="Predictions, JSON Lines of {\"id\", \"result\": {...}}."
    ),
    compat: bool = typer.Option(False, "--compat", help="Only the reference evaluator's numbers and layout."),
    strict: bool = typer.Option(False, "--strict", help="Only strict scoring (the default)."),
    both: bool = typer.Option(False, "--both", help="Strict and compat; the JSON holds {strict, compat}."),
    splits: str = typer.Option("all", "--splits", help=SPLITS_HELP),
    n_tools: str = typer.Option("all", "--n-tools", help=N_TOOLS_HELP),
    mode: str = typer.Option("add", "--mode", help=MODE_HELP),
    alignment: str | None = typer.Option(None, "--alignment", help=ALIGN_HELP),
    metrics: str | None = typer.Option(None, "--metrics", "-M", help=METRICS_HELP),
    dependency: str | None = typer.Option(None, "--dependency", help=DEP_HELP),
    bootstrap: int = typer.Option(
        1000, "--bootstrap",
        help=f"Bootstrap replicates for the 95% CIs of every group (0 = no CIs; at most {MAX_REPLICATES:,})."
    ),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Seed of the bootstrap (same seed, same CIs)."),
    bertscore_model: str | None = typer.Option(
        None, "--bertscore-model", help="BERTScore model name or local path (default roberta-large)."
    ),
    ids: str | None = typer.Option(
        None, "--ids", help="Score only these gold ids: a comma list, or @FILE with one id per line."
    ),
    limit: int | None = typer.Option(
        None, "--limit", help="Score at most N gold samples (after --alignment/--ids), stratified over "
        "single/chain/dag: the same N that `predict --limit N` and `run --limit N` pick."
    ),
    unusable: str = typer.Option(
        "skip", "--unusable", help="A gold record that cannot be scored (broken JSON, no usable id, a field of "
        "the wrong type): 'skip' leaves it out and warns (default), 'error' stops with its file:line (exit 2)."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the metrics JSON here (- : to stdout, "
                                       "as --json)."),
    errors: bool = typer.Option(False, "--errors", help="Also print the error taxonomy table."),
    wide: bool = wide_option(),
    as_json: bool = json_option(),
    execute: bool = typer.Option(False, "--execute", help=EXECUTE_HELP),
    executor: str = typer.Option(
        "local", "--executor", help="'ray': shard the strict per-sample scoring over Ray workers (same numbers)."
    ),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Ray cluster to join (auto, HEAD:6379)."),
    workers: int | None = typer.Option(None, "--workers", min=1, help="With --executor ray: shards (default: CPUs)."),
) -> None:
    """Score predictions against a dataset's gold graphs; print a table and write the metrics JSON.

    Strict (default): every gold id counts, a missing or unreadable prediction is an empty graph, wrong or
    invented tools are false positives; CIs by seeded bootstrap. --compat: exactly the reference TaskBench
    evaluator's numbers, and `-o` writes a file in its exact layout. --both: {"strict": ..., "compat": ...}.

    Coverage problems are printed as warnings on stderr before the tables (exit code 0): gold ids without a
    prediction, prediction ids not in the gold data, unreadable lines, gold records that cannot be scored. Use
    --ids / --limit to score a subset on purpose. Predictions of which no id is a gold id here (another
    dataset's) are an error (exit 2): there is nothing to score.

    At 80 columns the tables keep the group, n-F1, e-F1, t-F1 and v-F1 first; --wide shows every column,
    --json (or -o -) prints the whole metrics document instead.

    Example:

        taskbench evaluate --data data/multimedia --predictions preds/gpt-4.jsonl --both -o metrics/gpt-4.json
        taskbench evaluate --data multimedia --predictions preds/qwen.jsonl --execute   # + execution success

        taskbench evaluate --data multimedia -p preds/first100.jsonl --limit 100
    """
    _one_blas_thread()
    from ..errors import ConfigError
    from ..run.evaluate import EvaluateSpec, evaluate_spec
    from ..run.executor import ExecutorSpec

    if sum([compat, strict, both]) > 1:
        raise ConfigError("choose one of --compat, --strict, --both")
    spec = EvaluateSpec(
        data=data, predictions=predictions, mode="compat" if compat else "both" if both else "strict",
        splits=splits, n_tools=n_tools, group_mode=mode, alignment=alignment, metrics=metrics,
        dependency=dependency, bootstrap=bootstrap, seed=seed, bertscore_model=bertscore_model, ids=ids,
        limit=limit, unusable=unusable, execute=execute,
        executor=ExecutorSpec(executor, ray_address, workers), output=output,
    )  # the checks, the defaults and the executor choice live in the spec: evaluate(...) is this command
    result = evaluate_spec(spec)
    to_stdout = as_json or is_stdout(output)
    _warn(result.warnings)  # first: a table read under a warning is read for what it is
    _show(result, predictions.name, errors, wide, to_stdout)
    if output is not None and not is_stdout(output):
        make_console(stderr=as_json).print(f"wrote {output}", markup=False, highlight=False)
    if result.warnings and not to_stdout and executor == "local":
        n = len(result.warnings)
        make_console(stderr=True, highlight=False).print(
            f"taskbench: {n} coverage warning{'s' if n != 1 else ''} above the tables", markup=False)


def _console() -> Console:
    return make_console()


def _show(result: EvaluationResult, name: str, errors: bool, wide: bool, as_json: bool) -> None:
    """The tables of ``result``, or with ``as_json`` its metrics document on stdout."""
    if as_json:
        from ..eval.api import dumps_metrics

        sys.stdout.write(dumps_metrics(result.to_json()))
        sys.stdout.flush()
        return
    _print_result(result, name, errors, wide)


def _warn(lines: list[str]) -> None:
    """Coverage warnings, one line each on stderr (before the tables, so that the numbers are read with them)."""
    console = make_console(stderr=True, soft_wrap=True, highlight=False)
    for line in lines:
        console.print(f"taskbench: warning: {line}", markup=False)


def _print_result(result: EvaluationResult, name: str, errors: bool, wide: bool = False) -> None:
    from ..report.tables import (
        STRICT_DROP_FIRST,
        accuracy_table,
        compat_table,
        strict_table,
        taxonomy_table,
    )

    console = _console()
    if result.strict is not None:
        table = strict_table(result.strict.groups, title=f"Strict metrics (%; 95% CI below) - {name}")
        print_table(console, table, wide=wide, drop_first=STRICT_DROP_FIRST)
        print_table(console, accuracy_table(result.strict.groups), wide=wide)
        if result.strict.chain_edit_distance is not None:
            console.print(f"NED on chains: {100 * result.strict.chain_edit_distance:.2f}")
        if errors:
            print_table(console, taxonomy_table(result.strict.taxonomy), wide=wide)
    if result.compat is not None:
        table = compat_table(result.compat, title=f"Compat metrics (%) - {name}")
        print_table(console, table, wide=wide, keep=3, drop_first=("BERT-F1", "n-F1 macro", "R-2", "R-1"))
        if result.compat_dropped:
            shown = ", ".join(f"{d['id']} ({d['error']})" for d in result.compat_dropped[:10])
            more = f", ... ({len(result.compat_dropped) - 10} more; all in the compat log)" \
                if len(result.compat_dropped) > 10 else ""
            console.print(f"Compat dropped {len(result.compat_dropped)} sample(s) as the reference does "
                          f"(Parsing Error): {shown}{more}", markup=False, highlight=False)
    if result.execution is not None:
        from ..eval.execution import EXECUTION_COLUMNS

        console.print(strict_table(result.execution.groups, title=f"Execution success (%) - {name}",
                                   columns=EXECUTION_COLUMNS))


def compare_command(
    a: Path = typer.Argument(..., help="Predictions A (JSON Lines)."),
    b: Path = typer.Argument(..., help="Predictions B (JSON Lines)."),
    data: str = typer.Option(..., "--data", "-d", help="Dataset directory (or bundled name) both were made for."),
    splits: str = typer.Option("overall", "--splits", help=SPLITS_HELP),
    n_tools: str = typer.Option("overall", "--n-tools", help=N_TOOLS_HELP),
    mode: str = typer.Option("add", "--mode", help=MODE_HELP),
    metrics: str | None = typer.Option(
        None, "--metrics", "-M", help="Metric families (no bertscore): a comma list of {compare_metric_families}."
    ),
    alignment: str | None = typer.Option(None, "--alignment", help=ALIGN_HELP),
    dependency: str | None = typer.Option(None, "--dependency", help=DEP_HELP),
    n_boot: int = typer.Option(1000, "--bootstrap", min=0, max=MAX_REPLICATES,
                                help="Bootstrap replicates for the CI of A - B."),
    n_perm: int = typer.Option(1000, "--permutations", min=0, max=MAX_REPLICATES,
                                help="Randomization replicates for the p-value."),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Seed (same seed, same CIs and p-values)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the comparison JSON here (- : to stdout, "
                                       "as --json)."),
    wide: bool = wide_option(),
    as_json: bool = json_option(),
) -> None:
    """Paired comparison of two prediction sets on the same gold: A - B per metric, with a paired bootstrap
    95% CI and a two-sided p-value from a paired randomization (sign-flip) test.

    The table shows the headline metrics (n-F1, e-F1, t-F1, v-F1, NED, R-L, graph accuracy, parse failures)
    with A, B, the difference, its CI and p; at 80 columns A and B give way first. --wide shows every metric
    and column, --json (or -o -) prints the whole comparison.

    Example:

        taskbench compare preds/model-a.jsonl preds/model-b.jsonl --data data/multimedia --splits all -o cmp.json
    """

    _one_blas_thread()
    from ..report.tables import comparison_table
    from ..run.evaluate import CompareSpec, compare_spec

    result = compare_spec(CompareSpec(
        a=a, b=b, data=data, splits=splits, n_tools=n_tools, group_mode=mode, metrics=metrics, alignment=alignment,
        dependency=dependency, n_boot=n_boot, n_perm=n_perm, seed=seed, output=output,
    ))
    _warn(result.warnings)
    if as_json or is_stdout(output):
        print_json(result.model_dump(mode="json"))
    else:
        console = make_console()
        table = comparison_table(result, wide=wide)
        first = 1 if len([g for g in result.groups.values() if g.results]) == 1 else 2  # metric (and group)
        print_table(console, table, wide=wide, keep=first, drop_first=[(result.a, result.b)])
    if output is not None and not is_stdout(output):
        make_console(stderr=as_json).print(f"wrote {output}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add `evaluate` and `compare` to the taskbench app."""
    app.command("evaluate")(evaluate_command)
    app.command("compare")(compare_command)
