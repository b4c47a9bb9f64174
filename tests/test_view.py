"""`taskbench view`: the run index, the viewer's routes on the review app (FastAPI TestClient), escaping under
attack, size limits, access. The run directories are real `taskbench run` outputs (mock models) with attacked
predictions, trajectories and generated samples (tests/view_fixture.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_runner import run as cli
from view_fixture import EVIL_TOOL, RUN_NAME, XSS_REASON, XSS_SCRIPT, make_runs

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from taskbench.dataset.jsonio import read_json, write_json  # noqa: E402
from taskbench.report.review.app import LOOPBACK_HOSTS, MAX_BODY, create_app  # noqa: E402
from taskbench.report.view import index as vindex  # noqa: E402
from taskbench.report.view import samples as vsamples  # noqa: E402
from taskbench.report.view.index import ViewIndex, read_run_header, run_slug  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("view")
    made = make_runs(root)
    # an `evaluate` output next to it: metrics/<model>.json and preds/<model>.jsonl, as a user lays them out
    ev = root / "runs" / "evals"
    (ev / "metrics").mkdir(parents=True)
    (ev / "preds").mkdir()
    for stem in ("mock_echo", "mock_other"):
        shutil.copy(made["run"] / "metrics" / "mm" / f"{stem}.json", ev / "metrics" / f"{stem}.json")
        shutil.copy(made["run"] / "predictions" / "mm" / f"{stem}.jsonl", ev / "preds" / f"{stem}.jsonl")
    made["evals"] = ev
    return made


def client(runs: dict[str, Path], **kw) -> TestClient:  # noqa: ANN003
    index = ViewIndex([runs["root"]], data={"": runs["data"]})
    return TestClient(create_app(None, reviewer="ana", view=index, **kw))


def rid(runs: dict[str, Path]) -> str:
    return run_slug(runs["run"])


def test_index_finds_every_kind_with_status_and_stages(runs):
    idx = ViewIndex([runs["root"]], data={"": runs["data"]})
    kinds = sorted(r.kind for r in idx.runs.values())
    assert kinds == ["agents", "eval", "generate", "run"], idx.problems
    run = idx.runs[rid(runs)]
    assert run.status == "complete" and run.models == ["mock/echo", "mock/other"] and len(run.entries) == 2
    assert sorted(idx.runs[c].kind for c in run.children) == ["agents", "generate"]
    ev = next(r for r in idx.runs.values() if r.kind == "eval")
    assert sorted(e.model for e in ev.entries) == ["mock/echo", "mock/other"]  # the metrics files name their model
    assert all(e.predictions is not None and e.predictions.name.endswith(".jsonl") for e in ev.entries)
    rows = {r["id"]: r for r in idx.summaries()}
    assert rows[run.id]["headline"]["label"] == "n-F1" and rows[run.id]["samples"] == 16


def test_an_evaluate_output_finds_its_gold_through_its_run_header(runs, tmp_path, capsys):
    preds = tmp_path / "preds" / "mock_echo.jsonl"  # beside the metrics folder, as a user lays them out
    preds.parent.mkdir()
    shutil.copy(runs["run"] / "predictions" / "mm" / "mock_echo.jsonl", preds)
    code, _, err = cli(capsys, "evaluate", "--data", str(runs["data"]), "--predictions", str(preds), "--bootstrap", "20",
                       "--execute", "-o", str(tmp_path / "ev" / "echo.json"))
    assert code == 0, err
    # the header next to the metrics names the gold (read: it is a dataset the user gave) and the predictions
    idx = ViewIndex([tmp_path / "ev"], data={"mm-gold": runs["data"]})
    (ev,) = idx.runs.values()
    (entry,) = ev.entries
    assert ev.kind == "eval" and entry.model == "mock/echo" and entry.data_path == runs["data"].resolve()
    assert entry.predictions is not None and entry.predictions.path == preds.resolve()
    # gold the user did not name is not read, and the page says how to show it
    (alone,) = ViewIndex([tmp_path / "ev"]).runs.values()
    assert alone.entries[0].data_path is None and any("--data" in p for p in alone.problems)
    c = TestClient(create_app(None, reviewer="ana", view=idx))
    d = c.get(f"/api/view/samples/{ev.id}", params={"entry": entry.key}).json()
    # strict evaluate scores every gold sample: the 8 predicted ones and 22 missing predictions
    assert d["total"] == 30 and sum(r["predicted"] for r in d["rows"]) == 8 and all(r["gold"] for r in d["rows"])
    assert d["facets"]["label"]["missing_prediction"] == 22
    # evaluate --execute: each sample's execution result is on its page
    sid = next(r["id"] for r in d["rows"] if r["predicted"])
    ex = c.get(f"/api/view/sample/{ev.id}", params={"entry": entry.key, "id": sid}).json()["execution"]
    assert ex is not None and isinstance(ex["success"], bool) and ex["reason"]


def test_a_killed_run_is_listed_as_died(runs, tmp_path):
    dead = tmp_path / "dead"
    shutil.copytree(runs["run"], dead)
    log = read_json(dead / "run_log.json")
    log["status"] = "running"
    write_json(dead / "run_log.json", log)
    info = ViewIndex([tmp_path]).runs[run_slug(dead)]
    assert info.status == "died" and "stopped without recording an end" in (info.death or "")
    # a generation that never reached its end (no statistics.json yet) is incomplete
    gen = tmp_path / "gen-only" / "generated"
    shutil.copytree(runs["run"] / "generated", gen)
    (gen / "statistics.json").unlink()
    assert ViewIndex([tmp_path / "gen-only"]).runs[run_slug(gen)].status == "incomplete"


def test_run_header_skips_records_without_parsing_them(runs, tmp_path):
    full = json.loads((runs["run"] / "run_log.json").read_text(encoding="utf-8"))
    head = read_run_header(runs["run"] / "run_log.json")
    assert [e["records"] for e in head["entries"]] == [[], []]
    assert any(e["records"] for e in full["entries"])
    assert [e["sample_ids_count"] for e in head["entries"]] == [len(e["sample_ids"]) for e in full["entries"]]
    for e in full["entries"]:  # records, per-sample error labels and sample ids are what it leaves out
        e["records"], e["strict"]["errors"], e["sample_ids"] = [], [], []
        e["sample_ids_count"] = len(head["entries"][0]["sample_ids"]) or head["entries"][0]["sample_ids_count"]
    assert head == full
    # text inside records that looks like the end of the list or another key does not fool the reader
    log = read_json(runs["run"] / "run_log.json")
    log["entries"][0]["records"][0]["raw"] = '\n      ]\n  "records": [ ] }'
    write_json(tmp_path / "run_log.json", log)
    again = read_run_header(tmp_path / "run_log.json")
    assert again["entries"][0]["records"] == [] and again["entries"][1]["model"] == "mock/other"
    # an unindented, oversized log is refused with the reason, not read whole
    (tmp_path / "flat.json").write_text(json.dumps(log), encoding="utf-8")
    old = vindex.MAX_HEADER_BYTES
    vindex.MAX_HEADER_BYTES = 100
    try:
        with pytest.raises(Exception, match="not indented"):
            read_run_header(tmp_path / "flat.json")
    finally:
        vindex.MAX_HEADER_BYTES = old


def test_routes_answer_on_a_real_run(runs):
    c = client(runs)
    assert c.get("/", follow_redirects=False).headers["location"] == "/view"
    page = c.get("/view")
    assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
    listed = c.get("/api/view/runs").json()
    assert {r["kind"] for r in listed["runs"]} == {"run", "eval", "generate", "agents"}
    run = c.get(f"/api/view/run/{rid(runs)}").json()
    assert run["header"]["config"]["models"] == ["mock/echo", "mock/other"] and run["header"]["environment"]
    assert {e["key"] for e in run["entries_detail"]} == {"mm/mock/echo", "mm/mock/other"}
    board = c.get("/api/view/board").json()
    assert {r["source"] for r in board["rows"]} == {"strict", "compat"}
    assert board["small_n"] == 30 and any(m["key"] == "edit_distance" and m["lower_is_better"] for m in board["metrics"])
    strict = next(r for r in board["rows"] if r["source"] == "strict" and r["run"] == rid(runs))
    assert strict["groups"]["overall_overall"]["n"] == 8 and strict["groups"]["overall_overall"]["node_micro_f1"][1]
    report = c.get(f"/view/report/{rid(runs)}")
    assert report.status_code == 200 and report.headers["content-security-policy"].startswith("sandbox")


def test_samples_filter_search_and_page_on_the_server(runs):
    c = client(runs)
    base = f"/api/view/samples/{rid(runs)}"
    d = c.get(base, params={"entry": "mm/mock/echo"}).json()
    assert d["total"] == 8 and d["matched"] == 8 and set(d["facets"]["type"]) == {"single", "chain", "dag"}
    for kind in ("single", "chain", "dag"):
        rows = c.get(base, params={"entry": "mm/mock/echo", "type": kind}).json()["rows"]
        assert rows and all(r["type"] == kind for r in rows)
    hall = c.get(base, params={"entry": "mm/mock/echo", "label": "hallucinated_tool"}).json()
    assert hall["matched"] == 1
    tool = next(iter(d["facets"]["tool"]))
    assert all(tool in r["tools"] for r in c.get(base, params={"entry": "mm/mock/echo", "tool": tool}).json()["rows"])
    one = d["rows"][3]["id"]
    assert [r["id"] for r in c.get(base, params={"entry": "mm/mock/echo", "q": one}).json()["rows"]] == [one]
    page = c.get(base, params={"entry": "mm/mock/echo", "offset": 3, "limit": 2}).json()
    assert [r["id"] for r in page["rows"]] == [r["id"] for r in d["rows"][3:5]]


def test_a_parameter_error_shows_its_argument_differences(runs):
    c = client(runs)
    rows = c.get(f"/api/view/samples/{rid(runs)}", params={"entry": "mm/mock/other", "label": "parameter_error"}).json()
    assert rows["rows"]
    one = c.get(f"/api/view/sample/{rid(runs)}", params={"entry": "mm/mock/other", "id": rows["rows"][0]["id"]}).json()
    diffs = [d for a in one["arguments"] for d in a["diffs"]]
    assert diffs and all(d["gold"] != d["predicted"] for d in diffs)  # positional (resource) arguments too


def test_every_input_has_a_limit(runs):
    c = client(runs)
    base = f"/api/view/samples/{rid(runs)}"
    assert c.get(base, params={"entry": "mm/mock/echo", "limit": 100000}).status_code == 422
    assert c.get(base, params={"entry": "mm/mock/echo", "q": "x" * 201}).status_code == 422
    assert c.get(base, params={"entry": "e" * 5000}).status_code == 422
    assert c.get(f"/api/view/sample/{rid(runs)}", params={"entry": "mm/mock/echo", "id": "nope"}).status_code == 404
    big = c.post("/api/view/refresh", content=b"{}" + b" " * (MAX_BODY + 1), headers={"content-type": "application/json"})
    assert big.status_code == 413
    assert c.post("/api/view/refresh", content=b"{}", headers={"content-type": "text/plain"}).status_code == 415


def test_every_response_has_a_limit(runs, tmp_path, monkeypatch):
    run = tmp_path / "big"
    shutil.copytree(runs["run"], run)
    preds = run / "predictions" / "mm" / "mock_other.jsonl"
    lines = preds.read_text(encoding="utf-8").splitlines()
    recs = [json.loads(x) for x in lines]
    recs[1]["raw"] = "y" * 300_000
    recs[2]["raw"] = "z" * 2_000_000  # a line over the (lowered) line limit
    preds.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    monkeypatch.setattr(vsamples, "MAX_LINE_BYTES", 1_000_000)
    c = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path])))
    one = c.get(f"/api/view/sample/{run_slug(run)}", params={"entry": "mm/mock/other", "id": recs[1]["id"]})
    raw = one.json()["prediction"]["raw"]
    assert len(raw) < vsamples.MAX_TEXT + 100 and "more characters not shown" in raw and len(one.content) < 200_000
    cut = c.get(f"/api/view/sample/{run_slug(run)}", params={"entry": "mm/mock/other", "id": recs[2]["id"]}).json()
    assert "is not shown" in cut["pred_problem"]


def test_attack_payloads_are_escaped_in_the_drawings(runs):
    c = client(runs)
    d = c.get(f"/api/view/samples/{rid(runs)}", params={"entry": "mm/mock/echo", "label": "hallucinated_tool"}).json()
    sid = d["rows"][0]["id"]
    one = c.get(f"/api/view/sample/{rid(runs)}", params={"entry": "mm/mock/echo", "id": sid}).json()
    assert one["hallucinated"] == [EVIL_TOOL]
    assert XSS_SCRIPT in one["request"] and XSS_SCRIPT in one["prediction"]["raw"]  # JSON carries text as text
    svg = one["svg_pred"]
    assert "<script" not in svg and "onload=" not in svg.replace("onload=&quot;", "") and "<svg onload" not in svg
    assert "&lt;script&gt;" in svg and "&quot;&gt;&lt;svg" in svg
    # the JSON itself is never taken for HTML
    r = c.get(f"/api/view/sample/{rid(runs)}", params={"entry": "mm/mock/echo", "id": sid})
    assert r.headers["content-type"].startswith("application/json") and r.headers["x-content-type-options"] == "nosniff"


def test_the_report_is_served_sandboxed_and_links_back(runs):
    c = client(runs)
    report = c.get(f"/view/report/{rid(runs)}")
    assert "sandbox" in report.headers["content-security-policy"]
    assert f"/view#/run/{rid(runs)}" in report.text and "taskbench view" in report.text
    assert RUN_NAME not in report.text  # the attacked directory name is escaped in the report too
    from taskbench.run.job import read_run_log
    from taskbench.run.report import next_commands

    lines = next_commands(read_run_log(runs["run"]), runs["run"])  # what the CLI prints last
    assert any(c.startswith(f"taskbench view {runs['run']}") and f"/view#/run/{rid(runs)}" in c for c in lines)


def test_trajectory_pages_and_refuses_files_outside_the_run(runs, tmp_path):
    c = client(runs)
    agents = next(r["id"] for r in c.get("/api/view/runs").json()["runs"] if r["kind"] == "agents")
    eps = c.get(f"/api/view/episodes/{agents}").json()["episodes"]
    assert {e["agent"] for e in eps} == {"react", "conagents-auto"} and len({e["task"] for e in eps}) == 1
    conag = next(e for e in eps if e["agent"] == "conagents-auto")
    t = c.get(f"/api/view/trajectory/{agents}", params={"id": conag["id"]}).json()
    kinds = {e["kind"] for e in t["events"]}
    assert {"model_call", "review", "code_run"} <= kinds and t["n_events"] == len(t["events"])
    assert {e["role"] for e in t["events"]} >= {"grounding", "execution", "review"}
    assert t["end"]["outcome"]["reason"] and t["path"] and "gold_missed" in t
    later = c.get(f"/api/view/trajectory/{agents}", params={"id": conag["id"], "offset": 5}).json()
    assert [e["index"] for e in later["events"]] == [e["index"] for e in t["events"][5:]]
    # an episodes line pointing outside its run directory is not followed
    bad = tmp_path / "ag"
    shutil.copytree(next(runs["run"].glob("agents")), bad)
    lines = (bad / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["trajectory"] = "../../../../../../etc/passwd"
    (bad / "episodes.jsonl").write_text(json.dumps(first) + "\n", encoding="utf-8")
    c2 = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path])))
    t2 = c2.get(f"/api/view/trajectory/{run_slug(bad)}", params={"id": first["id"]}).json()
    assert "outside the run directory" in t2["problem"] and not t2["events"]


def test_generation_page_and_one_click_into_review(runs):
    c = client(runs)
    gen = next(r["id"] for r in c.get("/api/view/runs").json()["runs"] if r["kind"] == "generate")
    d = c.get(f"/api/view/generation/{gen}").json()
    method = d["per_method"]["back-instruct"]
    assert set(method["critics"]) == {"rule", "llm"} and method["attempts"] == d["counts"]["kept"] + d["counts"]["rejected"]
    assert d["rejected"] and all(x["critics"] for x in d["rejected"])
    assert c.get("/api/index").status_code == 404  # no review open yet
    opened = c.post(f"/api/view/review/{gen}", json={})
    assert opened.status_code == 200
    assert c.get("/").status_code == 200 and "review" in c.get("/").text
    assert c.get("/api/index").json()["dataset"]["root"].endswith("generated")


def test_every_zero_has_its_top_reasons_with_counts(runs):
    """Generation kept 0 and every agent solved 0: the pages' data say why, in the terminal's words (critic
    labels, stop and checker labels, "F of N episodes failed"), read from statistics.json and metrics.json."""
    from taskbench.report.agents import failure_lines

    c = client(runs)
    listed = c.get("/api/view/runs").json()["runs"]
    gen = next(r["id"] for r in listed if r["kind"] == "generate")
    d = c.get(f"/api/view/generation/{gen}").json()
    assert d["statistics"]["kept"] == 0
    why = d["not_kept"]
    assert (why["not_kept"], why["answered"]) == (2, 2)
    assert why["reasons"] == [{"reason": "LLM critic: not_correct", "count": 2},
                              {"reason": "LLM critic: not_executable", "count": 2},
                              {"reason": "rule critic: request_empty", "count": 2},
                              {"reason": f"LLM critic: {XSS_REASON}", "count": 1}]
    assert why["keep_none"] == f"taskbench generate -o {runs['run'] / 'generated'} --keep none"
    agents = next(r["id"] for r in listed if r["kind"] == "agents")
    e = c.get(f"/api/view/episodes/{agents}")
    failed = {f["agent"]: f for f in e.json()["failed"]}
    assert failed["react"] == {"agent": "react", "failed": 1, "episodes": 1,
                               "reasons": [{"reason": f"answer rejected: {XSS_REASON}", "count": 1}]}
    assert failed["conagents-auto"]["reasons"] == [{"reason": "step cap reached", "count": 1}]
    metrics = read_json(runs["run"] / "agents" / "metrics.json")
    said = failure_lines(metrics)  # what `agents eval` and report.md print
    for f in failed.values():
        line = next(x for x in said if x.startswith(f"- {f['agent']}: {f['failed']} of {f['episodes']} episodes failed: "))
        assert all(r["reason"] in line for r in f["reasons"])
    # the attacked reason travels as JSON text, never as a document a browser would render
    assert e.headers["content-type"].startswith("application/json") and e.headers["x-content-type-options"] == "nosniff"


def test_past_five_reasons_the_rest_are_summed_as_other(runs, tmp_path):
    for stage in ("generated", "agents"):
        shutil.copytree(runs["run"] / stage, tmp_path / stage)
    stats = read_json(tmp_path / "generated" / "statistics.json")
    stats["reasons_by_critic"] = {"rule": {f"code_{i}": 10 - i for i in range(4)}, "llm": {"a": 1, "b": 1, "c": 1},
                                  "exec": {"x": "not a count", "y": True}, "odd": ["not", "an", "object"]}
    write_json(tmp_path / "generated" / "statistics.json", stats)
    metrics = read_json(tmp_path / "agents" / "metrics.json")
    metrics["agents"]["react"].update(episodes=30, successes=2,
                                      failures={"stop:call_cap": 9, **{f"checker:r{i}": 3 for i in range(6)}, "stop:x": 1})
    write_json(tmp_path / "agents" / "metrics.json", metrics)
    c = TestClient(create_app(None, reviewer="ana", view=ViewIndex([tmp_path])))
    ids = {r["kind"]: r["id"] for r in c.get("/api/view/runs").json()["runs"]}
    reasons = c.get(f"/api/view/generation/{ids['generate']}").json()["not_kept"]["reasons"]
    assert reasons == [{"reason": f"rule critic: code_{i}", "count": 10 - i} for i in range(4)] + [
        {"reason": "LLM critic: a", "count": 1}, {"reason": "other", "count": 2}]
    react = next(f for f in c.get(f"/api/view/episodes/{ids['agents']}").json()["failed"] if f["agent"] == "react")
    assert (react["failed"], react["episodes"]) == (28, 30)
    assert react["reasons"] == [{"reason": "model-call cap reached", "count": 9}] + [
        {"reason": f"answer rejected: r{i}", "count": 3} for i in range(4)] + [{"reason": "other", "count": 7}]


def compared(c: TestClient, params: dict[str, str]) -> dict:
    """The comparison's answer, asking again while its job runs (202 with the progress)."""
    for _ in range(300):
        r = c.get("/api/view/compare", params={**params, "wait": 1})
        if r.status_code != 202:
            assert r.status_code == 200, r.text
            return r.json()
        assert r.json()["progress"]
    raise AssertionError("the comparison did not finish")


