"""Execute TaskBench task graphs on typed artifacts (resource domains) or a seeded world (temporal domains),
and compare a predicted execution with the gold one.

The flow::

    TaskGraph --resolve--> per node: tool + argument tokens (literal | node reference | missing)
              --order-->   topological order (references; explicit links in temporal domains)
              --run-->     GraphExecution: every artifact, the final ones, the end state, every quirk met
    gold run + predicted run --compare_executions--> ExecutionCheck (success, exact, recall, why)

Real data is messy and none of it stops a run; each quirk is kept in ``GraphExecution.notes``:

- ``<node-j>`` counted from 0 is the convention; graphs whose references only make sense counted from 1
  (``<node-1>`` for the first node: the v1 gold data does this) are read that way, decided per graph by which
  reading gives in-range, non-self references that agree best with the graph's links;
- ``<output_of_Tool_Name>``, ``<Tool Name>``, ``tool_name_result`` and references embedded in text name
  another node's output;
- dangling references become a *missing* artifact; unknown tools still run (as opaque functions, so a
  prediction that repeats them repeats their outputs); type mismatches, wrong arity, unknown, missing and
  repeated parameters, link endpoints that are not nodes, and cycles are noted and run anyway;
- arguments may be bare strings, numbers, ``{"name", "value"}`` pairs, a whole argument list as one string.

Success (:func:`compare_executions`): resource domains - every final artifact of the gold execution (outputs
no other node consumes) is produced by the predicted execution, provenance-equal (same tools on the same
inputs; argument order is ignored for commutative tools). Temporal domains - the predicted end state equals
the gold end state and every gold information result (weather, news, search) is produced too. ``exact`` also
asks that the prediction's final artifacts be no more than the gold's.
"""

from __future__ import annotations

import heapq
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field, JsonValue

from ...schema import NODE_REF, TaskArgument, TaskGraph, TaskNode, ToolLibrary
from .artifacts import Artifact, as_text, make_literal, make_missing, make_output, normalise_type
from .dailylife import EFFECTS, QUERY_TOOLS, DailyLifeWorld, normalise_value, state_diff

COMMUTATIVE: dict[str, frozenset[str]] = {
    "huggingface": frozenset({"Sentence Similarity"}),
    "multimedia": frozenset({"Image Stitcher"}),
    "dailylifeapis": frozenset(),
}
"""Tools whose inputs may come in any order, per domain. Sentence Similarity is symmetric; Image Stitcher makes
a collage of its two images. Not commutative: Audio Splicer (joins end to end), Image-to-Video (a slideshow
in order), Image Style Transfer and Question Answering (the inputs play different roles). Tools with named
parameters (temporal domains) never depend on argument order."""

_TOOL_REF = re.compile(r"^<\s*(?:output[ _]of[ _])?(.+?)(?:[ _](?:output|result))?\s*>$", re.IGNORECASE)
_RESULT_REF = re.compile(r"^(.+?)[ _](?:result|output)$", re.IGNORECASE)
_COMPATIBLE = {("text", "url"), ("url", "text")}


class NodeRun(BaseModel):
    """One executed node."""

    index: int = Field(description="Position of the node in task_nodes.")
    tool: str = Field(description="Tool name as the graph gives it.")
    inputs: list[str] = Field(default_factory=list, description="Artifact ids of its inputs, in order.")
    outputs: list[str] = Field(default_factory=list, description="Artifact ids of its outputs.")


class GraphExecution(BaseModel):
    """What running one task graph produced."""

    dependency: str = Field(description="resource | temporal.")
    seed: int = Field(default=0, description="Seed of the world (temporal domains).")
    order: list[int] = Field(default_factory=list, description="Node indices in execution order.")
    nodes: list[NodeRun] = Field(default_factory=list, description="Executed nodes, in task_nodes order.")
    artifacts: dict[str, Artifact] = Field(default_factory=dict, description="Digest -> every artifact met.")
    produced: list[str] = Field(default_factory=list, description="Digests of every output, in execution order.")
    final: list[str] = Field(default_factory=list, description="Digests of the final artifacts.")
    end_state: dict[str, JsonValue] | None = Field(default=None, description="End state (temporal domains).")
    notes: list[str] = Field(default_factory=list, description="Quirks met and how they were handled.")

    def final_artifacts(self) -> list[Artifact]:
        """The final artifacts, in order."""
        return [self.artifacts[d] for d in self.final]


