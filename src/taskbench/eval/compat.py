"""Reference-compatible scoring: the numbers the TaskBench reference ``evaluate.py`` writes.

Compat mode reproduces the reference evaluator's metrics JSON (same group keys, same metric keys in the same
order, same values) including its quirks; docs/evaluation-compat.md lists them. The reference re-reads and
re-scores every sample for every group; here each sample is parsed and scored ONCE into a
:class:`CompatSampleScore` (counts per tool label, true/false positive and false negative counts for
arguments and links, edit similarity, step texts), and groups are aggregated from those records with numpy.
Every count the reference gets from scikit-learn on its flattened label arrays is a sum of these per-sample
counts, so the aggregates are identical.

The per-sample parser follows the reference step by step, in the same order, with the same Python
operations where an exception can occur, so a sample the reference drops ("Parsing Error: <exception>,
Ignore #id <id>") is dropped here with the same exception text, and the support counters (which the
reference increments at different points of its loop) come out the same.

One behaviour is deliberately not reproduced: in resource domains the reference repeats the last
argument it produced when an argument is neither text, dict nor list; that "last" value is a variable
that survives from one sample to the next, in the iteration order of a Python set of ids (which changes
from run to run). We repeat the last value of the same sample only, and drop the sample (as the reference
does when there is no previous value at all) when there is none yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from rapidfuzz.distance import Indel

from ..errors import ConfigError, InputError
from ..schema import ToolLibrary
from .groups import Group, group_mask, make_groups
from .prf import binary_prf, macro_prf, micro_prf, per_label_prf
from .rouge import ROUGE_KEYS, rouge_per_sample
from .runtime import gc_paused

__all__ = [
    "COMPAT_METRICS",
    "BertScoreFn",
    "CompatResult",
    "CompatSampleScore",
    "evaluate_compat",
    "expand_compat_metrics",
    "get_content_type",
    "score_samples_compat",
]

COMPAT_METRICS: tuple[str, ...] = ("f1", "ed", "link", "argument", "rouge", "bertscore")
"""Metric families the reference knows; ``all`` selects every one."""

BertScoreFn = Callable[[list[str], list[str]], Mapping[str, Sequence[float] | NDArray[Any]]]
"""``(predictions, references) -> {"precision": [...], "recall": [...], "f1": [...]}`` per sample."""

_CONTENT_TYPES = (
    ("image", (".jpg", ".png", ".jpeg", ".gif", ".bmp", ".tiff", ".svg", ".ico")),
    ("audio", (".mp3", ".wav", ".wma", ".ogg", ".aac", ".flac", ".aiff", ".au")),
    ("video", (".mp4", ".avi", ".mov", ".flv", ".wmv", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg")),
)
_STEP_KEYS = ("task", "step", "id", "step_name")
# Python 3.11+ wording of the error the reference hits when it repeats a value it never had.
_UNBOUND = "cannot access local variable 'new_argument' where it is not associated with a value"
_NODE_REF = "<node-"


def get_content_type(content: str) -> str:
    """The resource type the reference guesses from a text argument: image / audio / video by a file
    extension appearing anywhere in it (after stripping single quotes), else text."""
    content = content.strip("'")
    for kind, exts in _CONTENT_TYPES:
        for ext in exts:
            if ext in content:
                return kind
    return "text"


def expand_compat_metrics(metrics: Iterable[str] | str) -> list[str]:
    """Metric families with ``all`` expanded to every family, as the reference does (cot prompting).

    A comma-separated string is accepted; an unknown name is a :class:`ConfigError`.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    names = [m.strip() for item in metrics for m in str(item).split(",") if m.strip()]
    if "all" in names:
        return list(COMPAT_METRICS)
    for name in names:
        if name not in COMPAT_METRICS:
            raise ConfigError(f"unknown metric {name!r}: use 'all' or some of {', '.join(COMPAT_METRICS)}")
    return names


class _Dropped(Exception):
    """A sample the reference would drop; ``str()`` is the reference's exception text."""


