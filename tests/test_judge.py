"""`taskbench data judge`: scores per sample into data.json, the paper's Table 2 per method with the judge named,
resume without new calls, failed calls and exit codes."""

from __future__ import annotations

import json

import pytest

from cli_runner import run
from engine_oracle import Oracle
from taskbench import bundled
from taskbench.dataset import read_jsonl
from taskbench.engine.generate import GenerateOptions, generate
from taskbench.engine.judge import judge, judge_table
from taskbench.graph.build import graph_from_path
from taskbench.llm import get_model


@pytest.fixture(scope="module")
def mm():
    return graph_from_path(bundled.path("multimedia"))


def _model(responses, name="mock/oracle", **kw):
    return get_model(name, responses=responses, cache=False, max_retries=0, **kw)


def _two_methods(tmp_path, mm):
    a, b = tmp_path / "bi", tmp_path / "ne"
    generate(mm, _model(Oracle()), a, GenerateOptions(n=4, seed=1))
    generate(mm, _model(Oracle()), b, GenerateOptions(n=3, seed=1, method="no-edges", keep="none"))
    return a, b


def test_judge_scores_samples_and_tabulates_per_method(tmp_path, mm):
    a, b = _two_methods(tmp_path, mm)
    before = read_jsonl(a / "data.json")
    calls = []

    def scores(request):
        calls.append(request)
        text = request.messages[-1]["content"]
        assert request.json_schema["title"] == "Judge" and "naturalness" in text
        return json.dumps({"reason": "ok", "naturalness": 4, "complexity": 3,
                           "alignment": 5})

    s = judge([a, b], _model(scores, name="mock/judge"))
    assert len(calls) == 7 and s.judge == "mock/judge" and s.failed_calls == 0
    assert s.table["back-instruct"] == {"n": 4, "naturalness": 4.0, "complexity": 3.0, "alignment": 5.0,
                                        "overall": 4.0}
    assert s.table["no-edges"]["n"] == 3
    after = read_jsonl(a / "data.json")
    assert all(r["scores"] == {"naturalness": 4.0, "complexity": 3.0, "alignment": 5.0} for r in after)
    assert [{k: v for k, v in r.items() if k != "scores"} for r in after] == before  # nothing else changed
    table = json.loads((a / "judge.json").read_text())
    assert table["judge"] == "mock/judge" and table["table"]["back-instruct"]["n"] == 4
    # rerun: nothing new to judge
    again = judge([a, b], _model([], name="mock/judge"))
    assert again.written == 0 and again.table == s.table
    # a generate rerun (re-filtering) keeps the scores
    generate(mm, _model([]), a, GenerateOptions(n=4, seed=1))
    assert all("scores" in r for r in read_jsonl(a / "data.json"))


def test_judge_limit_is_stratified_and_unusable_answers_have_no_scores(tmp_path, mm):
    a, _ = _two_methods(tmp_path, mm)
    s = judge([a], _model(['{"reason": "x", "naturalness": 9}', "not json"], name="mock/judge"), limit=2)
    assert s.selected == 2 and s.unusable == 2 and s.table == {}


def test_judge_table_means():
    recs = [{"method": "m", "scores": {"naturalness": 1, "complexity": 2, "alignment": 3}},
            {"method": "m", "scores": {"naturalness": 3, "complexity": 4, "alignment": 5}},
            {"method": "m", "error": "cut"}]
    assert judge_table(recs) == {"m": {"n": 2, "naturalness": 2.0, "complexity": 3.0, "alignment": 4.0,
                                       "overall": 3.0}}


def test_cli_judge_prints_the_table_and_reports_bad_input_in_one_line(tmp_path, capsys, mm, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    a, b = _two_methods(tmp_path, mm)
    md = tmp_path / "table.md"
    code, out, err = run(capsys, "data", "judge", str(a), str(b), "--model", "mock/echo", "-o", str(md), "-q")
    assert code == 0, err
    assert "mock/echo" in out and "back-instruct" in out and "no-edges" in out
    assert md.read_text().startswith("Judge: mock/echo")
    code, _, err = run(capsys, "data", "judge", str(tmp_path / "missing"), "--model", "mock/echo", "-q")
    assert code == 2 and err.count("\n") == 1


def test_judge_help_has_an_example(capsys):
    code, out, _ = run(capsys, "data", "judge", "--help")
    assert code == 0 and "Example:" in out and "Naturalness" in " ".join(out.split())


def test_cli_judge_closes_its_http_session(tmp_path, capsys, mm, monkeypatch, caplog):
    """The judge's HTTP clients are closed on the event loop that opened them (no "Unclosed connector")."""
    import gc
    import warnings

    from fault_server import FaultServer

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    a, _ = _two_methods(tmp_path, mm)
    reply = '{"reason": "fine", "naturalness": 4, "complexity": 3, "alignment": 5}'
    srv = FaultServer(reply=lambda body: reply).start()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            code, out, err = run(capsys, "data", "judge", str(a), "--model", "openai-compatible/j", "--base-url",
                                 srv.base_url, "--no-cache", "-q")
            gc.collect()
    finally:
        srv.stop()
    assert code == 0, err
    assert srv.count == 4
    unclosed = [str(w.message) for w in seen if "nclosed" in str(w.message)]
    unclosed += [r.getMessage() for r in caplog.records if "nclosed" in r.getMessage()]
    assert unclosed == []


def test_a_tampered_judge_file_never_leaves_data_json_rewritten_without_judge_json(tmp_path, mm):
    """Issue 24.9: the judge records read back (a resumed run) were trusted; a record with scores that are not
    1-5 numbers, or with no id, crashed judge_table after data.json had been rewritten, so data.json and
    judge.json disagreed. Records read back are checked like fresh ones, and nothing is written before the
    table is made."""
    a = tmp_path / "bi"
    generate(mm, _model(Oracle()), a, GenerateOptions(n=3, seed=1))
    good = json.dumps({"reason": "ok", "naturalness": 4, "complexity": 3, "alignment": 5})
    judge([a], _model(lambda r: good, name="mock/judge"))
    path = next((a / "judge").glob("*.jsonl"))
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    recs[0]["scores"] = {"naturalness": "high", "complexity": 3, "alignment": 5}
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    s = judge([a], _model(lambda r: good, name="mock/judge"))
    table = json.loads((a / "judge.json").read_text())["table"]
    assert table == s.table and table["back-instruct"]["n"] == 2  # the tampered one has no usable scores
    data = read_jsonl(a / "data.json")
    assert data[0].get("scores") != recs[0]["scores"]
