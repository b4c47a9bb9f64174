"""From a data-engine answer to a :class:`~taskbench.schema.Sample` (pure; never raises on bad answers).

An answer is the JSON object the model wrote. Constrained backends give our shape (``invoking_graph.nodes``
with ``arguments`` as an object over the tool's argument names); unconstrained ones may give the reference
engine's shapes instead (``id`` instead of ``task``, resource ``input`` lists naming the tool whose output is
needed, ``task_nodes``/``task_links`` at the top). All of them are read:

- **Names are normalised**: a tool name that differs from a library name only in case, ``_``/``-`` or
  spacing is mapped to it (the reference's ``format_data.py`` replaces ``_`` by spaces); an unknown name is
  kept, so the rule critic reports it.
- **Resource arguments** become the reference's list of strings in the tool's input order; a value that names
  another node's tool (the reference engine's convention) becomes ``<node-j>``. The links of a resource sample
  are the ones its ``<node-j>`` arguments imply, as the evaluator reads them.
- **Temporal arguments** become ``{name, value}`` pairs whose values keep the type the model wrote (a number, a
  list, an object: the answer schema gives each parameter its declared type); null optional parameters, and
  null fields of object values at any depth, are dropped; links are explicit.
- ``check_by_teacher`` is parsed for the paper's two verdicts, *Executable* and *Correct*, from our object or
  from the template's ``... Conclusion: Executable: yes, Correct: no`` text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..schema import CriticVerdict, Sample, SampledSubgraph, TaskArgument, TaskLink, TaskNode, ToolLibrary
from ..schema.generation import FailedGenerationRecord, GenerationRecord, parse_generation_record

__all__ = [
    "NameIndex",
    "build_sample",
    "normalise_name",
    "sampled_view",
    "teacher_text",
    "teacher_verdict",
]

_SEP = re.compile(r"[\s_\-]+")


def normalise_name(name: str) -> str:
    """A tool name compared loosely: lower case, ``_``/``-``/whitespace runs as one space, trimmed."""
    return _SEP.sub(" ", str(name)).strip().lower()


class NameIndex:
    """Maps loosely written tool names to the library's names."""

    def __init__(self, library: ToolLibrary) -> None:
        self.names = set(library.names)
        self._loose: dict[str, str] = {}
        for name in library.names:
            self._loose.setdefault(normalise_name(name), name)

    def resolve(self, name: Any) -> str:
        """The library name ``name`` stands for, or ``name`` itself (as text) when none matches."""
        text = str(name) if name is not None else ""
        if text in self.names:
            return text
        return self._loose.get(normalise_name(text), text.strip())