class ExecutionCheck(BaseModel):
    """A predicted execution compared with the gold one."""

    success: bool = Field(description="The prediction produced the gold's final artifacts (and end state).")
    exact: bool = Field(description="Success, and no final artifact beyond the gold's.")
    recall: float = Field(description="Share of gold final artifacts (and state records) the prediction produced.")
    missing: list[str] = Field(default_factory=list, description="Provenance of gold finals not produced.")
    extra: list[str] = Field(default_factory=list, description="Provenance of predicted finals the gold lacks.")
    state_equal: bool | None = Field(default=None, description="End states equal (temporal domains).")
    state_diff: list[str] = Field(default_factory=list, description="Differences of the end states.")
    reason: str = Field(default="", description="Why, in a sentence.")


# ------------------------------------------------------------------------------------------ resolving


class _Ref:
    __slots__ = ("kind", "value", "raw")

    def __init__(self, kind: str, value: Any, raw: str) -> None:
        self.kind, self.value, self.raw = kind, value, raw  # kind: node | tool | literal


def _tool_key(text: str) -> str:
    return re.sub(r"[\s_]+", " ", text).strip().casefold()


def _token(value: Any, names: Mapping[str, list[int]], notes: list[str], where: str) -> _Ref:
    if not isinstance(value, str):
        return _Ref("literal", value, as_text(value))
    text = value.strip()
    m = NODE_REF.fullmatch(text)
    if m:
        return _Ref("node", int(m.group(1)), text)
    m = _TOOL_REF.match(text) or _RESULT_REF.match(text)
    if m and _tool_key(m.group(1)) in names:
        notes.append(f"{where}: {text!r} read as the output of {m.group(1)!r}")
        return _Ref("tool", _tool_key(m.group(1)), text)
    m = NODE_REF.search(text)
    if m:
        notes.append(f"{where}: reference inside text {text!r} read as <node-{m.group(1)}>")
        return _Ref("node", int(m.group(1)), text)
    return _Ref("literal", value, text)


def _choose_reading(refs: list[tuple[int, int]], names: list[str], links: set[tuple[str, str]]) -> int:
    """0 (``<node-0>`` = first node) or 1 (``<node-1>`` = first node) for this graph's references."""
    if not refs:
        return 0
    scores = []
    for base in (0, 1):
        ok = sum(1 for i, j in refs if 0 <= j - base < len(names) and j - base != i)
        agree = sum(1 for i, j in refs if 0 <= j - base < len(names) and (names[j - base], names[i]) in links)
        scores.append((ok == len(refs), ok, agree, -base))
    return 0 if scores[0] >= scores[1] else 1


