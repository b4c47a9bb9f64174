"""The agents ``--agent`` can name: one registry that the config (:func:`~taskbench.agents.config.parse_agent`),
the runner, the command line's help and validation, the viewer and the docs' table read.

An agent is anything with ``async run(episode)`` (:class:`Agent`): it acts only through the
:class:`~taskbench.agents.episode.Episode` (model calls per role, tool calls, code runs, the final answer),
which records the trajectory. :class:`AgentInfo` says how to make one from its
:class:`~taskbench.agents.config.AgentSpec` and what it is: the roles that call a model, whether it runs code
in the sandbox, whether ``NAME@N`` retries it until solved, and one line for the help and the docs.

The built-in agents are registered by :mod:`taskbench.agents.baselines` (ConAgents and the paper's baselines);
a new one is a module that calls :func:`register_agent` (or decorates its class with :func:`agent`), either
dropped into ``agents/baselines/`` (every module there is imported on first use) or named in
``TASKBENCH_PLUGINS`` (:mod:`taskbench._plugins`; docs/extending.md has a worked example).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from .._plugins import Registry, name_list
from ..errors import ConfigError, suggest

# The spec and the episode are typed Any here: config and episode read this registry, and no module cycle is
# allowed (tests/test_layers.py). ``AgentSpec`` is taskbench.agents.config.AgentSpec, ``Episode``
# taskbench.agents.episode.Episode.
AgentSpec = Any
Episode = Any


@runtime_checkable
class Agent(Protocol):
    """What the runner asks of an agent: act in one episode until it answers, gives up or hits a cap."""

    async def run(self, episode: Episode) -> None:
        """Solve ``episode.task`` with ``episode.tools``: call models through ``episode.generate(role, ...)``,
        tools through ``episode.call_tool`` or code through ``episode.run_code``, and answer with
        ``episode.final``. Raising :class:`~taskbench.agents.episode.StepCap` ends the episode without an
        answer; a :class:`~taskbench.errors.ModelError` fails it (retried by the next run)."""
        ...


@dataclass(frozen=True)
class AgentInfo:
    """One registered agent."""

    name: str
    """What ``--agent`` takes (``react``)."""
    make: Callable[[AgentSpec], Agent]
    """``make(spec)`` -> a fresh agent for one episode (``spec.tries`` trials for a retried agent)."""
    roles: tuple[str, ...]
    """The roles that call a model (each model call of the trajectory names one); every role takes the run's
    ``--model`` unless it has its own."""
    description: str
    """One line: what the agent does (``agents eval --help``, the docs' table, the viewer)."""
    uses_code: bool = False
    """It runs model-written code in the sandbox (the run then needs one, or ``--unsafe-local``)."""
    retry_name: str | None = None
    """``RETRY_NAME@N`` runs this agent retried until solved, N trials at most (``react@3``, ``toolllm@3``
    for dfsdt); None: no ``@N`` form."""
    default_tries: int = 1
    """Trials of the agent named without ``@N`` (reflexion: 3)."""
    variants: bool = False
    """ConAgents: the name takes ablation and turn-limit suffixes (``-no-plan-review``, ``-a2b4``)."""


_AGENTS: Registry[AgentInfo] = Registry("agent", builtins=("taskbench.agents.baselines",),
                                        package="taskbench.agents.baselines")

A = TypeVar("A")


def register_agent(
    name: str,
    make: Callable[[AgentSpec], Agent],
    *,
    roles: tuple[str, ...] | list[str],
    description: str,
    uses_code: bool = False,
    retry_name: str | None = None,
    default_tries: int = 1,
    variants: bool = False,
    replace: bool = False,
) -> AgentInfo:
    """Add an agent under ``name`` (see :class:`AgentInfo` for the fields); ``make(spec)`` builds one per
    episode."""
    if not roles or not all(isinstance(r, str) and r for r in roles):
        raise ConfigError(f"agent {name!r}: give the roles that call a model (e.g. roles=('react',))")
    if not name.replace("-", "").replace("_", "").isalnum() or name != name.lower():
        raise ConfigError(f"agent name {name!r}: use lower-case letters, digits and '-' (it is typed on the "
                          "command line and names files)")
    if retry_name is not None and (not retry_name.replace("-", "").isalnum() or "@" in retry_name):
        raise ConfigError(f"agent {name!r}: retry_name {retry_name!r} must be a plain name (it is written NAME@N)")
    if not 1 <= default_tries <= 10:
        raise ConfigError(f"agent {name!r}: default_tries is 1..10, not {default_tries}")
    if retry_name is not None:
        for other in _AGENTS.registered().values():
            if other.retry_name == retry_name and other.name != name:
                raise ConfigError(f"agent {name!r}: '{retry_name}@N' already retries {other.name!r}")
    info = AgentInfo(name=name, make=make, roles=tuple(roles), description=" ".join(description.split()),
                     uses_code=uses_code, retry_name=retry_name, default_tries=default_tries, variants=variants)
    return _AGENTS.register(name, info, replace=replace)


def agent(name: str, **fields: Any) -> Callable[[A], A]:
    """Class decorator: ``@agent("mine", roles=("mine",), description="...")`` registers a class whose
    constructor takes no argument, or the :class:`~taskbench.agents.config.AgentSpec`."""

    def decorate(cls: A) -> A:
        takes_spec = bool(inspect.signature(cls).parameters)  # type: ignore[arg-type]

        def make(spec: AgentSpec) -> Agent:
            return cls(spec) if takes_spec else cls()  # type: ignore[operator, no-any-return]

        register_agent(name, make, **fields)
        return cls

    return decorate


def unregister_agent(name: str) -> None:
    """Remove a registered agent (tests, plugins)."""
    _AGENTS.unregister(name)


def agents() -> dict[str, AgentInfo]:
    """Every registered agent by name: ConAgents' two protocols, the baselines, then added ones."""
    return _AGENTS.entries()


def agent_names() -> list[str]:
    """The names ``--agent`` takes as they are (without ``@N`` and ConAgents' variant suffixes)."""
    return _AGENTS.names()


def retry_names() -> dict[str, str]:
    """``{retry name: agent}``: what ``NAME@N`` retries (``toolllm`` -> ``dfsdt``)."""
    return {a.retry_name: a.name for a in agents().values() if a.retry_name}


def find_agent(name: str) -> AgentInfo | None:
    """The agent registered as ``name`` (a base name, not a variant), or None."""
    return _AGENTS.find(name)


def agent_info(name: str) -> AgentInfo:
    """The agent registered as ``name``; an unknown name raises :class:`ConfigError` with the close one."""
    found = find_agent(name)
    if found is None:
        raise unknown_agent(name)
    return found


def unknown_agent(name: str) -> ConfigError:
    """The error for an agent name nothing registered: the close name and every form ``--agent`` takes."""
    close = suggest(name.strip(), [*agent_names(), *(f"{r}@N" for r in retry_names())])
    hint = f"; did you mean {close[0]!r}?" if close else ""
    forms = [*agent_names(), *(f"{r}@N" for r in retry_names())]
    return ConfigError(f"unknown agent {name!r}{hint} (known: {', '.join(forms)})")


def agents_help() -> str:
    """The ``--agent`` choices for help texts."""
    names = agent_names()
    retried = [f"{r}@N" for r in retry_names()]
    text = ", ".join(names)
    if retried:
        text += f", {name_list(retried)} (retried until solved, N trials at most)"
    return text


__all__ = [
    "Agent",
    "AgentInfo",
    "agent",
    "agent_info",
    "agent_names",
    "agents",
    "agents_help",
    "find_agent",
    "register_agent",
    "retry_names",
    "unknown_agent",
    "unregister_agent",
]
