"""RunSpec: `run_benchmark(RunSpec())` from Python is `taskbench run`; the default model from TASKBENCH_MODEL or
.env; the shared model-options group."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import run
from taskbench.run import RunSpec, default_model, run_benchmark
from taskbench.run.job import DEFAULT_MODEL
from taskbench.run.spec import load_dotenv


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TASKBENCH_MODEL", raising=False)
    return tmp_path / "cache"


def _cli_spec(monkeypatch, capsys, *args: str) -> RunSpec:
    import taskbench.run.job as job

    seen: list[RunSpec] = []

    def fake(spec, **kw):
        seen.append(spec)
        raise SystemExit(0)

    monkeypatch.setattr(job, "run_benchmark", fake)
    code, _, err = run(capsys, "run", "-q", *args)
    assert code == 0 and seen, err
    return seen[0]


def test_the_cli_and_python_run_the_same_job(monkeypatch, capsys, cache_dir) -> None:
    cli = _cli_spec(monkeypatch, capsys).benchmark_kwargs()
    py = RunSpec().benchmark_kwargs()
    assert cli == py
    # the default model's small main job, decided in RunSpec (not in the CLI)
    opts = py["options"]
    assert py["models"] == [DEFAULT_MODEL] and py["run_dir"] == Path("runs/default")
    assert (opts.limit, opts.shots, opts.demo_selection, opts.shortlist, opts.max_tokens) == (3, 2, "retrieved", 10,
                                                                                              512)
    assert py["generate"] == 3 and py["agents"] == ["conagents-auto", "conagents-adaptive", "react"]
    # another model: every sample, zero-shot, every tool, no stages - the same both ways
    cli = _cli_spec(monkeypatch, capsys, "-m", "mock/echo", "--timeout", "7", "-O", "a=1").benchmark_kwargs()
    py = RunSpec(models=["mock/echo"], timeout=7, model_options={"a": 1}).benchmark_kwargs()
    assert cli == py
    assert py["options"].limit is None and py["options"].shots == 0 and py["options"].shortlist is None
    assert py["generate"] == 0 and py["agents"] == [] and py["model_options"] == {"a": 1, "timeout": 7}


def test_run_benchmark_takes_a_run_spec(tmp_path, cache_dir) -> None:
    spec = RunSpec(models=["mock/echo"], datasets=["multimedia"], limit=2, bootstrap=0, output=tmp_path / "r")
    log = run_benchmark(spec, plots=False)
    assert log.status == "complete" and log.config.limit == 2 and log.config.shots == 0
    assert (tmp_path / "r" / "run_log.json").is_file()


def test_bad_combinations_are_refused_by_the_spec(cache_dir) -> None:
    from taskbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--reformat needs --free"):
        RunSpec(reformat=True).resolved()
    with pytest.raises(ConfigError, match="did you mean 'react'"):
        RunSpec(models=["mock/echo"], agents=["reakt"]).resolved()


def test_default_model_from_the_environment_and_dotenv(monkeypatch, tmp_path, capsys, cache_dir) -> None:
    assert default_model() == DEFAULT_MODEL
    monkeypatch.setenv("TASKBENCH_MODEL", "mock/echo")
    assert default_model() == "mock/echo" and not RunSpec().uses_default_model()
    assert RunSpec().benchmark_kwargs()["models"] == ["mock/echo"]
    assert _cli_spec(monkeypatch, capsys).benchmark_kwargs()["models"] == ["mock/echo"]
    monkeypatch.delenv("TASKBENCH_MODEL")
    env = tmp_path / ".env"
    env.write_text("# settings\nOPENAI_API_KEY=sk-not-copied\nexport TASKBENCH_MODEL='mock/echo'\n")
    assert load_dotenv(env) == {"TASKBENCH_MODEL": "mock/echo"}
    assert default_model() == "mock/echo"
    import os

    assert os.environ.get("OPENAI_API_KEY") != "sk-not-copied"
    monkeypatch.delenv("TASKBENCH_MODEL")


def test_predict_takes_its_model_from_the_environment(monkeypatch, tmp_path, capsys, cache_dir) -> None:
    monkeypatch.setenv("TASKBENCH_MODEL", "mock/echo")
    out = tmp_path / "p.jsonl"
    code, _, err = run(capsys, "predict", "-d", "multimedia", "--limit", "2", "-q", "-o", str(out))
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 2


@pytest.mark.parametrize("command", [["run"], ["predict"], ["generate"], ["agents", "eval"], ["data", "judge"]])
def test_model_options_are_one_group_in_every_command(monkeypatch, capsys, command) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    assert "Model options" in out
    flat = " ".join(out.split())
    for flag in ("--model", "--timeout", "--max-retries", "--base-url", "--api-key-env", "--no-cache"):
        assert flag in flat, (command, flag)
    assert "TASKBENCH_MODEL" in flat


def test_graph_llm_inference_takes_timeout_and_retries_but_not_the_env_model(monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("TASKBENCH_MODEL", "mock/echo")  # must not turn on --infer llm's model
    code, out, _ = run(capsys, "graph", "build", "--help")
    flat = " ".join(out.split())
    assert code == 0 and "--timeout" in flat and "--max-retries" in flat and "-c" in flat
    code, out, err = run(capsys, "graph", "build", "multimedia")
    assert code == 0, err


def test_docs_name_the_run_logs_schema_version() -> None:
    import re

    from taskbench.schema import RUN_LOG_SCHEMA_VERSION

    doc = (Path(__file__).parents[1] / "docs" / "predict-and-run.md").read_text()
    found = re.findall(r"`schema_version` (\d+)", doc)
    assert found and all(int(v) == RUN_LOG_SCHEMA_VERSION for v in found)


def test_evaluate_limit_scores_the_samples_predict_limit_predicted(tmp_path, capsys, cache_dir) -> None:
    import json

    preds = tmp_path / "p.jsonl"
    code, _, err = run(capsys, "predict", "-m", "mock/echo", "-d", "multimedia", "--limit", "12", "-q", "-o",
                       str(preds))
    assert code == 0, err
    metrics = tmp_path / "m.json"
    code, _, err = run(capsys, "evaluate", "-d", "multimedia", "-p", str(preds), "--limit", "12", "-o", str(metrics),
                       "--bootstrap", "0")
    assert code == 0, err
    doc = json.loads(metrics.read_text())
    assert doc["n_gold"] == 12
    assert "no prediction" not in err and "missing" not in err.lower(), err  # every chosen sample was predicted


@pytest.mark.parametrize("args, says", [
    (["run", "--limt", "3"], "No such option: --limt"),
    (["run", "--shots", "9"], "Invalid value for '--shots'"),
    (["bogus"], "No such command 'bogus'"),
])
def test_usage_errors_are_one_taskbench_error_line(capsys, args, says) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("taskbench: error: ") and says in lines[0], err
    assert "--help" in lines[0] and "╭" not in err


def test_no_arguments_still_print_the_help(capsys) -> None:
    code, out, err = run(capsys)
    assert code == 0 and "Usage" in out + err and "run" in out + err


def test_review_of_a_folder_where_nothing_was_kept_points_at_the_rejected(tmp_path, capsys) -> None:
    import shutil

    from taskbench.bundled import resolve_dir

    ds = tmp_path / "gen"
    shutil.copytree(resolve_dir("multimedia"), ds)
    data = ds / "data.json"
    lines = data.read_text().splitlines()[:3]
    (ds / "data_error.json").write_text("\n".join(lines) + "\n")
    data.write_text("")
    for extra in ("user_requests.json", "alignment_ids.json"):
        (ds / extra).unlink(missing_ok=True)
    code, _, err = run(capsys, "review", str(ds))
    assert code == 2, err
    assert "the critics rejected 3" in err and "--include-rejected" in err


@pytest.mark.parametrize("command", [["generate"], ["review"]])
def test_output_is_the_one_name_and_out_a_hidden_alias(monkeypatch, capsys, command) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0 and "--output" in out and "--out " not in out and "--out," not in out


def test_generate_takes_output_and_the_old_out(tmp_path, capsys, cache_dir) -> None:
    for flag in ("--output", "--out"):
        target = tmp_path / flag.strip("-")
        code, _, err = run(capsys, "generate", "--tools", "multimedia", flag, str(target), "--n", "1",
                           "--model", "mock/echo", "-q")
        assert code in (0, 1), err  # 1: the mock's answer may be rejected; the directory is written either way
        assert (target / "header.json").is_file(), err


def test_the_run_help_names_the_specs_defaults() -> None:
    import taskbench.cli.run as cli
    import taskbench.run.spec as spec

    assert (cli.DEFAULT_OUTPUT, cli.DEFAULT_SHOTS, cli.DEFAULT_SHORTLIST) == (
        spec.DEFAULT_OUTPUT, spec.DEFAULT_SHOTS, spec.DEFAULT_SHORTLIST)
