"""Tool dependencies proposed by a model: ``taskbench graph build --infer llm --model M``.

One call per tool that takes parameters (the *target*). The prompt lists every tool of the library with its
description and what it returns (the returned fields, identifiers first, when the tool has an output schema),
then names the target and its parameters; the model answers over a JSON Schema::

    {"links": [{"source": "<a tool>", "parameter": "<a parameter of the target>",
                "output": "<a field the source returns>", "reason": "<why>"}]}

with ``source`` (the other tools) and ``parameter`` as enums where the backend constrains output. The tool list comes first and
is the same in every call, so backends with a prompt prefix cache (the embedded llama.cpp model) evaluate it
once.

Whatever the model says, a rule check keeps a proposal only when its source is a tool of the library other
than the target, its parameter is a parameter of the target, and, when the source has an output schema and
the model named a field, that field is one the source returns (a bare name such as ``id`` stands for the
fields that end in it). Everything else is dropped and reported with the reason (:class:`LlmInferenceReport`).
Retries, the response cache, concurrency and usage accounting are the :class:`~taskbench.llm.Model`
wrapper's; a call that fails for good is counted and the others go on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import TaskbenchError
from ..schema import LinkReason, Tool, ToolGraph, ToolLibrary, ToolLink
from .infer import DATA, SchemaInference
from .shapes import params_of

if TYPE_CHECKING:  # pragma: no cover
    from ..llm import Model

MAX_LINKS_PER_TOOL = 8
"""Upper bound on the proposals one answer may hold (the schema's ``maxItems``)."""

MAX_FIELDS = 8
"""Returned fields shown per tool in the prompt (identifiers first)."""

SYSTEM = (
    "You map the data dependencies between the tools of one API. Tool B depends on tool A when a value that A "
    "returns can be passed as a parameter of B (for example the id of a search result passed to a tool that "
    "takes that id). List only real data flows; an empty list is a good answer when there is none."
)


@dataclass
class LlmInferenceReport:
    """What a model proposed and what the rule check kept."""

    model: str
    calls: int = 0
    failed_calls: int = 0
    proposed: int = 0
    kept: int = 0
    dropped: int = 0
    repeated: int = 0
    """Proposals that repeat a kept one (same source and parameter); proposed = kept + dropped + repeated."""
    rejected: list[dict[str, Any]] = field(default_factory=list)
    """One entry per dropped proposal: target, source, parameter, output, why."""
    errors: list[str] = field(default_factory=list)
    """One line per failed call: the target tool and the error."""


def _describe(tool: Tool, facts: SchemaInference) -> str:
    desc = " ".join(tool.desc.split())
    if len(desc) > 120:
        desc = desc[:117].rstrip() + "..."
    line = f"- {tool.id}: {desc}" if desc else f"- {tool.id}"
    f = facts.facts[tool.id]
    if f.has_output:
        ids = [p.path for p in f.produced if p.kind is not None and p.entities & facts.lex.entities]
        rest = [p.path for p in f.produced if p.kind is None]
        shown = list(dict.fromkeys(ids + rest))[:MAX_FIELDS]
        if shown:
            line += f" Returns: {', '.join(shown)}."
    return line


def _parameters(tool: Tool) -> list[tuple[str, str, bool, str]]:
    return [(name, str(schema.get("type", "string")), req, " ".join((desc or "").split())[:120])
            for name, _loc, schema, req, desc in params_of(tool)]


def _schema(names: list[str], params: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "links": {
                "type": "array",
                "maxItems": MAX_LINKS_PER_TOOL,
                "items": {
                    "type": "object",
                    "properties": {
                        "source": {"type": "string", "enum": names},
                        "parameter": {"type": "string", "enum": params},
                        "output": {"type": "string"},
                        "reason": {"type": "string"},
                    },
                    "required": ["source", "parameter", "output", "reason"],
                },
            }
        },
        "required": ["links"],
    }


def _messages(catalogue: str, tool: Tool) -> list[dict[str, str]]:
    params = "\n".join(f"- {n} ({t}{', required' if r else ''}){': ' + d if d else ''}"
                       for n, t, r, d in _parameters(tool))
    user = (
        f"Target tool: {tool.id}\n{tool.desc.strip()}\nIts parameters:\n{params}\n\n"
        "Which tools above return a value that can be passed to one of the target tool's parameters? For each, "
        "give the source tool, the parameter, the returned field and a short reason. Do not list the target "
        "tool itself."
    )
    return [{"role": "system", "content": f"{SYSTEM}\n\nThe tools:\n{catalogue}"}, {"role": "user", "content": user}]


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def _match_output(given: str, fields: list[str]) -> str | None:
    """The returned field a proposal names (exact path, else the one path ending in that name), or None."""
    given = given.strip()
    if given in fields:
        return given
    ending = [f for f in fields if f == given or f.endswith("." + given) or f.endswith("]." + given)]
    ending.sort(key=lambda f: (f.count("."), len(f)))
    return ending[0] if ending else None