def _hashable(value: Any) -> bool:
    """True for an id that can key a dict (the reference keys its predictions by id)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


@dataclass(slots=True)
class CompatSampleScore:
    """Everything the reference's aggregates need from one sample, computed once.

    ``step_ok``: counted in ``step_supports`` (its step texts are in ``pred_steps``/``gold_steps``);
    ``graph_ok``: counted in ``argument_supports``; ``node_ok``: counted in ``node_supports`` and
    ``link_supports`` and scored for nodes, arguments, links and edit distance. ``error`` is the exception
    text of a dropped sample (``None`` otherwise).
    """

    index: int
    """Position of the gold record in the gold list."""
    id: Any
    """Sample id (as it appears in the gold record)."""
    split: Any
    """The gold record's ``type`` (single / chain / dag)."""
    n_tools: int
    """Number of gold task nodes."""
    step_ok: bool = False
    graph_ok: bool = False
    node_ok: bool = False
    error: str | None = None
    pred_steps: str = ""
    """The prediction's steps as one text (reference joining rules)."""
    gold_steps: str = ""
    """The gold steps joined with newlines."""
    node_tp: list[int] = field(default_factory=list)
    """Library indices (0-based) of tools in both gold and prediction."""
    node_fp: list[int] = field(default_factory=list)
    """Library indices of tools only in the prediction."""
    node_fn: list[int] = field(default_factory=list)
    """Library indices of tools only in gold."""
    node_outside: int = 0
    """Distinct tool names (gold or predicted) that are not in the library."""
    arg_name: tuple[int, int, int] = (0, 0, 0)
    """(tp, fp, fn) over the distinct ``task-name`` strings, in the reference's (swapped) orientation."""
    arg_value: tuple[int, int, int] = (0, 0, 0)
    """(tp, fp, fn) over the distinct ``task-name-value`` strings (same orientation)."""
    link: tuple[int, int, int] = (0, 0, 0)
    """(tp, fp, fn) over the distinct (source, target) links."""
    edit_similarity: float = 0.0
    """Normalised Indel similarity of the predicted and gold tool-index sequences."""


@dataclass
class CompatResult:
    """Output of :func:`evaluate_compat`."""

    metrics: dict[str, dict[str, Any]]
    """``{group key: metrics}``: the dict the reference writes, same keys in the same order."""
    log: list[str]
    """The reference's log messages (without timestamps and tracebacks), including the
    ``Parsing Error: <exception>, Ignore #id <id>`` lines of dropped samples."""
    samples: list[CompatSampleScore]
    """The per-sample scores the metrics were aggregated from."""

    @property
    def ignored_ids(self) -> set[Any]:
        """Ids of the samples dropped because their prediction (or gold record) could not be processed."""
        return {s.id for s in self.samples if s.error is not None}


# --------------------------------------------------------------------------------------------- parsing


def _join_pred_steps(steps: Any) -> str:
    """The reference's rule for turning predicted ``task_steps`` into one text."""
    try:
        first = steps[0]
        if isinstance(first, str):
            return "\n".join(steps)
        for key in _STEP_KEYS:
            if key in first:
                return "\n".join([step[key] for step in steps])
        return "\n".join([step["description"] for step in steps])
    except Exception:
        return str(steps)


def _resource_arguments(
    nodes: list[Any],
    gold_side: bool,
    names: list[str],
    output_types: Mapping[str, str],
    links: list[tuple[Any, Any]],
    last: tuple[str, str] | None,
    arg_names: list[str],
    arg_values: list[str],
) -> tuple[str, str] | None:
    """Map each node's arguments to (name, value) as the reference does in resource domains, appending
    the ``task-name`` and ``task-name-value`` strings of node ``i`` (task = ``names[i]``) and the links.

    ``last`` is the value an argument that cannot be mapped repeats (None: none yet, and the sample is
    dropped); the updated one is returned.
    """
    for inx, node in enumerate(nodes):
        task = names[inx]
        for argument in node["arguments"] if gold_side else node.get("arguments", []):
            if type(argument) is str and _NODE_REF not in argument:  # plain text: the common case
                last = (get_content_type(argument) if "." in argument else "text", argument)
            elif (
                type(argument) is str
                and len(argument) < 40
                and argument.startswith(_NODE_REF)
                and argument.find(">") == len(argument) - 1
                and argument[6:-1].isascii()
                and argument[6:-1].isdigit()
            ):  # exactly "<node-N>" (N short enough for int()): the general rule below gives N too
                ref = int(argument[6:-1])
                if ref == inx:
                    continue
                if ref < len(names):
                    source = names[ref]
                    links.append((source, node["task"]))
                    last = (output_types.get(source, "other"), source)
                elif last is None:  # out of range: the previous value is repeated, if any
                    raise _Dropped(_UNBOUND)
            else:
                try:
                    if isinstance(argument, dict):
                        argument = list(argument.values())[0]
                    if isinstance(argument, list):
                        argument = " ".join(argument)
                    if not isinstance(argument, str):
                        raise TypeError("not a text argument")
                    if _NODE_REF in argument:
                        start = argument.index(_NODE_REF) + len(_NODE_REF)
                        end = argument.index(">")
                        ref = int(argument[start:end])
                        if ref == inx:
                            continue  # a node referring to itself adds nothing
                        source = names[ref]
                        links.append((source, node["task"]))
                        last = (output_types.get(source, "other"), source)
                    else:
                        last = (get_content_type(argument), argument)
                except Exception:
                    pass  # the reference swallows the error and repeats the previous value
                if last is None:
                    raise _Dropped(_UNBOUND)
            name = f"{task}-{last[0]}"
            arg_names.append(name)
            arg_values.append(f"{name}-{last[1]}")
    return last


