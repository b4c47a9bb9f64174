"""The reference dataset directory layout, read and written.

A dataset directory holds (all optional except the tool library)::

    tool_desc.json       the tool library ({"nodes": [...]})
    graph_desc.json      the tool graph ({"nodes", "links"})
    data.json            gold samples, JSON Lines (v1 or current shape; the hub copy's tool_* names too)
    data.parquet         (hub copy) the samples as parquet, read when there is no JSON data file;
    improved.parquet     needs pyarrow
    user_requests.json   {id, user_request} per line (the hub copy calls it user_requests.jsonl)
    alignment_ids.json   {"<mode>_alignment_id": {"single": [...], "chain": [...], "dag": [...]}}
    data_raw.json        data-engine output before critics (JSON Lines)
    data_error.json      samples the critics rejected (JSON Lines)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from ..errors import ConfigError, InputError, did_you_mean, validation_message
from ..schema import Sample, ToolGraph, ToolLibrary, record_id
from .jsonio import check_input_file, iter_jsonl, read_json, write_json, write_jsonl
from .tool_desc import load_tool_library

DATA_FILE = "data.json"
TOOL_FILE = "tool_desc.json"
GRAPH_FILE = "graph_desc.json"
REQUESTS_FILES = ("user_requests.json", "user_requests.jsonl")
ALIGNMENT_FILE = "alignment_ids.json"
RAW_FILE = "data_raw.json"
ERROR_FILE = "data_error.json"
DATA_FILES = (DATA_FILE, "data.jsonl", "gold_sample.jsonl", "improved.parquet", "data.parquet")


def _validation_message(exc: ValidationError) -> str:
    return validation_message(exc)


def parse_sample(record: Any, *, path: str | Path | None = None, line: int | None = None) -> Sample:
    """Validate one raw record into a :class:`Sample`, with file:line in the error."""
    if not isinstance(record, dict):
        raise InputError("expected a JSON object per line", path=path, line=line)
    if "id" not in record:
        raise InputError("record has no 'id'", path=path, line=line)
    if record_id(record["id"]) is None:
        raise InputError(
            f"the record's id is {_kind(record['id'])}", path=path, line=line,
            hint="an id is a string or an integer",
        )
    try:
        return Sample.model_validate(record)
    except ValidationError as exc:
        raise InputError(
            f"sample {_short(record.get('id'))}: {_validation_message(exc)}", path=path, line=line
        ) from None
    except (ValueError, RecursionError) as exc:  # e.g. a JSON string field that does not parse
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InputError(f"sample {_short(record.get('id'))}: {what}", path=path, line=line) from None


def _kind(value: Any) -> str:
    """What a JSON value is, for messages ('null', 'a list', ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "a list", float: "a number with a fraction"}.get(type(value), type(value).__name__)


def _short(value: Any, limit: int = 40) -> str:
    """``repr`` of a value, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _iter_records(path: str | Path, errors: list[InputError] | None = None) -> Iterator[tuple[int, Any]]:
    """(line or row number, record) of a JSON Lines file, or of a parquet file (row numbers from 1)."""
    if str(path).endswith(".parquet"):
        from .hub import read_parquet_records

        yield from enumerate(read_parquet_records(path), start=1)
    else:
        yield from iter_jsonl(path, errors=errors)


def read_samples(path: str | Path, *, problems: list[InputError] | None = None) -> list[Sample]:
    """All samples of a ``data.json`` (JSON Lines, either release shape) or a hub parquet file.

    A record that cannot be used (a line that is not JSON, not an object, an id that is not a string or an
    integer, a field that does not fit :class:`Sample`, an id seen before) raises :class:`InputError` naming
    file:line; with a ``problems`` list it is appended there instead and left out, so the rest still loads.
    """
    out: list[Sample] = []
    seen: dict[str, int] = {}
    for line, record in _iter_records(path, problems):
        try:
            sample = parse_sample(record, path=path, line=line)
            if sample.id in seen:
                raise InputError(
                    f"duplicate sample id {_short(sample.id)} (first on line {seen[sample.id]})", path=path,
                    line=line, hint="the first record with this id is used",
                )
        except InputError as err:
            if problems is None:
                raise
            problems.append(err)
            continue
        seen[sample.id] = line
        out.append(sample)
    return out


def iter_raw_records(path: str | Path, *, problems: list[InputError] | None = None) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines (or parquet) file, one at a time (nothing is kept). A line that is not
    JSON or not an object raises :class:`InputError`, or with a ``problems`` list is appended there and
    skipped. A file that is one JSON array of objects is read as its items."""
    records = _array_items(path)
    for line, record in records if records is not None else _iter_records(path, problems):
        if isinstance(record, dict):
            yield record
            continue
        err = InputError("expected a JSON object per line", path=path, line=line)
        if problems is None:
            raise err
        problems.append(err)


