"""Issue 19 point 4: one of each helper, so two call sites cannot disagree."""

from __future__ import annotations

from typing import Any

import pytest


def _captured(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    import taskbench.llm.model as model_module

    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(model_module, "get_model", lambda spec, **kw: calls.append((spec, kw)))
    return calls


@pytest.mark.parametrize("base_url", [None, "", "http://127.0.0.1:9/v1", ["http://127.0.0.1:9/v1"]])
@pytest.mark.parametrize("api_key_env", [None, "", "MY_KEY"])
def test_open_model_and_a_model_config_open_the_same_model(monkeypatch, base_url, api_key_env):
    from taskbench.llm.config import ModelConfig, open_model

    calls = _captured(monkeypatch)
    args: dict[str, Any] = dict(concurrency=3, cache=False, base_url=base_url, api_key_env=api_key_env,
                                options={"temperature": 0.5})
    open_model("openai/gpt-4o-mini", **args)
    ModelConfig.build("openai/gpt-4o-mini", **args).open()
    assert calls[0] == calls[1]  # open_model passed base_url="" on (is not None); build dropped it (truthiness)
    assert ("base_url" in calls[0][1]) == bool(base_url)
    assert ("api_key_env" in calls[0][1]) == bool(api_key_env)
    assert calls[0][1]["concurrency"] == 3 and calls[0][1]["temperature"] == 0.5


def test_every_did_you_mean_comes_from_errors_suggest():
    """The environment, agent and tool_choice hints used difflib case-sensitively on their own; a name typed in
    the wrong case got no hint there while every other hint of the package (errors.suggest) gave one."""
    from taskbench.agents.config import parse_agent
    from taskbench.envs import open_environment
    from taskbench.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'restbench-tmdb'"):
        open_environment("RESTBENCH-TMDB")
    with pytest.raises(ConfigError, match="did you mean 'reflexion'"):
        parse_agent("REFLEXION")


def test_predict_has_no_second_extract_json():
    """llm.extract_json reads any JSON value; the prediction parser's reference-style reader has its own name."""
    import taskbench.predict.parse as parse

    assert not hasattr(parse, "extract_json")
    assert parse.extract_result('RESULT #: {"task_nodes": []}') == ({"task_nodes": []}, None)


def test_the_report_pages_are_autoescaped_templates():
    """The leaderboard page and the run report are rendered from report/templates with autoescape on, not
    assembled from f-strings with html.escape at each value (one missed call would have been an injection)."""
    import inspect

    import taskbench.report.leaderboard as leaderboard
    import taskbench.run.report as run_report
    for module in (leaderboard, run_report):
        assert "<!DOCTYPE" not in inspect.getsource(module), module.__name__
    env = run_report.page_environment()
    for name in ("leaderboard.html", "run_report.html"):
        env.get_template(name)  # bundled and parses
    board = leaderboard.Leaderboard(group="overall_overall", rank_by="node_micro_f1", metrics=["node_micro_f1"],
                                    rows=[{"model": "<script>alert(1)</script>", "n": 1, "node_micro_f1": 0.5}], entries=[])
    page = leaderboard.to_html(board, plots=False)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<td>50.00</td>" in page


OUTSIDE_THE_TREE = {
    # control-flow signals private to one module (raised and caught there)
    "taskbench.agents.episode.StepCap",
    "taskbench.envs.restbench.checking.ScriptError",
    "taskbench.envs.taskbench_exec.env._CallError",
    "taskbench.eval.compat._Dropped",
    "taskbench.engine.executed.chains.Unrealizable",  # a sampled chain that cannot run: caught by the job, counted
    # the sandbox supervisor (and the run's process, _child) runs inside the sandbox and imports nothing of taskbench
    "taskbench.envs.sandbox._child.LimitExceeded",
    "taskbench.envs.sandbox._child.ToolError",
}


def test_every_exception_class_is_under_taskbench_error_or_listed():
    """JSONExtractionError, TransientProviderError, NoEndpointLeft and ApiError were Exception/ValueError
    subclasses beside the tree; now every class is in it, but for the listed module-private signals."""
    import importlib
    import inspect
    import pkgutil

    import taskbench
    from taskbench.errors import ModelError, ModelRefusedError, TaskbenchError

    outside = set()
    for info in pkgutil.walk_packages(taskbench.__path__, "taskbench."):
        if ".bundled" in info.name or info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed here
            continue
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__
                    and not issubclass(obj, TaskbenchError)):
                outside.add(f"{module.__name__}.{name}")
    assert outside <= OUTSIDE_THE_TREE, sorted(outside - OUTSIDE_THE_TREE)

    from taskbench.envs.restbench.service import ApiError
    from taskbench.llm.base import TransientProviderError
    from taskbench.llm.providers.pool import NoEndpointLeft
    from taskbench.llm.schemas import JSONExtractionError

    assert issubclass(JSONExtractionError, ModelRefusedError) and issubclass(JSONExtractionError, ValueError)
    assert issubclass(TransientProviderError, ModelError) and issubclass(NoEndpointLeft, ModelError)
    assert issubclass(ApiError, TaskbenchError)
