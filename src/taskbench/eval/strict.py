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

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError, validation_message
from ..schema import Sample, TaskGraph, ToolLibrary, record_id
from ..schema.sample import TRUNCATED
from .aggregate import HEADLINE, metrics_from_sums, per_tool_from_sums, split_groups, to_jsonable
from .groups import ALL_N_TOOLS, ALL_SPLITS, Group
from .groups import group_mask as _group_mask
from .normalise import ArgPair, NormalGraph, content_type, normalise_graph, normalise_record, output_types
from .parsed import ParsedPrediction, ParseStatus
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

SPLITS = ALL_SPLITS
N_TOOLS = ALL_N_TOOLS


# ----------------------------------------------------------------------------------------------- parsing


def parse_strict(sample_id: str, record: Mapping[str, Any] | None) -> ParsedPrediction:
    """Validate a prediction record ``{"id", "result": {...}}``; absent or malformed -> the empty graph.

    ``missing``: no record for the id. ``call_failed``: a failure record (``"failed": true``: the model call
    failed for good, so there is no answer to parse). ``parse_error``: no ``result`` object, no ``task_nodes``
    list, a result that does not fit :class:`TaskGraph` (e.g. a node without a string ``task``), or an answer
    that was cut off by the token limit (``finish_reason: "length"``; whatever was repaired from it is not
    scored).
    """
    if record is None:
        return ParsedPrediction(sample_id, "missing", TaskGraph(), "no prediction for this id")
    if record.get("failed") is True:
        return ParsedPrediction(sample_id, "call_failed", TaskGraph(),
                                str(record.get("error") or "the model call failed"))
    if record.get("finish_reason") == "length":
        return ParsedPrediction(sample_id, "parse_error", TaskGraph(), TRUNCATED)
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


