"""The metric table: every strict metric's key, label, family, direction, explanation and function, in one place
that ``evaluate``, ``compare``, the leaderboard, the run report, the viewer and every glossary read.

A :class:`Metric` is computed from per-sample column sums (:func:`metrics_from_sums`, vectorised over any
leading batch axis, so the same function gives the point estimate, the bootstrap replicates and the
permutation replicates). The built-in metrics take the columns the strict scorer makes
(:func:`taskbench.eval.scoring.sample_table`); an added metric brings its own per-sample function
(:attr:`Metric.sample`: gold and predicted :class:`~taskbench.eval.normalise.NormalGraph` -> a number), whose
column the scorer adds, and is by default its mean over the group's samples.

``--metrics`` chooses *families* (``f1``, ``ed``, ``link``, ``argument``, ``rouge``, ``bertscore``, and an added
metric's own); the metrics without a family (parse, call-failure and missing rates) are always reported.

A new metric is a module that calls :func:`register_metric`, either dropped into this package (every module
here is imported on first use) or named in ``TASKBENCH_PLUGINS`` (:mod:`taskbench._plugins`;
docs/extending.md has a worked example). It appears in the metrics JSON, and with ``headline=True`` in the
strict table, the leaderboard, the run report, the viewer and their glossaries.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..._plugins import Registry, name_list
from ...errors import ConfigError

Direction = Literal["higher", "lower"]


@dataclass(frozen=True)
class Metric:
    """One strict metric."""

    key: str
    """Its name in the metrics JSON (``node_micro_f1``)."""
    label: str
    """Its column header in tables, plots and glossaries (``n-F1``)."""
    family: str | None
    """The ``--metrics`` family that switches it on; None: always reported."""
    direction: Direction
    """``higher`` or ``lower`` is better (ranking, verdicts, the glossary)."""
    explanation: str
    """What it measures, one sentence (the glossary adds the direction)."""
    value: Callable[[Mapping[str, np.ndarray]], np.ndarray] | None = None
    """``value(sums)`` -> the metric from the column sums of a group (a leading batch axis is kept; NaN where
    undefined). None: the mean of its own :attr:`sample` column (``sums[key] / sums["n"]``)."""
    columns: tuple[str, ...] = ()
    """The columns ``value`` reads; the metric is left out when one is missing (e.g. ROUGE not asked for)."""
    sample: Callable[[Any, Any], float] | None = None
    """For an added metric: ``sample(gold, predicted)`` -> its value on one sample, given the two
    :class:`~taskbench.eval.normalise.NormalGraph` (tool ``names``, ``links``, ``arguments``, ``steps``; a
    missing or unparseable prediction is the empty graph). The scorer stores it as column ``key``."""
    default: bool = False
    """Its family is scored when ``--metrics`` is not given."""
    headline: bool = False
    """Shown in the strict table, the leaderboard, the run report and the viewer (built-ins: their own lists)."""
    compat_key: str | None = None
    """The reference evaluator's key for the same number (compat files), if any."""

    def compute(self, sums: Mapping[str, np.ndarray]) -> np.ndarray:
        """The metric from column sums (see :attr:`value`)."""
        if self.value is not None:
            return self.value(sums)
        return _div(sums[self.key], sums["n"])

    def needs(self) -> tuple[str, ...]:
        """The columns it is computed from."""
        return self.columns if self.value is not None else (self.key, "n")

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"

    @property
    def meaning(self) -> str:
        """The glossary text: what it measures and which way is better."""
        return f"{self.explanation}; {'higher is better' if self.direction == 'higher' else 'LOWER is better'}"


# ---------------------------------------------------------------------------------------------- arithmetic


def _div(num: Any, den: Any, empty: float = np.nan) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.full(np.broadcast_shapes(num.shape, den.shape), empty)
    np.divide(num, den, out=out, where=den > 0)
    return out