def _array_items(path: str | Path) -> list[tuple[int | None, Any]] | None:
    """``(None, item)`` for each item of a file that holds one JSON array; None for any other file."""
    if str(path).endswith(".parquet"):
        return None
    check_input_file(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip()
    except OSError:
        return None  # the reader names the problem
    if not head.startswith(b"["):
        return None
    try:
        doc = read_json(path)
    except InputError:
        return None  # JSON Lines whose first line is an array: read line by line
    return [(None, item) for item in doc] if isinstance(doc, list) else None


def read_raw_records(path: str | Path, *, problems: list[InputError] | None = None) -> list[dict[str, Any]]:
    """The records of a JSON Lines file as plain dicts (for reference-compatible scoring). A line that is not
    a JSON object raises :class:`InputError`, or with a ``problems`` list is appended there and left out."""
    out = []
    # Parsing creates millions of small objects that all stay alive; with the cyclic GC running, each
    # collection rescans them (about half the CPU time here). JSON values cannot form cycles: pause it.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for line, record in _iter_records(path, problems):
            if not isinstance(record, dict):
                err = InputError("expected a JSON object per line", path=path, line=line)
                if problems is None:
                    raise err
                problems.append(err)
                continue
            out.append(record)
    finally:
        if was_enabled:
            gc.enable()
    return out


@dataclass
class Dataset:
    """A dataset directory in the reference layout, loaded."""

    root: Path
    library: ToolLibrary
    samples: list[Sample] = field(default_factory=list)
    graph: ToolGraph | None = None
    requests: dict[str, str] = field(default_factory=dict)
    alignment_ids: dict[str, dict[str, list[str]]] | None = None
    """The ids of ``alignment_ids.json``; read on first use (:meth:`aligned_ids`, :meth:`load_alignment_ids`)."""
    data_path: Path | None = None
    raw_records: list[dict[str, Any]] | None = None
    """The records of ``data_raw.json`` (data-engine output before the critics), as plain dicts; None when
    the file is absent. Kept raw: such records need not fit :class:`Sample`."""
    error_records: list[dict[str, Any]] | None = None
    """The records of ``data_error.json`` (samples the critics rejected), as plain dicts; None when absent."""
    problems: list[InputError] = field(default_factory=list)
    """What could not be used, each naming file:line: records left out of ``samples`` (and of the raw and
    error records), request lines left out of ``requests``, an unreadable ``graph_desc.json``."""
    alignment_path: Path | None = None
    """``alignment_ids.json`` when the directory has one (read only when alignment ids are asked for)."""

    @property
    def name(self) -> str:
        """The directory's name (e.g. 'multimedia')."""
        return self.library.name or self.root.name

    def by_id(self) -> dict[str, Sample]:
        """Samples keyed by id."""
        return {s.id: s for s in self.samples}

    def request_for(self, sample_id: str) -> str:
        """The user request for an id: from user_requests.json when present, else from the sample."""
        if sample_id in self.requests:
            return self.requests[sample_id]
        return self.by_id()[sample_id].user_request

    def load_alignment_ids(self) -> dict[str, dict[str, list[str]]] | None:
        """The alignment ids (``alignment_ids.json``, read now if it was not yet); None without the file."""
        if self.alignment_ids is None and self.alignment_path is not None:
            self.alignment_ids = read_alignment_ids(self.alignment_path)
        return self.alignment_ids

    def aligned_ids(self, mode: str) -> set[str] | None:
        """Ids of one alignment mode ('node', 'link', 'both_node_link', 'self-check', 'all'); None for all."""
        if mode in (None, "", "human"):
            return None
        doc = self.load_alignment_ids()
        if doc is None:
            raise InputError(f"alignment {mode!r} needs {ALIGNMENT_FILE}", path=self.root)
        key = f"{mode}_alignment_id"
        if key not in doc:
            modes = ["human", *sorted(k.removesuffix("_alignment_id") for k in doc)]
            raise InputError(f"unknown alignment {mode!r}", path=self.alignment_path or self.root / ALIGNMENT_FILE,
                             hint=did_you_mean(mode, modes))
        return {rid for ids in doc[key].values() for i in ids if (rid := record_id(i)) is not None}


def read_alignment_ids(path: str | Path) -> dict[str, dict[str, list[Any]]]:
    """``alignment_ids.json``: ``{"<mode>_alignment_id": {"<structure>": [ids]}}``; another shape is an
    :class:`InputError` naming the file."""
    doc = read_json(path)
    ok = isinstance(doc, dict) and all(
        isinstance(v, dict) and all(isinstance(ids, list) for ids in v.values()) for v in doc.values()
    )
    if not ok:
        raise InputError(
            "expected {\"<mode>_alignment_id\": {\"single\": [ids], ...}, ...}", path=path,
            hint="this is not an alignment_ids.json of the reference layout",
        )
    return cast("dict[str, dict[str, list[Any]]]", doc)  # the shape was checked above


def find_data_file(root: Path) -> Path | None:
    """The gold data file of a dataset directory, if any."""
    for name in DATA_FILES:
        if (root / name).is_file():
            return root / name
    return None


def load_dataset(
    root: str | Path, *, dependency: str | None = None, samples: bool = True, on_problem: str = "report"
) -> Dataset:
    """Load a dataset directory (see the module docstring). ``dependency`` overrides the library's kind.

    Real data is messy: a record or line that cannot be used is left out and reported in
    :attr:`Dataset.problems` (each an :class:`InputError` naming file:line), so the rest still loads;
    ``on_problem="raise"`` raises the first one instead. What cannot be worked around (no directory, no tool
    library, a broken tool library) always raises. With ``samples=False`` the sample files (``data.json``,
    ``data_raw.json``, ``data_error.json``) are not read. ``alignment_ids.json`` is read only when asked for
    (:meth:`Dataset.aligned_ids`)."""
    if on_problem not in ("report", "raise"):
        raise ConfigError(f"on_problem must be 'report' or 'raise', not {on_problem!r}")
    root = Path(root)
    if not root.is_dir():
        raise InputError("dataset directory not found", path=root, hint="pass a directory holding tool_desc.json")
    tool_path = root / TOOL_FILE
    graph_path = root / GRAPH_FILE
    if tool_path.is_file():
        library = load_tool_library(tool_path, dependency, name=root.name)
    elif graph_path.is_file():
        library = load_tool_library(graph_path, dependency, name=root.name)
    else:
        raise InputError(f"no {TOOL_FILE} in the dataset directory", path=root)
    problems: list[InputError] | None = [] if on_problem == "report" else None
    graph = None
    if graph_path.is_file():
        try:
            graph = _read_graph(graph_path, library)
        except InputError as err:
            if problems is None:
                raise
            problems.append(err)
    ds = Dataset(root=root, library=library, graph=graph)
    data_path = find_data_file(root)
    if samples and data_path is not None:
        ds.samples = read_samples(data_path, problems=problems)
        ds.data_path = data_path
    if samples and (root / RAW_FILE).is_file():
        ds.raw_records = read_raw_records(root / RAW_FILE, problems=problems)
    if samples and (root / ERROR_FILE).is_file():
        ds.error_records = read_raw_records(root / ERROR_FILE, problems=problems)
    for name in REQUESTS_FILES:
        if (root / name).is_file():
            ds.requests = read_requests(root / name, problems=problems)
            break
    if (root / ALIGNMENT_FILE).is_file():
        ds.alignment_path = root / ALIGNMENT_FILE
    ds.problems = problems or []
    return ds


def _read_graph(path: Path, library: ToolLibrary) -> ToolGraph:
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise InputError("bad tool graph: expected a JSON object {\"nodes\", \"links\"}", path=path)
    try:
        return ToolGraph.model_validate({**doc, "dependency": library.dependency})
    except ValidationError as exc:
        raise InputError(f"bad tool graph: {_validation_message(exc)}", path=path) from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise InputError(f"bad tool graph: {type(exc).__name__}", path=path) from None


def no_samples_error(root: str | Path, *, what: str = "in the dataset directory") -> InputError:
    """The error of a dataset directory without samples, saying why when it can: a directory that `taskbench
    generate` wrote whose critics kept nothing names its rejected samples (``data_error.json``) and the two ways
    on (``--keep none`` re-filters without a model call; ``review --include-rejected`` shows the reasons)."""
    root = Path(root)
    rejected = 0
    if (root / ERROR_FILE).is_file():
        with (root / ERROR_FILE).open("rb") as fh:
            rejected = sum(1 for line in fh if line.strip())
    if rejected:
        return InputError(
            f"no samples {what}: the critics kept none of the {rejected} generated samples (reasons in "
            f"{ERROR_FILE})", path=root,
            hint=f"keep them anyway with `taskbench generate -o {root} --keep none` (no model call), or see why "
            f"with `taskbench review {root} --include-rejected`")
    return InputError(f"no samples ({DATA_FILE}) {what}", path=root)


def log_problems(ds: Dataset, *, shown: int = 5) -> None:
    """Log (logger ``taskbench.dataset``, shown on stderr by the CLI) the records a dataset load left out, so a
    run that uses only the usable samples says so: a count, then the first ``shown`` as ``file:line: why``."""
    if not ds.problems:
        return
    import logging

    log = logging.getLogger("taskbench.dataset")
    log.warning("%s: %d unusable record(s) left out; the rest is used", ds.root, len(ds.problems))
    for err in ds.problems[:shown]:
        log.warning("  %s", err)
    if len(ds.problems) > shown:
        log.warning("  ... and %d more (taskbench data check %s lists them all)", len(ds.problems) - shown, ds.root)


def read_requests(path: str | Path, *, problems: list[InputError] | None = None) -> dict[str, str]:
    """``{id: user_request}`` of a ``user_requests.json`` (JSON Lines of ``{"id", "user_request"}``). A line
    without a usable id or a string request raises :class:`InputError`, or with a ``problems`` list is
    appended there and left out (the sample's own request is then used)."""
    out: dict[str, str] = {}
    for line, rec in iter_jsonl(path, errors=problems):
        err = None
        if not isinstance(rec, dict) or "id" not in rec or "user_request" not in rec:
            err = InputError("expected {\"id\", \"user_request\"} per line", path=path, line=line)
        elif record_id(rec["id"]) is None:
            err = InputError(f"the id is {_kind(rec['id'])}", path=path, line=line, hint="an id is a string")
        elif not isinstance(rec["user_request"], str):
            err = InputError(f"'user_request' of {_short(rec['id'])} is {_kind(rec['user_request'])}, not text",
                             path=path, line=line, hint="the sample's own request is used instead")
        if err is not None:
            if problems is None:
                raise err
            problems.append(err)
            continue
        out[record_id(rec["id"]) or ""] = rec["user_request"]
    return out


def save_dataset(ds: Dataset, root: str | Path | None = None) -> Path:
    """Write a dataset in the reference layout (atomic per file), samples in the current shape; the graph,
    alignment ids, ``data_raw.json`` and ``data_error.json`` only when set. Returns the directory."""
    out = Path(root) if root is not None else ds.root
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / TOOL_FILE, ds.library.to_taskbench())
    if ds.graph is not None:
        write_json(out / GRAPH_FILE, ds.graph.to_taskbench())
    write_jsonl(out / DATA_FILE, [s.to_record() for s in ds.samples])
    requests = [{"id": s.id, "user_request": ds.requests.get(s.id, s.user_request)} for s in ds.samples]
    write_jsonl(out / REQUESTS_FILES[0], requests)
    if ds.load_alignment_ids() is not None:
        write_json(out / ALIGNMENT_FILE, ds.alignment_ids)
    if ds.raw_records is not None:
        write_jsonl(out / RAW_FILE, ds.raw_records)
    if ds.error_records is not None:
        write_jsonl(out / ERROR_FILE, ds.error_records)
    return out
