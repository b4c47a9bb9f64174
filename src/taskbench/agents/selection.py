"""SPAN's task selection (the paper's appendix A.2) and the held-out rule, shared by the gold trajectories
(:mod:`taskbench.agents.span`) and the export of teacher runs (:mod:`taskbench.agents.sft`).

Selection (:func:`select`), each rule counted: at least ``min_tools`` candidate tools (the paper: 10),
documentation of every gold tool of at least ``min_doc_words`` words (the paper: 100), no gold tool the
environment does not have (unavailable), and no near-duplicate query
(:func:`taskbench.dataset.dedup.near_duplicates`, the data engine's rule). RestBench, the held-out test set,
is always removed (:func:`is_held_out`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..schema import ToolSpec

HELD_OUT_PREFIX = "restbench"
"""Environments whose tasks are the held-out test (never training data)."""

def is_held_out(env: str | None, task_id: str | None = None) -> bool:
    """True for a task of the held-out test: any task of a RestBench environment but a generated one
    (``generate --method executed``: ids ``tmdb-gen-00017``, checked further by
    :func:`taskbench.envs.heldout.held_out_reason`). Without ``task_id``, whether the environment holds test tasks."""
    from ..envs.heldout import GENERATED

    if not (env or "").strip().lower().startswith(HELD_OUT_PREFIX):
        return False
    return task_id is None or not GENERATED.search(task_id)


def refuse_held_out(env: str | None) -> None:
    """Raise ConfigError when ``env`` is a held-out (RestBench) environment."""
    if is_held_out(env):
        raise ConfigError(f"environment {env!r}: RestBench queries are the held-out test of the SPAN students and "
                          "are never training data (use a TaskBench domain or a task file over other tools)")


# ------------------------------------------------------------------------------------------------ selection


@dataclass
class Candidate:
    """What the selection rules look at for one task."""

    key: str
    query: str
    env: str | None
    tools: list[ToolSpec]
    gold_path: list[str]
    test: str | None = None
    """Why the task is a held-out test task (:func:`taskbench.envs.heldout.held_out_reason`), or None."""


def doc_text(spec: ToolSpec) -> str:
    """A tool's documentation as the selection counts it: its name, description, HTTP method and path, and
    argument schema. That is what both the environment's spec and a trajectory's record of it hold (the record
    drops the response schema, :func:`taskbench.agents.tooldocs.slim`), so a tool counts the same words on
    every path: gold trajectories (``span-data``) and teacher runs (``export-sft --select``)."""
    route = f"{spec.http.method} {spec.http.path}" if spec.http is not None else ""
    return " ".join([spec.name, spec.description or "", route, json.dumps(spec.parameters or {})])


def doc_words(spec: ToolSpec) -> int:
    """Words of a tool's documentation (:func:`doc_text`): the one count of SPAN's documentation rule."""
    return len(re.findall(r"[A-Za-z0-9_]+", doc_text(spec)))


def select(candidates: Sequence[Candidate], *, min_tools: int = 10, min_doc_words: int = 100,
           dedup_threshold: float = 90.0) -> tuple[list[Candidate], dict[str, int]]:
    """The candidates the paper's heuristics keep, in order, and how many each rule removed (rules apply in
    the order of the returned dict; a task is counted under the first rule it fails)."""
    from ..dataset.dedup import near_duplicates

    removed = {"held_out_restbench": 0, "fewer_candidate_tools": 0, "unavailable_tool": 0,
               "short_documentation": 0, "near_duplicate": 0}
    kept: list[Candidate] = []
    for c in candidates:
        names = {t.name: t for t in c.tools}
        if c.test is not None or is_held_out(c.env, c.key):
            removed["held_out_restbench"] += 1
        elif len(c.tools) < min_tools:
            removed["fewer_candidate_tools"] += 1
        elif any(g not in names for g in c.gold_path):
            removed["unavailable_tool"] += 1
        elif any(doc_words(names[g]) < min_doc_words for g in dict.fromkeys(c.gold_path)):
            removed["short_documentation"] += 1
        else:
            kept.append(c)
    dupes = near_duplicates([c.query for c in kept], threshold=dedup_threshold)
    out = [c for c, d in zip(kept, dupes, strict=True) if d is None]
    removed["near_duplicate"] = len(kept) - len(out)
    return out, removed


__all__ = ["Candidate", "HELD_OUT_PREFIX", "doc_text", "doc_words", "is_held_out", "refuse_held_out", "select"]