def sampled_view(entry: SampledSubgraph, library: ToolLibrary) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """``(sampled_nodes, sampled_links)`` of a plan entry in the released data's shape: resource nodes
    ``{task, input-type, output-type}``, temporal nodes ``{task, arguments: [parameters]}``."""
    nodes: list[dict[str, Any]] = []
    for name in entry.nodes:
        tool = library.get(name)
        node: dict[str, Any] = {"task": name}
        if tool is not None:
            if library.dependency == "resource":
                node["input-type"] = list(tool.input_types or [])
                node["output-type"] = list(tool.output_types or [])
            else:
                node["arguments"] = [
                    {"name": p.name, "type": p.type, "desc": p.desc, **({} if p.required else {"required": False})}
                    for p in tool.parameters or []
                ]
        nodes.append(node)
    links = [{"source": lk.source, "target": lk.target} for lk in entry.links]
    return nodes, links


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _raw_nodes(result: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    graph = _as_dict(result.get("invoking_graph"))
    nodes = graph.get("nodes", result.get("task_nodes", []))
    links = graph.get("links", result.get("task_links", []))
    return (nodes if isinstance(nodes, list) else []), (links if isinstance(links, list) else [])


def _node_name(raw: Any) -> Any:
    if isinstance(raw, dict):
        for key in ("task", "id", "name", "tool"):
            if key in raw:
                return raw[key]
    return raw if isinstance(raw, str) else None


def _ref(value: Any, names: list[str], index: NameIndex, me: int) -> Any:
    """``<node-j>`` when ``value`` names the tool of another node j, else ``value``."""
    if not isinstance(value, str):
        return value
    text = value.strip().strip("<>").strip()
    resolved = index.resolve(text)
    if resolved in index.names and resolved in names:
        j = names.index(resolved)
        if j != me:
            return f"<node-{j}>"
    return value


def _resource_arguments(raw: Any, tool: Any, names: list[str], index: NameIndex, me: int) -> list[Any]:
    args = raw.get("arguments", raw.get("input", raw.get("inputs"))) if isinstance(raw, dict) else None
    if args is None:
        return []
    if isinstance(args, dict):
        order = tool.argument_names() if tool is not None else []
        values = [args[k] for k in order if k in args] + [v for k, v in args.items() if k not in order]
    elif isinstance(args, list):
        values = list(args)
    else:
        values = [args]
    out = []
    for v in values:
        if v is None:
            continue
        if isinstance(v, dict) and "value" in v:  # a {name, value} pair where a plain value was wanted
            v = v["value"]
        out.append(_ref(v, names, index, me))
    return out


def _without_nulls(value: Any) -> Any:
    """``value`` with every null field of an object left out, at any depth (items of arrays are kept)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _temporal_arguments(raw: Any) -> list[Any]:
    args = raw.get("arguments", raw.get("input", raw.get("parameters"))) if isinstance(raw, dict) else None
    if args is None:
        return []
    if isinstance(args, dict):
        return [TaskArgument(name=str(k), value=_without_nulls(v)) for k, v in args.items() if v is not None]
    if isinstance(args, list):
        out: list[Any] = []
        for a in args:
            if isinstance(a, dict) and "name" in a:
                if a.get("value") is not None:
                    out.append(TaskArgument(name=str(a["name"]), value=_without_nulls(a.get("value"))))
            else:
                out.append(a)
        return out
    return [args]


def _steps(result: dict[str, Any]) -> Any:
    steps = result.get("task_steps", [])
    return steps if isinstance(steps, (list, str)) else []


def name_index(library: ToolLibrary) -> NameIndex:
    """The :class:`NameIndex` of a library, built once per library object."""
    cached = library.__dict__.get("_name_index")
    if cached is None or len(cached.names) != len(library.tools):
        cached = NameIndex(library)
        library.__dict__["_name_index"] = cached
    return cached


def build_sample(
    record: GenerationRecord | FailedGenerationRecord | Mapping[str, Any],
    library: ToolLibrary,
    result: dict[str, Any] | None = None,
) -> Sample:
    """The sample of one data-engine record (a line of data_raw.json, read by
    :func:`~taskbench.schema.generation.parse_generation_record`; ``result``: the answer, default the record's).

    Without an answer the sample has an empty graph (the critics then say why)."""
    rec = parse_generation_record(record)
    index = name_index(library)
    dep = library.dependency
    if result is None and isinstance(rec, GenerationRecord):
        result = rec.result
    result = _as_dict(result)
    raw_nodes, raw_links = _raw_nodes(result)
    names = [index.resolve(_node_name(n)) for n in raw_nodes]
    nodes: list[TaskNode] = []
    for i, raw in enumerate(raw_nodes):
        tool = library.get(names[i])
        if dep == "resource":
            args = _resource_arguments(raw, tool, names, index, i)
        else:
            args = _temporal_arguments(raw)
        try:
            nodes.append(TaskNode(task=names[i], arguments=args))
        except ValueError:
            nodes.append(TaskNode(task=names[i], arguments=[]))
    links: list[TaskLink] = []
    if dep != "resource":
        for raw in raw_links:
            if isinstance(raw, dict) and "source" in raw and "target" in raw:
                links.append(TaskLink(source=index.resolve(raw["source"]), target=index.resolve(raw["target"])))
    request = result.get("user_request", "")
    sample = Sample(
        id=rec.id,
        user_request=request if isinstance(request, str) else str(request),
        type=rec.type,
        n_tools=rec.n_tools,
        seed=rec.seed,
        sampled_nodes=rec.sampled_nodes,
        sampled_links=rec.sampled_links,
        method=rec.method,
        task_steps=_steps(result),
        task_nodes=nodes,
        task_links=links,
    )
    if dep == "resource":
        sample.task_links = sample.reference_links()
    return sample


_YES = re.compile(r"\b(executable|correct)\b\W{0,5}(yes|no|true|false)\b", re.I)


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("yes", "true", "no", "false"):
        return value.strip().lower() in ("yes", "true")
    return None


def teacher_verdict(value: Any, *, name: str = "llm", model: str | None = None) -> CriticVerdict:
    """The LLM critic's verdict from a ``check_by_teacher`` value (our object, or the template's text) or a
    separate critic's answer: passed when both Executable and Correct are yes; None when neither can be read."""
    executable: bool | None = None
    correct: bool | None = None
    if isinstance(value, dict):
        executable, correct = _flag(value.get("executable")), _flag(value.get("correct"))
        if executable is None and correct is None and isinstance(value.get("comments"), str):
            return teacher_verdict(value["comments"], name=name, model=model)
    elif isinstance(value, str):
        for key, flag in _YES.findall(value):  # the last statement of each wins (the conclusion comes last)
            if key.lower() == "executable":
                executable = _flag(flag)
            else:
                correct = _flag(flag)
    reasons: list[str] = []
    if executable is None and correct is None:
        return CriticVerdict(name=name, passed=None, reasons=["no_verdict: the check gave neither Executable nor "
                                                              "Correct"], model=model, raw=value)
    if executable is False:
        reasons.append("not_executable: the critic says the invocation graph would not run")
    if correct is False:
        reasons.append("not_correct: the critic says the graph does not match the sampled subgraph")
    if correct is None:
        reasons.append("no_verdict: the check gave no Correct verdict")
    passed = bool(correct) and executable is not False
    return CriticVerdict(name=name, passed=passed, reasons=[] if passed else reasons, model=model, raw=value)


def teacher_text(value: Any) -> str:
    """``check_by_teacher`` as the released data writes it: the comments, then ``Conclusion: Executable: yes/no,
    Correct: yes/no``."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return ""
    comments = str(value.get("comments") or "").strip()

    def word(flag: Any) -> str:
        f = _flag(flag)
        return "unknown" if f is None else ("yes" if f else "no")

    conclusion = f"Conclusion: Executable: {word(value.get('executable'))}, Correct: {word(value.get('correct'))}"
    return f"{comments} {conclusion}".strip()
