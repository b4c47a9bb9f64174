"""The generation manifest: what a ``taskbench generate`` directory was made with.

It is the ``config`` of the directory's run header (``header.json``; before headers, the directory's
``generation.json``, which had the same keys and a ``"schema": 1``). A rerun into the directory reads it back:
the arguments it was not given come from here, and those that decide the records (the header's ``identity``)
must be the same. Every field is optional when read, as older directories may lack one (``guided``, ``env``);
:func:`taskbench.engine.generate.prepare_output` writes all of them. Values of the wrong type or out of range
are refused when read (the same bounds as the options they were written from).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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


__all__ = ["GenerationManifest"]
