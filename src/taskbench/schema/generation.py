"""The generation manifest (what a ``taskbench generate`` directory was made with) and the generation record
(what it made of each plan entry: one line of ``data_raw.json``).

The manifest is the ``config`` of the directory's run header (``header.json``; before headers, the directory's
``generation.json``, which had the same keys and a ``"schema": 1``). A rerun into the directory reads it back:
the arguments it was not given come from here, and those that decide the records (the header's ``identity``)
must be the same. Every field is optional when read, as older directories may lack one (``guided``, ``env``);
:func:`taskbench.engine.generate.prepare_output` writes all of them. Values of the wrong type or out of range
are refused when read (the same bounds as the options they were written from).

A plan entry's line of ``data_raw.json`` is a :class:`GenerationRecord`: the entry (id, seed, mode, size, the
sampled subgraph), the answer (``raw``, ``finish_reason``, ``usage``; ``stages`` for two-stage), the parsed
``result`` or why there is none (``error_code``, ``error``), the gold graph's run in an environment
(``execution``), a separate critic's call (``critic``) and the critics' verdicts in short (``critics``). A
plan entry whose model call failed for good is a :class:`FailedGenerationRecord` (``"failed": true``; the next
run retries it). :func:`parse_generation_record` reads either. The records write only the keys they were
given, in the order of their fields, as the engine always wrote them: a line the engine wrote, read and written
back, is the same line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from ..errors import InputError, validation_message
from .plan import SampledSubgraph
from .sample import StructureType
from .task import TaskLink


class GenerationManifest(BaseModel):
    """The arguments and facts of a generation directory (the run header's ``config`` of a generate run)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    env: str | None = Field(default=None, description="The environment the gold graphs ran in (--env), if any.")
    method: str | None = Field(default=None, description="back-instruct | two-stage | no-edges | self-instruct.")
    seed: int | None = Field(default=None, description="Plan seed.")
    n: int | None = Field(default=None, ge=0, description="Plan entries (samples attempted).")
    # ints stay ints (the default weights 3:7:8 are written as such), floats floats
    mode_weights: dict[str, float | int] | None = Field(default=None, description="single/chain/dag weights.")
    size_weights: dict[int, float] | None = Field(default=None, description="Tool-count weights for chain/dag "
                                                  "(keys written as strings, as JSON has them).")
    model: str | None = Field(default=None, description="'provider/model' of the generator.")
    critic_model: str | None = Field(default=None, description="'provider/model' of a separate LLM critic.")
    check: bool | None = Field(default=None, description="Whether the answer had the teacher's check (None: "
                               "not recorded, which meant True).")
    guided: bool | None = Field(default=None, description="Whether the schema fixed the sampled subgraph (None: "
                                "not recorded, which meant False).")
    temperature: float | None = Field(default=None, ge=0.0, description="Sampling temperature.")
    top_p: float | None = Field(default=None, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    max_tokens: int | None = Field(default=None, ge=64, description="Most tokens per answer.")
    limits: dict[str, int | None] | None = Field(default=None, description="Character bounds of the answer's "
                                                 "strings (user_request, step, value, comments).")
    graph_sha256: str | None = Field(default=None, description="SHA-256 of the tool graph's canonical JSON.")
    dependency: str | None = Field(default=None, description="'resource' or 'temporal'.")
    tools: int | None = Field(default=None, description="Tools in the graph.")
    links: int | None = Field(default=None, description="Links in the graph.")
    taskbench: str | None = Field(default=None, description="taskbench version that wrote it.")


class _SetKeys(BaseModel):
    """A record that writes only the fields it was given (read from a line, passed, or assigned), in field
    order: the keys that are absent for some records (``stages``, ``error``, ``execution`` ...) stay absent."""

    model_config = ConfigDict(extra="ignore")

    @model_serializer(mode="wrap")
    def _only_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: data[k] for k in self._keys() if k in data}

    def _keys(self) -> list[str]:
        """The keys written, in order: the fields given, in field order."""
        return [k for k in type(self).model_fields if k in self.model_fields_set]

    def to_record(self) -> dict[str, Any]:
        """The JSON line (values as given: the model's answer is written as it was parsed)."""
        return self.model_dump(mode="python")


class AnswerUsage(BaseModel):
    """Tokens and seconds of one answer (of both stages' answers in a two-stage record's ``usage``)."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = Field(default=0, description="Prompt tokens.")
    completion_tokens: int = Field(default=0, description="Completion tokens.")
    seconds: float = Field(default=0.0, description="Seconds the call took (replayed on a cache hit).")


class StageAnswer(BaseModel):
    """What one model call produced, as recorded (no run-dependent facts: latency is replayed on a cache hit)."""

    model_config = ConfigDict(extra="ignore")

    raw: str = Field(default="", description="The answer's text.")
    finish_reason: str | None = Field(default=None, description="Why the answer ended ('length': cut off).")
    usage: AnswerUsage = Field(default_factory=AnswerUsage, description="Tokens and seconds.")


class CriticCall(_SetKeys):
    """A separate LLM critic's call on a generated sample (``generate --critic-model``): its answer, and the
    parsed ``result`` or why there is none (``error``)."""

    model: str | None = Field(default=None, description="'provider/model' of the critic.")
    raw: str | None = Field(default=None, description="The critic's answer text.")
    finish_reason: str | None = Field(default=None, description="Why the answer ended.")
    usage: AnswerUsage | None = Field(default=None, description="Tokens and seconds of the call.")
    result: dict[str, Any] | None = Field(default=None, description="The parsed answer (comments, executable, "
                                          "correct).")
    error: str | None = Field(default=None, description="'code: message' when the answer was unusable.")


class GoldCall(_SetKeys):
    """One call of a gold graph run in the environment: the ``result`` or the ``error`` (either, shortened)."""

    node: int = Field(description="Index of the node in the sample.")
    tool: str = Field(description="The tool called.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments sent.")
    result: Any = Field(default=None, description="What the tool returned (long text cut).")
    error: Any = Field(default=None, description="The error the call returned (long text cut).")


class GoldExecution(BaseModel):
    """The execution critic's record: the gold graph run in the environment (``generate --env``)."""

    model_config = ConfigDict(extra="ignore")

    passed: bool = Field(default=False, description="Every call returned a result.")
    reasons: list[str] = Field(default_factory=list, description="Why not ('exec_failed: node 2 (...): ...').")
    calls: list[GoldCall] = Field(default_factory=list, description="The calls made, in order; the first that "
                                  "failed is the last.")


class _EntryFields(_SetKeys):
    """The plan entry a record is of."""

    id: str = Field(description="The plan entry's sample id ('00017').")
    seed: int | None = Field(default=None, description="The entry's generation seed (in the prompt, sent to "
                             "the backend).")
    type: StructureType = Field(default="single", description="The sampled structure: single | chain | dag.")
    n_tools: int = Field(default=0, description="Tools in the sampled subgraph.")
    method: str | None = Field(default=None, description="back-instruct | two-stage | no-edges | self-instruct.")
    model: str | None = Field(default=None, description="'provider/model' of the generator.")
    check: bool = Field(default=True, description="Whether the answer was asked for check_by_teacher.")
    guided: bool | None = Field(default=None, description="Whether the schema fixed the sampled subgraph.")
    plan: SampledSubgraph | None = Field(default=None, description="The plan entry.")
    sampled_nodes: list[dict[str, JsonValue]] | None = Field(
        default=None, description="The sampled nodes in the released data's shape (absent for self-instruct).")
    sampled_links: list[TaskLink] | None = Field(default=None, description="The sampled links (absent for "
                                                 "self-instruct).")


class GenerationRecord(_EntryFields):
    """A plan entry the model answered (usable or not): one line of ``data_raw.json``."""

    stages: list[StageAnswer] | None = Field(default=None, description="Two-stage: each stage's answer.")
    raw: str | None = Field(default=None, description="The (last) answer's text.")
    finish_reason: str | None = Field(default=None, description="Why the (last) answer ended.")
    usage: AnswerUsage | None = Field(default=None, description="Tokens and seconds (two-stage: both stages').")
    result: dict[str, Any] | None = Field(default=None, description="The parsed answer (two-stage: with the "
                                          "stage-1 user_request); absent when it was unusable.")
    error_code: str | None = Field(default=None, description="Why the answer is unusable: truncated | "
                                   "unparseable.")
    error: str | None = Field(default=None, description="The message of error_code.")
    execution: GoldExecution | None = Field(default=None, description="The gold graph run in the environment.")
    critic: CriticCall | None = Field(default=None, description="A separate LLM critic's call.")
    critics: dict[str, bool | None] = Field(default_factory=dict, description="The critics' verdicts in short, "
                                            "by name (the output step recomputes them).")

    def _keys(self) -> list[str]:
        keys = super()._keys()
        if self.stages is not None and len(self.stages) == 1 and "error" in keys and "raw" in keys:
            # a two-stage answer refused at stage 1 has always been written error first, then the answer
            moved = [k for k in ("error_code", "error") if k in keys]
            rest = [k for k in keys if k not in moved]
            at = rest.index("raw")
            keys = rest[:at] + moved + rest[at:]
        return keys

    def take(self, answer: StageAnswer) -> None:
        """Record ``answer`` as the record's (last) answer: its raw text, finish reason and usage."""
        self.raw, self.finish_reason, self.usage = answer.raw, answer.finish_reason, answer.usage


class FailedGenerationRecord(_EntryFields):
    """A plan entry whose model call failed for good (retried by the next run): the entry and the error. A
    failure written by the runner itself has only ``id``, ``failed`` and ``error``."""

    failed: Literal[True] = Field(default=True, description="Marks a failure record.")
    error: str = Field(default="", description="Why the call failed, one line.")


class ExecutedStep(BaseModel):
    """One executed call of a generated task (``generate --method executed``): what it was called with, where its
    identifiers came from, and how its value was taken from the result (three ways: JMESPath, Python, words)."""

    model_config = ConfigDict(extra="ignore")

    tool: str = Field(description="The operation called.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments as called (typed).")
    sources: dict[str, int] = Field(default_factory=dict, alias="from",
                                    description="parameter -> index of the earlier step whose value it took.")
    named: dict[str, str] = Field(default_factory=dict, description="parameter -> a name the user gives.")
    extract: str = Field(default="", description="JMESPath of the value taken from the result.")
    code: str = Field(default="", description="The same as Python over ``response``.")
    target: str = Field(default="", description="The same in words (the grounding agent's target).")
    value: Any = Field(default=None, description="The value taken.")
    item: str | None = Field(default=None, description="The name of the item picked, when it has one.")


class ExecutedTaskRecord(BaseModel):
    """One plan entry of ``generate --method executed``: the chain of calls made in the environment, the target,
    the request the model wrote, and whether the task was kept (the line of ``data_raw.json``)."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(description="The plan entry's id ('00017').")
    seed: int | None = Field(default=None, description="The entry's seed (chain sampling and the request).")
    method: Literal["executed"] = Field(default="executed", description="The generation method.")
    type: StructureType = Field(default="single", description="single | chain (dag is not sampled).")
    model: str | None = Field(default=None, description="'provider/model' of the request writer.")
    tries: list[str] = Field(default_factory=list, description="Why earlier chain attempts of this entry failed "
                             "(reason codes such as dead_end, call_failed, held_out).")
    steps: list[ExecutedStep] = Field(default_factory=list, description="The executed calls, in order.")
    target: dict[str, Any] | None = Field(default=None, description="What the task asks: kind, extract, code, "
                                          "target (words), values, checker (state conditions of a write).")
    changes: list[str] = Field(default_factory=list, description="For a write: what changed, in words.")
    requests: list[StageAnswer] = Field(default_factory=list, description="The request writer's answers, one per "
                                        "attempt.")
    request: str | None = Field(default=None, description="The request kept (None: none passed the checks).")
    request_errors: list[str] = Field(default_factory=list, description="Why earlier requests were refused.")
    overlap: list[str] = Field(default_factory=list, description="Entities of test tasks this task uses (at "
                               "other paths: allowed, reported).")
    kept: bool = Field(default=False, description="Whether the task passed every check.")
    reason: str | None = Field(default=None, description="Why it was not kept (a code of "
                               "taskbench.engine.executed.DROP_CODES, then the detail).")
    task: dict[str, Any] | None = Field(default=None, description="The task as a task-file line (query, gold_path, "
                                        "checker, meta with the solution script and the gold plan).")


def parse_generation_record(record: Any, *, path: str | Path | None = None,
                            line: int | None = None) -> GenerationRecord | FailedGenerationRecord:
    """One line of ``data_raw.json`` as its model (a true ``failed`` makes it a failure, as the runner reads
    it). Raises :class:`InputError` (naming ``path`` and ``line`` when given) for a line of the wrong shape."""
    if isinstance(record, (GenerationRecord, FailedGenerationRecord)):
        return record
    if not isinstance(record, Mapping):
        raise InputError(f"expected a generation record (a JSON object), not {type(record).__name__}",
                         path=path, line=line)
    try:
        if record.get("failed"):
            return FailedGenerationRecord.model_validate({**record, "failed": True})
        return GenerationRecord.model_validate(record)
    except ValidationError as exc:
        rid = record.get("id")
        which = f" {rid!r}" if isinstance(rid, str) else ""
        raise InputError(f"generation record{which} is malformed: {validation_message(exc)}", path=path,
                         line=line, hint="delete the line to generate that entry again, or write to another --out") from None


__all__ = [
    "AnswerUsage",
    "CriticCall",
    "ExecutedStep",
    "ExecutedTaskRecord",
    "FailedGenerationRecord",
    "GenerationManifest",
    "GenerationRecord",
    "GoldCall",
    "GoldExecution",
    "StageAnswer",
    "parse_generation_record",
]
