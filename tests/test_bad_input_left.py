"""The bad inputs of issue 24.9 that were still left after the first fixes: each is one `taskbench: error:` line
(exit 2, nothing written) or is accepted. Written first; every test here failed before its fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_runner import run
from taskbench import bundled


def _one_line(code: int, err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert code == 2, err
    assert "Traceback" not in err and lines and lines[-1].startswith("taskbench: error:"), err
    return lines[-1]


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    shutil.copytree(bundled.path("multimedia"), out, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return out


def _bomb() -> str:
    text = 'drop: [&a ["x","x","x","x","x","x","x","x","x"]'
    for i in range(1, 9):
        text += f", &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]"
    return text + "]\n"


@pytest.mark.parametrize(("name", "text", "words"), [
    ("bomb.yaml", _bomb(), "aliases expand"),
    ("deep.yaml", "drop: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
    ("deep.json", '{"drop": [' + "[" * 900 + "]" * 900 + "]}", "expected 'SOURCE -> TARGET'"),
])
def test_graph_edit_overrides_that_bomb_or_nest_deeply_are_one_line(ds: Path, tmp_path: Path, capsys, name: str,
                                                                     text: str, words: str) -> None:
    over = tmp_path / name
    over.write_text(text, encoding="utf-8")
    out = tmp_path / "edited.json"
    code, _, err = run(capsys, "graph", "edit", str(ds / "graph_desc.json"), "--overrides", str(over), "-o", str(out))
    line = _one_line(code, err)
    assert str(over) in line and words in line and len(line) < 400, line
    assert not out.exists()


def test_a_bad_dependency_option_blames_the_option_not_the_tool_file(ds: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "generate", "--tools", str(ds / "tool_desc.json"), "--dependency", "x", "-m",
                       "mock/echo", "--n", "2", "-o", str(tmp_path / "gen"))
    line = _one_line(code, err)
    assert "--dependency" in line and "tool_desc.json" not in line, line


def test_compat_on_a_gold_file_of_one_empty_object_names_the_file(ds: Path, tmp_path: Path, capsys) -> None:
    (ds / "data.json").write_text("{}\n", encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text("{}\n", encoding="utf-8")
    for mode in ("--compat", "--strict"):
        code, _, err = run(capsys, "evaluate", "-d", str(ds), "-p", str(preds), mode)
        line = _one_line(code, err)
        assert f"{ds / 'data.json'}" in line, (mode, line)


def _tear_line(ds: Path, n: int = 3) -> None:
    lines = (ds / "data.json").read_text(encoding="utf-8").splitlines()
    lines[n] = "{not json"
    (ds / "data.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_data_judge_stops_on_a_torn_data_line_before_any_model_call(ds: Path, tmp_path: Path, capsys,
                                                                     monkeypatch) -> None:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    _tear_line(ds)
    before = (ds / "data.json").read_bytes()
    code, _, err = run(capsys, "data", "judge", str(ds), "-m", "mock/echo", "--limit", "5", "-q")
    line = _one_line(code, err)
    assert f"{ds / 'data.json'}:4:" in line, line
    assert not (ds / "judge").exists(), "model calls ran before the torn line was reported"
    assert (ds / "data.json").read_bytes() == before


def test_run_leaves_out_a_torn_data_line_as_it_says_instead_of_failing_after_the_calls(ds: Path, tmp_path: Path,
                                                                                        capsys, monkeypatch) -> None:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    _tear_line(ds)
    out = tmp_path / "run"
    code, _, err = run(capsys, "run", "-m", "mock/echo", "-d", str(ds), "--limit", "4", "--generate", "0",
                       "--agents", "", "--bootstrap", "0", "-o", str(out), "-q")
    assert code == 0, err
    assert "unusable record(s) left out; the rest is used" in err and "taskbench: error" not in err, err
    metrics = list((out / "metrics").rglob("*.json"))
    assert metrics, list(out.rglob("*"))


def test_a_symlink_loop_as_predict_output_is_one_line(ds: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.symlink_to(b)
    b.symlink_to(a)
    code, _, err = run(capsys, "predict", "-d", str(ds), "-m", "mock/echo", "--limit", "2", "-o", str(a), "-q")
    line = _one_line(code, err)
    assert str(a) in line, line


@pytest.mark.parametrize("board", [
    {"group": "overall_overall", "rows": [5]},
    {"rows": [{"model": "a", "node_micro_f1": "x"}]},
    {"rows": [{"model": ["a"], "node_micro_f1": 1}]},
    {"rows": [{"model": "a", "node_micro_f1": float("nan")}]},
])
def test_a_board_with_rows_of_the_wrong_shape_is_one_line(tmp_path: Path, capsys, board: dict) -> None:
    metrics = tmp_path / "m.json"
    metrics.write_text(json.dumps({"model": "a", "strict": {"groups": {}}}), encoding="utf-8")
    against = tmp_path / "board.json"
    against.write_text(json.dumps(board), encoding="utf-8")
    from taskbench.errors import InputError
    from taskbench.report.leaderboard import read_ranking

    with pytest.raises(InputError) as caught:
        read_ranking(against)
    assert str(against) in str(caught.value) and "row #1" in str(caught.value)


def _surrogate_tools(ds: Path) -> None:
    doc = json.loads((ds / "tool_desc.json").read_text(encoding="utf-8"))
    doc["nodes"][0]["id"] = "Image\ud800Tool"
    (ds / "tool_desc.json").write_text(json.dumps(doc), encoding="utf-8")  # ensure_ascii: written as \ud800


def test_a_lone_surrogate_in_a_tool_name_is_written_not_a_crash(ds: Path, tmp_path: Path, capsys,
                                                                 monkeypatch) -> None:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    _surrogate_tools(ds)
    graph = tmp_path / "g.json"
    code, _, err = run(capsys, "graph", "build", str(ds / "tool_desc.json"), "-o", str(graph))
    assert code == 0, err
    code, _, err = run(capsys, "graph", "show", str(graph), "-o", str(tmp_path / "g.html"))
    assert code == 0 and "Traceback" not in err, err
    assert "Image" in (tmp_path / "g.html").read_text(encoding="utf-8")
    code, _, err = run(capsys, "generate", "--tools", str(ds / "tool_desc.json"), "-m", "mock/echo", "--n", "2",
                       "-o", str(tmp_path / "gen"), "-q")
    assert code in (0, 1) and "Traceback" not in err, err
    assert (tmp_path / "gen" / "generation.json").is_file() or list((tmp_path / "gen").iterdir())


@pytest.mark.parametrize("errors", ["strict", "surrogateescape", "surrogatepass"])
def test_stdout_prints_a_lone_surrogate_in_any_error_mode(errors: str, monkeypatch) -> None:
    """PYTHONIOENCODING=utf-8:surrogateescape (or an ASCII terminal) left stdout unable to print a lone
    surrogate: only the "strict" mode was made tolerant."""
    import io
    import sys

    from taskbench.cli.main import _tolerant_streams

    for encoding in ("utf-8", "ascii"):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, errors=errors)
        monkeypatch.setattr(sys, "stdout", stream)
        _tolerant_streams()
        print("tool Image\ud800Tool é", file=stream)
        stream.flush()
        assert b"Image" in raw.getvalue(), (encoding, errors)


def test_run_on_a_tool_name_with_a_lone_surrogate_writes_its_log(ds: Path, tmp_path: Path, capsys,
                                                                  monkeypatch) -> None:
    """pydantic's JSON mode cannot encode a lone surrogate: the run log's write ended the run in a
    UnicodeEncodeError after every stage had run (found by tests/test_fuzz_commands.py)."""
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    _surrogate_tools(ds)
    out = tmp_path / "run"
    code, _, err = run(capsys, "run", "-m", "mock/echo", "-d", str(ds), "--limit", "2", "--generate", "0",
                       "--agents", "", "--bootstrap", "0", "-o", str(out), "-q")
    assert code == 0, err
    log = json.loads((out / "run_log.json").read_text(encoding="utf-8"))
    assert log["status"] == "complete", log["status"]


DEEP_LINE = b"[" * 100_000 + b"]" * 100_000
HUGE_LINE = b'{"id": ' + b"9" * 5000 + b"}"


def test_the_review_log_reads_deep_and_huge_lines_as_problems(tmp_path: Path) -> None:
    from taskbench.report.review.log import ReviewLog

    path = tmp_path / "review.jsonl"
    path.write_bytes(DEEP_LINE + b"\n" + HUGE_LINE + b"\n")
    log = ReviewLog(path)
    log.refresh()
    assert [p.line for p in log.problems] == [1, 2] and not log.decisions


def test_review_reads_deep_and_huge_sample_lines_as_bad_lines(tmp_path: Path) -> None:
    from taskbench.report.review.session import _read_records

    path = tmp_path / "data.json"
    path.write_bytes(DEEP_LINE + b"\n" + HUGE_LINE + b'\n{"id": "a"}\n')
    rows = _read_records(path)
    assert [(line, err is not None) for line, _, err in rows] == [(1, True), (2, True), (3, False)]


@pytest.mark.parametrize("value", [[[[]]], {"a": [1, {"b": None}]}])
def test_argument_text_of_nested_values_is_bounded(value: object) -> None:
    from taskbench.eval.normalise import _as_text

    deep: object = "x"
    for _ in range(100_000):
        deep = [deep]
    assert isinstance(_as_text(value), str)
    assert isinstance(_as_text(deep), str)  # a RecursionError before


@pytest.mark.parametrize("command", ["evaluate", "leaderboard", "sample", "predict", "data judge"])
def test_an_output_under_a_file_is_one_line_before_any_model_call(ds: Path, tmp_path: Path, capsys, monkeypatch,
                                                                   command: str) -> None:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    blocker = tmp_path / "afile"
    blocker.write_text("x\n", encoding="utf-8")
    preds, metrics = tmp_path / "p.jsonl", tmp_path / "m.json"
    if command in ("evaluate", "leaderboard"):
        assert run(capsys, "predict", "-d", str(ds), "-m", "mock/echo", "--limit", "2", "-o", str(preds), "-q")[0] == 0
        assert run(capsys, "evaluate", "-d", str(ds), "-p", str(preds), "--bootstrap", "0", "-o", str(metrics))[0] == 0
    out = blocker / "out.json"
    argv = {"evaluate": ["evaluate", "-d", str(ds), "-p", str(preds), "--bootstrap", "0", "-o", str(out)],
            "leaderboard": ["leaderboard", str(metrics), "-o", str(out)],
            "sample": ["sample", str(ds / "graph_desc.json"), "-n", "2", "-o", str(out)],
            "predict": ["predict", "-d", str(ds), "-m", "mock/echo", "--limit", "2", "-o", str(blocker / "p.jsonl"),
                        "-q"],
            "data judge": ["data", "judge", str(ds), "-m", "mock/echo", "--limit", "2", "-q", "-o", str(out)]}[command]
    code, _, err = run(capsys, *argv)
    line = _one_line(code, err)
    assert f"{blocker} is a file" in line, line
    assert not (ds / "judge").exists() and not (ds / "judge.json").exists()


def test_a_review_log_that_is_a_symlink_loop_or_under_a_file_is_an_input_error(tmp_path: Path) -> None:
    from taskbench.errors import InputError
    from taskbench.report.review.log import ReviewLog

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(InputError, match="cannot read the review log"):
        ReviewLog(a)
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="cannot read the review log"):
        ReviewLog(tmp_path / "afile" / "log.jsonl")


@pytest.fixture(scope="module")
def agents_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from taskbench.cli.main import main

    out = tmp_path_factory.mktemp("agents") / "run"
    mp = pytest.MonkeyPatch()
    mp.setenv("TASKBENCH_CACHE", str(out.parent / "cache"))
    try:
        # our bundled TMDB task: the run needs no ../shared (RestBench's own queries are there)
        main(["agents", "eval", "--env", "restbench-tmdb", "--task-set", "own", "-m", "mock/echo", "--agent", "react",
              "-t", "tmdb-own-01", "-o", str(out), "-q"])
    except SystemExit as exc:
        assert exc.code in (0, 1, None)
    finally:
        mp.undo()
    assert (out / "episodes.jsonl").is_file()
    return out


@pytest.mark.parametrize(("name", "text"), [
    ("episodes.jsonl", '{"x": 1}\n'),
    ("episodes.jsonl", "[" * 3000 + "]" * 3000 + "\n"),
    ("episodes.jsonl", '{"task_id": 5, "agent": null}\n'),
    ("trajectories/react/tmdb-own-01__s0.jsonl", '{"type": "nope"}\n'),
    ("trajectories/react/tmdb-own-01__s0.jsonl", "\xff"),
    ("header.json", "{\n"),
    ("header.json", "[1]\n"),
    ("header.json", '{"kind": 5}\n'),
    ("metrics.json", "[1]\n"),
])
def test_agents_show_and_eval_read_a_broken_run_directory_as_one_line(agents_run: Path, tmp_path: Path, capsys,
                                                                       monkeypatch, name: str, text: str) -> None:
    """The run directory's files read raw (agents/show.py, agents/eval.py, cli/agents.py) were tracebacks."""
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    run_dir = tmp_path / "run"
    shutil.copytree(agents_run, run_dir)
    (run_dir / name).write_text(text, encoding="utf-8")
    for argv in (["agents", "show", str(run_dir)], ["agents", "show", str(run_dir), "-t", "tmdb-own-01"],
                 ["agents", "eval", "--env", "restbench-tmdb", "--task-set", "own", "-m", "mock/echo", "--agent",
                  "react", "-t", "tmdb-own-01", "-o", str(run_dir), "-q"]):
        code, _, err = run(capsys, *argv)
        assert "Traceback" not in err, err
        if code != 0:
            _one_line(code, err)


