"""`taskbench evaluate` and `taskbench compare`: score predictions, compare two prediction sets."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import typer

from .console import make_console
from .options import MAX_REPLICATES, MAX_SEED

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

    from ..errors import InputError
    from ..eval.api import EvaluationResult, Mode
    from ..eval.execution import ExecutionResult
    from ..schema import ToolLibrary

SPLITS_HELP = "Task structures to report: 'all' or a comma list of overall,single,chain,dag."
N_TOOLS_HELP = "Tool counts to report: 'all' or a comma list of overall,1..10."
MODE_HELP = "Group layout: 'add' = each split overall + overall per tool count; 'mul' = every combination."
METRICS_HELP = (
    "Metric families: 'all' (adds bertscore, as the reference) or a comma list of "
    "f1,ed,link,argument,rouge,bertscore. Default: f1,ed,link,argument,rouge."
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


def _stratified(data_path: Path, aligned: set[str] | None, wanted: list[str] | None, limit: int) -> list[str]:
    """The ids of at most ``limit`` gold samples (of those in ``aligned`` and ``wanted``), stratified over the
    structures exactly as ``predict --limit`` chooses them."""
    from ..dataset.layout import load_dataset
    from ..predict.runner import select_samples

    keep = set(wanted) if wanted is not None else None
    samples = [s for s in load_dataset(data_path.parent).samples
               if (aligned is None or s.id in aligned) and (keep is None or s.id in keep)]
    return [s.id for s in select_samples(samples, limit)]


def _load(
    data: str | Path, dependency: str | None, alignment: str | None
) -> tuple[ToolLibrary, Path, set[str] | None]:
    """(library, gold file, alignment ids or None) of a dataset directory: reads the tool library and, when
    asked for, alignment_ids.json (scoring reads the gold file itself, see :func:`_records`)."""
    from ..bundled import resolve_dir
    from ..dataset.layout import ALIGNMENT_FILE, GRAPH_FILE, TOOL_FILE, Dataset, find_data_file
    from ..errors import InputError
    from ..graph.loaders import load_tool_library

    data = resolve_dir(data)
    tool_path = data / TOOL_FILE if (data / TOOL_FILE).is_file() else data / GRAPH_FILE
    if not tool_path.is_file():
        raise InputError(f"no {TOOL_FILE} in the dataset directory", path=data)
    library = load_tool_library(tool_path, dependency, name=data.name)
    data_path = find_data_file(data)
    if data_path is None:
        raise InputError("no gold data (data.json) in the dataset directory", path=data)
    ids = None
    if alignment:
        path = data / ALIGNMENT_FILE if (data / ALIGNMENT_FILE).is_file() else None
        ids = Dataset(root=data, library=library, alignment_path=path).aligned_ids(alignment)
    return library, data_path, ids


@overload
def _records(
    path: Path, *, stream: Literal[False], problems: list[InputError] | None = None
) -> list[dict[str, Any]]: ...


@overload
def _records(
    path: Path, *, stream: bool, problems: list[InputError] | None = None
) -> list[dict[str, Any]] | Iterator[dict[str, Any]]: ...


def _records(
    path: Path, *, stream: bool, problems: list[InputError] | None = None
) -> list[dict[str, Any]] | Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines (or parquet, or JSON array) file: a list, or with ``stream`` a one-pass
    iterator (the strict scorer normalises each record as it comes, so the parsed file is never held in memory
    at once). With a ``problems`` list, unreadable lines are collected there instead of stopping the command."""
    from ..dataset.layout import iter_raw_records, read_raw_records

    if not stream or str(path).endswith(".parquet"):
        return read_raw_records(path, problems=problems) if not _is_array(path) else list(
            iter_raw_records(path, problems=problems))
    return iter_raw_records(path, problems=problems)


