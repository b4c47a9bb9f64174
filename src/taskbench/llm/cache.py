"""The response cache: SQLite in WAL mode, shared safely by threads and processes.

A key is the SHA-256 of a canonical JSON document holding the backend identity (provider, base URL, model and
options that change outputs), the messages, the sampling parameters and the JSON Schema. Only successful
responses are stored (the :class:`taskbench.llm.Model` wrapper never calls :meth:`ResponseCache.put` for a
failure). Secrets are never part of a key or a value: provider identities exclude API keys by contract.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

CACHE_VERSION = 1
"""Bumped when the key or value layout changes; old entries then simply miss."""


def default_cache_path() -> Path:
    """``llm-cache.sqlite`` in taskbench's one cache directory (:func:`taskbench.llm.weights.cache_dir`:
    ``$TASKBENCH_CACHE``, else ``$XDG_CACHE_HOME/taskbench``, else ``~/.cache/taskbench``), beside the model
    weights' ``models/``."""
    from .weights import cache_dir

    return cache_dir() / "llm-cache.sqlite"


def cache_key(
    identity: dict[str, Any],
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    schema: dict[str, Any] | None,
    *,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
) -> str:
    """SHA-256 hex digest of everything that determines a response (the tools offered and the tool choice
    included; calls without tools keep the keys they always had)."""
    doc: dict[str, Any] = {"v": CACHE_VERSION, "id": identity, "m": messages, "p": params, "s": schema}
    if tools is not None:
        doc["t"] = tools
        doc["tc"] = tool_choice
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """A key -> JSON value store in one SQLite file (WAL journal, busy timeout, one connection per thread)."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 60.0) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_ms = int(busy_timeout * 1000)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._connect()  # create the file and table now, so errors show at construction

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        conn = sqlite3.connect(self.path, timeout=self._busy_ms / 1000, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
        # WAL: readers never block the writer and vice versa; every process sees committed rows.
        for _ in range(50):
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS responses ("
                    "key TEXT PRIMARY KEY, value TEXT NOT NULL, model TEXT, created REAL NOT NULL)"
                )
                break
            except sqlite3.OperationalError as exc:  # another process is switching the journal mode
                if "locked" not in str(exc):
                    raise
                time.sleep(0.05)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value for ``key``, or None."""
        row = self._connect().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any], *, model: str | None = None) -> None:
        """Store ``value`` (a JSON-able dict) under ``key`` (last writer wins; identical keys give identical
        values for deterministic backends)."""
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        self._connect().execute(
            "INSERT OR REPLACE INTO responses (key, value, model, created) VALUES (?, ?, ?, ?)",
            (key, text, model, time.time()),
        )

    def __len__(self) -> int:
        return int(self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def clear(self) -> None:
        """Delete every entry."""
        self._connect().execute("DELETE FROM responses")

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.ProgrammingError:  # pragma: no cover - closed from its own thread already
                    pass
            self._connections.clear()
        self._local = threading.local()


__all__ = ["CACHE_VERSION", "ResponseCache", "cache_key", "default_cache_path"]
