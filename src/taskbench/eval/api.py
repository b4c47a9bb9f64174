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

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError, InputError, did_you_mean
from ..schema import Prediction, Sample, ToolLibrary, record_id
from ..schema.scores import GroupResult, StrictResult
from . import stats
from .coverage import Coverage, IdTally, coverage_warnings, disjoint_error
from .groups import Group, group_mask
from .metrics import BUILTIN_FAMILIES, default_families, families, family_keys, sample_metrics
from .runtime import gc_paused
from .strict import (
    N_TOOLS,
    SPLITS,
    SampleScore,
    compare_counts,
    compare_graphs,
    identical_counts,
    metrics_from_sums,
    name_counts,
    output_types,
    parse_normal,
    per_tool_from_sums,
    prepare_gold,
    same_graph,
    sample_table,
    split_groups,
    to_jsonable,
)
from .taxonomy import PredictionErrors, classify_counts, classify_graphs, summarize

METRIC_NAMES = BUILTIN_FAMILIES
"""The built-in ``--metrics`` families (:func:`taskbench.eval.metrics.families` adds the added metrics')."""
DEFAULT_METRICS = ("f1", "ed", "link", "argument", "rouge")
"""The built-in families scored by default (:func:`taskbench.eval.metrics.default_families` adds the added
metrics' that ask to be)."""
DEFAULT_BOOTSTRAP = 1000
"""Bootstrap replicates per evaluation unless told otherwise (``--bootstrap``)."""
Mode = Literal["strict", "compat", "both"]

_MACRO = frozenset(("node_macro_precision", "node_macro_recall", "node_macro_f1"))


def parse_metric_list(value: str | Sequence[str] | None) -> list[str]:
    """``"all"`` / ``"f1,ed"`` / a list -> validated metric families of the metric table (``all`` = every family,
    as the reference; None = the default families)."""
    if value is None:
        return default_families()
    known = families()
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [i.strip() for i in items if i.strip()]
    if "all" in items:
        return known
    bad = [i for i in items if i not in known]
    if bad or not items:
        name = bad[0] if bad else ""
        raise ConfigError(f"unknown metric {name!r}; use 'all' or some of {','.join(known)}"
                          + (f" ({did_you_mean(name, known)})" if name else ""))
    return [m for m in known if m in items]


def parse_choice_list(value: str | Sequence[str], allowed: Sequence[str], what: str) -> list[str]:
    """``"all"`` or a comma list of ``allowed`` values (kept in the given order)."""
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [str(i).strip() for i in items if str(i).strip()]
    if "all" in items:
        return list(allowed)
    bad = [i for i in items if i not in allowed]
    if bad or not items:
        name = bad[0] if bad else ""
        hint = did_you_mean(name, ["all", *allowed]) if name else f"one of: all, {', '.join(allowed)}"
        raise ConfigError(f"unknown {what} {name!r} ({hint})")
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
    errors: list[PredictionErrors]
    unmatched_ids: list[str]
    duplicate_ids: list[str]
    tool_names: list[str]
    missing_ids: list[str]
    """Gold ids (of those scored) with no prediction record."""
    gold_ids: set[str]
    """Every usable gold id read, selected or not."""


def _index_predictions(
    records: Iterable[Mapping[str, Any]], wanted: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], Any]
) -> tuple[dict[str, Any], list[str], set[str]]:
    """``{id: parse(record)}`` for the ids in ``wanted`` (the last record of an id wins, as in the reference),
    the ids given more than once, and the ids not wanted. Each record is parsed as it comes, so a stream of
    records never has to be held in memory."""
    out: dict[str, Any] = {}
    dups: list[str] = []
    seen: set[str] = set()
    unmatched: set[str] = set()
    for rec in records:
        if not isinstance(rec, Mapping):
            continue
        key = rec.get("id")
        if type(key) is not str:
            key = record_id(key)
            if key is None:
                continue  # no usable id: nothing to match (coverage_warnings counts these)
        if key in seen:
            dups.append(key)
        seen.add(key)
        if key in wanted:
            out[key] = parse(rec)
        else:
            unmatched.add(key)
    return out, dups, unmatched


