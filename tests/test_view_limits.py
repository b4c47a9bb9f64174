"""`taskbench view` on large and hostile files: every answer is bounded in size, a file too large to show says
so, memory does not grow with a file's size, and identical requests share one computation."""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from taskbench.report.review.app import create_app  # noqa: E402
from taskbench.report.view import agents as vagents  # noqa: E402
from taskbench.report.view import generation as vgen  # noqa: E402
from taskbench.report.view.cache import Memo  # noqa: E402
from taskbench.report.view.index import ViewIndex, run_slug  # noqa: E402

BIG = 3_000_000  # characters in one hostile field


def agents_run(root: Path, events: list[dict], episode_extra: dict | None = None, end: dict | None = None) -> Path:
    """A `taskbench agents eval` output in the layout before run headers: config.json, episodes.jsonl, one
    trajectory."""
    run = root / "runs" / "ag"
    (run / "trajectories").mkdir(parents=True)
    (run / "config.json").write_text("{}", encoding="utf-8")
    header = {"record": "header", "id": "t1", "task": "find it", "env": "x" * BIG, "agent": "react",
              "models": {"react": "m" * BIG}, "tools": [{"name": "n" * BIG}], "config": {"c": "c" * BIG}}
    lines = [header, *({"record": "event", **e} for e in events),
             end or {"record": "end", "status": "complete", "totals": {"k" * 100: "v" * BIG}, "answer": "a" * BIG}]
    (run / "trajectories" / "t1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    ep = {"id": "ep1", "agent": "react", "task": "t1", "success": False, "trajectory": "trajectories/t1.jsonl",
          **(episode_extra or {})}
    (run / "episodes.jsonl").write_text(json.dumps(ep) + "\n", encoding="utf-8")
    return run


def test_a_trajectory_answer_is_bounded_whatever_its_fields_hold(tmp_path, monkeypatch):
    field = 400_000  # six of them: a 2.4 MB line, under the line limit, so every field is parsed and must be cut
    hostile = {"kind": "model_call", "role": "r" * field, "model": "m" * field, "index": 10 ** 400, "t": float("nan"),
               "finish_reason": "f" * field, "usage": {"prompt_tokens": "p" * field},
               "messages": [{"role": "user", "content": "q" * field}], "output": {"content": "a" * field}}
    monkeypatch.setattr(vagents, "MAX_EVENT_LINE", 5_000_000)
    huge_line = {"kind": "code_run", "code": "x" * 6_000_000}  # over the (lowered) line limit: named, not parsed
    review = {"kind": "review", "target": "plan", "verdict": "revise", "feedback": "f" * field, "route": "grounding",
              "problem": "p" * field, "action": "revise_plan"}
    run = agents_run(tmp_path, [hostile, {"kind": "other", "blob": ["y" * 1000] * 5000}, huge_line, review] * 3,
                     episode_extra={"agent": "g" * 50_000, "calls": ["c" * 1000] * 100, "stop": {"s": "s" * 50_000}})
    with (run / "episodes.jsonl").open("a", encoding="utf-8") as fh:  # a line too large to read: listed by its id
        fh.write(json.dumps({"id": "ep2", "agent": "g" * BIG, "trajectory": "trajectories/t1.jsonl"}) + "\n")
    c = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path / "runs"])))
    rid = run_slug(run)
    eps = c.get(f"/api/view/episodes/{rid}")
    assert eps.status_code == 200 and len(eps.content) < 100_000
    listed = {e["id"]: e for e in eps.json()["episodes"]}
    assert set(listed) == {"ep1", "ep2"} and "too large" in listed["ep2"]["reason"]
    t = c.get(f"/api/view/trajectory/{rid}", params={"id": "ep1"})
    assert t.status_code == 200, t.text[:300]
    assert len(t.content) < 3_000_000  # the page budget (2 MB) and per-field clipping
    d = t.json()
    assert d["n_events"] == 12 and d["events"]
    assert any("too large to show" in str(e.get("detail")) for e in d["events"])
    call = next(e for e in d["events"] if e["kind"] == "model_call")
    assert len(call["model"]) < 1000 and len(call["answer"]) < 9000 and call["t"] == "nan"
    # a page stops at its byte budget; the next one goes on from there, and every event is reached
    monkeypatch.setattr(vagents, "MAX_PAGE_BYTES", 30_000)
    seen, offset = 0, 0
    while offset < 12:
        page = c.get(f"/api/view/trajectory/{rid}", params={"id": "ep1", "offset": offset}).json()
        assert 0 < len(page["events"]) < 12 and len(json.dumps(page)) < 100_000
        seen += len(page["events"])
        offset += len(page["events"])
    assert seen == 12


