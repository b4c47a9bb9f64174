"""Any MCP server as an environment: ``open_environment("mcp:python my_server.py")``.

:class:`MCPEnvironment` starts the server as a subprocess speaking MCP over stdio (the official ``mcp``
package, extra ``[mcp]``), lists its tools as :class:`~taskbench.schema.ToolSpec` (``inputSchema`` and
``outputSchema`` kept exactly as the server gave them, through the MCP loader of :mod:`taskbench.graph.loaders`)
and forwards each :class:`~taskbench.schema.ToolCall` as ``tools/call``:

- ``structuredContent`` becomes the result's ``content`` when the server sends it; else the text blocks (one
  text block: its text; several: joined by newlines); image, audio and resource blocks are summarised
  (``{"type", "mimeType", "bytes"}`` or ``{"type", "uri"}``) next to the text;
- ``isError: true`` becomes the result's ``error`` (the text the server gave);
- a call that takes longer than ``call_timeout`` seconds, or a server that died, gives an error result that
  says so, with the last lines the server wrote to stderr; calls after a death fail at once with the same
  reason. Nothing hangs: start-up is bounded by ``startup_timeout`` and shutdown by the SDK's bounded
  close-stdin / terminate / kill sequence.

The client runs on its own event loop in a background thread, so the environment works from any caller (the
protocol's async methods, or :meth:`MCPEnvironment.close` from synchronous code) and ``tools()`` needs no
event loop. Tasks and their checkers come from a task file (:mod:`taskbench.envs.tasks`); settings and
transports: :func:`parse_server`.

**Episodes run on scratch copies.** MCP has no reset, and a server's state lives in the files it was pointed
at. So the data a stdio server's command names (:func:`data_paths`: every argument, ``--opt=VALUE`` value and
``NAME=VALUE`` setting that is an existing file or directory, or a path to one the server would create; not
the program it runs) is copied once, when the first episode starts (:meth:`MCPEnvironment.reset`), and every
episode then gets a fresh copy of that snapshot, with the server restarted on it (a ``--cwd`` inside a copied
directory moves with it). An episode's set-up calls, the agent's writes and the checker's reads touch the
copy, never the user's files, and concurrent episodes (``agents eval -c N`` opens one environment per
episode in flight) never share state. Before the first episode (listing tools, ``generate --env``) the server
runs on the data as given. A server with no data on its command line, or one reached by URL, keeps its own
state: :attr:`MCPEnvironment.shared_state` says why, and ``agents eval`` then refuses what would collide
(:func:`taskbench.envs.tasks.check_tasks`). Copies larger than ``scratch_mb`` are refused with one line.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import re
import shlex
import shutil
import tempfile
import threading
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .._loop import LoopThread
from ..errors import ConfigError, InputError, MissingDependencyError
from ..schema import ToolCall, ToolResult, ToolSpec
from .base import Environment, parse_check_mode

PIP_LINE = 'pip install "taskbench[mcp]"'


def _require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise MissingDependencyError(f"MCP environments need the mcp package: {PIP_LINE}") from None


def _dump(model: Any) -> dict[str, Any]:
    """An SDK result as its JSON wire form (camelCase keys, as MCP names them, in SDK 1.x and 2.x alike)."""
    if isinstance(model, Mapping):
        return dict(model)
    return cast("dict[str, Any]", model.model_dump(mode="json", by_alias=True, exclude_none=True))


def convert_result(call: ToolCall, result: Mapping[str, Any]) -> ToolResult:
    """A ``tools/call`` result (wire form) as a :class:`ToolResult` (see the module docstring)."""
    blocks = [b for b in result.get("content") or [] if isinstance(b, Mapping)]
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    others: list[dict[str, Any]] = []
    for b in blocks:
        kind = b.get("type")
        if kind in ("image", "audio"):
            data = str(b.get("data", ""))
            others.append({"type": kind, "mimeType": b.get("mimeType"), "bytes": len(data) * 3 // 4})
        elif kind == "resource":
            res: Mapping[str, Any] = b["resource"] if isinstance(b.get("resource"), Mapping) else {}
            item = {"type": "resource", "uri": res.get("uri"), "mimeType": res.get("mimeType")}
            if isinstance(res.get("text"), str):
                item["text"] = res["text"]
            others.append(item)
        elif kind == "resource_link":
            others.append({"type": "resource_link", "uri": b.get("uri"), "name": b.get("name")})
        elif kind != "text":
            others.append({"type": str(kind)})
    if result.get("isError"):
        message = "\n".join(t for t in texts if t) or "the tool reported an error (no message)"
        return ToolResult(call_id=call.id, name=call.name, error=message)
    structured = result.get("structuredContent")
    content: Any
    if structured is not None:
        content = structured
    elif not others:
        content = texts[0] if len(texts) == 1 else "\n".join(texts)
    else:
        content = [{"type": "text", "text": t} for t in texts] + others
    return ToolResult(call_id=call.id, name=call.name, content=content)


def specs_from_listing(tools: list[Any], command: str) -> list[ToolSpec]:
    """``tools/list`` entries (wire form) as tool specs, through the MCP loader."""
    from ..graph.loaders import JsonSource, tools_from_mcp

    doc = {"tools": tools}
    try:
        loaded = tools_from_mcp(JsonSource(None, json.dumps(doc), doc))
    except InputError as exc:
        raise ConfigError(f"MCP server {command!r} listed a malformed tool: {exc.message}") from None
    return [t.spec() for t in loaded]


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
TRANSPORTS = ("stdio", "http", "sse")


@dataclass(frozen=True)
class ServerSpec:
    """Where an MCP server is and how to reach it, parsed from the text after ``mcp:`` (see :func:`parse_server`).

    ``env`` and ``headers`` hold the text as written (``$NAME`` not yet expanded): :meth:`expanded` reads the
    host's values when the server is opened, so a secret given as ``TOKEN=$TOKEN`` never reaches a record."""

    transport: str
    argv: tuple[str, ...] = ()
    url: str = ""
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return self.url or shlex.join(self.argv)

    def expanded(self, environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
        """(environment variables, HTTP headers) with every ``$NAME`` / ``${NAME}`` replaced by the host's
        value; an unset name is a :class:`ConfigError` naming it."""
        source = os.environ if environ is None else environ

        def expand(text: str) -> str:
            def one(m: re.Match[str]) -> str:
                name = m.group(1) or m.group(2)
                if name not in source:
                    raise ConfigError(f"mcp: ${name} is not set in this environment (export it, or write the value)")
                return source[name]

            return _VAR.sub(one, text)

        return {k: expand(v) for k, v in self.env}, {k: expand(v) for k, v in self.headers}

    def secret_values(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The host's values of every ``$NAME`` the settings refer to: the secrets this server is given, which
        never reach a record (:meth:`MCPEnvironment.secrets`)."""
        source = os.environ if environ is None else environ
        names = {m.group(1) or m.group(2) for _, text in (*self.env, *self.headers) for m in _VAR.finditer(text)}
        return sorted({source[n] for n in names if source.get(n)}, key=len, reverse=True)


def parse_server(text: str) -> ServerSpec:
    """The text after ``mcp:``: settings, then a command (stdio) or a URL (streamable HTTP, or SSE).

    Settings, each one word before the command: ``NAME=VALUE`` (an environment variable for the server;
    ``$NAME``/``${NAME}`` in the value is read from the host's environment when the server starts, so
    ``GITHUB_TOKEN=$GITHUB_TOKEN`` passes a secret without writing it anywhere), ``--cwd=DIR`` (the server's
    working directory), ``--header=NAME:VALUE`` (an HTTP header, ``$NAME`` expanded too) and
    ``--transport=stdio|http|sse`` (default: stdio for a command; http for a URL, sse when its path ends in
    ``/sse``). Examples: ``mcp:uvx mcp-server-time``, ``mcp:--cwd=/tmp/w MEMORY_FILE_PATH=/tmp/w/m.json npx -y
    @modelcontextprotocol/server-memory``, ``mcp:http://127.0.0.1:8000/mcp``."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"mcp:{text}: {exc} (quote the command as a shell would)") from None
    env: list[tuple[str, str]] = []
    headers: list[tuple[str, str]] = []
    cwd: str | None = None
    transport: str | None = None
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--cwd="):
            cwd = word[len("--cwd="):]
        elif word.startswith("--header="):
            name, sep, value = word[len("--header="):].partition(":")
            if not sep or not name.strip():
                raise ConfigError(f"mcp: {word!r}: expected --header=NAME:VALUE")
            headers.append((name.strip(), value.strip()))
        elif word.startswith("--transport="):
            transport = word[len("--transport="):]
            if transport not in TRANSPORTS:
                raise ConfigError(f"mcp: unknown transport {transport!r} (use one of: {', '.join(TRANSPORTS)})")
        elif word.startswith("--"):
            raise ConfigError(f"mcp: unknown setting {word!r} (settings: NAME=VALUE, --cwd=DIR, "
                              "--header=NAME:VALUE, --transport=stdio|http|sse)")
        elif _ASSIGN.match(word):
            name, _, value = word.partition("=")
            env.append((name, value))
        else:
            break
        i += 1
    rest = words[i:]
    if not rest:
        raise ConfigError("mcp: no command given (use mcp:<command ...>, e.g. mcp:python my_server.py, or "
                          "mcp:http://127.0.0.1:8000/mcp)")
    if rest[0].startswith(("http://", "https://")):
        if len(rest) > 1:
            raise ConfigError(f"mcp: a server URL takes no arguments (got {shlex.join(rest[1:])!r})")
        url = rest[0]
        kind = transport or ("sse" if url.split("?")[0].rstrip("/").endswith("/sse") else "http")
        if kind == "stdio":
            raise ConfigError(f"mcp: {url} is a URL; --transport=stdio needs a command")
        if env or cwd:
            raise ConfigError("mcp: NAME=VALUE and --cwd are for servers started as a command, not a URL")
        return ServerSpec(transport=kind, url=url, headers=tuple(headers))
    if transport not in (None, "stdio"):
        raise ConfigError(f"mcp: --transport={transport} needs a URL, not a command")
    if headers:
        raise ConfigError("mcp: --header is for servers reached by URL")
    return ServerSpec(transport="stdio", argv=tuple(rest), env=tuple(env), cwd=cwd)


# ------------------------------------------------------------------------------------------------ scratch copies

PROGRAM_SUFFIXES = frozenset({".py", ".pyc", ".js", ".mjs", ".cjs", ".ts", ".mts", ".sh", ".bash", ".rb", ".pl",
                              ".php", ".jar", ".exe", ".bat", ".cmd", ".ps1"})
"""A file with one of these suffixes on a server's command line is its program, not its data."""
DATA_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3", ".duckdb", ".json", ".jsonl", ".csv", ".tsv", ".txt",
                           ".md", ".yaml", ".yml", ".toml", ".xml", ".parquet", ".bin", ".dat"})
