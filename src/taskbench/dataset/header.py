"""The one run header of every command that writes a run: written atomically, checked on resume, and read
back from any run (older layouts included) by :func:`identify_run`.

Where it lives::

    RUN_DIR/header.json              taskbench run, generate, agents eval (one directory per run)
    .FILE.header.json                predict -o FILE.jsonl, evaluate -o FILE.json (one file per run)

The header of a one-file run is a hidden file beside it, so that the globs a user types over a folder of
outputs (``metrics/*.json``, ``preds/*``) give the outputs alone. Headers written before that sit beside the
file as ``FILE.header.json``: they are still read, and a resume moves them to the hidden name.

A resume (the same command into the same output) must repeat the settings that decide the records (the
header's ``identity``; ``fingerprint`` is their hash): another setting is refused in one line naming the first
that differs. Outputs written before headers are still read: a ``run_log.json`` (taskbench run), a
``generation.json`` (generate), an agents ``config.json`` with its fingerprint (agents eval).

:func:`identify_run` is what the viewer, the leaderboard and resume call: given a path, what kind of run it
is and its typed :class:`~taskbench.schema.header.RunHeader`. :func:`find_runs` finds every run under paths.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError, InputError, validation_message
from ..schema.header import HEADER_SCHEMA_VERSION, RUN_KINDS, RunEnvironment, RunHeader, RunKind
from .jsonio import check_output_file, make_directory, read_json, write_json

HEADER_FILE = "header.json"
"""The header of a run directory."""

HEADER_SUFFIX = ".header.json"
"""Appended to the name of a one-file output, after a leading dot (``preds.jsonl`` -> ``.preds.jsonl.header.json``;
before, without the dot: ``preds.jsonl.header.json``, still read)."""

FILE_KINDS: tuple[RunKind, ...] = ("predict", "evaluate")
"""Runs whose output is one file (their header sits next to it)."""

# the files of the layouts before headers, which still identify a run
LEGACY_RUN_LOG = "run_log.json"
LEGACY_GENERATION = "generation.json"
LEGACY_AGENTS_CONFIG = "config.json"
LEGACY_AGENTS_EPISODES = "episodes.jsonl"

PACKAGES = ("taskbench", "pydantic", "numpy", "scipy", "rouge-score", "llama_cpp_python", "openai", "rich",
            "typer", "matplotlib", "jinja2")
"""The packages whose versions a header records."""

# generation.json keys that are facts about the output, not settings a rerun must repeat
_GENERATION_FACTS = ("schema", "n", "taskbench", "dependency", "tools", "links")


def now() -> str:
    """The current time, ISO 8601 UTC with milliseconds."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def git_revision(path: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout holding ``path``, or (None, None)."""
    try:
        rev = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        if rev.returncode != 0:
            return None, None
        status = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        return rev.stdout.strip(), bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None, None


def environment(command: Sequence[str] | None = None) -> RunEnvironment:
    """Versions, git revision and machine facts of this process."""
    from importlib import metadata

    from .. import __version__

    packages: dict[str, str] = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    rev, dirty = git_revision(Path(__file__).resolve().parent)
    return RunEnvironment(
        taskbench=__version__, git_revision=rev, git_dirty=dirty, python=platform.python_version(),
        platform=platform.platform(), cpu_count=os.cpu_count(), packages=packages,
        command=list(command if command is not None else sys.argv),
    )


def fingerprint(identity: Mapping[str, Any]) -> str:
    """The hash of a run's identity (16 hex digits; the agents' record fingerprints are the same hash)."""
    return hashlib.sha256(json.dumps(dict(identity), sort_keys=True, default=str).encode()).hexdigest()[:16]


