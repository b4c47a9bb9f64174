"""Strict scoring: every gold sample counts, nothing a model gets wrong is dropped.

The flow is parse -> normalise -> score each sample once -> aggregate per split group:

1. :func:`parse_strict` turns one prediction record (or its absence) into a :class:`ParsedPrediction`: the
   validated :class:`~taskbench.schema.TaskGraph` plus a status (``ok`` / ``missing`` / ``parse_error``). A
   missing or unparseable prediction becomes the empty graph; the failure is counted, never hidden.
2. :func:`normalise_graph` maps a task graph to what the metrics compare: tool names, links (``<node-j>``
   references in resource domains, explicit ``task_links`` in temporal ones) and ``(name, value)`` argument
   pairs.
3. :func:`score_sample` compares one gold graph with one predicted graph and returns counts (true/false
   positives, false negatives) and per-sample scores; :func:`sample_table` stacks them into column arrays.
4. :func:`metrics_from_sums` computes every metric from column sums, vectorised over any leading batch axis,
   so the same function gives the point estimate, bootstrap replicates and permutation replicates
   (:mod:`taskbench.eval.stats`).

Metric definitions (see docs/evaluation.md): nodes, arguments and links are compared as multisets per sample
(a tool predicted twice when gold has it once is one false positive); a tool name that is not in the library
is a false positive like any other wrong tool; micro scores pool counts over the group; macro scores average
per-tool F1 over the library tools that occur (in gold or prediction) in the group.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError

from ..schema import NODE_REF, Sample, TaskArgument, TaskGraph, ToolLibrary

ParseStatus = Literal["ok", "missing", "parse_error"]

SPLITS = ("overall", "single", "chain", "dag")
N_TOOLS = ("overall",) + tuple(str(i) for i in range(1, 11))

_EXTENSIONS = (
    ("image", ("jpg", "png", "jpeg", "gif", "bmp", "tiff", "svg", "ico")),
    ("audio", ("mp3", "wav", "wma", "ogg", "aac", "flac", "aiff", "au")),
    ("video", ("mp4", "avi", "mov", "flv", "wmv", "mkv", "webm", "m4v", "mpg", "mpeg")),
)
_TYPE_PATTERNS = [(kind, re.compile(r"\.(?:" + "|".join(exts) + ")")) for kind, exts in _EXTENSIONS]


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
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()))
        return ParsedPrediction(sample_id, "parse_error", TaskGraph(), f"{loc}: {err.get('msg')}")
    return ParsedPrediction(sample_id, "ok", graph)


# ------------------------------------------------------------------------------------------- normalising


def content_type(text: str) -> str:
    """The resource type a literal argument stands for: image / audio / video by file extension, else text."""
    for kind, pattern in _TYPE_PATTERNS:
        if pattern.search(text):
            return kind
    return "text"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(_as_text(v) for v in value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class ArgPair:
    """One argument as compared: ``name`` and ``value``; ``ref`` is the referenced tool for ``<node-j>``."""

    name: str
    value: str
    ref: str | None = None


@dataclass
class NormalGraph:
    """A task graph reduced to what the metrics compare."""

    names: list[str]
    links: list[tuple[str, str]]
    arguments: list[list[ArgPair]]
    steps: str


def _argument(arg: Any, i: int, names: Sequence[str], library: ToolLibrary, resource: bool) -> ArgPair | None:
    if isinstance(arg, TaskArgument):
        return ArgPair(arg.name, _as_text(arg.value))
    if isinstance(arg, dict):
        if not arg:
            return ArgPair("text" if resource else "", "")
        key, value = next(iter(arg.items()))
        text = _as_text(value)
        if not resource:
            return ArgPair(str(key), text)
        arg = text
    text = _as_text(arg)
    if resource:
        m = NODE_REF.search(text)
        if m is not None:
            j = int(m.group(1))
            if j == i:
                return None  # a self-reference carries nothing
            if j < len(names):
                tool = library.get(names[j])
                return ArgPair(tool.first_output_type() if tool else "other", names[j], ref=names[j])
        return ArgPair(content_type(text), text)
    return ArgPair("", text)


def normalise_graph(graph: TaskGraph, library: ToolLibrary, dependency: str) -> NormalGraph:
    """Names, links and argument pairs of a graph under a dependency kind.

    Resource: links from ``<node-j>`` references (self and out-of-range references give no link); a reference
    argument is ``(first output type of the referenced tool, its name)``, a literal is ``(content type,
    text)``. Temporal: links are ``task_links``, arguments the given ``{name, value}`` pairs (a one-key dict
    ``{k: v}`` reads as name k).
    """
    names = graph.tool_names
    resource = dependency == "resource"
    links = [(lk.source, lk.target) for lk in graph.links_for(dependency)]
    arguments: list[list[ArgPair]] = []
    for i, node in enumerate(graph.task_nodes):
        pairs = [_argument(a, i, names, library, resource) for a in node.arguments]
        arguments.append([p for p in pairs if p is not None])
    return NormalGraph(names, links, arguments, "\n".join(graph.task_steps))


# --------------------------------------------------------------------------------------------- scoring


@dataclass
class SampleScore:
    """Counts and scores of one sample (gold vs prediction)."""

    id: str
    split: str
    n_tools: int
    status: ParseStatus
    node: tuple[int, int, int]
    link: tuple[int, int, int]
    arg_name: tuple[int, int, int]
    arg_value: tuple[int, int, int]
    ned: float
    node_set_match: bool
    edge_defined: bool
    edge_set_match: bool
    graph_match: bool
    tool_counts: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    hallucinated: list[str] = field(default_factory=list)
    error: str | None = None


def _prf_counts(gold: Sequence[Any], pred: Sequence[Any]) -> tuple[int, int, int]:
    """(tp, fp, fn) of two multisets given as sequences."""
    if len(gold) == len(pred) and (gold == pred or sorted(map(repr, gold)) == sorted(map(repr, pred))):
        return len(gold), 0, 0
    tp = sum((Counter(gold) & Counter(pred)).values())
    return tp, len(pred) - tp, len(gold) - tp


def _ned(gold: Sequence[str], pred: Sequence[str]) -> float:
    from rapidfuzz.distance import Indel

    if not gold and not pred:
        return 0.0
    ids: dict[str, int] = {}
    g = [ids.setdefault(n, len(ids)) for n in gold]
    p = [ids.setdefault(n, len(ids)) for n in pred]
    return float(Indel.normalized_distance(g, p))


def score_sample(
    gold: Sample, parsed: ParsedPrediction, library: ToolLibrary, dependency: str
) -> SampleScore:
    """Compare one gold sample with its parsed prediction (pure)."""
    g = normalise_graph(gold, library, dependency)
    p = normalise_graph(parsed.graph, library, dependency)
    return score_normalised(gold, parsed, g, p, library)


def score_normalised(
    gold: Sample, parsed: ParsedPrediction, g: NormalGraph, p: NormalGraph, library: ToolLibrary
) -> SampleScore:
    """:func:`score_sample` on graphs already normalised (so a caller normalises each graph once)."""
    gn, pn = Counter(g.names), Counter(p.names)
    gl, pl = sorted(set(g.links)), sorted(set(p.links))
    g_args = [(t, a.name) for t, args in zip(g.names, g.arguments, strict=True) for a in args]
    p_args = [(t, a.name) for t, args in zip(p.names, p.arguments, strict=True) for a in args]
    g_vals = [(t, a.name, a.value) for t, args in zip(g.names, g.arguments, strict=True) for a in args]
    p_vals = [(t, a.name, a.value) for t, args in zip(p.names, p.arguments, strict=True) for a in args]
    tool_counts: dict[str, tuple[int, int, int]] = {}
    for name in set(gn) | set(pn):
        if name in library:
            tp = min(gn[name], pn[name])
            tool_counts[name] = (tp, pn[name] - tp, gn[name] - tp)
    node_match = gn == pn
    edge_match = gl == pl
    return SampleScore(
        id=gold.id,
        split=gold.type,
        n_tools=len(gold.task_nodes),
        status=parsed.status,
        node=_prf_counts(g.names, p.names),
        link=_prf_counts(gl, pl),
        arg_name=_prf_counts(g_args, p_args),
        arg_value=_prf_counts(g_vals, p_vals),
        ned=_ned(g.names, p.names),
        node_set_match=node_match,
        edge_defined=bool(gl),
        edge_set_match=edge_match,
        graph_match=node_match and edge_match,
        tool_counts=tool_counts,
        hallucinated=[n for n in p.names if n not in library and n not in gn],
        error=parsed.error,
    )


def sample_table(
    scores: Sequence[SampleScore], library: ToolLibrary, extra: Mapping[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """Per-sample columns (float arrays, one row per sample) for :func:`metrics_from_sums`.

    ``extra`` adds per-sample score columns such as ``step_rouge1`` or ``step_bertscore_f1``.
    """
    n = len(scores)
    cols: dict[str, np.ndarray] = {"n": np.ones(n)}
    for key in ("node", "link", "arg_name", "arg_value"):
        arr = np.array([getattr(s, key) for s in scores], dtype=float).reshape(n, 3)
        cols[f"{key}_tp"], cols[f"{key}_fp"], cols[f"{key}_fn"] = arr[:, 0], arr[:, 1], arr[:, 2]
    index = {name: i for i, name in enumerate(library.names)}
    per_tool = np.zeros((n, 3, len(index)))
    for r, s in enumerate(scores):
        for name, counts in s.tool_counts.items():
            per_tool[r, :, index[name]] = counts
    cols["tool_tp"], cols["tool_fp"], cols["tool_fn"] = per_tool[:, 0], per_tool[:, 1], per_tool[:, 2]
    cols["ned"] = np.array([s.ned for s in scores], dtype=float)
    for key in ("node_set_match", "edge_defined", "edge_set_match", "graph_match"):
        cols[key] = np.array([getattr(s, key) for s in scores], dtype=float)
    cols["edge_set_match"] = cols["edge_set_match"] * cols["edge_defined"]
    cols["parse_failure"] = np.array([s.status == "parse_error" for s in scores], dtype=float)
    cols["missing"] = np.array([s.status == "missing" for s in scores], dtype=float)
    for key, values in (extra or {}).items():
        cols[key] = np.asarray(values, dtype=float)
    return cols


# ----------------------------------------------------------------------------------------- aggregation


def _div(num: np.ndarray, den: np.ndarray, empty: float = np.nan) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), empty)


def _prf(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P, R, F1 from counts; NaN where nothing was expected or predicted, 0 where one side is empty."""
    nothing = (tp + fp + fn) == 0
    p = np.where(nothing, np.nan, _div(tp, tp + fp, 0.0))
    r = np.where(nothing, np.nan, _div(tp, tp + fn, 0.0))
    f = _div(2 * tp, 2 * tp + fp + fn)
    return p, r, f


