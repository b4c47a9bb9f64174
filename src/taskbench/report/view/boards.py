"""The leaderboard across runs and the paired comparison of two entries, from the index.

The board reads each entry's metrics through the leaderboard's own reader (:func:`~taskbench.report.leaderboard
.entry_from_json`: one vocabulary for strict, compat and reference layouts) and sends, per entry, every
group's values, 95% CIs and sample counts, so the page can switch group, source and sort order without asking
again. The glossary is the reports' (:data:`~taskbench.report.leaderboard.GLOSSARY`), with each metric's
direction and the small-n threshold. The comparison is the evaluator's (:func:`~taskbench.eval.api
.compare_predictions`) on the samples both entries scored.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ...errors import InputError, TaskbenchError
from .index import ScoredEntry, ViewIndex

__all__ = ["MAX_BOARD_ROWS", "board", "compare", "glossary"]

MAX_BOARD_ROWS = 5000
"""Most (run, model, dataset) rows on one board."""

COMPARE_BOOT = 1000
"""Bootstrap replicates and randomization permutations of a comparison (as `taskbench compare`)."""

_cache: OrderedDict[tuple[str, str, str, str], dict[str, Any]] = OrderedDict()
_lock = threading.Lock()


def glossary() -> dict[str, Any]:
    """Every board metric: key, column header, meaning, and whether lower is better; the small-n threshold."""
    from ..leaderboard import BOARD_METRICS, GLOSSARY, LOWER_IS_BETTER, SMALL_N

    meaning = dict(GLOSSARY)
    return {"metrics": [{"key": k, "label": h, "meaning": meaning.get(h, ""), "lower_is_better": k in LOWER_IS_BETTER}
                        for k, h in BOARD_METRICS],
            "small_n": SMALL_N}


def board(index: ViewIndex, *, dataset: str | None = None) -> dict[str, Any]:
    """Rows of every scored entry (optionally of one dataset), strict and compat, every group."""
    from ..leaderboard import BOARD_METRICS, entry_from_json

    keys = [k for k, _ in BOARD_METRICS]
    rows: list[dict[str, Any]] = []
    datasets: set[str] = set()
    problems: list[str] = []
    for run in index.runs.values():
        for e in run.entries:
            datasets.add(e.dataset)
            if dataset and e.dataset != dataset:
                continue
            for source in ("strict", "compat"):
                doc = (e.metrics_doc or {}).get(source)
                if not isinstance(doc, dict):
                    continue
                try:
                    be = entry_from_json(doc, model=e.model, source=source)
                except InputError as exc:
                    problems.append(f"{run.id} {e.key} {source}: {exc}")
                    continue
                groups = {g: {"n": be.samples(g),
                              **{m: [be.value(m, g), list(iv) if (iv := be.interval(m, g)) else None] for m in keys}}
                          for g in be.groups}
                rows.append({"run": run.id, "run_title": run.title[:200], "date": run.date, "model": e.model[:200],
                             "dataset": e.dataset[:200], "entry": e.key[:400], "source": source, "groups": groups,
                             "warnings": [w[:500] for w in be.warnings[:10]]})
                if len(rows) >= MAX_BOARD_ROWS:
                    problems.append(f"more than {MAX_BOARD_ROWS} rows: the rest are left out")
                    return {"rows": rows, "datasets": sorted(datasets), "problems": problems, **glossary()}
    return {"rows": rows, "datasets": sorted(datasets), "problems": problems, **glossary()}


def _library(entry: ScoredEntry) -> Any:
    from ...dataset.layout import GRAPH_FILE, TOOL_FILE
    from ...graph.loaders import load_tool_library

    assert entry.data_path is not None
    tool = entry.data_path / TOOL_FILE if (entry.data_path / TOOL_FILE).is_file() else entry.data_path / GRAPH_FILE
    if not tool.is_file():
        raise InputError(f"no {TOOL_FILE} in the dataset directory", path=entry.data_path)
    return load_tool_library(tool, entry.dependency, name=entry.data_path.name)


def compare(index: ViewIndex, a: tuple[str, str], b: tuple[str, str], *, selected: set[str] | None = None
            ) -> dict[str, Any]:
    """``A - B`` per group and metric with paired bootstrap CIs and randomization p-values, on the samples
    both entries have predictions for (``selected``, from the sample index); cached."""
    from ...dataset.layout import find_data_file, iter_raw_records
    from ...eval.api import compare_predictions

    key = (*a, *b)
    with _lock:
        if key in _cache:
            return _cache[key]
    ea, eb = index.entry(*a), index.entry(*b)
    if ea is None or eb is None:
        return {"error": "unknown run or entry"}
    if ea.dataset != eb.dataset or ea.data_path is None or eb.data_path is None:
        return {"error": f"the two entries are on different datasets ({ea.dataset} and {eb.dataset}) or their "
                "gold is unknown: a paired comparison needs the same samples"}
    if ea.predictions is None or eb.predictions is None:
        return {"error": "a predictions file is missing"}
    gold = find_data_file(ea.data_path)
    if gold is None:
        return {"error": f"no gold data in {ea.data_path}"}
    try:
        result = compare_predictions(
            list(iter_raw_records(gold)), iter_raw_records(ea.predictions), iter_raw_records(eb.predictions),
            _library(ea), names=(f"{ea.model} ({a[0]})", f"{eb.model} ({b[0]})"), dependency=ea.dependency,
            splits=("overall", "single", "chain", "dag"), n_tools=("overall",), alignment_ids=selected,
            n_boot=COMPARE_BOOT, n_perm=COMPARE_BOOT, seed=0, gold_path=gold)
    except TaskbenchError as exc:
        return {"error": str(exc)}
    out = result.model_dump(mode="json")
    out["warnings"] = out.get("warnings", [])[:50]
    with _lock:
        _cache[key] = out
        while len(_cache) > 32:
            _cache.popitem(last=False)
    return out
