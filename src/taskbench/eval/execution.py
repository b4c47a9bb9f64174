"""Execution success: run each gold graph and its predicted graph, and score whether the prediction produces the
gold's final artifacts (resource domains) or end state (temporal domains). ``taskbench evaluate --execute``.

:func:`score_execution` runs and compares every sample once (per-sample rows); :func:`aggregate_execution`
gives the rates per split group (structure x tool count, the same groups as the other metrics), with seeded
bootstrap 95% CIs; :func:`evaluate_execution` does both. Executing is pure computation (no files, no network:
see :mod:`taskbench.envs.taskbench_exec`).

Per sample: ``success`` (1/0), ``exact`` (success with no final artifact beyond the gold's), ``recall`` (share
of the gold's final artifacts, and state records, the prediction produced). A missing or unparseable
prediction scores 0 and is counted as such; a gold graph with quirks still executes, and its quirks are
reported (``gold_notes``), never a reason to stop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from ..schema import Sample, TaskGraph, ToolLibrary
from . import stats
from .groups import ALL_N_TOOLS, ALL_SPLITS
from .strict import group_mask, parse_strict, split_groups

EXECUTION_METRICS = ("exec_success", "exec_exact", "exec_recall")
EXECUTION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("success", "exec_success"), ("exact", "exec_exact"), ("recall", "exec_recall"),
)
"""Table columns (header, metric key) of the execution metrics."""


class SampleExecution(BaseModel):
    """One sample's gold and predicted executions compared."""

    id: str = Field(description="Sample id.")
    split: str = Field(description="single | chain | dag.")
    n_tools: int = Field(description="Gold tool count.")
    status: str = Field(
        description="ok | missing | parse_error (of the prediction); gold_error (the gold record does not load); "
        "exec_error (executing failed: a bug, reported instead of ending the run)."
    )
    success: bool = Field(description="The prediction produced the gold's final artifacts (and end state).")
    exact: bool = Field(description="Success with nothing beyond the gold's finals.")
    recall: float = Field(description="Share of gold finals (and state records) produced.")
    reason: str = Field(default="", description="Why, in a sentence.")
    gold_notes: list[str] = Field(default_factory=list, description="Quirks of the gold graph met while running it.")
    prediction_notes: list[str] = Field(default_factory=list, description="Quirks of the predicted graph.")


class ExecutionGroup(BaseModel):
    """Execution metrics of one split group."""

    split: str = Field(description="overall | single | chain | dag.")
    n_tools: str = Field(description="overall or a tool count.")
    n_samples: int = Field(description="Gold samples in the group.")
    metrics: dict[str, float | None] = Field(description="exec_success, exec_exact, exec_recall (fractions).")
    ci: dict[str, tuple[float, float] | None] = Field(default_factory=dict, description="Bootstrap 95% CIs.")


class ExecutionResult(BaseModel):
    """Execution success of one prediction set."""

    dependency: str = Field(description="resource (artifacts) or temporal (end state).")
    seed: int = Field(description="Seed of the daily-life world and of the bootstrap.")
    bootstrap: int = Field(description="Bootstrap replicates (0 = no CIs).")
    n_gold: int = Field(description="Gold samples executed.")
    gold_with_notes: int = Field(description="Gold graphs that needed a quirk handled to run (see samples).")
    commutative: list[str] = Field(description="Tools whose argument order was ignored.")
    groups: dict[str, ExecutionGroup] = Field(description="'{split}_{n_tools}' -> metrics.")
    samples: list[SampleExecution] = Field(description="Per-sample results.")


