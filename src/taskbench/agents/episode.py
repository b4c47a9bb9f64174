"""One agent episode: the task, the environment, the offered tools, the models per role, the sandbox, and the
trajectory written event by event.

Every agent acts only through an :class:`Episode`, which records what happens as it happens
(:class:`~taskbench.dataset.TrajectoryWriter`: one line per event, so a killed run keeps it):

- :meth:`Episode.generate`: one model call of one role -> a :class:`Turn` and a ``ModelCallEvent``. A call
  that fails for good raises :class:`~taskbench.errors.ModelError` (the episode fails and is retried by the
  next run); an answer cut at the token limit or not parseable under its schema is a *failed turn*: recorded
  with its error, handed back to the agent, never raised.
- :meth:`Episode.run_code`: agent code in the sandbox -> a ``CodeRunEvent``; the code reaches only the
  offered tools.
- :meth:`Episode.call_tool`: a direct tool call (ReAct) -> a ``ToolCallEvent``; :meth:`Episode.observe`: what
  an agent that reads results in its prompt sees of one (:mod:`taskbench.agents.observe`). :attr:`Episode.views`
  keeps every successful result and what was seen of it (code sees results whole).
- :meth:`Episode.review` and :meth:`Episode.final`: a ``ReviewEvent``, a ``FinalAnswerEvent``;
- :meth:`Episode.new_attempt` and :meth:`Episode.check`: for agents that retry until solved (``react@N``,
  ``toolllm@N``, ``reflexion``): the environment back to the task's initial state for another trial, and the
  environment's verdict on the current one. :attr:`Episode.attempt_starts` records where each trial began, so
  the metrics score the last trial's calls (the one the checker judges) and report the trials used. Each trial
  is its own sample: trial 1 samples with the episode's seed and temperature; trial k > 1 with its own seed
  (:func:`~taskbench.agents.config.trial_seed`) and at least the retry temperature (``retry_temperature``,
  0.7 by default), so a later trial neither repeats trial 1 at temperature 0 nor is answered from trial 1's
  entry in the response cache (whose key holds the seed). :attr:`Episode.trials` records each trial's seed
  and temperature.

Budgets: :meth:`Episode.generate` raises :class:`StepCap` past ``max_model_calls``; the protocols count
their own steps against ``max_steps``. Records hold what it cost to produce an answer (tokens, the latency
the response cache replays), so a cached rerun writes the same figures. Whether an answer came from the cache
is a fact about the run, not the episode: it stays out of the trajectory (a resumed or concurrent run writes
the events an uninterrupted one writes) and is counted by the Model wrapper (``Model.cache_hits``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dataset.trajectories import TrajectoryWriter
from ..errors import ContextLengthError
from ..llm.base import GenerationConfig
from ..schema import (
    AgentTask,
    AssistantMessage,
    CheckResult,
    CodeError,
    CodeRunEvent,
    FinalAnswerEvent,
    ModelCallEvent,
    ReviewEvent,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    ToolSpec,
    Usage,
    python_names,
)
from .config import DEFAULT_RETRY_TEMPERATURE, Budgets, trial_seed
from .observe import Views, observation


class StepCap(Exception):
    """The episode reached one of its caps (steps or model calls); the agent stops without an answer."""


@dataclass
class Turn:
    """One model answer as an agent sees it."""

    text: str
    parsed: Any
    tool_calls: list[ToolCall]
    error: str | None
    """Why the turn failed (cut at the token limit, not valid JSON for the schema), or None."""
    event: ModelCallEvent

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class CodeOutcome:
    """What one execution gave: the code, the run (None when the answer held no code), and a short text."""

    code: str
    ok: bool
    observation: str
    """What the run gave, in words for the next prompt: the result, or the error."""
    run: Any = None
    error_type: str | None = None


def truncate(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" ... [{len(text) - limit} more characters cut]"


def result_text(value: Any, limit: int) -> str:
    """A JSON value as prompt text, bounded."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return truncate(text, limit)