def score_strict(
    samples: Iterable[Sample | Mapping[str, Any]],
    records: Iterable[Mapping[str, Any]],
    library: ToolLibrary,
    *,
    dependency: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    alignment_ids: set[str] | None = None,
    bertscorer: Any = None,
    gold_path: str | Path | None = None,
    ids: Collection[str] | None = None,
    limit: int | None = None,
    gold_problems: list[InputError] | None = None,
) -> ScoredSet:
    """Parse and score each gold sample once.

    ``samples``: :class:`Sample` objects or the raw ``data.json`` records (read as :func:`prepare_gold` says;
    ``gold_path`` names the file in errors; ``alignment_ids``, ``ids`` and ``limit`` select them). A gold record
    that cannot be scored raises :class:`InputError`, or with a ``gold_problems`` list is appended there and
    left out. Both ``samples`` and the prediction ``records`` may be one-pass iterators (each record is
    normalised as it comes and not kept). ``bertscorer`` (a :class:`~taskbench.eval.bertscore.BertScorer`) is
    needed when ``metrics`` holds ``bertscore``."""
    dep = dependency or library.dependency
    in_library = {name: i for i, name in enumerate(library.names)}
    out_types = output_types(library)
    literals: dict[str, Any] = {}
    gold_ids: set[str] = set()
    with gc_paused():
        gold = prepare_gold(samples, library, dep, alignment_ids=alignment_ids, ids=ids, limit=limit,
                            path=gold_path, problems=gold_problems, seen=gold_ids)
        by_id, dups, unmatched = _index_predictions(
            records, {item.id: None for item in gold},
            lambda rec: parse_normal(rec, library, dep, out_types, literals),
        )
        missing = parse_normal(None, library, dep, out_types)
        scores: list[SampleScore] = []
        errors: list[PredictionErrors] = []
        pred_steps: list[str] = []
        keep_pairs = bool(sample_metrics(metrics))
        pairs: list[tuple[Any, Any]] = []
        for item in gold:
            status, error, p = by_id.get(item.id, missing)
            g = item.graph
            if status != "ok":
                counts = compare_graphs(g, p, in_library)
                errors.append(classify_graphs(item.id, status, error, g, p, in_library))
            elif same_graph(g, p):
                counts = identical_counts(g, in_library)
                errors.append(PredictionErrors(id=item.id))
            else:
                gc, pc = name_counts(g.names), name_counts(p.names)
                counts = compare_counts(g, p, gc, pc, in_library)
                errors.append(classify_counts(item.id, g, p, gc, pc, in_library))
            scores.append(SampleScore(item.id, item.split, item.n_tools, status, *counts, error=error))
            pred_steps.append(p.steps)
            if keep_pairs:
                pairs.append((g, p))
        extra: dict[str, np.ndarray] = {}
        for added in sample_metrics(metrics):  # an added metric's own per-sample column
            per_sample = added.sample
            assert per_sample is not None  # sample_metrics gives only metrics with one
            extra[added.key] = np.asarray([float(per_sample(g, p)) for g, p in pairs], dtype=np.float64)
        if "rouge" in metrics or "bertscore" in metrics:
            refs = [item.graph.steps for item in gold]
            if "rouge" in metrics:
                from .rouge import rouge_per_sample

                for key, values in rouge_per_sample(pred_steps, refs).items():
                    extra[f"step_{key}"] = values
            if "bertscore" in metrics:
                if bertscorer is None:
                    raise ConfigError("metric 'bertscore' needs a BERTScore model (bertscorer=...)")
                for key, values in bertscorer.score(pred_steps, refs).items():
                    extra[f"step_bertscore_{key}"] = values
        return ScoredSet(
            ids=[item.id for item in gold],
            splits=np.array([item.split for item in gold], dtype=object),
            n_tools=np.array([item.n_tools for item in gold], dtype=int),
            columns=sample_table(scores, library, extra),
            scores=scores,
            errors=errors,
            unmatched_ids=sorted(unmatched),
            duplicate_ids=sorted(set(dups)),
            tool_names=library.names,
            missing_ids=[item.id for item in gold if item.id not in by_id],
            gold_ids=gold_ids,
        )


# ----------------------------------------------------------------------------------------- aggregation


def _selected(metrics: Sequence[str]) -> set[str]:
    """The metric keys reported for the families ``metrics`` (and the always-reported rates)."""
    return family_keys(metrics)


