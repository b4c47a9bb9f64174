"""Strict scoring: every gold sample counts, nothing a model gets wrong is dropped.

The flow is parse -> normalise -> score each sample once -> aggregate per split group, one module each:

1. here: :func:`parse_strict` turns one prediction record (or its absence) into a :class:`ParsedPrediction`: the
   validated :class:`~taskbench.schema.TaskGraph` plus a status (``ok`` / ``missing`` / ``parse_error``). A
   missing or unparseable prediction becomes the empty graph; the failure is counted, never hidden.
   :func:`prepare_gold` and :func:`parse_normal` read gold records and predictions straight into normalised
   graphs.
2. :mod:`taskbench.eval.normalise`: a task graph reduced to what the metrics compare (tool names, links,
   argument pairs), from a validated graph or straight from a raw record.
3. :mod:`taskbench.eval.scoring`: one gold graph against one predicted graph -> counts and per-sample scores;
   :func:`sample_table` stacks them into column arrays.
4. :mod:`taskbench.eval.aggregate`: every metric from column sums, vectorised over any leading batch axis.

Metric definitions: see docs/evaluation.md. The names of the other three modules are importable from here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ..errors import InputError, validation_message
from ..schema import Sample, TaskGraph, ToolLibrary
from .aggregate import HEADLINE, metrics_from_sums, per_tool_from_sums, split_groups, to_jsonable
from .groups import ALL_N_TOOLS, ALL_SPLITS
from .normalise import ArgPair, NormalGraph, content_type, normalise_graph, normalise_record, output_types
from .scoring import (
    SampleScore,
    compare_counts,
    compare_graphs,
    identical_counts,
    name_counts,
    same_graph,
    sample_table,
    score_normalised,
    score_sample,
)

ParseStatus = Literal["ok", "missing", "parse_error"]

SPLITS = ALL_SPLITS
N_TOOLS = ALL_N_TOOLS


# ----------------------------------------------------------------------------------------------- parsing


@dataclass
class ParsedPrediction:
    """One prediction after strict parsing."""

    id: str
    status: ParseStatus
    graph: TaskGraph
    error: str | None = None


def parse_strict(sample_id: str, record: Mapping[str, Any] | None) -> ParsedPrediction:
    """Validate a prediction record ``{"id", "result": {...}}``; absent or malformed -> the empty graph.

    ``missing``: no record for the id. ``parse_error``: no ``result`` object, no ``task_nodes`` list, or a
    result that does not fit :class:`TaskGraph` (e.g. a node without a string ``task``).
    """
    if record is None:
        return ParsedPrediction(sample_id, "missing", TaskGraph(), "no prediction for this id")
    result = record.get("result")
    if not isinstance(result, dict):
        why = record.get("error") or ("no 'result' object" if result is None else "'result' is not an object")
        return ParsedPrediction(sample_id, "parse_error", TaskGraph(), str(why))
    if not isinstance(result.get("task_nodes"), list):
        return ParsedPrediction(sample_id, "parse_error", TaskGraph(), "'result' has no 'task_nodes' list")
    try:
        graph = TaskGraph.model_validate(result)
    except ValidationError as exc:
        return ParsedPrediction(sample_id, "parse_error", TaskGraph(), validation_message(exc))
    return ParsedPrediction(sample_id, "ok", graph)


# ------------------------------------------------------------------------------- batch: gold + predictions


@dataclass(slots=True)
class GoldItem:
    """One gold sample, normalised for scoring."""

    id: str
    split: str
    n_tools: int
    graph: NormalGraph


_SCORED_KEYS = ("id", "type", "task_steps", "task_nodes", "task_links", "tool_steps", "tool_nodes", "tool_links")
_SPLIT_NAMES = frozenset(("single", "chain", "dag"))


def _line_of(path: str | Path | None, index: int) -> int | None:
    """Line (JSON Lines) or row (parquet) of the ``index``-th record of a gold file (only on error paths)."""
    if path is None:
        return None
    if str(path).endswith(".parquet"):
        return index + 1
    from ..dataset.jsonio import iter_jsonl

    for k, (line, _) in enumerate(iter_jsonl(path)):
        if k == index:
            return line
    return None


def prepare_gold(
    samples: Iterable[Any],
    library: ToolLibrary,
    dependency: str,
    *,
    alignment_ids: set[str] | None = None,
    path: str | Path | None = None,
) -> list[GoldItem]:
    """Normalise gold samples once: :class:`Sample` objects, or raw ``data.json`` records (the fields scored
    are checked as :class:`Sample` would check them: id, type, task_steps, task_nodes, task_links; other
    fields are not read). Raw records: an invalid record or a duplicate id raises :class:`InputError`
    naming ``path``:line. ``alignment_ids`` keeps only those ids."""
    from ..dataset.layout import parse_sample

    resource = dependency == "resource"
    out_types = output_types(library)
    out: list[GoldItem] = []
    first: dict[str, int] = {}
    literals: dict[str, Any] = {}
    for index, rec in enumerate(samples):
        if isinstance(rec, Sample):
            if alignment_ids is None or rec.id in alignment_ids:
                out.append(GoldItem(rec.id, rec.type, len(rec.task_nodes), normalise_graph(rec, library, dependency)))
            continue
        if not isinstance(rec, dict) or "id" not in rec:
            what = "expected a JSON object per line" if not isinstance(rec, dict) else "record has no 'id'"
            raise InputError(what, path=path, line=_line_of(path, index), hint=f"gold record #{index + 1}")
        sid = rec["id"]
        if type(sid) is not str:
            sid = str(sid)
        if sid in first:
            raise InputError(
                f"duplicate sample id {sid!r} (first on line {_line_of(path, first[sid])})",
                path=path, line=_line_of(path, index),
            )
        first[sid] = index
        if alignment_ids is not None and sid not in alignment_ids:
            continue
        split = rec.get("type", "single")
        g = None
        if (
            type(split) is str and split in _SPLIT_NAMES
            and "tool_nodes" not in rec and "tool_steps" not in rec and "tool_links" not in rec
        ):
            g = normalise_record(rec, resource, out_types, literals)
        if g is None:  # an unusual shape: let the model decide (and name the line of an error)
            sample = parse_sample(
                {k: rec[k] for k in _SCORED_KEYS if k in rec}, path=path, line=_line_of(path, index)
            )
            out.append(GoldItem(sid, sample.type, len(sample.task_nodes), normalise_graph(sample, library, dependency)))
        else:
            out.append(GoldItem(sid, split, len(g.names), g))
    return out


def parse_normal(
    record: Mapping[str, Any] | None,
    library: ToolLibrary,
    dependency: str,
    out_types: Mapping[str, str],
    cache: dict[str, Any] | None = None,
) -> tuple[ParseStatus, str | None, NormalGraph]:
    """``(status, error, normalised graph)`` of one prediction record: the same as :func:`parse_strict`
    followed by :func:`normalise_graph`, from the raw record when it is in a plain shape."""
    if record is not None:
        result = record.get("result")
        if isinstance(result, dict) and isinstance(result.get("task_nodes"), list):
            g = normalise_record(result, dependency == "resource", out_types, cache)
            if g is not None:
                return "ok", None, g
    parsed = parse_strict("", record)
    if parsed.status != "ok":
        return parsed.status, parsed.error, NormalGraph([], [], [], "")
    return "ok", None, normalise_graph(parsed.graph, library, dependency)



__all__ = [
    "ArgPair",
    "GoldItem",
    "HEADLINE",
    "N_TOOLS",
    "NormalGraph",
    "ParseStatus",
    "ParsedPrediction",
    "SPLITS",
    "SampleScore",
    "compare_counts",
    "compare_graphs",
    "content_type",
    "identical_counts",
    "metrics_from_sums",
    "name_counts",
    "normalise_graph",
    "normalise_record",
    "output_types",
    "parse_normal",
    "parse_strict",
    "per_tool_from_sums",
    "prepare_gold",
    "sample_table",
    "score_normalised",
    "score_sample",
    "same_graph",
    "split_groups",
    "to_jsonable",
]