class _Lines:
    """Line (JSON Lines) or row (parquet) of the k-th record of a gold file, found only when an error needs it:
    the file is read again once, counting the lines that hold a JSON object (what the readers yield)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = path
        self._lines: list[int] | None = None

    def __call__(self, index: int) -> int | None:
        if self.path is None:
            return None
        if str(self.path).endswith(".parquet"):
            return index + 1
        if self._lines is None:
            from ..dataset.jsonio import iter_jsonl

            try:
                self._lines = [line for line, rec in iter_jsonl(self.path, errors=[]) if isinstance(rec, dict)]
            except InputError:
                self._lines = []
        return self._lines[index] if index < len(self._lines) else None


def prepare_gold(
    samples: Iterable[Any],
    library: ToolLibrary,
    dependency: str,
    *,
    alignment_ids: Collection[str] | None = None,
    ids: Collection[str] | None = None,
    limit: int | None = None,
    path: str | Path | None = None,
    problems: list[InputError] | None = None,
    seen: set[str] | None = None,
) -> list[GoldItem]:
    """Normalise gold samples once: :class:`Sample` objects, or raw ``data.json`` records (the fields scored
    are checked as :class:`Sample` would check them: id, type, task_steps, task_nodes, task_links; other
    fields are not read).

    Which samples: those in ``alignment_ids`` and in ``ids`` (each None = all), the first ``limit`` of them in
    order. A raw record that cannot be scored (not an object, no usable id, a field that does not fit, an id
    seen before) raises :class:`InputError` naming ``path``:line, or with a ``problems`` list is appended there
    and left out. ``seen`` (when given) receives every usable gold id, selected or not."""
    reader = _GoldReader(library, dependency, path)
    out: list[GoldItem] = []

    def wanted(sid: str) -> bool:
        return ((alignment_ids is None or sid in alignment_ids) and (ids is None or sid in ids)
                and (limit is None or len(out) < limit))

    for index, rec in enumerate(samples):
        if isinstance(rec, Sample):
            if seen is not None:
                seen.add(rec.id)
            if wanted(rec.id):
                out.append(GoldItem(rec.id, rec.type, len(rec.task_nodes), normalise_graph(rec, library, dependency)))
            continue
        try:
            sid = reader.check(rec, index)
            if seen is not None:
                seen.add(sid)
            if wanted(sid):
                out.append(reader.item(rec, sid, index))
            reader.first[sid] = index  # a later record with this id is a duplicate (an unusable one is not)
        except InputError as err:
            if problems is None:
                raise
            problems.append(err)
    return out


class _GoldReader:
    """Checks and normalises raw gold records one by one (see :func:`prepare_gold`)."""

    def __init__(self, library: ToolLibrary, dependency: str, path: str | Path | None) -> None:
        self.library, self.dependency, self.path = library, dependency, path
        self.resource = dependency == "resource"
        self.out_types = output_types(library)
        self.literals: dict[str, Any] = {}
        self.first: dict[str, int] = {}
        self.line_of = _Lines(path)

    def check(self, rec: Any, index: int) -> str:
        """The record's id; raises :class:`InputError` for a record that is not an object, has no usable id or
        repeats the id of an earlier usable record."""
        from ..dataset.layout import parse_sample

        if not isinstance(rec, dict) or "id" not in rec:
            what = "expected a JSON object per line" if not isinstance(rec, dict) else "record has no 'id'"
            raise InputError(what, path=self.path, line=self.line_of(index), hint=f"gold record #{index + 1}")
        sid = rec["id"] if type(rec["id"]) is str else record_id(rec["id"])
        if sid is None:
            parse_sample(rec, path=self.path, line=self.line_of(index))  # raises the error naming the bad id
            raise InputError("record has no usable id", path=self.path, line=self.line_of(index))  # pragma: no cover
        if sid in self.first:
            line = self.line_of(self.first[sid])
            where = f"first on line {line}" if line is not None else f"first as gold record #{self.first[sid] + 1}"
            raise InputError(
                f"duplicate sample id {sid!r} ({where})",
                path=self.path, line=self.line_of(index), hint="the first record with this id is used",
            )
        return sid

    def item(self, rec: dict[str, Any], sid: str, index: int) -> GoldItem:
        """The record normalised for scoring; raises :class:`InputError` when its scored fields do not fit."""
        from ..dataset.layout import parse_sample

        split = rec.get("type", "single")
        g = None
        if (
            type(split) is str and split in _SPLIT_NAMES
            and "tool_nodes" not in rec and "tool_steps" not in rec and "tool_links" not in rec
        ):
            try:
                g = normalise_record(rec, self.resource, self.out_types, self.literals)
            except RecursionError:
                g = None
        if g is not None:
            return GoldItem(sid, split, len(g.names), g)
        # an unusual shape: let the model decide (and name the line of an error)
        line = self.line_of(index)
        sample = parse_sample({k: rec[k] for k in _SCORED_KEYS if k in rec}, path=self.path, line=line)
        try:
            graph = normalise_graph(sample, self.library, self.dependency)
        except RecursionError:
            raise InputError(f"sample {sid!r}: an argument is nested too deeply", path=self.path, line=line) from None
        return GoldItem(sid, sample.type, len(sample.task_nodes), graph)


def group_mask(splits: Any, n_tools: Any, split: str, n: str) -> Any:
    """Row mask of the group ``(split, n)`` over per-sample structures and tool counts: the one rule of
    :func:`taskbench.eval.groups.group_mask` in the argument order older callers use (a tool count such as
    ``"03"`` selects nothing, as in the reference)."""
    return _group_mask(Group(split, n), splits, n_tools)


def parse_normal(
    record: Mapping[str, Any] | None,
    library: ToolLibrary,
    dependency: str,
    out_types: Mapping[str, str],
    cache: dict[str, Any] | None = None,
) -> tuple[ParseStatus, str | None, NormalGraph]:
    """``(status, error, normalised graph)`` of one prediction record: the same as :func:`parse_strict`
    followed by :func:`normalise_graph`, from the raw record when it is in a plain shape."""
    if record is not None and record.get("finish_reason") != "length":
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
    "group_mask",
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
