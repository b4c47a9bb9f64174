"""`taskbench evaluate` and `taskbench compare` as library calls: a spec with the command's defaults, one call.

``evaluate("multimedia", "preds/qwen.jsonl")`` from a notebook gives what ``taskbench evaluate --data multimedia
--predictions preds/qwen.jsonl`` prints and writes, because the command is this call: it turns its flags into an
:class:`EvaluateSpec` and calls :func:`evaluate_spec`. Every option is checked here, once
(:meth:`EvaluateSpec.resolved`); the command only renders the result.

- :class:`EvaluateSpec` / :func:`evaluate_spec`: a dataset directory (or bundled name) and a predictions file
  -> :class:`~taskbench.eval.api.EvaluationResult`, in this process or with the strict scoring sharded over an
  executor (``executor=ExecutorSpec("ray")``); with ``output``, the metrics JSON and its run header are written.
- :func:`evaluate`: the same with keyword options, and the in-memory form of :func:`taskbench.eval.api.evaluate`
  (samples, prediction records, a library) when given objects instead of paths.
- :class:`CompareSpec` / :func:`compare_spec`: `taskbench compare`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from ..errors import ConfigError, InputError, did_you_mean
from .executor import ExecutorSpec, check_executor, executor_scope

if TYPE_CHECKING:  # pragma: no cover
    from ..eval.api import Comparison, EvaluationResult
    from ..eval.execution import ExecutionResult
    from ..schema import ToolLibrary

MODES = ("strict", "compat", "both")
GROUP_MODES = ("add", "mul")
UNUSABLE = ("skip", "error")


def _choices(splits: str | Sequence[str], n_tools: str | Sequence[str], metrics: str | Sequence[str] | None
             ) -> tuple[list[str], list[str], list[str]]:
    from ..eval.api import parse_choice_list, parse_metric_list
    from ..eval.strict import N_TOOLS, SPLITS

    return (parse_choice_list(splits, SPLITS, "split"), parse_choice_list(n_tools, N_TOOLS, "tool count"),
            parse_metric_list(metrics))


def parse_ids(value: str | Sequence[str] | None) -> list[str] | None:
    """``--ids``: a comma list, ``@file`` (ids separated by newlines or commas), or a list of ids."""
    if value is None:
        return None
    if not isinstance(value, str):
        ids = [str(i).strip() for i in value if str(i).strip()]
    else:
        if value.startswith("@"):
            from ..dataset.jsonio import check_input_file

            path = Path(value[1:])
            check_input_file(path)  # a device or a FIFO is refused before it is read
            try:
                value = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read the ids file ({getattr(exc, 'strerror', None) or exc})",
                                 path=path) from None
        ids = [i.strip() for part in value.splitlines() for i in part.split(",") if i.strip()]
    if not ids:
        raise ConfigError("--ids names no ids; give a comma list or @file")
    return ids


@dataclass(frozen=True)
class EvaluateSpec:
    """Everything `taskbench evaluate` takes, with its defaults (see ``taskbench evaluate --help``)."""

    data: str | Path
    """Dataset directory (tool_desc.json + data.json) or a bundled dataset name."""
    predictions: str | Path
    """Predictions file: JSON Lines of ``{"id", "result": {...}}`` (or parquet, or a JSON array)."""
    mode: Literal["strict", "compat", "both"] = "strict"
    """``strict`` (every gold id counts), ``compat`` (the reference evaluator's numbers and layout) or both."""
    splits: str | Sequence[str] = "all"
    """Task structures to report: ``all`` or some of overall, single, chain, dag."""
    n_tools: str | Sequence[str] = "all"
    """Tool counts to report: ``all`` or some of overall, 1..10."""
    group_mode: str = "add"
    """``add``: each split overall + overall per tool count; ``mul``: every combination."""
    alignment: str | None = None
    """Score only the ids of one alignment set of alignment_ids.json."""
    metrics: str | Sequence[str] | None = None
    """Metric families (``all`` or a list; None: the defaults of the metric table)."""
    dependency: str | None = None
    """Override the dataset's dependency kind (resource or temporal)."""
    bootstrap: int = 1000
    """Bootstrap replicates for the 95% CIs of every group (0: none)."""
    seed: int = 0
    """Seed of the bootstrap."""
    bertscore_model: str | None = None
    """BERTScore model name or local path (default roberta-large)."""
    ids: str | Sequence[str] | None = None
    """Score only these gold ids: a list, a comma list, or ``@FILE``."""
    limit: int | None = None
    """Score at most N gold samples, stratified over single/chain/dag as ``predict --limit N`` picks them."""
    unusable: str = "skip"
    """A gold record that cannot be scored: ``skip`` (left out, reported) or ``error``."""
    execute: bool = False
    """Also run every gold and predicted graph on the domain's executable tools (execution success)."""
    executor: ExecutorSpec | Any = field(default_factory=ExecutorSpec)
    """Where the strict scoring runs: this process, or sharded over Ray workers (the same numbers); an
    executor object (:mod:`taskbench.executors`) is used as given and left open."""
    output: str | Path | None = None
    """Write the metrics JSON here (and its run header beside it, ``FILE.header.json``)."""

    def resolved(self) -> EvaluateSpec:
        """A copy with every option checked and the lists parsed (splits, tool counts, metric families, ids);
        :class:`ConfigError` / :class:`InputError` name what is wrong."""
        if self.mode not in MODES:
            raise ConfigError(f"mode must be strict, compat or both, not {self.mode!r} "
                              f"({did_you_mean(self.mode, MODES)})")
        if self.execute and self.mode == "compat":
            raise ConfigError("--execute adds to the strict metrics; use it without --compat, or with --both")
        if self.group_mode not in GROUP_MODES:
            raise ConfigError(f"--mode must be add or mul, not {self.group_mode!r} "
                              f"({did_you_mean(self.group_mode, GROUP_MODES)})")
        from ..eval.stats import check_replicates

        check_replicates(self.bootstrap)
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be a positive number of samples, not {self.limit}")
        if self.unusable not in UNUSABLE:
            raise ConfigError(f"--unusable must be skip or error, not {self.unusable!r} "
                              f"({did_you_mean(self.unusable, UNUSABLE)})")
        splits, n_tools, metrics = _choices(self.splits, self.n_tools, self.metrics)
        ids = parse_ids(self.ids)
        if check_executor(self.executor) and (ids or self.limit or self.execute or self.unusable != "skip"):
            raise ConfigError("--executor ray shards strict scoring of the whole set; --ids, --limit, --execute and "
                              "--unusable run locally (drop --executor ray)")
        return replace(self, splits=splits, n_tools=n_tools, metrics=metrics, ids=ids)

    def settings(self) -> dict[str, Any]:
        """What the run header records of a resolved spec (its ``config`` and ``identity``)."""
        return {"data": self.data, "predictions": str(Path(self.predictions).resolve()), "mode": self.mode,
                "splits": self.splits, "n_tools": self.n_tools, "group_mode": self.group_mode,
                "alignment": self.alignment, "metrics": self.metrics, "dependency": self.dependency,
                "bootstrap": self.bootstrap, "seed": self.seed, "ids": self.ids, "limit": self.limit,
                "unusable": self.unusable, "execute": self.execute,
                "executor": getattr(self.executor, "name", "local")}


# ------------------------------------------------------------------------------------------------ files


def load_dataset_files(data: str | Path, dependency: str | None, alignment: str | None
                       ) -> tuple[ToolLibrary, Path, set[str] | None]:
    """(library, gold file, alignment ids or None) of a dataset directory or bundled name: reads the tool library
    and, when asked for, alignment_ids.json (scoring reads the gold file itself)."""
    from ..bundled import resolve_dir
    from ..dataset.layout import ALIGNMENT_FILE, GRAPH_FILE, TOOL_FILE, Dataset, find_data_file
    from ..graph.loaders import load_tool_library

    root = resolve_dir(data)
    tool_path = root / TOOL_FILE if (root / TOOL_FILE).is_file() else root / GRAPH_FILE
    if not tool_path.is_file():
        raise InputError(f"no {TOOL_FILE} in the dataset directory", path=root)
    library = load_tool_library(tool_path, dependency, name=root.name)
    data_path = find_data_file(root)
    if data_path is None:
        raise InputError("no gold data (data.json) in the dataset directory", path=root)
    ids = None
    if alignment:
        path = root / ALIGNMENT_FILE if (root / ALIGNMENT_FILE).is_file() else None
        ids = Dataset(root=root, library=library, alignment_path=path).aligned_ids(alignment)
    return library, data_path, ids


@overload
def read_records(path: Path, *, stream: Literal[False], problems: list[InputError] | None = None
                 ) -> list[dict[str, Any]]: ...


@overload
def read_records(path: Path, *, stream: bool, problems: list[InputError] | None = None
                 ) -> list[dict[str, Any]] | Iterator[dict[str, Any]]: ...


def read_records(path: Path, *, stream: bool, problems: list[InputError] | None = None
                 ) -> list[dict[str, Any]] | Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines (or parquet, or JSON array) file: a list, or with ``stream`` a one-pass
    iterator (the strict scorer normalises each record as it comes, so the parsed file is never held in memory
    at once). With a ``problems`` list, unreadable lines are collected there instead of stopping."""
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


def _stratified(data_path: Path, aligned: set[str] | None, wanted: Sequence[str] | None, limit: int) -> list[str]:
    """The ids of at most ``limit`` gold samples (of those in ``aligned`` and ``wanted``), stratified over the
    structures exactly as ``predict --limit`` chooses them."""
    from ..dataset.layout import load_dataset
    from ..predict.runner import select_samples

    keep = set(wanted) if wanted is not None else None
    samples = [s for s in load_dataset(data_path.parent).samples
               if (aligned is None or s.id in aligned) and (keep is None or s.id in keep)]
    return [s.id for s in select_samples(samples, limit)]


# ------------------------------------------------------------------------------------------------ evaluate


def evaluate_spec(spec: EvaluateSpec, *, records: Iterable[Mapping[str, Any]] | None = None) -> EvaluationResult:
    """Score ``spec.predictions`` against ``spec.data``'s gold graphs, as `taskbench evaluate` does; with
    ``spec.output``, write the metrics JSON and its run header. ``records``: the prediction records themselves
    instead of reading ``spec.predictions`` (then only named in the header)."""
    from ..eval.runtime import gc_paused

    spec = spec.resolved()
    with executor_scope(spec.executor) as runner:
        if runner is not None:
            if records is not None:
                raise ConfigError("--executor ray reads the predictions from a file every worker can read; "
                                  "pass its path")
            result = _sharded(spec, runner)
        else:
            with gc_paused():  # the parsed JSON is millions of objects no collection needs to walk
                result = _local(spec, records)
    if spec.output is not None and str(spec.output) != "-":
        write_evaluation(result, spec)
    return result


def _local(spec: EvaluateSpec, records: Iterable[Mapping[str, Any]] | None) -> EvaluationResult:
    from ..eval.api import evaluate as score

    library, data_path, aligned = load_dataset_files(spec.data, spec.dependency, spec.alignment)
    wanted = spec.ids
    limit = spec.limit
    if limit is not None:  # the samples predict --limit N picked, not the first N in file order
        wanted, limit = _stratified(data_path, aligned, wanted, limit), None  # type: ignore[arg-type]
    stream = spec.mode == "strict"  # compat reads the gold records as they are: it keeps them
    gold_problems: list[InputError] | None = [] if spec.unusable == "skip" else None
    pred_problems: list[InputError] = []
    gold = read_records(data_path, stream=stream, problems=gold_problems)
    preds = records if records is not None else read_records(Path(spec.predictions), stream=stream,
                                                             problems=pred_problems)
    gold_records = gold if not stream and isinstance(gold, list) else None  # not streamed: a list
    result = score(
        gold, preds, library, mode=spec.mode, gold_records=gold_records, gold_path=data_path,
        dependency=spec.dependency, splits=list(spec.splits), n_tools=list(spec.n_tools),
        group_mode=spec.group_mode, metrics=list(spec.metrics or ()), alignment_ids=aligned,
        ids=list(wanted) if wanted is not None else None, limit=limit, bootstrap=spec.bootstrap, seed=spec.seed,
        bertscore_model=spec.bertscore_model, unusable=spec.unusable, gold_problems=gold_problems,
        prediction_problems=pred_problems,
    )
    if spec.execute:
        result.execution = _execute(spec, data_path, library, aligned, records)
    return result


def _sharded(spec: EvaluateSpec, runner: Any) -> EvaluationResult:
    """Strict per-sample scoring as a map-reduce over the executor's workers (:mod:`taskbench.executors.evaluate`)."""
    from ..executors.evaluate import aevaluate_sharded
    from ..records import run_sync

    _, data_path, aligned = load_dataset_files(spec.data, spec.dependency, spec.alignment)
    return run_sync(aevaluate_sharded(
        data_path.parent, spec.predictions, executor=runner, mode=spec.mode, dependency=spec.dependency,
        splits=list(spec.splits), n_tools=list(spec.n_tools), group_mode=spec.group_mode,
        metrics=list(spec.metrics or ()), alignment_ids=aligned, bootstrap=spec.bootstrap, seed=spec.seed,
        bertscore_model=spec.bertscore_model,
    ))


def _execute(spec: EvaluateSpec, data_path: Path, library: ToolLibrary, ids: set[str] | None,
             records: Iterable[Mapping[str, Any]] | None) -> ExecutionResult:
    """Execution success of the predictions (gold and predictions read again: strict scoring streamed them)."""
    from ..eval.execution import evaluate_execution

    preds = list(records) if records is not None else read_records(Path(spec.predictions), stream=False)
    return evaluate_execution(
        read_records(data_path, stream=False), preds, library, splits=list(spec.splits),
        n_tools=list(spec.n_tools), mode=spec.group_mode, alignment_ids=ids, bootstrap=spec.bootstrap,
        seed=spec.seed,
    )


def write_evaluation(result: EvaluationResult, spec: EvaluateSpec) -> Path:
    """Write the metrics JSON to ``spec.output`` and its run header beside it (``.FILE.header.json``, see
    :mod:`taskbench.dataset.header`), with the model, dataset and sample count the scores are of (a compat-only
    file has no room for them)."""
    from ..dataset.header import new_header, write_header
    from ..eval.api import write_metrics

    if spec.output is None:
        raise ConfigError("no output file to write the metrics to")
    output = Path(spec.output)
    write_metrics(result, output)
    settings = spec.settings()
    config = {**settings, "model": result.model, "dataset": result.dataset, "n_samples": result.n_samples}
    write_header(output, new_header("evaluate", config=config, identity=settings, seeds={"bootstrap": spec.seed}))
    return output


def evaluate(
    data: Any,
    predictions: Any,
    library: ToolLibrary | None = None,
    **options: Any,
) -> EvaluationResult:
    """Score predictions with the defaults of `taskbench evaluate` (strict; all splits and tool counts, mode
    add; the default metric families; 1000 bootstrap replicates, seed 0).

    ``evaluate("multimedia", "preds/qwen.jsonl")``: ``data`` a dataset directory or bundled name,
    ``predictions`` a predictions file or the prediction records (dicts or :class:`~taskbench.schema.Prediction`);
    ``options`` are the fields of :class:`EvaluateSpec` (``mode="both"``, ``splits=["chain"]``, ``limit=30``,
    ``output="metrics.json"``, ``executor=ExecutorSpec("ray")``, ...). The result is what the command prints and
    writes: ``result.to_json()`` is its metrics JSON.

    Given objects instead of a path (gold :class:`~taskbench.schema.Sample` objects or records and a
    :class:`~taskbench.schema.ToolLibrary`), it is :func:`taskbench.eval.api.evaluate` with the same defaults.
    """
    from ..dataset.layout import Dataset

    if library is not None or not isinstance(data, (str, Path, Dataset)):
        if library is None:
            raise ConfigError("evaluate(samples, predictions, library): give the tool library, or pass a dataset "
                              "directory (or bundled name) as the first argument")
        from ..eval.api import evaluate as score

        return score(data, predictions, library, **options)
    if isinstance(data, Dataset):
        data = data.root
    if isinstance(predictions, (str, Path)):
        return evaluate_spec(EvaluateSpec(data=data, predictions=predictions, **options))
    records = [p.to_record() if hasattr(p, "to_record") else p for p in predictions]
    return evaluate_spec(EvaluateSpec(data=data, predictions="<records>", **options), records=records)


# ------------------------------------------------------------------------------------------------ compare


@dataclass(frozen=True)
class CompareSpec:
    """Everything `taskbench compare` takes, with its defaults."""

    a: str | Path
    """Predictions A (JSON Lines)."""
    b: str | Path
    """Predictions B (JSON Lines)."""
    data: str | Path
    """Dataset directory (or bundled name) both were made for."""
    splits: str | Sequence[str] = "overall"
    n_tools: str | Sequence[str] = "overall"
    group_mode: str = "add"
    metrics: str | Sequence[str] | None = None
    alignment: str | None = None
    dependency: str | None = None
    n_boot: int = 1000
    """Bootstrap replicates for the CI of A - B."""
    n_perm: int = 1000
    """Randomization replicates for the p-value."""
    seed: int = 0
    output: str | Path | None = None
    """Write the comparison JSON here."""

    def resolved(self) -> CompareSpec:
        """A copy with every option checked and the lists parsed."""
        if self.group_mode not in GROUP_MODES:
            raise ConfigError(f"--mode must be add or mul, not {self.group_mode!r} "
                              f"({did_you_mean(self.group_mode, GROUP_MODES)})")
        if self.n_boot < 0 or self.n_perm < 0:
            raise ConfigError("--bootstrap and --permutations must be >= 0")
        splits, n_tools, metrics = _choices(self.splits, self.n_tools, self.metrics)
        return replace(self, splits=splits, n_tools=n_tools, metrics=metrics)


def compare_spec(spec: CompareSpec) -> Comparison:
    """`taskbench compare`: both prediction sets scored strictly on the same gold and compared pairwise per
    group; with ``spec.output``, the comparison JSON is written."""
    from ..eval.api import compare_predictions
    from ..eval.runtime import gc_paused

    spec = spec.resolved()
    a, b = Path(spec.a), Path(spec.b)
    with gc_paused():
        library, data_path, ids = load_dataset_files(spec.data, spec.dependency, spec.alignment)
        result = compare_predictions(
            read_records(data_path, stream=False), read_records(a, stream=True), read_records(b, stream=True),
            library, names=(a.stem, b.stem), dependency=spec.dependency, splits=list(spec.splits),
            n_tools=list(spec.n_tools), group_mode=spec.group_mode, metrics=list(spec.metrics or ()),
            alignment_ids=ids, n_boot=spec.n_boot, n_perm=spec.n_perm, seed=spec.seed, gold_path=data_path,
        )
    if spec.output is not None and str(spec.output) != "-":
        from ..dataset.jsonio import write_json

        write_json(Path(spec.output), result.model_dump(mode="json"))
    return result


__all__ = ["CompareSpec", "EvaluateSpec", "compare_spec", "evaluate", "evaluate_spec", "load_dataset_files",
           "parse_ids", "read_records", "write_evaluation"]
