"""The held-out rule of generated tasks: no generated task pairs a test task's entity with that task's path.

The test tasks are every task the environment ships (for RestBench: every RestBench query we have a checker
and a solution script for, and our own tasks, whether or not RestBench's files are present: the entities come
from our solution scripts, which ship). A test task's *entities* are the literal values of its solution's
calls (a search's query such as "Sofia Coppola", an id in its checker's request such as 1769), folded; its
*path* is its solution's calls. A generated task is refused when it shares an entity with a test task and
ends in the same operation (stricter than "the same path": the same question asked by another route is
refused too). Entity overlap at any path is reported, not refused: the entities themselves are the
environment's data, and a student must meet them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


def fold(text: str) -> str:
    """Lower case, accents and punctuation removed, spaces collapsed."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    return " ".join(re.sub(r"[^\w]+", " ", text).split())


@dataclass(frozen=True)
class HeldOut:
    """One test task as the rule sees it."""

    id: str
    path: tuple[str, ...]
    entities: frozenset[str]


def _literals(value: Any, out: set[str]) -> None:
    if isinstance(value, str):
        if value.startswith("=") or "${" in value:
            return
        if value.strip():
            out.add(fold(value))
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        out.add(str(value))
    elif isinstance(value, dict):
        for v in value.values():
            _literals(v, out)
    elif isinstance(value, list):
        for v in value:
            _literals(v, out)


def _checker_ids(checker: Any, out: set[str]) -> None:
    if isinstance(checker, dict):
        if "api" in checker and isinstance(checker.get("args"), dict):
            _literals(checker["args"], out)
        for v in checker.values():
            _checker_ids(v, out)
    elif isinstance(checker, list):
        for v in checker:
            _checker_ids(v, out)


def held_out(entry: dict[str, Any], task_id: str, gold_path: Sequence[str] = ()) -> HeldOut:
    """A test task (a task file entry: ``solution``, ``checker``, ``gold_path``) as the rule sees it."""
    solution = entry.get("solution") if isinstance(entry.get("solution"), dict) else {}
    steps = [s for s in (solution or {}).get("steps") or [] if isinstance(s, dict)]
    path = tuple(str(s.get("call")) for s in steps if not s.get("extra")) or tuple(gold_path)
    entities: set[str] = set()
    for s in steps:
        _literals(s.get("args") or {}, entities)
    _checker_ids(entry.get("checker"), entities)
    entities = {e for e in entities if len(e) > 1 and e not in ("1", "true", "false", "day", "week", "movie", "tv")}
    return HeldOut(id=task_id, path=path, entities=frozenset(entities))


def environment_held_out(env: Any) -> list[HeldOut]:
    """The test tasks of ``env``: for RestBench, every task we ship (RestBench's queries and ours); for any
    environment, the tasks it lists."""
    out: list[HeldOut] = []
    api = getattr(env, "api", None)
    if str(getattr(env, "name", "")).startswith("restbench-") and isinstance(api, str):
        out += _restbench_tests(api)
    try:
        tasks = env.tasks()
    except Exception:  # an environment whose task list cannot be read has no held-out tasks of its own
        tasks = []
    known = {h.id for h in out}
    for t in tasks:
        if t.id not in known:
            out.append(held_out({"solution": t.meta.get("solution"), "checker": t.meta.get("checker")}, t.id,
                                t.gold_path))
    return out


def task_entities(steps: Iterable[dict[str, Any]]) -> set[str]:
    """The literal values of a generated task's calls (names and ids), folded."""
    out: set[str] = set()
    for s in steps:
        _literals(s.get("arguments") or {}, out)
    return {e for e in out if len(e) > 1}


def clash(steps: Sequence[dict[str, Any]], tests: Sequence[HeldOut]) -> HeldOut | None:
    """The test task a generated task's calls clash with (shared entity, same last operation), or None."""
    if not steps:
        return None
    entities = task_entities(steps)
    last = str(steps[-1].get("tool"))
    for t in tests:
        if t.path and t.path[-1] == last and entities & t.entities:
            return t
    return None


def overlap(steps: Sequence[dict[str, Any]], tests: Sequence[HeldOut]) -> set[str]:
    """The test entities a generated task uses, at any path (reported)."""
    entities = task_entities(steps)
    return {e for t in tests for e in t.entities & entities}




GENERATED = re.compile(r"-gen-(s\d+-)?\d+$")
"""Ids of tasks made by ``generate --method executed`` (``tmdb-gen-00017``; another plan seed: ``tmdb-gen-s1-00017``)."""


def _shipped(api: str) -> tuple[set[str], set[str]]:
    """(hashes of RestBench's query texts, our own tasks' queries folded) for ``api``."""
    from .restbench.dataset import load_task_file

    shas = {str(t.get("sha")) for t in load_task_file(f"{api}_restbench").get("tasks", []) if t.get("sha")}
    own = {fold(str(t.get("query") or "")) for t in load_task_file(f"{api}_own").get("tasks", [])}
    return shas, own


def held_out_reason(env: str | None, task_id: str | None, query: str | None = None,
                     steps: Sequence[dict[str, Any]] | None = None, tests: Sequence[HeldOut] | None = None) -> str | None:
    """Why a task of ``env`` is a held-out test task and never training data (None: it may be): in a RestBench
    environment every task but a generated one (RestBench's queries and our own tasks are the test), a task whose
    text is a RestBench query's or one of our own tasks', and a generated task whose calls pair a test task's
    entity with that task's path (:func:`clash`). ``steps``: the task's calls (``{"tool", "arguments"}``), when
    known; ``tests``: the test tasks (:func:`environment_held_out`), read from the shipped files when None."""
    name = (env or "").strip().lower()
    if not name.startswith("restbench"):
        return None
    api = name.removeprefix("restbench-")
    if not GENERATED.search(task_id or ""):
        return f"{task_id}: a task of {env} that is not generated (RestBench's queries and our own tasks are the test)"
    if query:
        from .restbench.dataset import query_hash

        shas, own = _shipped(api) if api in ("tmdb", "spotify") else (set(), set())
        if query_hash(query) in shas:
            return f"{task_id}: its text is a RestBench query's"
        if fold(query) in own:
            return f"{task_id}: its text is one of our own test tasks'"
    if steps:
        if tests is None:
            tests = _restbench_tests(api)
        hit = clash(steps, tests)
        if hit is not None:
            return f"{task_id}: it pairs an entity of test task {hit.id} with that task's path (ending in {hit.path[-1]})"
    return None


def _restbench_tests(api: str) -> list[HeldOut]:
    from .restbench.dataset import load_task_file

    out = []
    for suffix in ("restbench", "own"):
        for entry in load_task_file(f"{api}_{suffix}").get("tasks", []):
            tid = str(entry.get("id") or f"{api}-{int(entry.get('index', 0)):03d}")
            out.append(held_out(entry, tid, entry.get("gold_path") or ()))
    return out


__all__ = ["GENERATED", "HeldOut", "clash", "environment_held_out", "fold", "held_out", "overlap", "task_entities",
           "held_out_reason"]