def _score_one(
    rec: CompatSampleScore,
    label: Mapping[str, Any],
    pred: Mapping[str, Any],
    *,
    want_steps: bool,
    resource: bool,
    tool_index: Mapping[str, int],
    edit_index: Mapping[str, int],
    output_types: Mapping[str, str],
) -> None:
    if want_steps:
        pred_step = pred["result"]["task_steps"]
        label_step = label["task_steps"]
        rec.pred_steps = _join_pred_steps(pred_step)
        rec.gold_steps = "\n".join(label_step)
        rec.step_ok = True

    label_nodes = label["task_nodes"]
    pred_nodes = pred["result"]["task_nodes"]
    label_names = [node["task"] for node in label_nodes]
    pred_names = [node["task"] for node in pred_nodes]

    # The reference fills its "label" argument lists from the prediction and vice versa; binary F1 is
    # symmetric, but the orientation is kept so precision/recall would come out as the reference's.
    as_gold_names: list[str] = []
    as_gold_values: list[str] = []
    as_pred_names: list[str] = []
    as_pred_values: list[str] = []
    if resource:
        pred_names = [name.replace("_", " ") for name in pred_names]
        label_names = [name.replace("_", " ") for name in label_names]
        label_links: list[tuple[Any, Any]] = []
        pred_links: list[tuple[Any, Any]] = []
        last = _resource_arguments(
            label_nodes, True, label_names, output_types, label_links, None, as_pred_names, as_pred_values
        )
        _resource_arguments(
            pred_nodes, False, pred_names, output_types, pred_links, last, as_gold_names, as_gold_values
        )
        raw_pred_links: Any = None
        raw_label_links: Any = None
    else:
        raw_pred_links = pred["result"]["task_links"]
        raw_label_links = label["task_links"]
        pred_args = [node.get("arguments", []) for node in pred_nodes]
        label_args = [node["arguments"] for node in label_nodes]
        for task, arguments in zip(pred_names, pred_args):  # noqa: B905 - zip truncation is the reference's
            for argument in arguments:
                as_gold_names.append(f"{task}-{argument['name']}")
                as_gold_values.append(f"{task}-{argument['name']}-{argument['value']}")
        for task, arguments in zip(label_names, label_args):  # noqa: B905
            for argument in arguments:
                as_pred_names.append(f"{task}-{argument['name']}")
                as_pred_values.append(f"{task}-{argument['name']}-{argument['value']}")
    rec.graph_ok = True

    for name in pred_names:
        if not isinstance(name, str):
            raise _Dropped(str(name))

    if not resource:
        # The reference turns links into tuples after its loop, where a bad link stops the whole run;
        # here such a sample is dropped instead.
        try:
            label_links = [(link["source"], link["target"]) for link in raw_label_links]
            pred_links = [(link["source"], link["target"]) for link in raw_pred_links]
            hash(tuple(label_links))
            hash(tuple(pred_links))
        except Exception as exc:
            rec.graph_ok = False
            raise _Dropped(f"{exc} (malformed task_links; the reference evaluator stops here)") from None

    # (tp, fp, fn) of the reference's binary average over the union of the two sides' distinct items
    sa, sb = set(as_gold_names), set(as_pred_names)
    tp = len(sa & sb)
    rec.arg_name = (tp, len(sb) - tp, len(sa) - tp)
    sa, sb = set(as_gold_values), set(as_pred_values)
    tp = len(sa & sb)
    rec.arg_value = (tp, len(sb) - tp, len(sa) - tp)
    la, lb = set(label_links), set(pred_links)
    tp = len(la & lb)
    rec.link = (tp, len(lb) - tp, len(la) - tp)

    gold_set, pred_set = set(label_names), set(pred_names)
    for name in gold_set | pred_set:
        idx = tool_index.get(name) if isinstance(name, str) else None
        if idx is None:
            rec.node_outside += 1  # a name outside the library counts neither way
            continue
        if name in gold_set:
            (rec.node_tp if name in pred_set else rec.node_fn).append(idx)
        else:
            rec.node_fp.append(idx)

    rec.edit_similarity = Indel.normalized_similarity(
        [edit_index.get(n, 0) for n in pred_names], [edit_index.get(n, 0) for n in label_names]
    )
    rec.node_ok = True


