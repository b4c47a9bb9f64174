"""Plan then execute (Chameleon-like): the predictor's one-shot TaskBench invocation graph (its prompt, its
schema, its parser: :mod:`taskbench.predict`), then each node executed in order by the execution agent (code in
the sandbox, shown the earlier steps' results so it can fill references such as ``<node-0>``), then one call for
the answer. No step is reviewed or replanned.
"""

from __future__ import annotations

import re
from typing import Any

from ...schema import ToolLibrary, UserMessage
from .. import tooldocs
from ..conagents import ConAgents, Step, step_view
from ..config import AgentSpec
from ..episode import Episode, StepCap
from ..prompts import Plan, render


def library_for(ep: Episode) -> ToolLibrary:
    """The offered tools as a :class:`ToolLibrary` for the predictor: the environment's own library kind
    (TaskBench domains: resource or temporal), else temporal (named parameters, e.g. REST operations)."""
    from ...graph.loaders import parameters_from_schema
    from ...schema import Tool

    env_library = getattr(ep.env, "library", None)
    if isinstance(env_library, ToolLibrary):
        keep = set(ep.tool_names)
        return ToolLibrary(tools=[t for t in env_library.tools if t.id in keep], dependency=env_library.dependency,
                           name=env_library.name)
    tools = [Tool(id=s.name, desc=tooldocs.first_sentence(s.description, 200),
                  parameters=parameters_from_schema(s.parameters), input_schema=s.parameters) for s in ep.tools]
    return ToolLibrary(tools=tools, dependency="temporal", name=getattr(ep.env, "name", None))


_NODE = re.compile(r"^\s*<node-(\d+)>\s*$")


def fill_reference(value: str, done: list[tuple[str, Any]]) -> str:
    """An argument that refers to an earlier node's output (``<node-j>``, or that node's tool name, as the
    TaskBench temporal prompt writes it) replaced by what that node extracted, when that is a single value;
    anything else unchanged."""
    m = _NODE.match(value)
    index: int | None = int(m.group(1)) if m else None
    if index is None:
        index = next((i for i in range(len(done) - 1, -1, -1) if done[i][0] == value.strip()), None)
    if index is None or index >= len(done):
        return value
    result = done[index][1]
    if isinstance(result, list) and len(result) == 1:
        result = result[0]
    if isinstance(result, bool) or not isinstance(result, (str, int, float)):
        return value
    return str(result)


class PlanExecute:
    """The predictor's one-shot task graph, executed node by node, then answered."""

    role = "planner"

    async def run(self, ep: Episode) -> None:
        from ...llm.schemas import task_graph_schema
        from ...predict.parse import make_prediction
        from ...predict.prompts import build_messages
        from ...schema import TaskArgument, TaskGraph, graph_from_result

        if not ep.tools:
            ep.stop = "no_plan"
            return
        library = library_for(ep)
        prompt = build_messages(library, ep.task.query)[0]["content"]
        # nodes run in the order given, so no links are asked for (they are what small models loop on)
        schema = task_graph_schema(library, include_links=False, max_nodes=min(6, ep.budgets.max_steps),
                                   max_arguments=6, max_string_length=200)
        try:
            def read_graph(parsed: Any) -> tuple[TaskGraph | None, str | None]:
                # the predictor's parser (normalises what real model output does), then the data model
                prediction = make_prediction(ep.task.id, user_request=ep.task.query, raw=None, model=None,
                                             usage=None, parsed=parsed)
                if prediction.result is None:
                    return None, prediction.error or "no task graph in the answer"
                try:
                    graph = graph_from_result(prediction.result)
                except ValueError as exc:
                    return None, f"the graph does not fit the task graph model: {str(exc).splitlines()[0]}"
                return (graph, None) if graph.task_nodes else (None, "the graph has no nodes")

            turn = await ep.generate(self.role, [UserMessage(content=prompt)], max_tokens=ep.budgets.graph_tokens,
                                     schema=schema, check=lambda parsed: read_graph(parsed)[1])
            graph = read_graph(turn.parsed)[0] if turn.ok else None
            if graph is None:  # cut off, or not a graph: a failed turn, no plan to execute
                ep.stop = "no_plan"
                return
            executor = ConAgents(AgentSpec(base="conagents-adaptive", beta=0))  # one code turn, no review
            steps: list[Step] = []
            done: list[tuple[str, Any]] = []  # (tool, extracted result or None) per executed node
            for i, node in enumerate(graph.task_nodes[: ep.budgets.max_steps]):
                spec = next((t for t in ep.tools if t.name == node.task), None)
                names = [*tooldocs.argument_names(spec)[0], *tooldocs.argument_names(spec)[1]] if spec else []
                arguments: dict[str, str] = {}
                for j, arg in enumerate(node.arguments):
                    if isinstance(arg, TaskArgument):
                        name, value = arg.name, arg.value
                    else:
                        name, value = (names[j] if j < len(names) else f"arg{j}"), arg
                    arguments[name] = fill_reference(value if isinstance(value, str) else str(value), done)
                target = graph.task_steps[i] if i < len(graph.task_steps) else ""
                plan = Plan(tool=node.task, arguments=arguments, target=target)
                outcome, _ = await executor.execute(ep, steps, plan, earlier=steps)
                steps.append(step_view(len(steps) + 1, plan, outcome))
                done.append((node.task, outcome.run.result if outcome.ok and outcome.run is not None else None))
            answer = await ep.generate(self.role, [UserMessage(content=render("answer", task=ep.task.query,
                                                                               steps=steps))],
                                       max_tokens=ep.budgets.answer_tokens)
            if answer.ok:
                ep.final(answer.text.strip(), self.role)
            else:
                ep.stop = "no_answer"
        except StepCap:
            pass


__all__ = ["PlanExecute", "fill_reference", "library_for"]
