"""The one run header (taskbench.dataset.header): every command that writes a run records the same typed
header, a resume with other settings is refused in one line, outputs written before headers stay readable,
and identify_run / find_runs say what kind of run any path holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run
from taskbench.dataset.header import (
    HEADER_FILE,
    check_resume,
    find_runs,
    fingerprint,
    identify_run,
    new_header,
    open_run,
    read_header,
    write_header,
)
from taskbench.errors import ConfigError, InputError
from taskbench.predict.runner import PredictOptions
from taskbench.run import run_benchmark
from taskbench.schema import RunHeader


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_header_round_trips_and_its_fingerprint_is_the_hash_of_its_identity(tmp_path) -> None:
    header = new_header("generate", config={"n": 3, "seed": 1, "w": (1, 2)}, identity={"seed": 1, "w": (1, 2)},
                        seeds={"plan": 1}, command=["taskbench", "generate"])
    assert header.fingerprint == fingerprint({"seed": 1, "w": [1, 2]}) and len(header.fingerprint) == 16
    assert header.environment is not None and header.environment.python and header.environment.packages["pydantic"]
    path = write_header(tmp_path, header)
    assert path == tmp_path / HEADER_FILE
    back = read_header(tmp_path)
    assert back is not None and back.model_dump(exclude={"updated"}) == header.model_dump(exclude={"updated"})
    # a one-file run keeps its header next to the file, hidden (a glob over the outputs does not catch it)
    file_header = new_header("predict", config={}, identity={"model": "m"})
    assert write_header(tmp_path / "p.jsonl", file_header).name == ".p.jsonl.header.json"
    assert read_header(tmp_path / "p.jsonl", "predict") == RunHeader.model_validate_json(
        (tmp_path / ".p.jsonl.header.json").read_text())


def test_a_resume_with_another_setting_or_kind_is_refused_in_one_line(tmp_path) -> None:
    first = new_header("generate", config={}, identity={"method": "back-instruct", "seed": 0})
    assert open_run(tmp_path, first) is None
    again = new_header("generate", config={}, identity={"method": "back-instruct", "seed": 0})
    assert open_run(tmp_path, again) is not None  # the same settings resume
    assert read_header(tmp_path).created == first.created  # the first pass's start is kept
    other = new_header("generate", config={}, identity={"method": "back-instruct", "seed": 5})
    with pytest.raises(ConfigError) as exc:
        open_run(tmp_path, other, option="--out")
    text = str(exc.value)
    assert "\n" not in text and "seed: was 0, this run 5" in text and "--out" in text and HEADER_FILE in text
    with pytest.raises(ConfigError, match="holds a `taskbench generate` run, not a `taskbench agents eval` one"):
        open_run(tmp_path, new_header("agents", config={}, identity={}))


def test_a_newer_or_broken_header_is_a_one_line_input_error(tmp_path) -> None:
    (tmp_path / HEADER_FILE).write_text(json.dumps({"schema_version": 99, "kind": "run"}))
    with pytest.raises(InputError, match="newer than this taskbench reads"):
        identify_run(tmp_path)
    (tmp_path / HEADER_FILE).write_text(json.dumps({"kind": "nonsense"}))
    with pytest.raises(InputError, match="not a taskbench run header"):
        identify_run(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="not a taskbench run"):
        identify_run(empty)


def test_taskbench_run_writes_the_header_and_refuses_a_resume_with_other_prediction_settings(tmp_path) -> None:
    run_dir = tmp_path / "run"
    run_benchmark(run_dir, models=["mock/echo"], datasets=["huggingface"], options=PredictOptions(limit=2),
                  bootstrap=0, command=["taskbench", "run"], plots=False)
    header = identify_run(run_dir)
    assert header.kind == "run" and header.legacy is None and header.command == ["taskbench", "run"]
    assert header.config["models"] == ["mock/echo"] and header.identity["shots"] == 0
    assert header.seeds == {"sampling": 0, "bootstrap": 0}
    assert header.environment is not None and header.environment.packages["pydantic"]
    # a larger --limit resumes (entries are per model and dataset) ...
    run_benchmark(run_dir, models=["mock/echo"], datasets=["huggingface"], options=PredictOptions(limit=3),
                  bootstrap=0, plots=False)
    # ... but other prediction settings would mix records made two ways in one predictions file
    with pytest.raises(ConfigError, match="shots: was 0, this run 1"):
        run_benchmark(run_dir, models=["mock/echo"], datasets=["huggingface"],
                      options=PredictOptions(limit=3, shots=1), bootstrap=0, plots=False)


def test_a_run_directory_from_before_headers_is_still_identified_and_checked(tmp_path) -> None:
    run_dir = tmp_path / "run"
    run_benchmark(run_dir, models=["mock/echo"], datasets=["huggingface"], options=PredictOptions(limit=2),
                  bootstrap=0, plots=False)
    (run_dir / HEADER_FILE).unlink()
    old = identify_run(run_dir)
    assert old.kind == "run" and old.legacy == "run_log.json" and old.config["limit"] == 2
    assert old.environment is not None and old.identity["shots"] == 0
    with pytest.raises(ConfigError, match="temperature: was 0.0, this run 0.5"):
        run_benchmark(run_dir, models=["mock/echo"], datasets=["huggingface"],
                      options=PredictOptions(limit=2, temperature=0.5), bootstrap=0, plots=False)


def test_predict_and_evaluate_write_a_header_next_to_their_file(tmp_path, capsys) -> None:
    preds = tmp_path / "p.jsonl"
    base = ["predict", "--data", "dailylifeapis", "-m", "mock/echo", "-o", str(preds), "--limit", "2", "-q"]
    code, _, err = run(capsys, *base)
    assert code == 0, err
    header = identify_run(preds)
    assert header.kind == "predict" and header.identity["model"] == "mock/echo"
    assert header.identity["dataset"] == "dailylifeapis" and header.config["limit"] == 2
    code, _, err = run(capsys, *base[:-3], "--limit", "3", "-q")  # more samples: a resume
    assert code == 0, err
    code, _, err = run(capsys, *base, "--temperature", "0.3")
    assert code == 2 and err.count("\n") == 1 and "temperature: was 0.0, this run 0.3" in err, err
    metrics = tmp_path / "m.json"
    code, _, err = run(capsys, "evaluate", "--data", "dailylifeapis", "-p", str(preds), "--bootstrap", "0",
                       "-o", str(metrics))
    assert code == 0, err
    scored = identify_run(metrics)
    assert scored.kind == "evaluate" and scored.config["predictions"] == str(preds.resolve())
    assert scored.config["mode"] == "strict"


def test_generate_and_agents_directories_from_before_headers_resume_through_the_header(tmp_path, capsys) -> None:
    out = tmp_path / "gen"
    base = ["generate", "--tools", "multimedia", "--out", str(out), "--model", "mock/echo", "-q", "--n", "2"]
    code, _, err = run(capsys, *base, "--keep", "none")
    assert code in (0, 1), err
    header = identify_run(out)
    assert header.kind == "generate" and header.identity["seed"] == 0 and header.config["n"] == 2
    # the layout before headers: generation.json with its own schema number
    manifest = {**header.config, "schema": 1}
    (out / HEADER_FILE).unlink()
    (out / "generation.json").write_text(json.dumps(manifest))
    legacy = identify_run(out)
    assert legacy.kind == "generate" and legacy.legacy == "generation.json"
    assert legacy.fingerprint == header.fingerprint  # the same settings hash the same
    code, _, err = run(capsys, *base, "--seed", "4", "--keep", "none")
    assert code == 2 and err.count("\n") == 1 and "seed: was 0, this run 4" in err
    code, _, err = run(capsys, "generate", "--out", str(out), "-q", "--keep", "none")  # resumes from it
    assert code in (0, 1), err
    assert identify_run(out).legacy is None
    # an agents directory of the old layout: config.json with a fingerprint, checked against the new config
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "config.json").write_text(json.dumps({"fingerprint": "0123456789abcdef", "config": {"env": "x"}}))
    (agents / "episodes.jsonl").write_text("")
    old = identify_run(agents)
    assert old.kind == "agents" and old.config == {"env": "x"} and old.fingerprint == "0123456789abcdef"
    with pytest.raises(ConfigError, match="another configuration"):
        check_resume(old, new_header("agents", config={}, identity={"env": "y"}), agents)


def test_find_runs_lists_every_kind_under_a_tree(tmp_path, capsys) -> None:
    run_dir = tmp_path / "runs" / "main"
    run_benchmark(run_dir, models=["mock/echo"], datasets=["huggingface"], options=PredictOptions(limit=2),
                  bootstrap=0, plots=False, generate=1)
    preds = tmp_path / "runs" / "p.jsonl"
    assert run(capsys, "predict", "--data", "huggingface", "-m", "mock/echo", "-o", str(preds), "--limit", "1",
               "-q")[0] == 0
    found = {str(p.relative_to(tmp_path / "runs")): h.kind for p, h in find_runs([tmp_path / "runs"])}
    assert found == {"main": "run", "main/generated": "generate", "p.jsonl": "predict"}