def _is_array(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(64).lstrip().startswith(b"[")
    except OSError:
        return False


def _ids(value: str | None) -> list[str] | None:
    """``--ids``: a comma list, or ``@file`` (ids separated by newlines or commas)."""
    if value is None:
        return None
    if value.startswith("@"):
        from ..dataset.jsonio import check_input_file
        from ..errors import InputError

        path = Path(value[1:])
        check_input_file(path)
        try:
            value = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the ids file ({getattr(exc, 'strerror', None) or exc})", path=path) from None
    ids = [i.strip() for part in value.splitlines() for i in part.split(",") if i.strip()]
    if not ids:
        from ..errors import ConfigError

        raise ConfigError("--ids names no ids; give a comma list or @file")
    return ids


def _one_blas_thread() -> None:
    """Ask OpenBLAS for one thread before numpy loads (unless the user chose otherwise): the evaluator's matrix
    products are small, and idle OpenBLAS worker threads spin for a while after start-up, which costs about
    0.1 s of CPU per run."""
    import os

    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _choices(splits: str, n_tools: str, metrics: str | None) -> tuple[list[str], list[str], list[str]]:
    from ..eval.api import parse_choice_list, parse_metric_list
    from ..eval.strict import N_TOOLS, SPLITS

    return (
        parse_choice_list(splits, SPLITS, "split"),
        parse_choice_list(n_tools, N_TOOLS, "tool count"),
        parse_metric_list(metrics),
    )


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
        1000, "--bootstrap", min=0, max=MAX_REPLICATES,
        help="Bootstrap replicates for the 95% CIs of every group (0 = no CIs)."
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
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the metrics JSON here."),
    errors: bool = typer.Option(False, "--errors", help="Also print the error taxonomy table."),
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

    Coverage problems are printed as warnings on stderr (exit code 0): gold ids without a prediction,
    prediction ids not in the gold data (another dataset's predictions?), unreadable lines, gold records that
    cannot be scored. Use --ids / --limit to score a subset on purpose.

    Example:

        taskbench evaluate --data data/multimedia --predictions preds/gpt-4.jsonl --both -o metrics/gpt-4.json
        taskbench evaluate --data multimedia --predictions preds/qwen.jsonl --execute   # + execution success

        taskbench evaluate --data multimedia -p preds/first100.jsonl --limit 100
    """
    _one_blas_thread()
    from ..errors import ConfigError, did_you_mean
    from ..eval.api import evaluate, write_metrics
    from ..eval.runtime import gc_paused

    if sum([compat, strict, both]) > 1:
        raise ConfigError("choose one of --compat, --strict, --both")
    if execute and compat:
        raise ConfigError("--execute adds to the strict metrics; use it without --compat, or with --both")
    run_mode: Mode = "compat" if compat else "both" if both else "strict"
    if mode not in ("add", "mul"):
        raise ConfigError(f"--mode must be add or mul, not {mode!r} ({did_you_mean(mode, ('add', 'mul'))})")
    if bootstrap < 0:
        raise ConfigError("--bootstrap must be >= 0")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be a positive number of samples, not {limit}")
    if unusable not in ("skip", "error"):
        raise ConfigError(f"--unusable must be skip or error, not {unusable!r} ({did_you_mean(unusable, ('skip', 'error'))})")
    split_list, n_list, metric_list = _choices(splits, n_tools, metrics)
    wanted = _ids(ids)
    settings = {"data": data, "predictions": str(predictions.resolve()), "mode": run_mode, "splits": split_list,
                "n_tools": n_list, "group_mode": mode, "alignment": alignment, "metrics": metric_list,
                "dependency": dependency, "bootstrap": bootstrap, "seed": seed, "ids": wanted, "limit": limit,
                "unusable": unusable, "execute": execute, "executor": executor}
    from .predict import make_executor

    runner = make_executor(executor, ray_address, workers)
    if runner is not None and (ids or limit or execute or unusable != "skip"):
        runner.close()
        raise ConfigError("--executor ray shards strict scoring of the whole set; --ids, --limit, --execute and "
                          "--unusable run locally (drop --executor ray)")
    if runner is not None:  # sharded strict scoring (a map-reduce); see taskbench.executors.evaluate
        from ..executors.evaluate import aevaluate_sharded
        from ..records import run_sync

        library, data_path, aligned = _load(data, dependency, alignment)
        try:
            result = run_sync(aevaluate_sharded(
                data_path.parent, predictions, executor=runner, mode=run_mode, dependency=dependency,
                splits=split_list, n_tools=n_list, group_mode=mode, metrics=metric_list, alignment_ids=aligned,
                bootstrap=bootstrap, seed=seed, bertscore_model=bertscore_model,
            ))
        finally:
            runner.close()
        _print_result(result, predictions.name, errors)
        if output is not None:
            write_metrics(result, output)
            _write_header(output, settings, result)
            _console().print(f"wrote {output}")
        return
    with gc_paused():  # the parsed JSON is millions of objects no collection needs to walk
        library, data_path, aligned = _load(data, dependency, alignment)
        if limit is not None:  # the samples predict --limit N picked, not the first N in file order
            wanted, limit = _stratified(data_path, aligned, wanted, limit), None
        stream = run_mode == "strict"  # compat reads the gold records as they are: it keeps them
        gold_problems: list[InputError] | None = [] if unusable == "skip" else None
        pred_problems: list[InputError] = []
        gold = _records(data_path, stream=stream, problems=gold_problems)
        preds = _records(predictions, stream=stream, problems=pred_problems)
        gold_records = gold if not stream and isinstance(gold, list) else None  # not streamed: a list
        result = evaluate(
            gold, preds, library, mode=run_mode, gold_records=gold_records, gold_path=data_path,
            dependency=dependency, splits=split_list, n_tools=n_list, group_mode=mode, metrics=metric_list,
            alignment_ids=aligned, ids=wanted, limit=limit, bootstrap=bootstrap, seed=seed,
            bertscore_model=bertscore_model, unusable=unusable, gold_problems=gold_problems,
            prediction_problems=pred_problems,
        )
        if execute:
            result.execution = _execute(data_path, predictions, library, split_list, n_list, mode, aligned, bootstrap,
                                        seed)
        _print_result(result, predictions.name, errors)
        if output is not None:
            write_metrics(result, output)
            _write_header(output, settings, result)
            _console().print(f"wrote {output}", markup=False, highlight=False)
        _warn(result.warnings)


def _write_header(output: Path, settings: dict[str, Any], result: EvaluationResult) -> None:
    """The run header next to the metrics file (``FILE.header.json``, see :mod:`taskbench.dataset.header`),
    with the model, dataset and sample count the scores are of (a compat-only file has no room for them)."""
    from ..dataset.header import new_header, write_header

    config = {**settings, "model": result.model, "dataset": result.dataset, "n_samples": result.n_samples}
    write_header(output, new_header("evaluate", config=config, identity=settings,
                                    seeds={"bootstrap": settings["seed"]}))


def _execute(
    data_path: Path, predictions: Path, library: ToolLibrary, splits: list[str], n_tools: list[str], mode: str,
    ids: set[str] | None, bootstrap: int, seed: int,
) -> ExecutionResult:
    """Execution success of the predictions (gold and predictions read again: strict scoring streamed them)."""
    from ..eval.execution import evaluate_execution

    return evaluate_execution(
        _records(data_path, stream=False), _records(predictions, stream=False), library, splits=splits,
        n_tools=n_tools, mode=mode, alignment_ids=ids, bootstrap=bootstrap, seed=seed,
    )


def _console() -> Console:
    return make_console()


def _warn(lines: list[str]) -> None:
    """Coverage warnings, one line each on stderr (after the tables, so they are the last thing read)."""
    console = make_console(stderr=True, soft_wrap=True, highlight=False)
    for line in lines:
        console.print(f"taskbench: warning: {line}", markup=False)


def _print_result(result: EvaluationResult, name: str, errors: bool) -> None:
    from ..report.tables import (
        STRICT_DROP_FIRST,
        accuracy_table,
        compat_table,
        fit_width,
        strict_table,
        taxonomy_table,
    )

    console = _console()
    width = console.width
    if result.strict is not None:
        table = strict_table(result.strict.groups, title=f"Strict metrics (%; 95% CI below) - {name}")
        console.print(fit_width(table, width, drop_first=STRICT_DROP_FIRST))
        console.print(fit_width(accuracy_table(result.strict.groups), width))
        if result.strict.chain_edit_distance is not None:
            console.print(f"NED on chains: {100 * result.strict.chain_edit_distance:.2f}")
        if errors:
            console.print(fit_width(taxonomy_table(result.strict.taxonomy), width))
    if result.compat is not None:
        table = compat_table(result.compat, title=f"Compat metrics (%) - {name}")
        console.print(fit_width(table, width, keep=3, drop_first=("BERT-F1", "n-F1 macro", "R-2", "R-1")))
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
        None, "--metrics", "-M", help="Metric families (no bertscore): comma list of f1,ed,link,argument,rouge."
    ),
    alignment: str | None = typer.Option(None, "--alignment", help=ALIGN_HELP),
    dependency: str | None = typer.Option(None, "--dependency", help=DEP_HELP),
    n_boot: int = typer.Option(1000, "--bootstrap", min=0, max=MAX_REPLICATES,
                                help="Bootstrap replicates for the CI of A - B."),
    n_perm: int = typer.Option(1000, "--permutations", min=0, max=MAX_REPLICATES,
                                help="Randomization replicates for the p-value."),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=MAX_SEED, help="Seed (same seed, same CIs and p-values)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the comparison JSON here."),
) -> None:
    """Paired comparison of two prediction sets on the same gold: A - B per metric, with a paired bootstrap
    95% CI and a two-sided p-value from a paired randomization (sign-flip) test.

    Example:

        taskbench compare preds/model-a.jsonl preds/model-b.jsonl --data data/multimedia --splits all -o cmp.json
    """

    _one_blas_thread()
    from ..dataset.jsonio import write_json
    from ..errors import ConfigError, did_you_mean
    from ..eval.api import compare_predictions
    from ..eval.runtime import gc_paused
    from ..report.tables import comparison_table, fit_width

    if mode not in ("add", "mul"):
        raise ConfigError(f"--mode must be add or mul, not {mode!r} ({did_you_mean(mode, ('add', 'mul'))})")
    if n_boot < 0 or n_perm < 0:
        raise ConfigError("--bootstrap and --permutations must be >= 0")
    split_list, n_list, metric_list = _choices(splits, n_tools, metrics)
    with gc_paused():
        library, data_path, ids = _load(data, dependency, alignment)
        result = compare_predictions(
            _records(data_path, stream=False), _records(a, stream=True), _records(b, stream=True), library,
            names=(a.stem, b.stem),
            dependency=dependency, splits=split_list, n_tools=n_list, group_mode=mode, metrics=metric_list,
            alignment_ids=ids, n_boot=n_boot, n_perm=n_perm, seed=seed, gold_path=data_path,
        )
    console = make_console()
    console.print(fit_width(comparison_table(result), console.width, keep=4))
    _warn(result.warnings)
    if output is not None:
        write_json(output, result.model_dump(mode="json"))
        console.print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    """Add `evaluate` and `compare` to the taskbench app."""
    app.command("evaluate")(evaluate_command)
    app.command("compare")(compare_command)
