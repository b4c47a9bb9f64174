"""The run header: what every command that writes a run (``taskbench run``, ``predict``, ``evaluate``,
``generate``, ``agents eval``) records about itself, in one typed shape.

A run directory holds it as ``header.json``; a command whose output is one file (``predict -o X.jsonl``,
``evaluate -o X.json``) writes it next to that file as ``X.jsonl.header.json``. Reading, writing, the resume
check and telling what kind of run a directory holds are :mod:`taskbench.dataset.header`'s.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

HEADER_SCHEMA_VERSION = 1
"""Version of the :class:`RunHeader` layout written by this taskbench."""

RunKind = Literal["run", "predict", "evaluate", "generate", "agents"]
"""Which command wrote a run: ``taskbench run``, ``predict``, ``evaluate``, ``generate``, ``agents eval``."""

RUN_KINDS: tuple[RunKind, ...] = ("run", "predict", "evaluate", "generate", "agents")


class RunEnvironment(BaseModel):
    """The software and machine that ran it."""

    model_config = ConfigDict(extra="ignore")

    taskbench: str = Field(description="taskbench version.")
    git_revision: str | None = Field(default=None, description="Git commit of the taskbench checkout, if any.")
    git_dirty: bool | None = Field(default=None, description="True when the checkout had uncommitted changes.")
    python: str = Field(description="Python version.")
    platform: str = Field(description="OS and architecture.")
    cpu_count: int | None = Field(default=None, description="Logical CPUs.")
    packages: dict[str, str] = Field(default_factory=dict, description="Versions of the key packages.")
    command: list[str] = Field(default_factory=list, description="The command line.")


class RunHeader(BaseModel):
    """What a run is: the command, its configuration, the software, the seeds, and the fingerprint of what
    decides its records (a resume with another fingerprint is refused)."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = Field(default=HEADER_SCHEMA_VERSION, description="Layout version of this header.")
    kind: RunKind = Field(description="Which command wrote the run.")
    command: list[str] = Field(default_factory=list, description="The command line of the latest pass.")
    created: str | None = Field(default=None, description="When the run was started, ISO 8601 UTC.")
    updated: str | None = Field(default=None, description="When the header was last written, ISO 8601 UTC.")
    config: dict[str, Any] = Field(default_factory=dict, description="The command's own configuration, as its "
                                   "typed model dumps it (RunConfig, PredictOptions, AgentEvalConfig, ...).")
    identity: dict[str, Any] = Field(default_factory=dict, description="The settings that decide the records: "
                                     "a resume must repeat them (the fingerprint is their hash).")
    fingerprint: str = Field(default="", description="Hash of ``identity`` (16 hex digits).")
    environment: RunEnvironment | None = Field(default=None, description="Software and machine (None: a run "
                                               "written before headers, where it was not recorded).")
    seeds: dict[str, int | None] = Field(default_factory=dict, description="Every seed used, by purpose.")
    legacy: str | None = Field(default=None, description="Set when read from an older layout: the file it came "
                               "from (run_log.json, generation.json, config.json, ...); never written.")


__all__ = ["HEADER_SCHEMA_VERSION", "RUN_KINDS", "RunEnvironment", "RunHeader", "RunKind"]