"""A word with one of these suffixes after an option names a data file even before it exists."""
SCRATCH_MB = 512
"""Largest total size of a server's data that is copied per episode (MB)."""


@dataclass(frozen=True)
class DataPath:
    """One place a server's command line names data: argument ``index`` (after ``prefix``, for ``--opt=VALUE``),
    or the environment variable ``env``; ``path`` is where it resolves (absolute)."""

    path: Path
    index: int | None = None
    prefix: str = ""
    env: str | None = None


LAUNCHER_OPTIONS = frozenset({"--directory", "--project", "--prefix", "--from", "--with", "--with-editable"})
"""Options of launchers (uv, uvx, npx, npm) whose value is where the program is (``uv --directory DIR run
server.py``), not its data."""


def _is_program(path: Path) -> bool:
    return path.is_file() and (path.suffix.lower() in PROGRAM_SUFFIXES or os.access(path, os.X_OK))


def _data_path(word: str, base: Path, after_option: bool) -> Path | None:
    """Where ``word`` names data (existing, or a path the server would create), else None."""
    if not word or "://" in word or word.startswith("-") or word.startswith("@"):
        return None
    path = Path(os.path.expanduser(word))
    path = path if path.is_absolute() else base / path
    if path.exists() or path.is_symlink():
        return None if _is_program(path) else Path(os.path.abspath(path))
    looks_like_path = os.sep in word or (after_option and path.suffix.lower() in DATA_SUFFIXES)
    if looks_like_path and path.parent.is_dir() and path.suffix.lower() not in PROGRAM_SUFFIXES:
        return Path(os.path.abspath(path))
    return None


