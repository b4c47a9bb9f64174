"""Rule-based critics: pure checks that a sample (gold or generated) is well formed.

The paper's data engine keeps a generated sample only when its tool invocation graph matches the sampled
subgraph (same nodes, same links): :func:`check_against_sampled`. :func:`check_sample` adds the structural
rules every sample should satisfy:

- every node's tool exists in the library; no tool is used twice; one step per node; ``n_tools`` equals the
  number of nodes;
- ``type`` agrees with the shape: ``single`` is one node and no link, ``chain`` is one directed path through
  all nodes, ``dag`` is acyclic with at least 3 nodes; multi-node graphs are connected;
- resource domains (typed tools): ``<node-j>`` references are in range and not self references, the links
  equal the reference-implied links, a reference's first output type is one of the node's input types, the
  argument count equals the number of input types, a media file literal suits an input type, and every link
  is an edge of the tool graph;
- the user request is a request: not empty, not only tool names or a file name, not a query, a call or JSON,
  not a tool's description copied;
- temporal domains (named parameters): arguments are ``{name, value}`` pairs naming parameters of the tool,
  required parameters are present, links join nodes of the sample and form a DAG.

Every function returns a list of :class:`Issue` (empty when clean) and never raises on bad data.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import suggest
from ..schema import (
    NODE_REF,
    CriticVerdict,
    Sample,
    TaskArgument,
    TaskLink,
    ToolGraph,
    ToolLibrary,
    ToolLink,
    node_index,
)

__all__ = [
    "ISSUE_CODES",
    "Issue",
    "check_against_sampled",
    "check_dataset",
    "check_request",
    "check_grounding",
    "check_sample",
    "check_structure",
    "issue_counts",
    "rule_verdict",
]

ISSUE_CODES: dict[str, str] = {
    "empty_graph": "the sample has no task nodes",
    "unknown_tool": "a node's tool is not in the library",
    "duplicate_tool": "a tool is used by more than one node",
    "steps_count": "the number of task steps differs from the number of nodes",
    "n_tools_mismatch": "n_tools differs from the number of nodes",
    "type_mismatch": "the declared type (single/chain/dag) does not fit the graph's shape",
    "cycle": "the links contain a cycle",
    "disconnected": "a multi-node graph is not connected",
    "link_unknown_node": "a link names a tool that is not a node of the sample",
    "duplicate_link": "the same link is listed twice",
    "ref_out_of_range": "a <node-j> reference points past the last node",
    "ref_self": "a node refers to its own output",
    "ref_type": "a <node-j> reference's output type is not an input type of the node",
    "arg_count": "the number of arguments differs from the tool's number of input types",
    "arg_type": "a media file argument does not suit any input type of the tool",
    "arg_format": "an argument has the wrong shape (resource: a string; temporal: a {name, value} pair)",
    "links_refs_mismatch": "the explicit links differ from the links implied by <node-j> references",
    "link_not_in_graph": "a link is not an edge of the tool graph",
    "unknown_param": "an argument names a parameter the tool does not have",
    "missing_param": "a required parameter of the tool has no argument",
    "duplicate_param": "a parameter is given twice",
    "file_not_in_request": "an argument uses a file (example.mp4, ...) that the user request does not name",
    "sampled_nodes_mismatch": "the nodes differ from the sampled subgraph's nodes",
    "sampled_links_mismatch": "the links differ from the sampled subgraph's links",
    "request_empty": "the user request is empty",
    "request_is_tool_names": "the user request is only tool names, not what a user would ask",
    "request_is_code": "the user request is a query, a call or JSON, not what a user would ask",
    "request_is_tool_description": "the user request, or a sentence of it, is a tool's description copied, not a user's words",
    "request_is_file_name": "the user request is only a file name ('example.jpg'), not what a user would ask",
}
"""Every issue code the critics emit, with what it means."""

MEDIA_EXTENSIONS: dict[str, str] = {
    **dict.fromkeys(("jpg", "jpeg", "png", "gif", "bmp", "webp", "tif", "tiff"), "image"),
    **dict.fromkeys(("wav", "mp3", "flac", "ogg", "m4a", "aac"), "audio"),
    **dict.fromkeys(("mp4", "avi", "mov", "mkv", "webm"), "video"),
}
"""File extensions whose resource kind is clear from the name."""

FILE_EXTENSIONS: tuple[str, ...] = tuple(sorted({*MEDIA_EXTENSIONS, "txt", "pdf", "doc", "docx", "csv"}))
"""Extensions of the file names the critics recognise in arguments and requests."""

_FILE_NAME = re.compile(r"^[\w\-]+\.(" + "|".join(FILE_EXTENSIONS) + r")$", re.I)
"""A whole argument value that is one file name (``example.mp4``)."""

FILE_IN_TEXT = re.compile(r"[\w\-]+\.(?:" + "|".join(FILE_EXTENSIONS) + r")\b", re.I)
"""A file name anywhere in a text (``example.jpg``)."""


class Issue(BaseModel):
    """One problem a critic found in a sample."""

    model_config = ConfigDict(frozen=True)

    code: str = Field(description="Stable machine-readable code, one of ISSUE_CODES.")
    message: str = Field(description="What is wrong, naming the node, tool or link concerned.")
    node: int | None = Field(default=None, description="Index of the task node concerned, when one is.")

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def _dependency(library: ToolLibrary, dependency: str | None) -> str:
    return dependency or library.dependency


def _edge_set(links: Iterable[TaskLink | ToolLink]) -> set[tuple[str, str]]:
    return {(lk.source, lk.target) for lk in links}


def _graph_edges(graph: ToolGraph) -> set[tuple[str, str]]:
    """The tool graph's edge set, built once per graph (kept on the object, rebuilt when the links change)."""
    cached = graph.__dict__.get("_critic_edges")
    if cached is None or cached[0] is not graph.links or cached[1] != len(graph.links):
        cached = (graph.links, len(graph.links), _edge_set(graph.links))
        graph.__dict__["_critic_edges"] = cached
    return cached[2]


