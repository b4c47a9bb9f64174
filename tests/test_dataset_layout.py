"""The reference dataset directory layout: save_dataset -> load_dataset round trips, the release shapes,
data_raw.json / data_error.json, and file:line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from taskbench import bundled
from taskbench.dataset import load_dataset, read_jsonl, save_dataset, write_jsonl
from taskbench.dataset.layout import ERROR_FILE, RAW_FILE
from taskbench.errors import InputError

RAW = [
    # data-engine output: the reference's shape (result.invoking_graph, method, number_of_tools), not a Sample
    {
        "id": "r1",
        "seed": 7,
        "method": "single",
        "number_of_tools": 1,
        "sampled_nodes": [{"id": "Image_Downloader", "input": ["url"], "output": ["image"]}],
        "sampled_links": [],
        "result": {"user_request": "Fetch it.", "task_steps": ["Step 1"], "invoking_graph": {"nodes": [], "links": []}},
    },
    {"id": "r2", "seed": 8, "method": "chain", "number_of_tools": 2, "result": "not even a dict"},
]
ERRORS = [{"id": "r2", "seed": 8, "method": "chain", "number_of_tools": 2, "result": "not even a dict"}]


def _copy_bundled(tmp_path: Path, name: str = "multimedia") -> Path:
    dst = tmp_path / "src" / name
    shutil.copytree(bundled.path(name), dst)
    return dst


def test_round_trip_of_a_bundled_dataset_with_raw_and_error_records(tmp_path):
    src = load_dataset(bundled.path("multimedia"))
    assert src.raw_records is None and src.error_records is None  # the bundled copy has neither file
    src.raw_records = [dict(r) for r in RAW]
    src.error_records = [dict(r) for r in ERRORS]
    out = save_dataset(src, tmp_path / "multimedia")

    for name in ("tool_desc.json", "graph_desc.json", "data.json", "user_requests.json", RAW_FILE, ERROR_FILE):
        assert (out / name).is_file(), name
    back = load_dataset(out)
    assert len(back.samples) == len(src.samples) == 30
    assert back.samples == src.samples
    assert back.library == src.library
    assert back.graph == src.graph
    assert back.requests == src.requests
    assert back.raw_records == RAW
    assert back.error_records == ERRORS
    # a second save of what was loaded writes byte-identical files
    again = save_dataset(back, tmp_path / "again" / "multimedia")
    for name in ("data.json", RAW_FILE, ERROR_FILE, "tool_desc.json", "graph_desc.json"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name


def test_raw_and_error_files_are_written_only_when_set(tmp_path):
    ds = load_dataset(bundled.path("dailylifeapis"))
    out = save_dataset(ds, tmp_path / "d")
    assert not (out / RAW_FILE).exists() and not (out / ERROR_FILE).exists()
    ds.error_records = []
    save_dataset(ds, out)
    assert (out / ERROR_FILE).read_text() == ""
    back = load_dataset(out)
    assert back.error_records == [] and back.raw_records is None


def test_samples_false_skips_the_sample_files(tmp_path):
    root = _copy_bundled(tmp_path)
    write_jsonl(root / RAW_FILE, RAW)
    ds = load_dataset(root, samples=False)
    assert ds.samples == [] and ds.raw_records is None and ds.error_records is None


def test_v1_shaped_data_loads_and_is_written_in_the_current_shape(tmp_path):
    root = _copy_bundled(tmp_path)
    current = read_jsonl(root / "data.json")
    v1 = []
    for rec in current:
        rec = dict(rec)
        rec["instruction"] = rec.pop("user_request")
        rec["sampled_nodes"] = json.dumps(rec["sampled_nodes"])
        rec["sampled_links"] = json.dumps(rec["sampled_links"])
        v1.append(rec)
    write_jsonl(root / "data.json", v1)
    (root / "user_requests.json").unlink()

    ds = load_dataset(root)
    assert [s.user_request for s in ds.samples] == [r["user_request"] for r in current]
    assert all(isinstance(s.sampled_nodes, list) for s in ds.samples)

    out = save_dataset(ds, tmp_path / "out")
    written = read_jsonl(out / "data.json")
    assert written == current
    assert all("instruction" not in r and isinstance(r["sampled_links"], list) for r in written)
    requests = read_jsonl(out / "user_requests.json")
    assert requests == [{"id": r["id"], "user_request": r["user_request"]} for r in current]


def test_hub_named_user_requests_jsonl_is_read(tmp_path):
    root = _copy_bundled(tmp_path)
    (root / "user_requests.json").unlink()
    ds0 = load_dataset(root)
    assert ds0.requests == {}
    first = ds0.samples[0].id
    write_jsonl(root / "user_requests.jsonl", [{"id": first, "user_request": "rewritten by the hub"}])
    ds = load_dataset(root)
    assert ds.requests == {first: "rewritten by the hub"}
    assert ds.request_for(first) == "rewritten by the hub"
    assert ds.request_for(ds.samples[1].id) == ds.samples[1].user_request


@pytest.mark.parametrize("name", [RAW_FILE, ERROR_FILE])
def test_malformed_raw_or_error_line_names_file_and_line(tmp_path, name):
    root = _copy_bundled(tmp_path)
    (root / name).write_text(json.dumps(RAW[0]) + "\n\n" + '{"id": "r2", "seed": \n', encoding="utf-8")
    ds = load_dataset(root)  # the dataset loads; the bad line is reported
    records = ds.raw_records if name == RAW_FILE else ds.error_records
    assert records is not None and len(records) == 1 and len(ds.samples) == 30
    (err,) = ds.problems
    assert (err.path, err.line) == (str(root / name), 3)
    assert str(err).startswith(f"{root / name}:3: invalid JSON")
    with pytest.raises(InputError) as info:
        load_dataset(root, on_problem="raise")
    assert (info.value.path, info.value.line) == (str(root / name), 3)


def test_raw_line_that_is_not_an_object_is_reported(tmp_path):
    root = _copy_bundled(tmp_path)
    (root / RAW_FILE).write_text(json.dumps(RAW[0]) + "\n[1, 2]\n", encoding="utf-8")
    ds = load_dataset(root)
    (err,) = ds.problems
    assert "JSON object" in str(err) and (err.path, err.line) == (str(root / RAW_FILE), 2)
    assert ds.raw_records == [RAW[0]]


def test_duplicate_ids_in_data_json_are_reported_and_the_first_is_kept(tmp_path):
    root = _copy_bundled(tmp_path)
    lines = (root / "data.json").read_text(encoding="utf-8").splitlines()
    dup_id = json.loads(lines[2])["id"]
    lines.append(lines[2].replace('"user_request": "', '"user_request": "CHANGED '))
    (root / "data.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ds = load_dataset(root)
    (err,) = ds.problems
    assert f"duplicate sample id '{dup_id}' (first on line 3)" in str(err)
    assert (err.path, err.line) == (str(root / "data.json"), len(lines))
    assert len(ds.samples) == 30 and not ds.by_id()[dup_id].user_request.startswith("CHANGED")
    with pytest.raises(InputError, match=f"duplicate sample id '{dup_id}' \\(first on line 3\\)"):
        load_dataset(root, on_problem="raise")
