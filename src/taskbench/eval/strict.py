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
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import ValidationError
from rapidfuzz.distance import Indel

from ..errors import InputError
from ..predict.parse import TRUNCATED
from ..schema import NODE_REF, Sample, TaskArgument, TaskGraph, ToolLibrary
from .groups import ALL_N_TOOLS, ALL_SPLITS, make_groups

ParseStatus = Literal["ok", "missing", "parse_error"]

SPLITS = ALL_SPLITS
N_TOOLS = ALL_N_TOOLS

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

    ``missing``: no record for the id. ``parse_error``: no ``result`` object, no ``task_nodes`` list, a
    result that does not fit :class:`TaskGraph` (e.g. a node without a string ``task``), or an answer that was
    cut off by the token limit (``finish_reason: "length"``; whatever was repaired from it is not scored).
    """
    if record is None:
        return ParsedPrediction(sample_id, "missing", TaskGraph(), "no prediction for this id")
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


class ArgPair(NamedTuple):
    """One argument as compared: ``name`` and ``value``; ``ref`` is the referenced tool for ``<node-j>``.

    (A tuple: the fast path below builds plain ``(name, value, ref)`` tuples, which compare equal.)"""

    name: str
    value: str
    ref: str | None = None


@dataclass(slots=True)
class NormalGraph:
    """A task graph reduced to what the metrics compare (``arguments[i]``: ``(name, value, ref)`` tuples)."""

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


# ------------------------------------------------------------------------- fast path on raw JSON records
#
# The functions below give exactly ``normalise_graph(TaskGraph.model_validate(result), ...)`` for records in
# the shapes real data has, without building pydantic models (which costs more than all the scoring). They
# accept a record only when every field they read has a type for which the model's validation is known to
# succeed and to keep the value as it is; anything else returns None and the caller takes the model path
# (which then either accepts the record or reports the validation error). tests/test_eval_fast.py checks the
# equality on the parity fixtures, the benchmark's perturbations and hand-made odd cases.

_STEP_KEYS = ("task", "step", "description", "step_name", "id")


def _steps_text(value: Any) -> str | None:
    """The task steps joined by newlines, as :class:`TaskGraph`'s steps validator reads them; None = not plain."""
    if value is None:
        return ""
    if type(value) is str:
        return value
    if type(value) is not list:
        return None
    try:
        return "\n".join(value)
    except TypeError:
        pass
    out = []
    for step in value:
        if type(step) is str:
            out.append(step)
        elif type(step) is dict:
            for key in _STEP_KEYS:
                v = step.get(key)
                if isinstance(v, str):
                    out.append(v)
                    break
            else:
                out.append(json.dumps(step, ensure_ascii=False))
        else:
            out.append(json.dumps(step, ensure_ascii=False))
    return "\n".join(out)


def _plain_links(links: Any) -> list[tuple[str, str]] | None:
    """``task_links`` as (source, target) pairs when every link is ``{"source": str, "target": str, ...}``."""
    if type(links) is not list:
        return None
    out = []
    for lk in links:
        if type(lk) is not dict:
            return None
        src, tgt = lk.get("source"), lk.get("target")
        if type(src) is not str or type(tgt) is not str:
            return None
        out.append((src, tgt))
    return out


def _literal(text: str, cache: dict[str, tuple[str, str, None]] | None = None) -> tuple[str, str, None]:
    """A literal resource argument: (content type, text)."""
    if "." not in text:
        return ("text", text, None)
    if cache is None:
        return (content_type(text), text, None)
    pair = cache.get(text)
    if pair is None:
        pair = cache[text] = (content_type(text), text, None)
    return pair


def _other_argument(a: Any, i: int, names: list[str], resource: bool, output_type: Mapping[str, str],
                    links: list[tuple[str, str]], seen: set[tuple[str, str]]) -> tuple[Any, ...] | None | bool:
    """A non-string argument (see :func:`normalise_record`): its (name, value, ref), None to skip it, False
    when it is not plain. Adds the links of a named argument's ``<node-j>`` value."""
    ta = type(a)
    if ta is dict:
        name = a.get("name")
        if type(name) is str and "value" in a:  # a TaskArgument: (name, value), no reference
            value = a["value"]
            if resource and type(value) is str and "<node-" in value:
                n = len(names)
                for m in NODE_REF.findall(value):
                    j = int(m)
                    if j != i and j < n:
                        key = (names[j], names[i])
                        if key not in seen:
                            seen.add(key)
                            links.append(key)
            return (name, _as_text(value), None)
        if not a:
            return ("text" if resource else "", "", None)
        key0, value0 = next(iter(a.items()))
        if not resource:
            return (str(key0), _as_text(value0), None)
        text = _as_text(value0)
    elif ta is list or ta is int or ta is float or ta is bool or a is None:
        text = _as_text(a)
        if not resource:
            return ("", text, None)
    else:
        return False
    if "<node-" in text:  # the first reference only; these arguments make no links
        m1 = NODE_REF.search(text)
        if m1 is not None:
            j = int(m1.group(1))
            if j == i:
                return None
            if j < len(names):
                src = names[j]
                return (output_type.get(src, "other"), src, src)
    return _literal(text)


