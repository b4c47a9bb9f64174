"""The agents' prompts (Jinja2 data files in ``agents/prompts/``), their output schemas, and parsing of their
answers. Everything here is pure: the same inputs give the same text.

Structured output keeps small models usable: a plan and a review verdict are JSON documents under a schema
(:func:`plan_schema`, :func:`review_schema`) with every string and array bounded (``maxLength``,
``maxItems``), so a constrained decoder cannot loop until the token limit, and the tool name is an ``enum`` of
the offered tools plus ``FINISH``. Code is free text in a fenced block (:func:`extract_code`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._templates import package_text, text_environment
from ..errors import ConfigError
from ..schema import ToolSpec

FINISH = "FINISH"
"""The grounding agent's tool name for "the task is answered"."""

PLAN_PROBLEMS = ("none", "vague", "missing_arguments", "nonexistent_tool", "no_progress", "premature_answer")
EXEC_PROBLEMS = ("faulty_code", "tool_error", "empty_result", "wrong_result")
PROBLEMS = PLAN_PROBLEMS + EXEC_PROBLEMS
"""What a review can name ("none" when it accepts)."""


@lru_cache(maxsize=32)
def _template(name: str) -> Any:
    try:
        return text_environment().from_string(package_text("taskbench.agents", "prompts", f"{name}.j2"))
    except ConfigError:
        raise ConfigError(f"no agent prompt {name!r} in taskbench/agents/prompts") from None


def render(name: str, **variables: Any) -> str:
    """The prompt file ``prompts/<name>.j2`` rendered with ``variables`` (surrounding blank lines trimmed)."""
    text = _template(name).render(**variables)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# ------------------------------------------------------------------------------------------------ schemas