def _coerce_links(result: Mapping[str, Any]) -> dict[str, Any]:
    """Links whose endpoints are node indices (``0``, ``"1"``, ``"<node-2>"``) or ``[source, target]`` pairs
    rewritten to tool names, so such graphs load (unknown shapes are dropped; the executor notes what is left)."""
    out = dict(result)
    nodes = out.get("task_nodes")
    links = out.get("task_links")
    if not isinstance(links, list) or not isinstance(nodes, list):
        return out
    names = [n.get("task") if isinstance(n, Mapping) else None for n in nodes]

    def endpoint(v: Any) -> Any:
        text = str(v).strip()
        text = text.removeprefix("<node-").removesuffix(">") if text.startswith("<node-") else text
        if not isinstance(v, bool) and text.isdigit() and len(text) <= 9:  # bools are ints; huge ints do not parse
            i = int(text)
            return names[i] if 0 <= i < len(names) and isinstance(names[i], str) else f"<node-{i}>"
        return v if isinstance(v, str) else text

    fixed = []
    for lk in links:
        if isinstance(lk, Mapping) and "source" in lk and "target" in lk:
            fixed.append({"source": endpoint(lk["source"]), "target": endpoint(lk["target"])})
        elif isinstance(lk, list | tuple) and len(lk) == 2:
            fixed.append({"source": endpoint(lk[0]), "target": endpoint(lk[1])})
    out["task_links"] = fixed
    return out


def _gold_graph(record: Any) -> tuple[str, str, Sample | None, str | None]:
    from ..dataset.layout import parse_sample
    from ..errors import InputError

    if isinstance(record, Sample):
        return record.id, record.type, record, None
    rid = str(record.get("id", "")) if isinstance(record, Mapping) else ""
    try:
        fixed = _coerce_links(record) if isinstance(record, Mapping) else record
        sample = parse_sample(fixed)
    except InputError as exc:
        return rid, str(record.get("type", "single")) if isinstance(record, Mapping) else "single", None, str(exc)
    return sample.id, sample.type, sample, None


def score_execution(
    samples: Iterable[Sample] | Iterable[Mapping[str, Any]],
    predictions: Iterable[Mapping[str, Any]],
    library: ToolLibrary,
    *,
    commutative: Iterable[str] | None = None,
    seed: int = 0,
    alignment_ids: set[str] | None = None,
) -> list[SampleExecution]:
    """Execute every gold graph and its prediction (records ``{"id", "result"}``; the last record of an id
    wins) and compare them."""
    from ..envs.taskbench_exec import DomainRuntime, compare_executions

    runtime = DomainRuntime(library, commutative)
    by_id: dict[str, Mapping[str, Any]] = {}
    for pred_rec in predictions:
        if isinstance(pred_rec, Mapping) and "id" in pred_rec:
            by_id[str(pred_rec["id"])] = pred_rec
    out: list[SampleExecution] = []
    for record in samples:
        sid, split, sample, problem = _gold_graph(record)
        if alignment_ids is not None and sid not in alignment_ids:
            continue
        if sample is None:  # the gold record itself does not load: reported, scored as not executable
            out.append(SampleExecution(id=sid, split=split, n_tools=0, status="gold_error", success=False,
                                       exact=False, recall=0.0, reason=f"gold record does not load: {problem}"))
            continue
        rec: Mapping[str, Any] | None = by_id.get(sid)
        if rec is not None and isinstance(rec.get("result"), Mapping):
            rec = {**rec, "result": _coerce_links(rec["result"])}
        parsed = parse_strict(sid, rec)
        graph = parsed.graph if parsed.status == "ok" else TaskGraph()
        try:
            gold = runtime.execute(sample, seed=seed)
            pred = runtime.execute(graph, seed=seed)
            check = compare_executions(gold, pred)
        except Exception as exc:  # an executor bug on odd data is reported for the sample, never the end of the run
            out.append(SampleExecution(id=sid, split=sample.type, n_tools=len(sample.task_nodes), status="exec_error",
                                       success=False, exact=False, recall=0.0,
                                       reason=f"execution failed: {type(exc).__name__}: {exc}"))
            continue
        ok = parsed.status == "ok"
        reason = check.reason if ok else f"{parsed.status}: {parsed.error}"
        out.append(SampleExecution(
            id=sid, split=sample.type, n_tools=len(sample.task_nodes), status=parsed.status,
            success=ok and check.success, exact=ok and check.exact, recall=check.recall if ok else 0.0,
            reason=reason, gold_notes=gold.notes, prediction_notes=pred.notes if ok else [],
        ))
    return out