def test_a_review_shows_what_the_model_said_and_what_the_harness_decided(tmp_path):
    call = {"kind": "model_call", "role": "review", "model": "m", "index": 0,
            "output": {"content": '```json\n{"verdict": "accept", "problem": "wrong_tool", "route": "execution", '
                                  '"feedback": "use the other tool"}\n```'}}
    review = {"kind": "review", "index": 1, "target": "execution", "verdict": "revise", "feedback": "use the other tool",
              "route": "grounding", "problem": "wrong_tool", "action": "replan"}
    run = agents_run(tmp_path, [call, review])
    c = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path / "runs"])))
    d = c.get(f"/api/view/trajectory/{run_slug(run)}", params={"id": "ep1"}).json()
    ev = next(e for e in d["events"] if e["kind"] == "review")
    assert ev["verdict"] == "revise" and ev["model_said"]["verdict"] == "accept"
    assert ev["model_said"]["route"] == "execution" and ev["route"] == "grounding"
    # on a later page too (the model call is the last line of the page before)
    again = c.get(f"/api/view/trajectory/{run_slug(run)}", params={"id": "ep1", "offset": 1}).json()
    assert again["events"][0]["model_said"]["verdict"] == "accept"


def test_a_large_trajectory_is_paged_without_reading_it_per_request(tmp_path):
    events = [{"kind": "code_run", "index": i, "code": f"print({i})", "stdout": "o" * 2000} for i in range(20_000)]
    run = agents_run(tmp_path, events)
    c = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path / "runs"])))
    rid = run_slug(run)
    c.get(f"/api/view/trajectory/{rid}", params={"id": "ep1"})  # indexes the file once
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        d = c.get(f"/api/view/trajectory/{rid}", params={"id": "ep1", "offset": 19_900}).json()
        took = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert d["n_events"] == 20_000 and [e["index"] for e in d["events"]] == list(range(19_900, 20_000))
    assert peak < 8_000_000, peak  # a page, not the 40 MB file
    assert took < 5, took


def test_episodes_are_indexed_once_and_paged(tmp_path, monkeypatch):
    run = agents_run(tmp_path, [{"kind": "code_run", "code": "1"}])
    lines = [json.dumps({"id": f"ep{i}", "agent": "react", "task": f"t{i}", "trajectory": "trajectories/t1.jsonl"})
             for i in range(1200)]
    (run / "episodes.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    built = []
    real = vagents._index_episodes
    monkeypatch.setattr(vagents, "_index_episodes", lambda f: (built.append(1), time.sleep(0.3), real(f))[2])
    c = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path / "runs"])))
    rid = run_slug(run)
    answers: list[dict] = []
    threads = [threading.Thread(target=lambda: answers.append(c.get(f"/api/view/episodes/{rid}").json()))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1  # four requests at once: one index
    assert all(a["total"] == 1200 and len(a["episodes"]) == vagents.EPISODES_PAGE for a in answers)
    page = c.get(f"/api/view/episodes/{rid}", params={"offset": 1000}).json()
    assert [e["id"] for e in page["episodes"]] == [f"ep{i}" for i in range(1000, 1200)]
    assert c.get(f"/api/view/trajectory/{rid}", params={"id": "ep1150"}).status_code == 200  # found past page one
    assert len(built) == 1


def test_an_episodes_file_too_large_to_list_says_so(tmp_path, monkeypatch):
    run = agents_run(tmp_path, [{"kind": "code_run", "code": "1"}])
    line = json.dumps({"id": "x", "agent": "a", "pad": "p" * 900})
    (run / "episodes.jsonl").write_text("".join(line.replace('"x"', f'"e{i}"') + "\n" for i in range(3000)),
                                        encoding="utf-8")
    monkeypatch.setattr(vagents, "MAX_EPISODES_READ", 1 << 20)
    d = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path / "runs"]))).get(
        f"/api/view/episodes/{run_slug(run)}").json()
    assert 0 < d["total"] < 3000 and "only its first" in d["problems"][0]