def _plain(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` as JSON gives it back (tuples as lists, keys as strings), so a fresh header compares equal to
    one read from disk."""
    out = json.loads(json.dumps(dict(value), default=str))
    assert isinstance(out, dict)
    return out


def new_header(kind: RunKind, *, config: Mapping[str, Any], identity: Mapping[str, Any],
               seeds: Mapping[str, int | None] | None = None, command: Sequence[str] | None = None,
               env: RunEnvironment | None = None) -> RunHeader:
    """The header of a run starting now (``env``: the environment, when the caller has it already)."""
    ident = _plain(identity)
    stamp = now()
    return RunHeader(
        kind=kind, command=list(command if command is not None else sys.argv), created=stamp, updated=stamp,
        config=_plain(config), identity=ident, fingerprint=fingerprint(ident),
        environment=env if env is not None else environment(command), seeds=dict(seeds or {}),
    )


def header_path(target: str | Path, kind: RunKind) -> Path:
    """Where the header of a run of ``kind`` writing ``target`` lives (a one-file run's: hidden, beside it)."""
    target = Path(target)
    return target.with_name(f".{target.name}{HEADER_SUFFIX}") if kind in FILE_KINDS else target / HEADER_FILE


def legacy_header_path(target: str | Path) -> Path:
    """Where a one-file run's header was written before it was hidden (``FILE.header.json``)."""
    target = Path(target)
    return target.with_name(target.name + HEADER_SUFFIX)


def is_header_file(path: str | Path) -> bool:
    """Whether ``path`` names a run header (``header.json``, ``.FILE.header.json`` or ``FILE.header.json``)."""
    name = Path(path).name
    return name == HEADER_FILE or name.endswith(HEADER_SUFFIX)


def write_header(target: str | Path, header: RunHeader) -> Path:
    """Write ``header`` for the run at ``target`` atomically; returns the header file. A one-file run's header
    of the older layout (``FILE.header.json``) is removed once the new one is written."""
    path = header_path(target, header.kind)
    header.updated = now()
    write_json(path, header.model_dump(mode="json", exclude={"legacy"}))
    if header.kind in FILE_KINDS:
        legacy_header_path(target).unlink(missing_ok=True)
    return path


def _load_header(path: Path) -> RunHeader:
    return parse_header(read_json(path), path)


def parse_header(doc: Any, path: str | Path) -> RunHeader:
    """A run header from its parsed JSON (for a reader that opens the file itself, such as the viewer, which
    reads only regular files inside a run); ``path`` names the file in errors."""
    path = Path(path)
    if not isinstance(doc, dict):
        raise InputError("not a taskbench run header (expected a JSON object)", path=path)
    version = doc.get("schema_version")
    if isinstance(version, int) and version > HEADER_SCHEMA_VERSION:
        raise InputError(f"a run header of layout {version}, newer than this taskbench reads "
                         f"({HEADER_SCHEMA_VERSION})", path=path, hint="upgrade taskbench")
    try:
        return RunHeader.model_validate(doc)
    except ValidationError as exc:
        raise InputError(f"not a taskbench run header: {validation_message(exc)}", path=path,
                         hint="choose another output, or remove the file") from None


def read_header(target: str | Path, kind: RunKind | None = None) -> RunHeader | None:
    """The header of the run at ``target`` (a run directory, or the output file of a one-file run), read from
    an older layout when there is no header file; None when ``target`` holds no run. ``kind``: the kind the
    caller expects (where to look for a one-file run's header; a directory says for itself)."""
    target = Path(target)
    if target.is_dir():
        if (target / HEADER_FILE).is_file():
            return _load_header(target / HEADER_FILE)
        return _legacy_directory(target)
    for sidecar in (target.with_name(f".{target.name}{HEADER_SUFFIX}"), legacy_header_path(target)):
        if sidecar.is_file():
            return _load_header(sidecar)
    if kind is None and target.is_file():
        return _legacy_file(target)
    return None


def _legacy_directory(path: Path) -> RunHeader | None:
    """The header of a run directory written before headers, from the files it has."""
    if (path / LEGACY_RUN_LOG).is_file():
        from ..schema.run import RunLog

        file = path / LEGACY_RUN_LOG
        try:
            log = RunLog.model_validate(read_json(file))
        except ValidationError as exc:
            raise InputError(f"not a taskbench run log: {validation_message(exc)}", path=file,
                             hint="rerun the command into a fresh directory") from None
        config = log.config.model_dump(mode="json")
        return RunHeader(kind="run", command=list(log.config.command), created=log.started, updated=log.updated,
                         config=config, identity=run_identity(config), fingerprint=fingerprint(run_identity(config)),
                         environment=log.environment, seeds=dict(log.seeds), legacy=LEGACY_RUN_LOG)
    if (path / LEGACY_GENERATION).is_file():
        file = path / LEGACY_GENERATION
        doc = read_json(file)
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object", path=file, hint="repair the file, or choose another output")
        identity = {k: v for k, v in doc.items() if k not in _GENERATION_FACTS}
        return RunHeader(kind="generate", config=doc, identity=identity, fingerprint=fingerprint(identity),
                         seeds={"plan": doc.get("seed")} if isinstance(doc.get("seed"), int) else {},
                         legacy=LEGACY_GENERATION)
    old: dict[str, Any] = {}
    if (path / LEGACY_AGENTS_CONFIG).is_file():  # an agents config.json: {fingerprint, taskbench, config, models}
        try:
            loaded = json.loads((path / LEGACY_AGENTS_CONFIG).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            loaded = {}
        old = loaded if isinstance(loaded, dict) and "fingerprint" in loaded else {}
    if old or (path / LEGACY_AGENTS_EPISODES).is_file():
        settings = old.get("config")
        return RunHeader(kind="agents", config=dict(settings) if isinstance(settings, dict) else {},
                         fingerprint=str(old.get("fingerprint") or ""),
                         legacy=LEGACY_AGENTS_CONFIG if old else LEGACY_AGENTS_EPISODES)
    return None


def _legacy_file(path: Path) -> RunHeader | None:
    """The header of a one-file output written before headers: a predictions file or a metrics file."""
    if path.suffix == ".jsonl":
        return RunHeader(kind="predict", legacy=path.name)
    if path.suffix == ".json":
        try:
            doc = read_json(path)
        except InputError:
            return None
        if isinstance(doc, dict) and ("strict" in doc or "compat" in doc or "groups" in doc):
            return RunHeader(kind="evaluate", legacy=path.name)
    return None


def _describe(key: str, labels: Mapping[str, str]) -> str:
    return labels.get(key, key.replace("_", "-"))


def check_resume(old: RunHeader, new: RunHeader, target: str | Path, *, option: str = "--output",
                 labels: Mapping[str, str] | None = None) -> None:
    """Refuse to continue the run ``old`` at ``target`` with ``new`` unless they are the same kind of run with
    the same identity. The error is one line: where, the first setting that differs, what to do."""
    where = header_path(target, old.kind) if old.legacy is None else Path(target)
    labels = labels or {}
    if old.kind != new.kind:
        raise ConfigError(f"{where}: holds a `taskbench {_command(old.kind)}` run, not a `taskbench "
                          f"{_command(new.kind)}` one; choose another {option}")
    if old.fingerprint == new.fingerprint or (not old.fingerprint and not old.identity):
        return
    see = f" (see {where.name})" if where.is_file() else ""
    for key in [*new.identity, *(k for k in old.identity if k not in new.identity)]:
        was, now_ = old.identity.get(key), new.identity.get(key)
        if was == now_:
            continue
        what = _describe(key, labels)
        detail = "it differs from the one this run was made with" if key.endswith("sha256") else \
            f"was {json.dumps(was)}, this run {json.dumps(now_)}"
        raise ConfigError(f"{where}: another configuration ({what}: {detail}); rerun with the same "
                          f"arguments{see} or choose another {option}")
    raise ConfigError(f"{where}: holds a run of another configuration (fingerprint {old.fingerprint}, this run "
                      f"{new.fingerprint}); choose another {option}")


