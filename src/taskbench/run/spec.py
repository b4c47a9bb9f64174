"""What a main job runs (:class:`RunSpec`) and its defaults: the one place the policy of `taskbench run` lives.

``run_benchmark(RunSpec())`` from Python does exactly what ``taskbench run`` does with no flags: the CLI only
turns its flags into a :class:`RunSpec`. Fields left ``None`` take the defaults below, which depend on whether
the run uses the embedded default model alone (then the small, stratified, demo-aided, shortlisted main job
with its generation and agents stages) or other models (every sample, zero-shot, every tool, no stages).

The default model is ``TASKBENCH_MODEL`` from the environment (or from a ``.env`` file in the working
directory, see :func:`load_dotenv`), else :data:`DEFAULT_MODEL`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .executor import ExecutorSpec, check_executor

DEFAULT_MODEL = "llamacpp/qwen2.5-coder-0.5b"
"""The embedded default model (no server, no key)."""

DEFAULT_LIMIT = 3
"""Samples per dataset when `taskbench run` is called without --model and --limit: a stratified subset (one
single, one chain, one DAG) so that the embedded model's whole main job (scoring 3 x 3 samples, generating 3,
6 agent episodes) stays within its time budget on a 2-core machine (the measurements: docs/predict-and-run.md,
"How long the main job takes"). Pass --limit 0 for every sample."""

MODEL_ENV = "TASKBENCH_MODEL"
"""Environment variable naming the default model (provider/model)."""

DEFAULT_OUTPUT = Path("runs/default")
"""Run directory of a run without --output."""

DEFAULT_SHOTS = 2
"""Demonstrations in the default run (the embedded model, no --shots): with 2 retrieved demos the 0.5B model
planned better than zero-shot, and zero-shot it sometimes walks the whole tool list until the token limit (the
figures, their sample counts and conditions: docs/embedded-model.md, "Planner quality")."""

DEFAULT_SHORTLIST = 10
"""Tool shortlist of the default run: the answer chooses among the 10 tools most similar to the request plus
the demos' tools; it helped the 0.5B model and keeps most gold tools (the figures: docs/embedded-model.md,
"Planner quality"). Other models get every tool unless --shortlist is given: the shortlist's recall is a
ceiling for a strong model."""


def load_dotenv(path: str | Path = ".env") -> dict[str, str]:
    """Put the ``TASKBENCH_*`` settings of a ``.env`` file (``KEY=VALUE`` lines, ``#`` comments, optional
    quotes) into the environment where they are not set already; returns what it set. Other keys are left
    alone (an API key in .env is read by the provider through --api-key-env, never copied here)."""
    p = Path(path)
    if not p.is_file():
        return {}
    out: dict[str, str] = {}
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export "):].strip()
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or line.startswith("#") or not key.startswith("TASKBENCH_"):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key not in os.environ:
            os.environ[key] = value
            out[key] = value
    return out


def default_model() -> str:
    """``TASKBENCH_MODEL`` if set (and not empty), else the embedded default model."""
    return os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL


@dataclass
class RunSpec:
    """Everything `taskbench run` takes, with the same defaults (``None`` = the default policy above).

    ``resolved()`` fills the defaults; ``benchmark_kwargs()`` gives the keyword arguments of
    :func:`~taskbench.run.job.arun_benchmark`. The executor choice is part of the spec (``executor``); runtime
    objects (progress displays) are not: pass them to ``run_benchmark`` next to it.
    """

    models: list[str] | None = None
    datasets: list[str] | None = None
    output: Path = DEFAULT_OUTPUT
    shots: int | None = None
    demos: str | None = None
    shortlist: int | None = None
    plan: bool = True
    limit: int | None = None
    structured: bool = True
    reformat: bool = False
    concurrency: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int | None = None
    seed: int = 0
    bootstrap: int = 1000
    cache: bool = True
    base_url: str | list[str] | None = None
    endpoint_concurrency: int | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    max_retries: int | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    generate: int | None = None
    generate_tools: str = "multimedia"
    agents: list[str] | None = None
    agent_tasks: list[str] | None = None
    executor: ExecutorSpec | Any = field(default_factory=ExecutorSpec)
    """Where every stage runs: this process (the default), or sharded over Ray workers (``ExecutorSpec("ray")``);
    an executor object is used as given and left open."""

    def uses_default_model(self) -> bool:
        """True when the run is the embedded default model alone (the default policy's small main job)."""
        return self.model_list() == [DEFAULT_MODEL]

    def model_list(self) -> list[str]:
        return list(self.models) if self.models else [default_model()]

    def resolved(self) -> RunSpec:
        """A copy with every ``None`` default filled and the combinations checked (ConfigError if wrong)."""
        from ..predict.runner import default_max_tokens
        from .resolve import BUNDLED_DEMO_DATASETS
        from .stages import DEFAULT_AGENTS, DEFAULT_GENERATE

        if self.reformat and self.structured:
            raise ConfigError("--reformat needs --free (structured output always parses)")
        check_executor(self.executor)
        from ..eval.stats import check_replicates

        check_replicates(self.bootstrap)  # before hours of predictions, not at the scoring that follows them
        models = self.model_list()
        small = self.uses_default_model()
        demos = self.demos if self.demos is not None else ("retrieved" if small else "fixed")
        if demos not in ("fixed", "retrieved"):
            raise ConfigError(f"--demos must be 'fixed' or 'retrieved', not {demos!r}")
        agents = list(self.agents) if self.agents is not None else (list(DEFAULT_AGENTS) if small else [])
        if agents:
            from ..agents.config import parse_agent

            for name in agents:  # a bad name is refused before any model is loaded
                parse_agent(name)
        return RunSpec(
            models=models,
            datasets=list(self.datasets or BUNDLED_DEMO_DATASETS),
            output=Path(self.output),
            shots=self.shots if self.shots is not None else (DEFAULT_SHOTS if small else 0),
            demos=demos,
            shortlist=self.shortlist if self.shortlist is not None else (DEFAULT_SHORTLIST if small else 0),
            plan=self.plan,
            limit=self.limit if self.limit is not None else (DEFAULT_LIMIT if small else 0),
            structured=self.structured, reformat=self.reformat, concurrency=self.concurrency,
            temperature=self.temperature, top_p=self.top_p,
            max_tokens=self.max_tokens if self.max_tokens is not None else min(default_max_tokens(m) for m in models),
            seed=self.seed, bootstrap=self.bootstrap, cache=self.cache, base_url=self.base_url,
            endpoint_concurrency=self.endpoint_concurrency, api_key_env=self.api_key_env, timeout=self.timeout,
            max_retries=self.max_retries, model_options=dict(self.model_options),
            generate=self.generate if self.generate is not None else (DEFAULT_GENERATE if small else 0),
            generate_tools=self.generate_tools, agents=agents,
            agent_tasks=list(self.agent_tasks) if self.agent_tasks else None, executor=self.executor,
        )

    def call_options(self) -> dict[str, Any]:
        """The model options of the run: ``model_options`` plus timeout, retries and endpoint concurrency."""
        out = dict(self.model_options)
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.max_retries is not None:
            out["max_retries"] = self.max_retries
        if self.endpoint_concurrency is not None:
            out["endpoint_concurrency"] = self.endpoint_concurrency
        return out

    def benchmark_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~taskbench.run.job.arun_benchmark` (``run_dir`` included)."""
        from pydantic import ValidationError

        from ..errors import options_error
        from ..predict.runner import PredictOptions

        r = self.resolved()
        assert r.shots is not None and r.limit is not None and r.max_tokens is not None
        try:
            options = PredictOptions(
                shots=r.shots, structured=r.structured, reformat=r.reformat, limit=r.limit or None,
                concurrency=r.concurrency, temperature=r.temperature, top_p=r.top_p, max_tokens=r.max_tokens,
                seed=r.seed, demo_selection="retrieved" if r.demos == "retrieved" else "fixed",
                shortlist=r.shortlist or None, plan=r.plan,
            )
        except ValidationError as exc:  # --max-tokens -1: one line naming the flag, before any model loads
            raise options_error(exc) from None
        return {
            "run_dir": r.output, "models": r.models, "datasets": r.datasets, "options": options, "cache": r.cache,
            "model_options": r.call_options(), "bootstrap": r.bootstrap, "seed": r.seed, "base_url": r.base_url,
            "api_key_env": r.api_key_env, "generate": r.generate or 0, "generate_tools": r.generate_tools,
            "agents": r.agents or [], "agent_tasks": r.agent_tasks, "executor": r.executor,
        }


__all__ = ["DEFAULT_LIMIT", "DEFAULT_MODEL", "DEFAULT_OUTPUT", "DEFAULT_SHORTLIST", "DEFAULT_SHOTS", "MODEL_ENV", "RunSpec", "default_model",
           "load_dotenv"]
