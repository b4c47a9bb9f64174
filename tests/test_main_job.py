"""The default main job, every stage, with the tiny real model (issue 19 point 6).

`taskbench run` with no flags is the embedded default model's main job: a stratified subset of every bundled
dataset with retrieved demos and a shortlist, scored strict and compat, then the generation stage and the
agents stage (ConAgents under both protocols against ReAct, code in the sandbox), then report.md/report.html.
The other run tests replace `run_benchmark` or pass their own arguments; this one runs the CLI as a user does,
with only the default model swapped for the 135M one and its sizes cut to one sample per dataset and one agents
task, so that it fits the suite (how long the default job takes, and under what load: docs/predict-and-run.md,
"How long the main job takes"). The policy, the stages and the code paths are the default job's.
"""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from tiny_model import TINY, tiny_model_missing


def _skip_reason() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (the agents stage runs code in it)"
    return tiny_model_missing()


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))  # decided before the test's own process
def test_taskbench_run_with_no_flags_runs_every_stage(tmp_path, monkeypatch) -> None:
    import taskbench.agents.eval as agents_eval
    import taskbench.run.job as job
    import taskbench.run.spec as spec
    from taskbench.cli.main import app
    from taskbench.run import read_run_log
    from taskbench.run.resolve import BUNDLED_DEMO_DATASETS

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TASKBENCH_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env of the checkout; the default output lands here
    monkeypatch.setattr(spec, "DEFAULT_MODEL", TINY)  # the default policy, the tiny model
    # smaller sizes, same policy: the whole job with 3 samples a dataset and 2 agents tasks took over 10 min here
    # (predictions 184 + 221 + 117 s at load 3.7)
    monkeypatch.setattr(spec, "DEFAULT_LIMIT", 1)
    monkeypatch.setattr(agents_eval, "DEMO_TASKS", agents_eval.DEMO_TASKS[:1])

    result = CliRunner().invoke(app, ["run", "-q"])
    run_dir = tmp_path / "runs" / "default"
    assert (run_dir / job.RUN_LOG_FILE).is_file(), result.output
    log = read_run_log(run_dir)

    # the default policy: every bundled dataset, the stratified subset, retrieved demos, a shortlist
    cfg = log.config
    assert cfg.models == [TINY] and sorted(cfg.datasets) == sorted(BUNDLED_DEMO_DATASETS)
    assert [e.dataset for e in log.entries] == list(cfg.datasets)
    for entry in log.entries:
        assert entry.status in ("scored", "incomplete"), (entry.dataset, entry.error)
        assert len(entry.records) == spec.DEFAULT_LIMIT, entry.dataset
        assert entry.strict is not None and entry.strict.n_gold == spec.DEFAULT_LIMIT
        assert entry.compat  # the reference-compatible metrics too
        assert entry.usage.completion_tokens > 0  # the model really answered
    # both stages ran and recorded a typed summary
    kinds = {s.kind: s for s in log.stages}
    assert set(kinds) == {"generate", "agents"}, [(s.kind, s.status, s.error) for s in log.stages]
    gen, agents = kinds["generate"], kinds["agents"]
    assert gen.status in ("complete", "incomplete") and gen.summary is not None, gen.error
    assert agents.status in ("complete", "incomplete") and agents.summary is not None, agents.error
    assert gen.summary.kind == "generate" and agents.summary.kind == "agents"
    raw = [json.loads(line) for line in (run_dir / gen.path / "data_raw.json").read_text().splitlines() if line]
    assert len(raw) == 3 and {r["type"] for r in raw} == {"single", "chain", "dag"}
    episodes = (run_dir / agents.path / "episodes.jsonl").read_text().splitlines()
    assert len(episodes) == len(agents.summary.tasks) * 3  # three agents, each on every demo task
    assert {r["agent"] for r in agents.summary.comparison} >= {"conagents-auto", "conagents-adaptive", "react"}
    # the report of the whole job
    assert (run_dir / "report.md").is_file() and (run_dir / "report.html").is_file()
    assert result.exit_code == (0 if log.status == "complete" else 1), result.output
