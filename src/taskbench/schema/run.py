"""The run log: a self-describing record of one `taskbench run` (models x datasets -> predictions -> scores).

It holds everything needed to understand, resume, re-score and compare a run: the configuration, the software
(git revision, package versions), seeds, timings, usage, every per-sample prediction and the metrics in both
strict and reference-compatible modes. ``schema_version`` changes when the layout does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from .header import RunEnvironment
from .sample import Prediction, Usage
from .scores import CompatMetrics, StrictResult
from .trajectory import Trajectory

RUN_LOG_SCHEMA_VERSION = 4
"""Version of the :class:`RunLog` layout written by this taskbench (2: records are predictions or trajectories,
the config records everything needed to rerun, status may be 'incomplete'; 3: ``stages``, the generation and
agent runs of the main job; 4: ``passes`` (one per invocation, resumed ones included, with how each ended),
the writer's ``pid`` and ``host``, the current ``stage``, status 'died', and timings and usage summed over
passes). Older logs load: the new fields have defaults."""


def _record_kind(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return "trajectory" if kind == "trajectory" else "prediction"


RunRecord = Annotated[
    Annotated[Prediction, Tag("prediction")] | Annotated[Trajectory, Tag("trajectory")],
    Discriminator(_record_kind),
]
"""One per-sample record of a run: a :class:`Prediction` or a :class:`Trajectory` (by ``kind``; records
without one, as version-1 logs wrote them, are predictions)."""


class RunConfig(BaseModel):
    """What was asked for."""

    model_config = ConfigDict(extra="ignore")

    models: list[str] = Field(description="Models as 'provider/model', in run order.")
    datasets: list[str] = Field(description="Datasets as given (bundled names or directories), in run order.")
    shots: int = Field(default=0, description="Demos per prompt (0-3).")
    limit: int | None = Field(default=None, description="Samples per dataset (stratified), None = all.")
    structured: bool = Field(default=True, description="Schema-constrained output (else free text + extraction).")
    reformat: bool = Field(default=False, description="Free mode: repair pass for unparseable answers.")
    temperature: float = Field(default=0.0, description="Sampling temperature.")
    top_p: float = Field(default=1.0, description="Nucleus sampling mass.")
    max_tokens: int = Field(default=1024, description="Most tokens per answer.")
    concurrency: int = Field(default=1, description="Requests in flight per model.")
    cache: bool = Field(default=True, description="Whether the response cache was used.")
    bootstrap: int = Field(default=1000, description="Bootstrap replicates for the strict CIs.")
    model_options: dict[str, Any] = Field(default_factory=dict, description="Provider options (no secrets).")
    seed: int | None = Field(default=0, description="Sampling seed sent to the backend.")
    template: str | None = Field(default=None, description="Custom prompt template file, if one was used.")
    plan: bool = Field(default=True, description="Structured answers fill the bounded task plan (else the graph).")
    demo_selection: str = Field(default="fixed", description="How demos were chosen: fixed | retrieved.")
    shortlist: int | None = Field(default=None, description="Tools the answer could choose from (None: all).")
    base_url: str | list[str] | None = Field(
        default=None, description="Server URL of the openai-compatible models, if any (a list: replicas of one model)."
    )
    api_key_env: str | None = Field(
        default=None, description="*Name* of the environment variable holding the API key (never the key)."
    )
    timeout: float | None = Field(default=None, description="Seconds per attempt, when set (else the backend's).")
    max_retries: int | None = Field(default=None, description="Retries per call, when set (else the backend's).")
    command: list[str] = Field(default_factory=list, description="The command line that started the run.")
    executor: str = Field(default="local", description="Where predictions ran: 'local' or 'ray' (sharded).")
    ray_address: str | None = Field(default=None, description="The Ray cluster joined, if any (None: a local one).")
    workers: int | None = Field(default=None, description="Shards run at once with a sharded executor.")
    generate: int = Field(default=0, description="Samples the generation stage attempted (0: no generation).")
    generate_tools: str | None = Field(default=None, description="Tool library of the generation stage.")
    agents: list[str] = Field(default_factory=list, description="Agents of the agents stage (none: no stage).")
    agent_env: str | None = Field(default=None, description="Environment of the agents stage.")
    agent_tasks: list[str] = Field(default_factory=list, description="Task ids of the agents stage.")


class RunEntry(BaseModel):
    """One model on one dataset."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(description="'provider/model'.")
    dataset: str = Field(description="Dataset name.")
    data_path: str = Field(description="Dataset directory that was read.")
    dependency: str = Field(description="'resource' or 'temporal'.")
    predictions_path: str = Field(description="Predictions file, relative to the run directory.")
    metrics_path: str | None = Field(default=None, description="Metrics JSON, relative to the run directory.")
    sample_ids: list[str] = Field(default_factory=list, description="Ids of the selected samples, in order.")
    demo_ids: list[str] = Field(default_factory=list, description="Demo candidates, in order of preference.")
    status: Literal["pending", "predicted", "scored", "incomplete", "failed"] = Field(
        default="pending",
        description="Progress: 'incomplete' when some calls failed for good (scored as they are; rerun to retry).",
    )
    error: str | None = Field(default=None, description="Why the entry failed, if it did.")
    predict_seconds: float = Field(default=0.0, description="Wall seconds of prediction, summed over the passes "
                                   "of a resumed run.")
    evaluate_seconds: float = Field(default=0.0, description="Wall seconds of scoring.")
    usage: Usage = Field(default_factory=Usage, description="Tokens and generation seconds over the records.")
    run_usage: Usage = Field(
        default_factory=Usage, description="What the passes themselves spent, summed over the passes of a resumed "
        "run (cache hits cost no tokens here).")
    failures: int = Field(default=0, description="Records whose model call failed for good (rerun retries them).")
    parse_failures: int = Field(default=0, description="Records with a parse error.")
    cache_hits: int = Field(default=0, description="Answers served from the response cache, summed over passes.")
    strict: StrictResult | None = Field(default=None, description="Strict metrics document (all groups).")
    compat: CompatMetrics | None = Field(
        default=None, description="Reference-compatible metrics, in the reference evaluator's layout."
    )
    records: list[RunRecord] = Field(
        default_factory=list, description="Per-sample records (predictions or trajectories), in order."
    )