def data_paths(server: ServerSpec, env: Mapping[str, str] | None = None, cwd: str | Path | None = None
               ) -> list[DataPath]:
    """The data a stdio server's command names (see the module docstring): arguments after the executable,
    ``--opt=VALUE`` values and ``NAME=VALUE`` settings (``env``: their expanded values) that are an existing
    file or directory (not a program: a ``.py``/``.js``/... or executable file, or the value of a launcher's
    ``--directory``/``--project``/``--prefix``/``--from``/``--with``), or a path to one that does
    not exist yet (with a ``/``, or a data suffix such as ``.db`` after an option). Relative paths resolve
    against ``cwd`` (else the server's ``--cwd``, else ours)."""
    if server.transport != "stdio":
        return []
    base = Path(cwd if cwd is not None else server.cwd or os.getcwd())
    base = base if base.is_absolute() else Path.cwd() / base
    out: list[DataPath] = []
    for i, word in enumerate(server.argv[1:], 1):
        prefix, value = "", word
        if word.startswith("-") and "=" in word:
            prefix, _, value = word.partition("=")
            prefix += "="
        if (prefix[:-1] or server.argv[i - 1]) in LAUNCHER_OPTIONS:
            continue
        path = _data_path(value, base, after_option=bool(prefix) or server.argv[i - 1].startswith("-"))
        if path is not None:
            out.append(DataPath(path=path, index=i, prefix=prefix))
    for name, value in (env if env is not None else dict(server.env)).items():
        path = _data_path(value, base, after_option=True)
        if path is not None:
            out.append(DataPath(path=path, env=name))
    return out


