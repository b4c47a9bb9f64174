"""The episode row: one line of an agent run's ``episodes.jsonl`` (one per (agent, task, seed)).

A finished episode's line is an :class:`EpisodeRow`: its figures (success, path rates, turns, tokens, the
mechanism counts; :func:`taskbench.agents.metrics.episode_row` computes them from the trajectory) and its
bookkeeping (the runner's ``id``, the run's ``fingerprint``, the ``trajectory`` file). An episode that failed
for good is a :class:`FailedEpisodeRow` (``"failed": true`` and the ``error``; the next run retries it).
:func:`parse_episode` reads either from a line. Lines of older runs load: what they lack has a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class EpisodeUsage(BaseModel):
    """Tokens of an episode (the same figures as the row's ``prompt_tokens`` / ``completion_tokens``)."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = Field(default=0, description="Prompt tokens.")
    completion_tokens: int = Field(default=0, description="Completion tokens.")


class EpisodeRow(BaseModel):
    """One finished episode: its figures and, as a line of ``episodes.jsonl``, its bookkeeping."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(default=None, description="The runner's record id ('agent/task/seed'; set by the "
                           "runner when the line is written).")
    agent: str = Field(description="Agent name.")
    task: str = Field(description="Task id.")
    seed: int = Field(default=0, description="Seed of the episode.")
    fingerprint: str | None = Field(default=None, description="Fingerprint of the run's configuration (a "
                                    "resume refuses lines of another).")
    trajectory: str | None = Field(default=None, description="The trajectory file, relative to the run "
                                   "directory.")
    success: bool = Field(default=False, description="The environment's verdict.")
    reason: str = Field(default="", description="The checker's reason.")
    answered: bool = Field(default=False, description="Whether a final answer was given.")
    stop: str = Field(default="answer", description="Why it ended: answer | step_cap | call_cap | context_full | "
                                                  "no_plan | ...")
    calls: list[str] = Field(default_factory=list, description="Tools called, in order.")
    gold_path: list[str] = Field(default_factory=list, description="The gold path.")
    cpr_lcs: float | None = Field(default=None, description="Correct path rate (LCS; None without a gold path).")
    cpr_contains: bool | None = Field(default=None, description="Gold path is a subsequence of the calls.")
    extra_calls: int = Field(default=0, description="max(0, calls - gold length).")
    turns: int = Field(default=0, description="Model calls by planning or acting roles.")
    model_calls: int = Field(default=0, description="All model calls.")
    reviews: int = Field(default=0, description="Review verdicts.")
    code_runs: int = Field(default=0, description="Code runs.")
    tool_calls: int = Field(default=0, description="Tool calls.")
    failed_turns: int = Field(default=0, description="Model answers cut off or not usable under their schema.")
    revise_verdicts: int = Field(default=0, description="Review verdicts that asked for a change.")
    revisions: int = Field(default=0, description="Plans revised after a planning review.")
    plans_changed: int = Field(default=0, description="Revisions that changed the plan's tool or arguments.")
    reroutes: int = Field(default=0, description="Execution reviews that sent their feedback to grounding.")
    retries: int = Field(default=0, description="Code rewritten for the same step (review or compiler feedback).")
    retries_fixed: int = Field(default=0, description="Rewrites that ran where the code before had failed.")
    cpr_f1: float | None = Field(default=None, description="Correct path rate as the paper defines it: F1 of "
                                                           "the called tools against the gold path (multisets).")
    counters: dict[str, int] = Field(default_factory=dict, description="The agent's own mechanisms: DFSDT's "
                                     "backtracks, grounded arguments' plans and refusals ... (outcome details).")
    attempts: int = Field(default=1, description="Trials used (react@N, toolllm@N, reflexion; 1 for the others); "
                                                 "the path rates and ``calls`` are the last trial's.")
    answer_in_view: bool | None = Field(default=None, description="Whether the values the checker expects in the "
                                        "answer were in what the agent saw of the tool results (None: the checker "
                                        "expects no value, or the task has no resolved checker).")
    answer_in_results: bool | None = Field(default=None, description="Whether they were in the tool results at "
                                           "all (whole), as answer_in_view.")
    prompt_tokens: int = Field(default=0, description="Prompt tokens.")
    completion_tokens: int = Field(default=0, description="Completion tokens.")
    model_seconds: float = Field(default=0.0, description="Seconds the model calls took (cache-replayed).")
    wall_seconds: float = Field(default=0.0, description="Wall seconds of the episode in this run.")
    usage: EpisodeUsage | None = Field(default=None, description="The tokens again, as other records keep them "
                                       "(None: a row never written to a run).")

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class FailedEpisodeRow(BaseModel):
    """An episode that failed for good (a model or sandbox error, a broken checker, a bug): retried next run.
    A failure the runner recorded itself has only ``id``, ``failed`` and ``error``."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(default=None, description="The runner's record id (set when the line is written).")
    agent: str | None = Field(default=None, description="Agent name.")
    task: str | None = Field(default=None, description="Task id.")
    seed: int | None = Field(default=None, description="Seed of the episode.")
    fingerprint: str | None = Field(default=None, description="Fingerprint of the run's configuration.")
    trajectory: str | None = Field(default=None, description="The trajectory file (cut short), relative to the "
                                   "run directory.")
    failed: Literal[True] = Field(default=True, description="Marks a failure record.")
    error: str = Field(default="", description="Why it failed, one line.")


def parse_episode(record: Mapping[str, Any]) -> EpisodeRow | FailedEpisodeRow:
    """One line of ``episodes.jsonl`` as its model (a line with a true ``failed`` is a failure, as the runner
    reads it). Raises pydantic's ValidationError for a line of the wrong shape."""
    if record.get("failed"):
        return FailedEpisodeRow.model_validate({**record, "failed": True})
    return EpisodeRow.model_validate(record)


__all__ = ["EpisodeRow", "EpisodeUsage", "FailedEpisodeRow", "parse_episode"]