def score_samples_compat(
    gold_records: Sequence[Mapping[str, Any]],
    pred_records: Sequence[Mapping[str, Any]],
    library: ToolLibrary,
    *,
    metrics: Iterable[str] = ("all",),
    alignment_ids: set[Any] | None = None,
    dependency: str | None = None,
    problems: list[InputError] | None = None,
) -> list[CompatSampleScore]:
    """Score every gold record that has a prediction, once, as the reference would.

    Gold records outside ``alignment_ids`` (when given) or without a prediction are left out. Predictions
    with the same id: the last one counts. ``dependency`` defaults to the library's kind. Inputs the reference
    would crash on instead of scoring: a gold record without an ``id`` or a ``task_nodes`` list raises
    :class:`InputError` (with a ``problems`` list: is appended there and left out); an id that is a list or an
    object matches nothing (such a prediction is ignored, such a gold record is left out).
    """
    chosen = expand_compat_metrics(metrics)
    want_steps = "rouge" in chosen or "bertscore" in chosen
    resource = (dependency or library.dependency) == "resource"
    tool_index = {tool.id: i for i, tool in enumerate(library.tools)}
    edit_index: dict[str, int] = {tool.id: i + 1 for i, tool in enumerate(library.tools)}
    edit_index["<PAD>"] = -1
    output_types = {tool.id: tool.first_output_type() for tool in library.tools} if resource else {}

    preds: dict[Any, Mapping[str, Any]] = {}
    for p in pred_records:
        if not isinstance(p, Mapping) or "id" not in p or not _hashable(p["id"]):
            continue  # no id the reference could match (coverage warnings count these)
        preds[p["id"]] = p

    out: list[CompatSampleScore] = []
    for index, label in enumerate(gold_records):
        try:
            sid = label["id"]
            if not isinstance(label["task_nodes"], list):
                raise TypeError("task_nodes")
            n_nodes = len(label["task_nodes"])
            if not _hashable(sid):
                raise TypeError("id")
        except (KeyError, TypeError) as exc:
            what = str(exc).strip("'")
            err = InputError(
                f"gold record #{index + 1} has no usable {what!r}" if what else f"gold record #{index + 1} is not an object",
                hint="gold records need an 'id' (a string) and a 'task_nodes' list",
            )
            if problems is None:
                raise err from None
            problems.append(err)
            continue
        if alignment_ids is not None and sid not in alignment_ids:
            continue
        pred = preds.get(sid)
        if pred is None:
            continue
        # a record without 'type' only belongs to the 'overall' groups (the reference only reads it there)
        # (a 'type' that is not text equals no split name, as in the reference's comparison: overall groups only)
        split = label.get("type")
        rec = CompatSampleScore(index=index, id=sid, split=split if isinstance(split, str) else None, n_tools=n_nodes)
        try:
            _score_one(
                rec,
                label,
                pred,
                want_steps=want_steps,
                resource=resource,
                tool_index=tool_index,
                edit_index=edit_index,
                output_types=output_types,
            )
        except Exception as exc:
            rec.error = str(exc)
            rec.node_ok = False
            rec.node_tp, rec.node_fp, rec.node_fn = [], [], []
        out.append(rec)
    return out


# ----------------------------------------------------------------------------------------- aggregation


def _fmt_row(label: str, values: Sequence[float], support: float) -> str:
    return ("%30s" + " %12s" * 4) % (label, *("%.2f" % (v * 100) for v in values), support)


