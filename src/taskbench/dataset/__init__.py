"""Datasets on disk: JSON/JSONL I/O with file:line errors, and the reference directory layout."""

from .jsonio import (
    JsonlAppender,
    iter_jsonl,
    read_json,
    read_json_or_jsonl,
    read_jsonl,
    write_json,
    write_jsonl,
)
from .layout import (
    Dataset,
    iter_raw_records,
    load_dataset,
    parse_sample,
    read_alignment_ids,
    read_raw_records,
    read_requests,
    read_samples,
    save_dataset,
)
from .trajectories import TrajectoryWriter, read_trajectory

__all__ = [
    "Dataset",
    "JsonlAppender",
    "iter_jsonl",
    "iter_raw_records",
    "load_dataset",
    "parse_sample",
    "read_alignment_ids",
    "read_json",
    "read_json_or_jsonl",
    "read_jsonl",
    "read_raw_records",
    "read_requests",
    "read_samples",
    "read_trajectory",
    "TrajectoryWriter",
    "save_dataset",
    "write_json",
    "write_jsonl",
]