def is_empty(value: Any) -> bool:
    """True for a result that holds nothing: None, "", [], {}."""
    return value is None or (isinstance(value, (str, list, dict)) and not value)


class Episode:
    """One episode of one agent on one task (see the module docstring).

    ``models`` maps roles (``grounding``, ``execution``, ``review``, ``agent``) to :class:`~taskbench.llm.Model`
    objects; a role without its own model uses ``models["agent"]``. ``sandbox_options`` go to
    :class:`~taskbench.envs.sandbox.Sandbox` (``unsafe_local`` ...).
    """

    def __init__(
        self,
        *,
        task: AgentTask,
        env: Any,
        tools: Sequence[ToolSpec],
        writer: TrajectoryWriter,
        models: Mapping[str, Any],
        budgets: Budgets,
        temperature: float = 0.0,
        seed: int = 0,
        sandbox_options: Mapping[str, Any] | None = None,
        retry_temperature: float = DEFAULT_RETRY_TEMPERATURE,
    ) -> None:
        self.task = task
        self.env = env
        self.tools = list(tools)
        self.tool_names = [t.name for t in self.tools]
        self.api = dict(zip(self.tool_names, python_names(self.tool_names), strict=True))
        self.writer = writer
        self.models = dict(models)
        self.budgets = budgets
        self.temperature = temperature
        """The sampling temperature of the current trial (the episode's, then the retry temperature)."""
        self.seed = seed
        """The episode's seed: the environment's and the tool order's (every trial's)."""
        self.sample_seed = seed
        """The sampling seed of the current trial's model calls (:func:`~taskbench.agents.config.trial_seed`)."""
        self.retry_temperature = retry_temperature
        self.sandbox_options = dict(sandbox_options or {})
        self._sandbox: Any = None
        self._calls = 0
        self._model_calls = 0
        self.answer: str | None = None
        self.stop: str = "answer"
        """Why the episode ended: answer | step_cap | call_cap | context_full | no_answer."""
        self.attempt_starts: list[int] = [0]
        """Index of the first event of each trial (one trial unless the agent retries)."""
        self.trials: list[dict[str, Any]] = [{"seed": seed, "temperature": temperature}]
        """Each trial's sampling seed and temperature, in order."""
        self.counters: dict[str, int] = {}
        """What an agent's own mechanisms did (DFSDT's backtracks, grounded arguments ...), by name."""
        self.views = Views()
        """Each successful tool result that reached the agent, whole and as the agent saw it."""

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``name`` (written into the outcome's details and the metrics)."""
        self.counters[name] = self.counters.get(name, 0) + n

    # ------------------------------------------------------------------------------------------ models

    def model(self, role: str) -> Any:
        """The model that plays ``role``."""
        return self.models.get(role) or self.models["agent"]

    async def generate(
        self,
        role: str,
        messages: Sequence[Any],
        *,
        max_tokens: int,
        schema: dict[str, Any] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: Any = None,
        stop: Sequence[str] = (),
        check: Callable[[Any], str | None] | None = None,
        resample: int = 0,
    ) -> Turn:
        """One model call by ``role`` (see the module docstring). ``check(parsed)`` may name why a parsed
        answer is unusable (it then is a failed turn, recorded as such). ``resample`` k > 0 asks for another
        sample of an answer the greedy decoding repeats: at least the retry temperature, with its own seed, and
        from the run's own model (``models["agent"]``, ``--model``) when the role plays another one (a student:
        fine-tuned to a near-certain answer, its warm samples repeat it; 0 of 23 differed on RestBench-TMDB).
        Raises StepCap past the call budget and ModelError when the call fails for good."""
        if self._model_calls >= self.budgets.max_model_calls:
            self.stop = "call_cap"
            raise StepCap(f"model-call cap ({self.budgets.max_model_calls}) reached")
        self._model_calls += 1
        model = self.model(role)
        temperature, seed = self.temperature, self.sample_seed
        if resample:
            temperature, seed = max(temperature, self.retry_temperature), trial_seed(seed, resample)
            base = self.models.get("agent")
            if base is not None and getattr(base, "name", None) != getattr(model, "name", None):
                model = base
        config = GenerationConfig(temperature=temperature, max_tokens=max_tokens, seed=seed, stop=tuple(stop))
        try:
            out = await model.generate(list(messages), schema=schema, config=config, tools=tools,
                                       tool_choice=tool_choice)
        except ContextLengthError as exc:  # the history outgrew the model: the episode ends, as on a cap
            self.stop = "context_full"
            raise StepCap(f"the prompt no longer fits the model's context window ({exc})") from exc
        error: str | None = None
        if out.truncated:
            error = f"the answer was cut off at the token limit ({max_tokens} tokens)"
        elif schema is not None and (out.parse_error is not None or out.parsed is None):
            error = out.parse_error or "no JSON in the answer"
        elif check is not None:
            error = check(out.parsed)
        event = ModelCallEvent(
            role=role, model=model.name, messages=list(messages),
            tools=[t.name for t in tools] if tools else [],
            output=AssistantMessage(content=out.text or None, tool_calls=list(out.tool_calls)),
            finish_reason=out.finish_reason,
            usage=Usage(prompt_tokens=out.usage.prompt_tokens, completion_tokens=out.usage.completion_tokens,
                        seconds=out.latency),
            latency=out.latency, error=error,
        )
        self.writer.add(event)
        return Turn(text=out.text or "", parsed=out.parsed, tool_calls=list(out.tool_calls), error=error,
                    event=event)

    # ------------------------------------------------------------------------------------------ tools

    def _next_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls}"

    async def _handler(self, call: ToolCall) -> ToolResult:
        """The sandbox's way out: only the offered tools, None-valued arguments left out."""
        if call.name not in self.api:
            offered = ", ".join(self.tool_names[:20])
            return ToolResult(call_id=call.id, name=call.name,
                              error=f"tool {call.name!r} is not offered in this task (offered: {offered})")
        args = {k: v for k, v in call.arguments.items() if v is not None}
        result: ToolResult = await self.env.call(call.model_copy(update={"arguments": args}))
        if result.error is None:  # code reads the whole response
            self.views.add(result.text(), result.text())
        return result

    async def call_tool(self, call: ToolCall, role: str) -> ToolResult:
        """A direct tool call, recorded as a ToolCallEvent (a call the model got wrong is answered with its
        error, by the environment)."""
        import time

        start = time.perf_counter()
        if call.name not in self.api and call.error is None:
            result = await self._handler(call)
        else:
            result = await self.env.call(call)
        self.writer.add(ToolCallEvent(role=role, call=call, result=result,
                                      seconds=round(time.perf_counter() - start, 6)))
        return result

    def observe(self, result: ToolResult) -> str:
        """What an agent that reads results in its prompt sees of ``result``: the error, or the structure-aware
        view (:func:`~taskbench.agents.observe.observation`, bounded by ``Budgets.observation_chars``),
        recorded as seen."""
        if result.error is not None:
            return truncate(result.text(), self.budgets.observation_chars)
        shown = observation(result.content, self.budgets.observation_chars)
        self.views.add(result.text(), shown)
        return shown

    def read_whole(self, result: ToolResult) -> None:
        """Record that code was given ``result`` whole (RestGPT's parser reads the response from a file)."""
        if result.error is None:
            self.views.add(result.text(), result.text())

    @property
    def sandbox(self) -> Any:
        """This episode's sandbox (started on first use), exposing the offered tools only."""
        if self._sandbox is None:
            from ..envs.sandbox import Sandbox

            options = {"limits": {"wall_seconds": self.budgets.code_seconds}, **self.sandbox_options}
            self._sandbox = Sandbox(self._handler, self.tools, **options)
        return self._sandbox

    async def run_code(self, code: str, role: str = "execution", *,
                       files: Mapping[str, str] | None = None) -> CodeOutcome:
        """Run ``code`` in the sandbox, record it, and say what it gave (an empty ``result`` is a failure).
        ``files`` are written into the sandbox's working directory first (RestGPT's parser reads the
        response from one)."""
        run = await self.sandbox.run(code, files=files) if files else await self.sandbox.run(code)
        event = run.event(code, role)
        self.writer.add(event)
        if run.error is not None or run.limit is not None:
            err = run.error or CodeError(type="LimitExceeded", message=str(run.limit))
            where = f" (line {err.line})" if err.line else ""
            observation = truncate(f"error{where}: {err.type}: {err.message}", self.budgets.result_chars)
            return CodeOutcome(code=code, ok=False, observation=observation, run=run, error_type=err.type)
        if is_empty(run.result):
            printed = truncate(run.stdout.strip(), self.budgets.result_chars // 2) if run.stdout.strip() else ""
            observation = "the code ran but `result` is empty" + (f"; it printed: {printed}" if printed else "")
            return CodeOutcome(code=code, ok=False, observation=observation, run=run, error_type="EmptyResult")
        return CodeOutcome(code=code, ok=True, observation=result_text(run.result, self.budgets.result_chars),
                           run=run)

    def no_code(self, text: str, why: str | None = None) -> CodeOutcome:
        """The outcome of an execution turn that gave no code to run (recorded as a failed code run)."""
        message = why or "the answer holds no Python code block"
        event = CodeRunEvent(role="execution", code="", error=CodeError(type="NoCode", message=message))
        self.writer.add(event)
        return CodeOutcome(code="", ok=False, observation=f"error: {message}", error_type="NoCode")

    # ------------------------------------------------------------------------------------------ verdicts

    def review(self, target: str, verdict: str, feedback: str, route: str | None, *, problem: str | None = None,
               action: str | None = None, overruled: bool = False) -> ReviewEvent:
        """Record a review verdict (``problem``: what it named; ``action``: what the protocol does with it;
        ``overruled``: an accept of a failed run that the protocol did not take)."""
        event = ReviewEvent(target=target, verdict=verdict, feedback=feedback, route=route,  # type: ignore[arg-type]
                            problem=problem, action=action, overruled=overruled)  # type: ignore[arg-type]
        self.writer.add(event)
        return event

    def final(self, answer: str, role: str) -> None:
        """Record the final answer."""
        self.answer = answer
        self.stop = "answer"
        self.writer.add(FinalAnswerEvent(role=role, answer=answer))

    # ------------------------------------------------------------------------------------------ trials

    async def new_attempt(self) -> None:
        """Start another trial: the environment reset to the task's initial state (its recorded calls
        forgotten, so the checker judges this trial alone), no answer yet, and a new sample: the trial's own
        seed and at least the retry temperature (see the module docstring). The model-call cap counts every
        trial of the episode."""
        await self.env.reset(seed=self.seed, task=self.task)
        trial = len(self.attempt_starts)
        self.attempt_starts.append(len(self.writer.trajectory.events))
        self.sample_seed = trial_seed(self.seed, trial)
        self.temperature = max(self.temperature, self.retry_temperature)
        self.trials.append({"seed": self.sample_seed, "temperature": self.temperature})
        self.views = Views()  # what this trial sees (the checker judges the last trial alone)
        self.answer = None
        self.stop = "answer"

    async def check(self) -> CheckResult:
        """The environment's verdict on the current trial's calls and answer (the oracle of the @N
        baselines and of Reflexion's evaluator)."""
        result: CheckResult = await self.env.check(self.task, self.answer)
        return result

    async def aclose(self) -> None:
        """Stop the sandbox."""
        if self._sandbox is not None:
            await self._sandbox.aclose()
            self._sandbox = None


__all__ = ["CodeOutcome", "Episode", "StepCap", "Turn", "is_empty", "result_text", "truncate"]