def _find_cycle(nodes: list[str], edges: set[tuple[str, str]]) -> list[str] | None:
    """A cycle among ``edges`` as a list of names (first repeated at the end), or None."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for s, t in sorted(edges):
        succ.setdefault(s, []).append(t)
        succ.setdefault(t, [])
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in succ[n]:
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in succ:
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def _connected(nodes: list[str], edges: set[tuple[str, str]]) -> bool:
    if not nodes:
        return True
    adj: dict[str, set[str]] = {n: set() for n in nodes}
    for s, t in edges:
        if s in adj and t in adj:
            adj[s].add(t)
            adj[t].add(s)
    seen = {nodes[0]}
    todo = [nodes[0]]
    while todo:
        for m in adj[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return len(seen) == len(adj)


def _is_path(nodes: list[str], edges: set[tuple[str, str]]) -> bool:
    """True when ``edges`` form one directed path visiting every node once."""
    names = set(nodes)
    if len(names) < 2 or len(edges) != len(names) - 1:
        return False
    outs = Counter(s for s, _ in edges)
    ins = Counter(t for _, t in edges)
    if any(c > 1 for c in outs.values()) or any(c > 1 for c in ins.values()):
        return False
    return _connected(sorted(names), edges) and _find_cycle(sorted(names), edges) is None


def check_structure(sample: Sample, dependency: str = "resource") -> list[Issue]:
    """Counts, duplicates and the single/chain/dag shape (no tool library needed)."""
    issues: list[Issue] = []
    names = sample.tool_names
    n = len(names)
    if n == 0:
        issues.append(Issue(code="empty_graph", message="the sample has no task nodes"))
    for name, count in Counter(names).items():
        if count > 1:
            issues.append(Issue(code="duplicate_tool", message=f"tool {name!r} is used {count} times"))
    if len(sample.task_steps) != n:
        issues.append(
            Issue(code="steps_count", message=f"{len(sample.task_steps)} task steps for {n} task nodes")
        )
    if sample.n_tools != n:
        issues.append(Issue(code="n_tools_mismatch", message=f"n_tools is {sample.n_tools} but there are {n} nodes"))

    links = sample.links_for(dependency)
    node_set = set(names)
    if dependency != "resource":
        for lk in links:
            for end in (lk.source, lk.target):
                if end not in node_set:
                    issues.append(
                        Issue(code="link_unknown_node", message=f"link {lk.source} -> {lk.target}: {end!r} is not a node")
                    )
        for (s, t), count in Counter((lk.source, lk.target) for lk in links).items():
            if count > 1:
                issues.append(Issue(code="duplicate_link", message=f"link {s} -> {t} is listed {count} times"))
    edges = {e for e in _edge_set(links) if e[0] in node_set and e[1] in node_set}
    unique = list(dict.fromkeys(names))
    cycle = _find_cycle(unique, edges)
    if cycle:
        issues.append(Issue(code="cycle", message="the links form a cycle: " + " -> ".join(cycle)))
    if len(unique) > 1 and not _connected(unique, edges):
        issues.append(Issue(code="disconnected", message=f"the {len(unique)} nodes are not all connected by links"))

    kind = sample.type
    if kind == "single" and (n != 1 or edges):
        issues.append(Issue(code="type_mismatch", message=f"type 'single' but {n} nodes and {len(edges)} links"))
    elif kind == "chain" and not _is_path(unique, edges):
        issues.append(
            Issue(code="type_mismatch", message=f"type 'chain' but the {n} nodes and {len(edges)} links are not one path")
        )
    elif kind == "dag" and n < 3:
        issues.append(Issue(code="type_mismatch", message=f"type 'dag' but only {n} nodes (a dag has at least 3)"))
    return issues


def arg_text(arg: Any) -> Any:
    """The value of an argument: a named pair's value, else the argument itself."""
    return arg.value if isinstance(arg, TaskArgument) else arg


