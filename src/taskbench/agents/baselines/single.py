"""The single-agent baselines: ReAct and the CodeAct-style code agent.

- :class:`ReAct`: one agent with native tool calls (``Model.generate(tools=..., tool_choice="required")``):
  its text is the thought (where the backend writes text beside a call), its tool call the action, the tool's
  result the observation (the raw JSON when it fits the budget, else the structure-aware digest that keeps every
  record's identifying fields: :func:`taskbench.agents.observe.observation`); the ``final_answer`` tool ends the
  episode.
- :class:`CodeAgent`: one CodeAct-style agent: each turn is a Python block that runs in the sandbox (it sees
  what it printed, the ``result`` variable and the error) or the final answer ("Final answer: ...").
"""

from __future__ import annotations

from typing import Any

from ...schema import AssistantMessage, SystemMessage, ToolMessage, ToolSpec, UserMessage
from .. import tooldocs
from ..episode import Episode, StepCap, truncate
from ..prompts import CODE_STOP, extract_code, final_answer, render

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

    def __init__(self, role: str = "react") -> None:
        self.role = role

    async def run(self, ep: Episode) -> None:
        await self.trial(ep)

    async def trial(self, ep: Episode, reflections: list[str] | None = None) -> list[Any]:
        """One trial until the answer or a cap (``ep.stop`` says which); returns the messages, for Reflexion's
        self-reflection. ``reflections``: what earlier failed trials taught (Reflexion's memory)."""
        system = render("react")
        if reflections:
            system += "\n\n" + render("reflexion_memory", reflections=reflections)
        messages: list[Any] = [SystemMessage(content=system), UserMessage(content=ep.task.query)]
        offered = offered_with_final(ep)
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
                    return messages
                messages.append(AssistantMessage(content=turn.text or None, tool_calls=turn.tool_calls))
                for call in turn.tool_calls:
                    result = await ep.call_tool(call, self.role)
                    messages.append(ToolMessage(call_id=call.id, name=call.name, content=ep.observe(result)))
            ep.stop = "step_cap"
        except StepCap:
            pass
        return messages


def offered_with_final(ep: Episode, *extra: ToolSpec) -> list[ToolSpec]:
    """The offered tools, then ``final_answer`` (unless a tool of that name is offered) and ``extra``."""
    out = [*ep.tools, FINAL_ANSWER] if FINAL_ANSWER.name not in ep.tool_names else list(ep.tools)
    return out + [t for t in extra if t.name not in ep.tool_names]


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


__all__ = ["CUT_OFF", "FINAL_ANSWER", "CodeAgent", "ReAct", "code_tool_doc", "offered_with_final"]