class StageExample(BaseModel):
    """A kept sample of the generation stage, for the report."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(default=None, description="Sample id.")
    type: str | None = Field(default=None, description="single | chain | dag.")
    user_request: str | None = Field(default=None, description="The generated request.")
    tools: list[str | None] = Field(default_factory=list, description="Its tools, in order.")


class GenerateStageSummary(BaseModel):
    """The headline figures of the generation stage (its directory's statistics.json has everything)."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["generate"] = "generate"
    tools: str | None = Field(default=None, description="The tool library generated from.")
    method: str | None = Field(default=None, description="The generation method.")
    planned: int | None = Field(default=None, description="Plan entries.")
    answered: int | None = Field(default=None, description="Entries the model answered.")
    failed_calls: int | None = Field(default=None, description="Entries whose model call failed for good.")
    rule_critic: int | None = Field(default=None, description="Samples passing the rule critic.")
    llm_critic: int | None = Field(default=None, description="Samples passing the LLM critic.")
    both_critics: int | None = Field(default=None, description="Samples passing both.")
    kept: int | None = Field(default=None, description="Samples in data.json.")
    by_mode: dict[str, dict[str, int | None]] = Field(default_factory=dict, description="single/chain/dag -> "
                                                      "{planned, kept}.")
    calls: int | None = Field(default=None, description="Model calls, summed over the passes.")
    cache_hits: int | None = Field(default=None, description="Calls answered from the cache, summed over passes.")
    tokens: int | None = Field(default=None, description="Prompt and completion tokens, summed over passes.")
    examples: list[StageExample] = Field(default_factory=list, description="A few kept samples.")
    reasons: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Why samples were not kept: critic (rule, llm, exec, dedup) -> issue "
        "code -> samples, most frequent first (statistics.json's reasons_by_critic).")


class AgentsStageSummary(BaseModel):
    """The headline figures of the agents stage (its directory's metrics.json has everything)."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["agents"] = "agents"
    env: str | None = Field(default=None, description="The environment.")
    tools: str | None = Field(default=None, description="The tool setting (gold, gold+10, all).")
    tasks: list[str] = Field(default_factory=list, description="Task ids.")
    max_steps: int | None = Field(default=None, description="The step cap per episode.")
    comparison: list[dict[str, Any]] = Field(default_factory=list, description="One row per agent (success "
                                             "rate, correct path rates, turns, tokens, seconds), as metrics.json.")
    role_models: dict[str, str] = Field(default_factory=dict, description="The model that played each role "
                                        "(grounding, execution, review, react): the shipped students, or the "
                                        "run's model.")
    failures: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Why episodes failed, per agent: 'stop:step_cap' (and other early "
        "stops) or 'checker:<the checker's reason>' -> episodes, most frequent first (metrics.json's "
        "agents.<name>.failures).")


StageSummary = Annotated[GenerateStageSummary | AgentsStageSummary, Field(discriminator="kind")]
"""A stage's summary, tagged by the stage's kind."""


class RunStage(BaseModel):
    """One stage of the main job beyond scoring: a small generation with critics, or an agent comparison. Its
    own directory (``path``) is a complete ``taskbench generate`` / ``taskbench agents eval`` output, resumable
    on its own; this keeps the headline figures for the report."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["generate", "agents"] = Field(description="Which stage.")
    model: str = Field(description="'provider/model' the stage ran.")
    path: str = Field(description="The stage's output directory, relative to the run directory.")
    status: Literal["pending", "complete", "incomplete", "failed"] = Field(
        default="pending", description="'incomplete': some model calls failed for good (rerun retries them); "
        "'failed': the stage stopped on an error (see ``error``).")
    error: str | None = Field(default=None, description="Why the stage failed or is incomplete, if it is.")
    seconds: float = Field(default=0.0, description="Wall seconds of the stage, summed over the passes of a "
                           "resumed run.")
    summary: StageSummary | None = Field(
        default=None, description="generate: the statistics (planned, answered, critics' pass counts, kept) and "
        "examples of kept samples; agents: the comparison rows (success rate, correct path rates, turns, tokens, "
        "seconds per agent). None until the stage produced them.")

    @model_validator(mode="before")
    @classmethod
    def _tag_summary(cls, data: Any) -> Any:
        """Logs before the typed summary stored an untagged dict ({} for a failed stage): tag it by ``kind``."""
        if isinstance(data, dict) and isinstance(data.get("summary"), dict):
            summary = data["summary"]
            data = {**data, "summary": {**summary, "kind": summary.get("kind", data.get("kind"))} if summary
                    else None}
        return data

    @model_validator(mode="after")
    def _same_kind(self) -> RunStage:
        if self.summary is not None and self.summary.kind != self.kind:
            raise ValueError(f"a {self.kind} stage with a {self.summary.kind} summary")
        return self


