"""`taskbench evaluate` and `taskbench compare`: score predictions, compare two prediction sets."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from .console import make_console

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
DEP_HELP = "Override the dataset's dependency kind: resource (links from `<node-j>` arguments) or temporal (task_links)."


def _load(data: Path, dependency: str | None, alignment: str | None):  # noqa: ANN202
    """(library, gold file, alignment ids or None) of a dataset directory: reads the tool library and, when
    asked for, alignment_ids.json (scoring reads the gold file itself, see :func:`_records`)."""
    from ..bundled import resolve_dir
    from ..dataset.jsonio import read_json
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
        doc = read_json(data / ALIGNMENT_FILE) if (data / ALIGNMENT_FILE).is_file() else None
        ids = Dataset(root=data, library=library, alignment_ids=doc).aligned_ids(alignment)
    return library, data_path, ids


def _records(path: Path, *, stream: bool):  # noqa: ANN202
    """The JSON objects of a JSON Lines (or parquet) file: a list, or with ``stream`` a one-pass iterator (the
    strict scorer normalises each record as it comes, so the parsed file is never held in memory at once)."""
    from ..dataset.layout import read_raw_records

    if not stream or str(path).endswith(".parquet"):
        return read_raw_records(path)
    return _stream(path)


def _stream(path: Path):  # noqa: ANN202
    from ..dataset.jsonio import iter_jsonl
    from ..errors import InputError

    for line, record in iter_jsonl(path):
        if not isinstance(record, dict):
            raise InputError("expected a JSON object per line", path=path, line=line)
        yield record


def _one_blas_thread() -> None:
    """Ask OpenBLAS for one thread before numpy loads (unless the user chose otherwise): the evaluator's matrix
    products are small, and idle OpenBLAS worker threads spin for a while after start-up, which costs about
    0.1 s of CPU per run."""
    import os

    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _choices(splits: str, n_tools: str, metrics: str | None):  # noqa: ANN202
    from ..eval.api import parse_choice_list, parse_metric_list
    from ..eval.strict import N_TOOLS, SPLITS

    return (
        parse_choice_list(splits, SPLITS, "split"),
        parse_choice_list(n_tools, N_TOOLS, "tool count"),
        parse_metric_list(metrics),
    )


def evaluate_command(
    data: str = typer.Option(..., "--data", help="Dataset directory (tool_desc.json + data.json) or a bundled dataset name."),
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
    metrics: str | None = typer.Option(None, "--metrics", "-m", help=METRICS_HELP),
    dependency: str | None = typer.Option(None, "--dependency", help=DEP_HELP),
    bootstrap: int = typer.Option(
        1000, "--bootstrap", help="Bootstrap replicates for the 95% CIs of every group (0 = no CIs)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap (same seed, same CIs)."),
    bertscore_model: str | None = typer.Option(
        None, "--bertscore-model", help="BERTScore model name or local path (default roberta-large)."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the metrics JSON here."),
    errors: bool = typer.Option(False, "--errors", help="Also print the error taxonomy table."),
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

    Example:

        taskbench evaluate --data data/multimedia --predictions preds/gpt-4.jsonl --both -o metrics/gpt-4.json
    """
    _one_blas_thread()
    from ..errors import ConfigError
    from ..eval.api import evaluate, write_metrics
    from ..eval.runtime import gc_paused

    if sum([compat, strict, both]) > 1:
        raise ConfigError("choose one of --compat, --strict, --both")
    run_mode = "compat" if compat else "both" if both else "strict"
    if mode not in ("add", "mul"):
        raise ConfigError(f"--mode must be add or mul, not {mode!r}")
    if bootstrap < 0:
        raise ConfigError("--bootstrap must be >= 0")
    split_list, n_list, metric_list = _choices(splits, n_tools, metrics)
    from .predict import make_executor

    runner = make_executor(executor, ray_address, workers)
    if runner is not None:  # sharded strict scoring (a map-reduce); see taskbench.executors.evaluate
        from ..executors.evaluate import aevaluate_sharded
        from ..runner import run_sync

        library, data_path, ids = _load(data, dependency, alignment)
        try:
            result = run_sync(aevaluate_sharded(
                data_path.parent, predictions, executor=runner, mode=run_mode, dependency=dependency,
                splits=split_list, n_tools=n_list, group_mode=mode, metrics=metric_list, alignment_ids=ids,
                bootstrap=bootstrap, seed=seed, bertscore_model=bertscore_model,
            ))
        finally:
            runner.close()
        _print_result(result, predictions.name, errors)
        if output is not None:
            write_metrics(result, output)
            _console().print(f"wrote {output}")
        return
    with gc_paused():  # the parsed JSON is millions of objects no collection needs to walk
        library, data_path, ids = _load(data, dependency, alignment)
        stream = run_mode == "strict"  # compat reads the gold records as they are: it keeps them
        gold = _records(data_path, stream=stream)
        preds = _records(predictions, stream=stream)
        result = evaluate(
            gold, preds, library, mode=run_mode, gold_records=None if stream else gold, gold_path=data_path,
            dependency=dependency, splits=split_list, n_tools=n_list, group_mode=mode, metrics=metric_list,
            alignment_ids=ids, bootstrap=bootstrap, seed=seed, bertscore_model=bertscore_model,
        )
        _print_result(result, predictions.name, errors)
        if output is not None:
            write_metrics(result, output)
            _console().print(f"wrote {output}")