def open_run(target: str | Path, header: RunHeader, *, option: str = "--output",
             labels: Mapping[str, str] | None = None) -> RunHeader | None:
    """Start or resume the run at ``target``: check ``header`` against the one there (:func:`check_resume`),
    then write it (keeping the first pass's ``created``). Returns the earlier header, or None."""
    if header.kind in FILE_KINDS and Path(target).is_dir():
        from ..errors import InputError

        raise InputError(f"the output is a directory; give a file path ({option} DIR/NAME"
                         f"{'.jsonl' if header.kind == 'predict' else '.json'})", path=target)
    if header.kind in FILE_KINDS:
        check_output_file(target)  # /dev/full, a pipe: refused before its header is written next to it
    else:
        make_directory(target, option=option)  # a file where the run directory goes: one line
    old = read_header(target, header.kind)
    if old is not None:
        check_resume(old, header, target, option=option, labels=labels)
        header.created = old.created or header.created
    write_header(target, header)
    return old


@contextlib.contextmanager
def undo_if_unreachable(target: str | Path, kind: RunKind, *, fresh: bool) -> Iterator[None]:
    """Around a run that ``fresh``-ly started at ``target``: when it stops because nothing listens at the model's
    address (:class:`~taskbench.errors.UnreachableError`, before any record), remove the header it wrote and an
    output it left empty, so the corrected command starts clean and nothing misleading is left behind."""
    from ..errors import UnreachableError

    try:
        yield
    except UnreachableError:
        if fresh:
            out = Path(target)
            if out.is_file() and out.stat().st_size == 0:
                out.unlink()
            if not out.exists():
                header_path(out, kind).unlink(missing_ok=True)
                legacy_header_path(out).unlink(missing_ok=True)
        raise


