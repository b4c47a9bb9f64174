"""The evaluator's public entry points: score predictions strictly and/or as the reference does.

- :func:`score_strict`: parse every prediction once and score every gold sample once -> :class:`ScoredSet`
  (per-sample columns; the input of aggregation, bootstrap and paired comparison).
- :func:`aggregate_strict`: per split group metrics, bootstrap CIs, per-tool table, error taxonomy ->
  :class:`StrictResult`.
- :func:`evaluate`: the whole run (strict, compat or both) -> :class:`EvaluationResult`; :func:`write_metrics`
  writes its JSON (``compat`` alone = exactly the reference's metrics JSON layout).
- :func:`compare_predictions`: paired difference of two prediction sets per group and metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from ..errors import ConfigError
from ..schema import Sample, ToolLibrary
from . import stats
from .strict import (
    N_TOOLS,
    SPLITS,
    ParsedPrediction,
    SampleScore,
    group_mask,
    metrics_from_sums,
    normalise_graph,
    parse_strict,
    per_tool_from_sums,
    sample_table,
    score_normalised,
    split_groups,
    to_jsonable,
)
from .taxonomy import PredictionErrors, TaxonomySummary, classify_normalised, summarize

METRIC_NAMES = ("f1", "ed", "link", "argument", "rouge", "bertscore")
DEFAULT_METRICS = ("f1", "ed", "link", "argument", "rouge")
Mode = Literal["strict", "compat", "both"]

# which reported metrics each --metrics family switches on (parse rates are always reported)
_FAMILY = {
    "f1": ("node_micro_precision", "node_micro_recall", "node_micro_f1", "node_macro_precision",
           "node_macro_recall", "node_macro_f1", "node_set_accuracy", "graph_accuracy"),
    "link": ("link_precision", "link_recall", "link_f1", "edge_set_accuracy"),
    "argument": ("argument_name_f1", "argument_value_f1"),
    "ed": ("edit_distance",),
    "rouge": ("step_rouge1", "step_rouge2", "step_rougeL", "step_rougeLsum"),
    "bertscore": ("step_bertscore_precision", "step_bertscore_recall", "step_bertscore_f1"),
}
_ALWAYS = ("parse_failure_rate", "missing_rate")


def parse_metric_list(value: str | Sequence[str] | None) -> list[str]:
    """``"all"`` / ``"f1,ed"`` / a list -> validated metric families (``all`` = every family, as the reference)."""
    if value is None:
        return list(DEFAULT_METRICS)
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [i.strip() for i in items if i.strip()]
    if "all" in items:
        return list(METRIC_NAMES)
    bad = [i for i in items if i not in METRIC_NAMES]
    if bad or not items:
        raise ConfigError(f"unknown metric {bad[0] if bad else ''!r}; use 'all' or some of {','.join(METRIC_NAMES)}")
    return [m for m in METRIC_NAMES if m in items]


def parse_choice_list(value: str | Sequence[str], allowed: Sequence[str], what: str) -> list[str]:
    """``"all"`` or a comma list of ``allowed`` values (kept in the given order)."""
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [str(i).strip() for i in items if str(i).strip()]
    if "all" in items:
        return list(allowed)
    bad = [i for i in items if i not in allowed]
    if bad or not items:
        raise ConfigError(f"unknown {what} {bad[0] if bad else ''!r}; use 'all' or some of {','.join(allowed)}")
    return list(dict.fromkeys(items))


# --------------------------------------------------------------------------------------------- scoring


@dataclass
class ScoredSet:
    """Every gold sample scored once against its prediction (row i = ``ids[i]``)."""

    ids: list[str]
    splits: np.ndarray
    n_tools: np.ndarray
    columns: dict[str, np.ndarray]
    scores: list[SampleScore]
    parsed: list[ParsedPrediction]
    errors: list[PredictionErrors]
    unmatched_ids: list[str]
    duplicate_ids: list[str]
    tool_names: list[str]


def _index_predictions(records: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Mapping[str, Any]], list[str]]:
    out: dict[str, Mapping[str, Any]] = {}
    dups: list[str] = []
    for rec in records:
        if "id" not in rec:
            continue
        key = str(rec["id"])
        if key in out:
            dups.append(key)
        out[key] = rec  # the last record of an id wins, as in the reference
    return out, dups


def score_strict(
    samples: Sequence[Sample],
    records: Sequence[Mapping[str, Any]],
    library: ToolLibrary,
    *,
    dependency: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    alignment_ids: set[str] | None = None,
    bertscorer: Any = None,
) -> ScoredSet:
    """Parse and score each gold sample once. ``bertscorer`` (a :class:`~taskbench.eval.bertscore.BertScorer`)
    is needed when ``metrics`` holds ``bertscore``."""
    dep = dependency or library.dependency
    gold = [s for s in samples if alignment_ids is None or s.id in alignment_ids]
    by_id, dups = _index_predictions(records)
    gold_ids = {s.id for s in gold}
    parsed = [parse_strict(s.id, by_id.get(s.id)) for s in gold]
    scores: list[SampleScore] = []
    errors: list[PredictionErrors] = []
    for s, p in zip(gold, parsed, strict=True):
        g_norm = normalise_graph(s, library, dep)
        p_norm = normalise_graph(p.graph, library, dep)  # the empty graph when missing or unparseable
        scores.append(score_normalised(s, p, g_norm, p_norm, library))
        errors.append(classify_normalised(s.id, p, g_norm, p_norm, library))
    extra: dict[str, np.ndarray] = {}
    if "rouge" in metrics or "bertscore" in metrics:
        preds = ["\n".join(p.graph.task_steps) for p in parsed]
        refs = ["\n".join(s.task_steps) for s in gold]
        if "rouge" in metrics:
            from .rouge import rouge_per_sample

            for key, values in rouge_per_sample(preds, refs).items():
                extra[f"step_{key}"] = values
        if "bertscore" in metrics:
            if bertscorer is None:
                raise ConfigError("metric 'bertscore' needs a BERTScore model (bertscorer=...)")
            for key, values in bertscorer.score(preds, refs).items():
                extra[f"step_bertscore_{key}"] = values
    return ScoredSet(
        ids=[s.id for s in gold],
        splits=np.array([s.type for s in gold], dtype=object),
        n_tools=np.array([len(s.task_nodes) for s in gold], dtype=int),
        columns=sample_table(scores, library, extra),
        scores=scores,
        parsed=parsed,
        errors=errors,
        unmatched_ids=sorted(set(by_id) - gold_ids),
        duplicate_ids=sorted(set(dups)),
        tool_names=library.names,
    )


# ----------------------------------------------------------------------------------------- aggregation


class GroupResult(BaseModel):
    """Strict metrics of one split group."""

    split: str = Field(description="overall | single | chain | dag.")
    n_tools: str = Field(description="overall or the number of gold tools (1..10).")
    n_samples: int = Field(description="Gold samples in the group (every one counts).")
    metrics: dict[str, float | None] = Field(description="Metric -> value (None = undefined, e.g. no links).")
    ci: dict[str, tuple[float, float] | None] = Field(
        default_factory=dict, description="Metric -> bootstrap 95% CI (low, high); empty without bootstrap."
    )
    per_tool: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Tool -> {precision, recall, f1-score, support} (tools that occur)."
    )


class StrictResult(BaseModel):
    """The strict evaluation of one prediction set."""

    mode: Literal["strict"] = "strict"
    dependency: str = Field(description="Dependency kind used for links and arguments.")
    metrics: list[str] = Field(description="Metric families computed.")
    bootstrap: int = Field(description="Bootstrap replicates per group (0 = no CIs).")
    seed: int = Field(description="Seed of the bootstrap.")
    n_gold: int = Field(description="Gold samples scored (after alignment filtering).")
    unmatched_prediction_ids: list[str] = Field(default_factory=list, description="Prediction ids not in gold.")
    duplicate_prediction_ids: list[str] = Field(
        default_factory=list, description="Ids predicted more than once (the last record was used)."
    )
    groups: dict[str, GroupResult] = Field(description="'{split}_{n_tools}' -> group metrics.")
    chain_edit_distance: float | None = Field(
        default=None, description="Normalized edit distance on chain samples (the paper reports NED on chains)."
    )
    taxonomy: TaxonomySummary = Field(description="Error category counts over all scored predictions.")
    errors: list[PredictionErrors] = Field(default_factory=list, description="Error labels per prediction.")


def _selected(metrics: Sequence[str]) -> set[str]:
    keep = set(_ALWAYS)
    for fam in metrics:
        keep.update(_FAMILY[fam])
    return keep


def aggregate_strict(
    scored: ScoredSet,
    *,
    dependency: str,
    splits: Sequence[str] = ("overall",),
    n_tools: Sequence[str] = ("overall",),
    mode: str = "add",
    metrics: Sequence[str] = DEFAULT_METRICS,
    bootstrap: int = 1000,
    seed: int = 0,
) -> StrictResult:
    """Metrics per group, with bootstrap CIs (``bootstrap`` replicates, seeded per group)."""
    keep = _selected(metrics)
    groups: dict[str, GroupResult] = {}
    for split, n in split_groups(splits, n_tools, mode):
        key = f"{split}_{n}"
        mask = group_mask(scored.splits, scored.n_tools, split, n)
        cols = {k: v[mask] for k, v in scored.columns.items()}
        sums = stats.column_sums(cols)
        values = {k: v for k, v in metrics_from_sums(sums).items() if k in keep}
        ci = {}
        if bootstrap > 0 and mask.any():

            def statistic(s: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
                return {k: v for k, v in metrics_from_sums(s).items() if k in keep}

            ci = stats.bootstrap_ci(cols, statistic, n_boot=bootstrap, seed=seed, key=key)
        groups[key] = GroupResult(
            split=split,
            n_tools=n,
            n_samples=int(mask.sum()),
            metrics=to_jsonable(values) if mask.any() else {},
            ci=ci,
            per_tool=per_tool_from_sums(sums, scored.tool_names) if "f1" in metrics and mask.any() else {},
        )
    chain = scored.splits == "chain"
    ned_chain = float(scored.columns["ned"][chain].mean()) if chain.any() and "ed" in metrics else None
    return StrictResult(
        dependency=dependency,
        metrics=list(metrics),
        bootstrap=bootstrap,
        seed=seed,
        n_gold=len(scored.ids),
        unmatched_prediction_ids=scored.unmatched_ids,
        duplicate_prediction_ids=scored.duplicate_ids,
        groups=groups,
        chain_edit_distance=ned_chain,
        taxonomy=summarize(scored.errors),
        errors=scored.errors,
    )


# ------------------------------------------------------------------------------------------- top level


class EvaluationResult(BaseModel):
    """One evaluation run: strict and/or compat results."""

    strict: StrictResult | None = Field(default=None, description="Strict result (None when not asked for).")
    compat: dict[str, Any] | None = Field(
        default=None, description="The reference-compatible metrics, in the reference's exact key layout."
    )
    compat_log: list[str] = Field(default_factory=list, description="The compat run's log lines.")

    def to_json(self) -> dict[str, Any]:
        """The metrics JSON: compat alone -> the reference layout; strict alone -> the strict document;
        both -> ``{"strict": ..., "compat": ...}``."""
        strict = to_jsonable(self.strict.model_dump(mode="json")) if self.strict is not None else None
        if strict is not None and self.compat is not None:
            return {"strict": strict, "compat": self.compat}
        if self.compat is not None:
            return self.compat
        return strict or {}


def evaluate(
    samples: Sequence[Sample],
    predictions: Sequence[Mapping[str, Any]],
    library: ToolLibrary,
    *,
    mode: Mode = "strict",
    gold_records: Sequence[Mapping[str, Any]] | None = None,
    dependency: str | None = None,
    splits: Sequence[str] = SPLITS,
    n_tools: Sequence[str] = N_TOOLS,
    group_mode: str = "add",
    metrics: Sequence[str] = DEFAULT_METRICS,
    alignment_ids: set[str] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    bertscore_model: str | None = None,
) -> EvaluationResult:
    """Score ``predictions`` (reference-format records ``{"id", "result"}``) against gold.

    ``mode``: ``strict`` (default), ``compat`` (the reference evaluator's numbers; needs ``gold_records``,
    the raw gold lines, because the reference reads them as they are) or ``both``. ``dependency`` overrides
    the library's kind. ``bertscore_model``: model name or local path for BERTScore (default roberta-large).
    """
    if mode not in ("strict", "compat", "both"):
        raise ConfigError(f"mode must be strict, compat or both, not {mode!r}")
    if group_mode not in ("add", "mul"):
        raise ConfigError(f"--mode must be 'add' or 'mul', not {group_mode!r}")
    dep = dependency or library.dependency
    if dep != library.dependency:
        library = library.model_copy(update={"dependency": dep})
    scorer = None
    if "bertscore" in metrics:
        from .bertscore import DEFAULT_MODEL, BertScorer

        scorer = BertScorer(bertscore_model or DEFAULT_MODEL)
    out = EvaluationResult()
    if mode in ("strict", "both"):
        scored = score_strict(
            samples, predictions, library, dependency=dep, metrics=metrics, alignment_ids=alignment_ids,
            bertscorer=scorer,
        )
        out.strict = aggregate_strict(
            scored, dependency=dep, splits=splits, n_tools=n_tools, mode=group_mode, metrics=metrics,
            bootstrap=bootstrap, seed=seed,
        )
    if mode in ("compat", "both"):
        from .compat import evaluate_compat

        if gold_records is None:
            gold_records = [s.to_record() for s in samples]
        res = evaluate_compat(
            list(gold_records), list(predictions), library, splits=list(splits), n_tools=list(n_tools),
            mode=group_mode, metrics=list(metrics), alignment_ids=alignment_ids,
            bertscore=scorer.score if scorer is not None else None, dependency=dep,
        )
        out.compat = res.metrics
        out.compat_log = list(res.log)
    return out


def write_metrics(result: EvaluationResult, path: str | Path) -> Path:
    """Write :meth:`EvaluationResult.to_json` (atomic; indent 2 as the reference writes it)."""
    from ..dataset.jsonio import write_json

    write_json(path, result.to_json())
    return Path(path)


# -------------------------------------------------------------------------------------------- compare


class GroupComparison(BaseModel):
    """Paired comparison of two prediction sets in one split group."""

    split: str = Field(description="Split of the group.")
    n_tools: str = Field(description="Tool count of the group.")
    n_samples: int = Field(description="Gold samples in the group.")
    results: list[stats.PairedResult] = Field(description="One paired result per metric.")


class Comparison(BaseModel):
    """``A - B`` per group and metric, with paired bootstrap CIs and randomization-test p-values."""

    a: str = Field(description="Name of prediction set A.")
    b: str = Field(description="Name of prediction set B.")
    n_boot: int = Field(description="Bootstrap replicates for the CIs.")
    n_perm: int = Field(description="Randomization replicates for the p-values.")
    seed: int = Field(description="Seed.")
    groups: dict[str, GroupComparison] = Field(description="'{split}_{n_tools}' -> comparison.")


def compare_predictions(
    samples: Sequence[Sample],
    predictions_a: Sequence[Mapping[str, Any]],
    predictions_b: Sequence[Mapping[str, Any]],
    library: ToolLibrary,
    *,
    names: tuple[str, str] = ("A", "B"),
    dependency: str | None = None,
    splits: Sequence[str] = ("overall",),
    n_tools: Sequence[str] = ("overall",),
    group_mode: str = "add",
    metrics: Sequence[str] = DEFAULT_METRICS,
    alignment_ids: set[str] | None = None,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
) -> Comparison:
    """Strictly score both prediction sets on the same gold and compare them pairwise per group."""
    if "bertscore" in metrics:
        raise ConfigError("compare does not support bertscore; leave it out of --metrics")
    dep = dependency or library.dependency
    kw: dict[str, Any] = {"dependency": dep, "metrics": metrics, "alignment_ids": alignment_ids}
    sa = score_strict(samples, predictions_a, library, **kw)
    sb = score_strict(samples, predictions_b, library, **kw)
    keep = _selected(metrics)

    def statistic(s: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        return {k: v for k, v in metrics_from_sums(s).items() if k in keep}

    groups = {}
    for split, n in split_groups(splits, n_tools, group_mode):
        key = f"{split}_{n}"
        mask = group_mask(sa.splits, sa.n_tools, split, n)
        results = []
        if mask.any():
            ca = {k: v[mask] for k, v in sa.columns.items()}
            cb = {k: v[mask] for k, v in sb.columns.items()}
            results = stats.paired_compare(ca, cb, statistic, n_boot=n_boot, n_perm=n_perm, seed=seed, key=key)
        groups[key] = GroupComparison(split=split, n_tools=n, n_samples=int(mask.sum()), results=results)
    return Comparison(a=names[0], b=names[1], n_boot=n_boot, n_perm=n_perm, seed=seed, groups=groups)


__all__ = [
    "Comparison",
    "DEFAULT_METRICS",
    "EvaluationResult",
    "GroupComparison",
    "GroupResult",
    "METRIC_NAMES",
    "ScoredSet",
    "StrictResult",
    "aggregate_strict",
    "compare_predictions",
    "evaluate",
    "parse_choice_list",
    "parse_metric_list",
    "score_strict",
    "write_metrics",
]
