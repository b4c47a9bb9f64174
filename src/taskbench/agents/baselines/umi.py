"""alpha-UMi (Shen et al., "Small LLMs are weak tool learners: a multi-LLM agent"): a planner, a caller and
a summariser, each its own role (and, with ``--role-model``-style configuration, its own model).

Per step, until the planner hands over to the summariser or the step cap:

- **planner** (role ``planner``): the task and the history of calls and observations -> a rationale and who
  acts next: ``caller``, ``summarizer`` (the task can be answered) or ``give_up`` (a JSON object under
  :func:`planner_schema`);
- **caller** (``caller``): the task, the history and the planner's rationale -> one tool call (native tool
  calls over the offered tools); the environment executes it and its result (as :meth:`Episode.observe`
  shows it) joins the history;
- **summarizer** (``summarizer``): the task and the history -> the final answer (also after a give-up, which
  it answers as well as the history allows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...schema import UserMessage
from .. import tooldocs
from ..episode import Episode, StepCap
from ..prompts import render

NEXT = ("caller", "summarizer", "give_up")


def planner_schema() -> dict[str, Any]:
    """The planner's answer: a rationale, then who acts next."""
    return {"type": "object",
            "properties": {"rationale": {"type": "string", "maxLength": 200},
                           "next": {"type": "string", "enum": list(NEXT)}},
            "required": ["rationale", "next"], "additionalProperties": False}


@dataclass
class Entry:
    """One call in the history."""

    n: int
    rationale: str
    action: str
    observation: str


class AlphaUMi:
    """Planner, caller and summariser (see the module docstring)."""

    async def run(self, ep: Episode) -> None:
        history: list[Entry] = []
        tools = tooldocs.tool_list(ep.tools)
        try:
            for _ in range(ep.budgets.max_steps):
                turn = await ep.generate("planner", [UserMessage(content=render(
                    "umi_planner", task=ep.task.query, tools=tools, history=history))],
                    max_tokens=ep.budgets.plan_tokens, schema=planner_schema())
                if not turn.ok or not isinstance(turn.parsed, dict):
                    continue
                rationale, who = str(turn.parsed.get("rationale", "")), turn.parsed.get("next")
                if who != "caller" or not ep.tools:
                    await self.summarize(ep, history)
                    return
                call_turn = await ep.generate("caller", [UserMessage(content=render(
                    "umi_caller", task=ep.task.query, history=history, rationale=rationale))],
                    max_tokens=ep.budgets.act_tokens, tools=ep.tools, tool_choice="required")
                if not call_turn.ok or not call_turn.tool_calls:
                    history.append(Entry(n=len(history) + 1, rationale=rationale, action="(no call)",
                                         observation="the caller made no tool call"))
                    continue
                call = call_turn.tool_calls[0]
                result = await ep.call_tool(call, "caller")
                history.append(Entry(n=len(history) + 1, rationale=rationale,
                                     action=f"{call.name} {json.dumps(call.arguments, ensure_ascii=False)}",
                                     observation=ep.observe(result)))
            ep.stop = "step_cap"
        except StepCap:
            pass

    async def summarize(self, ep: Episode, history: list[Entry]) -> None:
        turn = await ep.generate("summarizer", [UserMessage(content=render(
            "umi_summarizer", task=ep.task.query, history=history))], max_tokens=ep.budgets.answer_tokens)
        if turn.ok:
            ep.final(turn.text.strip(), "summarizer")
        else:
            ep.stop = "no_answer"


__all__ = ["NEXT", "AlphaUMi", "Entry", "planner_schema"]
