"""Trajectories: what an agent did on one task, event by event.

A :class:`Trajectory` holds the task, the tools offered and typed events in order (model calls, tool calls and
their results, code runs, review verdicts, the final answer), then totals and the environment's verdict. On
disk it is JSON Lines, appended event by event (:class:`taskbench.dataset.TrajectoryWriter`), so a
killed run keeps what it did::

    {"record": "header", "id": ..., "task": ..., "tools": [...], ...}
    {"record": "event", "kind": "model_call", ...}
    {"record": "event", "kind": "tool_call", ...}
    ...
    {"record": "end", "status": "complete", "totals": {...}, "outcome": {...}}

A file without its ``end`` line is a trajectory that was interrupted (``status`` reads back as
``"interrupted"``). :func:`taskbench.dataset.read_trajectory` reads it back equal to what was
written.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from .chat import AssistantMessage, ChatMessage, ToolCall, ToolResult, ToolSpec
from .sample import Usage

AgentRole = str
"""Which agent acted: 'grounding', 'execution', 'review', 'react', 'code', 'planner', ..."""


class AgentTask(BaseModel):
    """One task for an agent in an environment: the query, and what solving it looks like."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(description="Task id, unique within its environment.")
    query: str = Field(description="What the user asks, in their words.")
    gold_path: list[str] = Field(
        default_factory=list, description="Tool names of the gold solution, in call order (for path metrics)."
    )
    answer: JsonValue = Field(
        default=None, description="The expected answer or end state, when the environment defines one."
    )
    env: str | None = Field(default=None, description="Name of the environment the task belongs to.")
    meta: dict[str, JsonValue] = Field(
        default_factory=dict, description="Anything else the source records (fixes made to the gold path, ...)."
    )

    @property
    def gold_tools(self) -> list[str]:
        """The distinct tools of the gold path, in first-use order."""
        return list(dict.fromkeys(self.gold_path))


class CheckResult(BaseModel):
    """An environment's verdict on one episode."""

    model_config = ConfigDict(extra="ignore")

    success: bool = Field(description="Whether the task was solved (decided by the environment, not a judge).")
    reason: str = Field(default="", description="Why, in a sentence.")
    calls: list[str] = Field(default_factory=list, description="Tool names of the calls made, in order.")
    gold_path: list[str] = Field(default_factory=list, description="The gold solution's tool names, in order.")
    details: dict[str, JsonValue] = Field(default_factory=dict, description="Checker-specific facts.")


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore")

    index: int = Field(default=0, description="Position of the event in the trajectory (0-based).")
    t: float = Field(default=0.0, description="Seconds since the trajectory started.")


class ModelCallEvent(_Event):
    """One model call by one agent."""

    kind: Literal["model_call"] = Field(default="model_call", description="Event kind.")
    role: AgentRole = Field(description="The agent that called the model.")
    model: str = Field(default="", description="'provider/model' that answered.")
    messages: list[ChatMessage] = Field(default_factory=list, description="The messages sent.")
    tools: list[str] = Field(default_factory=list, description="Names of the tools offered to this call.")
    output: AssistantMessage = Field(default_factory=AssistantMessage, description="What the model answered.")
    finish_reason: str | None = Field(default=None, description="'stop', 'length', 'tool_calls', ...")
    usage: Usage = Field(default_factory=Usage, description="Tokens and seconds of the call.")
    latency: float = Field(default=0.0, description="Seconds producing the answer took (replayed on a cache hit).")
    cached: bool = Field(default=False, description="Whether the answer came from the response cache.")
    error: str | None = Field(default=None, description="Why the call failed, if it did.")


class ToolCallEvent(_Event):
    """One tool call and what the environment answered."""

    kind: Literal["tool_call"] = Field(default="tool_call", description="Event kind.")
    role: AgentRole = Field(default="", description="The agent that made the call.")
    call: ToolCall = Field(description="The call.")
    result: ToolResult = Field(description="The result or error.")
    seconds: float = Field(default=0.0, description="Wall seconds of the call.")


