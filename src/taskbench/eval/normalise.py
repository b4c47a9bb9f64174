"""Normalising task graphs: what the strict metrics compare.

:func:`normalise_graph` maps a validated :class:`~taskbench.schema.TaskGraph` to a :class:`NormalGraph`: tool
names, links (``<node-j>`` references in resource domains, explicit ``task_links`` in temporal ones) and
``(name, value, ref)`` argument tuples. :func:`normalise_record` gives exactly the same result straight from a
raw JSON record in the shapes real data has (a fast path that skips building pydantic models), or None when the
record is not plain; then the caller validates it and takes :func:`normalise_graph`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..schema import NODE_REF, TaskArgument, TaskGraph, ToolLibrary, content_type, node_index


def _as_text(value: Any) -> str:
    """An argument value as text: a string as it is, a list's items joined by spaces, anything else as JSON.
    A list nested past the recursion limit is flattened without recursion instead of raising."""
    try:
        return _as_text_nested(value)
    except RecursionError:
        parts: list[str] = []
        stack = [iter(value)]
        while stack:
            item = next(stack[-1], _END)
            if item is _END:
                stack.pop()
            elif isinstance(item, list):
                stack.append(iter(item))
            else:
                parts.append(item if isinstance(item, str) else _json_text(item))
        return " ".join(parts)


def _as_text_nested(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(_as_text_nested(v) for v in value)
    return _json_text(value)


_END = object()


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (RecursionError, ValueError, TypeError):  # nested too deeply, an integer past 4300 digits
        return str(type(value).__name__)


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
            j = node_index(m.group(1))
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
    """``task_links`` as (source, target) pairs when every link is ``{"source": str, "target": str, ...}`` with
    tool names (an endpoint that may be a node index, ``0`` or ``"<node-0>"``, takes the model path, which maps it
    to that node's tool)."""
    if type(links) is not list:
        return None
    out = []
    for lk in links:
        if type(lk) is not dict:
            return None
        src, tgt = lk.get("source"), lk.get("target")
        if type(src) is not str or type(tgt) is not str or src[:1] in _NOT_A_NAME or tgt[:1] in _NOT_A_NAME:
            return None
        out.append((src, tgt))
    return out


_NOT_A_NAME = frozenset("< \t")
"""First characters of a link endpoint that :func:`~taskbench.schema.task.link_endpoint` may read as an index."""


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
                    j = node_index(m)
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
            j = node_index(m1.group(1))
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
        plain = _plain_links(raw_links)  # validated in both kinds (the model rejects bad links either way)
        if plain is None:
            return None
        links = plain
    raw_steps = result.get("task_steps")
    steps: str | None
    if type(raw_steps) is list:
        try:
            steps = "\n".join(raw_steps)  # the common case: a list of strings
        except TypeError:
            steps = _steps_text(raw_steps)  # a list: never None
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
                                j = node_index(m)
                                if j != i and j < n:
                                    key = (names[j], names[i])
                                    if key not in seen:
                                        seen.add(key)
                                        links.append(key)
                            j = node_index(refs[0])
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



def output_types(library: ToolLibrary) -> dict[str, str]:
    """Tool name -> the type a ``<node-j>`` reference to it stands for (its first output type)."""
    return {t.id: t.first_output_type() for t in library.tools}


__all__ = ["ArgPair", "NormalGraph", "content_type", "normalise_graph", "normalise_record", "output_types"]
