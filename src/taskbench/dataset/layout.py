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
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from ..schema import Sample, ToolGraph, ToolLibrary
from .jsonio import iter_jsonl, read_json, write_json, write_jsonl

DATA_FILE = "data.json"
TOOL_FILE = "tool_desc.json"
GRAPH_FILE = "graph_desc.json"
REQUESTS_FILES = ("user_requests.json", "user_requests.jsonl")
ALIGNMENT_FILE = "alignment_ids.json"
RAW_FILE = "data_raw.json"
ERROR_FILE = "data_error.json"
DATA_FILES = (DATA_FILE, "data.jsonl", "gold_sample.jsonl", "improved.parquet", "data.parquet")


def _validation_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc}: {err.get('msg')}" if loc else str(err.get("msg"))


def parse_sample(record: Any, *, path: str | Path | None = None, line: int | None = None) -> Sample:
    """Validate one raw record into a :class:`Sample`, with file:line in the error."""
    if not isinstance(record, dict):
        raise InputError("expected a JSON object per line", path=path, line=line)
    if "id" not in record:
        raise InputError("record has no 'id'", path=path, line=line)
    try:
        return Sample.model_validate(record)
    except ValidationError as exc:
        raise InputError(
            f"sample {record.get('id')!r}: {_validation_message(exc)}", path=path, line=line
        ) from None
    except ValueError as exc:  # e.g. a JSON string field that does not parse
        raise InputError(f"sample {record.get('id')!r}: {exc}", path=path, line=line) from None


def _iter_records(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line or row number, record) of a JSON Lines file, or of a parquet file (row numbers from 1)."""
    if str(path).endswith(".parquet"):
        from .hub import read_parquet_records

        yield from enumerate(read_parquet_records(path), start=1)
    else:
        yield from iter_jsonl(path)


def read_samples(path: str | Path) -> list[Sample]:
    """All samples of a ``data.json`` (JSON Lines, either release shape) or a hub parquet file; duplicate ids
    are an error."""
    out: list[Sample] = []
    seen: dict[str, int] = {}
    for line, record in _iter_records(path):
        sample = parse_sample(record, path=path, line=line)
        if sample.id in seen:
            raise InputError(
                f"duplicate sample id {sample.id!r} (first on line {seen[sample.id]})", path=path, line=line
            )
        seen[sample.id] = line
        out.append(sample)
    return out


def read_raw_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file as plain dicts (for reference-compatible scoring)."""
    out = []
    # Parsing creates millions of small objects that all stay alive; with the cyclic GC running, each
    # collection rescans them (about half the CPU time here). JSON values cannot form cycles: pause it.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for line, record in _iter_records(path):
            if not isinstance(record, dict):
                raise InputError("expected a JSON object per line", path=path, line=line)
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
    data_path: Path | None = None
    raw_records: list[dict[str, Any]] | None = None
    """The records of ``data_raw.json`` (data-engine output before the critics), as plain dicts; None when
    the file is absent. Kept raw: such records need not fit :class:`Sample`."""
    error_records: list[dict[str, Any]] | None = None
    """The records of ``data_error.json`` (samples the critics rejected), as plain dicts; None when absent."""

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

    def aligned_ids(self, mode: str) -> set[str] | None:
        """Ids of one alignment mode ('node', 'link', 'both_node_link', 'self-check', 'all'); None for all."""
        if mode in (None, "", "human"):
            return None
        if self.alignment_ids is None:
            raise InputError(f"alignment {mode!r} needs {ALIGNMENT_FILE}", path=self.root)
        key = f"{mode}_alignment_id"
        if key not in self.alignment_ids:
            modes = sorted(k.removesuffix("_alignment_id") for k in self.alignment_ids)
            raise InputError(f"unknown alignment {mode!r}", path=self.root / ALIGNMENT_FILE, hint=f"one of {modes}")
        return {str(i) for ids in self.alignment_ids[key].values() for i in ids}


def find_data_file(root: Path) -> Path | None:
    """The gold data file of a dataset directory, if any."""
    for name in DATA_FILES:
        if (root / name).is_file():
            return root / name
    return None


def load_dataset(root: str | Path, *, dependency: str | None = None, samples: bool = True) -> Dataset:
    """Load a dataset directory (see the module docstring). ``dependency`` overrides the library's kind.

    With ``samples=False`` the sample files (``data.json``, ``data_raw.json``, ``data_error.json``) are not
    read."""
    from ..graph.loaders import load_tool_library

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
    graph = None
    if graph_path.is_file():
        doc = read_json(graph_path)
        try:
            graph = ToolGraph.model_validate({**doc, "dependency": library.dependency})
        except (ValidationError, TypeError) as exc:
            msg = _validation_message(exc) if isinstance(exc, ValidationError) else str(exc)
            raise InputError(f"bad tool graph: {msg}", path=graph_path) from None
    ds = Dataset(root=root, library=library, graph=graph)
    data_path = find_data_file(root)
    if samples and data_path is not None:
        ds.samples = read_samples(data_path)
        ds.data_path = data_path
    if samples and (root / RAW_FILE).is_file():
        ds.raw_records = read_raw_records(root / RAW_FILE)
    if samples and (root / ERROR_FILE).is_file():
        ds.error_records = read_raw_records(root / ERROR_FILE)
    for name in REQUESTS_FILES:
        if (root / name).is_file():
            for line, rec in iter_jsonl(root / name):
                if not isinstance(rec, dict) or "id" not in rec or "user_request" not in rec:
                    raise InputError("expected {\"id\", \"user_request\"} per line", path=root / name, line=line)
                ds.requests[str(rec["id"])] = rec["user_request"]
            break
    if (root / ALIGNMENT_FILE).is_file():
        ds.alignment_ids = read_json(root / ALIGNMENT_FILE)
    return ds


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
    if ds.alignment_ids is not None:
        write_json(out / ALIGNMENT_FILE, ds.alignment_ids)
    if ds.raw_records is not None:
        write_jsonl(out / RAW_FILE, ds.raw_records)
    if ds.error_records is not None:
        write_jsonl(out / ERROR_FILE, ds.error_records)
    return out
