"""The main job's generation and agents stages: one run directory, one report, honest status and exit codes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from taskbench.cli.main import app, main
from taskbench.predict.runner import PredictOptions
from taskbench.run import read_run_log, run_benchmark
from taskbench.schema import RunLog
from taskbench.schema.run import AgentsStageSummary, GenerateStageSummary, RunStage


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _run(run_dir, **kw):
    return run_benchmark(run_dir, models=["mock/echo"], datasets=["multimedia"], options=PredictOptions(limit=2),
                         bootstrap=0, plots=False, **kw)


def test_stages_land_in_the_run_directory_log_and_report(tmp_path, cache_dir):
    run_dir = tmp_path / "run"
    log = _run(run_dir, generate=3, agents=["conagents-auto", "conagents-adaptive", "react"])
    assert log.status == "complete", [(s.kind, s.error) for s in log.stages]
    gen, ag = log.stages
    assert (gen.kind, gen.status, gen.path) == ("generate", "complete", "generated")
    g, a = gen.summary, ag.summary
    assert isinstance(g, GenerateStageSummary) and isinstance(a, AgentsStageSummary)  # tagged by the stage's kind
    assert g.planned == 3 and g.answered == 3 and g.failed_calls == 0
    stats = json.loads((run_dir / "generated" / "statistics.json").read_text())
    assert stats["planned"] == 3 and g.kept == stats["kept"]
    assert None not in (g.rule_critic, g.llm_critic, g.both_critics)
    assert (ag.kind, ag.status) == ("agents", "complete")
    rows = {r["agent"]: r for r in a.comparison}
    assert set(rows) == {"conagents-auto", "conagents-adaptive", "react"}
    assert all(r["episodes"] == 2 for r in rows.values())
    assert a.tasks == ["tmdb-own-02", "tmdb-own-05"]
    assert (run_dir / "agents" / "metrics.json").is_file()
    assert len((run_dir / "agents" / "episodes.jsonl").read_text().splitlines()) == 6
    # the log says what was asked for and reads back
    back = read_run_log(run_dir)
    assert back.config.generate == 3 and back.config.agents == ["conagents-auto", "conagents-adaptive", "react"]
    assert [s.kind for s in back.stages] == ["generate", "agents"]
    md = (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text()
    for text in (md, html):
        assert "Generation (TaskBench data engine)" in text and "Agents (ConAgents against ReAct)" in text
        assert "conagents-adaptive" in text and "tmdb-own-05" in text
    # a rerun resumes every part: nothing new is generated or played
    again = _run(run_dir, generate=3, agents=["conagents-auto", "conagents-adaptive", "react"])
    assert again.status == "complete"
    # nothing new was generated: the stage's calls are the first pass's, summed over both passes
    calls = [st.summary.calls for st in (again.stages[0], log.stages[0]) if isinstance(st.summary, GenerateStageSummary)]
    assert len(calls) == 2 and calls[0] == calls[1] > 0 and again.resumed == 1
    assert len((run_dir / "agents" / "episodes.jsonl").read_text().splitlines()) == 6


def test_a_failed_stage_makes_the_run_incomplete_and_keeps_the_scores(tmp_path, cache_dir):
    run_dir = tmp_path / "run"
    log = _run(run_dir, generate=2, generate_tools=str(tmp_path / "missing.json"), agents=["react"])
    assert log.status == "incomplete"
    gen, ag = log.stages
    assert gen.status == "failed" and "missing.json" in (gen.error or "")
    assert ag.status == "complete"  # one stage failing does not stop the next
    assert log.entries[0].status == "scored" and log.entries[0].strict is not None
    assert "failed" in (run_dir / "report.md").read_text()


def test_no_stages_unless_asked_for(tmp_path, cache_dir):
    log = _run(tmp_path / "run")
    assert log.stages == [] and log.config.generate == 0 and log.config.agents == []
    assert not (tmp_path / "run" / "generated").exists() and not (tmp_path / "run" / "agents").exists()


def test_an_older_run_log_without_stages_loads(tmp_path, cache_dir):
    log = _run(tmp_path / "run")
    doc = log.model_dump(mode="json")
    doc["schema_version"] = 2
    del doc["stages"]
    for key in ("generate", "generate_tools", "agents", "agent_env", "agent_tasks"):
        del doc["config"][key]
    old = RunLog.model_validate(doc)
    assert old.stages == [] and old.config.agents == []


def test_cli_stage_flags_exit_codes_and_messages(tmp_path, cache_dir, capsys):
    runner = CliRunner()
    base = ["run", "-m", "mock/echo", "-d", "multimedia", "--limit", "2", "--bootstrap", "0", "-q"]
    res = runner.invoke(app, base + ["-o", str(tmp_path / "a"), "--generate", "2", "--agents", "react"])
    assert res.exit_code == 0, res.output
    assert "Generation (TaskBench data engine)" in res.output and "react" in res.output
    with pytest.raises(SystemExit) as exc:
        main(base + ["-o", str(tmp_path / "b"), "--agents", "reakt"])
    assert exc.value.code == 2 and "did you mean 'react'" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()  # refused before anything ran
    with pytest.raises(SystemExit) as exc:
        main(base + ["-o", str(tmp_path / "c"), "--generate", "1", "--generate-tools", str(tmp_path / "nope.json"),
                     "--agents", "none"])
    err = capsys.readouterr().err
    assert exc.value.code == 1
    assert "the generate stage failed" in err and "fix that and rerun" in err
    assert read_run_log(tmp_path / "c").stages[0].status == "failed"
    help_text = " ".join(runner.invoke(app, ["run", "--help"]).output.split())
    assert "--generate" in help_text and "--agents" in help_text and "ConAgents" in help_text


def test_the_default_run_asks_for_both_stages(monkeypatch, tmp_path, cache_dir):
    """`taskbench run` with no model: the embedded default with the generation and the agents stage (checked on
    the arguments handed to the job; the real run is measured in benchmarks/ and the closing notes)."""
    import taskbench.run.job as job

    seen = {}

    def fake(spec, **kw):
        seen.update(spec.benchmark_kwargs())
        raise SystemExit(0)

    monkeypatch.setattr(job, "run_benchmark", fake)
    CliRunner().invoke(app, ["run", "-o", str(tmp_path / "d"), "-q"])
    assert seen["models"] == [job.DEFAULT_MODEL]
    assert seen["generate"] == 3 and seen["agents"] == ["conagents-auto", "conagents-adaptive", "react"]
    seen.clear()
    CliRunner().invoke(app, ["run", "-o", str(tmp_path / "d"), "-q", "--generate", "0", "--agents", "none"])
    assert seen["generate"] == 0 and seen["agents"] == []


def test_agents_stage_refuses_without_a_sandbox_as_a_failed_stage(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv("TASKBENCH_BWRAP", str(tmp_path / "no-bwrap"))
    log = _run(tmp_path / "run", agents=["conagents-auto"])
    (stage,) = log.stages
    assert log.status == "incomplete" and stage.status == "failed"
    assert "no sandbox for agent code" in (stage.error or "") and "--agents none" in (stage.error or "")


def test_a_stage_summary_of_an_older_log_reads_into_the_typed_union() -> None:
    # logs before the typed summary stored an untagged dict, {} for a failed stage
    gen = RunStage.model_validate({"kind": "generate", "model": "m", "path": "generated",
                                   "summary": {"planned": 3, "kept": 2, "calls": 4, "examples": [{"id": "00001"}]}})
    assert isinstance(gen.summary, GenerateStageSummary) and gen.summary.kept == 2
    assert gen.summary.examples[0].id == "00001"
    ag = RunStage.model_validate({"kind": "agents", "model": "m", "path": "agents",
                                  "summary": {"env": "restbench-tmdb", "comparison": [{"agent": "react"}]}})
    assert isinstance(ag.summary, AgentsStageSummary) and ag.summary.comparison == [{"agent": "react"}]
    failed = RunStage.model_validate({"kind": "agents", "model": "m", "path": "agents", "summary": {}})
    assert failed.summary is None
    assert RunStage.model_validate_json(gen.model_dump_json()) == gen
    with pytest.raises(ValueError):  # a summary of the other kind is refused, not read loosely
        RunStage.model_validate({"kind": "agents", "model": "m", "path": "a", "summary": {"kind": "generate"}})