class _Table:
    """Per-sample arrays the groups are aggregated from."""

    def __init__(self, samples: list[CompatSampleScore], n_labels: int) -> None:
        self.n_labels = n_labels
        self.split = np.array([s.split for s in samples], dtype=object)
        self.n_tools = np.array([s.n_tools for s in samples], dtype=np.int64)
        self.step_ok = np.array([s.step_ok for s in samples], dtype=bool)
        self.graph_ok = np.array([s.graph_ok for s in samples], dtype=bool)
        self.node_ok = np.array([s.node_ok for s in samples], dtype=bool)
        self.arg_name = np.array([s.arg_name for s in samples], dtype=np.int64).reshape(-1, 3)
        self.arg_value = np.array([s.arg_value for s in samples], dtype=np.int64).reshape(-1, 3)
        self.link = np.array([s.link for s in samples], dtype=np.int64).reshape(-1, 3)
        self.outside = np.array([s.node_outside for s in samples], dtype=np.int64)
        self.edit = np.array([s.edit_similarity for s in samples], dtype=np.float64)
        self.nodes = {}
        for kind in ("node_tp", "node_fp", "node_fn"):
            rows = [i for i, s in enumerate(samples) for _ in getattr(s, kind)]
            cols = [c for s in samples for c in getattr(s, kind)]
            self.nodes[kind] = (np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64))

    def label_counts(self, kind: str, mask: NDArray[np.bool_]) -> NDArray[np.int64]:
        rows, cols = self.nodes[kind]
        return np.bincount(cols[mask[rows]], minlength=self.n_labels).astype(np.int64)


