"""Error taxonomy of predicted tool invocation graphs, after the TaskBench paper's error analysis.

Each prediction gets zero or more labels (:data:`CATEGORIES`):

- ``missing_prediction``: no prediction for the gold id;
- ``call_failure``: the model call failed for good (a failure record: refused connections, retries spent), so
  there is no answer to read;
- ``parse_failure``: a prediction exists but could not be read as a task graph;
- ``missing_tool``: a gold tool (counted with multiplicity) is absent from the prediction;
- ``extra_tool``: the prediction has a tool gold does not have (unnecessary or hallucinated);
- ``hallucinated_tool``: a predicted tool name is neither in the tool library nor in gold (also
  ``extra_tool``);
- ``dependency_error``: among the tools that gold and prediction share, the links differ (a wrong or a
  missing link). Links to a tool only one side has are the missing/extra tool's fault, not a dependency
  error;
- ``parameter_error``: a shared tool is called with different arguments. A gold argument that refers to the
  output of a tool the prediction lacks is excused (the missing tool is the error), and the prediction may
  put one argument of its own in each such excused slot.

Shared tools are matched by name, the k-th occurrence in gold with the k-th in the prediction. The rules
reproduce the paper's case study (its Table "Case Study of Prediction Errors").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable, Mapping, Sequence, Set

from ..schema import Sample, ToolLibrary
from ..schema.scores import PredictionErrors, TaxonomySummary
from .strict import NormalGraph, ParsedPrediction, name_counts, normalise_graph, same_graph

CATEGORIES = (
    "missing_prediction",
    "call_failure",
    "parse_failure",
    "missing_tool",
    "extra_tool",
    "hallucinated_tool",
    "dependency_error",
    "parameter_error",
)
"""Error labels, in report order."""


def _occurrences(names: Sequence[str]) -> list[tuple[str, int]]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        k = seen.get(name, 0)
        out.append((name, k))
        seen[name] = k + 1
    return out


def _parameter_errors(gold: NormalGraph, pred: NormalGraph, absent: Set[str]) -> list[str]:
    # arguments are (name, value, ref) tuples (ArgPair or plain)
    gnames = gold.names
    if gnames == pred.names:  # the k-th occurrence of a tool is at the same index on both sides
        pairs: Iterable[tuple[int, int | None]] = enumerate(range(len(gnames)))
    else:
        pred_pos = {occ: i for i, occ in enumerate(_occurrences(pred.names))}
        pairs = ((gi, pred_pos.get(occ)) for gi, occ in enumerate(_occurrences(gnames)))
    wrong = []
    for gi, pi in pairs:
        if pi is None:
            continue
        g_all, p_all = gold.arguments[gi], pred.arguments[pi]
        if g_all == p_all:
            continue  # the same arguments (excused ones included): nothing wrong
        g_args = Counter((a[0], a[1]) for a in g_all if a[2] not in absent)
        excused = sum(1 for a in g_all if a[2] is not None and a[2] in absent)
        p_args = Counter((a[0], a[1]) for a in p_all)
        if (g_args - p_args) or sum((p_args - g_args).values()) > excused:
            wrong.append(gnames[gi])
    return wrong


def _surplus(a: Mapping[str, int], b: Mapping[str, int]) -> list[str]:
    """Sorted multiset difference a - b of two name counts."""
    out: list[str] = []
    for name, k in a.items():
        d = k - b.get(name, 0)
        if d > 0:
            out.extend([name] * d)
    out.sort()
    return out


def classify(
    gold: Sample, parsed: ParsedPrediction, library: ToolLibrary, dependency: str
) -> PredictionErrors:
    """The error labels of one prediction against its gold sample (pure)."""
    if parsed.status != "ok":
        return classify_normalised(gold.id, parsed, None, None, library)
    g = normalise_graph(gold, library, dependency)
    p = normalise_graph(parsed.graph, library, dependency)
    return classify_normalised(gold.id, parsed, g, p, library)


def classify_normalised(
    sample_id: str, parsed: ParsedPrediction, g: NormalGraph | None, p: NormalGraph | None, library: ToolLibrary
) -> PredictionErrors:
    """:func:`classify` on graphs already normalised (``g``/``p`` may be None unless the status is ok)."""
    return classify_graphs(sample_id, parsed.status, parsed.error, g, p, library)


def classify_graphs(
    sample_id: str, status: str, detail: str | None, g: NormalGraph | None, p: NormalGraph | None,
    in_library: Container[str],
) -> PredictionErrors:
    """:func:`classify_normalised` from a parse status and message; ``in_library``: the library (or a set of
    its tool names)."""
    if status == "missing":
        return PredictionErrors(id=sample_id, labels=["missing_prediction"], detail=detail)
    if status == "call_failed":
        return PredictionErrors(id=sample_id, labels=["call_failure"], detail=detail)
    if status == "parse_error" or g is None or p is None:
        return PredictionErrors(id=sample_id, labels=["parse_failure"], detail=detail)
    if same_graph(g, p):
        return PredictionErrors(id=sample_id)  # identical graphs: nothing to find
    return classify_counts(sample_id, g, p, name_counts(g.names), name_counts(p.names), in_library)


def classify_counts(
    sample_id: str, g: NormalGraph, p: NormalGraph, gn: Mapping[str, int], pn: Mapping[str, int],
    in_library: Container[str],
) -> PredictionErrors:
    """The labels of a parsed prediction ``p`` that differs from gold ``g``, given their tool name counts."""
    missing_tools = _surplus(gn, pn)
    extra_tools = _surplus(pn, gn)
    hallucinated = [n for n in p.names if n not in in_library and n not in gn]
    shared = gn.keys() & pn.keys()
    if g.links or p.links:
        g_links = {lk for lk in g.links if lk[0] in shared and lk[1] in shared}
        p_links = {lk for lk in p.links if lk[0] in shared and lk[1] in shared}
        wrong_links = sorted(p_links - g_links)
        missing_links = sorted(g_links - p_links)
    else:
        wrong_links, missing_links = [], []
    parameter_tools = _parameter_errors(g, p, gn.keys() - pn.keys())
    flags = {
        "missing_tool": missing_tools,
        "extra_tool": extra_tools,
        "hallucinated_tool": hallucinated,
        "dependency_error": wrong_links or missing_links,
        "parameter_error": parameter_tools,
    }
    return PredictionErrors(
        id=sample_id,
        labels=[c for c in CATEGORIES if flags.get(c)],
        missing_tools=missing_tools,
        extra_tools=extra_tools,
        hallucinated_tools=hallucinated,
        wrong_links=wrong_links,
        missing_links=missing_links,
        parameter_tools=parameter_tools,
    )


def summarize(errors: Iterable[PredictionErrors]) -> TaxonomySummary:
    """Counts per category."""
    errors = list(errors)
    counts = dict.fromkeys(CATEGORIES, 0)
    for e in errors:
        for label in e.labels:
            counts[label] += 1
    return TaxonomySummary(
        total=len(errors), correct=sum(1 for e in errors if not e.labels), counts=counts
    )


__all__ = [
    "CATEGORIES",
    "PredictionErrors",
    "TaxonomySummary",
    "classify",
    "classify_counts",
    "classify_graphs",
    "classify_normalised",
    "summarize",
]