def _statistic(sums: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    n = np.asarray(sums["n"], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {m: np.where(n > 0, np.asarray(sums[m], dtype=float) / np.where(n > 0, n, 1), np.nan)
                for m in EXECUTION_METRICS}


def aggregate_execution(
    rows: Sequence[SampleExecution],
    *,
    dependency: str,
    splits: Sequence[str] = ALL_SPLITS,
    n_tools: Sequence[str] = ALL_N_TOOLS,
    mode: str = "add",
    bootstrap: int = 1000,
    seed: int = 0,
    commutative: Iterable[str] = (),
) -> ExecutionResult:
    """Rates per split group, with seeded bootstrap 95% CIs."""
    columns = {
        "exec_success": np.array([r.success for r in rows], dtype=float),
        "exec_exact": np.array([r.exact for r in rows], dtype=float),
        "exec_recall": np.array([r.recall for r in rows], dtype=float),
        "n": np.ones(len(rows)),
    }
    split_arr = np.array([r.split for r in rows], dtype=object)
    n_arr = np.array([r.n_tools for r in rows], dtype=int)
    pairs = split_groups(splits, n_tools, mode)
    masks = {f"{s}_{n}": group_mask(split_arr, n_arr, s, n) for s, n in pairs}
    cis = stats.bootstrap_groups(columns, masks, _statistic, n_boot=bootstrap, seed=seed, key="execution") \
        if bootstrap > 0 and rows else {}
    groups: dict[str, ExecutionGroup] = {}
    for (s, n), (key, mask) in zip(pairs, masks.items(), strict=True):
        count = int(mask.sum())
        metrics: dict[str, float | None] = {}
        if count:
            values = _statistic({k: v[mask].sum(axis=0) for k, v in columns.items()})
            metrics = {k: float(v) for k, v in values.items()}
        groups[key] = ExecutionGroup(split=s, n_tools=n, n_samples=count, metrics=metrics,
                                     ci=cis.get(key, {}) if count else {})
    return ExecutionResult(
        dependency=dependency, seed=seed, bootstrap=bootstrap, n_gold=len(rows),
        gold_with_notes=sum(1 for r in rows if r.gold_notes or r.status == "gold_error"),
        commutative=sorted(commutative), groups=groups, samples=list(rows),
    )


def evaluate_execution(
    samples: Iterable[Sample] | Iterable[Mapping[str, Any]],
    predictions: Iterable[Mapping[str, Any]],
    library: ToolLibrary,
    *,
    splits: Sequence[str] = ALL_SPLITS,
    n_tools: Sequence[str] = ALL_N_TOOLS,
    mode: str = "add",
    commutative: Iterable[str] | None = None,
    alignment_ids: set[str] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> ExecutionResult:
    """:func:`score_execution` then :func:`aggregate_execution`."""
    from ..envs.taskbench_exec import DomainRuntime

    rows = score_execution(samples, predictions, library, commutative=commutative, seed=seed,
                           alignment_ids=alignment_ids)
    used = DomainRuntime(library, commutative).commutative
    return aggregate_execution(rows, dependency=library.dependency, splits=splits, n_tools=n_tools, mode=mode,
                               bootstrap=bootstrap, seed=seed, commutative=used)


__all__ = [
    "EXECUTION_COLUMNS",
    "EXECUTION_METRICS",
    "ExecutionGroup",
    "ExecutionResult",
    "SampleExecution",
    "aggregate_execution",
    "evaluate_execution",
    "score_execution",
]