def _console():  # noqa: ANN202

    return make_console()


def _print_result(result, name: str, errors: bool) -> None:  # noqa: ANN001
    from ..report.tables import accuracy_table, compat_table, strict_table, taxonomy_table

    console = _console()
    if result.strict is not None:
        console.print(strict_table(result.strict.groups, title=f"Strict metrics (%) - {name}"))
        console.print(accuracy_table(result.strict.groups))
        if result.strict.chain_edit_distance is not None:
            console.print(f"NED on chains: {100 * result.strict.chain_edit_distance:.2f}")
        if errors:
            console.print(taxonomy_table(result.strict.taxonomy))
    if result.compat is not None:
        console.print(compat_table(result.compat, title=f"Compat metrics (%) - {name}"))


def compare_command(
    a: Path = typer.Argument(..., help="Predictions A (JSON Lines)."),
    b: Path = typer.Argument(..., help="Predictions B (JSON Lines)."),
    data: str = typer.Option(..., "--data", help="Dataset directory (or bundled name) both were made for."),
    splits: str = typer.Option("overall", "--splits", help=SPLITS_HELP),
    n_tools: str = typer.Option("overall", "--n-tools", help=N_TOOLS_HELP),
    mode: str = typer.Option("add", "--mode", help=MODE_HELP),
    metrics: str | None = typer.Option(
        None, "--metrics", "-m", help="Metric families (no bertscore): comma list of f1,ed,link,argument,rouge."
    ),
    alignment: str | None = typer.Option(None, "--alignment", help=ALIGN_HELP),
    dependency: str | None = typer.Option(None, "--dependency", help=DEP_HELP),
    n_boot: int = typer.Option(1000, "--bootstrap", help="Bootstrap replicates for the CI of A - B."),
    n_perm: int = typer.Option(1000, "--permutations", help="Randomization replicates for the p-value."),
    seed: int = typer.Option(0, "--seed", help="Seed (same seed, same CIs and p-values)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the comparison JSON here."),
) -> None:
    """Paired comparison of two prediction sets on the same gold: A - B per metric, with a paired bootstrap
    95% CI and a two-sided p-value from a paired randomization (sign-flip) test.

    Example:

        taskbench compare preds/model-a.jsonl preds/model-b.jsonl --data data/multimedia --splits all -o cmp.json
    """

    _one_blas_thread()
    from ..dataset.jsonio import write_json
    from ..errors import ConfigError
    from ..eval.api import compare_predictions
    from ..eval.runtime import gc_paused
    from ..report.tables import comparison_table

    if mode not in ("add", "mul"):
        raise ConfigError(f"--mode must be add or mul, not {mode!r}")
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
    console.print(comparison_table(result))
    if output is not None:
        write_json(output, result.model_dump(mode="json"))
        console.print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    """Add `evaluate` and `compare` to the taskbench app."""
    app.command("evaluate")(evaluate_command)
    app.command("compare")(compare_command)