class DomainRuntime:
    """The executable form of one tool library (see the module docstring)."""

    def __init__(self, library: ToolLibrary, commutative: Iterable[str] | None = None) -> None:
        self.library = library
        self.resource = library.dependency == "resource"
        name = library.name or ""
        self.commutative = frozenset(commutative) if commutative is not None else COMMUTATIVE.get(name, frozenset())
        self.types = {t.id: {p.name: p.type for p in t.parameters or []} for t in library.tools}

    # ------------------------------------------------------------------------------------ one tool call

    def call_resource(self, tool: str, inputs: list[Artifact], notes: list[str] | None = None,
                      where: str = "") -> list[Artifact]:
        """Outputs of calling a resource tool on ``inputs`` (type problems are noted, never raised)."""
        notes = notes if notes is not None else []
        where = where or tool
        spec = self.library.get(tool)
        if spec is None:
            notes.append(f"{where}: unknown tool {tool!r} (run as an opaque function)")
            return [make_output(tool, 0, "unknown", inputs)]
        expected = [normalise_type(t) for t in spec.input_types or []]
        if len(inputs) != len(expected):
            notes.append(f"{where}: {len(inputs)} argument(s) given, {tool!r} takes {len(expected)} ({', '.join(expected)})")
        for k, (art, kind) in enumerate(zip(inputs, expected, strict=False)):
            if art.type not in (kind, "missing") and (art.type, kind) not in _COMPATIBLE:
                notes.append(f"{where}: argument {k + 1} is {art.type} ({art.expr}), {tool!r} expects {kind}")
        out_types = [normalise_type(t) for t in spec.output_types or []] or ["none"]
        commutative = tool in self.commutative
        return [make_output(tool, k, kind, inputs, commutative=commutative) for k, kind in enumerate(out_types)]

    def call_temporal(self, tool: str, named: Mapping[str, Any], world: DailyLifeWorld,
                      notes: list[str] | None = None, where: str = "") -> tuple[Artifact, bool]:
        """The result artifact of calling a tool with named arguments in ``world`` (and whether the state
        changed). Unknown, missing and repeated parameters are noted, not raised."""
        notes = notes if notes is not None else []
        where = where or tool
        spec = self.library.get(tool)
        if spec is None:
            notes.append(f"{where}: unknown tool {tool!r} (its call is recorded in the log other_calls)")
        elif spec.parameters is not None:
            known = {p.name for p in spec.parameters}
            for name in named:
                if name not in known:
                    notes.append(f"{where}: {tool!r} has no parameter {name!r}")
            for p in spec.parameters:
                if p.required and p.name not in named:
                    notes.append(f"{where}: parameter {p.name!r} of {tool!r} is missing")
        result, changed = world.apply(tool, named)
        kind = "result" if spec is not None else "unknown"
        content = json.dumps(result, ensure_ascii=False, sort_keys=True)
        types = self.types.get(tool, {})
        canonical = [(k, v if isinstance(v, Artifact) else normalise_value(v, types.get(k, "string")))
                     for k, v in named.items()]
        return make_output(tool, 0, kind, [], canonical, content=content), changed

    # ------------------------------------------------------------------------------------ one graph

    def plan(self, graph: TaskGraph) -> Plan:
        """Resolve ``graph``: each argument to a literal or a node, the reading of ``<node-j>``, the order."""
        nodes = graph.task_nodes
        names = [n.task for n in nodes]
        by_name: dict[str, list[int]] = {}
        for i, tool_name in enumerate(names):
            by_name.setdefault(_tool_key(tool_name), []).append(i)
        notes: list[str] = []
        # 1. tokens per node
        tokens: list[list[tuple[str | None, _Ref]]] = []
        for i, node in enumerate(nodes):
            where = f"node {i} ({node.task})"
            row: list[tuple[str | None, _Ref]] = []
            spec = self.library.get(node.task)
            params = [p.name for p in spec.parameters or []] if spec is not None else []
            for k, arg in enumerate(node.arguments):
                if isinstance(arg, dict) and arg:  # {"value": x} without a name, or {"image": x}
                    if "value" in arg:
                        name_, arg = arg.get("name"), arg["value"]
                    elif len(arg) == 1:
                        name_, arg = next(iter(arg.items()))
                    else:
                        name_ = None
                    notes.append(f"{where}: argument {k + 1} given as an object; read as {as_text(arg)!r}")
                    if isinstance(name_, str) and not self.resource:
                        row.append((name_, _token(arg, by_name, notes, where)))
                        continue
                if isinstance(arg, TaskArgument):
                    row.append((arg.name, _token(arg.value, by_name, notes, where)))
                else:
                    name: str | None = None
                    if not self.resource:
                        name = params[k] if k < len(params) else f"arg{k + 1}"
                        notes.append(f"{where}: unnamed argument {as_text(arg)!r} taken as {name!r}")
                    row.append((name, _token(arg, by_name, notes, where)))
            tokens.append(row)
        # 2. which way <node-j> counts, then the edges
        links = {(lk.source, lk.target) for lk in graph.task_links}
        refs = [(i, t.value) for i, row in enumerate(tokens) for _, t in row if t.kind == "node"]
        base = _choose_reading(refs, names, links)
        if base == 1:
            notes.append("references read as counted from 1 (<node-1> = the first node)")
        targets: list[list[int | None]] = []
        edges: set[tuple[int, int]] = set()
        for i, row in enumerate(tokens):
            got: list[int | None] = []
            for _, t in row:
                j: int | None = None
                if t.kind == "node":
                    j = t.value - base
                    if not 0 <= j < len(nodes) or j == i:
                        notes.append(f"node {i} ({names[i]}): {t.raw} does not name another node (kept as missing)")
                        j = None
                elif t.kind == "tool":
                    cands = [c for c in by_name[t.value] if c != i]
                    before = [c for c in cands if c < i]
                    j = before[-1] if before else (cands[0] if cands else None)
                    if j is None:
                        notes.append(f"node {i} ({names[i]}): {t.raw} names only the node itself (kept as missing)")
                if j is not None:
                    edges.add((j, i))
                got.append(j)
            targets.append(got)
        if not self.resource:
            for lk in graph.task_links:
                src, dst = by_name.get(_tool_key(lk.source)), by_name.get(_tool_key(lk.target))
                if not src or not dst:
                    bad = lk.source if not src else lk.target
                    notes.append(f"link {lk.source!r} -> {lk.target!r}: {bad!r} is not a node of the graph (ignored)")
                    continue
                if src[0] != dst[0]:
                    edges.add((src[0], dst[0]))
        order = _topological(len(nodes), edges, notes)
        return Plan(names, tokens, targets, order, notes)

    def normalise(self, graph: TaskGraph) -> TaskGraph:
        """``graph`` in canonical form: ``<node-j>`` counted from 0 for every reference (whatever form it had),
        arguments unwrapped (named ``{"name", "value"}`` pairs in temporal domains), links as executed.
        Executing it gives the same artifacts as executing ``graph`` (dangling references aside)."""
        plan = self.plan(graph)
        nodes = []
        for i, name in enumerate(plan.names):
            args: list[Any] = []
            for (pname, t), j in zip(plan.tokens[i], plan.targets[i], strict=True):
                value = f"<node-{j}>" if j is not None else (t.value if t.kind == "literal" else t.raw)
                args.append(TaskArgument(name=pname, value=value) if pname is not None else value)
            nodes.append(TaskNode(task=name, arguments=args))
        out = TaskGraph(task_steps=list(graph.task_steps), task_nodes=nodes)
        out.task_links = out.reference_links() if self.resource else list(graph.task_links)
        return out

    def execute(self, graph: TaskGraph, seed: int = 0) -> GraphExecution:
        """Run every node of ``graph`` in dependency order (see the module docstring)."""
        plan = self.plan(graph)
        names, tokens, targets, notes = plan.names, plan.tokens, plan.targets, plan.notes
        run = GraphExecution(dependency="resource" if self.resource else "temporal", seed=seed, order=plan.order)
        world = DailyLifeWorld(seed, self.types) if not self.resource else None
        outputs: dict[int, list[Artifact]] = {}
        node_runs: dict[int, NodeRun] = {}
        for i in run.order:
            where = f"node {i} ({names[i]})"
            values: list[tuple[str | None, Artifact | Any]] = []
            for (name, t), j in zip(tokens[i], targets[i], strict=True):
                if t.kind == "literal":
                    values.append((name, make_literal(t.value) if self.resource else t.value))
                elif j is not None and j in outputs:
                    values.append((name, outputs[j][0]))
                else:
                    if j is not None:
                        notes.append(f"{where}: {t.raw} is not available yet (cycle; kept as missing)")
                    values.append((name, make_missing(t.raw)))
            if self.resource:
                inputs = [v for _, v in values]
                outs = self.call_resource(names[i], inputs, notes, where)
            else:
                named: dict[str, Any] = {}
                for name, v in values:
                    key = name or "arg"
                    if key in named:
                        notes.append(f"{where}: parameter {key!r} given twice (the last value is used)")
                    named[key] = v
                inputs = [v for v in named.values() if isinstance(v, Artifact)]
                assert world is not None
                outs = [self.call_temporal(names[i], named, world, notes, where)[0]]
            for art in inputs:
                run.artifacts.setdefault(art.digest, art)
            for art in outs:
                run.artifacts.setdefault(art.digest, art)
                run.produced.append(art.digest)
            outputs[i] = outs
            node_runs[i] = NodeRun(index=i, tool=names[i], inputs=[a.id for a in inputs], outputs=[a.id for a in outs])
        run.nodes = [node_runs[i] for i in sorted(node_runs)]
        if self.resource:
            consumed = {j for row in targets for j in row if j is not None}
            run.final = [a.digest for i in sorted(outputs) if i not in consumed for a in outputs[i]]
        else:
            run.final = [a.digest for i in sorted(outputs) if names[i] in QUERY_TOOLS for a in outputs[i]]
            assert world is not None
            run.end_state = world.end_state()
        run.notes = list(dict.fromkeys(notes))
        return run


