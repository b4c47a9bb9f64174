"""Benchmark samples (gold) and model predictions."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from .task import TaskGraph, TaskLink, TaskNode, resolve_link_indices

StructureType = Literal["single", "chain", "dag"]
"""Shape of a sample's tool graph: one node, a path, or a general DAG."""

# Field names used by other releases of the data, mapped to ours. v1 (the first TaskBench release) calls the
# request 'instruction'; the Hugging Face hub copy's parquet/JSON files use tool_* names for some fields.
FIELD_ALIASES: dict[str, str] = {
    "instruction": "user_request",
    "tool_steps": "task_steps",
    "tool_nodes": "task_nodes",
    "tool_links": "task_links",
}


def record_id(value: Any) -> str | None:
    """A record's ``id`` as the string it is compared by: a string as it is, an integer (not a bool) as its
    decimal text; None for anything else (null, a float, a list, an object), which is no usable id."""
    if type(value) is str:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _maybe_json(value: Any) -> Any:
    """v1 stores ``sampled_nodes``/``sampled_links`` as JSON strings inside the record."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError("the JSON text is nested too deeply to read") from None
        except ValueError as exc:  # JSONDecodeError, or an integer of more than 4300 digits
            raise ValueError(f"not valid JSON text ({exc})") from None
    return value


class Usage(BaseModel):
    """Tokens and time spent on one model call (or a sum of calls)."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = Field(default=0, description="Prompt tokens the model read (evaluated or cached).")
    completion_tokens: int = Field(default=0, description="Tokens the model generated.")
    seconds: float = Field(default=0.0, description="Wall-clock seconds of the call(s), including retries.")
    cached: bool = Field(default=False, description="True when the answer came from the response cache.")
    retries: int = Field(default=0, description="How many times a failed request was retried.")

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            seconds=self.seconds + other.seconds,
            cached=self.cached and other.cached,
            retries=self.retries + other.retries,
        )


TRUNCATED = "the answer hit the token limit (finish_reason 'length'); a cut-off answer is not scored"
"""The error of a prediction whose answer was cut off at the token limit: it counts as a failure in strict
scoring, whatever could be repaired from it."""


