"""Scoring one sample: counts of a gold normalised graph against a predicted one.

:func:`compare_graphs` compares two :class:`~taskbench.eval.normalise.NormalGraph` objects and returns counts (true
/ false positives, false negatives) and per-sample scores; :func:`score_sample` does it for a gold sample and a
parsed prediction, and :func:`sample_table` stacks the :class:`SampleScore` rows into the column arrays that
:mod:`taskbench.eval.aggregate` sums per group. Nodes and arguments are multisets per sample (a tool predicted
twice when gold has it once is one false positive), links are sets.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rapidfuzz.distance import Indel

from ..schema import Sample, ToolLibrary
from .normalise import NormalGraph, normalise_graph
from .parsed import ParsedPrediction, ParseStatus

Triple = tuple[int, int, int]
"""(true positives, false positives, false negatives)."""

Counts = tuple[Triple, Triple, Triple, Triple, float, bool, bool, bool, bool, dict[str, Triple], list[str]]
"""What :func:`compare_graphs` returns: the :class:`SampleScore` fields from ``node`` to ``hallucinated``."""


@dataclass(slots=True)
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


def _multiset_tp(gold: Sequence[Any], pred: Sequence[Any]) -> int:
    """Size of the multiset intersection of two sequences."""
    if not gold or not pred:
        return 0
    counts: dict[Any, int] = {}
    for x in gold:
        counts[x] = counts.get(x, 0) + 1
    tp = 0
    for x in pred:
        k = counts.get(x, 0)
        if k:
            counts[x] = k - 1
            tp += 1
    return tp


def _prf_counts(gold: Sequence[Any], pred: Sequence[Any]) -> tuple[int, int, int]:
    """(tp, fp, fn) of two multisets given as sequences."""
    tp = _multiset_tp(gold, pred)
    return tp, len(pred) - tp, len(gold) - tp


def _ned(gold: Sequence[str], pred: Sequence[str]) -> float:
    if not gold and not pred:
        return 0.0
    if gold == pred:
        return 0.0
    ids: dict[str, int] = {}
    g = [ids.setdefault(n, len(ids)) for n in gold]
    p = [ids.setdefault(n, len(ids)) for n in pred]
    return float(Indel.normalized_distance(g, p))


def name_counts(names: Sequence[str]) -> dict[str, int]:
    """How often each tool name occurs."""
    out: dict[str, int] = {}
    for n in names:
        out[n] = out.get(n, 0) + 1
    return out


def same_graph(g: NormalGraph, p: NormalGraph) -> bool:
    """True when two normalised graphs have the same tools, links and arguments (steps aside)."""
    return g.names == p.names and g.links == p.links and g.arguments == p.arguments


def identical_counts(g: NormalGraph, in_library: Container[str]) -> Counts:
    """:func:`compare_graphs` of a graph with itself."""
    n_args = sum(map(len, g.arguments))
    n_links = len(set(g.links))
    tool_counts = {name: (k, 0, 0) for name, k in name_counts(g.names).items() if name in in_library}
    return ((len(g.names), 0, 0), (n_links, 0, 0), (n_args, 0, 0), (n_args, 0, 0), 0.0, True, n_links > 0, True,
            True, tool_counts, [])


def compare_counts(
    g: NormalGraph, p: NormalGraph, gc: Mapping[str, int], pc: Mapping[str, int], in_library: Container[str]
) -> Counts:
    """:func:`compare_graphs` for two graphs that differ, given their tool name counts ``gc``/``pc``."""
    gnames, pnames = g.names, p.names
    n_tp = 0
    tool_counts: dict[str, tuple[int, int, int]] = {}
    for name, gk in gc.items():
        pk = pc.get(name, 0)
        tp = gk if gk < pk else pk
        n_tp += tp
        if name in in_library:
            tool_counts[name] = (tp, pk - tp, gk - tp)
    for name, pk in pc.items():
        if name not in gc and name in in_library:
            tool_counts[name] = (0, pk, 0)
    node_match = n_tp == len(gnames) == len(pnames)
    gl, pl = set(g.links), set(p.links)
    l_tp = len(gl & pl)
    edge_match = l_tp == len(gl) == len(pl)
    # arguments: (tool, name) and (tool, name, value) multisets
    names_left: dict[tuple[str, str], int] = {}
    values_left: dict[tuple[str, str, str], int] = {}
    n_gold = 0
    for t, args in zip(gnames, g.arguments, strict=True):
        for a in args:
            k2 = (t, a[0])
            names_left[k2] = names_left.get(k2, 0) + 1
            k3 = (t, a[0], a[1])
            values_left[k3] = values_left.get(k3, 0) + 1
        n_gold += len(args)
    tp_name = tp_value = n_pred = 0
    for t, args in zip(pnames, p.arguments, strict=True):
        n_pred += len(args)
        for a in args:
            k2 = (t, a[0])
            c = names_left.get(k2)
            if c:
                names_left[k2] = c - 1
                tp_name += 1
            k3 = (t, a[0], a[1])
            c = values_left.get(k3)
            if c:
                values_left[k3] = c - 1
                tp_value += 1
    return (
        (n_tp, len(pnames) - n_tp, len(gnames) - n_tp),
        (l_tp, len(pl) - l_tp, len(gl) - l_tp),
        (tp_name, n_pred - tp_name, n_gold - tp_name),
        (tp_value, n_pred - tp_value, n_gold - tp_value),
        _ned(gnames, pnames),
        node_match,
        bool(gl),
        edge_match,
        node_match and edge_match,
        tool_counts,
        [n for n in pnames if n not in in_library and n not in gc],
    )


def compare_graphs(
    g: NormalGraph, p: NormalGraph, in_library: Container[str]
) -> Counts:
    """Every per-sample count of gold ``g`` vs prediction ``p`` (normalised graphs): ``(node, link, arg_name,
    arg_value, ned, node_set_match, edge_defined, edge_set_match, graph_match, tool_counts, hallucinated)``.
    Nodes and arguments are multisets, links sets; ``tool_counts`` covers library tools only."""
    if same_graph(g, p):
        return identical_counts(g, in_library)
    return compare_counts(g, p, name_counts(g.names), name_counts(p.names), in_library)


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
    return SampleScore(gold.id, gold.type, len(gold.task_nodes), parsed.status, *compare_graphs(g, p, library),
                       error=parsed.error)


def sample_table(
    scores: Sequence[SampleScore], library: ToolLibrary, extra: Mapping[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """Per-sample columns (float arrays, one row per sample) for :func:`metrics_from_sums`.

    ``extra`` adds per-sample score columns such as ``step_rouge1`` or ``step_bertscore_f1``.
    """
    n = len(scores)
    cols: dict[str, np.ndarray] = {"n": np.ones(n)}
    counts = np.array([s.node + s.link + s.arg_name + s.arg_value for s in scores], dtype=float).reshape(n, 12)
    for k, key in enumerate(("node", "link", "arg_name", "arg_value")):
        for j, part in enumerate(("tp", "fp", "fn")):
            cols[f"{key}_{part}"] = counts[:, 3 * k + j].copy()
    index = {name: i for i, name in enumerate(library.names)}
    rows: list[int] = []
    tools: list[int] = []
    values: list[tuple[int, int, int]] = []
    for r, s in enumerate(scores):
        for name, c in s.tool_counts.items():
            rows.append(r)
            tools.append(index[name])
            values.append(c)
    for j, part in enumerate(("tp", "fp", "fn")):
        block = np.zeros((n, len(index)))
        if rows:
            block[rows, tools] = [v[j] for v in values]
        cols[f"tool_{part}"] = block
    flags = np.array(
        [(s.ned, s.node_set_match, s.edge_defined, s.edge_set_match, s.graph_match,
          s.status == "parse_error", s.status == "missing", s.status == "call_failed") for s in scores],
        dtype=float,
    ).reshape(n, 8)
    for j, key in enumerate(("ned", "node_set_match", "edge_defined", "edge_set_match", "graph_match",
                             "parse_failure", "missing", "call_failure")):
        cols[key] = flags[:, j].copy()
    cols["edge_set_match"] = cols["edge_set_match"] * cols["edge_defined"]
    for key, values_ in (extra or {}).items():
        cols[key] = np.asarray(values_, dtype=float)
    return cols


__all__ = [
    "SampleScore",
    "compare_counts",
    "compare_graphs",
    "identical_counts",
    "name_counts",
    "same_graph",
    "sample_table",
    "score_normalised",
    "score_sample",
]
