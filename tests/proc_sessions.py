"""Processes by session id (from /proc): a command started with ``start_new_session=True`` is a session leader,
and every process it starts (and they start) carries its session id, daemons included, unless one calls
``setsid`` itself. Tests use it to find and stop what a Ray node started, by pid, and to show nothing is left."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def session_members(sid: int) -> dict[int, str]:
    """Live (not zombie) processes of session ``sid``: pid -> command line."""
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        state, session = fields[0], int(fields[3])
        if session == sid and state not in ("Z", "X"):
            out[int(entry.name)] = cmd or stat[stat.index("(") + 1: stat.rindex(")")]
    return out


def stop_sessions(sids: list[int], grace: float = 10.0) -> dict[int, str]:
    """SIGTERM every process of these sessions, SIGKILL what is left after ``grace`` seconds; what is still
    alive after that (should be nothing)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for sid in sids:
            for pid in session_members(sid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not any(session_members(s) for s in sids):
                return {}
            time.sleep(0.2)
    left: dict[int, str] = {}
    for sid in sids:
        left.update(session_members(sid))
    return left