HEADLINE = (
    "step_rouge1",
    "step_rouge2",
    "step_rougeL",
    "step_rougeLsum",
    "step_bertscore_precision",
    "step_bertscore_recall",
    "step_bertscore_f1",
    "node_micro_precision",
    "node_micro_recall",
    "node_micro_f1",
    "node_macro_precision",
    "node_macro_recall",
    "node_macro_f1",
    "link_precision",
    "link_recall",
    "link_f1",
    "argument_name_f1",
    "argument_value_f1",
    "edit_distance",
    "node_set_accuracy",
    "edge_set_accuracy",
    "graph_accuracy",
    "parse_failure_rate",
    "missing_rate",
)
"""Every metric :func:`metrics_from_sums` can report, in display order (missing columns -> left out)."""

_MEAN_COLUMNS = {
    "step_rouge1": "step_rouge1",
    "step_rouge2": "step_rouge2",
    "step_rougeL": "step_rougeL",
    "step_rougeLsum": "step_rougeLsum",
    "step_bertscore_precision": "step_bertscore_precision",
    "step_bertscore_recall": "step_bertscore_recall",
    "step_bertscore_f1": "step_bertscore_f1",
    "edit_distance": "ned",
    "node_set_accuracy": "node_set_match",
    "graph_accuracy": "graph_match",
    "parse_failure_rate": "parse_failure",
    "missing_rate": "missing",
}