def normalise_record(
    result: Mapping[str, Any],
    resource: bool,
    output_type: Mapping[str, str],
    cache: dict[str, tuple[str, str, None]] | None = None,
) -> NormalGraph | None:
    """:func:`normalise_graph` of ``TaskGraph.model_validate(result)`` straight from the raw dict, or None
    when the record is not in a plain shape (then use the model path). ``output_type``: tool name -> first
    output type for library tools (others count as ``other``); ``cache``: a dict reused across calls for
    literal arguments."""
    nodes = result.get("task_nodes", [])
    if type(nodes) is not list:
        return None
    raw_links = result.get("task_links")
    if not raw_links:
        if raw_links is None:
            if "task_links" in result:
                return None  # an explicit null is not a list
        elif type(raw_links) is not list:
            return None  # e.g. "" or {}: the model rejects them
        links: list[tuple[str, str]] = []
    else:
        links = _plain_links(raw_links)  # validated in both kinds (the model rejects bad links either way)
        if links is None:
            return None
    raw_steps = result.get("task_steps")
    steps: str | None
    if type(raw_steps) is list:
        try:
            steps = "\n".join(raw_steps)  # the common case: a list of strings
        except TypeError:
            steps = _steps_text(raw_steps)
    else:
        steps = _steps_text(raw_steps)
        if steps is None:
            return None
    names: list[str] = []
    raw_args: list[list[Any]] = []
    for node in nodes:
        if type(node) is not dict:
            return None
        task = node.get("task")
        if type(task) is not str:
            return None
        args = node.get("arguments", [])
        if args is None:
            args = []
        elif type(args) is str:
            args = [args]
        elif type(args) is not list:
            return None
        names.append(task)
        raw_args.append(args)
    n = len(names)
    arguments: list[list[Any]] = []
    seen: set[tuple[str, str]] = set()
    if resource:
        links = []
        get_type = output_type.get
        for i, args in enumerate(raw_args):
            pairs: list[Any] = []
            for a in args:
                if type(a) is str:
                    if "<node-" in a:
                        refs = NODE_REF.findall(a)
                        if refs:
                            for m in refs:
                                j = int(m)
                                if j != i and j < n:
                                    key = (names[j], names[i])
                                    if key not in seen:
                                        seen.add(key)
                                        links.append(key)
                            j = int(refs[0])
                            if j == i:
                                continue  # a self-reference carries nothing
                            if j < n:
                                src = names[j]
                                pairs.append((get_type(src, "other"), src, src))
                                continue
                    if "." not in a:
                        pairs.append(("text", a, None))
                    else:
                        pairs.append(_literal(a, cache))
                    continue
                pair = _other_argument(a, i, names, True, output_type, links, seen)
                if pair is False:
                    return None
                if pair is not None:
                    pairs.append(pair)
            arguments.append(pairs)
    else:
        for i, args in enumerate(raw_args):
            pairs = []
            for a in args:
                if type(a) is str:
                    pairs.append(("", a, None))
                    continue
                pair = _other_argument(a, i, names, False, output_type, links, seen)
                if pair is False:
                    return None
                pairs.append(pair)
            arguments.append(pairs)
    return NormalGraph(names, links, arguments, steps)


# --------------------------------------------------------------------------------------------- scoring


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


def identical_counts(g: NormalGraph, in_library: Container[str]) -> tuple[Any, ...]:
    """:func:`compare_graphs` of a graph with itself."""
    n_args = sum(map(len, g.arguments))
    n_links = len(set(g.links))
    tool_counts = {name: (k, 0, 0) for name, k in name_counts(g.names).items() if name in in_library}
    return ((len(g.names), 0, 0), (n_links, 0, 0), (n_args, 0, 0), (n_args, 0, 0), 0.0, True, n_links > 0, True,
            True, tool_counts, [])


def compare_counts(
    g: NormalGraph, p: NormalGraph, gc: Mapping[str, int], pc: Mapping[str, int], in_library: Container[str]
) -> tuple[Any, ...]:
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
) -> tuple[Any, ...]:
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
          s.status == "parse_error", s.status == "missing") for s in scores],
        dtype=float,
    ).reshape(n, 7)
    for j, key in enumerate(("ned", "node_set_match", "edge_defined", "edge_set_match", "graph_match",
                             "parse_failure", "missing")):
        cols[key] = flags[:, j].copy()
    cols["edge_set_match"] = cols["edge_set_match"] * cols["edge_defined"]
    for key, values_ in (extra or {}).items():
        cols[key] = np.asarray(values_, dtype=float)
    return cols


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


def output_types(library: ToolLibrary) -> dict[str, str]:
    """Tool name -> the type a ``<node-j>`` reference to it stands for (its first output type)."""
    return {t.id: t.first_output_type() for t in library.tools}


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


# ----------------------------------------------------------------------------------------- aggregation


def _div(num: np.ndarray, den: np.ndarray, empty: float = np.nan) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.full(np.broadcast_shapes(num.shape, den.shape), empty)
    np.divide(num, den, out=out, where=den > 0)
    return out


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
    """The ``(split, n_tools)`` groups in the reference's order (see :func:`taskbench.eval.groups.make_groups`)."""
    return [(g.split, g.n_tools) for g in make_groups(splits, n_tools, mode)]


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
