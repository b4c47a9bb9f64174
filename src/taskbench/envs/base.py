"""The environment protocol: executable tools an agent can call, and a checker that decides success.

An :class:`Environment` is one episode's handle on a set of executable tools:

- :meth:`Environment.tools` lists the tools offered (:class:`~taskbench.schema.ToolSpec`), and
  :meth:`Environment.documentation` gives the documentation an agent reads for one tool;
- :meth:`Environment.tasks` lists the tasks the environment ships with (RestBench queries, TaskBench samples),
  each an :class:`~taskbench.schema.AgentTask` with its gold path;
- :meth:`Environment.reset` starts a fresh, deterministic episode (given the seed, and optionally the task);
- :meth:`Environment.call` executes one :class:`~taskbench.schema.ToolCall` and returns a
  :class:`~taskbench.schema.ToolResult` (a value, or an error the agent can read; it never raises for a bad
  call) and records the call;
- :meth:`Environment.check` decides whether the task was solved and reports which tool calls were made (by
  default, :data:`CHECK_MODES` ``solved``: the answer is right and what it states appeared in a successful
  tool response of the episode);
- :meth:`Environment.read_state` says what the environment holds (for the data engine's prompt).

Every tool result, recorded or not (setup calls, checker reads, state reads), has the environment's
:meth:`Environment.secrets` (the values the user passed as secrets, e.g. ``TOKEN=$TOKEN`` of an ``mcp:`` spec)
and the process's remembered secrets (API keys, :func:`taskbench.llm.redact.remember`) replaced by ``***``
before anyone sees it: a tool that returns its own environment does not get a secret into a trajectory, a
prompt or a generated sample.

One instance runs one episode at a time; open one instance per concurrent episode (implementations share
heavy resources, such as a loopback service, behind the scenes). Environments are registered by name like
model providers (:func:`register_environment`, :func:`open_environment`); ``mcp:<command ...>`` opens any MCP
server as an environment.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ConfigError, suggest
from ..schema import AgentTask, CheckResult, ToolCall, ToolResult, ToolSpec
from .tasks import check_task, run_setup

if TYPE_CHECKING:
    from .restbench.provenance import Observed

CHECK_MODES = ("solved", "answer-only")
"""How :meth:`Environment.check` decides success. ``solved`` (the default): the answer is right *and* every value
it is credited for appeared in a successful tool response of the episode, so an answer from memory fails;
``answer-only``: the answer alone decides (RestBench's published evaluation)."""


def parse_check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`CHECK_MODES`, else a ConfigError naming them."""
    if mode not in CHECK_MODES:
        raise ConfigError(f"unknown check mode {mode!r} (known: {', '.join(CHECK_MODES)}; answer-only is "
                          "RestBench's answer-only evaluation)")
    return mode


class Environment(ABC):
    """Base class of executable tool environments (see the module docstring)."""

    name: ClassVar[str] = ""
    check_mode: str = "solved"
    """:data:`CHECK_MODES`: ``solved`` unless the environment was opened with ``check="answer-only"``."""

    def __init__(self) -> None:
        self._calls: list[ToolCall] = []
        self._results: list[ToolResult] = []
        self.task: AgentTask | None = None
        self.seed = 0

    # -------------------------------------------------------------------------------------------- tools

    @abstractmethod
    def tools(self) -> list[ToolSpec]:
        """The tools this environment offers, in a stable order."""

    def tool(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, or None."""
        return next((t for t in self.tools() if t.name == name), None)

    def documentation(self, name: str) -> str:
        """Documentation of one tool that an agent can read (name, description, parameters, output)."""
        import json

        spec = self.tool(name)
        if spec is None:
            raise ConfigError(f"{self.name}: no tool named {name!r}")
        parts = [f"{spec.name}: {spec.description}".strip()]
        if spec.http is not None:
            parts.append(f"HTTP: {spec.http.method} {spec.http.path}")
        parts.append("Arguments (JSON Schema): " + json.dumps(spec.parameters, ensure_ascii=False))
        if spec.output_schema:
            parts.append("Returns (JSON Schema): " + json.dumps(spec.output_schema, ensure_ascii=False))
        return "\n".join(parts)

    def tasks(self) -> list[AgentTask]:
        """The tasks this environment ships with (may be empty: then tasks come from a task file, ``agents eval
        --tasks FILE``, read by :func:`taskbench.envs.tasks.load_tasks`)."""
        return []

    def snapshot(self) -> Any:
        """The episode's state as JSON, for code that compares states (what a write changed: the data engine's
        executed tasks); None when the environment cannot show it (the default)."""
        return None
    def secrets(self) -> list[str]:
        """Secret values this environment was given (an ``mcp:`` spec's ``$NAME`` values); with the process's
        remembered secrets they are taken out of every tool result (see the module docstring)."""
        return []

    def _redacted(self, result: ToolResult) -> ToolResult:
        from ..llm.redact import redact_known, redact_value, remembered

        secrets = [*self.secrets(), *remembered()]
        if not secrets:
            return result
        content = redact_value(result.content, secrets)
        error = redact_known(result.error, secrets) if result.error is not None else None
        if content is result.content and error is result.error:
            return result
        return result.model_copy(update={"content": content, "error": error})

    async def _run(self, call: ToolCall) -> ToolResult:
        """:meth:`_execute`, its result with the secrets taken out (every caller in this class goes through
        here, recorded or not)."""
        return self._redacted(await self._execute(call))

    async def read_state(self) -> str | None:
        """What the environment holds now (tables, files, entities), as text for a prompt, read through its own
        tools with read-only calls, unrecorded (:mod:`taskbench.envs.state`); None when it has nothing to show.
        ``taskbench generate --env`` puts it into the generation prompt."""
        from .state import read_state

        return await read_state(self._run, [t.name for t in self.tools()])

    # -------------------------------------------------------------------------------------------- episode

    async def reset(self, seed: int = 0, task: AgentTask | None = None) -> None:
        """Start a fresh episode: state back to its seeded initial value, no calls recorded."""
        self._calls = []
        self._results = []
        self.__dict__.pop("_observed", None)
        self.task = task
        self.seed = seed
        await self._reset(seed, task)
        if task is not None and isinstance(task.meta.get("setup"), list):
            await run_setup(task, self._run)  # a task file's setup calls: unrecorded

    async def _reset(self, seed: int, task: AgentTask | None) -> None:  # noqa: B027 - optional hook
        """Restore state (stateful environments override this)."""

    async def call(self, call: ToolCall) -> ToolResult:
        """Execute one tool call, record it, and return its result (errors are results, not exceptions)."""
        self._calls.append(call)
        if call.error is not None:
            result = ToolResult(call_id=call.id, name=call.name, error=f"invalid call: {call.error}")
        elif self.tool(call.name) is None:
            known = ", ".join(t.name for t in self.tools()[:20])
            result = ToolResult(call_id=call.id, name=call.name,
                                error=f"no tool named {call.name!r} (tools: {known})")
        else:
            try:
                result = await self._run(call)
            except Exception as exc:  # an environment bug must not end the episode silently
                result = self._redacted(ToolResult(call_id=call.id, name=call.name,
                                                   error=f"{type(exc).__name__}: {exc}"))
        self._results.append(result)
        return result

    @abstractmethod
    async def _execute(self, call: ToolCall) -> ToolResult:
        """Run a valid call to a known tool."""

    @property
    def calls(self) -> list[ToolCall]:
        """The calls made since the last reset, in order."""
        return list(self._calls)

    @property
    def results(self) -> list[ToolResult]:
        """Their results, in order."""
        return list(self._results)

    def observed(self) -> Observed:
        """What this episode's successful calls returned (:class:`~taskbench.envs.restbench.provenance.Observed`,
        indexed once per call): what the ``solved`` check mode credits an answer from. The calls agent code
        makes in the sandbox come through :meth:`call` too."""
        from .restbench.provenance import Observed

        done, seen = self.__dict__.get("_observed") or (0, Observed())  # (reset forgets it)
        for c, r in zip(self._calls[done:], self._results[done:], strict=False):
            if r.error is None:
                seen.add(c.name, dict(c.arguments), r.content)
        self.__dict__["_observed"] = (len(self._results), seen)
        return seen

    async def check(self, task: AgentTask, answer: str | None) -> CheckResult:
        """Was ``task`` solved by the calls made and the final ``answer``? The default runs the task's
        ``checker`` (a task file's, see :mod:`taskbench.envs.tasks`), calling this environment's tools
        unrecorded where it reads state; a task without one is not solved, and the reason says why. In the
        default mode (:attr:`check_mode` ``solved``) every value the answer is credited for must have appeared
        in a successful response of this episode (the calls of agent code in the sandbox included: they come
        through :meth:`call` too)."""
        return await check_task(task, answer, self.calls, self.results, self._run,
                                lambda name: self.tool(name) is not None, mode=self.check_mode,
                                observed=self.observed())

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release processes, servers and files."""

    async def __aenter__(self) -> Environment:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# ------------------------------------------------------------------------------------------------ registry

_ENVIRONMENTS: dict[str, str] = {}


def register_environment(name: str, target: str) -> None:
    """Register an environment factory as ``"package.module:callable"`` (imported on first use)."""
    _ENVIRONMENTS[name] = target


def known_environments() -> list[str]:
    """Registered environment names, sorted (plus the ``mcp:<command>`` form)."""
    return sorted(_ENVIRONMENTS)


def open_environment(spec: str, **options: Any) -> Environment:
    """A fresh environment by name (``restbench-tmdb``, ``taskbench-multimedia``, ``mcp:python server.py``...)."""
    if spec.startswith("mcp:"):
        target, options = _ENVIRONMENTS.get("mcp", ""), {"command": spec[4:].strip(), **options}
    else:
        target = _ENVIRONMENTS.get(spec, "")
    if not target:
        close = suggest(spec, known_environments())
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"unknown environment {spec!r}{hint} (known: {', '.join(known_environments()) or 'none'}, or mcp:<command>)"
        )
    module_name, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    env = factory(**options)
    if not isinstance(env, Environment):
        raise ConfigError(f"environment {spec!r}: {target!r} did not return an Environment")
    return env


__all__ = ["CHECK_MODES", "Environment", "parse_check_mode", "known_environments", "open_environment", "register_environment"]