def _text(limit: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": limit}


def plan_schema(tools: Sequence[str | ToolSpec], argument: dict[str, Any] | None = None,
                per_tool: dict[str, dict[str, Any] | None] | None = None) -> dict[str, Any]:
    """JSON Schema of a grounding agent's plan over the offered ``tools``: a thought, then an action that is
    either a call (a tool, its arguments, the target) or FINISH with the answer (two shapes, so a call step
    spends no tokens on an answer and the answer has room). Given tool specs, a call is one shape per tool
    whose argument names are an enum of that tool's parameters (a model cannot put a value into a name);
    given names alone, argument names are free text. ``argument``: the schema of one argument for every call;
    ``per_tool``: the schema of one argument per tool (grounded arguments, :mod:`taskbench.agents.grounded`:
    that tool's own names, id-like values from what was seen), a tool mapped to None not offered at all (it needs
    an id nothing has given yet)."""
    names = [t if isinstance(t, str) else t.name for t in tools]
    specs = {t.name: t for t in tools if not isinstance(t, str)}
    if per_tool is not None:
        offered_now = [n for n in dict.fromkeys(names) if n != FINISH and per_tool.get(n) is not None]

        def grounded_call(name: str) -> dict[str, Any]:
            item = per_tool[name]
            assert item is not None
            limit = max(1, min(6, len(_parameter_names(specs[name])) if name in specs else 6))
            raw = specs[name].parameters.get("required") if name in specs else None
            least = min(limit, len(raw)) if isinstance(raw, list) else 0
            return {"type": "object",
                    "properties": {"tool": {"type": "string", "enum": [name]},
                                   "arguments": {"type": "array", "items": item, "minItems": least,
                                                 "maxItems": limit},
                                   "target": _text(120)},
                    "required": ["tool", "arguments", "target"], "additionalProperties": False}

        finish = {"type": "object", "properties": {"tool": {"type": "string", "enum": [FINISH]},
                                                   "answer": _text(300)},
                  "required": ["tool", "answer"], "additionalProperties": False}
        return {"type": "object",
                "properties": {"thought": _text(160),
                               "action": {"anyOf": [*(grounded_call(n) for n in offered_now), finish]}},
                "required": ["thought", "action"], "additionalProperties": False}

    def call_of(offered: list[str], params: list[str] | None) -> dict[str, Any]:
        name: dict[str, Any] = {"type": "string", "enum": params} if params else _text(40)
        one = argument if argument is not None else {
            "type": "object", "properties": {"name": name, "value": _text(120)},
            "required": ["name", "value"], "additionalProperties": False}
        arguments: dict[str, Any] = {"type": "array", "items": one, "maxItems": min(6, len(params))
                                     if params is not None else 6}
        return {
            "type": "object",
            "properties": {"tool": {"type": "string", "enum": offered}, "arguments": arguments,
                           "target": _text(120)},
            "required": ["tool", "arguments", "target"],
            "additionalProperties": False,
        }

    offered = [t for t in dict.fromkeys(names) if t != FINISH]
    calls: list[dict[str, Any]]
    if argument is None and specs and all(t in specs for t in offered):
        calls = [call_of([t], _parameter_names(specs[t])) for t in offered]
    else:
        calls = [call_of(offered, None)]
    done = {
        "type": "object",
        "properties": {"tool": {"type": "string", "enum": [FINISH]}, "answer": _text(300)},
        "required": ["tool", "answer"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"thought": _text(160), "action": {"anyOf": [*calls, done] if offered else [done]}},
        "required": ["thought", "action"],
        "additionalProperties": False,
    }


def _parameter_names(spec: ToolSpec) -> list[str]:
    props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
    return [str(k) for k in props] if isinstance(props, dict) else []


def review_schema() -> dict[str, Any]:
    """JSON Schema of a review verdict."""
    return {
        "type": "object",
        "properties": {
            "problem": {"type": "string", "enum": list(PROBLEMS)},
            "feedback": _text(200),
            "route": {"type": "string", "enum": ["grounding", "execution"]},
            "verdict": {"type": "string", "enum": ["accept", "revise"]},
        },
        "required": ["problem", "feedback", "route", "verdict"],
        "additionalProperties": False,
    }


# ------------------------------------------------------------------------------------------------ parsing


class Plan(BaseModel):
    """One step the grounding agent proposes (or the final answer, ``tool == FINISH``)."""

    model_config = ConfigDict(extra="ignore")

    thought: str = Field(default="", description="Why this step.")
    tool: str = Field(description="A tool name, or FINISH.")
    arguments: dict[str, str] = Field(default_factory=dict, description="Argument name -> value (as text).")
    target: str = Field(default="", description="What to extract from the result.")
    answer: str = Field(default="", description="The final answer (FINISH only).")

    @field_validator("arguments", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        # [{"name", "value"}] pairs (the schema's shape) or a plain object; values kept as text
        if isinstance(value, list):
            out: dict[str, str] = {}
            for item in value:
                if isinstance(item, dict) and str(item.get("name", "")).strip():
                    out[str(item["name"]).strip()] = _as_text(item.get("value"))
            return out
        if isinstance(value, dict):
            return {str(k): _as_text(v) for k, v in value.items()}
        return {} if value in (None, "") else value

    @field_validator("thought", "target", "answer", "tool", mode="before")
    @classmethod
    def _str(cls, value: Any) -> Any:
        return "" if value is None else value if isinstance(value, str) else _as_text(value)

    @property
    def finish(self) -> bool:
        """True when the plan is the final answer."""
        return self.tool.strip().upper() == FINISH

    def describe(self) -> str:
        """The plan as one line for prompts: ``GET /search/person (query="Tom Hanks") -> target: the id``."""
        if self.finish:
            return f"FINISH with the answer: {self.answer}"
        text = self.tool + (f" ({format_arguments(self.arguments)})" if self.arguments else "")
        return text + (f" -> target: {self.target}" if self.target else "")


class Verdict(BaseModel):
    """A review agent's verdict."""

    model_config = ConfigDict(extra="ignore")

    problem: str = Field(default="none", description="One of PROBLEMS.")
    feedback: str = Field(default="", description="What to change.")
    route: str = Field(default="grounding", description="grounding | execution.")
    verdict: str = Field(default="accept", description="accept | revise.")

    @field_validator("problem", "feedback", "route", "verdict", mode="before")
    @classmethod
    def _str(cls, value: Any) -> Any:
        return "" if value is None else str(value).strip()

    @property
    def named_problem(self) -> bool:
        """True when the verdict names a problem (anything but "none")."""
        return self.problem.lower() not in ("", "none")

    @property
    def accept(self) -> bool:
        """True when the work is accepted: no problem named and no verdict of revise. A named problem is a
        revision whatever the verdict says (small models name a problem, then write "accept")."""
        return not self.named_problem and self.verdict.lower() != "revise"

    def fault_route(self) -> str | None:
        """The agent the named problem belongs to: a plan problem to grounding, faulty code to execution;
        None for problems that can be either (a tool error, an empty or wrong result)."""
        problem = self.problem.lower()
        if problem in PLAN_PROBLEMS and problem != "none":
            return "grounding"
        if problem == "faulty_code":
            return "execution"
        return None


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def format_arguments(arguments: dict[str, Any]) -> str:
    """``query="Tom Hanks", page=1`` (values as JSON, strings quoted)."""
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())


def parse_plan(value: Any) -> tuple[Plan | None, str | None]:
    """A :class:`Plan` from parsed JSON (``{"thought", "action": {...}}`` as the schema asks, or the same keys
    flat), or (None, why not)."""
    if not isinstance(value, dict):
        return None, "the answer is not a JSON object"
    action = value.get("action")
    if isinstance(action, dict):
        value = {**{k: v for k, v in value.items() if k != "action"}, **action}
    try:
        plan = Plan.model_validate(value)
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        return None, f"the plan does not fit its schema: {where}: {errors[0]['msg'] if errors else exc}"
    if not plan.tool.strip():
        return None, "the plan names no tool"
    return plan, None


def parse_verdict(value: Any) -> tuple[Verdict | None, str | None]:
    """A :class:`Verdict` from parsed JSON, or (None, why not)."""
    if not isinstance(value, dict):
        return None, "the answer is not a JSON object"
    try:
        return Verdict.model_validate(value), None
    except ValidationError as exc:  # pragma: no cover - every field is coerced to text
        return None, f"the verdict does not fit its schema: {exc.errors()[0].get('msg', exc)}"


CODE_STOP = ("\n```\n",)
"""Stop sequence of code answers: the closing fence of the first block (prose after the code costs tokens);
an opening fence after prose (``\n```python``) does not match it."""

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.S | re.I)
_FINAL = re.compile(r"final\s*answer\s*[:：]\s*", re.I)


def extract_code(text: str | None) -> str | None:
    """The Python code of an answer: the first fenced block (an unclosed one to the end of the text), else
    the whole text when it looks like code; None when there is none."""
    if not text or not text.strip():
        return None
    m = _FENCE.search(text)
    if m is not None:
        code = m.group(1).strip("\n")
        return code if code.strip() else None
    stripped = text.strip()
    if _FINAL.match(stripped):
        return None
    looks_like_code = re.search(r"^\s*(result\s*=|import |from |def |for |print\()", stripped, re.M)
    return stripped if looks_like_code else None


def final_answer(text: str | None) -> str | None:
    """The text after "Final answer:" (CodeAct-style agents), else None."""
    if not text:
        return None
    m = _FINAL.search(text)
    return text[m.end():].strip() if m is not None else None


__all__ = [
    "EXEC_PROBLEMS",
    "CODE_STOP",
    "FINISH",
    "PLAN_PROBLEMS",
    "PROBLEMS",
    "Plan",
    "Verdict",
    "extract_code",
    "final_answer",
    "format_arguments",
    "parse_plan",
    "parse_verdict",
    "plan_schema",
    "render",
    "review_schema",
]