def test_compare_two_entries_with_the_evaluators_paired_test(runs):
    from taskbench.dataset.layout import find_data_file, iter_raw_records, load_dataset
    from taskbench.eval.api import compare_predictions

    c = client(runs)
    params = {"a_run": rid(runs), "a_entry": "mm/mock/echo", "b_run": rid(runs), "b_entry": "mm/mock/other"}
    d = compared(c, params)
    g = d["groups"]["overall_overall"]
    assert g["n_samples"] == 8
    nf1 = next(r for r in g["results"] if r["metric"] == "node_micro_f1")
    assert nf1["a"] is not None and nf1["p_value"] is not None and nf1["ci_low"] <= nf1["diff"] <= nf1["ci_high"]
    # the same numbers as `taskbench compare` (compare_predictions) on the samples both predicted
    preds = runs["run"] / "predictions" / "mm"
    ids = {json.loads(x)["id"] for x in (preds / "mock_echo.jsonl").read_text(encoding="utf-8").splitlines()}
    gold = find_data_file(runs["data"])
    ref = compare_predictions(list(iter_raw_records(gold)), iter_raw_records(preds / "mock_echo.jsonl"),
                              iter_raw_records(preds / "mock_other.jsonl"), load_dataset(runs["data"], samples=False).library,
                              splits=("overall", "single", "chain", "dag"), alignment_ids=ids, n_boot=1000, n_perm=1000,
                              seed=0, gold_path=gold).model_dump(mode="json")
    for key, group in ref["groups"].items():
        assert [(r["metric"], r["a"], r["b"], r["ci_low"], r["ci_high"], r["p_value"]) for r in group["results"]] == \
            [(r["metric"], r["a"], r["b"], r["ci_low"], r["ci_high"], r["p_value"]) for r in d["groups"][key]["results"]]
    # asked again: the kept result, no second job
    assert c.get("/api/view/compare", params={**params, "wait": 0}).json() == d