def _check_resource_node(
    i: int, sample: Sample, library: ToolLibrary, issues: list[Issue]
) -> None:
    node = sample.task_nodes[i]
    tool = library.get(node.task)
    names = sample.tool_names
    inputs = list(tool.input_types or []) if tool is not None else None
    for arg in node.arguments:
        text = arg_text(arg)
        if not isinstance(arg, str):
            issues.append(
                Issue(code="arg_format", node=i, message=f"node {i} ({node.task}): argument {text!r} is not a string")
            )
        if not isinstance(text, str):
            continue
        refs = NODE_REF.findall(text)
        for digits in refs:
            j = node_index(digits)
            if j >= len(names):
                shown = digits if len(digits) <= 12 else digits[:12] + "..."
                issues.append(
                    Issue(code="ref_out_of_range", node=i,
                          message=f"node {i} ({node.task}): <node-{shown}> but there are {len(names)} nodes")
                )
            elif j == i:
                issues.append(Issue(code="ref_self", node=i, message=f"node {i} ({node.task}) refers to itself"))
            elif inputs is not None:
                source = library.get(names[j])
                if source is not None:
                    out = source.first_output_type()
                    if out not in inputs:
                        issues.append(
                            Issue(code="ref_type", node=i,
                                  message=f"node {i} ({node.task}): <node-{j}> ({names[j]}) gives {out!r}, "
                                  f"inputs are {inputs}")
                        )
        if not refs and inputs is not None:
            ext = text.rsplit(".", 1)[-1].lower() if "." in text and " " not in text.strip() else ""
            kind = MEDIA_EXTENSIONS.get(ext)
            lowered = {t.lower() for t in inputs}
            if kind is not None and kind not in lowered and "url" not in lowered:
                issues.append(
                    Issue(code="arg_type", node=i,
                          message=f"node {i} ({node.task}): {kind} file {text!r} but inputs are {inputs}")
                )
    if inputs is not None and len(node.arguments) != len(inputs):
        issues.append(
            Issue(code="arg_count", node=i,
                  message=f"node {i} ({node.task}): {len(node.arguments)} arguments for input types {inputs}")
        )


def _check_temporal_node(i: int, sample: Sample, library: ToolLibrary, issues: list[Issue]) -> None:
    node = sample.task_nodes[i]
    tool = library.get(node.task)
    params = {p.name: p for p in (tool.parameters or [])} if tool is not None else None
    given: list[str] = []
    for arg in node.arguments:
        if not isinstance(arg, TaskArgument):
            issues.append(
                Issue(code="arg_format", node=i,
                      message=f"node {i} ({node.task}): argument {arg!r} is not a {{name, value}} pair")
            )
            continue
        given.append(arg.name)
        if params is not None and arg.name not in params:
            close = suggest(arg.name, params)
            hint = f"did you mean {close[0]!r}? " if close else ""
            issues.append(
                Issue(code="unknown_param", node=i,
                      message=f"node {i} ({node.task}): no parameter {arg.name!r} ({hint}has {sorted(params)})")
            )
    for name, count in Counter(given).items():
        if count > 1:
            issues.append(Issue(code="duplicate_param", node=i, message=f"node {i} ({node.task}): {name!r} given {count} times"))
    if params is not None:
        for p in params.values():
            if p.required and p.name not in given:
                issues.append(
                    Issue(code="missing_param", node=i, message=f"node {i} ({node.task}): required {p.name!r} missing")
                )


