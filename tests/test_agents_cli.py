"""`taskbench agents eval | show | export-sft | plot`, agent names and tool settings, the output directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_helpers import (
    CREDITS_CODE,
    SEARCH_CODE,
    credits_plan,
    finish,
    mock,
    run_one,
    sandbox_or_skip,
    search_plan,
    verdict,
)
from taskbench.agents import AgentSpec, expand_agents, parse_agent, select_tools
from taskbench.agents.sft import export_sft
from taskbench.cli.main import app
from taskbench.errors import ConfigError
from taskbench.schema import ToolSpec

runner = CliRunner()


def test_agent_names_and_variants() -> None:
    assert parse_agent("react") == AgentSpec(base="react")
    spec = parse_agent("conagents-auto-no-plan-review-a1b4")
    assert (spec.base, spec.ablation, spec.alpha, spec.beta) == ("conagents-auto", "no-plan-review", 1, 4)
    assert spec.name == "conagents-auto-no-plan-review-a1b4" and not spec.plan_review and spec.exec_review
    assert parse_agent("conagents-adaptive", alpha=2).name == "conagents-adaptive-a2b3"
    assert parse_agent("conagents-auto-compiler-feedback").compiler_feedback
    with pytest.raises(ConfigError, match="did you mean 'react'"):
        parse_agent("reactt")
    with pytest.raises(ConfigError, match="unknown ablation"):
        parse_agent("conagents-auto-no-review")
    names = [s.name for s in expand_agents(["conagents-auto", "react"], ablations=["no-exec-review"], sweep="both",
                                           sweep_values=(1, 3))]
    assert names == ["conagents-auto", "conagents-auto-no-exec-review", "conagents-auto-a1b1", "react"]


def test_tool_settings_are_seeded() -> None:
    # (their order is shuffled per seed: tests/test_agents_confounds.py)
    tools = [ToolSpec(name=f"t{i:02d}") for i in range(30)]
    gold = ["t20", "t03", "t20"]
    assert sorted(t.name for t in select_tools(tools, gold, "gold", seed=0, task_id="x")) == ["t03", "t20"]
    assert sorted(select_tools(tools, gold, "all", seed=0, task_id="x"), key=lambda t: t.name) == tools
    offered = select_tools(tools, gold, "gold+10", seed=0, task_id="x")
    names = [t.name for t in offered]
    assert len(names) == 12 and {"t03", "t20"} <= set(names)
    assert offered == select_tools(tools, gold, "gold+10", seed=0, task_id="x")  # the same episode, same tools
    others = {tuple(t.name for t in select_tools(tools, gold, "gold+10", seed=s, task_id="x")) for s in range(5)}
    assert len(others) > 1  # seeds draw other distractors
    assert len(select_tools(tools[:5], ["t01"], "gold+10", seed=0, task_id="x")) == 5
    with pytest.raises(ConfigError, match="unknown tool setting"):
        select_tools(tools, gold, "gold+5", seed=0, task_id="x")


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TASKBENCH_CACHE"] = str(tmp / "cache")
    env["COLUMNS"] = "200"
    return env


def test_eval_command_writes_the_run_directory(tmp_path: Path) -> None:
    # mock/echo answers every schema with its smallest document: deterministic, and a complete loop
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "taskbench", "agents", "eval", "--env", "restbench-tmdb", "--task-set", "own",
           "--limit", "2", "--agent", "react,conagents-auto", "--model", "mock/echo", "--tools", "gold",
           "--max-steps", "2", "--bootstrap", "50", "-o", str(out), "-q", "--unsafe-local"]
    proc = subprocess.run(cmd, env={**_env(tmp_path), "COLUMNS": "80"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # a rich table fitted to 80 columns, with the run report's labels (no names cut, no column cut to nothing)
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    assert any(line.startswith("│ react ") for line in rows) and any("│ conagents-auto" in line for line in rows)
    assert all(len(line) <= 80 and all(c.strip() for c in line[1:-1].split("│")) for line in rows)
    assert "…" not in proc.stdout and "success %" in " ".join(proc.stdout.split()) and "4 episodes" in proc.stdout
    assert "- react - conagents-auto: success_rate +0.0 pts" in proc.stdout and "(2 tasks)" in proc.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["agents"]) == {"react", "conagents-auto"} and metrics["tasks"] == 2
    assert metrics["env"] == "restbench-tmdb" and metrics["tools"] == "gold"
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["react/tmdb-own-01/s0", "react/tmdb-own-02/s0",
                                          "conagents-auto/tmdb-own-01/s0", "conagents-auto/tmdb-own-02/s0"]
    assert all((out / r["trajectory"]).is_file() for r in records)
    header = json.loads((out / "header.json").read_text())
    assert header["kind"] == "agents" and header["identity"]["models"]["grounding"] == "mock/echo"
    # a second run of the same command does nothing new
    again = subprocess.run(cmd, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "(4 from an earlier run)" in again.stdout
    # another configuration into the same directory is refused, in one line
    other = subprocess.run([*cmd[:-4], "--tools", "all", "-o", str(out), "-q", "--unsafe-local"], env=_env(tmp_path),
                           capture_output=True, text=True, timeout=300)
    assert other.returncode == 2 and "another configuration" in other.stderr and "Traceback" not in other.stderr


def test_a_react_student_plays_react_and_only_react(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["agents", "eval", "--env", "restbench-tmdb", "--task-set", "own", "--limit", "1",
                                 "--agent", "react,conagents-auto", "--model", "mock/echo", "--model-react",
                                 "mock/student", "--tools", "gold", "--max-steps", "2", "--bootstrap", "0", "-q",
                                 "-o", str(out)])
    assert result.exit_code == 0, result.output
    heads = {a: json.loads((out / "trajectories" / a / "tmdb-own-01__s0.jsonl").read_text().splitlines()[0])
             for a in ("react", "conagents-auto")}
    assert heads["react"]["models"] == {"react": "mock/student"}
    assert set(heads["conagents-auto"]["models"].values()) == {"mock/echo"}
    header = json.loads((out / "header.json").read_text())
    assert header["identity"]["models"]["react"] == "mock/student"  # another ReAct model is another run


def test_eval_refuses_code_agents_without_a_sandbox(tmp_path: Path) -> None:
    env = _env(tmp_path)
    env["TASKBENCH_BWRAP"] = str(tmp_path / "no-bwrap")
    cmd = [sys.executable, "-m", "taskbench", "agents", "eval", "--env", "restbench-tmdb", "--task-set", "own",
           "--limit", "1", "--agent", "code", "--model", "mock/echo", "-o", str(tmp_path / "run"), "-q"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "no sandbox for agent code here" in proc.stderr and "--unsafe-local" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_eval_rejects_bad_names_in_one_line() -> None:
    result = runner.invoke(app, ["agents", "eval", "--env", "restbench-tmdb", "--agent", "reactt", "--model",
                                 "mock/echo", "-o", "/tmp/never-written"])
    assert result.exit_code != 0
    assert isinstance(result.exception, ConfigError) and "did you mean 'react'" in str(result.exception)


@pytest.fixture
def solved_run(tmp_path: Path) -> Path:
    sandbox_or_skip()
    run = tmp_path / "run"
    g = mock("g", [search_plan(), search_plan(), credits_plan(), finish()])
    x = mock("x", [SEARCH_CODE, CREDITS_CODE])
    r = mock("r", [verdict("revise", feedback="fine, but say what to extract")] + [verdict()] * 5)
    run_one(run, "conagents-auto", {"grounding": g, "execution": x, "review": r})
    return run


def test_show_lists_episodes_and_prints_one(solved_run: Path) -> None:
    listing = runner.invoke(app, ["agents", "show", str(solved_run)], env={"COLUMNS": "200"})
    assert listing.exit_code == 0 and "tmdb-own-01" in listing.stdout and "conagents-auto" in listing.stdout
    shown = runner.invoke(app, ["agents", "show", str(solved_run), "--task", "tmdb-own-01"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.stdout
    text = shown.stdout
    for piece in ("Which actor played the Joker", "grounding", "review of the plan: revise -> grounding",
                  "GET_search_movie", "result = 155", "final answer", "Heath Ledger", "success: solved"):
        assert piece in text, piece
    missing = runner.invoke(app, ["agents", "show", str(solved_run), "--task", "nope"])
    assert missing.exit_code != 0 and "no episode of task 'nope'" in str(missing.exception)


def test_export_sft_writes_one_chat_set_per_role(solved_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft"
    summary = export_sft([solved_run], out)
    assert summary.successful == 1
    # 4 grounding turns, but the first plan was sent back: 3 kept; 2 code turns; 6 reviews
    assert summary.examples == {"grounding": 3, "execution": 2, "review": 6}
    lines = [json.loads(x) for x in (out / "grounding.jsonl").read_text().splitlines()]
    first = lines[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant"]
    assert json.loads(first["messages"][-1]["content"])["action"]["tool"] == "GET /search/movie"
    assert first["meta"]["role"] == "grounding" and first["meta"]["task"] == "tmdb-own-01"
    code = [json.loads(x) for x in (out / "execution.jsonl").read_text().splitlines()]
    assert "GET_search_movie" in code[0]["messages"][-1]["content"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["examples"] == summary.examples
    everything = export_sft([solved_run], tmp_path / "all", all_turns=True)
    assert everything.examples["grounding"] == 4
    cli = runner.invoke(app, ["agents", "export-sft", str(solved_run), "-o", str(tmp_path / "cli")])
    assert cli.exit_code == 0 and "grounding 3" in cli.stdout


def test_plot_writes_pngs(solved_run: Path, tmp_path: Path) -> None:
    png = tmp_path / "tokens.png"
    result = runner.invoke(app, ["agents", "plot", str(solved_run), "-o", str(png)])
    assert result.exit_code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    turns = runner.invoke(app, ["agents", "plot", str(solved_run), "--figure", "turns", "-o", str(tmp_path / "t.png")])
    assert turns.exit_code != 0 and "--sweep-turns" in str(turns.exception)


def test_plot_turns_from_a_sweep(tmp_path: Path) -> None:
    from taskbench.report.agents import comparison_markdown, plot_turns

    metrics = {"env": "e", "comparison": [{"agent": "conagents-auto", "episodes": 2, "crashed": 0, "success_rate": 0.5}],
               "agents": {"conagents-auto": {"ci95": {"success_rate": [0.0, 1.0]}}},
               "turns_sweep": [{"agent": f"conagents-auto-a{k}b{k}", "protocol": "conagents-auto", "ablation": None,
                                "alpha": k, "beta": k, "success_rate": k / 10} for k in (1, 2, 4, 5)]}
    out = plot_turns(metrics, tmp_path / "turns.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
    table = comparison_markdown(metrics)
    assert "| conagents-auto | 2 | 0 | 50.0 |" in table and "0.0-100.0" in table
    assert "| agent | episodes | crashed | success % | path F1 (paper) % | path LCS (authors' code) % |" in table  # the run report's labels


def test_export_sft_is_all_or_nothing_when_it_crashes(solved_run: Path, tmp_path: Path, monkeypatch) -> None:
    """A crash while writing leaves the previous export whole (issue 24.9: the role files were written in
    place, so a crash left one role new, one cut short and the manifest old)."""
    import taskbench.agents.sft as sft

    out = tmp_path / "sft"
    export_sft([solved_run], out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = sft.example

    def poisoned(e: object, traj: object) -> dict:
        ex = real(e, traj)
        return {**ex, "bad": object()} if getattr(e, "role", None) == "execution" else ex

    monkeypatch.setattr(sft, "example", poisoned)
    with pytest.raises(TypeError):
        export_sft([solved_run], out, all_turns=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
