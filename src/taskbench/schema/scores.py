"""The score models: what scoring a prediction set produces and what a metrics file holds.

- :class:`PredictionErrors`, :class:`TaxonomySummary`: the error taxonomy of predictions
  (:mod:`taskbench.eval.taxonomy` computes them).
- :class:`GroupResult`, :class:`StrictResult`: strict metrics per split group, with CIs
  (:func:`taskbench.eval.api.aggregate_strict`).
- :class:`MetricsFile`: any metrics JSON (``taskbench evaluate -o``, ``RUN_DIR/metrics/...``, the reference
  evaluator's), read through one model: which layout it is, the model, dataset, mode and sample count it
  records, and its strict and compat parts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class PredictionErrors(BaseModel):
    """The error labels of one prediction, with what triggered them."""

    id: str = Field(description="Sample id.")
    labels: list[str] = Field(default_factory=list, description="Error categories (see CATEGORIES); [] = correct.")
    missing_tools: list[str] = Field(default_factory=list, description="Gold tools the prediction lacks.")
    extra_tools: list[str] = Field(default_factory=list, description="Predicted tools gold does not have.")
    hallucinated_tools: list[str] = Field(default_factory=list, description="Predicted names not in the library.")
    wrong_links: list[tuple[str, str]] = Field(
        default_factory=list, description="Links between shared tools that only the prediction has."
    )
    missing_links: list[tuple[str, str]] = Field(
        default_factory=list, description="Links between shared tools that only gold has."
    )
    parameter_tools: list[str] = Field(default_factory=list, description="Shared tools with wrong arguments.")
    detail: str | None = Field(default=None, description="Parse error message, when there was one.")


class TaxonomySummary(BaseModel):
    """Counts of each error category over a set of predictions."""

    total: int = Field(description="Number of predictions classified.")
    correct: int = Field(description="Predictions without any error label.")
    counts: dict[str, int] = Field(description="Predictions per category (one prediction can have several).")


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
    missing_prediction_ids: list[str] = Field(
        default_factory=list, description="Gold ids scored without a prediction (as empty graphs)."
    )
    unusable_gold: list[str] = Field(
        default_factory=list, description="Gold records left out because they cannot be scored (file:line: why)."
    )
    warnings: list[str] = Field(
        default_factory=list, description="Coverage problems: missing and unmatched ids, another dataset, ..."
    )
    groups: dict[str, GroupResult] = Field(description="'{split}_{n_tools}' -> group metrics.")
    chain_edit_distance: float | None = Field(
        default=None, description="Normalized edit distance on chain samples (the paper reports NED on chains)."
    )
    taxonomy: TaxonomySummary = Field(description="Error category counts over all scored predictions.")
    errors: list[PredictionErrors] = Field(default_factory=list, description="Error labels per prediction.")




MetricsLayout = Literal["strict", "compat", "both"]
"""What a metrics file holds: the strict document, the reference evaluator's layout, or ``{strict, compat}``."""


class MetricsFile(BaseModel):
    """A metrics JSON of any layout, read through one model (:meth:`from_json`).

    ``taskbench evaluate -o`` (strict or ``--both``) and ``taskbench run`` write ``model``, ``dataset``,
    ``mode`` and ``n_samples`` at the top of the file; a compat-only file keeps the reference evaluator's exact
    layout, so these come from its run header (``FILE.header.json``) or the caller."""

    model: str | None = Field(default=None, description="'provider/model' of the predictions scored.")
    dataset: str | None = Field(default=None, description="Dataset name.")
    mode: MetricsLayout = Field(description="strict | compat | both.")
    n_samples: int | None = Field(default=None, description="Gold samples scored (the overall group's n).")
    strict: StrictResult | None = Field(default=None, description="The strict document.")
    compat: dict[str, Any] | None = Field(default=None, description="The reference-compatible metrics, in the "
                                          "reference's layout ('{split}_{n}' -> metric -> value).")
    execution: dict[str, Any] | None = Field(default=None, description="Execution success, with --execute.")

    @staticmethod
    def layout(doc: Any) -> MetricsLayout | None:
        """Which layout a JSON document is, or None when it holds no metrics."""
        if not isinstance(doc, dict):
            return None
        if isinstance(doc.get("strict"), dict) and isinstance(doc.get("compat"), dict):
            return "both"
        if doc.get("mode") == "strict" and isinstance(doc.get("groups"), dict):
            return "strict"
        if any(isinstance(v, dict) and "all_samples" in v for v in doc.values()):
            return "compat"
        return None

    @classmethod
    def from_json(cls, doc: Any, *, model: str | None = None, dataset: str | None = None) -> MetricsFile:
        """Read a metrics document (raises ValueError when it is none); ``model``/``dataset`` fill what the file
        does not record."""
        kind = cls.layout(doc)
        if kind is None:
            raise ValueError("no metrics found (expected a taskbench evaluate output or a reference metrics JSON)")
        assert isinstance(doc, dict)
        strict = doc["strict"] if kind == "both" else doc if kind == "strict" else None
        compat = doc["compat"] if kind == "both" else doc if kind == "compat" else None
        if compat is not None:
            compat = {k: v for k, v in compat.items() if isinstance(v, dict) and "all_samples" in v}
        n = doc.get("n_samples")
        if not isinstance(n, int):
            n = strict.get("n_gold") if isinstance(strict, dict) else None
            overall = (compat or {}).get("overall_overall")
            if not isinstance(n, int) and isinstance(overall, dict) and isinstance(overall.get("all_samples"), int):
                n = overall["all_samples"]
        own_model, own_dataset = doc.get("model"), doc.get("dataset")
        execution = doc.get("execution")
        return cls(
            model=own_model if isinstance(own_model, str) else model,
            dataset=own_dataset if isinstance(own_dataset, str) else dataset,
            mode=kind, n_samples=n if isinstance(n, int) else None,
            strict=StrictResult.model_validate(strict) if strict is not None else None,
            compat=compat, execution=execution if isinstance(execution, dict) else None,
        )