SIDECARS = ("-wal", "-shm", "-journal")
"""Files a database keeps next to its file (SQLite's write-ahead log, shared memory, rollback journal): copied
with it, so the copy holds what the log holds."""


def _size(path: Path, limit: int) -> int:
    """Bytes under ``path`` (what links point to counted, as they are copied), stopping once past ``limit``."""
    if not path.exists():
        return 0
    if not path.is_dir():
        return path.stat().st_size + sum(Path(f"{path}{s}").stat().st_size for s in SIDECARS
                                         if Path(f"{path}{s}").is_file())
    total = 0
    for root, _dirs, files in os.walk(path, followlinks=True):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).stat().st_size
            if total > limit:
                return total
    return total


def _copy(src: Path, dst: Path, skip: Path) -> None:
    """Copy ``src`` to ``dst`` as real files: a symlink is copied as what it points to (a copied link would
    lead the episode back to the user's data), a database's sidecar files go with it; ``skip`` (the scratch
    directory itself, when the data contains it) is left out."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        def ignore(folder: str, names: list[str]) -> list[str]:
            return [n for n in names if Path(folder, n) == skip]

        shutil.copytree(src, dst, symlinks=False, ignore=ignore, ignore_dangling_symlinks=True)
        return
    shutil.copy2(src, dst)
    for suffix in SIDECARS:
        side = Path(f"{src}{suffix}")
        if side.is_file():
            shutil.copy2(side, Path(f"{dst}{suffix}"))


class _Scratch:
    """A server's data, snapshotted once and copied afresh for each episode (see the module docstring)."""

    def __init__(self, label: str, paths: list[DataPath], limit_mb: float) -> None:
        self.paths = paths
        # the distinct places to copy: a path inside another named directory is copied with it
        tops: list[Path] = []
        for p in sorted({d.path for d in paths}, key=lambda q: len(q.parts)):
            if not any(p.is_relative_to(t) for t in tops):
                tops.append(p)
        self.tops = tops
        limit = int(limit_mb * 1024 * 1024)
        total = sum(_size(t, limit) for t in tops)
        if total > limit:
            raise ConfigError(f"MCP server {label!r}: its data ({', '.join(map(str, tops))}) is over {limit_mb:g} MB, "
                              "too large to copy for every episode (point the server at a smaller copy, or raise "
                              "scratch_mb)")
        self.root = Path(tempfile.mkdtemp(prefix="taskbench-mcp-"))
        self.snapshot = self.root / "snapshot"
        for k, top in enumerate(tops):
            if top.exists():
                _copy(top, self.snapshot / f"d{k}" / top.name, self.root)
        self.work = self.root / "work"
        self.episodes = 0

    def where(self, path: Path) -> Path:
        """Where ``path`` is in the current working copy."""
        for k, top in enumerate(self.tops):
            if path.is_relative_to(top):
                return self.work / f"d{k}" / top.name / path.relative_to(top)
        return path

    def fresh(self) -> None:
        """A new working copy of the snapshot (the last episode's changes gone)."""
        self.episodes += 1
        if self.work.exists():
            shutil.rmtree(self.work)
        self.work.mkdir()
        for k, top in enumerate(self.tops):
            src = self.snapshot / f"d{k}" / top.name
            if src.exists():
                _copy(src, self.work / f"d{k}" / top.name, self.root)
            else:  # a path the server creates: its directory only
                (self.work / f"d{k}").mkdir(parents=True, exist_ok=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class _Connection:
    """One MCP client session on a private event loop in a daemon thread."""

    def __init__(self, server: ServerSpec, env: Mapping[str, str] | None, cwd: str | Path | None,
                 headers: Mapping[str, str] | None = None, secrets: Sequence[str] = ()) -> None:
        self.server = server
        self.secrets = list(secrets)
        self.argv = list(server.argv)
        self.label = server.label
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.headers = dict(headers or {})
        self.server_name = ""
        self.runner: LoopThread | None = None  # the private loop, started by start()
        self.stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self.stop: asyncio.Event | None = None
        self.task: asyncio.Task[None] | None = None
        self.finished = threading.Event()  # set when the session task has run its cleanup (process ended)
        self.session: Any = None
        self.main: concurrent.futures.Future[None] | None = None
        self.dead: str | None = None
        self.closed = False
        self.tools: list[Any] = []
        self._tail = ""

    # ---------------------------------------------------------------------------------------- life cycle

    def start(self, timeout: float) -> None:
        self.runner = LoopThread(f"mcp {self.label}")
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self.main = self.runner.submit(self._run(ready))
        try:
            self.tools = ready.result(timeout)
        except concurrent.futures.TimeoutError:
            tail = self.tail()
            self.close()
            raise ConfigError(self.clean(
                f"MCP server {self.label!r} did not answer initialize and tools/list within {timeout:g} s"
                f"{tail} (is it an MCP server on stdio? raise startup_timeout if it is slow)"
            )) from None
        except Exception as exc:
            self.close()  # the process has ended: its stderr is complete
            raise ConfigError(self.clean(f"MCP server {self.label!r} failed to start: {_describe(exc)}{self._tail}")) from None

    async def _run(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        from mcp import ClientSession

        self.stop = asyncio.Event()
        self.task = asyncio.current_task()
        try:
            async with self._transport() as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    init = _dump(await session.initialize())
                    info = init.get("serverInfo")
                    self.server_name = str(info.get("name") or "") if isinstance(info, Mapping) else ""
                    tools = await _list_tools(session)
                    self.session = session
                    ready.set_result(tools)
                    await self.stop.wait()
        except BaseException as exc:  # noqa: BLE001 - recorded, reported by start() or the next call
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(_describe(exc)))
            self.dead = self.dead or _describe(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self.finished.set()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        """The SDK's client transport for this server: the (read, write) streams, closed on exit."""
        if self.server.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client
            from mcp.client.stdio import get_default_environment

            env = {**get_default_environment(), **self.env} if self.env else None  # merged in SDK 1.x too
            params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=env, cwd=self.cwd)
            async with stdio_client(params, errlog=self.stderr) as streams:
                yield streams
        elif self.server.transport == "sse":
            from mcp.client.sse import sse_client

            async with sse_client(self.server.url, headers=self.headers or None) as streams:
                yield streams
        else:
            import mcp.client.streamable_http as http

            if hasattr(http, "streamable_http_client"):  # SDK 2.x: headers through an HTTP client we own
                from mcp.shared._httpx_utils import create_mcp_http_client

                async with create_mcp_http_client(headers=self.headers or None) as client:
                    async with http.streamable_http_client(self.server.url, http_client=client) as streams:
                        yield streams
            else:  # pragma: no cover - SDK 1.x
                legacy: Any = http
                async with legacy.streamablehttp_client(self.server.url, headers=self.headers or None) as streams:
                    yield streams

    def close(self, timeout: float = 15.0) -> None:
        """Stop the session (close stdin, then terminate and kill as the SDK does), then the loop."""
        if self.closed:
            return
        self.closed = True
        runner = self.runner
        if runner is not None:
            if runner.thread.is_alive() and self.main is not None:
                if self.session is not None and self.stop is not None:
                    runner.call_soon(self.stop.set)  # leave the contexts: stdin closed, process ended
                else:  # still starting: cancel the task inside the loop, so the SDK's cleanup ends the process
                    runner.call_soon(self._cancel_task)
                # wait for the task's own cleanup (not just the future: a cancelled future returns at once)
                self.finished.wait(timeout)
            runner.stop(timeout)
        self._tail = self.tail()
        self.stderr.close()

    def _cancel_task(self) -> None:
        if self.task is not None:
            self.task.cancel()
        elif self.main is not None:  # the task has not started yet
            self.main.cancel()
            self.finished.set()

    # ---------------------------------------------------------------------------------------- calls

    def tail(self, lines: int = 3) -> str:
        """``; its stderr ends: ...`` with the server's last stderr lines (empty when it wrote none)."""
        try:
            self.stderr.flush()
            self.stderr.seek(0)
            text = self.stderr.read()[-4000:]
        except (ValueError, OSError):
            return ""
        kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
        return self.clean(f"; its stderr ends: {' | '.join(kept)}") if kept else ""

    def clean(self, text: str) -> str:
        """``text`` with the server's secrets and the process's remembered ones taken out (a server may print
        its environment to stderr, or an error may quote a header)."""
        from ..llm.redact import redact_known, remembered

        return redact_known(text, [*self.secrets, *remembered()])

    async def call(self, call: ToolCall, timeout: float) -> ToolResult:
        if self.closed:
            return ToolResult(call_id=call.id, name=call.name, error=f"MCP server {self.label!r} is closed")
        if self.dead is not None:
            return ToolResult(call_id=call.id, name=call.name, error=self._dead_message())
        assert self.runner is not None  # started: the connection opens in start()
        return await asyncio.wrap_future(self.runner.submit(self._call(call, timeout)))

    def _dead_message(self) -> str:
        return self.clean(f"MCP server {self.label!r} is gone ({self.dead}){self.tail()}")

    async def _call(self, call: ToolCall, timeout: float) -> ToolResult:
        try:
            result = await asyncio.wait_for(self.session.call_tool(call.name, dict(call.arguments)), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            return ToolResult(call_id=call.id, name=call.name,
                              error=f"MCP server {self.label!r} did not answer tools/call {call.name!r} "
                                    f"within {timeout:g} s")
        except Exception as exc:
            text = _describe(exc)
            if "closed" in text.lower() or isinstance(exc, (BrokenPipeError, EOFError)):
                await asyncio.sleep(0.05)  # let the server's last stderr lines land
                self.dead = f"connection closed during tools/call {call.name!r}"
                return ToolResult(call_id=call.id, name=call.name, error=self._dead_message())
            return ToolResult(call_id=call.id, name=call.name, error=self.clean(f"MCP error: {text}"))
        return convert_result(call, _dump(result))


async def _list_tools(session: Any) -> list[Any]:
    """Every tool of the server (following ``nextCursor``)."""
    page = _dump(await session.list_tools())
    tools = list(page.get("tools") or [])
    cursor = page.get("nextCursor")
    while cursor:
        try:
            from mcp import types

            result = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        except TypeError:  # SDK 1.x
            result = await session.list_tools(cursor=cursor)
        page = _dump(result)
        tools.extend(page.get("tools") or [])
        cursor = page.get("nextCursor")
    return tools


def _describe(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # an exception group (anyio task groups raise them)
    if isinstance(inner, tuple) and inner:
        return "; ".join(_describe(e) for e in inner)
    if isinstance(exc, FileNotFoundError):
        return f"command not found ({exc.filename or exc})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class MCPEnvironment(Environment):
    """An MCP server (a subprocess on stdio) as an environment (see the module docstring).

    ``command``: the command line (a string, split like a shell does, or a list). ``env``: extra environment
    variables for the server (the SDK passes a safe default set: HOME, PATH, ...). ``cwd``: its working
    directory. ``startup_timeout`` bounds start-up (initialize + tools/list); ``call_timeout`` each call.
    ``check``: ``solved`` (default: the answer is right and what it states appeared in a successful response
    of the episode) or ``answer-only`` (:data:`~taskbench.envs.base.CHECK_MODES`)."""

    name = "mcp"

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        startup_timeout: float = 30.0,
        call_timeout: float = 60.0,
        scratch_mb: float = SCRATCH_MB,
        check: str = "solved",
    ) -> None:
        super().__init__()
        self.check_mode = parse_check_mode(check)
        text = command if isinstance(command, str) else shlex.join(str(a) for a in command)
        server = parse_server(text)
        _require_mcp()
        extra_env, headers = server.expanded()
        self._secrets = server.secret_values()
        if self._secrets:
            from ..llm.redact import remember

            remember(*self._secrets)
        if env:
            extra_env.update(env)
        self.server = server
        self.command = list(server.argv)
        self.name = f"mcp:{text.strip()}"  # type: ignore[misc]  # as written: $NAME values stay unexpanded
        self.call_timeout = call_timeout
        self.startup_timeout = startup_timeout
        self.scratch_mb = scratch_mb
        self._env = extra_env
        self._headers = headers
        self._cwd = cwd if cwd is not None else server.cwd
        self._data = data_paths(server, extra_env, self._cwd)
        self._scratch: _Scratch | None = None
        self._conn = _Connection(server, extra_env or None, self._cwd, headers, self._secrets)
        self._finalizer = weakref.finalize(self, _close_all, self._conn, None)
        self._conn.start(startup_timeout)
        from ..llm.redact import redact_value, remembered

        self._conn.tools = redact_value(self._conn.tools, [*self._secrets, *remembered()])  # a description too
        self._specs = specs_from_listing(self._conn.tools, self._conn.label)

    @property
    def data(self) -> list[Path]:
        """The data the server's command names (copied for each episode)."""
        return [d.path for d in self._data]

    @property
    def shared_state(self) -> str | None:
        """None when every episode gets its own state (the server's data is copied per episode); else why
        episodes, and several copies of this server, may share state."""
        if self.server.transport != "stdio":
            return f"the server at {self.server.url} is one server for every episode, and taskbench cannot copy its data"
        if not self._data:
            return ("its command names no data file or directory that taskbench could copy per episode, so any "
                    "state it keeps lives where every copy of the server sees it")
        return None

    def read_only_tools(self) -> list[str]:
        """The tools the server marks read-only (MCP's ``readOnlyHint``, not ``destructiveHint``) that need no
        argument: what :meth:`read_state` may call on a server no recipe knows."""
        out = []
        for tool in self._conn.tools:
            ann = tool.get("annotations") if isinstance(tool, Mapping) else None
            schema = tool.get("inputSchema") if isinstance(tool, Mapping) else None
            required = schema.get("required") if isinstance(schema, Mapping) else None
            if isinstance(ann, Mapping) and ann.get("readOnlyHint") is True and ann.get("destructiveHint") is not True \
                    and not required:
                out.append(str(tool.get("name")))
        return out

    async def read_state(self) -> str | None:
        """What the server holds now (:mod:`taskbench.envs.state`: a known recipe, else its read-only tools)."""
        from .state import read_state

        return await read_state(self._run, [t.name for t in self.tools()], read_only=self.read_only_tools())

    async def _reset(self, seed: int, task: Any) -> None:
        if self._data:
            await asyncio.to_thread(self._fresh_server)

    def _fresh_server(self) -> None:
        """Restart the server on a fresh copy of its data (the first call makes the snapshot)."""
        if self._scratch is None:
            self._scratch = _Scratch(self._conn.label, self._data, self.scratch_mb)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _close_all, self._conn, self._scratch)
        scratch = self._scratch
        self._conn.close()
        scratch.fresh()
        argv = list(self.server.argv)
        env = dict(self._env)
        for d in self._data:
            moved = str(scratch.where(d.path))
            if d.env is not None:
                env[d.env] = moved
            elif d.index is not None:
                argv[d.index] = d.prefix + moved
        cwd = self._cwd
        if cwd is not None:
            cwd = str(scratch.where(Path(os.path.abspath(cwd))))
        else:  # the server ran in our directory: inside a copied directory it moves with it
            here = scratch.where(Path.cwd())
            cwd = str(here) if here != Path.cwd() else None
        server = ServerSpec(transport="stdio", argv=tuple(argv), env=tuple(env.items()), cwd=cwd)
        self._conn = _Connection(server, env or None, cwd, self._headers, self._secrets)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _close_all, self._conn, scratch)
        self._conn.start(self.startup_timeout)

    def tools(self) -> list[ToolSpec]:
        return list(self._specs)

    def secrets(self) -> list[str]:
        """The values of the ``$NAME`` references in the spec (taken out of every result and error)."""
        return list(self._secrets)

    @property
    def server_name(self) -> str:
        """The name the server gave in its ``initialize`` answer (``serverInfo.name``), or ""."""
        return self._conn.server_name

    def listing(self) -> dict[str, Any]:
        """The server's ``tools/list`` result as it sent it (every page), ``{"tools": [...]}``."""
        return {"tools": list(self._conn.tools)}

    @property
    def alive(self) -> bool:
        """True while the server answers (not closed, not dead)."""
        return not self._conn.closed and self._conn.dead is None

    async def _execute(self, call: ToolCall) -> ToolResult:
        return await self._conn.call(call, self.call_timeout)

    def close(self) -> None:
        """Shut the server down and remove the scratch copies (idempotent; also done when the environment is
        garbage-collected)."""
        self._finalizer()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


def _close_all(conn: _Connection, scratch: _Scratch | None) -> None:
    conn.close()
    if scratch is not None:
        scratch.close()


def save_listing(spec: str, directory: str | Path, *, startup_timeout: float = 30.0) -> Path:
    """Start the MCP server ``spec`` (the text after ``mcp:``), save its ``tools/list`` result as
    ``<server name>.json`` in ``directory`` (a tool library any loader reads) and shut it down."""
    from ..dataset.jsonio import write_json

    env = MCPEnvironment(spec, startup_timeout=startup_timeout)
    try:
        doc = env.listing()
        base = env.server_name or (Path(env.command[-1]).name if env.command else "") or "mcp-server"
    finally:
        env.close()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "mcp-server"
    out = Path(directory) / f"{stem}.json"
    write_json(out, doc)
    return out


__all__ = ["SCRATCH_MB", "DataPath", "MCPEnvironment", "ServerSpec", "convert_result", "data_paths", "parse_server",
           "save_listing", "specs_from_listing"]