@gc_paused()
def evaluate_compat(
    gold_records: Sequence[Mapping[str, Any]],
    pred_records: Sequence[Mapping[str, Any]],
    library: ToolLibrary,
    *,
    splits: Iterable[str] | str = ("all",),
    n_tools: Iterable[str | int] | str = ("all",),
    mode: str = "add",
    metrics: Iterable[str] = ("all",),
    alignment_ids: set[Any] | None = None,
    bertscore: BertScoreFn | None = None,
    dependency: str | None = None,
    problems: list[InputError] | None = None,
) -> CompatResult:
    """The reference evaluator's metrics for raw gold records (``data.json`` lines) and raw predictions
    (``{"id", "result": {...}}``), scored once per sample and aggregated per group.

    ``bertscore``: a per-sample scorer, called once with all step texts; without it BERTScore keys are
    left out (a log line says so). ``dependency`` overrides the library's dependency kind. ``problems``: see
    :func:`score_samples_compat`.
    """
    chosen = expand_compat_metrics(metrics)
    groups: list[Group] = make_groups(splits, n_tools, mode)
    samples = score_samples_compat(
        gold_records,
        pred_records,
        library,
        metrics=chosen,
        alignment_ids=alignment_ids,
        dependency=dependency,
        problems=problems,
    )
    table = _Table(samples, len(library.tools))
    log: list[str] = []

    step_idx = np.flatnonzero(table.step_ok)
    rouge: dict[str, NDArray[np.float64]] = {}
    if "rouge" in chosen and step_idx.size:
        rouge = rouge_per_sample(
            [samples[i].pred_steps for i in step_idx], [samples[i].gold_steps for i in step_idx]
        )
    bert: dict[str, NDArray[np.float64]] = {}
    if "bertscore" in chosen:
        if bertscore is None:
            log.append("BERTScore skipped: no BERTScore scorer was given")
        elif step_idx.size:
            res = bertscore(
                [samples[i].pred_steps for i in step_idx], [samples[i].gold_steps for i in step_idx]
            )
            bert = {k: np.asarray(res[k], dtype=np.float64) for k in ("precision", "recall", "f1")}
    step_pos = np.full(len(samples), -1, dtype=np.int64)
    step_pos[step_idx] = np.arange(step_idx.size)

    ids = np.array([s.id for s in samples], dtype=object)
    indices = np.array([s.index for s in samples], dtype=np.int64)
    unique_ids = len(set(ids.tolist())) == len(samples)
    names = library.names
    out: dict[str, dict[str, Any]] = {}
    for group in groups:
        log.append("-" * 15)
        log.append(f"Tools Number: {group.n_tools}, Task Split: {group.split}")
        mask = group_mask(group, table.split, table.n_tools)
        if not unique_ids:
            mask = _last_per_id(mask, ids, indices)
        m: dict[str, Any] = {}
        out[group.key] = m
        for i in np.flatnonzero(mask & ~table.node_ok):
            log.append(f"Parsing Error: {samples[i].error}, Ignore #id {samples[i].id}")
        total = int(mask.sum())
        steps = mask & table.step_ok
        graphs = mask & table.graph_ok
        nodes = mask & table.node_ok
        n_steps, n_graphs, n_nodes = int(steps.sum()), int(graphs.sum()), int(nodes.sum())
        log += [
            f"Step Supports: {n_steps} / {total}",
            f"Node Support: {n_nodes} / {total}",
            f"Link Support: {n_nodes} / {total}",
            f"Argument Support: {n_graphs} / {total}",
        ]
        m["all_samples"] = total
        m["step_supports"] = n_steps
        m["node_supports"] = n_nodes
        m["link_supports"] = n_nodes
        m["argument_supports"] = n_graphs
        if n_graphs == 0 or n_nodes == 0:
            log.append("No supports, skip")
            continue
        pos = step_pos[steps]
        if rouge:
            for key in ROUGE_KEYS:
                value = float(np.mean(rouge[key][pos]))
                log.append(f"Step {key}: {value}")
                m[f"step_{key}"] = value
        if bert:
            for key in ("precision", "recall", "f1"):
                value = float(np.mean(bert[key][pos]))
                log.append(f"Step BERTScore {key}: {value}")
                m[f"step_bertscore_{key}"] = value
        if "f1" in chosen or "argument" in chosen:
            tp, fp, fn = (table.label_counts(k, nodes) for k in ("node_tp", "node_fp", "node_fn"))
            micro, macro = micro_prf(tp, fp, fn), macro_prf(tp, fp, fn)
            per = per_label_prf(tp, fp, fn)
            total_support: float = int(per.support.sum())
            if not tp.any() and not table.outside[nodes].any():
                # scikit-learn returns float supports when no flattened position agrees; the log shows it
                total_support = float(total_support)
            log += [
                f"Node Micro Precision [ No Matching ]: {micro.precision}",
                f"Node Micro Recall [ No Matching ]: {micro.recall}",
                f"Node Micro F1 [ No Matching ]: {micro.f1}",
                f"Node Macro Precision [ No Matching ]: {macro.precision}",
                f"Node Macro Recall [ No Matching ]: {macro.recall}",
                f"Node Macro F1 [ No Matching ]: {macro.f1}",
                "Node Detailed Report [ No Matching ]: ",
                ("%30s" + " %12s" * 4) % ("type", "precision", "recall", "f1-score", "support"),
            ]
            m["node_micro_precision_no_matching"] = micro.precision
            m["node_micro_recall_no_matching"] = micro.recall
            m["node_micro_f1_no_matching"] = micro.f1
            m["node_macro_precision_no_matching"] = macro.precision
            m["node_macro_recall_no_matching"] = macro.recall
            m["node_macro_f1_no_matching"] = macro.f1
            per_type: dict[str, dict[str, Any]] = {}
            m["node_per_type_no_matchcing"] = per_type
            for j, name in enumerate(names):
                p, r, f, s = (
                    float(per.precision[j]),
                    float(per.recall[j]),
                    float(per.f1[j]),
                    int(per.support[j]),
                )
                per_type[name] = {"precision": p, "recall": r, "f1-score": f, "support": s}
                log.append(_fmt_row(name, (p, r, f), s if isinstance(total_support, int) else float(s)))
            log += ["", _fmt_row("micro", micro, total_support), _fmt_row("macro", macro, total_support)]
            name_f1 = binary_prf(*table.arg_name[nodes].sum(axis=0).tolist()).f1
            value_f1 = binary_prf(*table.arg_value[nodes].sum(axis=0).tolist()).f1
            log.append(f"Argument Task-ArgName Binary F1: [ No Matching ]: {name_f1}")
            m["argument_task_argname_binary_f1_no_matching"] = name_f1
            log.append(f"Argument Task-ArgName-Value Binary F1 [ No Matching ]: {value_f1}")
            m["argument_task_argname_value_binary_f1_no_matching"] = value_f1
        if "ed" in chosen:
            # sequential float sum, as the reference adds up its per-sample ratios
            ed = 1 - sum(table.edit[nodes].tolist()) / n_nodes
            log.append(f"Edit Distance: {ed}")
            m["edit_distance"] = ed
        if "link" in chosen:
            link_f1 = binary_prf(*table.link[nodes].sum(axis=0).tolist()).f1
            log.append(f"Link Binary F1: {link_f1}")
            m["link_binary_f1"] = link_f1
    return CompatResult(metrics=out, log=log, samples=samples)


def _last_per_id(mask: NDArray[np.bool_], ids: NDArray[Any], indices: NDArray[np.int64]) -> NDArray[np.bool_]:
    """With duplicate gold ids, the reference keeps the last record (in file order) that is in the group."""
    keep: dict[Any, int] = {}
    for i in np.flatnonzero(mask):
        j = keep.get(ids[i])
        if j is None or indices[i] > indices[j]:
            keep[ids[i]] = int(i)
    out = np.zeros_like(mask)
    out[list(keep.values())] = True
    return out