def check_sample(
    sample: Sample,
    library: ToolLibrary,
    graph: ToolGraph | None = None,
    *,
    dependency: str | None = None,
    sampled: bool = True,
) -> list[Issue]:
    """All rule checks for one sample against its tool library (and tool graph, when given).

    ``dependency`` overrides the library's kind. With ``sampled`` (default) the sample is also checked
    against its own ``sampled_nodes``/``sampled_links`` when it has them (see :func:`check_against_sampled`).
    """
    dep = _dependency(library, dependency)
    issues = check_structure(sample, dep)
    issues.extend(check_request(sample.user_request, library))
    for i, node in enumerate(sample.task_nodes):
        if node.task not in library:
            close = suggest(node.task, library.names)
            hint = f" - did you mean {close[0]!r}?" if close else ""
            issues.append(Issue(code="unknown_tool", node=i, message=f"node {i}: unknown tool {node.task!r}{hint}"))
    for i in range(len(sample.task_nodes)):
        if dep == "resource":
            _check_resource_node(i, sample, library, issues)
        else:
            _check_temporal_node(i, sample, library, issues)
    if dep == "resource":
        implied = _edge_set(sample.reference_links())
        explicit = _edge_set(sample.task_links)
        if implied != explicit:
            diff = _set_diff(explicit, implied, extra="not implied", fmt=_edge_text)
            issues.append(Issue(code="links_refs_mismatch", message="task_links vs <node-j> references; " + diff))
        if graph is not None:
            edges = _graph_edges(graph)
            for s, t in sorted(implied | explicit):
                if s in library and t in library and (s, t) not in edges:
                    issues.append(Issue(code="link_not_in_graph", message=f"{s} -> {t} is not an edge of the tool graph"))
    elif graph is not None:
        edges = _graph_edges(graph)
        for lk in sample.task_links:
            if lk.source in library and lk.target in library and (lk.source, lk.target) not in edges:
                issues.append(
                    Issue(code="link_not_in_graph", message=f"{lk.source} -> {lk.target} is not an edge of the tool graph")
                )
    issues.extend(check_grounding(sample))
    if sampled:
        issues.extend(check_against_sampled(sample))
    return issues


# a statement as a database would take it (keywords in capitals, as SQL is written; a user writes "Select the
# cheapest flights from Rome"), a bare call, or a JSON object or list
_CODE = re.compile(
    r"^\s*(?:(?:SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|CREATE\s+(?:TABLE|INDEX|VIEW)"
    r"|DROP\s+TABLE|ALTER\s+TABLE|WITH\s+\w+\s+AS)\b.*"
    r"|[A-Za-z_][\w.]*\s*\(.*\)\s*;?|[\[{].*[\]}])\s*$", re.DOTALL)
_FILLER = frozenset({"and", "then", "or", "with", "the", "a", "to", "of", "call", "use", "run", "please"})


COPIED_DESCRIPTION = 90.0
"""A request sentence whose normalised similarity (rapidfuzz ratio, 0-100) to a tool's description (of 25
characters or more) is at least this was copied from the tool list ("Extracts the audio track from a given
video file."): 14 of 60 answers of the 0.5B model (issue 26), none of the 86 released gold samples nor of the 90
bundled ones."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def fold(text: str) -> str:
    """``text`` as words in lower case joined by single spaces, punctuation dropped (letters of any script)."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def check_request(request: str, library: ToolLibrary) -> list[Issue]:
    """The request must be what a user would type: not empty, not only tool names ("read_file read_file"), not
    only a file name ("example.jpg"), not a query, a call or JSON ("SELECT * FROM users;"), not a tool
    description copied from the tool list (a sentence of it, or the whole request)."""
    text = request.strip()
    if not text:
        return [Issue(code="request_empty", message="the user request is empty")]
    if _CODE.match(text):
        return [Issue(code="request_is_code", message=f"the user request is code, not a request: {text[:60]!r}")]
    words = [w for w in re.split(r"[^A-Za-z0-9]+", text.lower()) if w]
    name_words: set[str] = set()
    for name in library.names:
        name_words.update(w for w in re.split(r"[^A-Za-z0-9]+", split_camel(name).lower()) if w)
    rest = [w for w in words if w not in name_words and w not in _FILLER]
    if words and not rest:
        return [Issue(code="request_is_tool_names",
                      message=f"the user request only names tools: {text[:60]!r} (write what the user wants done)")]
    if FILE_IN_TEXT.search(text) and not [w for w in re.findall(r"\w+", FILE_IN_TEXT.sub(" ", text).lower())
                                          if w not in _FILLER]:
        return [Issue(code="request_is_file_name",
                      message=f"the user request is only a file name: {text[:60]!r} (write what the user wants done)")]
    from rapidfuzz import fuzz

    descriptions = [(t.id, fold(t.desc)) for t in library.tools if t.desc and len(t.desc) >= 25]
    # each sentence, and the whole request when it has several (a description of several sentences copied)
    sentences = _SENTENCE.split(text)
    for sentence in [*sentences, text] if len(sentences) > 1 else sentences:
        said = fold(sentence)
        if len(said) < 20:
            continue
        for name, desc in descriptions:
            if fuzz.ratio(said, desc) >= COPIED_DESCRIPTION:
                return [Issue(code="request_is_tool_description",
                              message=f"the user request copies {name}'s description: {sentence.strip()[:60]!r}")]
    return []