def _command(kind: RunKind) -> str:
    return "agents eval" if kind == "agents" else kind


def identify_run(path: str | Path) -> RunHeader:
    """What kind of run ``path`` holds (a run directory, or the output file of ``predict`` / ``evaluate``) and
    its typed header; raises InputError (one line) when it is no run."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or directory", path=path)
    if path.name.endswith(HEADER_SUFFIX) and path.is_file():
        return _load_header(path)
    header = read_header(path)
    if header is None:
        raise InputError(f"not a taskbench run (no {HEADER_FILE}, {LEGACY_RUN_LOG}, {LEGACY_GENERATION} or "
                         f"{LEGACY_AGENTS_EPISODES}, and no .NAME{HEADER_SUFFIX} next to it)", path=path,
                         hint="give the output of `taskbench run`, predict, evaluate, generate or agents eval")
    return header


def header_target(path: str | Path) -> Path:
    """The output file a one-file run's header file belongs to (``.p.jsonl.header.json`` and the older
    ``p.jsonl.header.json`` -> ``p.jsonl``)."""
    path = Path(path)
    stem = path.name[: -len(HEADER_SUFFIX)]
    hidden = stem.startswith(".") and len(stem) > 1
    if hidden and (path.parent / stem[1:]).exists():
        return path.parent / stem[1:]
    if (path.parent / stem).exists():  # the older layout (of an output whose own name starts with a dot)
        return path.parent / stem
    return path.parent / (stem[1:] if hidden else stem)


def find_runs(paths: Iterable[str | Path]) -> list[tuple[Path, RunHeader]]:
    """Every run at or under ``paths``, with its header, in path order (a run directory's own files and its
    stage directories, e.g. ``generated/``, are runs of their own; one-file outputs count only with a
    header next to them)."""
    found: dict[Path, RunHeader] = {}
    for root in (Path(p) for p in paths):
        if root.is_file():
            found[root] = identify_run(root)
            continue
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            here = Path(directory)
            header = read_header(here)
            if header is not None:
                found[here] = header
            for name in sorted(files):
                if name.endswith(HEADER_SUFFIX) and name != HEADER_FILE:
                    found[header_target(here / name)] = _load_header(here / name)
    return sorted(found.items(), key=lambda item: str(item[0]))


PREDICTION_SETTINGS = ("shots", "structured", "reformat", "temperature", "top_p", "max_tokens", "seed", "template",
                       "plan", "demo_selection", "shortlist")
"""The prediction options that decide a prediction record (--limit and --concurrency do not)."""


def run_identity(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a `taskbench run` (its RunConfig) that decide its predictions: a resume must repeat
    them (models, datasets and --limit may change: entries are per model and dataset)."""
    return {k: config.get(k) for k in PREDICTION_SETTINGS}


def predict_identity(model: str, data: str | Path, options: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a `taskbench predict` into one file that a resume must repeat: the model, the dataset
    (its directory's name) and the prediction options that decide the records."""
    return {"model": model, "dataset": Path(data).resolve().name,
            **{k: options.get(k) for k in PREDICTION_SETTINGS}}


__all__ = [
    "FILE_KINDS",
    "HEADER_FILE",
    "HEADER_SUFFIX",
    "PACKAGES",
    "PREDICTION_SETTINGS",
    "RUN_KINDS",
    "check_resume",
    "environment",
    "find_runs",
    "fingerprint",
    "git_revision",
    "header_path",
    "header_target",
    "identify_run",
    "is_header_file",
    "legacy_header_path",
    "new_header",
    "now",
    "open_run",
    "parse_header",
    "predict_identity",
    "read_header",
    "run_identity",
    "write_header",
]