def test_access_is_the_review_apps(runs):
    c = client(runs, token="s3cret", allowed_hosts=LOOPBACK_HOSTS)
    assert c.get("/view", headers={"host": "127.0.0.1"}).status_code == 401
    assert c.get("/api/view/runs", headers={"host": "127.0.0.1"}).status_code == 401
    assert c.get("/api/view/runs", headers={"host": "127.0.0.1", "x-taskbench-token": "s3cret"}).status_code == 200
    assert c.get("/api/view/runs", headers={"host": "evil.example", "x-taskbench-token": "s3cret"}).status_code == 421


def test_cli_refuses_a_public_host_without_a_token_and_a_missing_dir(runs, capsys, tmp_path):
    code, _, err = cli(capsys, "view", str(runs["root"]), "--host", "0.0.0.0")
    assert code == 2 and "--token" in err
    code, _, err = cli(capsys, "view", str(tmp_path / "nope"))
    assert code == 2 and "not a directory" in err
    code, out, _ = cli(capsys, "view", "--help")
    assert code == 0 and "leaderboard" in out


def test_view_on_a_busy_port_names_the_port_and_the_option(runs, tmp_path):
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as busy:  # another server holds the port
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        done = subprocess.run([sys.executable, "-m", "taskbench", "view", str(runs["root"]), "--port", str(port)],
                              capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2, done.stderr
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, done.stderr  # one line, no URL of the other server, no uvicorn traceback
    assert str(port) in lines[0] and "--port" in lines[0] and "in use" in lines[0]
    assert "http://" not in done.stderr and "Errno" not in done.stderr
