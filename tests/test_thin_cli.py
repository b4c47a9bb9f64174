"""Issue 44, point 3: each command is a spec and one library call, with the executor choice in the library.

``from taskbench import evaluate`` in a notebook must give what ``taskbench evaluate`` writes, with the same
defaults: predictions for the bundled multimedia set come from a scripted mock model (the gold graph for two
samples in three, a wrong one for the third), then the command's metrics file is compared with the function's
result, byte for byte, under the defaults and under other options. The executor choice: an ``ExecutorSpec``
is checked in the library (the same message from a notebook as from the command line), and an executor object
is used as given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run
from taskbench import bundled

DATA = bundled.resolve_dir("multimedia")


def _answer(gold: dict[str, Any], i: int) -> dict[str, Any]:
    if i % 3:
        return {k: gold[k] for k in ("task_steps", "task_nodes", "task_links")}
    nodes = list(reversed(gold["task_nodes"]))[:2]  # a wrong answer: other order, a tool short
    return {"task_steps": gold["task_steps"][:1], "task_nodes": nodes, "task_links": []}


@pytest.fixture(scope="module")
def predictions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Predictions of a scripted mock model for every sample of the bundled multimedia set (free-text answers
    parsed as the predictor parses any model's)."""
    from taskbench import PredictOptions
    from taskbench.llm import get_model
    from taskbench.predict.runner import predict_file

    gold = [json.loads(line) for line in (DATA / "data.json").read_text().splitlines()]

    def respond(request: Any) -> str:
        text = request.messages[-1]["content"]
        i, g = next((i, g) for i, g in enumerate(gold) if g["user_request"] in text)
        return json.dumps(_answer(g, i))

    out = tmp_path_factory.mktemp("preds") / "mock.jsonl"
    model = get_model("mock/scripted", responses=respond)
    summary = predict_file(DATA, model, out, PredictOptions(structured=False), close_model=True)
    assert summary.selected == len(gold) and not summary.failures
    return out


VARIANTS = [
    ([], {}),
    (["--both"], {"mode": "both"}),
    (["--compat"], {"mode": "compat"}),
    (["--splits", "chain,dag", "--n-tools", "overall,2,3", "--mode", "mul", "--metrics", "f1,ed", "--bootstrap",
      "200", "--seed", "3", "--limit", "12"],
     {"splits": "chain,dag", "n_tools": ["overall", "2", "3"], "group_mode": "mul", "metrics": ["f1", "ed"],
      "bootstrap": 200, "seed": 3, "limit": 12}),
]


@pytest.mark.parametrize(("flags", "options"), VARIANTS, ids=["defaults", "both", "compat", "options"])
def test_evaluate_from_python_equals_the_command(predictions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 flags: list[str], options: dict[str, Any]) -> None:
    from taskbench import evaluate
    from taskbench.eval.api import dumps_metrics

    cli_file = tmp_path / "cli.json"
    code, _, err = run(capsys, "evaluate", "--data", "multimedia", "--predictions", str(predictions), *flags,
                       "-o", str(cli_file))
    assert code == 0, err
    result = evaluate("multimedia", predictions, **options)  # a notebook: a bundled name and a file, no more
    assert dumps_metrics(result.to_json()) == cli_file.read_text()
    if not flags:  # the defaults score something worth comparing
        overall = result.strict.groups["overall_overall"]
        assert 0.5 < overall.metrics["node_micro_f1"] < 1 and overall.ci["node_micro_f1"]
        assert len(result.strict.groups) == 14 and result.strict.bootstrap == 1000


