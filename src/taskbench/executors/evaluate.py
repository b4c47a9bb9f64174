"""``taskbench evaluate --executor ray``: strict scoring as a map-reduce over shards of the gold set.

Map: each worker loads the tool library, reads the gold file and the predictions file (paths every worker can
read) and scores its contiguous shard of gold ids with :func:`taskbench.eval.api.score_strict` (the shard given
as its ``alignment_ids``), returning the per-sample columns. Reduce: the driver concatenates the shards' columns
in gold order and aggregates them with :func:`taskbench.eval.api.aggregate_strict`. Every metric is a function of
sums over samples and the bootstrap resamples the same rows in the same order, so the numbers equal a local
run's exactly. Reference-compatible scoring (``--compat``/``--both``) runs on the driver, as locally: its
quirks (which ids it keeps, dropped records) are decided over the whole set.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..eval.api import DEFAULT_BOOTSTRAP, DEFAULT_METRICS, EvaluationResult, ScoredSet, aggregate_strict
from ..eval.strict import N_TOOLS, SPLITS


def _library(data: str, dependency: str | None) -> tuple[Any, Path]:
    from ..dataset.layout import GRAPH_FILE, TOOL_FILE, find_data_file
    from ..errors import InputError
    from ..graph.loaders import load_tool_library

    root = Path(data)
    tool_path = root / TOOL_FILE if (root / TOOL_FILE).is_file() else root / GRAPH_FILE
    if not tool_path.is_file():
        raise InputError(f"no {TOOL_FILE} in the dataset directory", path=root)
    data_path = find_data_file(root)
    if data_path is None:
        raise InputError("no gold data (data.json) in the dataset directory", path=root)
    return load_tool_library(tool_path, dependency, name=root.name), data_path


def score_shard(data: str, predictions: str, dependency: str | None, metrics: list[str], ids: list[str],
                bertscore_model: str | None = None) -> ScoredSet:
    """The map step: score the gold ids ``ids`` (runs on a worker)."""
    from ..dataset.jsonio import iter_jsonl
    from ..dataset.layout import read_raw_records
    from ..eval.api import bertscorer_for, score_strict, with_dependency

    library, data_path = _library(data, dependency)
    library, dep = with_dependency(library, dependency)
    scorer = bertscorer_for(metrics, bertscore_model)
    records = (rec for _, rec in iter_jsonl(predictions) if isinstance(rec, dict))
    return score_strict(read_raw_records(data_path), records, library, dependency=dep, metrics=metrics,
                        alignment_ids=set(ids), bertscorer=scorer, gold_path=data_path)


def concat_scored(parts: Sequence[ScoredSet]) -> ScoredSet:
    """The reduce step: shards' scored sets, in order, as one (unmatched ids: those no shard wanted)."""
    first = parts[0]
    unmatched = set(first.unmatched_ids)
    for p in parts[1:]:
        unmatched &= set(p.unmatched_ids)
    return ScoredSet(
        ids=[i for p in parts for i in p.ids],
        splits=np.concatenate([p.splits for p in parts]),
        n_tools=np.concatenate([p.n_tools for p in parts]),
        columns={k: np.concatenate([p.columns[k] for p in parts], axis=0) for k in first.columns},
        scores=[s for p in parts for s in p.scores],
        errors=[e for p in parts for e in p.errors],
        unmatched_ids=sorted(unmatched),
        duplicate_ids=first.duplicate_ids,  # every shard reads the whole predictions file
        tool_names=first.tool_names,
        missing_ids=[i for p in parts for i in p.missing_ids],
        gold_ids=set().union(*(p.gold_ids for p in parts)),
    )


def gold_ids(data: str, alignment_ids: set[str] | None = None) -> list[str]:
    """The gold file's ids in order (the ones in ``alignment_ids`` when given)."""
    from ..dataset.layout import read_raw_records

    _, data_path = _library(data, None)
    ids = [str(r["id"]) for r in read_raw_records(data_path) if isinstance(r, dict) and "id" in r]
    return [i for i in ids if alignment_ids is None or i in alignment_ids]


async def aevaluate_sharded(
    data: str | Path,
    predictions: str | Path,
    *,
    executor: Any,
    shards: int | None = None,
    mode: str = "strict",
    dependency: str | None = None,
    splits: Sequence[str] = SPLITS,
    n_tools: Sequence[str] = N_TOOLS,
    group_mode: str = "add",
    metrics: Sequence[str] = DEFAULT_METRICS,
    alignment_ids: set[str] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    bertscore_model: str | None = None,
) -> EvaluationResult:
    """:func:`taskbench.eval.api.evaluate` on a dataset directory and a predictions file, with the strict
    per-sample scoring sharded over ``executor`` (see the module docstring)."""
    from ..errors import ConfigError
    from .sharded import split

    if mode not in ("strict", "compat", "both"):
        raise ConfigError(f"mode must be strict, compat or both, not {mode!r}")
    data, predictions = str(Path(data).resolve()), str(Path(predictions).resolve())
    library, data_path = _library(data, dependency)
    dep = dependency or library.dependency
    out = EvaluationResult()
    if mode in ("strict", "both"):
        ids = gold_ids(data, alignment_ids)
        chunks = split(ids, shards or executor.workers) or [[]]
        calls = [(data, predictions, dependency, list(metrics), chunk, bertscore_model) for chunk in chunks]
        parts = await executor.amap(score_shard, calls)
        scored = concat_scored(parts)
        out.strict = aggregate_strict(scored, dependency=dep, splits=splits, n_tools=n_tools,
                                      mode=group_mode, metrics=metrics, bootstrap=bootstrap, seed=seed)
        # coverage warnings as a local run gives them (the prediction ids are tallied here, once)
        from ..dataset.jsonio import iter_jsonl
        from ..eval.coverage import Coverage, IdTally, coverage_warnings, disjoint_error

        tally = IdTally(rec for _, rec in iter_jsonl(predictions)).count()
        coverage = Coverage(
            selected=scored.ids, gold_ids=scored.gold_ids, predicted=tally.ids, duplicates=list(tally.duplicates),
            no_id=tally.no_id, predicted_nodes=sum(sc.node[0] + sc.node[1] for sc in scored.scores),
            foreign_nodes=sum(len(sc.hallucinated) for sc in scored.scores))
        if coverage.disjoint:  # as a local run: nothing to score is an error
            raise disjoint_error(coverage, dataset=library.name or None)
        out.warnings = coverage_warnings(coverage, strict=True)
        out.strict.warnings = list(out.warnings)
        out.model = next(iter(tally.models)) if len(tally.models) == 1 else None
        out.n_samples = len(scored.ids)
    out.dataset = library.name or None
    if mode in ("compat", "both"):
        from ..dataset.layout import read_raw_records
        from ..eval.api import evaluate

        gold = read_raw_records(data_path)
        preds = read_raw_records(Path(predictions))
        local = evaluate(gold, preds, library, mode="compat", gold_records=gold, dependency=dependency,
                         splits=splits, n_tools=n_tools, group_mode=group_mode, metrics=metrics,
                         alignment_ids=alignment_ids, bootstrap=bootstrap, seed=seed,
                         bertscore_model=bertscore_model, gold_path=data_path)
        out.compat, out.compat_log = local.compat, local.compat_log
        if out.strict is None:
            out.model, out.n_samples = local.model, local.n_samples
    return out


__all__ = ["aevaluate_sharded", "concat_scored", "gold_ids", "score_shard"]