def _statistic(keep: set[str]) -> stats.Statistic:
    """:func:`metrics_from_sums` restricted to the metrics in ``keep`` (the statistic resampling recomputes)."""

    def statistic(s: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        return metrics_from_sums(s, keep)

    return statistic


def aggregate_strict(
    scored: ScoredSet,
    *,
    dependency: str,
    splits: Sequence[str] = ("overall",),
    n_tools: Sequence[str] = ("overall",),
    mode: str = "add",
    metrics: Sequence[str] = DEFAULT_METRICS,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> StrictResult:
    """Metrics per group, with bootstrap 95% CIs for every group (``bootstrap`` Poisson replicates shared by
    all groups, seeded; see :func:`taskbench.eval.stats.bootstrap_groups`)."""
    keep = _selected(metrics)
    pairs = split_groups(splits, n_tools, mode)
    masks = {f"{split}_{n}": group_mask(Group(split, n), scored.splits, scored.n_tools) for split, n in pairs}
    cis: dict[str, dict[str, tuple[float, float] | None]] = {}
    if bootstrap > 0:
        columns = scored.columns
        if not keep & _MACRO:  # no macro metric asked for: leave the per-tool columns out
            columns = {k: (np.zeros((len(v), 0)) if k.startswith("tool_") else v) for k, v in columns.items()}

        cis = stats.bootstrap_groups(columns, masks, _statistic(keep), n_boot=bootstrap, seed=seed, key="strict")
    groups: dict[str, GroupResult] = {}
    for (split, n), (key, mask) in zip(pairs, masks.items(), strict=True):
        any_rows = bool(mask.any())
        sums = {k: v[mask].sum(axis=0) for k, v in scored.columns.items()}
        values = metrics_from_sums(sums, keep)
        groups[key] = GroupResult(
            split=split,
            n_tools=n,
            n_samples=int(mask.sum()),
            metrics=to_jsonable(values) if any_rows else {},
            ci=cis.get(key, {}) if any_rows else {},
            per_tool=per_tool_from_sums(sums, scored.tool_names) if "f1" in metrics and any_rows else {},
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
        missing_prediction_ids=scored.missing_ids,
        groups=groups,
        chain_edit_distance=ned_chain,
        taxonomy=summarize(scored.errors),
        errors=scored.errors,
    )


# ------------------------------------------------------------------------------------------- top level


class EvaluationResult(BaseModel):
    """One evaluation run: strict and/or compat results."""

    model: str | None = Field(default=None, description="'provider/model' the predictions record (None: none, "
                              "or several).")
    dataset: str | None = Field(default=None, description="Dataset name (the tool library's).")
    n_samples: int | None = Field(default=None, description="Gold samples scored.")
    strict: StrictResult | None = Field(default=None, description="Strict result (None when not asked for).")
    compat: dict[str, Any] | None = Field(
        default=None, description="The reference-compatible metrics, in the reference's exact key layout."
    )
    compat_log: list[str] = Field(default_factory=list, description="The compat run's log lines.")
    execution: Any = Field(
        default=None, description="Execution success (an eval.execution.ExecutionResult), with --execute."
    )
    compat_dropped: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Samples compat mode dropped as the reference does ('Parsing Error'): {id, error}.",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="Coverage problems, one line each (missing/unmatched ids, another dataset's predictions, "
        "unreadable lines, gold records that cannot be scored); see taskbench.eval.coverage.",
    )

    def to_json(self) -> dict[str, Any]:
        """The metrics JSON: compat alone -> the reference layout; strict alone -> the strict document;
        both -> ``{"strict": ..., "compat": ...}``; with execution results, an ``execution`` key beside."""
        strict = _strict_json(self.strict) if self.strict is not None else None
        facts = {"model": self.model, "dataset": self.dataset}
        if strict is not None and self.compat is not None:
            doc: dict[str, Any] = {**facts, "mode": "both", "n_samples": self.n_samples, "strict": strict,
                                   "compat": self.compat}
        elif self.compat is not None:
            doc = self.compat  # the reference's exact layout (model and dataset: in the file's run header)
        elif strict is not None:
            doc = {**facts, "n_samples": self.n_samples, **strict}
        else:
            doc = {}
        if self.execution is not None:
            doc = {**doc, "execution": self.execution.model_dump(mode="json")}
        return doc


def _strict_json(result: StrictResult) -> dict[str, Any]:
    doc = result.model_dump(mode="json")
    # the metric values are made JSON-safe when the groups are built; this only guards against NaN
    doc["groups"] = to_jsonable(doc["groups"])
    doc["chain_edit_distance"] = to_jsonable(doc["chain_edit_distance"])
    return doc


UNUSABLE_CHOICES = ("skip", "error")
"""What :func:`evaluate` does with a gold record it cannot score: leave it out and say so, or raise."""


def with_dependency(library: ToolLibrary, dependency: str | None) -> tuple[ToolLibrary, str]:
    """The library scored under ``dependency`` (its own kind when None), and that kind."""
    dep = dependency or library.dependency
    if dep != library.dependency:
        library = library.model_copy(update={"dependency": dep})
    return library, dep


def bertscorer_for(metrics: Collection[str], model: str | None) -> Any:
    """A BERTScore scorer when ``metrics`` asks for BERTScore (``model`` or the default), else None."""
    if "bertscore" not in metrics:
        return None
    from .bertscore import DEFAULT_MODEL, BertScorer

    return BertScorer(model or DEFAULT_MODEL)


def evaluate(
    samples: Iterable[Sample | Mapping[str, Any]],
    predictions: Iterable[Prediction | Mapping[str, Any]],
    library: ToolLibrary,
    *,
    mode: Mode = "strict",
    gold_records: Sequence[Mapping[str, Any]] | None = None,
    dependency: str | None = None,
    splits: Sequence[str] = SPLITS,
    n_tools: Sequence[str] = N_TOOLS,
    group_mode: str = "add",
    metrics: Sequence[str] | None = None,
    alignment_ids: set[str] | None = None,
    ids: Sequence[str] | None = None,
    limit: int | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    bertscore_model: str | None = None,
    gold_path: str | Path | None = None,
    unusable: str = "skip",
    gold_problems: list[InputError] | None = None,
    prediction_problems: Sequence[InputError] = (),
    model: str | None = None,
    dataset: str | None = None,
) -> EvaluationResult:
    """Score ``predictions`` (:class:`Prediction` objects, or reference-format records ``{"id", "result"}``)
    against gold. ``model`` and ``dataset`` name what the result records (default: the one model the records
    name, and the library's name).

    ``samples``: the gold :class:`Sample` objects, or the raw ``data.json`` records (then they also serve as
    ``gold_records``; ``gold_path`` names their file in error messages). ``samples`` and ``predictions`` may be
    one-pass iterators: strict mode normalises each record as it is read and keeps none; compat and both modes
    read them into lists first.
    ``mode``: ``strict`` (default), ``compat`` (the reference evaluator's numbers; needs ``gold_records``, the
    raw gold lines, because the reference reads them as they are) or ``both``. ``dependency`` overrides the
    library's kind. ``metrics``: the metric families (:func:`parse_metric_list`; default: the default
    families of the metric table). ``bertscore_model``: model name or local path for BERTScore (default
    roberta-large). Compat mode scores the built-in families only (the reference's metrics).

    Which gold samples: those in ``alignment_ids`` and ``ids`` (None = all), the first ``limit`` of them.
    ``unusable``: a gold record that cannot be scored is left out and reported (``"skip"``, the default) or
    raises its :class:`InputError` (``"error"``). ``gold_problems``: the list a tolerant gold reader appends
    unreadable lines to (``read_raw_records(..., problems=...)``); it is reported with the rest.
    ``prediction_problems``: prediction lines that could not be read. The result's ``warnings`` list every
    coverage problem (see :mod:`taskbench.eval.coverage`).
    """
    if mode not in ("strict", "compat", "both"):
        raise ConfigError(f"mode must be strict, compat or both, not {mode!r} ({did_you_mean(mode, ('strict', 'compat', 'both'))})")
    if group_mode not in ("add", "mul"):
        raise ConfigError(f"--mode must be 'add' or 'mul', not {group_mode!r}")
    if unusable not in UNUSABLE_CHOICES:
        raise ConfigError(f"--unusable must be skip or error, not {unusable!r} ({did_you_mean(unusable, UNUSABLE_CHOICES)})")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be a positive number of samples, not {limit}")
    stats.check_replicates(bootstrap)
    metrics = parse_metric_list(metrics)
    problems = (gold_problems if gold_problems is not None else []) if unusable == "skip" else None
    wanted = None if ids is None else set(ids)
    library, dep = with_dependency(library, dependency)
    scorer = bertscorer_for(metrics, bertscore_model)
    out = EvaluationResult()
    predictions = _records_of(predictions)
    pred_list: Sequence[Mapping[str, Any]] = ()
    if mode != "strict":  # compat reads the predictions after they were counted: a one-pass iterator is read once
        pred_list = predictions if isinstance(predictions, Sequence) else list(predictions)
        predictions = pred_list
    if mode == "both":  # both modes read the gold samples
        samples = samples if isinstance(samples, Sequence) else list(samples)
    tally = IdTally(predictions)
    if mode == "compat":
        tally.count()
    cov: dict[str, Any] = {}
    with gc_paused():
        if mode in ("strict", "both"):
            scored = score_strict(
                samples, tally if mode == "strict" else predictions, library, dependency=dep, metrics=metrics,
                alignment_ids=alignment_ids, bertscorer=scorer, gold_path=gold_path, ids=wanted, limit=limit,
                gold_problems=problems,
            )
            if mode == "both":
                tally.count()
            _require_gold(scored, gold_path, problems or [])
            out.strict = aggregate_strict(
                scored, dependency=dep, splits=splits, n_tools=n_tools, mode=group_mode, metrics=metrics,
                bootstrap=bootstrap, seed=seed,
            )
            cov = {"selected": scored.ids, "gold_ids": scored.gold_ids,
                   "predicted_nodes": sum(s.node[0] + s.node[1] for s in scored.scores),
                   "foreign_nodes": sum(len(s.hallucinated) for s in scored.scores)}
        if mode in ("compat", "both"):
            from .compat import evaluate_compat

            if gold_records is None:
                gold_records = [s.to_record() if isinstance(s, Sample) else s for s in samples]
            compat_alignment = alignment_ids
            if wanted is not None or limit is not None:
                gold_records = _select_records(gold_records, alignment_ids, wanted, limit)
                compat_alignment = None
            res = evaluate_compat(
                gold_records, pred_list, library, splits=list(splits), n_tools=list(n_tools),
                mode=group_mode, metrics=[m for m in metrics if m in BUILTIN_FAMILIES], alignment_ids=compat_alignment,
                bertscore=scorer.score if scorer is not None else None, dependency=dep,
                problems=problems if mode == "compat" else [],
            )
            out.compat = res.metrics
            out.compat_log = list(res.log)
            out.compat_dropped = [{"id": s.id, "error": s.error} for s in res.samples if s.error is not None]
            if not cov:
                gold_ids = [rid for r in gold_records if isinstance(r, Mapping) and (rid := record_id(r.get("id")))]
                selected = gold_ids if alignment_ids is None or compat_alignment is None else \
                    [i for i in gold_ids if i in alignment_ids]
                cov = {"selected": selected, "gold_ids": set(gold_ids)}
                _require_gold((selected, set(gold_ids)), gold_path, problems or [])
    if prediction_problems and not tally.ids and not tally.no_id:
        first = prediction_problems[0]
        raise InputError(
            f"no prediction could be read ({len(prediction_problems)} bad line(s)); first: {first.message}",
            path=first.path, line=first.line,
            hint='a predictions file is JSON Lines: one {"id": ..., "result": {...}} object per line',
        )
    coverage = Coverage(
        predicted=tally.ids, duplicates=list(tally.duplicates), no_id=tally.no_id,
        unreadable=list(prediction_problems), unusable_gold=list(problems or []),
        requested=list(dict.fromkeys(ids)) if ids is not None else None, **cov,
    )
    out.dataset = dataset if dataset is not None else library.name or None
    if coverage.disjoint:
        raise disjoint_error(coverage, dataset=out.dataset)
    out.warnings = coverage_warnings(coverage, strict=mode != "compat")
    out.model = model if model is not None else (next(iter(tally.models)) if len(tally.models) == 1 else None)
    out.n_samples = len(cov.get("selected") or ())
    if out.strict is not None:
        out.strict.unusable_gold = [str(err) for err in problems or []]
        out.strict.warnings = list(out.warnings)
    return out


def _records_of(predictions: Iterable[Prediction | Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    """The prediction records (a :class:`Prediction` as its reference-format record), as a list when given one
    (compat reads them twice), else one pass."""
    if isinstance(predictions, Sequence):
        if not any(isinstance(p, Prediction) for p in predictions):
            return predictions  # type: ignore[return-value]  # only mappings
        return [p.to_record() if isinstance(p, Prediction) else p for p in predictions]
    return (p.to_record() if isinstance(p, Prediction) else p for p in predictions)


def _select_records(records: Iterable[Any], alignment_ids: Collection[str] | None, ids: Collection[str] | None,
                    limit: int | None) -> list[Any]:
    """The gold records in ``alignment_ids`` and ``ids`` (None = all), the first ``limit`` of them."""
    out = []
    kept = 0
    for rec in records:
        rid = record_id(rec.get("id")) if isinstance(rec, Mapping) else None
        if rid is None:
            out.append(rec)  # not selectable: scoring reports it
            continue
        if (alignment_ids is None or rid in alignment_ids) and (ids is None or rid in ids):
            if limit is not None and kept >= limit:
                break
            out.append(rec)
            kept += 1
    return out


def dumps_metrics(doc: Mapping[str, Any]) -> str:
    """The metrics JSON text: indent 2 (as the reference writes it), except that each entry of a strict
    document's per-prediction ``errors`` list takes one line (thousands of small records; this keeps the file
    readable and writing it fast). ``json.loads`` gives back ``doc``."""
    import json

    strict = doc.get("strict")
    holder = strict if isinstance(strict, dict) else doc
    errors = holder.get("errors") if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or not isinstance(errors, list) or not errors:
        return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    marker = "\u0000errors\u0000"
    trimmed = {**holder, "errors": marker}
    outer = trimmed if holder is doc else {**doc, "strict": trimmed}
    text = json.dumps(outer, ensure_ascii=False, indent=2)
    quoted = json.dumps(marker)
    at = text.index(quoted)
    indent = " " * (at - text.rindex("\n", 0, at) - 1 - len('"errors": '))
    encode = json.JSONEncoder(ensure_ascii=False).encode
    body = (",\n" + indent + "  ").join(map(encode, errors))
    return text[:at] + "[\n" + indent + "  " + body + "\n" + indent + "]" + text[at + len(quoted):] + "\n"


def write_metrics(result: EvaluationResult, path: str | Path) -> Path:
    """Write :meth:`EvaluationResult.to_json` as :func:`dumps_metrics` formats it (atomically)."""
    from ..dataset.jsonio import _atomic_write

    _atomic_write(Path(path), dumps_metrics(result.to_json()))
    return Path(path)


# -------------------------------------------------------------------------------------------- compare


class GroupComparison(BaseModel):
    """Paired comparison of two prediction sets in one split group."""

    model_config = ConfigDict(defer_build=True)  # built on first use: `evaluate` never needs it

    split: str = Field(description="Split of the group.")
    n_tools: str = Field(description="Tool count of the group.")
    n_samples: int = Field(description="Gold samples in the group.")
    results: list[stats.PairedResult] = Field(description="One paired result per metric.")


class Comparison(BaseModel):
    """``A - B`` per group and metric, with paired bootstrap CIs and randomization-test p-values."""

    model_config = ConfigDict(defer_build=True)  # built on first use: `evaluate` never needs it

    a: str = Field(description="Name of prediction set A.")
    b: str = Field(description="Name of prediction set B.")
    n_boot: int = Field(description="Bootstrap replicates for the CIs.")
    n_perm: int = Field(description="Randomization replicates for the p-values.")
    seed: int = Field(description="Seed.")
    groups: dict[str, GroupComparison] = Field(description="'{split}_{n_tools}' -> comparison.")
    warnings: list[str] = Field(default_factory=list, description="Coverage problems of either prediction set.")


def compare_predictions(
    samples: Sequence[Sample] | Sequence[Mapping[str, Any]],
    predictions_a: Iterable[Mapping[str, Any]],
    predictions_b: Iterable[Mapping[str, Any]],
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
    gold_path: str | Path | None = None,
) -> Comparison:
    """Strictly score both prediction sets on the same gold and compare them pairwise per group (``samples``:
    :class:`Sample` objects or raw gold records, as for :func:`score_strict`; each prediction set is read once,
    so it may be a one-pass iterator)."""
    if "bertscore" in metrics:
        raise ConfigError("compare does not support bertscore; leave it out of --metrics")
    dep = dependency or library.dependency
    kw: dict[str, Any] = {"dependency": dep, "metrics": metrics, "alignment_ids": alignment_ids, "gold_path": gold_path,
                          "gold_problems": []}
    ta, tb = IdTally(predictions_a), IdTally(predictions_b)
    sa = score_strict(samples, ta, library, **kw)
    sb = score_strict(samples, tb, library, **{**kw, "gold_problems": []})
    _require_gold(sa, gold_path, kw["gold_problems"])
    warnings = []
    for name, scored, tally in ((names[0], sa, ta), (names[1], sb, tb)):
        cov = Coverage(selected=scored.ids, gold_ids=scored.gold_ids, predicted=tally.ids,
                       duplicates=list(tally.duplicates), no_id=tally.no_id,
                       predicted_nodes=sum(s.node[0] + s.node[1] for s in scored.scores),
                       foreign_nodes=sum(len(s.hallucinated) for s in scored.scores))
        if cov.disjoint:
            raise disjoint_error(cov, dataset=library.name or None, name=name)
        warnings += [f"{name}: {w}" for w in coverage_warnings(cov, subset_hint=COMPARE_SUBSET_HINT)]
    warnings[:0] = coverage_warnings(Coverage(selected=sa.ids, gold_ids=sa.gold_ids, predicted=set(sa.ids),
                                              unusable_gold=kw["gold_problems"]))
    return compare_columns(sa.splits, sa.n_tools, sa.columns, sb.columns, names=names, splits=splits,
                           n_tools=n_tools, group_mode=group_mode, metrics=metrics, n_boot=n_boot, n_perm=n_perm,
                           seed=seed, warnings=warnings)


def compare_columns(
    sample_splits: np.ndarray,
    sample_n_tools: np.ndarray,
    columns_a: Mapping[str, np.ndarray],
    columns_b: Mapping[str, np.ndarray],
    *,
    names: tuple[str, str] = ("A", "B"),
    splits: Sequence[str] = ("overall",),
    n_tools: Sequence[str] = ("overall",),
    group_mode: str = "add",
    metrics: Sequence[str] = DEFAULT_METRICS,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
    warnings: Sequence[str] = (),
) -> Comparison:
    """The paired comparison of two prediction sets already scored on the same samples (row i of both: the
    same gold sample; ``sample_splits`` and ``sample_n_tools`` of those rows, as :class:`ScoredSet` has them):
    the second half of :func:`compare_predictions`, for a caller that keeps scored columns (the viewer)."""
    statistic = _statistic(_selected(metrics))
    groups = {}
    for split, n in split_groups(splits, n_tools, group_mode):
        key = f"{split}_{n}"
        mask = group_mask(Group(split, n), sample_splits, sample_n_tools)
        results = []
        if mask.any():
            whole = bool(mask.all())  # the overall group: the columns as they are, not a copy
            ca = columns_a if whole else {k: v[mask] for k, v in columns_a.items()}
            cb = columns_b if whole else {k: v[mask] for k, v in columns_b.items()}
            results = stats.paired_compare(ca, cb, statistic, n_boot=n_boot, n_perm=n_perm, seed=seed, key=key)
        groups[key] = GroupComparison(split=split, n_tools=n, n_samples=int(mask.sum()), results=results)
    return Comparison(a=names[0], b=names[1], n_boot=n_boot, n_perm=n_perm, seed=seed, groups=groups,
                      warnings=list(warnings))


COMPARE_SUBSET_HINT = ("predict the same samples for both, or use --alignment to compare one alignment set on "
                       "purpose")
"""compare's advice for missing predictions: it has --alignment, not evaluate's --ids or --limit."""


def _require_gold(scored: ScoredSet | tuple[Sequence[str], set[str]], gold_path: str | Path | None,
                  problems: Sequence[InputError]) -> None:
    """Scoring against no gold sample at all is a mistake, not a score: raise :class:`InputError`.
    ``scored``: a :class:`ScoredSet`, or (selected ids, every gold id)."""
    selected, gold_ids = (scored.ids, scored.gold_ids) if isinstance(scored, ScoredSet) else scored
    if selected:
        return
    if problems:
        first = problems[0]
        raise InputError(f"none of the gold records can be scored ({len(problems)} unusable); first: {first.message}",
                         path=first.path or gold_path, line=first.line)
    if gold_ids:
        raise InputError("the selection (--alignment/--ids) keeps none of the gold samples", path=gold_path)
    raise InputError("no gold samples to score", path=gold_path, hint="the gold data file holds no records")


__all__ = [
    "Comparison",
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_METRICS",
    "EvaluationResult",
    "GroupComparison",
    "GroupResult",
    "METRIC_NAMES",
    "ScoredSet",
    "StrictResult",
    "UNUSABLE_CHOICES",
    "aggregate_strict",
    "compare_columns",
    "compare_predictions",
    "dumps_metrics",
    "evaluate",
    "parse_choice_list",
    "parse_metric_list",
    "score_strict",
    "write_metrics",
]
