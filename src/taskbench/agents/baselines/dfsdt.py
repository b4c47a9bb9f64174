"""ToolLLM's depth-first search-based decision tree (DFSDT), over ReAct steps with native tool calls.

A node is the conversation so far; expanding it is one model call that picks an action (a tool call, the
``final_answer``, or ``give_up_and_restart``). A child whose every call failed (the tool's error) is a dead
end, as is a give-up; the search then backtracks and expands the parent again, telling the model which
actions its siblings took and that it must choose a different one (ToolLLM's diversity prompt). A subtree that
finds no answer counts as a failed sibling too. The search stops at the first ``final_answer``.

Bounds: at most :data:`WIDTH` children per node, depth ``max_steps``, at most ``NODES_PER_STEP * max_steps``
expansions, and the episode's model-call cap. Calls made on abandoned branches are part of the trajectory (the
environment served them), so the path rates count every branch's calls.
"""

from __future__ import annotations

import json
from typing import Any

from ...schema import AssistantMessage, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ..episode import Episode, StepCap, truncate
from ..prompts import render
from .single import FINAL_ANSWER, offered_with_final

WIDTH = 2
"""Children tried per node before backtracking to its parent."""

NODES_PER_STEP = 3
"""Expansions allowed per step of the step cap (the search's budget)."""

GIVE_UP = ToolSpec(
    name="give_up_and_restart",
    description="Give up this line of actions and go back to try a different one. Call it when the current "
                "results cannot lead to the answer.",
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
)
"""ToolLLM's way to prune a branch."""


class DFSDT:
    """Depth-first search over ReAct steps (see the module docstring)."""

    def __init__(self, role: str = "dfsdt") -> None:
        self.role = role
        self.expansions = 0
        self.backtracks = 0

    async def run(self, ep: Episode) -> None:
        self.expansions = self.backtracks = 0
        messages: list[Any] = [SystemMessage(content=render("react") + "\n\n" + render("dfsdt")),
                               UserMessage(content=ep.task.query)]
        try:
            solved = await self.expand(ep, messages, 0)
        except StepCap:
            return
        if not solved:
            ep.stop = "step_cap"

    async def expand(self, ep: Episode, messages: list[Any], depth: int) -> bool:
        """Search below the node ``messages``; True once an answer is given."""
        if depth >= ep.budgets.max_steps:
            return False
        offered = offered_with_final(ep, GIVE_UP)
        tried: list[str] = []
        for _ in range(WIDTH):
            if self.expansions >= NODES_PER_STEP * ep.budgets.max_steps:
                return False
            self.expansions += 1
            ep.count("dfsdt_expansions")
            prompt = list(messages)
            if tried:
                prompt.append(UserMessage(content=render("dfsdt_diversify", tried=tried)))
            turn = await ep.generate(self.role, prompt, max_tokens=ep.budgets.act_tokens, tools=offered,
                                     tool_choice="required")
            if not turn.ok:
                tried.append("(an answer cut off at the token limit)")
                continue
            finals = [c for c in turn.tool_calls if c.name == FINAL_ANSWER.name and c.ok]
            if finals or not turn.tool_calls:
                answer = finals[0].arguments.get("answer") if finals else turn.text
                ep.final(str(answer or "").strip(), self.role)
                return True
            if any(c.name == GIVE_UP.name for c in turn.tool_calls):
                self.backtracks += 1
                ep.count("dfsdt_give_ups")
                return False  # this node is pruned: the parent tries another child
            child = [*messages, AssistantMessage(content=turn.text or None, tool_calls=turn.tool_calls)]
            failed = True
            shown = []
            for call in turn.tool_calls:
                result = await ep.call_tool(call, self.role)
                failed = failed and result.error is not None
                child.append(ToolMessage(call_id=call.id, name=call.name, content=ep.observe(result)))
                shown.append(f"{call.name} {json.dumps(call.arguments, ensure_ascii=False)}"
                             + (f" -> error: {truncate(result.error, 120)}" if result.error else ""))
            if not failed and await self.expand(ep, child, depth + 1):
                return True
            self.backtracks += 1
            ep.count("dfsdt_backtracks")
            tried.append("; ".join(shown))
        return False


__all__ = ["DFSDT", "GIVE_UP", "NODES_PER_STEP", "WIDTH"]
