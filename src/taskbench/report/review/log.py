"""The review log: every reviewer decision, one JSON line each, appended to ``review_log.jsonl`` in the dataset.

The file is append-only. A decision is never edited or removed: a reviewer who changes their mind adds a new
line, and the latest line of a reviewer for a sample is the one that counts (:meth:`ReviewLog.latest`).
Each line is written whole, flushed and fsynced (:class:`~taskbench.dataset.jsonio.JsonlAppender`) under an
exclusive ``flock``, so several review servers (one per reviewer) can share one log; a line torn by a crash is
cut off before the next append, and skipped when reading.

A line looks like::

    {"v": 1, "id": "16097613", "reviewer": "ana", "time": "2025-01-07T10:42:03.120Z", "outcome": "fix",
     "fixes": ["graph"], "reasons": ["incorrect_dependency"], "note": "", "base": "3f2a...",
     "diff": [{"op": "replace", "path": "/task_nodes/1/task", "value": "Audio Splicer"}], "issues": []}

``diff`` is an RFC 6902 JSON Patch from the sample record before the fix to the record after it (empty for
correct and discard); ``base`` is the SHA-256 of the record the reviewer saw, so a decision made on another
version of a sample (the dataset was regenerated) is recognised as stale instead of being applied blindly.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ...dataset.jsonio import JsonlAppender
from ...errors import InputError

__all__ = [
    "FIX_KINDS",
    "LOG_FILE",
    "OUTCOMES",
    "REASONS",
    "Decision",
    "LogProblem",
    "ReviewLog",
    "record_hash",
    "utc_now",
]

LOG_FILE = "review_log.jsonl"
"""Name of the log in the dataset directory."""

OUTCOMES: tuple[str, ...] = ("correct", "discard", "fix")
"""What a reviewer can decide about a sample."""

FIX_KINDS: tuple[str, ...] = ("syntax", "instruction", "graph")
"""What a fix corrected: the wording (syntax), the request's content (instruction), the tool invocation graph
(nodes, arguments, links). One fix may be of several kinds."""

REASONS: dict[str, str] = {
    "incomplete_instruction": "the request lacks details or resources needed to complete it",
    "impractical_instruction": "the request is irrational or impossible with the tools",
    "parameter_type": "an argument does not match the type the tool expects",
    "parameter_value": "an argument's value is wrong or unsuited to the task",
    "incorrect_dependency": "tools are linked or ordered wrongly",
}
"""Optional error categories a reviewer can attach to a discard or a fix (the paper's error analysis)."""

Outcome = Literal["correct", "discard", "fix"]
FixKind = Literal["syntax", "instruction", "graph"]


def utc_now() -> str:
    """The current time as ISO 8601 UTC with milliseconds (``2025-01-07T10:42:03.120Z``)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_hash(record: dict[str, Any]) -> str:
    """SHA-256 (hex) of a sample record in canonical JSON (sorted keys), identifying the version reviewed."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Decision(BaseModel):
    """One reviewer's decision about one sample (one line of the review log)."""

    model_config = ConfigDict(extra="ignore")

    v: int = Field(default=1, description="Log line format version.")
    id: str = Field(description="Sample id.")
    reviewer: str = Field(description="Who decided.")
    time: str = Field(description="When, ISO 8601 UTC.")
    outcome: Outcome = Field(description="correct | discard | fix.")
    fixes: list[FixKind] = Field(default_factory=list, description="For a fix: what it corrected (at least one).")
    reasons: list[str] = Field(default_factory=list, description="Error categories (keys of REASONS), optional.")
    note: str = Field(default="", description="Free text from the reviewer.")
    base: str = Field(description="record_hash of the sample record the reviewer saw.")
    diff: list[dict[str, Any]] = Field(
        default_factory=list, description="For a fix: RFC 6902 JSON Patch from the record before to after."
    )
    issues: list[str] = Field(
        default_factory=list, description="Rule-critic issues the fixed sample still had when saved (code: message)."
    )

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value

    def to_line(self) -> dict[str, Any]:
        """The decision as one log line (a JSON object)."""
        return self.model_dump(mode="json")


class LogProblem(BaseModel):
    """A line of the log that could not be read (reported, never fatal)."""

    line: int = Field(description="1-based line number.")
    message: str = Field(description="What is wrong with it.")


class ReviewLog:
    """The decisions of ``review_log.jsonl``, read tolerantly and appended crash-safely.

    :meth:`refresh` reads what other processes appended since the last read, so a running server sees the
    other reviewers' decisions.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.decisions: list[Decision] = []
        self.problems: list[LogProblem] = []
        self._offset = 0
        self._lines = 0
        self.refresh()

    # -------------------------------------------------------------------------------------------- reading

    def refresh(self) -> int:
        """Read complete lines appended since the last read; returns how many decisions were added. A file
        that shrank (replaced by hand) is read again from the start."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            if self._offset:
                self._reset()
            return 0
        except OSError as exc:  # a symlink loop, a parent that is a file
            raise InputError(f"cannot read the review log ({exc.strerror or exc})", path=self.path,
                             hint="remove the link or the file in its way") from None
        if size < self._offset:
            self._reset()
        if size == self._offset:
            return 0
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            data = fh.read(size - self._offset)
        end = data.rfind(b"\n")
        if end < 0:
            return 0  # only a partial line so far (being written, or torn)
        before = len(self.decisions)
        for raw in data[: end + 1].split(b"\n")[:-1]:
            self._lines += 1
            self._parse(raw, self._lines)
        self._offset += end + 1
        return len(self.decisions) - before

    def _reset(self) -> None:
        self.decisions = []
        self.problems = []
        self._offset = 0
        self._lines = 0

    def _parse(self, raw: bytes, line: int) -> None:
        if not raw.strip():
            return
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # deep nesting, huge integers too
            self.problems.append(LogProblem(line=line, message=f"not a JSON line ({exc})"))
            return
        try:
            self.decisions.append(Decision.model_validate(value))
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err.get("loc", ()))
            self.problems.append(LogProblem(line=line, message=f"not a decision: {loc}: {err.get('msg')}"))

    # -------------------------------------------------------------------------------------------- writing

    def append(self, decision: Decision) -> Decision:
        """Append one decision (exclusive lock, torn tail repaired, one fsynced line) and read it back in."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with JsonlAppender(self.path) as out:  # opening cuts a torn last line left by a crash
                out.write(decision.to_line())
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        self.refresh()
        return decision

    # -------------------------------------------------------------------------------------------- views

    def latest(self) -> dict[str, dict[str, Decision]]:
        """``{sample id: {reviewer: their latest decision}}`` (a later line replaces an earlier one)."""
        out: dict[str, dict[str, Decision]] = {}
        for d in self.decisions:
            out.setdefault(d.id, {})[d.reviewer] = d
        return out

    def reviewers(self) -> list[str]:
        """Everyone who has decided something, sorted."""
        return sorted({d.reviewer for d in self.decisions})