RunStatus = Literal["running", "complete", "incomplete", "failed", "interrupted", "died"]


class RunPass(BaseModel):
    """One invocation of a run (the first, or a resume) and how it ended."""

    model_config = ConfigDict(extra="ignore")

    started: str = Field(description="Start time, ISO 8601 UTC.")
    finished: str | None = Field(default=None, description="End time (for a pass that died: its last update).")
    seconds: float = Field(default=0.0, description="Wall seconds of the pass (a died pass: up to its last "
                           "update).")
    status: RunStatus = Field(default="running", description="How the pass ended ('died': killed by a signal "
                              "or a native crash, without a chance to record it).")
    pid: int | None = Field(default=None, description="Process id of the pass.")
    host: str | None = Field(default=None, description="Host name of the pass.")
    stage: str | None = Field(default=None, description="What the pass was doing last (where it died, if it did).")
    error: str | None = Field(default=None, description="Why it failed or how it died, one line.")


class RunLog(BaseModel):
    """A whole run: config, environment, seeds, timings, usage, per-sample records and metrics."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = Field(default=RUN_LOG_SCHEMA_VERSION, description="Layout version of this log.")
    run_id: str = Field(description="Identifier of the run (the run directory's name plus start time).")
    status: RunStatus = Field(
        default="running",
        description="Where the run ended: 'incomplete' when some model calls failed for good (the run exits 1; "
        "rerunning retries them), 'failed' on an error, 'interrupted' on Ctrl-C or SIGTERM. A log that still "
        "says 'running' while no process holds the run directory's lock belongs to a run that died "
        "(:func:`taskbench.run.run_state` tells).",
    )
    started: str = Field(description="Start time of the first pass, ISO 8601 UTC.")
    finished: str | None = Field(default=None, description="End time, ISO 8601 UTC.")
    updated: str | None = Field(default=None, description="When this log was last written, ISO 8601 UTC.")
    seconds: float = Field(default=0.0, description="Wall seconds, summed over every pass of the run.")
    pid: int | None = Field(default=None, description="Process id of the pass that wrote this log last.")
    host: str | None = Field(default=None, description="Host name of that process.")
    stage: str | None = Field(default=None, description="What the run was doing when this log was written.")
    passes: list[RunPass] = Field(default_factory=list, description="Every invocation of the run, in order; "
                                  "more than one when it was resumed.")
    previous_death: str | None = Field(default=None, description="How the pass before this one ended, when it "
                                       "died (a native crash, SIGKILL): one line, as the CLI printed it.")
    config: RunConfig = Field(description="What was asked for.")
    environment: RunEnvironment = Field(description="Software and machine.")
    seeds: dict[str, int | None] = Field(default_factory=dict, description="Every seed used, by purpose.")
    entries: list[RunEntry] = Field(default_factory=list, description="One per (model, dataset).")
    usage: Usage = Field(default_factory=Usage, description="Totals over all entries' records.")
    stages: list[RunStage] = Field(default_factory=list, description="Generation and agent stages, in run order.")

    @property
    def resumed(self) -> int:
        """How many times the run was resumed (passes after the first)."""
        return max(0, len(self.passes) - 1)

    def entry(self, model: str, dataset: str) -> RunEntry | None:
        """The entry of a (model, dataset) pair, if any."""
        for e in self.entries:
            if e.model == model and e.dataset == dataset:
                return e
        return None


__all__ = ["AgentsStageSummary", "GenerateStageSummary", "RUN_LOG_SCHEMA_VERSION", "RunConfig", "RunEntry", "RunEnvironment", "RunLog", "RunPass", "RunRecord",
           "RunStage", "RunStatus", "StageExample", "StageSummary"]
