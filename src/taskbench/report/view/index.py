"""The viewer's one door to run directories: find them, read their headers, and answer the pages from an index.

Every other part of the viewer talks to :class:`ViewIndex` only, so the way runs are read can change in one
place. Kinds of run directory found under the paths given to ``taskbench view``:

- ``run``: a `taskbench run` output (``run_log.json``); its ``generated/`` and ``agents/`` stages are listed
  as runs of their own, with the run as parent;
- ``eval``: a directory of `taskbench evaluate` metrics files (``*.json`` with strict and/or compat
  metrics), paired with the predictions file of the same stem in the directory or a sibling ``predictions/``
  / ``preds/`` folder;
- ``generate``: a `taskbench generate` output (``generation.json`` next to ``data.json``);
- ``agents``: a `taskbench agents eval` output (``episodes.jsonl`` and ``config.json``).

A run's kind, config, environment and seeds come from its typed run header (:mod:`taskbench.dataset.header`:
``header.json``, or ``FILE.header.json`` next to an `evaluate` output, whose ``data`` names its gold); a
directory written before headers is recognised by its files. A run log holds every prediction (``records``): on a large run it is hundreds of megabytes. The header (config,
environment, timings, usage, metrics) is read without them (:func:`read_run_header`), so the index of a run of
28,271 samples x 17 models costs milliseconds and a few megabytes; samples are read one page at a time from
the predictions files (:mod:`.samples`).

What a run's files name is not trusted: every file is opened through :mod:`.files` (a regular file inside the
run directory, resolved), the gold only from a bundled dataset, a ``--data`` directory or the run directory, and
no program named by a run is ever started (a header whose ``data`` is an ``mcp:`` server is not followed).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from .files import Outside, RunFile, confine, inside, real_dir

__all__ = ["MAX_DEPTH", "MAX_RUNS", "VIEW_PORT", "GoldRoots", "RunInfo", "ScoredEntry", "ViewIndex", "find_runs",
           "read_run_header", "read_small_json",
           "run_slug", "viewer_url"]

MAX_DEPTH = 4
"""How deep below each given path run directories are looked for."""

MAX_RUNS = 2000
"""At most this many run directories are indexed (the rest are named in ``problems``)."""

MAX_HEADER_BYTES = 64 << 20
"""A run log whose header (without its records) is bigger than this is refused."""

MAX_JSON_BYTES = 32 << 20
"""Largest metrics, config or episodes file read whole."""

_SKIPPED = re.compile(rb'\n( *)"(records|errors|sample_ids)": \[')
_STAGE_DIRS = ("generated", "agents")
_SKIP_DIRS = {"predictions", "preds", "trajectories", "plots", "__pycache__", ".git", "node_modules"}


class _Scan:
    """Find bytes in a file a chunk at a time (memory stays at :data:`CHUNK`, whatever the file's size)."""

    CHUNK = 8 << 20

    def __init__(self, fh: Any, size: int) -> None:
        self.fh, self.size = fh, size

    def read(self, a: int, b: int) -> bytes:
        self.fh.seek(a)
        data: bytes = self.fh.read(max(0, b - a))
        return data

    def find(self, needle: bytes, start: int) -> int:
        pos = start
        while pos < self.size:
            chunk = self.read(pos, pos + self.CHUNK + len(needle))
            i = chunk.find(needle)
            if i >= 0:
                return pos + i
            pos += self.CHUNK
        return -1

    def search(self, pattern: re.Pattern[bytes], start: int) -> tuple[int, bytes, bytes] | None:
        """(offset, indent, key) of the next match of ``pattern`` (whose matches are under 200 bytes)."""
        pos = start
        while pos < self.size:
            chunk = self.read(pos, pos + self.CHUNK + 200)
            m = pattern.search(chunk)
            if m is not None:
                return pos + m.start(), m.group(1), m.group(2)
            pos += self.CHUNK
        return None


def read_run_header(path: str | Path | RunFile) -> dict[str, Any]:
    """A ``run_log.json`` without its per-sample lists: every ``"records"`` list (the predictions and
    trajectories), every ``"errors"`` list (the strict metrics' per-sample error labels, read from the metrics
    file when a page needs them) and every ``"sample_ids"`` list are read as empty (``"sample_ids_count"``
    beside the last: one id a line, so its lines are its length).

    The writer indents the log (two spaces), and a JSON string never holds a raw newline, so such a list ends
    at the first line that is its key's indent followed by ``]``: found with ``bytes.find`` a chunk at a time,
    nothing in the list is parsed. A log written without indentation is read whole when it is small enough,
    else refused with the reason. ``path``: a :class:`~.files.RunFile`, or a path (read as a regular file of
    its own directory)."""
    file = path if isinstance(path, RunFile) else confine(path, [real_dir(Path(path).parent)], what="run log")
    path = file.path
    with file.open() as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise InputError("empty run log", path=path)
        scan = _Scan(fh, size)
        parts: list[bytes] = []
        pos = 0
        kept = 0
        while True:
            m = scan.search(_SKIPPED, pos)
            if m is None:
                break
            at, indent, key = m
            start = at + len(indent) + len(key) + 6  # past '\n', the indent, '"key": ['
            if scan.read(start, start + 1) == b"]":  # an empty list
                parts.append(scan.read(pos, start + 1) + (b', "sample_ids_count": 0' if key == b"sample_ids" else b""))
                pos = start + 1
            else:
                end = scan.find(b"\n" + indent + b"]", start)
                if end < 0:
                    raise InputError(f"run log ends inside a {key.decode()} list (cut short?)", path=path)
                count = b""
                if key == b"sample_ids":  # one id a line: the count is the lines
                    count = b', "sample_ids_count": ' + str(scan.read(start, end).count(b"\n")).encode()
                parts.append(scan.read(pos, start) + b"]" + count)
                pos = end + 1 + len(indent) + 1
            kept += len(parts[-1])
            if kept > MAX_HEADER_BYTES:
                raise InputError(f"run log header is over {MAX_HEADER_BYTES >> 20} MB", path=path)
        if not parts and size > MAX_HEADER_BYTES:
            raise InputError(f"run log of {size >> 20} MB is not indented, so its header cannot be read apart "
                             "from its records", path=path, hint="rewrite it with taskbench's writer (indent 2)")
        parts.append(scan.read(pos, size))
    try:
        doc = json.loads(b"".join(parts))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not a JSON run log ({exc})", path=path) from None
    if not isinstance(doc, dict):
        raise InputError("not a run log (not a JSON object)", path=path)
    return doc


def read_small_json(file: RunFile, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file of a run read whole (refused over ``limit`` bytes)."""
    try:
        return json.loads(file.read_bytes(limit))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not JSON ({exc})", path=file.path) from None


@dataclass
class ScoredEntry:
    """One model on one dataset in a run: where its predictions, metrics and gold are."""

    key: str
    """Unique within the run: 'dataset/model'."""
    model: str
    dataset: str
    predictions: RunFile | None
    metrics_doc: dict[str, Any] | None
    """{'strict': ..., 'compat': ..., 'execution': ...} (any may be missing; execution with --execute)."""
    data_path: Path | None
    """The gold dataset directory (resolved), only when the viewer may read it (see :class:`GoldRoots`)."""
    dependency: str | None
    status: str = "scored"
    failures: int = 0
    parse_failures: int = 0
    n_selected: int | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    predict_seconds: float | None = None
    evaluate_seconds: float | None = None
    error: str | None = None
    metrics_file: RunFile | None = None
    """The metrics JSON (where the per-sample error labels are read from when the run log's were skipped)."""
    problems: list[str] = field(default_factory=list)
    """Files the run names that are not read (outside the run directory, gold outside the allowed places)."""


@dataclass
class RunInfo:
    """One run directory as the viewer lists it."""

    id: str
    kind: str
    """run | eval | generate | agents."""
    path: Path
    title: str
    status: str
    """complete | incomplete | died | running | failed | unknown."""
    date: str | None
    models: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    entries: list[ScoredEntry] = field(default_factory=list)
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    header: dict[str, Any] = field(default_factory=dict)
    """kind-specific facts for the run page (config, environment, passes, stages ...)."""
    death: str | None = None
    problems: list[str] = field(default_factory=list)
    roots: tuple[Path, ...] = ()
    """Where this run's files may be (resolved): its directory; for an `evaluate` output, its folder and the
    ``predictions/`` or ``preds/`` folder beside it."""

    def file(self, name: str | Path) -> RunFile:
        """A file of the run by its path relative to the run directory (or absolute); :class:`~.files.Outside`
        when it resolves outside the run's roots."""
        return confine(self.path / name, self.roots or (real_dir(self.path),), what=str(name))

    def summary(self) -> dict[str, Any]:
        """The run-list row."""
        head = _headline(self.entries)
        return {"id": self.id, "kind": self.kind, "path": str(self.path), "title": self.title,
                "status": self.status, "date": self.date, "models": self.models, "datasets": self.datasets,
                "entries": len(self.entries), "samples": sum(e.n_selected or 0 for e in self.entries),
                "headline": head, "parent": self.parent, "children": self.children,
                "extra": self.header.get("headline_extra")}


def _headline(entries: Sequence[ScoredEntry]) -> dict[str, Any] | None:
    """The best n-F1 in the run (strict, overall) with its model, and the entry count it is over."""
    best: tuple[float, str] | None = None
    for e in entries:
        strict = (e.metrics_doc or {}).get("strict") or {}
        value = (((strict.get("groups") or {}).get("overall_overall") or {}).get("metrics") or {}).get("node_micro_f1")
        if isinstance(value, (int, float)) and (best is None or value > best[0]):
            best = (float(value), f"{e.model} on {e.dataset}")
    return {"metric": "node_micro_f1", "label": "n-F1", "value": best[0], "of": best[1]} if best else None


def _iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat(timespec="seconds")


def _walk(root: Path, top: Path, depth: int = 0) -> Iterator[Path]:
    """``root`` and the folders below it, to :data:`MAX_DEPTH`; a folder that is a link is followed only when
    it resolves inside ``top`` (the resolved path given to `taskbench view`)."""
    yield root
    if depth >= MAX_DEPTH:
        return
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return
    for child in children:
        if child.name in _SKIP_DIRS or (child.is_symlink() and not inside(real_dir(child), top)):
            continue
        yield from _walk(child, top, depth + 1)


def _own(d: Path, name: str) -> RunFile | None:
    """``d/name`` as a file of the run directory ``d`` (None when it is not a regular file inside ``d``)."""
    try:
        f = confine(d / name, [real_dir(d)])
    except Outside:
        return None
    return f if f.is_file() else None


def _load_header(file: RunFile) -> Any:
    from ...dataset.header import parse_header

    return parse_header(read_small_json(file), file.path)


def _header_of(d: Path) -> Any:
    """The typed run header of a directory that has ``header.json`` (None otherwise; older layouts are read
    here from their own files, so a legacy run log is never parsed whole). :class:`InputError` when it
    cannot be read (or is not a regular file inside ``d``)."""
    from ...dataset.header import HEADER_FILE

    if not (d / HEADER_FILE).exists():
        return None
    return _load_header(confine(d / HEADER_FILE, [real_dir(d)], what=HEADER_FILE))


def _kind_of(d: Path) -> str | None:
    if (d / "header.json").is_file():
        try:
            kind = _header_of(d).kind
        except InputError:
            kind = None
        if kind in ("run", "generate", "agents"):
            return str(kind)
    if (d / "run_log.json").is_file():
        return "run"
    if (d / "episodes.jsonl").is_file() and (d / "config.json").is_file():  # before run headers
        return "agents"
    if (d / "generation.json").is_file():
        return "generate"
    if any(_is_metrics_name(p) for p in _json_files(d)):
        return "eval"
    return None


def _json_files(d: Path) -> list[RunFile]:
    """The ``*.json`` regular files of ``d`` (inside it, resolved)."""
    root = real_dir(d)
    out = []
    try:
        names = sorted(p for p in d.glob("*.json"))
    except OSError:
        return []
    for p in names:
        try:
            out.append(confine(p, [root]))
        except Outside:
            continue
    return out


def _is_metrics_name(p: RunFile) -> bool:
    """A JSON file whose first bytes look like an evaluate output (strict, both or reference layout); a run
    header (``*.header.json``) is not one."""
    if p.name.endswith(".header.json") or p.name == "header.json":
        return False
    try:
        with p.open() as fh:
            head = fh.read(4096)
    except (OSError, InputError):
        return False
    return head.lstrip().startswith(b"{") and (b'"mode": "strict"' in head or b'"strict":' in head
                                               or b'"overall_overall"' in head)


def find_runs(paths: Sequence[str | Path]) -> tuple[list[tuple[str, Path]], list[str]]:
    """(kind, directory) of every run directory under ``paths`` (stages of a run included once), and the
    paths that were not found."""
    found: list[tuple[str, Path]] = []
    seen: set[Path] = set()
    missing: list[str] = []
    for raw in paths:
        root = Path(raw)
        if not root.is_dir():
            missing.append(f"{raw}: not a directory")
            continue
        run_roots: list[Path] = []
        for d in _walk(root, real_dir(root)):
            real = d.resolve()
            if real in seen or any(_inside_run(d, r) for r in run_roots):
                continue
            kind = _kind_of(d)
            if kind is not None:
                seen.add(real)
                found.append((kind, d))
                if kind == "run":
                    run_roots.append(d)
            if len(found) >= MAX_RUNS:
                missing.append(f"more than {MAX_RUNS} run directories: the rest are left out")
                return found, missing
    return found, missing


def _inside_run(d: Path, run: Path) -> bool:
    """True for a folder of a run directory that is not one of its stages (metrics/, predictions/ ...)."""
    try:
        rel = d.relative_to(run)
    except ValueError:
        return False
    return bool(rel.parts) and rel.parts[0] not in _STAGE_DIRS


VIEW_PORT = 8766
"""The port `taskbench view` serves on by default."""


def run_slug(path: str | Path) -> str:
    """The viewer's id of a run directory: its last two path parts (resolved), file-name safe."""
    parts = Path(path).resolve().parts
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(parts[-2:])).strip("-") or "run"


def viewer_url(run_dir: str | Path, port: int = VIEW_PORT) -> str:
    """Where `taskbench view` (on its default host and port) shows a run directory."""
    return f"http://127.0.0.1:{port}/view#/run/{run_slug(run_dir)}"


def _slug(path: Path, taken: set[str]) -> str:
    base = run_slug(path)
    slug, i = base, 2
    while slug in taken:
        slug, i = f"{base}-{i}", i + 1
    taken.add(slug)
    return slug


# ----------------------------------------------------------------------------------------------- gold


@dataclass
class GoldRoots:
    """Where gold datasets may be read from, whatever a run names: the bundled datasets, the directories
    given with ``taskbench view --data`` and the folders given to ``taskbench view`` (each run adds its own
    directory). A gold dataset is shared by many runs and lives beside them, not in them; the user named these
    places, the run did not."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, data: dict[str, Path], paths: Sequence[Path] = ()) -> GoldRoots:
        from ... import bundled

        found = []
        for name in bundled.names():
            try:
                found.append(real_dir(bundled.path(name)))
            except Exception:  # a bundled dataset not on disk (zipped install): not a root
                continue
        return cls(tuple(dict.fromkeys([*found, *(real_dir(p) for p in data.values()),
                                        *(real_dir(p) for p in paths if p.is_dir())])))

    def directory(self, spec: Any, run_roots: Sequence[Path]) -> tuple[Path | None, str | None]:
        """(the gold directory ``spec`` names, resolved; or None and why it is not read). A bundled name is
        the bundled dataset; an ``mcp:`` spec is never started; a path must be a directory inside a root."""
        from ... import bundled

        if not isinstance(spec, str) or not spec:
            return None, None
        if spec.startswith("mcp:"):
            return None, f"gold {spec[:80]!r} is an MCP server: the viewer starts no program a run names"
        path = Path(spec)
        if not path.exists() and bundled.is_bundled(spec):
            path = bundled.path(spec)
        real = real_dir(path)
        if not real.is_dir():
            return None, f"gold directory {spec[:300]} not found"
        if not any(inside(real, r) for r in (*self.roots, *run_roots)):
            return None, (f"gold directory {spec[:300]} is outside the run directory, the folders given to "
                          "`taskbench view` and the datasets given with --data: not read (to show its samples: "
                          f"taskbench view ... --data {spec[:300]})")
        return real, None


# ----------------------------------------------------------------------------------------------- readers


_HEADERS: dict[Path, tuple[int, int, dict[str, Any]]] = {}
"""Run-log headers read, by path, with the file's size and mtime: a refresh reads only logs that changed."""


def _cached_header(file: RunFile) -> dict[str, Any]:
    stamp = file.stamp()
    hit = _HEADERS.get(file.path)
    if hit is not None and hit[:2] == stamp:
        return hit[2]
    head = read_run_header(file)
    if len(_HEADERS) > MAX_RUNS:
        _HEADERS.clear()
    _HEADERS[file.path] = (*stamp, head)
    return head


def _death(d: Path, head: dict[str, Any]) -> str:
    """How a run that says "running" while no process holds its lock ended: the writer marker (a regular file
    of the run directory) and its crash log (only from taskbench's own crash folder)."""
    from ...dataset import liveness
    from ...llm.weights import cache_dir

    marker = None
    mfile = _own(d, liveness.marker_path(d).name)
    if mfile is not None:
        try:
            doc = json.loads(mfile.read_bytes(1 << 20))
            crash = doc.get("crash_log")
            if isinstance(crash, str):
                try:
                    crash = str(confine(crash, [real_dir(cache_dir() / "crashes")]).path)
                except Outside:
                    crash = None
            marker = liveness.WriterMarker(pid=int(doc["pid"]), host=str(doc["host"])[:200],
                                           command=[str(c)[:200] for c in doc["command"]][:50],
                                           started=str(doc["started"])[:100],
                                           stage=str(doc["stage"])[:200] if doc.get("stage") else None,
                                           crash_log=crash if isinstance(crash, str) else None)
        except (InputError, ValueError, KeyError, TypeError, RecursionError):
            marker = None
    if marker is not None:
        return liveness.death_of(marker).describe(f"the run in {d}")
    return f"the run in {d} stopped without recording an end" + (f" at {head.get('stage')}" if head.get("stage") else "")


def _lock_free(d: Path) -> bool:
    """True when no process holds the run's lock (a lock that is not a regular file of the run: free)."""
    from ...dataset.liveness import RUN_LOCK_FILE
    from ...records import lock_is_free

    lock = d / RUN_LOCK_FILE
    if not lock.exists() and not lock.is_symlink():
        return True
    if lock.is_symlink() or _own(d, RUN_LOCK_FILE) is None:
        return True
    return lock_is_free(lock)


def _read_run(d: Path, rid: str, gold: GoldRoots) -> RunInfo:
    root = real_dir(d)
    head = _cached_header(confine(d / "run_log.json", [root], what="run_log.json"))
    config = head.get("config") or {}
    status = str(head.get("status") or "unknown")
    death = None
    if status == "running" and _lock_free(d):
        death = _death(d, head)
        status = "died"
    entries = []
    problems: list[str] = []
    for e in head.get("entries") or []:
        if not isinstance(e, dict):
            continue
        doc = {k: e[k] for k in ("strict", "compat") if isinstance(e.get(k), dict)}
        key = f"{e.get('dataset')}/{e.get('model')}"
        eproblems: list[str] = []

        def named(value: Any, what: str, eproblems: list[str] = eproblems) -> RunFile | None:
            if not isinstance(value, str) or not value:
                return None
            try:
                return confine(root / value, [root], what=f"{what} {value[:300]!r}")
            except Outside as exc:
                eproblems.append(str(exc))
                return None

        data_path, why = gold.directory(e.get("data_path"), [root])
        if why:
            eproblems.append(why)
        entries.append(ScoredEntry(
            key=key, model=str(e.get("model")), dataset=str(e.get("dataset")),
            predictions=named(e.get("predictions_path"), "predictions"), metrics_doc=doc or None,
            data_path=data_path, dependency=e.get("dependency"), status=str(e.get("status")),
            failures=int(e.get("failures") or 0), parse_failures=int(e.get("parse_failures") or 0),
            n_selected=int(e.get("sample_ids_count") or len(e.get("sample_ids") or [])) or None,
            usage=e.get("run_usage") or e.get("usage") or {}, predict_seconds=e.get("predict_seconds"),
            evaluate_seconds=e.get("evaluate_seconds"), error=e.get("error"),
            metrics_file=named(e.get("metrics_path"), "metrics"), problems=eproblems))
        problems += [f"{key}: {p}" for p in eproblems]
    header = {k: head.get(k) for k in ("run_id", "started", "finished", "updated", "seconds", "pid", "host",
                                       "stage", "passes", "previous_death", "config", "environment", "seeds",
                                       "usage", "stages")}
    typed = _header_of(d)
    if typed is not None:  # the run header is the one record of what was asked for and where it ran
        header.update(config=typed.config, seeds=typed.seeds, fingerprint=typed.fingerprint,
                      environment=typed.environment.model_dump(mode="json") if typed.environment else header["environment"])
        config = typed.config or config
    header["reports"] = [name for name in ("report.html", "report.md") if _own(d, name) is not None]
    return RunInfo(id=rid, kind="run", path=d, title=d.name, status=status, date=head.get("started"),
                   models=list(config.get("models") or []), datasets=sorted({e.dataset for e in entries}),
                   entries=entries, header=header, death=death, problems=problems, roots=(root,))


def _eval_roots(d: Path) -> tuple[Path, ...]:
    """An `evaluate` output's folder and the ``predictions/`` or ``preds/`` folder beside it (a real folder, not
    a link): where its predictions may be."""
    roots = [real_dir(d)]
    for folder in (d.parent / "predictions", d.parent / "preds"):
        if folder.is_dir() and not folder.is_symlink():
            roots.append(real_dir(folder))
    return tuple(dict.fromkeys(roots))


def _pair_predictions(metrics: RunFile, d: Path, roots: Sequence[Path]) -> RunFile | None:
    stem = metrics.path.stem
    for folder in (d, d.parent / "predictions", d.parent / "preds", d / "predictions", d / "preds"):
        try:
            cand = confine(folder / f"{stem}.jsonl", roots)
        except Outside:
            continue
        if cand.is_file():
            return cand
    return None


def _eval_settings(metrics: RunFile, roots: Sequence[Path]) -> dict[str, Any]:
    """The config of an `evaluate` output's run header (``.FILE.header.json``, or ``FILE.header.json`` as
    older runs wrote it: data, predictions, model ...)."""
    from ...dataset.header import header_path, legacy_header_path

    where = next((w for w in (header_path(metrics.path, "evaluate"), legacy_header_path(metrics.path))
                  if w.exists()), None)
    if where is None:
        return {}
    try:
        header = _load_header(confine(where, roots))
    except InputError:
        return {}
    return dict(header.config) if header is not None else {}


def _read_eval(d: Path, rid: str, data: dict[str, Path], gold: GoldRoots) -> RunInfo:
    entries: list[ScoredEntry] = []
    problems: list[str] = []
    roots = _eval_roots(d)
    files = _json_files(d)
    for p in files:
        if not _is_metrics_name(p):
            continue
        try:
            doc = read_small_json(p)
        except InputError as exc:
            problems.append(str(exc))
            continue
        if not isinstance(doc, dict):
            continue
        if "strict" in doc or "compat" in doc:
            both = {k: doc[k] for k in ("strict", "compat", "execution") if isinstance(doc.get(k), dict)}
        elif doc.get("mode") == "strict":
            both = {"strict": doc}
            if isinstance(doc.get("execution"), dict):
                both["execution"] = doc["execution"]
        else:
            both = {"compat": doc}
        strict = both.get("strict") or {}
        settings = _eval_settings(p, roots)
        ds = str(doc.get("dataset") or strict.get("dataset") or settings.get("dataset") or d.name)
        model = str(doc.get("model") or strict.get("model") or settings.get("model") or p.path.stem)
        eproblems: list[str] = []
        preds: RunFile | None = None
        if isinstance(settings.get("predictions"), str):
            try:
                preds = confine(settings["predictions"], roots, what=f"predictions {settings['predictions'][:300]!r}")
            except Outside as exc:
                eproblems.append(f"{exc} (put them in {d} or a predictions/ folder beside it)")
        header_gold, why = gold.directory(settings.get("data"), roots)
        if why:
            eproblems.append(why)
        entries.append(ScoredEntry(
            key=f"{ds}/{model}", model=model, dataset=ds,
            predictions=preds if preds is not None and preds.is_file() else _pair_predictions(p, d, roots),
            metrics_doc=both, data_path=data.get(ds) or header_gold or data.get(""),
            dependency=strict.get("dependency"),
            n_selected=strict.get("n_gold") if isinstance(strict.get("n_gold"), int) else None, metrics_file=p,
            problems=eproblems))
        problems += [f"{ds}/{model}: {x}" for x in eproblems]
    mtime = max((p.path.stat().st_mtime for p in files), default=None)
    return RunInfo(id=rid, kind="eval", path=d, title=d.name, status="complete" if entries else "unknown",
                   date=_iso(mtime) if mtime else None, models=[e.model for e in entries],
                   datasets=sorted({e.dataset for e in entries}), entries=entries, problems=problems, roots=roots)


def _read_generate(d: Path, rid: str) -> RunInfo:
    typed = _header_of(d)
    if typed is not None:
        gen: Any = dict(typed.config)
        stamp_file = _own(d, "header.json")
    else:
        stamp_file = _own(d, "generation.json")
        if stamp_file is None:
            raise Outside("generation.json is not a regular file of the run directory", path=d / "generation.json")
        gen = read_small_json(stamp_file)
    gen = gen if isinstance(gen, dict) else {}
    stats = {}
    sfile = _own(d, "statistics.json")
    if sfile is not None:
        try:
            loaded = read_small_json(sfile)
            stats = loaded if isinstance(loaded, dict) else {}
        except InputError:
            stats = {}
    status = "complete" if stats else "incomplete"  # statistics.json is written when a generation ends
    mtime = stamp_file.path.stat().st_mtime if stamp_file is not None else None
    model = gen.get("model")
    return RunInfo(id=rid, kind="generate", path=d, title=d.name, status=status, date=_iso(mtime) if mtime else None,
                   models=[model] if isinstance(model, str) else [], datasets=[d.name],
                   header={"generation": gen, "statistics": stats,
                           "headline_extra": _gen_headline(stats)}, roots=(real_dir(d),))


def _gen_headline(stats: dict[str, Any]) -> str | None:
    kept, planned = stats.get("kept"), stats.get("planned")
    return f"kept {kept} of {planned}" if isinstance(kept, int) and isinstance(planned, int) else None


def _read_agents(d: Path, rid: str) -> RunInfo:
    typed = _header_of(d)
    if typed is not None:
        cfg: Any = {"config": dict(typed.config), "fingerprint": typed.fingerprint}
    else:
        cfile = _own(d, "config.json")
        cfg = read_small_json(cfile) if cfile is not None else {}
    cfg = cfg if isinstance(cfg, dict) else {}
    metrics: dict[str, Any] = {}
    mfile = _own(d, "metrics.json")
    if mfile is not None:
        loaded = read_small_json(mfile)
        metrics = loaded if isinstance(loaded, dict) else {}
    conf = cfg.get("config") or {}
    agents = metrics.get("agents") or {}
    best = max(((float(v.get("success_rate") or 0.0), str(k)) for k, v in agents.items() if isinstance(v, dict)
                and isinstance(v.get("success_rate"), (int, float))), default=None)
    status = "complete" if metrics else "incomplete"
    efile = _own(d, "episodes.jsonl")
    mtime = efile.path.stat().st_mtime if efile is not None else None
    model = conf.get("model")
    return RunInfo(id=rid, kind="agents", path=d, title=d.name, status=status, date=_iso(mtime) if mtime else None,
                   models=[model] if isinstance(model, str) else [], datasets=[str(conf.get("env") or "")],
                   header={"config": cfg, "metrics": metrics,
                           "headline_extra": f"best success {100 * best[0]:.1f}% ({best[1][:200]})" if best else None},
                   roots=(real_dir(d),))


class ViewIndex:
    """Every run under the given paths, read once at start (headers only); :meth:`refresh` reads them again.

    ``data`` maps a dataset name (or '' for any) to its directory, for `evaluate` outputs, which do not record
    where their gold came from; these directories and the bundled datasets are also where any run's gold may
    be read from (besides the run's own directory)."""

    def __init__(self, paths: Sequence[str | Path], *, data: dict[str, Path] | None = None) -> None:
        self.paths = [Path(p) for p in paths]
        self.data = dict(data or {})
        self.gold = GoldRoots.of(self.data, self.paths)
        self.runs: dict[str, RunInfo] = {}
        self.problems: list[str] = []
        self.refresh()

    def refresh(self) -> None:
        """Find and read the runs again (a run that is being written shows its new state)."""
        found, self.problems = find_runs(self.paths)
        runs: dict[str, RunInfo] = {}
        taken: set[str] = set()
        by_path: dict[Path, str] = {}
        for kind, d in found:
            rid = _slug(d, taken)
            try:
                if kind == "run":
                    info = _read_run(d, rid, self.gold)
                elif kind == "eval":
                    info = _read_eval(d, rid, self.data, self.gold)
                elif kind == "generate":
                    info = _read_generate(d, rid)
                else:
                    info = _read_agents(d, rid)
            except (InputError, OSError) as exc:
                self.problems.append(str(exc) if isinstance(exc, InputError) else f"{d}: {exc}")
                continue
            runs[rid] = info
            by_path[d.resolve()] = rid
        for info in runs.values():  # stages of a run: parent and children
            parent = by_path.get(info.path.resolve().parent)
            if parent is not None and runs[parent].kind == "run" and info.kind in ("generate", "agents"):
                info.parent = parent
                runs[parent].children.append(info.id)
        self.runs = runs

    def run(self, rid: str) -> RunInfo | None:
        """The run of an id (None when unknown)."""
        return self.runs.get(rid)

    def entry(self, rid: str, key: str) -> ScoredEntry | None:
        """One scored entry of a run (None when unknown)."""
        run = self.runs.get(rid)
        return next((e for e in run.entries if e.key == key), None) if run is not None else None

    def summaries(self) -> list[dict[str, Any]]:
        """The run-list rows, newest first."""
        return sorted((r.summary() for r in self.runs.values()), key=lambda s: s["date"] or "", reverse=True)

    def gold_not_read(self) -> list[str]:
        """Gold directories runs name that are not read (outside the allowed places), each once."""
        out: dict[str, None] = {}
        for run in self.runs.values():
            for e in run.entries:
                for p in e.problems:
                    if p.startswith("gold directory") and "--data" in p:
                        out[p] = None
        return list(out)
