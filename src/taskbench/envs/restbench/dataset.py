"""RestBench files and our task files: loading, gold-path normalisation, where the files are.

RestBench (Yifan-Song793/RestGPT, MIT) ships ``tmdb.json`` / ``spotify.json`` (queries ``{query, solution:
["GET /path", ...]}``) and ``tmdb_oas.json`` / ``spotify_oas.json`` (the OpenAPI specs). They are *read from a
directory*, never shipped: ``restbench_dir=``, else ``$TASKBENCH_RESTBENCH_DIR``, else
``shared/reference/restbench`` beside the checkout when it is there, else the cache that ``taskbench data fetch
restbench`` fills from RestGPT's repository (:func:`find_restbench_dir`, :mod:`taskbench.dataset.restbench`).

What ships with taskbench, under ``envs/restbench/data/``:

- ``tasks/<api>_restbench.json``: per RestBench query (by index, with a hash of its text) our checker and a
  solution script;
- ``tasks/<api>_own.json``: a small task set of our own (query, gold path, checker, solution);
- ``openapi/<api>.json``: our OpenAPI document of the operations our own tasks use;
- ``<api>/*.json``: the fixture database.

Gold paths are normalised onto the spec's operations (:func:`normalize_path`): stray whitespace, a wrong
placeholder name (``/person/{movie_id}/movie_credits``), a near-miss route (``/track/{id}``). Each fix is kept
with the task (``meta["fixes"]``). Whatever a query file holds, every record loads; a record that cannot be
read is reported in :attr:`RestBenchQueries.problems`, not raised.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ...errors import ConfigError, InputError

DATA = Path(__file__).resolve().parent / "data"
APIS = ("tmdb", "spotify")
ENV_VAR = "TASKBENCH_RESTBENCH_DIR"


def query_hash(query: str) -> str:
    """A short, stable hash of a query's text (whitespace-insensitive): our checkers are keyed by it."""
    return hashlib.sha256(" ".join(query.split()).encode("utf-8")).hexdigest()[:12]


def find_restbench_dir(restbench_dir: str | Path | None = None) -> Path | None:
    """The directory holding the RestBench files: the argument, else ``$TASKBENCH_RESTBENCH_DIR``, else
    ``shared/reference/restbench`` next to (or above) the checkout or the working directory, else the cache of
    ``taskbench data fetch restbench``; None when there is none. A directory given explicitly must exist."""
    if restbench_dir is not None or os.environ.get(ENV_VAR):
        path = Path(restbench_dir if restbench_dir is not None else os.environ[ENV_VAR]).expanduser()
        if not path.is_dir():
            source = "restbench_dir" if restbench_dir is not None else f"${ENV_VAR}"
            raise ConfigError(f"{source}: no such directory {str(path)!r}")
        return path
    for candidate in shared_candidates():
        if (candidate / "tmdb.json").is_file() or (candidate / "spotify.json").is_file():
            return candidate
    from ...dataset.restbench import cached_restbench_dir

    return cached_restbench_dir()  # `taskbench data fetch restbench` put them there


def shared_candidates() -> list[Path]:
    """The ``shared/reference/restbench`` directories looked for beside (or above) the checkout and the working
    directory, in order."""
    root = Path(__file__).resolve().parents[4]
    return [base / "shared" / "reference" / "restbench" for base in (root.parent, root.parent.parent, Path.cwd().parent)]


# ------------------------------------------------------------------------------------------- gold paths

_SPACES = re.compile(r"\s+")


