"""Build and validate tool graphs.

Rules (the TaskBench paper, section 2.2):

- ``resource``: a link a -> b (a != b) when an output type of a is an input type of b. Its ``type`` is the
  shared type; when several are shared, the first one in a's ``output-type`` order (none of the released
  libraries has such a pair; the reference picks an arbitrary element of a set).
- ``temporal``: a link a -> b for every ordered pair a != b, of type ``"complete"``.

Links are listed source-major in library order, as the reference ``graph_desc.json`` files are.

Size: a library whose tools share one type, or any temporal library, gives a dense graph (n tools, about n**2
links). :func:`count_links` counts the links of a library without building them; :func:`build_graph` refuses
a graph of more than ``max_links`` links (default :data:`MAX_LINKS`) with one clear error, because its
in-memory form costs about 1.5 kB per link; :func:`write_graph` streams any graph to a file in constant
memory (``taskbench graph build`` uses it).

:func:`make_graph` chooses between these rules and links inferred from the tools themselves
(:mod:`taskbench.graph.infer`): ``infer="auto"`` keeps the rules for TaskBench libraries (and whenever a
dependency kind is given) and infers the links of OpenAI, MCP and OpenAPI tools, which the temporal rule
would link all to all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from ..dataset.tool_desc import (
    JsonSource,
    _file_dependency,
    _first_error,
    check_dependency,
    tools_from_taskbench,
)
from ..errors import InputError, suggest
from ..schema import ToolGraph, ToolLibrary, ToolLink, infer_dependency
from .infer import infer_graph
from .loaders import library_from_source, load_tools
from .rules import MAX_LINKS as MAX_LINKS
from .rules import TEMPORAL_LINK_TYPE as TEMPORAL_LINK_TYPE
from .rules import build_graph as build_graph
from .rules import check_size as check_size
from .rules import count_links as count_links
from .rules import iter_links as iter_links

INFER_METHODS: tuple[str, ...] = ("auto", "rules", "schema", "llm")
"""How ``graph build --infer`` makes links: ``rules`` (resource/temporal), ``schema`` (inferred from the tools),
``llm`` (proposed by a model, rule-checked), ``auto`` (rules for TaskBench libraries, else schema)."""



def write_graph(
    library: ToolLibrary, out: IO[bytes], dependency: str | None = None, *, extra: dict[str, object] | None = None
) -> int:
    """Stream the library's graph as a ``graph_desc.json`` document to a binary file, in constant memory; the
    bytes equal ``json.dumps(build_graph(...).to_taskbench() | extra, ensure_ascii=False, indent=2)`` plus a
    newline (lone surrogates as JSON escapes). ``extra``: top-level keys after ``links`` (e.g. the
    dependency). Returns the number of links written."""
    from ..dataset.jsonio import encode_text

    nodes = json.dumps([t.to_taskbench() for t in library.tools], ensure_ascii=False, indent=2)
    out.write(encode_text('{\n  "nodes": ' + nodes.replace("\n", "\n  ") + ',\n  "links": ['))
    count = 0
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    buf: list[str] = []
    for a, b, t in iter_links(library, dependency):
        buf.append(('\n' if count == 0 else ',\n') + '    {\n      "source": ' + dumps(a) + ',\n      "target": '
                   + dumps(b) + ',\n      "type": ' + dumps(t) + "\n    }")
        count += 1
        if len(buf) >= 4096:
            out.write(encode_text("".join(buf)))
            buf.clear()
    out.write(encode_text("".join(buf) + ("\n  ]" if count else "]")))
    for key, value in (extra or {}).items():
        out.write(encode_text(f",\n  {dumps(key)}: " + json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n  ")))
    out.write(b"\n}\n")
    return count


def resolve_infer(library: ToolLibrary, infer: str = "auto", dependency: str | None = None) -> str:
    """The method ``infer`` stands for: ``auto`` is ``rules`` for TaskBench libraries or when a dependency
    kind is given, else ``schema``."""
    if infer not in INFER_METHODS:
        raise InputError(f"unknown inference method {infer!r}", hint=f"use one of: {', '.join(INFER_METHODS)}")
    if infer != "auto":
        return infer
    if dependency is not None or all((t.source or "taskbench") == "taskbench" for t in library.tools):
        return "rules"
    return "schema"


def make_graph(
    library: ToolLibrary, infer: str = "auto", dependency: str | None = None, *, max_links: int | None = MAX_LINKS
) -> ToolGraph:
    """The tool graph of a library: built with the resource/temporal rules (``infer="rules"``), or with links
    inferred from the tools' schemas, names and descriptions (``"schema"``; typed resource libraries keep the
    resource rule), or as ``"auto"`` chooses (:func:`resolve_infer`). ``"llm"`` needs a model: use
    :func:`taskbench.graph.infer_llm.infer_graph_llm`."""
    method = resolve_infer(library, infer, dependency)
    if method == "rules":
        return build_graph(library, dependency, max_links=max_links)
    if method == "llm":
        raise InputError("inferring links with a model needs a model", hint="use --infer llm --model PROVIDER/MODEL")
    if dependency == "resource":
        return build_graph(library, "resource", max_links=max_links)
    return infer_graph(library)


def graph_problem(graph: ToolGraph) -> tuple[int | None, str, str] | None:
    """The first problem of a graph as ``(link index or None, message, hint)``, or None when it is valid."""
    if not graph.nodes:
        return None, "the graph has no nodes", "add tools under \"nodes\""
    tools = {}
    for t in graph.nodes:
        if t.id in tools:
            return None, f"duplicate tool id {t.id!r}", "tool ids must be unique"
        tools[t.id] = t
    dep = graph.dependency_kind
    produced = {ty for t in graph.nodes for ty in (t.output_types or ())}
    seen: set[tuple[str, str]] = set()
    for i, link in enumerate(graph.links):
        for end in ("source", "target"):
            name = getattr(link, end)
            if name not in tools:
                close = suggest(name, tools)
                hint = f"did you mean {close[0]!r}?" if close else "add the tool to \"nodes\" or fix the name"
                return i, f"link #{i} {end} {name!r} is not a tool of the graph", hint
        if link.source == link.target:
            return i, f"link #{i} links {link.source!r} to itself", "remove the self link"
        key = (link.source, link.target)
        if key in seen:
            return i, f"duplicate link {link.source!r} -> {link.target!r} (link #{i})", "remove the duplicate"
        seen.add(key)
        if dep == "resource":
            src, dst = tools[link.source], tools[link.target]
            if link.type is None:
                return i, f"link #{i} {link.source!r} -> {link.target!r} has no type", "resource links need a 'type'"
            if link.type not in produced:
                return i, f"link #{i} has type {link.type!r}, which no tool produces", "use an output type of the source tool"
            if link.type not in (src.output_types or ()):
                return (
                    i,
                    f"link #{i}: {link.source!r} does not produce {link.type!r} (it produces {src.output_types or []})",
                    "fix the link type or the tool's output-type",
                )
            if link.type not in (dst.input_types or ()):
                return (
                    i,
                    f"link #{i}: {link.target!r} does not take {link.type!r} (it takes {dst.input_types or []})",
                    "fix the link type or the tool's input-type",
                )
    return None


def validate_graph(graph: ToolGraph, *, path: str | Path | None = None) -> ToolGraph:
    """Check a (loaded) graph: known, unique tools; no self or duplicate links; in resource graphs every link
    type is an output type of its source and an input type of its target. Returns the graph; raises
    :class:`InputError` on the first problem."""
    problem = graph_problem(graph)
    if problem is not None:
        _, message, hint = problem
        raise InputError(message, path=path, hint=hint)
    return graph


def is_graph_document(doc: object) -> bool:
    """True for a TaskBench graph document (``{"nodes": [...], "links": [...]}``)."""
    return isinstance(doc, dict) and isinstance(doc.get("nodes"), list) and "links" in doc


def load_graph(path: str | Path, dependency: str | None = None) -> ToolGraph:
    """Load and validate a ``graph_desc.json`` (errors name the line of the offending link or tool)."""
    path = Path(path)
    check_dependency(dependency)
    src = JsonSource.read(path)
    return _graph_from_source(src, dependency)


def _graph_from_source(src: JsonSource, dependency: str | None) -> ToolGraph:
    doc = src.doc
    if not is_graph_document(doc):
        raise src.error('expected a tool graph {"nodes": [...], "links": [...]}', hint="build one with `taskbench graph build`")
    tools = tools_from_taskbench(doc, source=src)
    assert isinstance(doc, dict)
    links_raw = doc["links"]
    if not isinstance(links_raw, list):
        raise src.error("'links' must be a list", "links")
    links = []
    for i, raw in enumerate(links_raw):
        if not isinstance(raw, dict):
            raise src.error(f"link #{i} is not a JSON object", "links", i, hint='each link is {"source", "target", "type"}')
        for key in ("source", "target"):
            if not isinstance(raw.get(key), str):
                raise src.error(f"link #{i} has no string {key!r}", "links", i, hint='each link is {"source", "target", "type"}')
        try:
            links.append(ToolLink.model_validate(raw))
        except ValidationError as exc:
            raise src.error(f"link #{i}: {_first_error(exc)}", "links", i) from None
    dep = dependency or _file_dependency(src) or infer_dependency(tools)
    inferred = doc.get("inferred") if isinstance(doc.get("inferred"), str) else None
    edits = [e for e in doc.get("edits") or [] if isinstance(e, dict)] if isinstance(doc.get("edits"), list) else []
    graph = ToolGraph(nodes=tools, links=links, dependency=dep, inferred=inferred, edits=edits)  # type: ignore[arg-type]
    problem = graph_problem(graph)
    if problem is not None:
        index, message, hint = problem
        raise src.error(message, *(("links", index) if index is not None else ()), hint=hint)
    return graph


def graph_from_path(
    path: str | Path,
    *,
    format: str = "auto",
    dependency: str | None = None,
    infer: str = "auto",
    max_links: int | None = MAX_LINKS,
) -> ToolGraph:
    """A tool graph from a ``graph_desc.json``, a tool library file (any format; the graph is made with
    :func:`make_graph` and ``infer``, rule-built graphs up to ``max_links`` links) or a dataset directory (its
    ``graph_desc.json`` when present, else built from its ``tool_desc.json``)."""
    path = Path(path)
    check_dependency(dependency)
    if path.is_dir():
        if (path / "graph_desc.json").is_file():
            graph = load_graph(path / "graph_desc.json", dependency)
            return graph
        if (path / "tool_desc.json").is_file():
            return make_graph(load_tools(path / "tool_desc.json", format, dependency), infer, dependency,
                              max_links=max_links)
        raise InputError("no graph_desc.json or tool_desc.json in this directory", path=path)
    if format in ("auto", "taskbench"):
        src = JsonSource.read(path)
        if is_graph_document(src.doc):
            return _graph_from_source(src, dependency)
        return make_graph(library_from_source(src, format, dependency), infer, dependency, max_links=max_links)
    return make_graph(load_tools(path, format, dependency), infer, dependency, max_links=max_links)