class CriticVerdict(BaseModel):
    """One critic's verdict on a generated sample (the data engine's quality gate)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="Which critic: 'rule', 'llm' (the model's own check_by_teacher or a separate "
                      "critic call), 'dedup', ...")
    passed: bool | None = Field(default=None, description="True passed, False failed, None not run or unknown.")
    reasons: list[str] = Field(default_factory=list, description="Why it failed (issue codes and messages).")
    model: str | None = Field(default=None, description="'provider/model' of an LLM critic.")
    raw: JsonValue = Field(default=None, description="What the critic said, as given (e.g. check_by_teacher).")


class Sample(TaskGraph):
    """One benchmark record: a user request and its gold task graph, plus how it was sampled.

    Reads both release shapes: v1 (``instruction``; ``sampled_nodes``/``sampled_links`` as JSON strings) and
    the current one (``user_request``; lists), and the hub copy's ``tool_*`` field names. Writes the current
    shape.
    """

    model_config = ConfigDict(extra="ignore")

    id: str = Field(description="Sample id, unique within a dataset: a string, or an integer stored as its text.")
    user_request: str = Field(default="", description="The request a user would type (v1: 'instruction').")
    type: StructureType = Field(default="single", description="single | chain | dag.")
    n_tools: int = Field(default=0, description="Number of tools in the sampled subgraph.")
    seed: int | None = Field(default=None, description="Seed the sample was generated with, when known.")
    sampled_nodes: list[dict[str, JsonValue]] | None = Field(
        default=None, description="The sampled subgraph's nodes as given to the data engine."
    )
    sampled_links: list[TaskLink] | None = Field(
        default=None, description="The sampled subgraph's links as given to the data engine."
    )
    method: str | None = Field(
        default=None, description="How it was generated: back-instruct | two-stage | no-edges | self-instruct."
    )
    critics: dict[str, CriticVerdict] = Field(
        default_factory=dict, description="Verdicts of the data engine's critics, by critic name."
    )
    duplicate_of: str | None = Field(
        default=None, description="Id of an earlier sample whose request this one nearly repeats, if any."
    )
    scores: dict[str, float] = Field(
        default_factory=dict, description="Judge scores (naturalness, complexity, alignment: 1-5), when judged."
    )

    @model_validator(mode="before")
    @classmethod
    def _release_shapes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in FIELD_ALIASES.items():
            if old in data and new not in data:
                data[new] = data.pop(old)
        for key in ("sampled_nodes", "sampled_links", "task_nodes", "task_links", "task_steps"):
            if key in data and isinstance(data[key], str) and key != "task_steps":
                data[key] = _maybe_json(data[key])
        if "id" in data and type(data["id"]) is not str and record_id(data["id"]) is not None:
            data["id"] = record_id(data["id"])
        for links, nodes in (("task_links", "task_nodes"), ("sampled_links", "sampled_nodes")):
            if type(data.get(links)) is list:
                data[links] = resolve_link_indices(data[links], data.get(nodes), field=links)
        if data.get("n_tools") is None and isinstance(data.get("task_nodes"), list):
            data["n_tools"] = len(data["task_nodes"])
        return data

    @field_validator("n_tools", mode="before")
    @classmethod
    def _int(cls, value: Any) -> Any:
        return int(value) if isinstance(value, str) and value.isdigit() else value

    @property
    def graph(self) -> TaskGraph:
        """The gold task graph alone."""
        return TaskGraph(task_steps=self.task_steps, task_nodes=self.task_nodes, task_links=self.task_links)

    def to_record(self) -> dict[str, Any]:
        """The sample in the current reference ``data.json`` shape (one JSON object)."""
        out: dict[str, Any] = {
            "id": self.id,
            "seed": self.seed,
            "type": self.type,
            "n_tools": self.n_tools,
            "user_request": self.user_request,
            "task_steps": list(self.task_steps),
            "task_nodes": [n.model_dump(mode="json") for n in self.task_nodes],
            "task_links": [lk.model_dump(mode="json") for lk in self.task_links],
        }
        if self.sampled_nodes is not None:
            out["sampled_nodes"] = self.sampled_nodes
        if self.sampled_links is not None:
            out["sampled_links"] = [lk.model_dump(mode="json") for lk in self.sampled_links]
        if self.method is not None:
            out["method"] = self.method
        if self.critics:
            out["critics"] = {k: v.model_dump(mode="json") for k, v in self.critics.items()}
        if self.duplicate_of is not None:
            out["duplicate_of"] = self.duplicate_of
        if self.scores:
            out["scores"] = dict(self.scores)
        return out


class Prediction(BaseModel):
    """What a model produced for one sample.

    Written as one JSON line in the reference predictions format (``{id, user_request, result}``) plus our
    extra keys, so the reference evaluator can read our files and we can read theirs.
    """

    model_config = ConfigDict(extra="ignore")

    kind: Literal["prediction"] = Field(default="prediction", description="Record kind (for run logs).")
    id: str = Field(description="Id of the sample this predicts.")
    user_request: str | None = Field(default=None, description="The request the model saw.")
    result: dict[str, Any] | None = Field(
        default=None,
        description="The parsed JSON object ({task_steps, task_nodes, task_links}) as the model gave it, "
        "before validation; None when nothing could be parsed.",
    )
    error: str | None = Field(default=None, description="Why the output could not be parsed, if it could not.")
    raw: str | None = Field(default=None, description="The model's raw text output.")
    model: str | None = Field(default=None, description="'provider/model' that produced it.")
    usage: Usage | None = Field(default=None, description="Tokens, seconds, cache and retry counts.")
    finish_reason: str | None = Field(
        default=None, description="Why the answer ended: 'stop', or 'length' when it hit the token limit."
    )
    reformat_raw: str | None = Field(default=None, description="Raw text of the --reformat repair pass, if run.")
    failed: bool = Field(
        default=False,
        description="True when the model call failed for good (no answer): the record holds the error and the "
        "next run retries it.",
    )

    @model_validator(mode="before")
    @classmethod
    def _id(cls, data: Any) -> Any:
        if isinstance(data, dict) and "id" in data and type(data["id"]) is not str and record_id(data["id"]):
            data = dict(data)
            data["id"] = record_id(data["id"])
        return data

    def graph(self) -> TaskGraph | None:
        """The result validated as a :class:`TaskGraph`, or None when missing or malformed."""
        if not isinstance(self.result, dict):
            return None
        try:
            return TaskGraph.model_validate(self.result)
        except Exception:
            return None

    def to_record(self) -> dict[str, Any]:
        """One JSON line for a predictions file."""
        out: dict[str, Any] = {"id": self.id}
        if self.user_request is not None:
            out["user_request"] = self.user_request
        out["result"] = self.result
        for key in ("error", "raw", "model"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.usage is not None:
            out["usage"] = self.usage.model_dump(mode="json")
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        if self.reformat_raw is not None:
            out["reformat_raw"] = self.reformat_raw
        if self.failed:
            out["failed"] = True
        return out


__all__ = ["FIELD_ALIASES", "TRUNCATED", "CriticVerdict", "Prediction", "Sample", "StructureType", "TaskNode", "Usage", "record_id"]