def test_evaluate_from_python_writes_what_the_command_writes(predictions: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from taskbench import EvaluateSpec, evaluate
    from taskbench.run.evaluate import evaluate_spec

    code, _, err = run(capsys, "evaluate", "--data", "multimedia", "-p", str(predictions), "--ids",
                       "63197948,81473502", "-o", str(tmp_path / "cli.json"))
    assert code == 0, err
    evaluate("multimedia", predictions, ids="63197948,81473502", output=tmp_path / "py.json")
    assert (tmp_path / "py.json").read_text() == (tmp_path / "cli.json").read_text()
    cli, py = (json.loads((tmp_path / f".{n}.json.header.json").read_text()) for n in ("cli", "py"))
    assert py["config"] == cli["config"] and py["identity"] == cli["identity"] and py["command"] == cli["command"]
    # the records themselves instead of a file, and the spec form
    records = [json.loads(line) for line in predictions.read_text().splitlines()]
    from_records = evaluate("multimedia", records)
    from_spec = evaluate_spec(EvaluateSpec(data=DATA, predictions=predictions))
    assert from_records.to_json() == from_spec.to_json() == evaluate("multimedia", predictions).to_json()


def test_the_in_memory_form_still_works(predictions: Path) -> None:
    from taskbench import evaluate, load_dataset
    from taskbench.dataset.layout import read_raw_records

    ds = load_dataset(DATA)
    records = read_raw_records(predictions)
    result = evaluate(ds.samples, records, ds.library)  # as before: samples, predictions, library
    assert result.to_json() == evaluate(ds, predictions).to_json()


def test_option_checks_are_the_library_s(predictions: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One check, one message: the command and the function refuse the same options the same way."""
    from taskbench import ExecutorSpec, evaluate
    from taskbench.errors import ConfigError

    cases = [
        (["--mode", "mull"], {"group_mode": "mull"}),
        (["--bootstrap", "-1"], {"bootstrap": -1}),
        (["--limit", "0"], {"limit": 0}),
        (["--unusable", "drop"], {"unusable": "drop"}),
        (["--compat", "--execute"], {"mode": "compat", "execute": True}),
        (["--splits", "chains"], {"splits": "chains"}),
        (["--metrics", "f2"], {"metrics": "f2"}),
        (["--workers", "2"], {"executor": ExecutorSpec(workers=2)}),
        (["--executor", "ray", "--limit", "3"], {"executor": ExecutorSpec("ray"), "limit": 3}),
        (["--executor", "slurm"], {"executor": ExecutorSpec("slurm")}),
    ]
    for flags, options in cases:
        code, _, err = run(capsys, "evaluate", "--data", "multimedia", "-p", str(predictions), *flags)
        assert code == 2, (flags, err)
        with pytest.raises(ConfigError) as info:
            evaluate("multimedia", predictions, **options)
        assert err.strip() == f"taskbench: error: {info.value}", flags


def test_an_executor_object_is_used_as_given(predictions: Path) -> None:
    from taskbench import evaluate
    from taskbench.executors import LocalExecutor

    pool = LocalExecutor(2)  # strict scoring sharded over two threads: the same numbers
    sharded = evaluate("multimedia", predictions, executor=pool)
    local = evaluate("multimedia", predictions)
    assert sharded.strict.groups == local.strict.groups and sharded.warnings == local.warnings


def _records(path: Path) -> list[dict[str, Any]]:
    """The records of a predictions file without the timing each call measures."""
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec.get("usage", {}).pop("seconds", None)
        out.append(rec)
    return out


def test_predict_from_python_equals_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from taskbench.executors import LocalExecutor
    from taskbench.run.predict import PredictSpec, predict_spec

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    code, _, err = run(capsys, "predict", "--data", "multimedia", "-m", "mock/echo", "--limit", "3", "--shots", "1",
                       "-o", str(tmp_path / "cli.jsonl"), "-q")
    assert code == 0, err
    spec = PredictSpec(data="multimedia", model="mock/echo", output=tmp_path / "py.jsonl", limit=3, shots=1)
    summary = predict_spec(spec)
    assert summary.selected == 3 and _records(tmp_path / "py.jsonl") == _records(tmp_path / "cli.jsonl")
    # the executor choice is the spec's: sharded over two local threads, the same records in the same order
    predict_spec(PredictSpec(data="multimedia", model="mock/echo", output=tmp_path / "sharded.jsonl", limit=3,
                             shots=1, executor=LocalExecutor(2)))
    assert _records(tmp_path / "sharded.jsonl") == _records(tmp_path / "cli.jsonl")


def test_the_other_specs_refuse_what_their_commands_refuse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from taskbench.errors import ConfigError
    from taskbench.run import ExecutorSpec, RunSpec
    from taskbench.run.agents import AgentsSpec, agents_eval_spec
    from taskbench.run.generate import GenerateSpec, generate_spec
    from taskbench.run.predict import PredictSpec, predict_spec

    out = str(tmp_path / "x")
    cases: list[tuple[list[str], Any]] = [
        (["run", "--workers", "2", "-m", "mock/echo", "-o", out],
         lambda: RunSpec(models=["mock/echo"], executor=ExecutorSpec(workers=2)).resolved()),
        (["predict", "-d", "multimedia", "-m", "mock/echo", "-o", out, "--reformat"],
         lambda: predict_spec(PredictSpec(data="multimedia", model="mock/echo", output=out, reformat=True))),
        (["predict", "-d", "multimedia", "-m", "mock/echo", "-o", out, "--executor", "rya"],
         lambda: predict_spec(PredictSpec(data="multimedia", model="mock/echo", output=out,
                                          executor=ExecutorSpec("rya")))),
        (["generate", "-o", out, "-n", "2", "-m", "mock/echo"],
         lambda: generate_spec(GenerateSpec(output=out, n=2, model="mock/echo"))),
        (["generate", "--tools", "multimedia", "-o", out, "-n", "2", "-m", "mock/echo", "--env", "restbench-tmdb",
          "--executor", "ray"],
         lambda: generate_spec(GenerateSpec(output=out, tools="multimedia", n=2, model="mock/echo",
                                            env="restbench-tmdb", executor=ExecutorSpec("ray")))),
        (["agents", "eval", "--env", "taskbench-multimedia", "--task-set", "own", "--agent", "react", "-m",
          "mock/echo", "-o", out],
         lambda: agents_eval_spec(AgentsSpec(env="taskbench-multimedia", task_set="own", agents="react",
                                             model="mock/echo", output=out))),
        (["agents", "eval", "--env", "restbench-tmdb", "--agent", "react", "-m", "mock/echo", "-o", out,
          "--ray-address", "auto"],
         lambda: agents_eval_spec(AgentsSpec(env="restbench-tmdb", agents="react", model="mock/echo", output=out,
                                             executor=ExecutorSpec(address="auto")))),
    ]
    for argv, call in cases:
        code, _, err = run(capsys, *argv)
        assert code == 2, (argv, err)
        with pytest.raises(ConfigError) as info:
            call()
        assert err.strip() == f"taskbench: error: {info.value}", argv
    assert not (tmp_path / "x").exists()  # refused before anything was written


def test_a_generation_resumes_from_its_spec_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from taskbench.run.generate import GenerateSpec

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "gen"
    code, _, err = run(capsys, "generate", "--tools", "multimedia", "-o", str(out), "-n", "2", "-m", "mock/echo",
                       "--seed", "5", "-q")
    assert code == 0, err
    spec = GenerateSpec(output=out).resolved()  # what `taskbench generate -o gen` would do: the recorded arguments
    assert (spec.n, spec.model, spec.seed, spec.method) == (2, "mock/echo", 5, "back-instruct")


def test_the_command_line_holds_no_executor_branch() -> None:
    """The local-versus-Ray choice is made in the library (run/executor.py); no command imports an executor."""
    cli = Path(__file__).resolve().parents[1] / "src" / "taskbench" / "cli"
    for path in sorted(cli.glob("*.py")):
        text = path.read_text()
        assert "executors" not in text and "get_executor" not in text and "make_executor" not in text, path.name
    from taskbench.executors import EXECUTORS
    from taskbench.run.executor import EXECUTOR_NAMES

    assert EXECUTOR_NAMES == EXECUTORS
