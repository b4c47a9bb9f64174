"""Agents that retry until the task is solved: ReAct@N and ToolLLM@N (the paper's @N baselines), and Reflexion.

- :class:`Retry` runs an agent (ReAct, DFSDT) for one trial; when the environment's checker does not call the
  trial solved, the environment is reset to the task's initial state and a fresh trial starts, at most N in
  all. The checker is an oracle here, as in the paper's @N baselines (they see whether a trial succeeded,
  never why); the trials used are reported (``attempts``) and the path rates score the last trial.
- :class:`Reflexion` (Shinn et al.): ReAct trials; after a failed one (the same binary signal) the model
  reflects on what went wrong, and the next trial's system message carries every reflection so far.

A trial that reaches the model-call cap ends the episode (no budget is left for another).
"""

from __future__ import annotations

import json
from typing import Any

from ...schema import AssistantMessage, ToolMessage, UserMessage
from ..episode import Episode, StepCap, truncate
from ..prompts import render
from .single import ReAct


class Retry:
    """``inner`` retried from a fresh environment until solved, at most ``tries`` trials."""

    def __init__(self, inner: Any, tries: int) -> None:
        self.inner = inner
        self.tries = tries

    async def run(self, ep: Episode) -> None:
        for k in range(self.tries):
            if k:
                await ep.new_attempt()
            await self.inner.run(ep)
            if ep.stop == "call_cap" or k == self.tries - 1:
                return
            if ep.answer is not None and (await ep.check()).success:
                return


REFLECTION_CHARS = 400
"""Most characters of one reflection kept in the memory."""


def transcript(messages: list[Any], limit: int) -> str:
    """A ReAct trial's actions and observations as short text (for the reflection prompt)."""
    lines: list[str] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            if m.content:
                lines.append(f"Thought: {m.content}")
            for c in m.tool_calls or []:
                lines.append(f"Action: {c.name} {json.dumps(c.arguments, ensure_ascii=False)}")
        elif isinstance(m, ToolMessage):
            lines.append(f"Observation: {truncate(str(m.content or ''), 300)}")
        elif isinstance(m, UserMessage) and lines:
            lines.append(f"Note: {m.content}")
    return truncate("\n".join(lines) or "(no action)", limit)


class Reflexion:
    """ReAct trials with self-reflection after each failed one (``tries`` trials at most)."""

    role = "reflect"

    def __init__(self, tries: int) -> None:
        self.tries = tries
        self.actor = ReAct()

    async def run(self, ep: Episode) -> None:
        memory: list[str] = []
        for k in range(self.tries):
            if k:
                await ep.new_attempt()
            messages = await self.actor.trial(ep, memory)
            if ep.stop == "call_cap" or k == self.tries - 1:
                return
            if ep.answer is not None and (await ep.check()).success:
                return
            answer, stop = ep.answer, ep.stop
            prompt = render("reflexion", task=ep.task.query, answer=answer or "",
                            transcript=transcript(messages[2:], ep.budgets.observation_chars))
            try:
                turn = await ep.generate(self.role, [UserMessage(content=prompt)],
                                         max_tokens=ep.budgets.review_tokens)
            except StepCap:  # no budget left for another trial: the failed trial stands
                ep.stop = stop
                return
            if turn.ok and turn.text.strip():
                memory.append(truncate(turn.text.strip(), REFLECTION_CHARS))
                ep.count("reflections")


__all__ = ["REFLECTION_CHARS", "Reflexion", "Retry", "transcript"]