def check_proposals(
    library: ToolLibrary, target: Tool, proposals: Any, facts: SchemaInference, report: LlmInferenceReport
) -> list[tuple[str, LinkReason]]:
    """The rule check: the ``(source, reason)`` pairs of the proposals that name a real tool, a real parameter
    of ``target`` and (when checkable) a real returned field; the rest go to ``report.rejected``."""
    by_norm = {_norm(t.id): t.id for t in library.tools}
    params = {name for name, *_ in _parameters(target)}
    items = proposals.get("links") if isinstance(proposals, dict) else None
    if not isinstance(items, list):
        items = []
    kept: list[tuple[str, LinkReason]] = []
    seen: set[tuple[str, str | None]] = set()
    for item in items:
        report.proposed += 1
        if not isinstance(item, dict):
            _reject(report, target, {}, "not an object")
            continue
        src_raw, param = item.get("source"), item.get("parameter")
        output = _text(item.get("output"))
        why = _text(item.get("reason"))
        source = by_norm.get(_norm(src_raw)) if isinstance(src_raw, str) else None
        if source is None:
            _reject(report, target, item, f"{src_raw!r} is not a tool of the library")
            continue
        if source == target.id:
            _reject(report, target, item, "a tool cannot feed itself")
            continue
        if not isinstance(param, str) or param not in params:
            _reject(report, target, item, f"{param!r} is not a parameter of {target.id!r}")
            continue
        src_facts = facts.facts[source]
        field_path: str | None = None
        if output.strip() and src_facts.has_output:
            field_path = _match_output(output, src_facts.fields)
            if field_path is None:
                _reject(report, target, item, f"{source!r} does not return {output.strip()!r}")
                continue
        key = (source, param)
        if key in seen:  # the same source and parameter again: one link, one reason
            report.repeated += 1
            continue
        seen.add(key)
        note = " ".join(why.split())[:200]
        if output.strip() and field_path is None:
            note = f"{note} (returns {output.strip()!r}, not checked: no output schema)".strip()
        kept.append((source, LinkReason(rule="llm", output=field_path, parameter=param, note=note)))
        report.kept += 1
    return kept


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _reject(report: LlmInferenceReport, target: Tool, item: dict[str, Any], why: str) -> None:
    report.dropped += 1
    report.rejected.append({"target": target.id, "source": item.get("source"), "parameter": item.get("parameter"),
                            "output": item.get("output"), "why": why})


async def infer_links_llm(library: ToolLibrary, model: Model) -> tuple[list[ToolLink], LlmInferenceReport]:
    """Links proposed by ``model`` and kept by the rule check (see the module docstring), source-major in
    library order, with the report of what was proposed, kept and dropped."""
    facts = SchemaInference(library)
    catalogue = "\n".join(_describe(t, facts) for t in library.tools)
    names = [t.id for t in library.tools]
    report = LlmInferenceReport(model=model.name)
    targets = [t for t in library.tools if _parameters(t)]

    async def ask(tool: Tool) -> list[tuple[str, LinkReason]]:
        report.calls += 1
        schema = _schema([n for n in names if n != tool.id], [n for n, *_ in _parameters(tool)])
        try:
            out = await model.generate(_messages(catalogue, tool), schema=schema, schema_name="tool_links")
        except TaskbenchError as exc:
            report.failed_calls += 1
            report.errors.append(f"{tool.id}: {exc}")
            return []
        if out.parse_error is not None or out.parsed is None:
            report.failed_calls += 1
            report.errors.append(f"{tool.id}: the answer was not JSON for the schema ({out.parse_error})")
            return []
        return check_proposals(library, tool, out.parsed, facts, report)

    answers = await asyncio.gather(*(ask(t) for t in targets))
    incoming: dict[str, list[tuple[str, LinkReason]]] = {t.id: a for t, a in zip(targets, answers, strict=True)}
    links: list[ToolLink] = []
    for a in library.tools:
        for b in library.tools:
            reasons = tuple(r for src, r in incoming.get(b.id, ()) if src == a.id)
            if reasons:
                links.append(ToolLink(source=a.id, target=b.id, type=DATA, reasons=reasons))
    return links, report


def infer_graph_llm(library: ToolLibrary, model: Model) -> tuple[ToolGraph, LlmInferenceReport]:
    """:func:`infer_links_llm` as a ``temporal`` :class:`ToolGraph` (blocks; runs on the model's loop thread)."""
    links, report = model.run_sync(infer_links_llm(library, model))
    graph = ToolGraph(nodes=list(library.tools), links=links, dependency="temporal", inferred=f"llm:{model.name}")
    return graph, report
