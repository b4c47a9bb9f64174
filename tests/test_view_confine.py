"""Attacks on `taskbench view` by a hostile run directory: every file a run names or links to must be a regular file
inside that run directory (resolved), and the gold only a bundled dataset, a `--data` directory or one inside the
run, whatever the run's own files say. Each test plants a secret outside the run and checks that no answer of the
viewer carries it, that nothing hangs on a FIFO, and that no program a run names is started."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from view_fixture import make_runs

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from taskbench.dataset.jsonio import read_json, write_json  # noqa: E402
from taskbench.report.review.app import create_app  # noqa: E402
from taskbench.report.view.index import ViewIndex, run_slug  # noqa: E402

SECRET = "SECRET-0f3a9c-not-for-the-browser"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("confine"))


def copy_run(made: dict[str, Path], tmp: Path) -> Path:
    run = tmp / "runs" / "r1"
    shutil.copytree(made["run"], run, symlinks=True)
    return run


def secret_predictions(tmp: Path, made: dict[str, Path]) -> Path:
    """A predictions-shaped file outside the run whose every line carries the secret (ids of the gold, so a
    viewer that reads it shows it)."""
    src = made["run"] / "predictions" / "mm" / "mock_other.jsonl"
    out = tmp / "outside" / "secret.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        rec["raw"] = SECRET
        rec["user_request"] = SECRET
        lines.append(json.dumps(rec))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def client(root: Path, data: dict[str, Path] | None = None) -> TestClient:
    return TestClient(create_app(None, reviewer="ana", view=ViewIndex([root], data=data)))


def everything(c: TestClient) -> str:
    """Every answer the viewer gives about every run: lists, run pages, samples and each sample, compare,
    episodes and trajectories, generation, reports."""
    out = [c.get("/api/view/runs").text, c.get("/api/view/board").text]
    for r in c.get("/api/view/runs").json()["runs"]:
        rid = r["id"]
        run = c.get(f"/api/view/run/{rid}")
        out += [run.text, c.get(f"/view/report/{rid}").text]
        if r["kind"] == "agents":
            eps = c.get(f"/api/view/episodes/{rid}").json().get("episodes", [])
            out += [c.get(f"/api/view/trajectory/{rid}", params={"id": e["id"]}).text for e in eps]
        if r["kind"] == "generate":
            out.append(c.get(f"/api/view/generation/{rid}").text)
        for e in run.json().get("entries_detail", []):
            page = c.get(f"/api/view/samples/{rid}", params={"entry": e["key"], "limit": 200})
            out.append(page.text)
            for row in page.json().get("rows", []):
                out.append(c.get(f"/api/view/sample/{rid}", params={"entry": e["key"], "id": row["id"]}).text)
    return "\n".join(out)


def unblock(fifos: list[Path], t: threading.Thread) -> None:
    """Let a reader blocked on opening a FIFO go (a writer that opens and closes it), so a failing test ends."""
    for _ in range(50):
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        t.join(0.2)
        if not t.is_alive():
            return


def rewrite_log(run: Path, change) -> None:  # noqa: ANN001
    log = read_json(run / "run_log.json")
    for e in log["entries"]:
        change(e)
    write_json(run / "run_log.json", log)


def test_a_predictions_path_with_dotdot_or_absolute_is_not_followed(made, tmp_path):
    run = copy_run(made, tmp_path)
    secret = secret_predictions(tmp_path, made)
    rel = os.path.relpath(secret, run)
    assert rel.startswith("..")
    rewrite_log(run, lambda e: e.update(predictions_path=rel if e["model"] == "mock/echo" else str(secret)))
    c = client(tmp_path / "runs", data={"": made["data"]})
    text = everything(c)
    assert SECRET not in text
    run_page = c.get(f"/api/view/run/{run_slug(run)}").json()
    assert any("outside the run directory" in p for p in run_page["problems"])


def test_metrics_path_outside_is_not_read(made, tmp_path):
    run = copy_run(made, tmp_path)
    outside = tmp_path / "outside" / "metrics.json"
    outside.parent.mkdir(parents=True)
    doc = read_json(made["run"] / "metrics" / "mm" / "mock_echo.json")
    for err in doc["strict"]["errors"]:
        err["labels"] = [SECRET]
    write_json(outside, doc)
    rewrite_log(run, lambda e: e.update(metrics_path=os.path.relpath(outside, run)))
    assert SECRET not in everything(client(tmp_path / "runs", data={"": made["data"]}))


def test_a_linked_report_or_predictions_file_is_not_served(made, tmp_path):
    run = copy_run(made, tmp_path)
    secret = secret_predictions(tmp_path, made)
    (run / "report.html").unlink()
    (run / "report.html").symlink_to(secret)
    preds = run / "predictions" / "mm" / "mock_echo.jsonl"
    preds.unlink()
    preds.symlink_to(secret)
    c = client(tmp_path / "runs", data={"": made["data"]})
    r = c.get(f"/view/report/{run_slug(run)}")
    assert r.status_code == 404 and SECRET not in r.text
    assert SECRET not in everything(c)
    # a link that stays inside the run directory is followed (resolved, it is the run's own file)
    (run / "report.html").unlink()
    (run / "report.html").symlink_to(run / "report.md")
    assert c.get(f"/view/report/{run_slug(run)}").status_code == 200


def test_a_linked_run_log_and_a_linked_folder_are_not_read(made, tmp_path):
    outside = tmp_path / "outside" / "other"
    shutil.copytree(made["run"], outside)
    log = read_json(outside / "run_log.json")
    log["passes"][0]["error"] = SECRET  # shown on the run page of whichever run this log is read as
    write_json(outside / "run_log.json", log)
    run = copy_run(made, tmp_path)
    (run / "run_log.json").unlink()
    (run / "run_log.json").symlink_to(outside / "run_log.json")
    (tmp_path / "runs" / "elsewhere").symlink_to(outside, target_is_directory=True)  # a folder link out of the tree
    c = client(tmp_path / "runs", data={"": made["data"]})
    assert SECRET not in everything(c)


def test_a_fifo_named_by_a_run_does_not_hang_the_viewer(made, tmp_path):
    run = copy_run(made, tmp_path)
    (run / "report.html").unlink()
    os.mkfifo(run / "report.html")
    os.mkfifo(tmp_path / "fifo.jsonl")
    rewrite_log(run, lambda e: e.update(predictions_path=str(tmp_path / "fifo.jsonl")))
    (run / "predictions" / "mm" / "mock_other.jsonl").unlink()
    os.mkfifo(run / "predictions" / "mm" / "mock_other.jsonl")
    done: list[str] = []

    def visit() -> None:
        done.append(everything(client(tmp_path / "runs", data={"": made["data"]})))

    t = threading.Thread(target=visit, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        unblock([run / "report.html", run / "predictions" / "mm" / "mock_other.jsonl", tmp_path / "fifo.jsonl"], t)
        pytest.fail("the viewer hung on a FIFO")
    assert done


def test_gold_outside_the_run_is_read_only_when_given_with_data(made, tmp_path):
    run = copy_run(made, tmp_path)
    gold = tmp_path / "outside" / "gold"
    shutil.copytree(made["data"], gold)
    lines = (gold / "data.json").read_text(encoding="utf-8").splitlines()
    recs = [json.loads(x) for x in lines]
    for rec in recs:
        rec["user_request"] = SECRET
    (gold / "data.json").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    rewrite_log(run, lambda e: e.update(data_path=str(gold)))
    c = client(tmp_path / "runs")
    assert SECRET not in everything(c)
    problems = c.get(f"/api/view/run/{run_slug(run)}").json()["problems"]
    assert any("--data" in p and str(gold) in p for p in problems)
    # the user names it: then it is read
    assert SECRET in everything(client(tmp_path / "runs", data={"": gold}))


def test_an_evaluate_header_starts_no_program_and_names_no_file_outside(made, tmp_path):
    ev = tmp_path / "runs" / "ev"
    ev.mkdir(parents=True)
    shutil.copy(made["run"] / "metrics" / "mm" / "mock_echo.json", ev / "echo.json")
    secret = secret_predictions(tmp_path, made)
    marker = tmp_path / "started"
    header = {"schema_version": 1, "kind": "evaluate", "config": {
        "data": f"mcp:sh -c 'touch {marker}'", "predictions": str(secret), "model": "mock/echo", "dataset": "mm"}}
    write_json(ev / "echo.json.header.json", header)
    c = client(tmp_path / "runs")
    text = everything(c)
    assert not marker.exists(), "a program named by a run header was started"
    assert SECRET not in text
    (run,) = [r for r in c.get("/api/view/runs").json()["runs"] if r["kind"] == "eval"]
    problems = c.get(f"/api/view/run/{run['id']}").json()["problems"]
    assert any("outside" in p for p in problems) and any("MCP" in p for p in problems)


def test_agents_and_generation_files_linked_out_are_not_read(made, tmp_path):
    run = copy_run(made, tmp_path)
    secret = secret_predictions(tmp_path, made)
    traj = next((run / "agents" / "trajectories").rglob("*.jsonl"))
    traj.unlink()
    traj.symlink_to(secret)
    gen = run / "generated" / "data_error.json"
    gen.unlink()
    gen.symlink_to(secret)
    assert SECRET not in everything(client(tmp_path / "runs", data={"": made["data"]}))
    eps = run / "agents" / "episodes.jsonl"
    eps.unlink()
    eps.symlink_to(secret)
    assert SECRET not in everything(client(tmp_path / "runs", data={"": made["data"]}))


def test_a_writer_marker_cannot_make_the_viewer_read_a_file_outside(made, tmp_path):
    run = copy_run(made, tmp_path)
    log = read_json(run / "run_log.json")
    log["status"] = "running"
    write_json(run / "run_log.json", log)
    crash = tmp_path / "outside" / "crash.log"
    crash.parent.mkdir(parents=True)
    crash.write_text("Fatal Python error: Segmentation fault\n", encoding="utf-8")
    os.mkfifo(tmp_path / "outside" / "fifo.log")
    for target in (crash, tmp_path / "outside" / "fifo.log"):
        (run / ".taskbench.writer.json").write_text(json.dumps(
            {"pid": 1, "host": "h", "command": ["x"], "started": "t", "crash_log": str(target)}), encoding="utf-8")
        done: list[str] = []

        def death(done: list[str] = done) -> None:
            done.append(ViewIndex([tmp_path / "runs"]).runs[run_slug(run)].death or "")

        t = threading.Thread(target=death, daemon=True)
        t.start()
        t.join(30)
        if t.is_alive():
            unblock([tmp_path / "outside" / "fifo.log"], t)
        assert done, "the viewer hung on a crash log that is a FIFO"
        assert "SIGSEGV" not in done[0]  # the crash log outside taskbench's crash folder was not read


def test_review_is_not_opened_on_a_run_whose_files_link_out(made, tmp_path):
    run = copy_run(made, tmp_path)
    target = tmp_path / "outside" / "notes.txt"
    target.parent.mkdir(parents=True)
    target.write_text("mine\n", encoding="utf-8")
    (run / "generated" / "review_log.jsonl").symlink_to(target)
    c = client(tmp_path / "runs", data={"": made["data"]})
    gen = next(r["id"] for r in c.get("/api/view/runs").json()["runs"] if r["kind"] == "generate")
    r = c.post(f"/api/view/review/{gen}", json={})
    assert r.status_code == 400 and "symbolic link" in r.json()["detail"]
    assert target.read_text(encoding="utf-8") == "mine\n"
