"""The baselines, on the same models, tools, environment and sandbox as ConAgents.

- :class:`ReAct`: one agent with native tool calls (``Model.generate(tools=..., tool_choice="required")``):
  its text is the thought (where the backend writes text beside a call), its tool call the action, the tool's
  result (raw JSON, bounded) the observation; the ``final_answer`` tool ends the episode.
- :class:`CodeAgent`: one CodeAct-style agent: each turn is a Python block that runs in the sandbox (it sees
  what it printed, the ``result`` variable and the error) or the final answer ("Final answer: ...").
- :class:`PlanExecute`: the predictor's one-shot TaskBench invocation graph (its prompt, its schema, its parser:
  :mod:`taskbench.predict`), then each node executed in order by the execution agent (code in the sandbox,
  shown the earlier steps' results so it can fill references such as ``<node-0>``), then one call for the
  answer. No step is reviewed or replanned.
"""

from __future__ import annotations

import re
from typing import Any

from ..schema import AssistantMessage, SystemMessage, ToolLibrary, ToolMessage, ToolSpec, UserMessage
from . import tooldocs
from .conagents import ConAgents, Step, step_view
from .config import AgentSpec
from .episode import Episode, StepCap, truncate
from .prompts import CODE_STOP, Plan, extract_code, final_answer, render

CUT_OFF = "Your answer was cut off at the token limit. Answer again, shorter."


FINAL_ANSWER = ToolSpec(
    name="final_answer",
    description="Give the user the final answer to the task. Call it once you know the answer.",
    parameters={"type": "object", "properties": {"answer": {"type": "string", "maxLength": 400,
                                                            "description": "The answer, in a sentence or two."}},
                "required": ["answer"], "additionalProperties": False},
)
"""ReAct's way to finish: a tool, so that every turn is a call (``tool_choice="required"``), as tool-calling
agents do (smolagents' ``final_answer``); small models asked to choose between a call and prose write prose."""


class ReAct:
    """Thought, action (a native tool call), observation, until the ``final_answer`` call."""

    role = "react"

    async def run(self, ep: Episode) -> None:
        messages: list[Any] = [SystemMessage(content=render("react")), UserMessage(content=ep.task.query)]
        offered = [*ep.tools, FINAL_ANSWER] if FINAL_ANSWER.name not in ep.tool_names else list(ep.tools)
        try:
            for _ in range(ep.budgets.max_steps):
                turn = await ep.generate(self.role, messages, max_tokens=ep.budgets.act_tokens, tools=offered,
                                         tool_choice="required")
                if not turn.ok:
                    messages += [AssistantMessage(content=turn.text or "(cut off)"), UserMessage(content=CUT_OFF)]
                    continue
                finals = [c for c in turn.tool_calls if c.name == FINAL_ANSWER.name and c.ok]
                if finals or not turn.tool_calls:  # a backend that answers in text anyway: that is the answer
                    answer = finals[0].arguments.get("answer") if finals else turn.text
                    ep.final(str(answer or "").strip(), self.role)
                    return
                messages.append(AssistantMessage(content=turn.text or None, tool_calls=turn.tool_calls))
                for call in turn.tool_calls:
                    result = await ep.call_tool(call, self.role)
                    messages.append(ToolMessage(call_id=call.id, name=call.name,
                                                content=truncate(result.text(), ep.budgets.observation_chars)))
            ep.stop = "step_cap"
        except StepCap:
            pass


def code_tool_doc(spec: Any, api_name: str) -> str:
    """One tool for the code agent: signature, first sentence, the shape of its response (shallow)."""
    return (f"{tooldocs.signature(spec, api_name)}\n    {tooldocs.first_sentence(spec.description)}\n"
            f"    Returns: {_shallow_returns(spec)}")


def _shallow_returns(spec: Any) -> str:
    if spec.output_schema:
        return tooldocs.shape(spec.output_schema, depth=2, max_keys=8)
    if spec.http is not None and spec.http.response_schema:
        return tooldocs.shape(spec.http.response_schema, depth=2, max_keys=8)
    if spec.http is not None and spec.http.response_example is not None:
        return tooldocs.example_shape(spec.http.response_example, depth=2, max_keys=8)
    return tooldocs.returns(spec)


class CodeAgent:
    """One agent that acts by writing code (CodeAct-style), in the same sandbox as the execution agent."""

    role = "code"

    async def run(self, ep: Episode) -> None:
        docs = "\n".join(code_tool_doc(t, ep.api[t.name]) for t in ep.tools)
        messages: list[Any] = [SystemMessage(content=render("code", tools=docs)), UserMessage(content=ep.task.query)]
        try:
            for _ in range(ep.budgets.max_steps):
                turn = await ep.generate(self.role, messages, max_tokens=ep.budgets.code_tokens, stop=CODE_STOP)
                if not turn.ok:
                    messages += [AssistantMessage(content=turn.text or "(cut off)"), UserMessage(content=CUT_OFF)]
                    continue
                code = extract_code(turn.text)
                if code is None:
                    answer = final_answer(turn.text)
                    ep.final(answer if answer is not None else turn.text.strip(), self.role)
                    return
                outcome = await ep.run_code(code, role=self.role)
                shown = outcome.run.feedback() if outcome.run is not None else outcome.observation
                messages += [AssistantMessage(content=turn.text),
                             UserMessage(content="Output:\n" + truncate(shown, ep.budgets.observation_chars))]
            ep.stop = "step_cap"
        except StepCap:
            pass


def library_for(ep: Episode) -> ToolLibrary:
    """The offered tools as a :class:`ToolLibrary` for the predictor: the environment's own library kind
    (TaskBench domains: resource or temporal), else temporal (named parameters, e.g. REST operations)."""
    from ..graph.loaders import parameters_from_schema
    from ..schema import Tool

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
        from ..llm.schemas import task_graph_schema
        from ..predict.parse import make_prediction
        from ..predict.prompts import build_messages
        from ..schema import TaskArgument, TaskGraph, graph_from_result

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


def make_agent(spec: AgentSpec) -> Any:
    """The agent object for ``spec`` (anything with ``async run(episode)``)."""
    if spec.base.startswith("conagents"):
        return ConAgents(spec)
    return {"react": ReAct, "code": CodeAgent, "plan-execute": PlanExecute}[spec.base]()


__all__ = ["FINAL_ANSWER", "CodeAgent", "PlanExecute", "ReAct", "code_tool_doc", "fill_reference", "library_for", "make_agent"]