def test_hashes_of_text_with_a_lone_surrogate_do_not_crash() -> None:
    """The response cache's key and the review log's record hash encoded strictly (llm/cache.py,
    report/review/log.py): a lone surrogate in a request or a sample ended the command."""
    from taskbench.llm.cache import cache_key
    from taskbench.report.review.log import record_hash

    key = cache_key({"provider": "mock", "model": "echo"}, [{"role": "user", "content": "caption a\ud800.png"}], {}, None)
    assert len(key) == 64 and key != cache_key({"provider": "mock", "model": "echo"}, [{"role": "user", "content": "caption a.png"}], {}, None)
    assert len(record_hash({"id": "x\ud800"})) == 64


def test_review_prints_a_skipped_record_with_markup_like_text_as_text(ds: Path, tmp_path: Path, capsys) -> None:
    """cli/review.py printed the skipped records' messages as rich markup: an id '[/x]' was a MarkupError."""
    lines = (ds / "data.json").read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[0])
    rec.update({"id": "[/x]", "user_request": 5})
    lines[0] = json.dumps(rec)
    (ds / "data.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "review", str(ds), "--export", "-o", str(tmp_path / "out"))
    assert "Traceback" not in err and "MarkupError" not in err, err
    assert "skipped" in err and "[/x]" in err, err


def test_predict_prints_a_failed_call_whose_error_looks_like_markup_as_text(tmp_path: Path, capsys) -> None:
    from fault_server import FaultServer

    message = "[/x] [bold]boom"
    server = FaultServer([("status", 400, {}, message)] * 8).start()
    try:
        out = tmp_path / "p.jsonl"
        code, stdout, err = run(capsys, "predict", "--data", "huggingface", "-m", "openai-compatible/x", "--base-url",
                                server.base_url, "--limit", "1", "--max-retries", "0", "-o", str(out), "--no-cache",
                                "-q")
    finally:
        server.stop()
    assert "MarkupError" not in err and "Traceback" not in err, err
    failed = [line for line in (stdout + err).splitlines() if line.startswith("failed ")]
    assert code == 1 and failed and message in failed[0], (code, stdout, err)


@pytest.mark.parametrize(("key", "value", "words"), [
    ("n", -5, "n:"),
    ("n", 2.5, "n:"),
    ("temperature", "hot", "temperature:"),
    ("temperature", -1, "temperature:"),
    ("top_p", 2, "top_p:"),
    ("max_tokens", -1, "max_tokens:"),
    ("check", "maybe", "check:"),
    ("mode_weights", [1, 1, 1], "mode_weights:"),
    ("mode_weights", {"single": float("inf"), "chain": 1, "dag": 1}, "single"),
    ("size_weights", "x", "size_weights:"),
    ("size_weights", {"two": 1}, "size_weights.two"),
    ("seed", "x", "seed:"),
])
def test_generate_resumes_a_directory_whose_recorded_arguments_are_wrong_as_one_line(
        ds: Path, tmp_path: Path, capsys, monkeypatch, key: str, value: object, words: str) -> None:
    """engine/generate.py passed the header's recorded values to GenerateOptions (pydantic) without a try."""
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "gen"
    assert run(capsys, "generate", "--tools", str(ds / "tool_desc.json"), "-m", "mock/echo", "--n", "2", "-o",
               str(out), "-q")[0] == 0
    header = json.loads((out / "header.json").read_text(encoding="utf-8"))
    for part in ("config", "identity"):
        header[part][key] = value
    (out / "header.json").write_text(json.dumps(header), encoding="utf-8")
    code, _, err = run(capsys, "generate", "-o", str(out), "-m", "mock/echo", "-q")
    line = _one_line(code, err)
    assert words in line and "(" in line and line.endswith(")"), line


@pytest.mark.parametrize(("text", "words"), [
    ('{"n": -5, "model": "mock/echo"}', "n:"),
    ('{"n": 2, "temperature": "hot"}', "temperature:"),
    ("[1]", "expected a JSON object"),
    ("{", "generation.json"),
])
def test_generate_resumes_a_broken_legacy_generation_json_as_one_line(ds: Path, tmp_path: Path, capsys,
                                                                     monkeypatch, text: str, words: str) -> None:
    """A directory generated before run headers keeps its arguments in generation.json (dataset/header.py)."""
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "gen"
    assert run(capsys, "generate", "--tools", str(ds / "tool_desc.json"), "-m", "mock/echo", "--n", "2", "-o",
               str(out), "-q")[0] == 0
    (out / "header.json").unlink()
    (out / "generation.json").write_text(text, encoding="utf-8")
    code, _, err = run(capsys, "generate", "-o", str(out), "-m", "mock/echo", "-q")
    line = _one_line(code, err)
    assert "generation.json" in line and words in line and line.endswith(")"), line


@pytest.mark.parametrize(("text", "words"), [
    ("{", "metrics.json"),
    ("[1]", "expected a JSON object"),
    ('{"comparison": 5}', "comparison"),
    ('{"comparison": [{"agent": "x", "tokens": "many"}]}', "comparison.0.tokens"),
    ('{"turns_sweep": [{"protocol": "p", "alpha": "a", "beta": 3, "success_rate": 0.5}]}', "turns_sweep.0.alpha"),
])
def test_agents_plot_reads_a_broken_metrics_json_as_one_line(tmp_path: Path, capsys, text: str, words: str) -> None:
    """cli/agents.py read metrics.json with json.loads and report/agents.py indexed it raw: a JSONDecodeError,
    AttributeError or TypeError."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "metrics.json").write_text(text, encoding="utf-8")
    for figure in ("tokens", "turns"):
        code, _, err = run(capsys, "agents", "plot", str(run_dir), "--figure", figure, "-o", str(tmp_path / "x.png"))
        line = _one_line(code, err)
        assert "metrics.json" in line and words in line, line
    assert not (tmp_path / "x.png").exists()
