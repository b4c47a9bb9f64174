"""Prompts of the data engine, rendered from the template files in ``engine/templates/`` (pure).

The templates are data (Jinja2), our wording of the TaskBench paper's method:

``back_instruct.j2``  one call: subgraph -> task steps, user request, invocation graph, ``check_by_teacher``
                      (also the ``no-edges`` baseline: the same prompt without the edges)
``request.j2``        two-stage, stage 1 (equation 1): subgraph -> user request
``graph.j2``          two-stage, stage 2 (equation 2): subgraph + request -> steps and invocation graph
``self_instruct.j2``  the Self-Instruct baseline: the whole library, the model picks the tools
``critic.j2``         the separate LLM critic (``--critic-model``)
``judge.j2``          the judge of ``taskbench data judge`` (naturalness, complexity, alignment)

A tool is shown as one JSON line: id, description and, per dependency kind, its input/output types and the
names of its arguments (resource) or its parameters with type, description and whether they are required
(temporal). An edge is ``A -> B``, with the graph's reasons when the link records some.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from .._templates import jinja_environment
from ..errors import ConfigError
from ..schema import SampledSubgraph, Tool, ToolLibrary

__all__ = [
    "critic_messages",
    "edge_lines",
    "generation_messages",
    "judge_messages",
    "render",
    "tool_line",
]


@lru_cache(maxsize=1)
def _environment() -> Any:
    return jinja_environment(package="taskbench.engine", what="data-engine template")


def render(name: str, **variables: Any) -> str:
    """Render the bundled template ``name`` (e.g. ``"back_instruct.j2"``)."""
    return str(_environment().get_template(name).render(**variables)).strip()


def tool_line(tool: Tool, dependency: str) -> str:
    """One tool as the data-engine prompts show it (compact JSON)."""
    entry: dict[str, Any] = {"id": tool.id, "desc": tool.desc}
    if dependency == "resource":
        entry["input-type"] = list(tool.input_types or [])
        entry["output-type"] = list(tool.output_types or [])
        entry["arguments"] = tool.argument_names()
    else:
        entry["parameters"] = [
            {"name": p.name, "type": p.type, "desc": p.desc, "required": p.required} for p in tool.parameters or []
        ]
    return json.dumps(entry, ensure_ascii=False)


def edge_lines(entry: SampledSubgraph) -> list[str]:
    """The sampled links as ``A -> B`` lines (plus the graph's reasons for a link, when it records any)."""
    out = []
    for link in entry.links:
        line = f"{link.source} -> {link.target}"
        reasons = getattr(link, "reasons", None) or []
        texts = [r.text() if hasattr(r, "text") else str(r) for r in reasons]
        texts = [t for t in texts if t]
        if texts:
            line += f" (because: {'; '.join(texts[:2])})"
        out.append(line)
    return out


def _subgraph_tools(entry: SampledSubgraph, library: ToolLibrary) -> list[Tool]:
    tools = []
    for name in entry.nodes:
        tool = library.get(name)
        if tool is None:
            raise ConfigError(f"plan entry {entry.index} names {name!r}, which is not a tool of the library")
        tools.append(tool)
    return tools


def generation_messages(
    method: str,
    entry: SampledSubgraph,
    library: ToolLibrary,
    *,
    seed: int,
    check: bool = True,
    stage: int = 1,
    user_request: str | None = None,
    guided: bool = False,
    state: str | None = None,
) -> list[dict[str, str]]:
    """The chat messages of one generation call (a single user turn, as the reference engine sends).

    ``method``: back-instruct | no-edges | two-stage (``stage`` 1: the request; 2: the graph, given
    ``user_request``) | self-instruct. ``guided``: the answer schema fixes the nodes (in
    :func:`~taskbench.engine.guided.guided_order`, the order the tools are listed in) and the links; the prompt
    says so. ``state``: what the executable environment holds (:meth:`taskbench.envs.Environment.read_state`),
    shown with the rule to use only what exists; None shows nothing.
    """
    dep = library.dependency
    if guided:
        from .guided import guided_order

        entry = entry.model_copy(update={"nodes": guided_order(entry)})
    common: dict[str, Any] = {"dependency": dep, "seed": seed, "check": check, "n_nodes": entry.size,
                              "guided": guided, "state": state}
    if method == "self-instruct":
        nodes = [tool_line(t, dep) for t in library.tools]
        text = render("self_instruct.j2", nodes=nodes, mode=entry.mode, **common)
    else:
        nodes = [tool_line(t, dep) for t in _subgraph_tools(entry, library)]
        edges = None if method == "no-edges" else edge_lines(entry)
        if method == "two-stage":
            if stage == 1:
                text = render("request.j2", nodes=nodes, edges=edges, **common)
            else:
                if user_request is None:
                    raise ValueError("two-stage stage 2 needs the user request of stage 1")
                text = render("graph.j2", nodes=nodes, edges=edges, user_request=user_request, **common)
        elif method in ("back-instruct", "no-edges"):
            text = render("back_instruct.j2", nodes=nodes, edges=edges, **common)
        else:
            raise ConfigError(f"unknown generation method {method!r}")
    return [{"role": "user", "content": text}]


def _invocation_text(nodes: Sequence[Any], links: Sequence[Any]) -> str:
    return json.dumps(
        {
            "nodes": [n.model_dump(mode="json") if hasattr(n, "model_dump") else n for n in nodes],
            "links": [lk.model_dump(mode="json") if hasattr(lk, "model_dump") else lk for lk in links],
        },
        ensure_ascii=False,
    )


def critic_messages(
    sample: Any, library: ToolLibrary, entry: SampledSubgraph | None, state: str | None = None
) -> list[dict[str, str]]:
    """The separate critic's prompt for a generated :class:`~taskbench.schema.Sample` (``entry`` None: no
    sampled subgraph, as for self-instruct: the tools the sample uses are shown instead)."""
    dep = library.dependency
    if entry is not None:
        nodes = [tool_line(t, dep) for t in _subgraph_tools(entry, library)]
        edges: list[str] | None = edge_lines(entry)
    else:
        used = [library.get(name) for name in dict.fromkeys(sample.tool_names)]
        nodes = [tool_line(t, dep) for t in used if t is not None]
        edges = None
    text = render(
        "critic.j2",
        dependency=dep,
        nodes=nodes,
        edges=edges,
        user_request=sample.user_request,
        task_steps=list(sample.task_steps),
        invocation=_invocation_text(sample.task_nodes, sample.links_for(dep)),
        state=state,
    )
    return [{"role": "user", "content": text}]


def judge_messages(sample: Any, library: ToolLibrary) -> list[dict[str, str]]:
    """The judge's prompt for one sample."""
    dep = library.dependency
    used = [library.get(name) for name in dict.fromkeys(sample.tool_names)]
    text = render(
        "judge.j2",
        tools=[tool_line(t, dep) for t in used if t is not None],
        user_request=sample.user_request,
        task_steps=list(sample.task_steps),
        invocation=_invocation_text(sample.task_nodes, sample.links_for(dep)),
    )
    return [{"role": "user", "content": text}]