class Plan:
    """A resolved graph: per node its tool, argument tokens and the node each reference names; the order."""

    __slots__ = ("names", "tokens", "targets", "order", "notes")

    def __init__(self, names: list[str], tokens: list[list[tuple[str | None, _Ref]]],
                 targets: list[list[int | None]], order: list[int], notes: list[str]) -> None:
        self.names, self.tokens, self.targets, self.order, self.notes = names, tokens, targets, order, notes


def _topological(n: int, edges: set[tuple[int, int]], notes: list[str]) -> list[int]:
    """Kahn's order, lowest index first among ready nodes; nodes on a cycle run last, in index order."""
    indegree = [0] * n
    succ: dict[int, list[int]] = {}
    for a, b in edges:
        indegree[b] += 1
        succ.setdefault(a, []).append(b)
    ready = [i for i in range(n) if indegree[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for b in succ.get(i, []):
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, b)
    if len(order) < n:
        rest = [i for i in range(n) if i not in set(order)]
        notes.append(f"nodes {rest} are on a dependency cycle (run in index order)")
        order.extend(rest)
    return order


# ----------------------------------------------------------------------------------------- comparing


def compare_executions(gold: GraphExecution, pred: GraphExecution) -> ExecutionCheck:
    """Did ``pred`` produce what ``gold`` produced? (see the module docstring)."""
    produced = set(pred.produced)
    missing = [gold.artifacts[d].expr for d in gold.final if d not in produced]
    gold_all = set(gold.produced)
    extra = [pred.artifacts[d].expr for d in pred.final if d not in gold_all]
    found = sum(1 for d in gold.final if d in produced)
    total = len(gold.final)
    state_equal: bool | None = None
    diff: list[str] = []
    if gold.dependency == "temporal":
        gs, ps = gold.end_state or {}, pred.end_state or {}
        state_equal = gs == ps
        diff = [] if state_equal else state_diff(gs, ps)
        g_recs, p_recs = _records(gs), _records(ps)
        found += sum((g_recs & p_recs).values())
        total += sum(g_recs.values())
        extra += [f"state: {d}" for d in diff if ": unexpected " in d]
    success = not missing and state_equal is not False
    exact = success and not extra
    recall = found / total if total else 1.0
    if success:
        reason = "the prediction produced every final artifact of the gold execution"
        if state_equal:
            reason += " and the same end state"
    elif missing:
        reason = f"{len(missing)} of {len(gold.final)} gold final artifact(s) not produced, e.g. {missing[0]}"
        if state_equal is False:
            reason += f"; end state differs ({diff[0] if diff else 'values'})"
    else:
        reason = f"end state differs: {diff[0] if diff else 'values differ'}"
    return ExecutionCheck(success=success, exact=exact, recall=recall, missing=missing, extra=extra,
                          state_equal=state_equal, state_diff=diff, reason=reason)


def _records(state: Mapping[str, Any]) -> Counter[str]:
    """The multiset of log records of an end state (records as canonical JSON)."""
    logs = state.get("logs")
    out: Counter[str] = Counter()
    if isinstance(logs, Mapping):
        for log in logs.values():
            if isinstance(log, list):
                out.update(json.dumps(r, sort_keys=True) for r in log)
    return out


def state_changing(tool: str) -> bool:
    """True for daily-life tools that change the world."""
    return tool in EFFECTS


__all__ = [
    "COMMUTATIVE",
    "DomainRuntime",
    "ExecutionCheck",
    "GraphExecution",
    "NodeRun",
    "compare_executions",
    "state_changing",
]