class CodeError(BaseModel):
    """A structured error from running agent code, for the agent to repair."""

    model_config = ConfigDict(extra="ignore")

    type: str = Field(description="Exception type, e.g. 'KeyError', or 'LimitExceeded'.")
    message: str = Field(default="", description="The exception's message.")
    line: int | None = Field(default=None, description="Line of the agent's code where it was raised.")
    traceback: str | None = Field(default=None, description="The traceback, trimmed to the agent's own frames.")


class CodeToolCall(BaseModel):
    """One tool call agent code made, and whether the tool answered it."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="The tool called.")
    arguments: dict[str, JsonValue] = Field(default_factory=dict, description="The arguments the code passed.")
    error: str | None = Field(default=None, description="The tool's error; None when it answered.")


class CodeRunEvent(_Event):
    """One run of agent-written code in the sandbox."""

    kind: Literal["code_run"] = Field(default="code_run", description="Event kind.")
    role: AgentRole = Field(default="execution", description="The agent whose code ran.")
    code: str = Field(description="The code.")
    stdout: str = Field(default="", description="What it printed (truncated at the output limit).")
    result: JsonValue = Field(default=None, description="Value of the designated result variable.")
    error: CodeError | None = Field(default=None, description="What went wrong, if anything.")
    limit: str | None = Field(
        default=None, description="The limit that stopped it: cpu | wall | memory | processes | files | output."
    )
    tool_calls: list[str] = Field(default_factory=list, description="Tools the code called, in order.")
    calls: list[CodeToolCall] = Field(
        default_factory=list, description="The same calls with their arguments and errors (empty in trajectories "
        "written before they were kept)."
    )
    seconds: float = Field(default=0.0, description="Wall seconds of the run.")


class ReviewEvent(_Event):
    """A review agent's verdict on a plan or an execution."""

    kind: Literal["review"] = Field(default="review", description="Event kind.")
    role: AgentRole = Field(default="review", description="The reviewing agent.")
    target: Literal["plan", "execution"] = Field(description="What was reviewed.")
    verdict: Literal["accept", "revise"] = Field(description="Accept it, or send it back with feedback.")
    feedback: str = Field(default="", description="What to change.")
    route: Literal["grounding", "execution"] | None = Field(
        default=None, description="Which agent the feedback goes to (adaptive protocol: who caused the error)."
    )
    problem: str | None = Field(default=None, description="The problem the review named ('none' when accepted).")
    action: Literal["none", "revise_plan", "rewrite_code", "replan"] | None = Field(
        default=None, description="What the protocol did with the verdict: nothing, the plan revised, the code "
                                  "rewritten, or the feedback sent to the next plan (a reroute to grounding).")
    overruled: bool = Field(default=False, description="The review agent accepted an execution whose run failed; "
                            "the protocol took the failure as the verdict (the problem and route from the error).")


class FinalAnswerEvent(_Event):
    """The answer the agents gave the user."""

    kind: Literal["final_answer"] = Field(default="final_answer", description="Event kind.")
    role: AgentRole = Field(default="", description="The agent that answered.")
    answer: str = Field(default="", description="The answer.")


TrajectoryEvent = Annotated[
    ModelCallEvent | ToolCallEvent | CodeRunEvent | ReviewEvent | FinalAnswerEvent, Field(discriminator="kind")
]
"""Any trajectory event (discriminated by ``kind``)."""


class TrajectoryTotals(BaseModel):
    """Sums over a trajectory's events."""

    model_config = ConfigDict(extra="ignore")

    model_calls: int = Field(default=0, description="Model calls.")
    tool_calls: int = Field(default=0, description="Tool calls (direct, and from code runs).")
    code_runs: int = Field(default=0, description="Code runs.")
    reviews: int = Field(default=0, description="Review verdicts.")
    turns: int = Field(default=0, description="Turns: model calls by a planning or acting agent (not reviews).")
    usage: Usage = Field(default_factory=Usage, description="Tokens and model seconds over all model calls.")
    seconds: float = Field(default=0.0, description="Wall seconds of the whole episode.")