def split_camel(name: str) -> str:
    """``"getWeatherNow"`` -> ``"get Weather Now"``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)


def check_grounding(sample: Sample) -> list[Issue]:
    """Every file an argument uses (a whole value such as ``example.mp4``) is named in the user request (case
    ignored): the request must be self-contained. None of the 86 released gold samples fails this."""
    request = (sample.user_request or "").lower()
    issues = []
    for i, node in enumerate(sample.task_nodes):
        for arg in node.arguments:
            text = arg_text(arg)
            if not isinstance(text, str):
                continue
            name = text.strip().strip("'\"")
            if _FILE_NAME.match(name) and name.lower() not in request:
                issues.append(Issue(code="file_not_in_request", node=i,
                                    message=f"node {i} ({node.task}): {name!r} is not named in the user request"))
    return issues


def _edge_text(edge: tuple[str, str]) -> str:
    return f"{edge[0]} -> {edge[1]}"


def _set_diff(have: set[Any], want: set[Any], *, extra: str = "extra", fmt: Callable[[Any], str] = str) -> str:
    """``"<extra>: a, b; missing: c"`` for what ``have`` has beyond ``want`` and lacks of it (sorted)."""
    parts = []
    if have - want:
        parts.append(f"{extra}: " + ", ".join(fmt(x) for x in sorted(have - want)))
    if want - have:
        parts.append("missing: " + ", ".join(fmt(x) for x in sorted(want - have)))
    return "; ".join(parts)


def _sampled_node_names(sample: Sample) -> list[str]:
    out = []
    for node in sample.sampled_nodes or []:
        name = node.get("task", node.get("id"))
        if isinstance(name, str):
            out.append(name)
    return out


def check_against_sampled(sample: Sample, *, links: list[TaskLink] | None = None) -> list[Issue]:
    """The paper's rule critic: the invocation graph's node set and link set equal the sampled subgraph's.

    ``links`` are the generated links (default: the sample's explicit ``task_links``). Samples without
    ``sampled_nodes`` are not checked.
    """
    if sample.sampled_nodes is None:
        return []
    issues: list[Issue] = []
    sampled = set(_sampled_node_names(sample))
    nodes = set(sample.tool_names)
    if sampled != nodes:
        issues.append(
            Issue(code="sampled_nodes_mismatch", message="nodes vs sampled nodes; " + _set_diff(nodes, sampled))
        )
    generated = _edge_set(sample.task_links if links is None else links)
    wanted = _edge_set(sample.sampled_links or [])
    if generated != wanted:
        diff = _set_diff(generated, wanted, fmt=_edge_text)
        issues.append(Issue(code="sampled_links_mismatch", message="links vs sampled links; " + diff))
    return issues


def check_dataset(
    samples: Iterable[Sample],
    library: ToolLibrary,
    graph: ToolGraph | None = None,
    *,
    dependency: str | None = None,
    sampled: bool = True,
) -> dict[str, list[Issue]]:
    """:func:`check_sample` over many samples: ``{sample id: issues}`` for every sample (clean ones map to [])."""
    return {
        s.id: check_sample(s, library, graph, dependency=dependency, sampled=sampled) for s in samples
    }


def issue_counts(results: dict[str, list[Issue]]) -> dict[str, int]:
    """How many samples have each issue code (a sample counts once per code), sorted by code."""
    counts: Counter[str] = Counter()
    for issues in results.values():
        counts.update({i.code for i in issues})
    return dict(sorted(counts.items()))


def rule_verdict(sample: Sample, library: ToolLibrary, graph: ToolGraph | None = None) -> CriticVerdict:
    """The data engine's rule critic as a verdict: every check of :func:`check_sample` (tools, counts, shape,
    arguments against types or parameters, links in the tool graph) plus, when the sample has a sampled subgraph,
    the paper's alignment check: node set and link set equal the subgraph's, the links of a resource sample
    being the ones its ``<node-j>`` arguments imply."""
    dep = library.dependency
    issues = check_sample(sample, library, graph, sampled=False)
    if sample.sampled_nodes is not None:
        issues.extend(check_against_sampled(sample, links=sample.links_for(dep)))
    return CriticVerdict(name="rule", passed=not issues, reasons=[str(i) for i in issues])
