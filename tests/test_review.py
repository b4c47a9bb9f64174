"""`taskbench review`: the session over a generated dataset, the append-only log, edits checked by the rule
critic, the resolution of reviewers' decisions, the export (loaded by predict and evaluate), the HTTP app on a
real loopback server with its token and Host checks, and the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from cli_runner import run
from review_fixture import LoopbackServer, make_review_dir, records
from taskbench.errors import InputError
from taskbench.graph.render import task_graph_svgs
from taskbench.report.review.export import export_review, resolve, verification_table
from taskbench.report.review.log import Decision, ReviewLog, record_hash, utc_now
from taskbench.report.review.session import ReviewSession, infer_type, suggest_fixes


@pytest.fixture
def rdir(tmp_path: Path) -> Path:
    return make_review_dir(tmp_path / "mm")


def edit_of(item) -> dict:  # noqa: ANN001
    r = item.record
    return {k: json.loads(json.dumps(r[k])) for k in ("user_request", "task_steps", "task_nodes", "task_links")}


def first(session: ReviewSession, kind: str, n: int | None = None):  # noqa: ANN201
    return next(i for i in session.items.values() if i.sample.type == kind and (n is None or i.sample.n_tools == n)
                and not i.issues and not i.sampled_issues)


# ------------------------------------------------------------------------------------------------ session


def test_session_loads_messy_data_and_reports_what_it_skips(rdir: Path):
    s = ReviewSession(rdir)
    assert len(s.items) == 28 and all(i.origin == "data" for i in s.items.values())
    assert len(s.problems) == 2
    assert "data.json:29: invalid JSON" in s.problems[0]
    assert "data.json:30: sample 'broken-2': task_nodes" in s.problems[1]
    with_rejected = ReviewSession(rdir, include_rejected=True)
    assert len(with_rejected.items) == 30
    assert sum(i.origin == "rejected" for i in with_rejected.items.values()) == 2
    assert any("data_error.json:3: sample 'bad-1'" in p for p in with_rejected.problems)
    index = s.index()
    entries = {e["id"]: e for e in index["items"]}
    assert sum(e["llm"] is False for e in entries.values()) == 4
    assert sum(e["dup"] is not None for e in entries.values()) == 1
    assert sum(e["sampled"] for e in entries.values()) == 1
    assert index["n_problems"] == 2 and index["dataset"]["dependency"] == "resource"


def test_the_request_a_model_is_shown_is_the_one_reviewed(rdir: Path):
    lines = (rdir / "user_requests.json").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["user_request"] = "The rewritten request of user_requests.json."
    lines[0] = json.dumps(rec)
    (rdir / "user_requests.json").write_text("\n".join(lines) + "\n")
    s = ReviewSession(rdir)
    assert s.items[rec["id"]].sample.user_request == "The rewritten request of user_requests.json."
    assert s.detail(rec["id"])["record"]["user_request"] == "The rewritten request of user_requests.json."


def test_a_dataset_without_samples_is_an_input_error(tmp_path: Path, rdir: Path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "tool_desc.json").write_text((rdir / "tool_desc.json").read_text())
    with pytest.raises(InputError, match="no data.json to review"):
        ReviewSession(tmp_path / "empty")


def test_detail_draws_both_graphs_and_marks_the_difference(rdir: Path):
    s = ReviewSession(rdir)
    odd = next(i for i in s.items.values() if i.sampled_issues)
    d = s.detail(odd.sample.id)
    assert d["svg"].startswith("<svg") and d["sampled_svg"].startswith("<svg")
    assert "tg-missing" in d["sampled_svg"] and "tg-missing" not in d["svg"]
    assert d["sampled_issues"][0]["code"] == "sampled_nodes_mismatch"
    dup = next(i for i in s.items.values() if i.sample.duplicate_of)
    d = s.detail(dup.sample.id)
    assert d["duplicate"]["id"] == dup.sample.duplicate_of
    assert d["duplicate"]["user_request"] == s.items[dup.sample.duplicate_of].sample.user_request


def test_task_graph_svgs_shared_layout_escaping_cycles_and_duplicates():
    main, sampled = task_graph_svgs(["A <x>", "B", "C"], [("A <x>", "B"), ("B", "C")],
                                    ["A <x>", "B", "D"], [("A <x>", "B"), ("B", "D")])
    assert "A &lt;x&gt;" in main and "<x>" not in main
    assert main.count('class="tg-node tg-extra"') == 1 and main.count('class="tg-edge tg-extra"') == 1
    assert sampled is not None and sampled.count('class="tg-node tg-missing"') == 1
    assert sampled.count('class="tg-edge tg-missing"') == 1
    # same viewBox (one layout for both panels), so the same tool sits at the same place
    assert main.split('viewBox="')[1].split('"')[0] == sampled.split('viewBox="')[1].split('"')[0]
    cyc, none = task_graph_svgs(["A", "B", "A"], [("A", "B"), ("B", "A")])
    assert none is None and cyc.count('class="tg-node"') == 3 and cyc.count("tg-edge") == 2


def test_infer_type_and_suggested_fix_kinds():
    assert infer_type(1, set()) == "single"
    assert infer_type(3, {("a", "b"), ("b", "c")}) == "chain"
    assert infer_type(3, {("a", "b"), ("a", "c")}) == "dag"
    assert infer_type(3, {("a", "b"), ("b", "a")}) == "dag"
    before = {"user_request": "Please transcirbe example.wav and summarise it.", "task_steps": ["s1", "s2"],
              "task_nodes": [{"task": "A"}], "task_links": [], "type": "chain"}
    typo = dict(before, user_request="Please transcribe example.wav and summarise it.")
    assert suggest_fixes(before, typo) == ["syntax"]
    rewrite = dict(before, user_request="I recorded a lecture as example.wav; write a short summary of what was said.")
    assert suggest_fixes(before, rewrite) == ["instruction"]
    graph = dict(typo, task_nodes=[{"task": "B"}])
    assert suggest_fixes(before, graph) == ["syntax", "graph"]
    assert suggest_fixes(before, dict(before, task_steps=["s1"])) == ["graph"]


def test_preview_runs_the_rule_critic_on_the_edit(rdir: Path):
    s = ReviewSession(rdir)
    item = first(s, "chain", 3)
    edit = edit_of(item)
    original = edit["task_nodes"][1]["task"]
    edit["task_nodes"][1]["task"] = original[:-1]
    p = s.preview(item.sample.id, edit)
    assert p.error is None
    codes = {i.code for i in p.issues}
    assert "unknown_tool" in codes and any(i.node == 1 for i in p.issues)
    assert {"op": "replace", "path": "/task_nodes/1/task", "value": original[:-1]} in p.diff
    assert "tg-extra" in (p.svg or "") and p.suggested == ["graph"]
    edit["task_nodes"][1]["task"] = original
    p = s.preview(item.sample.id, edit)
    assert p.issues == [] and p.diff == []
    assert s.preview(item.sample.id, {"task_nodes": "nope"}).error
    assert "unknown fields" in (s.preview(item.sample.id, {"seed": 3}).error or "")


def test_preview_derives_links_and_type_from_an_edit(rdir: Path):
    s = ReviewSession(rdir)
    item = first(s, "chain", 3)
    edit = edit_of(item)
    # drop the last tool: links follow the <node-j> references, the type is inferred, n_tools follows
    del edit["task_nodes"][-1]
    del edit["task_steps"][-1]
    p = s.preview(item.sample.id, {**edit, "links_from_refs": True, "type": "auto"})
    assert p.error is None and p.record is not None
    assert p.record["n_tools"] == 2 and p.record["type"] == "chain" and len(p.record["task_links"]) == 1
    assert {i.code for i in p.sampled_issues} == {"sampled_nodes_mismatch", "sampled_links_mismatch"}
    assert p.issues == []


def test_temporal_edits_are_checked_against_parameters(tmp_path: Path):
    s = ReviewSession(make_review_dir(tmp_path / "dl", "dailylifeapis"))
    assert s.dependency == "temporal"
    item = next(i for i in s.items.values() if i.sample.type == "single" and not i.issues)
    edit = edit_of(item)
    name = edit["task_nodes"][0]["arguments"][0]["name"]
    edit["task_nodes"][0]["arguments"][0]["name"] = "no_such_parameter"
    p = s.preview(item.sample.id, edit)
    assert {"unknown_param", "missing_param"} <= {i.code for i in p.issues}
    edit["task_nodes"][0]["arguments"][0]["name"] = name[:-1]  # a typo: the hint names the parameter
    p = s.preview(item.sample.id, edit)
    hints = [s.issue_json(i, p.sample)["hint"] for i in p.issues if i.code == "unknown_param"]
    assert hints == [name]


# ------------------------------------------------------------------------------------------------ the log


def test_decide_validates_and_appends_one_line_each(rdir: Path):
    s = ReviewSession(rdir)
    a, b, c = list(s.items)[:3]
    s.decide(a, "ana", "correct")
    s.decide(b, "ana", "discard", reasons=["impractical_instruction"], note="asks for the impossible")
    item = s.items[c]
    edit = edit_of(item)
    edit["user_request"] = item.sample.user_request.replace(".", "!", 1) if "." in item.sample.user_request \
        else item.sample.user_request + "!"
    d = s.decide(c, "ana", "fix", edit=edit)
    assert d.fixes == ["syntax"] and d.diff and d.base == item.base
    view = s.detail(c, "ana")
    assert view["fixed"]["record"]["user_request"] == edit["user_request"]
    assert view["record"]["user_request"] == item.sample.user_request and view["fixed"]["svg"].startswith("<svg")
    assert s.detail(c, "bo")["fixed"] is None and s.detail(a, "ana")["fixed"] is None
    lines = records(s.log.path)
    assert [x["outcome"] for x in lines] == ["correct", "discard", "fix"]
    assert lines[1]["reasons"] == ["impractical_instruction"] and lines[1]["note"] == "asks for the impossible"
    assert all(x["reviewer"] == "ana" and x["time"].endswith("Z") for x in lines)
    for bad, match in [
        (dict(outcome="fix", edit=edit_of(item)), "changes nothing"),
        (dict(outcome="maybe"), "unknown outcome"),
        (dict(outcome="correct", edit=edit), "only a fix"),
        (dict(outcome="discard", reasons=["typo"]), "unknown reasons"),
        (dict(outcome="correct", base="0" * 64), "changed since"),
        (dict(outcome="fix", edit={"task_nodes": 3}), "not a valid sample"),
    ]:
        with pytest.raises(InputError, match=match):
            s.decide(c, "ana", **bad)
    with pytest.raises(InputError, match="reviewer"):
        s.decide(c, " ", "correct")
    assert len(records(s.log.path)) == 3


def test_log_survives_torn_and_bad_lines(tmp_path: Path):
    path = tmp_path / "review_log.jsonl"
    log = ReviewLog(path)
    mk = lambda i, o="correct": Decision(id=str(i), reviewer="ana", time=utc_now(), outcome=o, base="h")  # noqa: E731
    log.append(mk(1))
    with path.open("a") as fh:
        fh.write('{"not": "a decision"}\n')
        fh.write("garbage\n")
        fh.write('{"id": "2", "reviewer": "ana", "ti')  # a crash mid-write
    again = ReviewLog(path)
    assert [d.id for d in again.decisions] == ["1"]
    assert [p.line for p in again.problems] == [2, 3]
    again.append(mk(3, "discard"))  # cuts the torn tail first
    text = path.read_text()
    assert '{"id": "2"' not in text and text.endswith("\n")
    assert [d.id for d in ReviewLog(path).decisions] == ["1", "3"]
    log.refresh()  # the first reader sees what the second appended
    assert [d.id for d in log.decisions] == ["1", "3"]
    assert log.latest() == {"1": {"ana": log.decisions[0]}, "3": {"ana": log.decisions[1]}}


def test_log_appends_from_two_processes_interleave_whole_lines(tmp_path: Path):
    path = tmp_path / "review_log.jsonl"
    script = (
        "import sys\n"
        "from taskbench.report.review.log import Decision, ReviewLog, utc_now\n"
        "log = ReviewLog(sys.argv[1])\n"
        "for i in range(40):\n"
        "    log.append(Decision(id=str(i), reviewer=sys.argv[2], time=utc_now(), outcome='fix', base='h',\n"
        "                        note='x' * 3000, diff=[{'op': 'add', 'path': '/note', 'value': 'y' * 2000}]))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), name]) for name in ("ana", "bo")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    log = ReviewLog(path)
    assert log.problems == [] and len(log.decisions) == 80
    assert log.reviewers() == ["ana", "bo"]


# ------------------------------------------------------------------------------------------------ resolution


def test_resolution_rules(rdir: Path):
    s = ReviewSession(rdir)
    ids = list(s.items)
    fix_item = s.items[ids[3]]
    fix_edit = edit_of(fix_item)
    fix_edit["user_request"] = "A completely different request that a reviewer wrote from scratch for this."
    plan = {
        ids[0]: [("ana", "correct"), ("bo", "correct")],
        ids[1]: [("ana", "correct"), ("bo", "discard"), ("cy", "discard")],  # majority
        ids[2]: [("ana", "correct"), ("bo", "discard")],  # tie -> stricter
        ids[3]: [("ana", "correct"), ("bo", "fix")],  # tie -> fix beats correct
        ids[4]: [("ana", "discard"), ("ana", "correct")],  # a reviewer's latest decision counts
        ids[5]: [("ana", "discard"), ("bo", "correct"), ("cy", "correct")],  # adjudicator ana
    }
    for sid, votes in plan.items():
        for reviewer, outcome in votes:
            s.decide(sid, reviewer, outcome, edit=fix_edit if outcome == "fix" else None)
    res = resolve(s)
    assert (res[ids[0]].outcome, res[ids[0]].rule, res[ids[0]].conflict) == ("correct", "unanimous", False)
    assert (res[ids[1]].outcome, res[ids[1]].rule, res[ids[1]].conflict) == ("discard", "majority", True)
    assert (res[ids[2]].outcome, res[ids[2]].rule) == ("discard", "tie -> stricter")
    assert (res[ids[3]].outcome, res[ids[3]].fixes, res[ids[3]].decided_by) == ("fix", ["instruction"], "bo")
    assert (res[ids[4]].outcome, res[ids[4]].rule) == ("correct", "single")
    assert res[ids[5]].outcome == "correct"
    assert resolve(s, adjudicator="ana")[ids[5]].outcome == "discard"
    assert res[ids[6]].outcome == "unreviewed"
    table = verification_table(res)["table"]["overall"]
    assert table["reviewed"] == 6 and table["correct"]["n"] == 3 and table["discard"]["n"] == 2
    assert table["fixed"]["n"] == 1 and table["fixed_instruction"]["pct"] == pytest.approx(100 / 6, abs=0.01)


def test_decisions_on_another_version_are_stale(rdir: Path):
    s = ReviewSession(rdir)
    sid = list(s.items)[0]
    s.decide(sid, "ana", "discard")
    lines = (rdir / "data.json").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["task_steps"][0] += " (regenerated)"
    lines[0] = json.dumps(rec)
    (rdir / "data.json").write_text("\n".join(lines) + "\n")
    s2 = ReviewSession(rdir)
    assert s2.items[sid].base != s.items[sid].base
    r = resolve(s2)[sid]
    assert r.outcome == "unreviewed" and r.stale == ["ana"]
    assert s2.entry(s2.items[sid])["stale"] == ["ana"] and s2.entry(s2.items[sid])["dec"] == {}
    assert record_hash(s2.items[sid].record) == s2.items[sid].base


# ------------------------------------------------------------------------------------------------ export


def _review_three(s: ReviewSession) -> tuple[str, str, str, dict]:
    correct = first(s, "single").sample.id
    discard = first(s, "dag").sample.id
    item = first(s, "chain", 3)
    edit = edit_of(item)
    edit["task_nodes"][0]["arguments"] = ["https://example.com/fixed.txt"]
    s.decide(correct, "ana", "correct")
    s.decide(discard, "ana", "discard", reasons=["incorrect_dependency"])
    s.decide(item.sample.id, "ana", "fix", edit=edit)
    s.decide(correct, "bo", "correct")
    s.decide(discard, "bo", "correct")
    return correct, discard, item.sample.id, edit


def test_export_writes_the_verified_dataset_and_the_table(rdir: Path, tmp_path: Path, capsys):
    s = ReviewSession(rdir)
    correct, discard, fixed, edit = _review_three(s)
    out = tmp_path / "verified"
    report = export_review(s, out)
    assert report.exported == 2 and report.counts == {"correct": 1, "discard": 1, "fix": 1, "unreviewed": 25}
    assert report.conflicts == 1 and report.stale == 0 and report.failed_fixes == []
    data = {r["id"]: r for r in records(out / "data.json")}
    assert set(data) == {correct, fixed}
    assert data[fixed]["task_nodes"][0]["arguments"] == ["https://example.com/fixed.txt"]
    assert data[correct] == s.items[correct].record
    assert {r["id"] for r in records(out / "user_requests.json")} == {correct, fixed}
    align = json.loads((out / "alignment_ids.json").read_text())
    assert align["human_alignment_id"]["single"] == [correct] and align["human_alignment_id"]["chain"] == [fixed]
    assert fixed in align["both_node_link_alignment_id"]["chain"] and correct in align["all_alignment_id"]["single"]
    doc = json.loads((out / "human_verification.json").read_text())
    overall = doc["table"]["overall"]
    assert overall["reviewed"] == 3 and overall["unreviewed"] == 25
    assert overall["correct"] == {"n": 1, "pct": 33.33} and overall["fixed_graph"] == {"n": 1, "pct": 33.33}
    assert doc["table"]["dag"]["discard"] == {"n": 1, "pct": 100.0}
    assert doc["reasons"]["incorrect_dependency"] == 1
    assert doc["generated"] == {"n": 31, "kept": 2, "kept_pct": 6.45}  # every attempt of data_raw.json
    pair = doc["agreement"]["pairs"][0]
    assert (pair["a"], pair["b"], pair["n"], pair["agreement"]) == ("ana", "bo", 2, 0.5)
    assert doc["conflicts"][0]["id"] == discard
    md = (out / "human_verification.md").read_text()
    assert "| overall | 3 | 1 (33.33%) | 1 (33.33%) | 1 (33.33%) | 0 (0.00%) | 0 (0.00%) | 1 (33.33%) |" in md
    assert "Cohen's kappa" in md and "| ana | bo | 2 | 0.500 |" in md
    assert len(records(out / "review_resolution.jsonl")) == 28
    # the exported dataset is an ordinary dataset: predict and evaluate take it unchanged
    preds = tmp_path / "preds.jsonl"
    code, _, err = run(capsys, "predict", "--data", str(out), "--model", "mock/echo", "-o", str(preds))
    assert code == 0, err
    assert {r["id"] for r in records(preds)} == {correct, fixed}
    metrics = tmp_path / "m.json"
    code, _, err = run(capsys, "evaluate", "--data", str(out), "--predictions", str(preds), "--bootstrap", "20",
                       "-o", str(metrics))
    assert code == 0, err
    assert json.loads(metrics.read_text())["groups"]["overall_overall"]["n_samples"] == 2
    code, _, err = run(capsys, "evaluate", "--data", str(out), "--predictions", str(preds), "--compat",
                       "--alignment", "both_node_link", "-o", str(tmp_path / "c.json"))
    assert code == 0, err


def test_export_keep_unreviewed_and_refusals(rdir: Path, tmp_path: Path):
    s = ReviewSession(rdir)
    with pytest.raises(InputError, match="no decisions"):
        export_review(s, tmp_path / "x")
    _review_three(s)
    with pytest.raises(InputError, match="overwrite"):
        export_review(s, rdir)
    report = export_review(s, keep_unreviewed=True)
    assert report.out == str(rdir / "verified") and report.exported == 27


def test_cli_export_and_errors(rdir: Path, tmp_path: Path, capsys):
    code, _, err = run(capsys, "review", str(rdir), "--export", "--out", str(tmp_path / "v"))
    assert code == 2 and "no decisions" in err and "Traceback" not in err
    _review_three(ReviewSession(rdir))
    code, out, err = run(capsys, "review", str(rdir), "--export", "--out", str(tmp_path / "v"), "--adjudicator", "bo")
    assert code == 0, err
    # bo, the adjudicator, found the discarded sample correct: three are kept
    assert "3 of 28 samples exported (2 correct, 1 fixed, 0 discarded, 25 unreviewed)" in out
    assert "skipped" in err and "data.json:29" in err  # the broken lines are reported
    assert (tmp_path / "v" / "human_verification.md").is_file()
    code, _, err = run(capsys, "review", str(rdir), "--out", str(tmp_path / "v"))
    assert code == 2 and "go with --export" in err
    code, _, err = run(capsys, "review", str(rdir), "--host", "0.0.0.0")
    assert code == 2 and "--token" in err and "Traceback" not in err
    code, out, _ = run(capsys, "review", "--help")
    assert code == 0 and "Examples" in out and "--export" in out and "review_log.jsonl" in out


# ------------------------------------------------------------------------------------------------ HTTP


def test_http_api_on_a_real_loopback_server(rdir: Path):
    from taskbench.report.review.app import LOOPBACK_HOSTS, create_app

    s = ReviewSession(rdir)
    with LoopbackServer(create_app(s, reviewer="ana", allowed_hosts=LOOPBACK_HOSTS)) as srv, \
            httpx.Client(base_url=srv.url, timeout=30) as client:
        page = client.get("/")
        assert page.status_code == 200 and "taskbench" in page.text and "/*JS*/" not in page.text
        assert "<script src" not in page.text and "<link rel=\"stylesheet\"" not in page.text
        index = client.get("/api/index").json()
        assert len(index["items"]) == 28
        item = first(s, "chain", 3)
        edit = edit_of(item)
        tool0 = edit["task_nodes"][0]["task"]
        edit["task_nodes"][0]["task"] = tool0.lower().replace(" ", "")
        p = client.post("/api/preview", json={"id": item.sample.id, "edit": edit}).json()
        unknown = [i for i in p["issues"] if i["code"] == "unknown_tool"]
        assert unknown and unknown[0]["hint"] == tool0 and p["svg"].startswith("<svg")
        edit["task_nodes"][0]["task"] = "Zzzz Qqqq"
        p = client.post("/api/preview", json={"id": item.sample.id, "edit": edit}).json()
        assert [i.get("hint") for i in p["issues"] if i["code"] == "unknown_tool"] == [None]
        r = client.post("/api/decide", json={"id": item.sample.id, "outcome": "fix", "edit": edit,
                                             "fixes": ["graph"], "base": item.base})
        assert r.status_code == 200 and r.json()["entry"]["dec"] == {"ana": "fix"}
        assert r.json()["decision"]["issues"]  # saved with the issue it still has, and says so
        r = client.post("/api/decide", json={"id": item.sample.id, "outcome": "correct", "reviewer": "bo"})
        assert r.json()["entry"]["dec"] == {"ana": "fix", "bo": "correct"}
        bad = client.post("/api/decide", json={"id": item.sample.id, "outcome": "perhaps"})
        assert bad.status_code == 400 and "unknown outcome" in bad.json()["detail"]
        assert client.get("/api/sample/nope").status_code == 404
        detail = client.get(f"/api/sample/{item.sample.id}").json()
        assert set(detail["decisions"]) == {"ana", "bo"}
        agreement = client.get("/api/agreement").json()
        assert agreement["pairs"][0]["n"] == 1 and agreement["reviewers"]["bo"]["correct"] == 1
        lib = client.get("/api/library").json()
        assert lib["dependency"] == "resource" and len(lib["tools"]) == len(s.library)
        # a form post (not JSON) is refused: no cross-site form can decide
        assert client.post("/api/decide", content=b"id=1", headers={"Content-Type": "text/plain"}).status_code == 415
        # a page on another host name (DNS rebinding) cannot reach the loopback server
        assert client.get("/api/index", headers={"Host": "evil.example:8765"}).status_code == 421
        assert client.get("/api/index", headers={"Host": "localhost:1"}).status_code == 200


def test_token_is_required_on_every_request(rdir: Path):
    from taskbench.report.review.app import COOKIE, create_app

    s = ReviewSession(rdir)
    token = "s3cret-token"
    with LoopbackServer(create_app(s, reviewer="ana", token=token)) as srv:
        with httpx.Client(base_url=srv.url, timeout=30) as client:
            for path in ("/", "/api/index", "/api/library", f"/api/sample/{next(iter(s.items))}", "/api/agreement"):
                assert client.get(path).status_code == 401, path
            assert client.post("/api/decide", json={"id": next(iter(s.items)), "outcome": "correct"}).status_code == 401
            assert client.get("/api/index", headers={"Authorization": "Bearer wrong"}).status_code == 401
            assert client.get("/api/index", params={"token": "s3cret"}).status_code == 401
            assert client.get("/api/index", headers={"Authorization": f"Bearer {token}"}).status_code == 200
            assert client.get("/api/index", headers={"X-Taskbench-Token": token}).status_code == 200
            assert client.get("/api/index", params={"token": token}).status_code == 200
            assert not s.log.path.exists()  # nothing got through
        with httpx.Client(base_url=srv.url, timeout=30) as browser:
            r = browser.get("/", params={"token": token})
            assert r.status_code == 303 and r.headers["location"] == "/"
            cookie = r.headers["set-cookie"]
            assert f"{COOKIE}={token}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
            assert browser.get("/").status_code == 200  # the cookie is sent from now on
            ok = browser.post("/api/decide", json={"id": next(iter(s.items)), "outcome": "correct"})
            assert ok.status_code == 200
    assert len(records(s.log.path)) == 1


def test_cli_serves_the_page_on_loopback(rdir: Path):
    import socket
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "taskbench", "review", str(rdir), "--reviewer", "cy",
                             "--port", str(port)], stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                r = httpx.get(url + "/api/index", timeout=5)
                break
            except httpx.TransportError:
                if proc.poll() is not None:
                    raise AssertionError(proc.communicate()[1]) from None
                time.sleep(0.05)
        assert r.status_code == 200 and len(r.json()["items"]) == 28
        assert 'reviewer": "cy"' in httpx.get(url + "/").text  # --reviewer is the page's default name
        assert httpx.get(url + "/api/index", headers={"Host": "attacker.example"}).status_code == 421
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert f"open http://127.0.0.1:{port}/" in err and "28 samples" in err


def test_a_killed_writer_loses_at_most_the_line_it_was_writing(tmp_path: Path):
    import signal
    import time

    path = tmp_path / "review_log.jsonl"
    script = (
        "import sys\n"
        "from taskbench.report.review.log import Decision, ReviewLog, utc_now\n"
        "log = ReviewLog(sys.argv[1])\n"
        "i = 0\n"
        "while True:\n"
        "    log.append(Decision(id=str(i), reviewer='ana', time=utc_now(), outcome='fix', base='h',\n"
        "                        note='x' * 20000))\n"
        "    i += 1\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(path)])
    try:
        deadline = time.monotonic() + 60
        while (not path.exists() or path.stat().st_size < 200_000) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    log = ReviewLog(path)
    assert log.problems == [] and len(log.decisions) >= 5
    assert [d.id for d in log.decisions] == [str(i) for i in range(len(log.decisions))]
    log.append(Decision(id="after", reviewer="bo", time=utc_now(), outcome="correct", base="h"))
    again = ReviewLog(path)
    assert again.problems == [] and again.decisions[-1].id == "after"
    assert len(again.decisions) == len(log.decisions)


def _many_reviewers(s: ReviewSession, n: int) -> None:
    """``n`` reviewers, each deciding one sample (round-robin), written straight into the review log."""
    from taskbench.report.review.log import LOG_FILE, Decision

    items = list(s.items.values())
    lines = [Decision(id=items[i % len(items)].sample.id, reviewer=f"r{i:05d}", time="2026-01-01T00:00:00Z",
                      outcome="correct" if i % 3 else "discard", base=items[i % len(items)].base).to_line()
             for i in range(n)]
    with (s.root / LOG_FILE).open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))


def test_export_with_10000_reviewers_is_quick_and_bounded(rdir: Path, tmp_path: Path):
    """Issue 24.9: pairwise kappa over every pair of 10,000 reviewers (50 million pairs) hung the export."""
    import subprocess
    import sys
    import time

    _many_reviewers(ReviewSession(rdir), 10_000)
    out = tmp_path / "verified"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "taskbench", "review", str(rdir), "--export", "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - start < 60
    doc = json.loads((out / "human_verification.json").read_text())
    assert len(doc["agreement"]["reviewers"]) == 10_000
    assert 0 < len(doc["agreement"]["pairs"]) <= 1225  # pairs among the 50 most active reviewers at most
    assert doc["agreement"]["pairs_left_out"] > 0


def test_a_crash_before_the_table_leaves_no_half_export(rdir: Path, tmp_path: Path, monkeypatch):
    """The dataset used to be saved before the agreement table was computed: a crash or a kill there left an
    export with its data but without its table. Everything is computed first and the files land together."""
    s = ReviewSession(rdir)
    _review_three(s)
    out = tmp_path / "verified"

    def boom(self: ReviewSession) -> dict:
        raise MemoryError("the agreement table")

    monkeypatch.setattr(ReviewSession, "agreement", boom)
    with pytest.raises(MemoryError):
        export_review(s, out)
    assert not out.exists() or list(out.iterdir()) == []