def metrics_from_sums(sums: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every metric from column sums. Scalars give scalars; a leading batch axis (bootstrap replicates) is
    kept. Per-tool columns have the tool axis last."""
    out: dict[str, np.ndarray] = {}
    n = sums["n"]
    for metric, col in _MEAN_COLUMNS.items():
        if col in sums:
            out[metric] = _div(sums[col], n)
    p, r, f = _prf(sums["node_tp"], sums["node_fp"], sums["node_fn"])
    out["node_micro_precision"], out["node_micro_recall"], out["node_micro_f1"] = p, r, f
    tp, fp, fn = sums["tool_tp"], sums["tool_fp"], sums["tool_fn"]
    present = (tp + fp + fn) > 0
    tp_, tr_, tf_ = _prf(tp, fp, fn)
    k = present.sum(axis=-1)
    for name, per in (("precision", tp_), ("recall", tr_), ("f1", tf_)):
        out[f"node_macro_{name}"] = _div(np.where(present, per, 0.0).sum(axis=-1), k)
    p, r, f = _prf(sums["link_tp"], sums["link_fp"], sums["link_fn"])
    out["link_precision"], out["link_recall"], out["link_f1"] = p, r, f
    out["argument_name_f1"] = _prf(sums["arg_name_tp"], sums["arg_name_fp"], sums["arg_name_fn"])[2]
    out["argument_value_f1"] = _prf(sums["arg_value_tp"], sums["arg_value_fp"], sums["arg_value_fn"])[2]
    out["edge_set_accuracy"] = _div(sums["edge_set_match"], sums["edge_defined"])
    return {k: out[k] for k in HEADLINE if k in out}


def per_tool_from_sums(sums: Mapping[str, np.ndarray], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{tool: {precision, recall, f1-score, support}}`` for tools that occur in gold or prediction."""
    tp, fp, fn = sums["tool_tp"], sums["tool_fp"], sums["tool_fn"]
    p, r, f = _prf(tp, fp, fn)
    out: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(names):
        if tp[i] + fp[i] + fn[i] > 0:
            out[name] = {
                "precision": float(p[i]),
                "recall": float(r[i]),
                "f1-score": float(f[i]),
                "support": int(tp[i] + fn[i]),
            }
    return out


def split_groups(splits: Sequence[str], n_tools: Sequence[str], mode: str) -> list[tuple[str, str]]:
    """The ``(split, n_tools)`` groups: ``add`` = each split overall plus overall per tool count; ``mul`` =
    the cross product. Order and de-duplication as in the reference."""
    groups: list[tuple[str, str]] = []
    if mode == "mul":
        pairs = [(s, n) for s in splits for n in n_tools]
    elif mode == "add":
        pairs = [(s, "overall") for s in splits] + [("overall", n) for n in n_tools]
    else:
        raise ValueError(f"mode must be 'add' or 'mul', not {mode!r}")
    for pair in pairs:
        if pair not in groups:
            groups.append(pair)
    return groups


def group_mask(splits: np.ndarray, n_tools: np.ndarray, split: str, n: str) -> np.ndarray:
    """Boolean row mask of one group over per-sample split names and tool counts."""
    mask = np.ones(len(splits), dtype=bool)
    if split != "overall":
        mask &= splits == split
    if n != "overall":
        mask &= n_tools == int(n)
    return mask


def to_jsonable(value: Any) -> Any:
    """NaN -> None, numpy scalars -> Python numbers (for JSON output)."""
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return None if np.isnan(v) else v
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    return value


__all__ = [
    "ArgPair",
    "HEADLINE",
    "N_TOOLS",
    "NormalGraph",
    "ParseStatus",
    "ParsedPrediction",
    "SPLITS",
    "SampleScore",
    "content_type",
    "group_mask",
    "metrics_from_sums",
    "normalise_graph",
    "parse_strict",
    "per_tool_from_sums",
    "sample_table",
    "score_normalised",
    "score_sample",
    "split_groups",
    "to_jsonable",
]
