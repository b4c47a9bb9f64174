"""Training examples of one role, read from a SPAN data directory (``ROLE.jsonl``, one chat a line), with the
held-out rule enforced: an example from a RestBench environment is refused (its queries are the test).

A line is ``{"messages": [...], "tools": [...], "tool_choice": ..., "meta": {...}}``: ``messages`` in OpenAI's
chat format as the Model wrapper sends them to the provider (``system``/``user``/``assistant``/``tool``;
assistant turns may carry ``tool_calls`` ``[{"id", "type": "function", "function": {"name", "arguments"}}]`` and
tool turns ``tool_call_id``), the last one the assistant's answer (the target); ``tools`` (optional) the offered
tools in OpenAI's format as sent (``{"type": "function", "function": {"name", "description", "parameters"}}``,
under the same API-safe names as the calls); ``tool_choice`` (optional) as sent. The ConAgents roles' chats
have no tools; the ReAct agent's turns do, and their target is one tool call.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..agents.config import ROLES
from ..envs.heldout import held_out_reason
from ..errors import ConfigError, InputError
from ..llm.providers.llamacpp_tools import answer_text, offered_tools

STUDENT_ROLES: tuple[str, ...] = (*ROLES, "react")
"""The roles a student is trained for: ConAgents' three, and the ReAct agent (native tool calls)."""

_MESSAGE_ROLES = ("system", "user", "assistant", "tool")


def load_examples(data: str | Path, role: str) -> list[dict[str, Any]]:
    """The examples of ``data/ROLE.jsonl`` (the module docstring says a line's shape), each as ``{"messages",
    "meta"}`` plus ``tools`` and ``tool_choice`` when the line has them. ``data`` may name several directories,
    comma-separated (the TMDB and the Spotify data of one student), their examples interleaved (the first of each,
    then the second of each, ...), so that a limit takes some of every one. Raises InputError (``file:line``) for
    a malformed line, a target the embedded provider's grammar cannot produce
    (:func:`~taskbench.llm.providers.llamacpp_tools.answer_text`), or an example of a held-out test task
    (:func:`taskbench.envs.heldout.held_out_reason`)."""
    if role not in STUDENT_ROLES:
        raise ConfigError(f"--role {role!r}: expected one of {', '.join(STUDENT_ROLES)}")
    parts = [p for p in str(data).split(",") if p.strip()]
    if len(parts) > 1:  # interleaved, so that --limit takes some of every directory
        sets = [load_examples(part.strip(), role) for part in parts]
        return [row for i in range(max(len(s) for s in sets)) for s in sets if i < len(s) for row in [s[i]]]
    path = Path(data) / f"{role}.jsonl"
    if not path.is_file():
        raise InputError(f"no {role}.jsonl in the data directory", path=Path(data),
                         hint="write it with `taskbench agents span-data` or `taskbench agents export-sft`")
    out: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not JSON: {exc.msg}", path=path, line=n) from None
            msgs = row.get("messages") if isinstance(row, dict) else None
            if not isinstance(msgs, list) or len(msgs) < 2 or not all(isinstance(m, dict) for m in msgs) \
                    or msgs[-1].get("role") != "assistant":
                raise InputError("expected {\"messages\": [..., {\"role\": \"assistant\", ...}]}", path=path, line=n)
            meta = row.get("meta") if isinstance(row.get("meta"), dict) else {}
            calls = meta.get("calls") if isinstance(meta.get("calls"), list) else None
            why = held_out_reason(meta.get("env"), str(meta.get("task") or ""), meta.get("query"), calls)
            if why is None and str(meta.get("env") or "").startswith("restbench") and calls is None:
                why = f"{meta.get('task')}: a generated RestBench task whose calls are not recorded, so the held-out " \
                      "rule cannot be checked"
            if why is not None:
                raise InputError(f"an example from {meta.get('env')!r} is held-out test data ({why}): RestBench "
                                 "queries, our own tasks and their (entity, path) pairs are never training data",
                                 path=path, line=n, hint="rebuild the data with `taskbench agents span-data --tasks` "
                                 "from a generated task file, or `export-sft --select`")
            example: dict[str, Any] = {"messages": msgs, "meta": meta}
            for key in ("tools", "tool_choice"):
                if row.get(key) is not None:
                    example[key] = row[key]
            problem = _problem(example)
            if problem:
                raise InputError(problem, path=path, line=n)
            out.append(example)
    if not out:
        raise InputError(f"{role}.jsonl holds no examples", path=path)
    return out


def _problem(example: dict[str, Any]) -> str | None:
    """What is wrong with an example's messages, tools or target, or None."""
    tools = example.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(
            isinstance(t, dict) and isinstance(t.get("function"), dict) and isinstance(t["function"].get("name"), str)
            for t in tools)):
        return 'expected "tools" as OpenAI tools: [{"type": "function", "function": {"name", "parameters"}}]'
    for i, m in enumerate(example["messages"]):
        if m.get("role") not in _MESSAGE_ROLES:
            return f"message {i}: role {m.get('role')!r} (expected one of {', '.join(_MESSAGE_ROLES)})"
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            return f"message {i}: content is not a string"
        calls = m.get("tool_calls")
        if calls is not None and not (m["role"] == "assistant" and isinstance(calls, list) and all(
                isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls)):
            return (f"message {i}: expected tool_calls on an assistant message as "
                    '[{"id", "type": "function", "function": {"name", "arguments"}}]')
    try:
        answer_text(example["messages"][-1], offered_tools(tools, example.get("tool_choice")),
                    example.get("tool_choice"))
    except ValueError as exc:
        return f"the target: {exc}"
    return None


def target_key(message: dict[str, Any]) -> str:
    """One answer's identity: its text, or its text and calls (name and parsed arguments) for a tool call."""
    calls = message.get("tool_calls")
    if not calls:
        return str(message.get("content") or "")
    shown = []
    for c in calls:
        fn = c.get("function") or {}
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (json.JSONDecodeError, RecursionError):
                pass
        shown.append([fn.get("name"), args])
    return json.dumps([message.get("content") or "", shown], sort_keys=True, ensure_ascii=False)


def cap_repeats(rows: list[dict[str, Any]], most: int | None, seed: int = 0) -> tuple[list[dict[str, Any]], int]:
    """``rows`` with at most ``most`` examples of any one answer (:func:`target_key`), the kept ones drawn by
    ``seed`` and left in their order; -> (rows, how many were dropped). A role whose targets are mostly one
    answer (the review's accept verdict: 100 of 111 gold examples) teaches a student that answer alone."""
    if most is None:
        return rows, 0
    by_target: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_target[target_key(r["messages"][-1])].append(i)
    rng = random.Random(seed)
    keep: set[int] = set()
    for target in sorted(by_target):
        idx = by_target[target]
        keep.update(idx if len(idx) <= most else rng.sample(idx, most))
    return [r for i, r in enumerate(rows) if i in keep], len(rows) - len(keep)


__all__ = ["STUDENT_ROLES", "cap_repeats", "load_examples", "target_key"]
