"""Trajectories on disk: JSON Lines appended event by event, read back equal.

:class:`TrajectoryWriter` writes the header line when opened, one line per event as it happens (each line one
unbuffered ``write`` through :class:`~taskbench.dataset.JsonlAppender`, fsynced at most once a second), and the end line when the
episode finishes. A killed process leaves a file that :func:`read_trajectory` reads as an ``interrupted``
trajectory holding every event written before the kill.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import InputError, validation_message
from ..schema.trajectory import Trajectory, TrajectoryEvent
from .jsonio import JsonlAppender, iter_jsonl

_EVENT: TypeAdapter[Any] = TypeAdapter(TrajectoryEvent)


class TrajectoryWriter:
    """Append a trajectory to a JSON Lines file as it happens.

    ``clock`` gives the seconds stamped on events (``t``, relative to the writer's start); inject one for
    deterministic files. Use as a context manager or call :meth:`close`; :meth:`finish` writes the end line.
    """

    def __init__(
        self,
        path: str | Path,
        trajectory: Trajectory,
        *,
        clock: Callable[[], float] = time.monotonic,
        fsync: bool | float = 1.0,
    ) -> None:
        self.path = Path(path)
        self.trajectory = trajectory
        self._clock = clock
        self._start = clock()
        if self.path.exists():
            self.path.unlink()
        self._out = JsonlAppender(self.path, fsync=fsync)
        self._out.write(trajectory.header())
        for event in trajectory.events:  # events already present (a trajectory handed over whole)
            self._out.write({"record": "event", **event.model_dump(mode="json")})
        self._closed = False

    def elapsed(self) -> float:
        """Seconds since the writer started (by its clock)."""
        return round(self._clock() - self._start, 6)

    def add(self, event: Any) -> Any:
        """Stamp ``event`` (index, t), append it to the trajectory and to the file, and return it."""
        event.t = self.elapsed()
        self.trajectory.add(event)
        self._out.write({"record": "event", **event.model_dump(mode="json")})
        return event

    def finish(self, status: str = "complete", *, error: str | None = None) -> Trajectory:
        """Compute totals, set the status, write the end line and close the file."""
        traj = self.trajectory
        traj.status = status  # type: ignore[assignment]
        traj.error = error
        traj.totals = traj.compute_totals(self.elapsed())
        self._out.write(traj.end())
        self.close()
        return traj

    def close(self) -> None:
        """Close the file (without an end line the trajectory reads back as interrupted)."""
        if not self._closed:
            self._out.close()
            self._closed = True

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_trajectory(path: str | Path) -> Trajectory:
    """Read a trajectory file; one without an end line comes back with ``status="interrupted"``.

    A torn last line (a kill inside a write) is ignored; any other bad line raises :class:`InputError`.
    """
    path = Path(path)
    header: dict[str, Any] | None = None
    events: list[Any] = []
    end: dict[str, Any] | None = None
    for line, rec in iter_jsonl(path, allow_torn_tail=True):
        kind = rec.get("record") if isinstance(rec, dict) else None
        body = {k: v for k, v in rec.items() if k != "record"} if isinstance(rec, dict) else {}
        try:
            if kind == "header" and header is None:
                header = body
            elif kind == "event" and header is not None and end is None:
                events.append(_EVENT.validate_python(body))
            elif kind == "end" and header is not None and end is None:
                end = body
            else:
                raise InputError(f"unexpected {kind or 'record'!s} line in a trajectory file", path=path, line=line,
                                 hint="a trajectory file is a header line, event lines, then an end line")
        except ValidationError as exc:
            raise InputError(f"bad trajectory event: {validation_message(exc)}", path=path, line=line) from None
    if header is None:
        raise InputError("not a trajectory file (no header line)", path=path)
    traj = Trajectory.model_validate({**header, **(end or {"status": "interrupted"})})
    traj.events = events
    if end is None:
        traj.totals = traj.compute_totals()
    return traj


__all__ = ["TrajectoryWriter", "read_trajectory"]
