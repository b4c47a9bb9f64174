"""The TaskBench domains as environments: ``taskbench-huggingface``, ``taskbench-multimedia``,
``taskbench-dailylifeapis``.

Tools are the library's tools as :class:`~taskbench.schema.ToolSpec` (``Tool.spec()``); tasks are the
dataset's samples (query = the user request, gold path = the gold nodes' tools in execution order).

How an agent passes artifacts (resource domains). Every successful call returns
``{"artifact": "image:3f2a9c1b2d4e", "type": "image", "content": "text-to-image-3f2a9c1b2d4e.png",
"provenance": "Text-to-Image('a red car')"}``. An argument may be

- an artifact id this episode handed out (``"image:3f2a9c1b2d4e"``);
- ``"<node-j>"``: the output of the j-th successful call of the episode (counted from 0), as in TaskBench graphs;
- the ``content`` of an artifact this episode produced (its file name, or its text copied verbatim);
- anything else is a literal the user supplied: a file name from the request (``example.jpg``), a URL, or text.

An artifact of the wrong type for a media argument (an audio where an image is expected) is an error the
agent can read; a literal of an unexpected kind is accepted and noted in the result (``notes``). In the
daily-life domain arguments are the tool's named parameters; a value may name an earlier result the same
way (its artifact id or ``<node-j>``), and each call changes the seeded world (see
:mod:`.dailylife`).

:meth:`TaskBenchEnvironment.check` runs the task's gold graph and compares: the episode succeeded when it
produced every gold final artifact, provenance-equal (and, for daily life, reached the same end state), and did
not find them by trying everything: it may produce at most as many outputs the gold graph does not as the gold
graph has calls (at least :data:`EXTRA_OUTPUTS`). Every artifact is a tool's output by construction, so the
provenance rule of the other environments holds here by itself; the final answer's text is not read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import ConfigError, InputError
from ...schema import AgentTask, CheckResult, Sample, ToolCall, ToolResult, ToolSpec
from ..base import Environment
from .artifacts import Artifact, make_literal, normalise_type
from .dailylife import QUERY_TOOLS, DailyLifeWorld
from .execute import DomainRuntime, GraphExecution, compare_executions

DOMAINS = ("huggingface", "multimedia", "dailylifeapis")
EXTRA_OUTPUTS = 2
"""The fewest outputs beyond the gold graph's an episode may produce and succeed (see
:meth:`TaskBenchEnvironment.extra_outputs`)."""
_ARTIFACT_ID = re.compile(r"^[a-z]+:[0-9a-f]{12}$")
_NODE = re.compile(r"^<node-(\d+)>$")
_COMPATIBLE = {("text", "url"), ("url", "text")}


def _load(domain: str, data: str | Path | None) -> tuple[Path, Any, list[Sample], list[str]]:
    from ...bundled import path as bundled_path
    from ...dataset.layout import TOOL_FILE, _iter_records, find_data_file, parse_sample
    from ...graph.loaders import load_tool_library

    root = Path(data) if data is not None else bundled_path(domain)
    if not (root / TOOL_FILE).is_file():
        raise InputError(f"no {TOOL_FILE} in the dataset directory", path=root)
    library = load_tool_library(root / TOOL_FILE, None, name=domain)
    samples: list[Sample] = []
    problems: list[str] = []
    data_file = find_data_file(root)
    if data_file is not None:
        seen: set[str] = set()
        for line, record in _iter_records(data_file):
            try:
                sample = parse_sample(record, path=data_file, line=line)
            except InputError as exc:  # a broken record is reported, never the end of the load
                problems.append(str(exc))
                continue
            if sample.id in seen:
                problems.append(f"{data_file}:{line}: duplicate sample id {sample.id!r} (skipped)")
                continue
            seen.add(sample.id)
            samples.append(sample)
    return root, library, samples, problems


class TaskBenchEnvironment(Environment):
    """One TaskBench domain, executable (see the module docstring).

    ``domain``: huggingface | multimedia | dailylifeapis (the bundled dataset), or any name with ``data`` =
    a dataset directory (``tool_desc.json`` plus ``data.json`` or ``gold_sample.jsonl``).
    ``commutative``: tool names whose inputs may come in any order (default: :data:`COMMUTATIVE` of the
    domain)."""

    def __init__(self, domain: str = "multimedia", data: str | Path | None = None,
                 commutative: list[str] | None = None) -> None:
        super().__init__()
        if data is None and domain not in DOMAINS:
            raise ConfigError(f"unknown TaskBench domain {domain!r} (bundled: {', '.join(DOMAINS)}; or pass data=DIR)")
        self.domain = domain
        self.name = f"taskbench-{domain}"  # type: ignore[misc]
        self.root, library, self.samples, self.problems = _load(domain, data)
        self.runtime = DomainRuntime(library, commutative)
        self.library = library
        self._specs = library.specs()
        self._by_id = {s.id: s for s in self.samples}
        self._gold: dict[tuple[str, int], GraphExecution] = {}
        self._new_episode(0)

    # ------------------------------------------------------------------------------------------ tools

    def tools(self) -> list[ToolSpec]:
        return list(self._specs)

    def documentation(self, name: str) -> str:
        text = super().documentation(name)
        spec = self.tool(name)
        if spec is not None and spec.input_types is not None:
            ins = ", ".join(spec.input_types) or "nothing"
            outs = ", ".join(spec.output_types or []) or "a result"
            text += (f"\nTakes: {ins}. Gives: {outs}. Pass an artifact id from an earlier result, '<node-j>' "
                     "(the j-th result, from 0), or a literal: a file name or URL from the request, or text.")
        return text

    def tasks(self) -> list[AgentTask]:
        out = []
        for s in self.samples:
            gold = self.gold_execution(s, 0)
            answer: dict[str, Any] = {"final": [gold.artifacts[d].expr for d in gold.final]}
            if gold.end_state is not None:  # daily life: the records the world should end up with
                answer["state"] = gold.end_state.get("logs", {})
            out.append(AgentTask(
                id=s.id, query=s.user_request, gold_path=[s.task_nodes[i].task for i in gold.order],
                answer=answer, env=self.name,
                meta={"type": s.type, "n_tools": len(s.task_nodes), "notes": list(gold.notes)},
            ))
        return out

    def gold_execution(self, sample: Sample, seed: int | None = None) -> GraphExecution:
        """The gold graph of ``sample`` executed (cached per seed)."""
        seed = self.seed if seed is None else seed
        key = (sample.id, seed)
        if key not in self._gold:
            self._gold[key] = self.runtime.execute(sample, seed=seed)
        return self._gold[key]

    # ------------------------------------------------------------------------------------------ episode

    def _new_episode(self, seed: int) -> None:
        self._store: dict[str, Artifact] = {}
        self._outputs: list[Artifact] = []
        self._consumed: set[str] = set()
        self._world = DailyLifeWorld(seed, self.runtime.types) if not self.runtime.resource else None

    async def _reset(self, seed: int, task: AgentTask | None) -> None:
        self._new_episode(seed)

    def _resolve(self, value: Any, where: str) -> Artifact | str | Any:
        """An argument value as an artifact of this episode, or the value itself (a literal)."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if _ARTIFACT_ID.match(text):
            if text in self._store:
                return self._store[text]
            known = ", ".join(list(self._store)[-8:]) or "none yet"
            raise _CallError(f"{where}: no artifact {text!r} in this episode (artifacts so far: {known})")
        m = _NODE.match(text)
        if m:
            j = int(m.group(1))
            if j >= len(self._outputs):
                raise _CallError(f"{where}: {text} names result {j}, but only {len(self._outputs)} call(s) "
                                 "have produced results so far (counted from 0)")
            return self._outputs[j]
        for art in reversed(self._outputs):
            if art.content == value or art.content == text:
                return art
        return value

    async def _execute(self, call: ToolCall) -> ToolResult:
        try:
            if self.runtime.resource:
                content = self._call_resource(call)
            else:
                content = self._call_temporal(call)
        except _CallError as exc:
            return ToolResult(call_id=call.id, name=call.name, error=str(exc))
        return ToolResult(call_id=call.id, name=call.name, content=content)

    def _call_resource(self, call: ToolCall) -> dict[str, Any]:
        tool = self.library.get(call.name)
        assert tool is not None
        names = tool.argument_names()
        kinds = [normalise_type(t) for t in tool.input_types or []]
        args = dict(call.arguments)
        unknown = [k for k in args if k not in names]
        if unknown and len(args) == len(names) and not any(k in names for k in args):
            args = dict(zip(names, args.values(), strict=True))  # wrong names, right count: take them in order
            unknown = []
        if unknown:
            raise _CallError(f"{call.name}: unknown argument(s) {', '.join(map(repr, unknown))}; it takes "
                             + ", ".join(f"{n} ({k})" for n, k in zip(names, kinds, strict=True)))
        missing = [n for n in names if n not in args]
        if missing:
            raise _CallError(f"{call.name}: missing argument(s) {', '.join(map(repr, missing))}")
        inputs: list[Artifact] = []
        notes: list[str] = []
        for name, kind in zip(names, kinds, strict=True):
            value = self._resolve(args[name], f"{call.name}.{name}")
            if isinstance(value, Artifact):
                if value.type != kind and (value.type, kind) not in _COMPATIBLE:
                    raise _CallError(f"{call.name}.{name} expects {kind}; {value.id} is {value.type}")
                inputs.append(value)
            else:
                art = make_literal(value)
                if art.type != kind and (art.type, kind) not in _COMPATIBLE:
                    notes.append(f"{name}: {art.content!r} taken as {kind} (it looks like {art.type})")
                inputs.append(art)
        outputs = self.runtime.call_resource(call.name, inputs)
        return self._record(inputs, outputs, notes)

    def _call_temporal(self, call: ToolCall) -> dict[str, Any]:
        tool = self.library.get(call.name)
        assert tool is not None and self._world is not None
        params = {p.name: p for p in tool.parameters or []}
        unknown = [k for k in call.arguments if k not in params]
        if unknown:
            raise _CallError(f"{call.name}: unknown parameter(s) {', '.join(map(repr, unknown))}; it takes "
                             + ", ".join(f"{p.name} ({p.type})" for p in params.values()))
        missing = [n for n, p in params.items() if p.required and n not in call.arguments]
        if missing:
            raise _CallError(f"{call.name}: missing parameter(s) {', '.join(map(repr, missing))}")
        named = {k: self._resolve(v, f"{call.name}.{k}") for k, v in call.arguments.items()}
        out, _ = self.runtime.call_temporal(call.name, named, self._world)
        inputs = [v for v in named.values() if isinstance(v, Artifact)]
        return self._record(inputs, [out], [])

    def _record(self, inputs: list[Artifact], outputs: list[Artifact], notes: list[str]) -> dict[str, Any]:
        for art in inputs:
            self._store.setdefault(art.id, art)
            self._consumed.add(art.digest)
        for art in outputs:
            self._store[art.id] = art
        self._outputs.append(outputs[0])
        result = outputs[0].public()
        if not self.runtime.resource:
            import json

            result["content"] = json.loads(outputs[0].content)
        if len(outputs) > 1:
            result["outputs"] = [a.public() for a in outputs]
        if notes:
            result["notes"] = notes
        return result

    # ------------------------------------------------------------------------------------------ checking

    def episode_execution(self) -> GraphExecution:
        """What this episode's calls produced, in the form :func:`compare_executions` reads."""
        run = GraphExecution(dependency="resource" if self.runtime.resource else "temporal", seed=self.seed)
        for art in self._store.values():
            run.artifacts.setdefault(art.digest, art)
        produced = [a for a in self._store.values() if not a.is_literal]
        run.produced = [a.digest for a in produced]
        if self.runtime.resource:
            run.final = [a.digest for a in produced if a.digest not in self._consumed]
        else:
            run.final = [a.digest for a in produced if a.tool in QUERY_TOOLS]
            assert self._world is not None
            run.end_state = self._world.end_state()
        return run

    async def check(self, task: AgentTask, answer: str | None) -> CheckResult:
        sample = self._by_id.get(task.id)
        calls = [c.name for c in self._calls]
        if sample is None:
            return CheckResult(success=False, reason=f"task {task.id!r} is not a sample of {self.name}",
                               calls=calls, gold_path=list(task.gold_path))
        gold = self.gold_execution(sample)
        run = self.episode_execution()
        check = compare_executions(gold, run)
        gold_outputs = set(gold.produced)
        wasted = len({d for d in run.produced if d not in gold_outputs})
        allowed = self.extra_outputs(gold)
        success, reason = check.success, check.reason
        if success and wasted > allowed:
            success = False
            reason = (f"the episode produced {wasted} outputs the gold graph does not (at most {allowed}): the gold "
                      "artifacts were among many tried, not found")
        details = check.model_dump(mode="json")
        details.update(success=success, wasted_outputs=wasted, allowed_extra_outputs=allowed)
        return CheckResult(success=success, reason=reason, calls=calls,
                           gold_path=[sample.task_nodes[i].task for i in gold.order], details=details)

    @staticmethod
    def extra_outputs(gold: GraphExecution) -> int:
        """How many outputs beyond the gold graph's an episode may produce and still succeed: one per gold call,
        at least :data:`EXTRA_OUTPUTS` (a wrong tool tried and corrected, an intermediate redone), so that
        calling every tool on every input - up to 1,000 calls from one code run - is no solution."""
        return max(EXTRA_OUTPUTS, len(gold.produced))


class _CallError(Exception):
    """A bad call: becomes the ToolResult's error."""


def huggingface(**options: Any) -> TaskBenchEnvironment:
    """The ``taskbench-huggingface`` environment."""
    return TaskBenchEnvironment("huggingface", **options)


def multimedia(**options: Any) -> TaskBenchEnvironment:
    """The ``taskbench-multimedia`` environment."""
    return TaskBenchEnvironment("multimedia", **options)


def dailylifeapis(**options: Any) -> TaskBenchEnvironment:
    """The ``taskbench-dailylifeapis`` environment."""
    return TaskBenchEnvironment("dailylifeapis", **options)


__all__ = ["DOMAINS", "EXTRA_OUTPUTS", "TaskBenchEnvironment", "dailylifeapis", "huggingface", "multimedia"]
