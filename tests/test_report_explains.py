"""Reports and the run's terminal output explain their numbers: a verdict, a small-n warning, a glossary (NED
lower is better), real next commands; report.html has no raw markdown and no empty header row; tables fit 80
and 100 columns without cutting a column to nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli_runner import run
from taskbench.predict.runner import PredictOptions
from taskbench.run import run_benchmark
from taskbench.run.report import STRICT_COMPAT, agents_title


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TASKBENCH_MODEL", raising=False)
    return tmp_path / "cache"


def test_reports_explain_the_numbers(tmp_path, cache_dir) -> None:
    run_dir = tmp_path / "run"
    run_benchmark(run_dir, models=["mock/echo", "mock/empty"], datasets=["multimedia"],
                  options=PredictOptions(limit=3), bootstrap=100, agents=["react"])
    md = (run_dir / "report.md").read_text()
    assert "**Verdict:** mock/" in md and "on multimedia" in md and "CIs overlap, so the order is not settled" in md
    assert "> **Warning:** Only 3 samples" in md and "[0, 100]" in md
    assert "## What the numbers mean" in md and "NED: normalized edit distance" in md and "LOWER is better" in md
    assert f"`taskbench agents show {run_dir / 'agents'}`" in md and f"open {run_dir / 'report.html'}" in md
    assert "## Agents (react)" in md and "ConAgents against" not in md
    page = (run_dir / "report.html").read_text()
    text = re.sub(r"<[^>]+>", "", page.split("<body>")[1])
    assert "`" not in text and "**" not in text  # markdown turned into HTML, not shown raw
    assert "<th></th><th></th>" not in page  # the Run table has no empty header row
    assert STRICT_COMPAT.replace("'", "&#x27;") in page or STRICT_COMPAT in text
    assert 'class="warning"' in page and "Verdict:" in page and "<dt>NED</dt>" in page
    assert f"<code>taskbench agents show {run_dir / 'agents'}</code>" in page


def test_verdict_names_the_leader_the_gap_and_whether_the_cis_settle_it() -> None:
    from taskbench.report.leaderboard import BoardEntry, build_board, small_n_warning, verdict

    def entry(model, v, ci):
        return BoardEntry(model=model, source="strict", path="", groups={"overall_overall": {"node_micro_f1": v}},
                          n={"overall_overall": 200}, ci={"overall_overall": {"node_micro_f1": ci}})

    board = build_board([entry("a", 0.5, (0.45, 0.55)), entry("b", 0.8, (0.75, 0.85))])
    line = verdict(board, "mm")
    assert line.startswith("b (80.00") and "leads on mm on n-F1, 30.00 points ahead of a" in line
    assert "do not overlap" in line
    board = build_board([entry("a", 0.5, (0.3, 0.7)), entry("b", 0.6, (0.4, 0.8))])
    assert "overlap, so the order is not settled" in verdict(board)
    assert small_n_warning(200) is None and "[0, 100]" in (small_n_warning(3) or "")


def test_agents_title_names_the_agents_run() -> None:
    assert agents_title(["react"]) == "Agents (react)"
    assert agents_title(["conagents-auto", "conagents-adaptive", "react"]) == "Agents (ConAgents against ReAct)"
    assert agents_title(["conagents-auto"]) == "Agents (conagents-auto)"


def _cells(line: str) -> list[str]:
    return line.strip()[1:-1].split("│") if line.strip().startswith("│") else []


@pytest.mark.parametrize("width", [80, 100])
def test_run_tables_fit_the_terminal_without_cutting_a_column(width, tmp_path, cache_dir, monkeypatch,
                                                               capsys) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    out_dir = tmp_path / "r"
    code, out, err = run(capsys, "run", "-m", "mock/echo", "-d", "huggingface", "-d", "dailylifeapis", "--limit",
                         "3", "--bootstrap", "50", "-q", "-o", str(out_dir), "--agents", "react")
    assert code == 0, err
    assert "…" not in out  # no name cut
    rows = [line for line in out.splitlines() if line.strip().startswith("│")]
    assert rows
    for line in rows:
        assert len(line) <= width, line
        assert all(c.strip() for c in _cells(line)), f"a column cut to nothing: {line}"
    for name in ("huggingface", "dailylifeapis", "mock/echo"):
        assert any(name in _cells(line)[i].strip() for line in rows for i in range(len(_cells(line)))), name
    if "not shown at" in out:
        assert f"not shown at {width} columns" in out
    assert "Verdict:" in out and "Warning: Only 3 samples" in out and "LOWER is better" in out
    assert f"taskbench agents show {out_dir / 'agents'}" in out and "Agents (react)" in out


def test_leaderboard_takes_run_directories_and_globs_grouped_by_dataset(tmp_path, cache_dir, monkeypatch,
                                                                       capsys) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    run_dir = tmp_path / "run"
    run_benchmark(run_dir, models=["mock/echo", "mock/empty"], datasets=["multimedia", "huggingface"],
                  options=PredictOptions(limit=3), bootstrap=0, plots=False)
    for args in ([str(run_dir)], [str(run_dir / "metrics" / "*" / "*.json")]):
        code, out, err = run(capsys, "leaderboard", *args)
        assert code == 0, err
        assert "Leaderboard multimedia" in out and "Leaderboard huggingface" in out
        assert "mock/echo" in out and "mock/empty" in out and "mock_echo" not in out  # named by the run log
    csv_path = tmp_path / "results.csv"
    code, _, err = run(capsys, "leaderboard", str(run_dir), "-o", str(csv_path))
    assert code == 0, err
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("model,") and "multimedia n-F1" in lines[0] and "huggingface NED" in lines[0]
    assert {line.split(",")[0] for line in lines[1:]} == {"mock/echo", "mock/empty"}
    code, _, err = run(capsys, "leaderboard", str(run_dir), "-o", str(tmp_path / "b.png"))
    assert code == 2 and "2 datasets" in err
    code, _, err = run(capsys, "leaderboard", str(tmp_path / "nothing*.json"))
    assert code == 2 and "no file matches" in err


def test_plot_leaves_out_empty_tool_counts_draws_error_bars_and_shows_zero_bars() -> None:
    import matplotlib.pyplot as plt

    from taskbench.report.leaderboard import BoardEntry, _board_figure, build_board

    def entry(model, v):
        groups = {g: {"node_micro_f1": v} for g in ("overall_overall", "single_overall", "chain_overall",
                                                     "dag_overall", "overall_1", "overall_4")}
        ci = {g: {"node_micro_f1": (max(0.0, v - 0.1), min(1.0, v + 0.1))} for g in groups}
        return BoardEntry(model=model, source="strict", path="", groups=groups, n={g: 3 for g in groups}, ci=ci)

    fig = _board_figure(build_board([entry("good", 0.6), entry("zero", 0.0)]), None)
    try:
        ax1, ax2 = fig.axes[:2]
        texts = [t.get_text() for ax in (ax1, ax2) for t in ax.texts]
        assert not any("no data" in t for t in texts)
        assert [t.get_text().split("\n")[0] for t in ax2.get_xticklabels()] == ["1", "4"]
        assert "no samples: 2-3, 5-10" in ax2.get_title()
        assert ax1.containers and any(getattr(c, "has_yerr", False) for c in ax1.containers)  # CI error bars
        assert ax1.collections, "a zero bar must be drawn visibly"
        lo, hi = ax2.get_xlim()
        assert lo < 0 and hi > 1  # the last tick is not at the edge
    finally:
        plt.close(fig)