def generation_run(root: Path, kept: int, rejected: int, pad: int = 1500) -> Path:
    run = root / "runs" / "gen"
    run.mkdir(parents=True)
    (run / "generation.json").write_text(json.dumps({"model": "m"}), encoding="utf-8")
    crit = {"rule": {"passed": False, "reasons": ["r"]}, "llm": {"passed": True, "reasons": []}}
    with (run / "data.json").open("w", encoding="utf-8") as fh:
        for i in range(kept):
            fh.write(json.dumps({"id": f"k{i}", "method": "back-instruct", "user_request": f"req {i} " + "w" * pad,
                                 "critics": crit, "duplicate_of": "k0" if i % 10 == 9 else None}) + "\n")
    with (run / "data_error.json").open("w", encoding="utf-8") as fh:
        for i in range(rejected):
            fh.write(json.dumps({"id": f"r{i}", "method": "back-instruct", "user_request": "x" * pad,
                                 "task_nodes": [{"task": "T"}], "critics": crit, "reasons": ["bad"]}) + "\n")
    return run


def test_the_generation_page_streams_its_files(tmp_path):
    run = generation_run(tmp_path, kept=8000, rejected=8000)  # two files of about 13 MB
    index = ViewIndex([tmp_path / "runs"])
    info = index.run(run_slug(run))
    tracemalloc.start()
    try:
        d = vgen.generation(info, {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert d["counts"] == {"kept": 8000, "rejected": 8000, "duplicates": 800}
    assert len(d["rejected"]) == vgen.MAX_LISTED and len(d["duplicates"]) == vgen.MAX_LISTED
    assert d["duplicates"][0]["of_request"].startswith("req 0 ")
    assert d["per_method"]["back-instruct"]["attempts"] == 16000
    assert peak < 10_000_000, peak  # what the page lists, not the files


def test_a_generation_file_past_the_read_limit_says_so(tmp_path, monkeypatch):
    run = generation_run(tmp_path, kept=10, rejected=3000)
    monkeypatch.setattr(vgen, "MAX_GEN_READ", 1 << 20)
    c = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path / "runs"])))
    d = c.get(f"/api/view/generation/{run_slug(run)}").json()
    assert d["counts"]["rejected"] < 3000 and any("only its first" in n for n in d["notes"])


def test_memo_builds_once_for_concurrent_callers_and_keeps_the_recent():
    memo: Memo[int] = Memo(keep=2)
    calls = []

    def build() -> int:
        calls.append(1)
        time.sleep(0.2)
        return 7

    got: list[int] = []
    threads = [threading.Thread(target=lambda: got.append(memo.get("k", build))) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [7] * 5 and len(calls) == 1
    memo.get("a", lambda: 1)
    memo.get("b", lambda: 2)
    assert memo.peek("k") is None and memo.peek("a") == 1 and len(memo) == 2


def test_a_trajectory_past_the_line_cap_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(vagents, "MAX_TRAJ_LINES", 100)
    run = agents_run(tmp_path, [{"kind": "code_run", "index": i, "code": str(i)} for i in range(500)])
    c = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path / "runs"])))
    d = c.get(f"/api/view/trajectory/{run_slug(run)}", params={"id": "ep1"}).json()
    assert d["n_events"] == 99 and any("only its first 100 lines" in x for x in d["skipped"])


def test_the_paired_comparison_at_the_released_size_holds_its_columns_once():
    """Compare's statistics (the evaluator's paired_compare) on 28,271 samples x 145 columns: before, the columns
    were held four times and the bootstrap weights three (337 MB traced); now once each (171 MB)."""
    import numpy as np

    from taskbench.eval import stats
    from taskbench.eval.api import _selected, _statistic

    rng = np.random.default_rng(0)
    n, tools = 28_271, 40

    def columns() -> dict:
        c = {"n": np.ones(n), "ned": rng.random(n), "step_rougeL": rng.random(n)}
        for k in ("node", "link", "arg_name", "arg_value"):
            for p in ("tp", "fp", "fn"):
                c[f"{k}_{p}"] = rng.integers(0, 4, n).astype(float)
        for p in ("tp", "fp", "fn"):
            c[f"tool_{p}"] = (rng.random((n, tools)) < 0.1).astype(float)
        for k in ("node_set_match", "edge_defined", "edge_set_match", "graph_match", "parse_failure", "missing",
                  "call_failure"):
            c[k] = (rng.random(n) < 0.5).astype(float)
        return c

    a, b = columns(), columns()
    statistic = _statistic(_selected(("f1", "ed", "link", "argument", "rouge")))
    tracemalloc.start()
    try:
        out = stats.paired_compare(a, b, statistic, n_boot=1000, n_perm=1000, seed=0, key="overall")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out and peak < 200 * 2**20, peak / 2**20