def prf(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P, R, F1 from counts; NaN where nothing was expected or predicted, 0 where one side is empty."""
    nothing = (tp + fp + fn) == 0
    p = np.where(nothing, np.nan, _div(tp, tp + fp, 0.0))
    r = np.where(nothing, np.nan, _div(tp, tp + fn, 0.0))
    f = _div(2 * tp, 2 * tp + fp + fn)
    return p, r, f


def _mean(column: str) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
    return lambda s: _div(s[column], s["n"])


def _micro(prefix: str, part: int) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
    return lambda s: prf(s[f"{prefix}_tp"], s[f"{prefix}_fp"], s[f"{prefix}_fn"])[part]


def _macro(part: int) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
    """Per-tool P/R/F1 averaged over the tools that occur (in gold or prediction) in the group."""

    def value(s: Mapping[str, np.ndarray]) -> np.ndarray:
        tp, fp, fn = s["tool_tp"], s["tool_fp"], s["tool_fn"]
        present = (tp + fp + fn) > 0
        per = prf(tp, fp, fn)[part]
        return _div(np.where(present, per, 0.0).sum(axis=-1), present.sum(axis=-1))

    return value


def _counts(prefix: str) -> tuple[str, ...]:
    return (f"{prefix}_tp", f"{prefix}_fp", f"{prefix}_fn")


def _m(key: str, label: str, family: str | None, direction: Direction, explanation: str,
       value: Callable[[Mapping[str, np.ndarray]], np.ndarray], columns: tuple[str, ...], *,
       compat_key: str | None = None) -> Metric:
    return Metric(key=key, label=label, family=family, direction=direction, explanation=explanation, value=value,
                  columns=columns, default=family != "bertscore", compat_key=compat_key)


_P, _R, _F = 0, 1, 2

BUILTIN: tuple[Metric, ...] = (
    _m("step_rouge1", "R-1", "rouge", "higher", "ROUGE-1 of the predicted steps against the gold steps (word "
       "overlap)", _mean("step_rouge1"), ("step_rouge1", "n"), compat_key="step_rouge1"),
    _m("step_rouge2", "R-2", "rouge", "higher", "ROUGE-2 of the predicted steps against the gold steps (word-pair "
       "overlap)", _mean("step_rouge2"), ("step_rouge2", "n"), compat_key="step_rouge2"),
    _m("step_rougeL", "R-L", "rouge", "higher", "ROUGE-L of the predicted task steps against the gold steps "
       "(wording overlap)", _mean("step_rougeL"), ("step_rougeL", "n"), compat_key="step_rougeL"),
    _m("step_rougeLsum", "R-Lsum", "rouge", "higher", "ROUGE-Lsum of the steps (longest common subsequence, line "
       "by line)", _mean("step_rougeLsum"), ("step_rougeLsum", "n"), compat_key="step_rougeLsum"),
    _m("step_bertscore_precision", "BERT-P", "bertscore", "higher", "BERTScore precision of the predicted steps "
       "against the gold steps", _mean("step_bertscore_precision"), ("step_bertscore_precision", "n")),
    _m("step_bertscore_recall", "BERT-R", "bertscore", "higher", "BERTScore recall of the predicted steps against "
       "the gold steps", _mean("step_bertscore_recall"), ("step_bertscore_recall", "n")),
    _m("step_bertscore_f1", "BERT-F1", "bertscore", "higher", "BERTScore F1 of the predicted steps against the "
       "gold steps (meaning overlap)", _mean("step_bertscore_f1"), ("step_bertscore_f1", "n"),
       compat_key="step_bertscore_f1"),
    _m("node_micro_precision", "n-P", "f1", "higher", "node precision: the share of predicted tool calls that are "
       "gold ones", _micro("node", _P), _counts("node")),
    _m("node_micro_recall", "n-R", "f1", "higher", "node recall: the share of gold tool calls the prediction has",
       _micro("node", _R), _counts("node")),
    _m("node_micro_f1", "n-F1", "f1", "higher", "node F1: were the right tools chosen (predicted tool names "
       "against the gold ones)", _micro("node", _F), _counts("node"), compat_key="node_micro_f1_no_matching"),
    _m("node_macro_precision", "n-P macro", "f1", "higher", "node precision per tool, averaged over the tools that "
       "occur", _macro(_P), _counts("tool")),
    _m("node_macro_recall", "n-R macro", "f1", "higher", "node recall per tool, averaged over the tools that occur",
       _macro(_R), _counts("tool")),
    _m("node_macro_f1", "n-F1 macro", "f1", "higher", "node F1 per tool, averaged over the tools that occur (each "
       "tool counts the same, however often it is used)", _macro(_F), _counts("tool"),
       compat_key="node_macro_f1_no_matching"),
    _m("link_precision", "e-P", "link", "higher", "edge precision: the share of predicted dependencies that are gold "
       "ones", _micro("link", _P), _counts("link")),
    _m("link_recall", "e-R", "link", "higher", "edge recall: the share of gold dependencies the prediction has",
       _micro("link", _R), _counts("link")),
    _m("link_f1", "e-F1", "link", "higher", "edge F1: were the right dependencies between the tool calls predicted "
       "(the graph's links)", _micro("link", _F), _counts("link"), compat_key="link_binary_f1"),
    _m("argument_name_f1", "t-F1", "argument", "higher", "argument-name F1: the right parameter names for each tool",
       _micro("arg_name", _F), _counts("arg_name"), compat_key="argument_task_argname_binary_f1_no_matching"),
    _m("argument_value_f1", "v-F1", "argument", "higher", "argument-value F1: the right parameter names with the "
       "right values", _micro("arg_value", _F), _counts("arg_value"),
       compat_key="argument_task_argname_value_binary_f1_no_matching"),
    _m("edit_distance", "NED", "ed", "lower", "normalized edit distance between the predicted and the gold tool "
       "sequence: 0 = the same, 100 = nothing in common", _mean("ned"), ("ned", "n"), compat_key="edit_distance"),
    _m("node_set_accuracy", "node set acc", "f1", "higher", "samples whose predicted set of tools is exactly the "
       "gold set", _mean("node_set_match"), ("node_set_match", "n")),
    _m("edge_set_accuracy", "edge set acc", "link", "higher", "samples (with at least one gold link) whose predicted "
       "links are exactly the gold links", lambda s: _div(s["edge_set_match"], s["edge_defined"]),
       ("edge_set_match", "edge_defined")),
    _m("graph_accuracy", "graph acc", "f1", "higher", "samples whose whole tool graph is exactly right",
       _mean("graph_match"), ("graph_match", "n")),
    _m("parse_failure_rate", "parse fail", None, "lower", "answers without a usable task graph",
       _mean("parse_failure"), ("parse_failure", "n")),
    _m("call_failure_rate", "call fail", None, "lower", "samples whose model call failed for good (no answer to "
       "score)", _mean("call_failure"), ("call_failure", "n")),
    _m("missing_rate", "missing", None, "lower", "gold samples with no prediction at all", _mean("missing"),
       ("missing", "n")),
)
"""The built-in strict metrics, in display order."""

BUILTIN_FAMILIES: tuple[str, ...] = ("f1", "ed", "link", "argument", "rouge", "bertscore")
"""The built-in ``--metrics`` families, in the reference's order (``all`` = every family)."""

_METRICS: Registry[Metric] = Registry("metric", package=__name__)
for _metric in BUILTIN:
    _METRICS.register(_metric.key, _metric)


def register_metric(metric: Metric, *, replace: bool = False) -> Metric:
    """Add a metric to the table (see :class:`Metric`): it needs a ``family`` (its own name is fine) and either a
    per-sample ``sample`` function or a ``value`` over columns that exist."""
    if metric.family is None or not metric.family.strip() or "," in metric.family or metric.family == "all":
        raise ConfigError(f"metric {metric.key!r}: give it a --metrics family (a name without commas, not 'all')")
    if metric.value is None and metric.sample is None:
        raise ConfigError(f"metric {metric.key!r}: give a per-sample function (sample=) or a value over column "
                          "sums (value=, with columns=)")
    if metric.direction not in ("higher", "lower"):
        raise ConfigError(f"metric {metric.key!r}: direction is 'higher' or 'lower', not {metric.direction!r}")
    if any(m.label == metric.label and m.key != metric.key for m in _METRICS.registered().values()):
        raise ConfigError(f"metric {metric.key!r}: the label {metric.label!r} is taken by another metric")
    return _METRICS.register(metric.key, metric, replace=replace)


def unregister_metric(key: str) -> None:
    """Remove a metric (tests, plugins); the built-ins stay unless removed on purpose."""
    _METRICS.unregister(key)


def metric_table() -> dict[str, Metric]:
    """Every metric by key, in display order (built-ins, then added ones)."""
    return _METRICS.entries()


def find_metric(key: str) -> Metric | None:
    """The metric whose JSON key is ``key``, or None."""
    return _METRICS.find(key)


def added_metrics() -> list[Metric]:
    """The metrics registered besides the built-ins, in registration order."""
    builtin = {m.key for m in BUILTIN}
    return [m for k, m in metric_table().items() if k not in builtin]


def headline_added() -> list[Metric]:
    """The added metrics shown beside the built-in headline columns (``headline=True``)."""
    return [m for m in added_metrics() if m.headline]


def families() -> list[str]:
    """Every ``--metrics`` family: the built-in ones, then added metrics' families."""
    return list(dict.fromkeys([*BUILTIN_FAMILIES, *(m.family for m in added_metrics() if m.family)]))


def default_families() -> list[str]:
    """The families scored when ``--metrics`` is not given."""
    table = metric_table().values()
    return [f for f in families() if any(m.family == f and m.default for m in table)]


def family_keys(chosen: Collection[str]) -> set[str]:
    """The metric keys reported for the ``chosen`` families (with the always-reported ones)."""
    return {m.key for m in metric_table().values() if m.family is None or m.family in chosen}


def sample_metrics(chosen: Collection[str]) -> list[Metric]:
    """The metrics of the ``chosen`` families that bring a per-sample function (their columns are scored)."""
    return [m for m in metric_table().values() if m.sample is not None and m.family in chosen]


def label(key: str) -> str:
    """The label of a metric key (the key itself when unknown)."""
    m = find_metric(key)
    return m.label if m is not None else key


def lower_is_better(key: str) -> bool:
    """Whether a smaller value of ``key`` is better."""
    m = find_metric(key)
    return m is not None and m.lower_is_better


def with_added(keys: Sequence[str], *, added: bool = True) -> list[Metric]:
    """The metrics of ``keys`` (a view's own choice and order of built-in metrics), then, with ``added``, the added
    metrics marked ``headline`` (every view of the built-in headline metrics shows them too)."""
    table = metric_table()
    out = [table[k] for k in keys if k in table]
    if added:
        out += [m for m in headline_added() if m.key not in keys]
    return out


def by_label() -> dict[str, Metric]:
    """Every metric by its label."""
    return {m.label: m for m in metric_table().values()}


def metrics_from_sums(sums: Mapping[str, np.ndarray], keys: Collection[str] | None = None) -> dict[str, np.ndarray]:
    """Every metric (those in ``keys`` when given) from column sums, in display order. Scalars give scalars; a
    leading batch axis (bootstrap replicates) is kept; per-tool columns have the tool axis last. A metric whose
    columns are missing is left out."""
    out: dict[str, np.ndarray] = {}
    for key, m in metric_table().items():
        if keys is not None and key not in keys:
            continue
        if all(c in sums for c in m.needs()):
            out[key] = m.compute(sums)
    return out


def families_help() -> str:
    """The ``--metrics`` families for help texts."""
    return ",".join(families())


def compare_families_help() -> str:
    """The families ``compare`` takes (no BERTScore), for help texts."""
    return ",".join(f for f in families() if f != "bertscore")


def default_families_help() -> str:
    """The default ``--metrics`` families for help texts."""
    return ",".join(default_families())


def keys_text(keys: Sequence[str]) -> str:
    """``a, b or c`` of metric keys (for messages)."""
    return name_list(list(keys))


__all__ = [
    "BUILTIN",
    "BUILTIN_FAMILIES",
    "Direction",
    "Metric",
    "added_metrics",
    "by_label",
    "default_families",
    "families",
    "family_keys",
    "find_metric",
    "headline_added",
    "label",
    "lower_is_better",
    "metric_table",
    "metrics_from_sums",
    "prf",
    "register_metric",
    "sample_metrics",
    "unregister_metric",
    "with_added",
]
