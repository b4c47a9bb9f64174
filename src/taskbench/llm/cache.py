"""The response cache: a small get/put protocol with three backends.

- :class:`ResponseCache` (the default): one SQLite file in WAL mode, shared safely by threads and processes
  **on one host** (WAL needs shared memory, so it is not safe on a network file system).
- :class:`DirectoryCache` (``dir:///shared/cache``): content-addressed JSON files in a directory, each written
  to a temporary file and renamed into place, so readers never see half a value; works across nodes on any
  shared file system (NFS, Lustre, GPFS) where rename is atomic.
- :class:`RedisCache` (``redis://host:6379/0``): one Redis server shared by every node (``pip install
  "taskbench[ray]"`` brings the client).

:func:`open_cache` picks one from a spec: ``True`` (the default: ``$TASKBENCH_CACHE_URL`` when set, else the
SQLite file), a path (SQLite), ``sqlite:///path``, ``dir:///path`` or ``redis://...``. Every backend stores the
same JSON value under the same key, so moving from one to another changes nothing but where the answers live.

A key is the SHA-256 of a canonical JSON document holding the backend identity (provider, base URL, model and
options that change outputs), the messages, the sampling parameters and the JSON Schema. Only successful
responses are stored (the :class:`taskbench.llm.Model` wrapper never calls :meth:`ResponseCache.put` for a
failure). Secrets are never part of a key or a value: provider identities exclude API keys by contract.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigError, MissingDependencyError

logger = logging.getLogger("taskbench.llm.cache")

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
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


CACHE_URL_ENV = "TASKBENCH_CACHE_URL"
"""Environment variable naming the response cache of every Model built with the default ``cache=True``
(``dir:///shared/taskbench-cache``, ``redis://10.0.0.5:6379/0``, ``sqlite:///path/cache.sqlite``)."""


@runtime_checkable
class CacheBackend(Protocol):
    """What the :class:`~taskbench.llm.Model` wrapper needs of a response cache."""

    @property
    def url(self) -> str:
        """Where the answers live (``sqlite:///...``, ``dir:///...``, ``redis://...``; never a password)."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key``, or None."""

    def put(self, key: str, value: dict[str, Any], *, model: str | None = None) -> None:
        """Store a JSON-able ``value`` under ``key`` (last writer wins)."""

    def close(self) -> None:
        """Release connections."""


class ResponseCache:
    """A key -> JSON value store in one SQLite file (WAL journal, busy timeout, one connection per thread)."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 60.0) -> None:
        self.path = Path(path).expanduser()
        self._busy_ms = int(busy_timeout * 1000)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._failed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._connect()  # create the file and table now, so errors show at construction
        except (OSError, sqlite3.Error) as exc:  # a full disk, a file that is not a database, no permission
            self.close()
            raise ConfigError(f"response cache {self.path}: {_why(exc)} (free some space or fix the file, point "
                              f"TASKBENCH_CACHE elsewhere, or run with --no-cache)") from None

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    @property
    def url(self) -> str:
        """``sqlite:///<path>``."""
        return f"sqlite://{self.path}" if self.path.is_absolute() else f"sqlite:///{self.path}"

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
        """The stored value for ``key``, or None (also when the file cannot be read: logged once)."""
        try:
            row = self._connect().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            return json.loads(row[0]) if row else None
        except (sqlite3.Error, ValueError) as exc:
            self._warn("read", exc)
            return None

    def put(self, key: str, value: dict[str, Any], *, model: str | None = None) -> None:
        """Store ``value`` (a JSON-able dict) under ``key`` (last writer wins; identical keys give identical
        values for deterministic backends). A store that fails (a full disk) is logged once and skipped: a cache
        that cannot grow slows a run down, it never stops it."""
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        try:
            self._connect().execute(
                "INSERT OR REPLACE INTO responses (key, value, model, created) VALUES (?, ?, ?, ?)",
                (key, text, model, time.time()),
            )
        except sqlite3.Error as exc:
            self._warn("store", exc)

    def _warn(self, what: str, exc: BaseException) -> None:
        if not self._failed:
            self._failed = True
            logger.warning("response cache %s: cannot %s answers (%s); going on without them", self.path, what,
                           _why(exc))

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


def _why(exc: BaseException) -> str:
    """What went wrong, in one line (``database or disk is full``, ``No space left on device``)."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())


def _dump(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class DirectoryCache:
    """Content-addressed JSON files under one directory: ``<root>/<key[:2]>/<key>.json``.

    Safe for many writers on many nodes: a value is written to a temporary file in the same directory and
    renamed into place (atomic on POSIX file systems, NFS included), so a reader sees a whole value or none.
    Two writers of one key write the same answer (keys hash everything that determines it); the last rename
    wins. A file that does not parse (a non-atomic file system, a disk that filled up) is a miss.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        self._failed = False
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"response cache directory {self.root}: {exc.strerror or exc}") from exc

    def __repr__(self) -> str:
        return f"DirectoryCache({str(self.root)!r})"

    @property
    def url(self) -> str:
        """``dir:///<root>``."""
        return f"dir://{self.root.resolve()}"

    def _file(self, key: str) -> Path:
        if len(key) < 3 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"cache keys are lowercase hex digests, not {key[:20]!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value for ``key``, or None (also for an unreadable file)."""
        try:
            text = self._file(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            logger.warning("response cache: %s does not parse; treated as a miss", self._file(key))
            return None
        return value.get("value") if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any], *, model: str | None = None) -> None:
        """Write ``value`` atomically (temporary file + rename). A store that fails (a full disk) is logged once
        and skipped, leaving no temporary file."""
        path = self._file(key)
        doc = _dump({"value": value, "model": model, "created": time.time()})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        except OSError as exc:
            self._warn(exc)
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(doc)
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            if not isinstance(exc, OSError):
                raise
            self._warn(exc)

    def _warn(self, exc: OSError) -> None:
        if not self._failed:
            self._failed = True
            logger.warning("response cache %s: cannot store answers (%s); going on without them", self.root,
                           _why(exc))

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("??/*.json"))

    def clear(self) -> None:
        """Delete every entry."""
        for path in self.root.glob("??/*.json"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def close(self) -> None:
        """Nothing to release."""


class RedisCache:
    """One Redis server (or cluster endpoint) shared by every worker on every node.

    Values are ``SET`` under ``<prefix><key>``. The server is pinged when the cache opens (a wrong URL is a
    :class:`~taskbench.errors.ConfigError` at once); later connection errors are logged and count as a miss
    (``get``) or a skipped store (``put``): a cache outage slows a run down, it never stops it.
    """

    def __init__(self, url: str, *, prefix: str = "taskbench:llm:", timeout: float = 10.0) -> None:
        try:
            import redis
        except ModuleNotFoundError as exc:
            raise MissingDependencyError("redis", "ray", "the Redis response cache") from exc
        self._redis = redis
        self.prefix = prefix
        self._client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self.url = _without_password(url)
        try:
            self._client.ping()
        except redis.RedisError as exc:
            self._client.close()
            raise ConfigError(f"response cache {self.url}: cannot reach the Redis server ({exc})") from exc

    def __repr__(self) -> str:
        return f"RedisCache({self.url!r})"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value for ``key``, or None (also when the server is unreachable)."""
        try:
            raw = self._client.get(self.prefix + key)
        except self._redis.RedisError as exc:
            logger.warning("response cache %s: get failed (%s); treated as a miss", self.url, exc)
            return None
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any], *, model: str | None = None) -> None:
        """``SET`` the value (last writer wins)."""
        try:
            self._client.set(self.prefix + key, _dump(value))
        except self._redis.RedisError as exc:
            logger.warning("response cache %s: put failed (%s); answer not cached", self.url, exc)

    def _keys(self) -> list[Any]:
        return list(self._client.scan_iter(match=self.prefix + "*", count=1000))

    def __len__(self) -> int:
        return len(self._keys())

    def clear(self) -> None:
        """Delete every entry under this cache's prefix."""
        keys = self._keys()
        for i in range(0, len(keys), 1000):
            self._client.delete(*keys[i : i + 1000])

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()


def _without_password(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username + ':' if parts.username else ''}***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def open_cache(spec: bool | str | Path | CacheBackend | None = True) -> CacheBackend | None:
    """The response cache a spec names: ``False``/``None`` none; ``True`` the default
    (``$TASKBENCH_CACHE_URL``, else the SQLite file :func:`default_cache_path`); a backend object as it is;
    ``redis://``/``rediss://``/``unix://`` URLs a :class:`RedisCache`; ``dir:///path`` a :class:`DirectoryCache`;
    ``sqlite:///path`` or a plain path a :class:`ResponseCache`."""
    if spec is None or spec is False:
        return None
    if spec is True:
        spec = os.environ.get(CACHE_URL_ENV) or default_cache_path()
    if not isinstance(spec, (str, Path)):
        if isinstance(spec, CacheBackend):
            return spec
        raise ConfigError(f"cache must be True, False, a path or a URL, not {type(spec).__name__}")
    text = str(spec)
    scheme, sep, rest = text.partition("://")
    if not sep:
        return ResponseCache(text)
    scheme = scheme.lower()
    if scheme in ("redis", "rediss", "unix"):
        return RedisCache(text)
    if scheme == "dir":
        return DirectoryCache(rest)
    if scheme == "sqlite":
        return ResponseCache(rest)
    raise ConfigError(f"unknown response cache {text!r}: use a path, sqlite:///path, dir:///path or redis://host:port/db")


__all__ = [
    "CACHE_URL_ENV",
    "CACHE_VERSION",
    "CacheBackend",
    "DirectoryCache",
    "RedisCache",
    "ResponseCache",
    "cache_key",
    "default_cache_path",
    "open_cache",
]