def _shape(op: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", op)


def normalize_path(solution: list[Any], operations: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """``solution`` mapped onto ``operations`` ('GET /path' names) and the fixes made, one dict per fix:
    ``{"step", "from", "to", "fix"}`` with fix one of whitespace | placeholder | route | unknown."""
    known = set(operations)
    by_shape: dict[str, list[str]] = {}
    for op in operations:
        by_shape.setdefault(_shape(op), []).append(op)
    out: list[str] = []
    fixes: list[dict[str, Any]] = []
    for i, raw in enumerate(solution):
        text = str(raw)
        step = _SPACES.sub(" ", text).strip()
        method, _, route = step.partition(" ")
        step = f"{method.upper()} {route.strip()}" if route else step
        if step != text:
            fixes.append({"step": i, "from": text, "to": step, "fix": "whitespace"})
        if step in known:
            out.append(step)
            continue
        same_shape = by_shape.get(_shape(step), [])
        if len(same_shape) == 1:
            fixes.append({"step": i, "from": step, "to": same_shape[0], "fix": "placeholder"})
            out.append(same_shape[0])
            continue
        candidates = [op for op in operations if op.split(" ", 1)[0] == method.upper()]
        close = difflib.get_close_matches(step, candidates, n=1, cutoff=0.85)
        if close:
            fixes.append({"step": i, "from": step, "to": close[0], "fix": "route"})
            out.append(close[0])
            continue
        fixes.append({"step": i, "from": step, "to": step, "fix": "unknown"})
        out.append(step)
    return out, fixes


# ------------------------------------------------------------------------------------------- queries


@dataclass
class RestBenchQuery:
    """One RestBench query as the dataset gives it, with its gold path normalised."""

    index: int
    query: str
    solution: list[str]
    gold_path: list[str]
    fixes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def sha(self) -> str:
        return query_hash(self.query)


@dataclass
class RestBenchQueries:
    """The queries of one RestBench file and what could not be read."""

    api: str
    path: Path
    queries: list[RestBenchQuery]
    problems: list[str] = field(default_factory=list)


def spec_path(api: str, restbench_dir: Path | None) -> Path:
    """The OpenAPI spec of ``api``: RestBench's when the directory is known, else our bundled one."""
    check_api(api)
    if restbench_dir is not None and (restbench_dir / f"{api}_oas.json").is_file():
        return restbench_dir / f"{api}_oas.json"
    return DATA / "openapi" / f"{api}.json"


def check_api(api: str) -> str:
    if api not in APIS:
        raise ConfigError(f"unknown RestBench API {api!r} (known: {', '.join(APIS)})")
    return api


def load_queries(api: str, restbench_dir: Path, operations: list[str]) -> RestBenchQueries:
    """The RestBench queries of ``api`` (``<dir>/<api>.json``), each gold path normalised onto
    ``operations``. Records that are not ``{query, solution}`` objects are reported and skipped."""
    check_api(api)
    path = restbench_dir / f"{api}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError("no such RestBench query file", path=path,
                         hint=f"run `taskbench data fetch restbench`, or point restbench_dir or ${ENV_VAR} at "
                         "RestBench's data directory") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    if not isinstance(doc, list):
        raise InputError("expected a JSON list of {query, solution} records", path=path)
    out = RestBenchQueries(api=api, path=path, queries=[])
    for i, record in enumerate(doc):
        if not isinstance(record, dict) or not isinstance(record.get("query"), str):
            out.problems.append(f"{path.name}: record {i} has no 'query' text; skipped")
            continue
        solution = record.get("solution")
        if not isinstance(solution, list):
            out.problems.append(f"{path.name}: record {i} has no 'solution' list; loaded with an empty gold path")
            solution = []
        gold, fixes = normalize_path(solution, operations)
        out.queries.append(RestBenchQuery(index=i, query=record["query"], solution=[str(s) for s in solution],
                                          gold_path=gold, fixes=fixes))
    return out


def load_task_file(name: str) -> dict[str, Any]:
    """One of our task files (``data/tasks/<name>.json``)."""
    path = DATA / "tasks" / f"{name}.json"
    try:
        return cast("dict[str, Any]", json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {"tasks": []}
    except json.JSONDecodeError as exc:  # a packaging bug, said plainly
        raise InputError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from exc


def load_fixtures(api: str) -> dict[str, Any]:
    """The fixture database of ``api``: every ``data/<api>/*.json`` file, by file stem."""
    check_api(api)
    out: dict[str, Any] = {}
    for path in sorted((DATA / api).glob("*.json")):
        try:
            out[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    return out


__all__ = [
    "APIS",
    "DATA",
    "ENV_VAR",
    "RestBenchQueries",
    "RestBenchQuery",
    "check_api",
    "find_restbench_dir",
    "load_fixtures",
    "load_queries",
    "load_task_file",
    "normalize_path",
    "query_hash",
    "shared_candidates",
    "spec_path",
]
