"""No command changes a file it then refuses, and outputs that cannot be outputs are refused first (issue 43,
points 12-14).

- A predictions output that holds something else (a settings file, text without a final newline, records
  without ids, another model's predictions, a broken record) is refused with exit 2 and left byte for byte
  as it was, with no header, writer marker or temporary file next to it. (It used to lose its last line to
  the torn-line repair and get a ``.header.json`` before the refusal.)
- A complete last record that only lacks its newline is kept, not cut.
- Run directories (generate, agents eval, run) refuse a records file they did not write before their header
  is rewritten; ``run`` resumed over a corrupted prediction record is one line at its line number.
- Devices (``/dev/full``, ``/dev/null``) are never outputs: renaming a file over one as root would replace the
  device. An empty ``-o ''``, a directory where a file goes and a file where a directory goes are one line.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from cli_runner import run as cli
from taskbench import bundled

GRAPH = str(bundled.path("multimedia") / "graph_desc.json")
TOOLS = str(bundled.path("multimedia") / "tool_desc.json")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "120")


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
            and "cache" not in p.relative_to(d).parts}


def _one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("taskbench: error: "), err
    return last


PRED = {"id": "1", "user_request": "x", "result": {"task_steps": [], "task_nodes": [], "task_links": []},
        "model": "mock/echo"}

FOREIGN = {
    "settings-json": b'{"a": 1,\n "b": 2}',  # a JSON document, no final newline
    "plain-text": b"hello",  # one torn-looking line that is no record
    "text-lines": b"line one\nline two\n",
    "records-without-ids": b'{"x": 1}\n{"x": 2}',
    "another-models": (json.dumps({**PRED, "model": "other/model"}) + "\n").encode() + b'{"id": "2", "res',
    "a-broken-record": (json.dumps({**PRED, "result": 5}) + "\n").encode() + b'{"id": "2", "res',
    "binary": bytes(range(256)),
}


@pytest.mark.parametrize("kind", list(FOREIGN))
def test_predict_leaves_a_file_it_refuses_as_it_was(kind, tmp_path, capsys):
    target = tmp_path / "out" / "settings.json"
    target.parent.mkdir()
    target.write_bytes(FOREIGN[kind])
    before = _files(target.parent)
    code, _, err = cli(capsys, "predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "2", "-q",
                       "-o", str(target))
    _one_line_error(code, err)
    assert _files(target.parent) == before  # the bytes, and no header, marker or temporary file beside it


def test_a_complete_last_record_without_its_newline_is_kept(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    code, _, err = cli(capsys, "predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "3", "-q", "-o", str(out))
    assert code == 0, err
    lines = out.read_text().splitlines()
    last = json.loads(lines[-1])
    last["raw"] = "an answer this model would not give again"
    lines[-1] = json.dumps(last)
    edited = "\n".join(lines)
    out.write_text(edited)  # a hand edit that lost the final newline
    code, _, err = cli(capsys, "predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "3", "-q", "-o", str(out))
    assert code == 0, err
    assert out.read_text() == edited + "\n"  # the record kept (not cut and predicted again), its newline added


def test_generate_refuses_a_broken_records_file_before_rewriting_anything(tmp_path, capsys):
    out = tmp_path / "gen"
    argv = ["generate", "--graph", GRAPH, "-m", "mock/echo", "--n", "2", "-q", "-o", str(out)]
    code, _, err = cli(capsys, *argv)
    assert code == 0, err
    with (out / "data_raw.json").open("ab") as fh:
        fh.write(b"garbage without a newline")
    before = _files(out)
    code, _, err = cli(capsys, *argv)
    _one_line_error(code, err)
    assert _files(out) == before


def test_agents_eval_refuses_a_broken_episodes_file_before_rewriting_its_header(tmp_path, capsys):
    out = tmp_path / "agents"
    argv = ["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m", "mock/echo", "--limit", "1",
            "-q", "--bootstrap", "0", "-o", str(out)]
    code, _, err = cli(capsys, *argv)
    assert code == 0, err
    with (out / "episodes.jsonl").open("ab") as fh:
        fh.write(b"junk")
    before = _files(out)
    code, _, err = cli(capsys, *argv)
    _one_line_error(code, err)
    assert _files(out) == before


def test_run_resumed_over_a_corrupted_prediction_is_one_line_at_its_line(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", "-m", "mock/echo", "-d", "multimedia", "--limit", "2", "--generate", "0", "--agents", "",
            "--bootstrap", "0", "-q", "-o", str(out)]
    code, _, err = cli(capsys, *argv)
    assert code == 0, err
    preds = next((out / "predictions").rglob("*.jsonl"))
    lines = preds.read_text().splitlines()
    record = json.loads(lines[1])
    record["result"] = 5
    lines[1] = json.dumps(record)
    preds.write_text("\n".join(lines) + "\n")
    before = preds.read_bytes()
    code, _, err = cli(capsys, *argv)
    last = _one_line_error(code, err)
    assert f"{preds.name}:2: not a prediction record" in last
    assert preds.read_bytes() == before


DEVICE_CASES = {
    "predict": ["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "1", "-q", "-o", "{dev}"],
    "evaluate": ["evaluate", "-d", "multimedia", "-p", "{preds}", "--bootstrap", "0", "-o", "{dev}"],
    "sample": ["sample", GRAPH, "-n", "2", "-o", "{dev}"],
    "graph build": ["graph", "build", TOOLS, "-o", "{dev}"],
    "run": ["run", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--generate", "0", "--agents", "",
            "--bootstrap", "0", "-q", "-o", "{dev}"],
    "generate": ["generate", "--graph", GRAPH, "-m", "mock/echo", "--n", "1", "-q", "-o", "{dev}"],
    "agents eval": ["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m", "mock/echo",
                    "--limit", "1", "-q", "--bootstrap", "0", "-o", "{dev}"],
}


@pytest.fixture(scope="module")
def preds(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("preds") / "p.jsonl"
    from taskbench.cli.main import main

    try:
        main(["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "2", "-q", "-o", str(out)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    return out


@pytest.mark.parametrize("device", ["/dev/null", "/dev/full"])
@pytest.mark.parametrize("command", list(DEVICE_CASES))
def test_a_device_is_never_an_output(command, device, preds, capsys):
    if not Path(device).exists():
        pytest.skip(f"{device} is absent here")
    dev_before = sorted(os.listdir("/dev"))
    mode = os.stat(device).st_mode
    argv = [a.replace("{dev}", device).replace("{preds}", str(preds)) for a in DEVICE_CASES[command]]
    code, _, err = cli(capsys, *argv)
    _one_line_error(code, err)
    assert stat.S_ISCHR(os.stat(device).st_mode) and os.stat(device).st_mode == mode
    assert sorted(os.listdir("/dev")) == dev_before  # no header, marker or temporary file made there


@pytest.mark.parametrize("argv", [
    ["predict", "-d", "multimedia", "-m", "mock/echo", "-q", "-o", ""],
    ["run", "-m", "mock/echo", "-d", "multimedia", "-q", "-o", ""],
    ["generate", "--graph", GRAPH, "-m", "mock/echo", "--n", "1", "-q", "--output="],
    ["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m", "mock/echo", "-o", ""],
    ["sample", GRAPH, "-n", "1", "-o", " "],
], ids=["predict", "run", "generate", "agents-eval", "sample"])
def test_an_empty_output_path_is_refused_and_nothing_is_written(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, *argv)
    assert "empty path" in _one_line_error(code, err)
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == []


def test_a_file_where_a_directory_goes_and_a_directory_where_a_file_goes(tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    a_dir = tmp_path / "folder"
    a_dir.mkdir()
    for argv in (["run", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--generate", "0", "--agents", "",
                  "--bootstrap", "0", "-q", "-o", str(a_file)],
                 ["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m", "mock/echo",
                  "--limit", "1", "-q", "-o", str(a_file)],
                 ["sample", GRAPH, "-n", "2", "-o", str(a_dir)],
                 ["graph", "build", TOOLS, "-o", str(a_dir)]):
        code, _, err = cli(capsys, *argv)
        _one_line_error(code, err)
    assert a_file.read_text() == "mine\n" and list(a_dir.iterdir()) == []
