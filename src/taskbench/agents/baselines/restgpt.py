"""RestGPT (Song et al.): a planner, an API selector, a caller and a response parser, coarse to fine.

Per step, until the planner answers or the step cap:

- **planner** (role ``planner``): the task and what the earlier steps found -> the next sub-task in natural
  language, or the final answer (a JSON object under :func:`planner_schema`);
- **API selector** (``selector``): the sub-task and the offered tools (one line each) -> the tool to use (an
  ``enum`` of the offered tools);
- **caller** (``caller``): the sub-task, the earlier results and the selected tool alone (its schema as a native
  tool definition) -> the call with its arguments; the environment executes it;
- **parser** (``parser``): the sub-task and the tool's documented response shape (never the response itself,
  as RestGPT's parser writes code from the schema) -> Python that reads ``response`` and sets ``result``; it
  runs in the sandbox with the response in a file. When that code fails or gives nothing, the parser reads the
  response (the structure-aware view of :mod:`taskbench.agents.observe`) and states what it found (RestGPT's
  fallback from code to reading).

A failed call or a failed parse goes back to the planner as that step's result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...schema import ToolResult, UserMessage
from .. import tooldocs
from ..episode import Episode, StepCap, truncate
from ..prompts import CODE_STOP, extract_code, render

RESPONSE_FILE = "response.json"
LOAD_RESPONSE = f"import json\nwith open({RESPONSE_FILE!r}, encoding='utf-8') as _f:\n    response = json.load(_f)\n"
"""What the parser's code starts with: the response as the variable ``response``."""


def planner_schema() -> dict[str, Any]:
    """The planner's answer: a thought, then the next sub-task or the final answer (an object at the top, as
    OpenAI-style structured output wants)."""
    step = {"type": "object", "properties": {"step": {"type": "string", "maxLength": 200}},
            "required": ["step"], "additionalProperties": False}
    final = {"type": "object", "properties": {"final_answer": {"type": "string", "maxLength": 300}},
             "required": ["final_answer"], "additionalProperties": False}
    return {"type": "object", "properties": {"thought": {"type": "string", "maxLength": 160},
                                             "action": {"anyOf": [step, final]}},
            "required": ["thought", "action"], "additionalProperties": False}


def selector_schema(tools: list[str]) -> dict[str, Any]:
    """The API selector's answer: one of the offered tools."""
    return {"type": "object", "properties": {"tool": {"type": "string", "enum": list(dict.fromkeys(tools))}},
            "required": ["tool"], "additionalProperties": False}


def read_plan(parsed: Any) -> tuple[str | None, str | None, str | None]:
    """(sub-task, final answer, why unusable) from a planner answer (``{"thought", "action": {...}}`` as the
    schema asks, or the action's keys flat)."""
    if isinstance(parsed, dict) and isinstance(parsed.get("action"), dict):
        parsed = parsed["action"]
    if isinstance(parsed, dict):
        if isinstance(parsed.get("final_answer"), str) and parsed["final_answer"].strip():
            return None, parsed["final_answer"].strip(), None
        if isinstance(parsed.get("step"), str) and parsed["step"].strip():
            return parsed["step"].strip(), None, None
    return None, None, "expected {\"step\": ...} or {\"final_answer\": ...}"


@dataclass
class Found:
    """One step as the planner sees it later."""

    n: int
    step: str
    tool: str
    result: str
    ok: bool


class RestGPT:
    """Planner, API selector, caller and parser (see the module docstring)."""

    async def run(self, ep: Episode) -> None:
        found: list[Found] = []
        note = ""
        try:
            for _ in range(ep.budgets.max_steps):
                turn = await ep.generate("planner", [UserMessage(content=render(
                    "restgpt_planner", task=ep.task.query, tools=tooldocs.tool_list(ep.tools), found=found,
                    note=note))], max_tokens=ep.budgets.plan_tokens, schema=planner_schema(),
                    check=lambda parsed: read_plan(parsed)[2])
                step, answer, _ = read_plan(turn.parsed) if turn.ok else (None, None, turn.error)
                note = "" if turn.ok else f"Your last answer could not be used ({turn.error}). Answer with one short JSON object."
                if answer is not None:
                    ep.final(answer, "planner")
                    return
                if step is None:
                    continue
                found.append(await self.step(ep, len(found) + 1, step, found))
            ep.stop = "step_cap"
        except StepCap:
            pass

    async def step(self, ep: Episode, n: int, step: str, found: list[Found]) -> Found:
        """Select, call and parse for one sub-task."""
        if not ep.tools:
            return Found(n=n, step=step, tool="", result="no tools are offered", ok=False)
        pick = await ep.generate("selector", [UserMessage(content=render(
            "restgpt_selector", step=step, tools=tooldocs.tool_list(ep.tools)))],
            max_tokens=64, schema=selector_schema(ep.tool_names))
        name = pick.parsed.get("tool") if pick.ok and isinstance(pick.parsed, dict) else None
        spec = next((t for t in ep.tools if t.name == name), None)
        if spec is None:
            return Found(n=n, step=step, tool="", result=f"the API selector chose no offered tool ({pick.error})",
                         ok=False)
        turn = await ep.generate("caller", [UserMessage(content=render(
            "restgpt_caller", task=ep.task.query, step=step, tool=spec.name, found=found))],
            max_tokens=ep.budgets.act_tokens, tools=[spec], tool_choice="required")
        calls = [c for c in turn.tool_calls if c.name == spec.name] if turn.ok else []
        if not calls:
            return Found(n=n, step=step, tool=spec.name, result=f"the caller made no call to {spec.name}", ok=False)
        result = await ep.call_tool(calls[0], "caller")
        if result.error is not None:
            return Found(n=n, step=step, tool=spec.name, result=truncate(f"error: {result.error}",
                                                                         ep.budgets.result_chars), ok=False)
        return Found(n=n, step=step, tool=spec.name, result=await self.parse(ep, step, spec, result), ok=True)

    async def parse(self, ep: Episode, step: str, spec: Any, result: ToolResult) -> str:
        """What the response says for the sub-task: the parser's code on it, else the parser reading it."""
        raw = result.content if isinstance(result.content, str) else json.dumps(result.content, ensure_ascii=False)
        turn = await ep.generate("parser", [UserMessage(content=render(
            "restgpt_parser", step=step, tool=spec.name, shape=tooldocs.returns(spec)))],
            max_tokens=ep.budgets.code_tokens, stop=CODE_STOP)
        code = extract_code(turn.text) if turn.ok else None
        if code is not None:
            ep.read_whole(result)  # the parser's code is given the whole response
            outcome = await ep.run_code(LOAD_RESPONSE + code, role="parser", files={RESPONSE_FILE: raw})
            if outcome.ok:
                return outcome.observation
        read = await ep.generate("parser", [UserMessage(content=render(
            "restgpt_read", step=step, response=ep.observe(result)))],
            max_tokens=ep.budgets.answer_tokens)
        return truncate(read.text.strip(), ep.budgets.result_chars) if read.ok and read.text.strip() \
            else "the response could not be parsed"


__all__ = ["Found", "LOAD_RESPONSE", "RESPONSE_FILE", "RestGPT", "planner_schema", "read_plan", "selector_schema"]
