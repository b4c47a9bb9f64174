"""What an agent run is configured with: agent names and their variants, tool settings, budgets.

The agents are those of the agent registry (:mod:`taskbench.agents.registry`: the built-in ones below, and any
added by a module or a plugin); :func:`parse_agent` reads a name against it. Built-in agent names (``--agent``):

- ``conagents-auto``: grounding, execution and review agents, automatic protocol (a planning review after each
  plan for up to ``alpha`` calibration turns, an execution review after each execution for up to ``beta``);
- ``conagents-adaptive``: the same agents, adaptive protocol (review only when an execution fails; the review
  decides whether the plan or the code caused it and sends its feedback there);
- ``react``: one agent with native tool calls (thought, action, observation);
- ``code``: one agent that writes Python calling the tools in the sandbox (CodeAct-style);
- ``plan-execute``: the predictor's one-shot TaskBench invocation graph, executed step by step (Chameleon-like);
- ``reflexion`` (``reflexion@N``): ReAct trials, each failed one followed by a self-reflection that the next
  trial reads (N trials, 3 by default);
- ``react@N``: ReAct retried from a fresh environment until the task is solved, at most N times;
- ``dfsdt``: ToolLLM's depth-first search decision tree over ReAct steps (a failed call or a give-up backtracks,
  and the next child is asked to differ from its failed siblings); ``toolllm@N``: DFSDT retried until solved;
- ``restgpt``: RestGPT's planner, API selector, caller and response parser;
- ``alpha-umi``: alpha-UMi's planner, caller and summariser.

The retrying agents (``react@N``, ``toolllm@N``, ``reflexion``) are told by the environment's checker whether a
trial solved the task, as the paper's @N baselines are; the trials used are reported (``attempts``). Each trial
is its own sample: trial 1 with the episode's seed and temperature, trial k > 1 with the seed
:func:`trial_seed` gives and at least ``retry_temperature`` (:data:`DEFAULT_RETRY_TEMPERATURE`).

A ConAgents name takes variants as suffixes (also made by ``--ablation`` and ``--sweep-turns``):
``conagents-auto-no-plan-review``, ``conagents-auto-no-exec-review``, ``conagents-auto-compiler-feedback``
(review replaced by static compiler feedback: the error text goes back to the execution agent), and
``conagents-auto-fault-route`` (the route of an execution review follows the evidence of the fault, not
the review agent's word: :func:`taskbench.agents.conagents.fault_route`), ``conagents-auto-a2b4`` (alpha = 2,
beta = 4), and ``-grounded`` (id-like plan arguments only take values seen in
the task or an earlier result: :mod:`taskbench.agents.grounded`), in that order, e.g.
``conagents-adaptive-no-exec-review-grounded-a1b1``. :func:`parse_agent` reads them. Under the adaptive protocol
only ``no-exec-review`` means something: ``conagents-adaptive-no-plan-review`` (it reviews no plans anyway)
and ``conagents-adaptive-compiler-feedback`` (the same agent as ``conagents-auto-compiler-feedback``) are
refused, and ``--ablation`` does not make them.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._plugins import LiveMapping, LiveView
from ..errors import ConfigError
from ..schema import AgentTask, ToolSpec
from .registry import agent_info, agent_names, agents, find_agent, retry_names, unknown_agent

BASE_AGENTS: LiveView[str] = LiveView(agent_names)
"""The agents ``--agent`` knows (and, with ``@N``, ``react@N``, ``toolllm@N``, ``reflexion@N``): a view of the
agent registry (:func:`taskbench.agents.registry.agent_names`)."""


RETRY_NAMES: Mapping[str, str] = LiveMapping(retry_names)
"""``<name>@N``: the base agent it retries (a view of the registry's ``retry_name`` fields)."""

DEFAULT_TRIES: Mapping[str, int] = LiveMapping(lambda: {n: a.default_tries for n, a in agents().items()
                                                     if a.default_tries != 1})
"""Trials of an agent named without ``@N`` (1 for all others; a view of the registry)."""

MAX_TRIES = 10

DEFAULT_RETRY_TEMPERATURE = 0.7
"""The least sampling temperature of trials 2..N of the retrying agents (``--retry-temperature``): at
temperature 0 a later trial would repeat trial 1 token for token."""

TRIAL_SEED_STRIDE = 1_000_003
"""Trial k (0-based) of an episode with seed s samples with seed ``s + k * TRIAL_SEED_STRIDE``
(:func:`trial_seed`): no two trials of one episode share a seed, nor does a later trial share the seed of
another episode's first trial (episode seeds are 0..K-1)."""


def trial_seed(seed: int, trial: int) -> int:
    """The sampling seed of trial ``trial`` (0 = the first) of an episode with seed ``seed``."""
    return seed + trial * TRIAL_SEED_STRIDE

ABLATIONS: tuple[str, ...] = ("no-plan-review", "no-exec-review", "compiler-feedback", "fault-route")
"""Variants of the review agent (ConAgents agents only): the paper's three ablations, and ``fault-route`` (ours:
the route of an execution review set by the evidence, :func:`taskbench.agents.conagents.fault_route`, instead of
the review agent's own route)."""

TOOL_SETTINGS: tuple[str, ...] = ("gold", "gold+10", "all")
"""Which tools an episode offers: the tools the task needs (:func:`needed_tools`: its gold path's and its
solution's), those + 10 seeded random distractors, or all."""

ROLES: tuple[str, ...] = ("grounding", "execution", "review")
"""ConAgents' roles; each may have its own model."""

DEFAULT_ALPHA = 3
DEFAULT_BETA = 3
DISTRACTORS = 10

_RETRY = re.compile(r"^(?P<base>[a-z0-9][a-z0-9_-]*)@(?P<n>\d+)$")
_TURNS = re.compile(r"-a(?P<a>\d+)b(?P<b>\d+)$")


class AgentSpec(BaseModel):
    """One agent to evaluate: a base agent and, for ConAgents, its protocol settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base: str = Field(description="A registered agent (BASE_AGENTS).")
    alpha: int = Field(default=DEFAULT_ALPHA, ge=0, le=20, description="Planning-review calibration turns.")
    beta: int = Field(default=DEFAULT_BETA, ge=0, le=20, description="Execution-review calibration turns.")
    ablation: str | None = Field(default=None, description="One of ABLATIONS, or None.")
    grounded: bool = Field(default=False, description="ConAgents: id-like plan arguments take only values seen "
                                                      "in the task or earlier results (taskbench.agents.grounded).")
    tries: int = Field(default=1, ge=1, le=MAX_TRIES, description="Trials until solved (react@N, toolllm@N, "
                                                                  "reflexion@N); 1 for the others.")

    @property
    def name(self) -> str:
        """The agent's label in files and tables, e.g. ``conagents-auto-no-plan-review-a1b1``, ``react@3``."""
        info = find_agent(self.base)
        if info is not None and info.retry_name is not None and self.tries != info.default_tries:
            return f"{info.retry_name}@{self.tries}"
        if self.tries > 1 and (info is None or info.retry_name is None):
            return f"{self.base}@{self.tries}"
        if info is None or not info.variants:
            return self.base
        label = self.base
        if self.ablation:
            label += f"-{self.ablation}"
        if self.grounded:
            label += "-grounded"
        if (self.alpha, self.beta) != (DEFAULT_ALPHA, DEFAULT_BETA):
            label += f"-a{self.alpha}b{self.beta}"
        return label

    @property
    def uses_code(self) -> bool:
        """Whether the agent runs code in the sandbox (as registered)."""
        return agent_info(self.base).uses_code

    @property
    def plan_review(self) -> bool:
        """Whether plans are reviewed (automatic protocol, not ablated)."""
        return self.base == "conagents-auto" and self.ablation not in ("no-plan-review", "compiler-feedback")

    @property
    def exec_review(self) -> bool:
        """Whether executions are reviewed by the review agent."""
        return self.base.startswith("conagents") and self.ablation not in ("no-exec-review", "compiler-feedback")

    @property
    def compiler_feedback(self) -> bool:
        """Whether a failed execution's error text goes straight back to the execution agent (no review)."""
        return self.ablation == "compiler-feedback"

    @property
    def fault_route(self) -> bool:
        """Whether the evidence of the fault, not the review agent, routes an execution review's feedback (the
        ``fault-route`` variant; by default the review agent decides, as in the paper)."""
        return self.ablation == "fault-route"


def parse_agent(name: str, *, alpha: int = DEFAULT_ALPHA, beta: int = DEFAULT_BETA) -> AgentSpec:
    """The :class:`AgentSpec` for a name such as ``react`` or ``conagents-auto-no-exec-review-a1b3``
    (``alpha``/``beta`` apply where the name sets none)."""
    text = name.strip()
    info = find_agent(text)
    if info is not None:
        return AgentSpec(base=text, alpha=alpha, beta=beta, tries=info.default_tries)
    retry = _RETRY.match(text)
    retried = retry_names().get(retry.group("base")) if retry is not None else None
    if retry is not None and retried is not None:
        tries = int(retry.group("n"))
        if not 1 <= tries <= MAX_TRIES:
            raise ConfigError(f"agent {name!r}: N in {retry.group('base')}@N is 1..{MAX_TRIES}")
        return AgentSpec(base=retried, tries=tries)
    m = _variant(text)
    if m is None:
        raise unknown_agent(name)
    base, rest = m
    turns = _TURNS.search(rest)
    if turns is not None:
        alpha, beta = int(turns.group("a")), int(turns.group("b"))
        rest = rest[: turns.start()]
    grounded = rest == "-grounded" or rest.endswith("-grounded")
    if grounded:
        rest = rest[: -len("-grounded")]
    ablation = rest.lstrip("-") or None
    if ablation is not None and ablation not in ABLATIONS:
        raise ConfigError(f"unknown ablation {ablation!r} in agent {name!r} (known: {', '.join(ABLATIONS)})")
    if ablation is not None and ablation not in applicable_ablations(base):
        raise ConfigError(f"agent {name!r} would be the same as another: {ADAPTIVE_SAME[ablation]} (use "
                          f"{', '.join('conagents-adaptive-' + a for a in applicable_ablations(base))}, or "
                          f"conagents-auto-{ablation})")
    for what, value in (("alpha", alpha), ("beta", beta)):
        if not 0 <= value <= 20:
            raise ConfigError(f"agent {name!r}: {what} is 0..20, not {value}")
    return AgentSpec(base=base, alpha=alpha, beta=beta, ablation=ablation, grounded=grounded)


def _variant(text: str) -> tuple[str, str] | None:
    """(base, suffixes) of a variant name of an agent registered with ``variants`` (the longest base that
    prefixes ``text`` followed by ``-``), or None."""
    bases = sorted((n for n, a in agents().items() if a.variants), key=len, reverse=True)
    for base in bases:
        if text.startswith(base + "-") and re.fullmatch(r"(?:-[a-z0-9-]+)", text[len(base):]):
            return base, text[len(base):]
    return None


ADAPTIVE_SAME = {
    "no-plan-review": "the adaptive protocol never reviews plans, so conagents-adaptive-no-plan-review is "
                      "conagents-adaptive",
    "compiler-feedback": "compiler feedback replaces the review agent, and without it the protocols do not "
                         "differ, so it is conagents-auto-compiler-feedback",
}
"""Why an ablation means nothing under the adaptive protocol."""


def applicable_ablations(base: str) -> tuple[str, ...]:
    """The ablations that change ``base`` (the adaptive protocol reviews no plans, and compiler feedback is
    one agent whichever protocol it replaces: named conagents-auto-compiler-feedback)."""
    if base == "conagents-adaptive":
        return tuple(a for a in ABLATIONS if a not in ADAPTIVE_SAME)
    return ABLATIONS if base == "conagents-auto" else ()


def expand_agents(
    names: Sequence[str],
    *,
    alpha: int = DEFAULT_ALPHA,
    beta: int = DEFAULT_BETA,
    ablations: Sequence[str] = (),
    sweep: str | None = None,
    sweep_values: Sequence[int] = (1, 2, 3, 4, 5),
) -> list[AgentSpec]:
    """The agents to run: each name, then for every ConAgents agent one variant per ablation and, with
    ``sweep`` (``alpha`` | ``beta`` | ``both``), one variant per turn limit in ``sweep_values`` (the paper's
    Figure 3). Duplicates are dropped; order is kept."""
    for a in ablations:
        if a not in ABLATIONS:
            raise ConfigError(f"unknown ablation {a!r} (known: {', '.join(ABLATIONS)})")
    if sweep is not None and sweep not in ("alpha", "beta", "both"):
        raise ConfigError(f"--sweep-turns takes alpha, beta or both, not {sweep!r}")
    out: list[AgentSpec] = []
    for name in names:
        spec = parse_agent(name, alpha=alpha, beta=beta)
        out.append(spec)
        if not agent_info(spec.base).variants:
            continue
        for a in ablations:  # only the variants that differ from an agent already made
            if a in applicable_ablations(spec.base):
                out.append(spec.model_copy(update={"ablation": a}))
        for k in sweep_values if sweep else ():
            update = {"alpha": k if sweep in ("alpha", "both") else spec.alpha,
                      "beta": k if sweep in ("beta", "both") else spec.beta}
            out.append(spec.model_copy(update=update))
    seen: set[str] = set()
    unique = []
    for spec in out:
        if spec.name not in seen:
            seen.add(spec.name)
            unique.append(spec)
    return unique


class Budgets(BaseModel):
    """Bounds on one episode: steps, answer lengths, how much of a result goes back into a prompt."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(default=8, ge=1, le=100, description="Plan/act steps per episode (the step cap).")
    max_model_calls: int = Field(
        default=60, ge=1, description="Model calls per episode, every role counted (a hard stop)."
    )
    plan_tokens: int = Field(default=224, ge=32, description="Most tokens of a plan (grounding) answer.")
    code_tokens: int = Field(default=320, ge=32, description="Most tokens of a code answer.")
    review_tokens: int = Field(default=144, ge=32, description="Most tokens of a review verdict.")
    act_tokens: int = Field(default=256, ge=32, description="Most tokens of a ReAct turn.")
    answer_tokens: int = Field(default=200, ge=32, description="Most tokens of a final answer (plan-execute).")
    graph_tokens: int = Field(default=320, ge=32, description="Most tokens of plan-execute's one-shot graph.")
    observation_chars: int = Field(
        default=1500, ge=100, description="Characters of a raw tool result (ReAct, code output) put into a prompt; "
        "a longer result is shown as a digest of up to 4 times as many (taskbench.agents.observe)."
    )
    result_chars: int = Field(
        default=600, ge=50, description="Characters of an extracted result handed to the grounding agent."
    )
    code_seconds: float = Field(default=20.0, gt=0, description="Wall-clock limit of one code run.")


def needed_tools(task: AgentTask) -> list[str]:
    """Every tool a solution of ``task`` needs, from the task's data: its gold path, then the operations its
    solution script calls (``meta.solution.steps[].call``: RestBench's gold path lacks some, e.g. an episode's
    credits where the path has the show's, a person's details for a birthday; such steps are marked
    ``extra``), then those its checker asks to be called (``called`` conditions), in first-use order. An
    agent offered fewer could not solve the task by calling tools."""
    names = list(task.gold_path)
    solution = task.meta.get("solution")
    steps = solution.get("steps") if isinstance(solution, dict) else None
    for step in steps if isinstance(steps, list) else []:
        call = step.get("call") if isinstance(step, dict) else None
        if isinstance(call, str):
            names.append(call)
    checker = task.meta.get("checker")
    for cond in checker if isinstance(checker, list) else []:
        called = cond.get("called") if isinstance(cond, dict) else None
        names.extend(c for c in (called if isinstance(called, list) else [called]) if isinstance(c, str))
    return list(dict.fromkeys(names))


def select_tools(
    tools: Sequence[ToolSpec], gold_path: Sequence[str], setting: str, *, seed: int, task_id: str
) -> list[ToolSpec]:
    """The tools an episode offers, in an order shuffled per seed and task (the spec's order puts the first
    gold tool first in few tasks, and a small model takes the first tool; a fixed order would favour or
    penalise agents by where the gold tool sits). The order is recorded in the trajectory.

    ``gold_path``: the tools the task needs (the episode runner passes :func:`needed_tools`). ``gold``: those
    tools; ``gold+10``: those and 10 distractors drawn at random from the rest, seeded by ``seed`` and the task
    id (the same episode always gets the same tools in the same order); ``all``: every tool. A task without a
    gold path gets 10 random tools with ``gold+10`` and none with ``gold``."""
    if setting not in TOOL_SETTINGS:
        raise ConfigError(f"unknown tool setting {setting!r} (known: {', '.join(TOOL_SETTINGS)})")
    order = random.Random(zlib.crc32(f"order:{seed}:{task_id}".encode()))
    if setting == "all":
        out = list(tools)
        order.shuffle(out)
        return out
    names = [t.name for t in tools]
    gold = [g for g in dict.fromkeys(gold_path) if g in names]
    chosen = set(gold)
    if setting == "gold+10":
        rest = [n for n in names if n not in chosen]
        rng = random.Random(zlib.crc32(f"{seed}:{task_id}".encode()))
        chosen.update(rng.sample(rest, min(DISTRACTORS, len(rest))))
    out = [t for t in tools if t.name in chosen]
    order.shuffle(out)
    return out


STUDENT_BASE = "llamacpp/qwen2.5-coder-0.5b"
"""The model the shipped students were trained on (each a LoRA adapter of it)."""


def student_models(model: str = STUDENT_BASE) -> dict[str, str]:
    """The role models that make each ConAgents role and ReAct use its shipped student
    (``llamacpp/qwen2.5-coder-0.5b+student:ROLE``, docs/distill.md); a role whose student is not shipped plays the
    base. ``model`` must be the students' base, and at least one student must ship (else a ConfigError naming
    where they go and how to make them)."""
    from ..llm.providers.llamacpp import STUDENTS_DIR, shipped_roles

    if model.strip() != STUDENT_BASE:
        raise ConfigError(f"the shipped students are adapters of {STUDENT_BASE}: --students needs --model "
                          f"{STUDENT_BASE}, not {model!r}")
    roles = shipped_roles()
    if not roles:
        raise ConfigError(f"--students: no student ships in {STUDENTS_DIR} (ROLE.gguf for grounding, execution, "
                          "review, react); `make students` trains them (docs/distill.md), or give "
                          "--model-ROLE llamacpp/BASE+ADAPTER_DIR")
    return {role: f"{STUDENT_BASE}+student:{role}" for role in roles}


ToolSetting = Literal["gold", "gold+10", "all"]

__all__ = [
    "ABLATIONS",
    "ADAPTIVE_SAME",
    "AgentSpec",
    "applicable_ablations",
    "BASE_AGENTS",
    "Budgets",
    "DEFAULT_RETRY_TEMPERATURE",
    "DEFAULT_TRIES",
    "MAX_TRIES",
    "TRIAL_SEED_STRIDE",
    "RETRY_NAMES",
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "ROLES",
    "STUDENT_BASE",
    "TOOL_SETTINGS",
    "student_models",
    "ToolSetting",
    "expand_agents",
    "needed_tools",
    "parse_agent",
    "select_tools",
    "trial_seed",
]