TrajectoryStatus = Literal["running", "complete", "failed", "interrupted"]


class Trajectory(BaseModel):
    """One agent episode: the task, the tools offered, the events in order, totals and the verdict."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["trajectory"] = Field(default="trajectory", description="Record kind (for run logs).")
    id: str = Field(description="Id of the task.")
    task: str = Field(description="The query the agents were given.")
    env: str | None = Field(default=None, description="Environment name.")
    agent: str | None = Field(default=None, description="Agent name, e.g. 'conagents-auto', 'react'.")
    models: dict[str, str] = Field(default_factory=dict, description="'provider/model' per agent role.")
    seed: int | None = Field(default=None, description="Seed of the episode.")
    tools: list[ToolSpec] = Field(default_factory=list, description="The tools offered.")
    gold_path: list[str] = Field(default_factory=list, description="The task's gold tool path, if known.")
    config: dict[str, JsonValue] = Field(default_factory=dict, description="Agent settings (alpha, beta, caps).")
    events: list[TrajectoryEvent] = Field(default_factory=list, description="What happened, in order.")
    status: TrajectoryStatus = Field(default="running", description="Where the episode ended.")
    error: str | None = Field(default=None, description="Why it failed, if it did.")
    answer: str | None = Field(default=None, description="The final answer, if one was given.")
    totals: TrajectoryTotals = Field(default_factory=TrajectoryTotals, description="Sums over the events.")
    outcome: CheckResult | None = Field(default=None, description="The environment's verdict.")

    def add(self, event: Any) -> Any:
        """Append ``event`` (setting its index) and return it."""
        event.index = len(self.events)
        self.events.append(event)
        return event

    def compute_totals(self, seconds: float | None = None) -> TrajectoryTotals:
        """Totals recomputed from the events (``seconds``: the episode's wall time, else the last event's t)."""
        totals = TrajectoryTotals()
        usage = Usage()
        for e in self.events:
            if isinstance(e, ModelCallEvent):
                totals.model_calls += 1
                usage = usage + e.usage
                if e.role != "review":
                    totals.turns += 1
            elif isinstance(e, ToolCallEvent):
                totals.tool_calls += 1
            elif isinstance(e, CodeRunEvent):
                totals.code_runs += 1
                totals.tool_calls += len(e.tool_calls)
            elif isinstance(e, ReviewEvent):
                totals.reviews += 1
        usage.cached = False
        totals.usage = usage
        totals.seconds = seconds if seconds is not None else (self.events[-1].t if self.events else 0.0)
        return totals

    def called_tools(self) -> list[str]:
        """Names of every tool called, in order (direct calls and calls made by code)."""
        out: list[str] = []
        for e in self.events:
            if isinstance(e, ToolCallEvent):
                out.append(e.call.name)
            elif isinstance(e, CodeRunEvent):
                out.extend(e.tool_calls)
        return out

    def header(self) -> dict[str, Any]:
        """The header line of the JSON Lines form."""
        data = self.model_dump(mode="json", include=_HEADER_FIELDS)
        return {"record": "header", **data}

    def end(self) -> dict[str, Any]:
        """The end line of the JSON Lines form."""
        return {"record": "end", **self.model_dump(mode="json", include=_END_FIELDS)}


_HEADER_FIELDS = {"kind", "id", "task", "env", "agent", "models", "seed", "tools", "gold_path", "config"}
_END_FIELDS = {"status", "error", "answer", "totals", "outcome"}


__all__ = [
    "AgentRole",
    "AgentTask",
    "CheckResult",
    "CodeError",
    "CodeRunEvent",
    "FinalAnswerEvent",
    "ModelCallEvent",
    "ReviewEvent",
    "ToolCallEvent",
    "Trajectory",
    "TrajectoryEvent",
    "TrajectoryStatus",
    "TrajectoryTotals",
]
