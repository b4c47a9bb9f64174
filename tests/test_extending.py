"""Issue 44, point 2: an agent, a metric and a tool-library format added from one file outside the package.

The plugin file is the Python blocks of docs/extending.md, written to a temporary directory and named in
``TASKBENCH_PLUGINS``, as a user would. Each addition must then be listed by the command line's help, checked
by its validation (a near-miss name gets a did-you-mean), and work end to end: a graph built from a file in
the new format, a metric in the metrics JSON, the strict table, the leaderboard and the glossary, an agent run
by ``agents eval`` and described by the viewer. The registries themselves: a taken name is refused, a broken
plugin is one line naming it, and the docs' agent table lists exactly the registered agents.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_runner import run
from taskbench import _plugins, bundled
from taskbench.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"
ADDED = {"agent": "one-call", "metric": "first_tool_accuracy", "format": "tooltable"}


def plugin_source() -> str:
    """The docs page's Python blocks, as one module."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 3, "docs/extending.md has one worked example per extension point"
    return "\n\n".join(blocks)


def _forget(path: Path) -> None:
    from taskbench.agents.registry import unregister_agent
    from taskbench.eval.metrics import unregister_metric
    from taskbench.graph.formats import unregister_tool_format

    unregister_agent(ADDED["agent"])
    unregister_metric(ADDED["metric"])
    unregister_tool_format(ADDED["format"])
    sys.modules.pop(f"taskbench_plugin_{path.stem}", None)
    _plugins._loaded.discard(str(path))


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "my_extension.py"
    path.write_text(plugin_source(), encoding="utf-8")
    monkeypatch.setenv(_plugins.PLUGINS_ENV, str(path))
    monkeypatch.setenv("COLUMNS", "250")
    yield path
    _forget(path)


def _flat(text: str) -> str:
    """Help text without the panels' borders and line breaks."""
    return " ".join(text.replace("│", " ").split())


def test_the_additions_are_in_the_help(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "agents", "eval", "--help")
    assert code == 0 and "one-call" in _flat(out)
    code, out, _ = run(capsys, "evaluate", "--help")
    assert code == 0 and "f1,ed,link,argument,rouge,bertscore,first" in _flat(out)
    code, out, _ = run(capsys, "compare", "--help")
    assert code == 0 and "f1,ed,link,argument,rouge,first" in _flat(out)
    for command in (["graph", "build"], ["graph", "stats"], ["sample"], ["generate"]):
        code, out, _ = run(capsys, *command, "--help")
        assert code == 0 and "openapi or tooltable" in _flat(out), command
    code, out, _ = run(capsys, "graph", "build", "--help")
    assert 'a tool table {"tooltable": [...]}' in _flat(out)  # what a tool library file may be


def test_without_the_plugin_the_help_lists_the_built_ins_only(capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_plugins.PLUGINS_ENV, raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    code, out, _ = run(capsys, "graph", "build", "--help")
    assert code == 0 and "auto (detect), taskbench, openai, mcp or openapi." in _flat(out)
    assert "{formats}" not in out and "tooltable" not in out
    code, out, _ = run(capsys, "agents", "eval", "--help")
    assert "{agents}" not in out and "one-call" not in out and "alpha-umi" in out


def test_the_additions_are_validated_by_name(plugin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdb", "--agent", "one-cal", "--model",
                       "mock/echo", "-o", str(tmp_path / "run"))
    assert code == 2 and "did you mean 'one-call'" in err and "Traceback" not in err
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"id": "x", "result": {}}\n')
    code, _, err = run(capsys, "evaluate", "--data", "multimedia", "-p", str(preds), "--metrics", "f1,frist")
    assert code == 2 and "did you mean 'first'" in err
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tooltable": [{"name": "a"}]}))
    code, _, err = run(capsys, "graph", "build", str(tools), "--format", "tooltabel")
    assert code == 2 and "did you mean 'tooltable'" in err


def test_a_library_in_the_new_format_builds_a_graph(plugin: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tooltable": [
        {"name": "search_movie", "about": "Find a movie by title; returns its movie_id.", "args": ["title"]},
        {"name": "movie_credits", "about": "The cast of a movie.", "args": ["movie_id"]},
        {"name": "person_details", "about": "Details of a person.", "args": ["person_id"]},
    ]}))
    for fmt in ("auto", "tooltable"):  # detected from the document's shape, or named
        out = tmp_path / f"graph-{fmt}.json"
        code, _, err = run(capsys, "graph", "build", str(tools), "--format", fmt, "-o", str(out))
        assert code == 0, err
        assert [n["id"] for n in json.loads(out.read_text())["nodes"]] == ["search_movie", "movie_credits",
                                                                           "person_details"]
    tools.write_text(json.dumps({"tooltable": [{"name": "a"}, {"name": "a"}]}))
    code, _, err = run(capsys, "graph", "build", str(tools), "-o", str(tmp_path / "g.json"))
    assert code == 2 and "duplicate tool id 'a'" in err  # the rules every format keeps
    tools.write_text(json.dumps({"tooltable": [{"about": "nameless"}]}))
    code, _, err = run(capsys, "graph", "build", str(tools), "-o", str(tmp_path / "g.json"))
    assert code == 2 and "tools.json:1: tool #0 has no 'name'" in err  # the format's own error, located


def _predictions(path: Path) -> float:
    """Predictions for the bundled multimedia set: the gold graph, its tools reversed in every third sample;
    returns the share of samples whose first predicted tool is the gold's first."""
    gold = [json.loads(line) for line in (bundled.resolve_dir("multimedia") / "data.json").read_text().splitlines()]
    right = 0
    with path.open("w") as fh:
        for i, g in enumerate(gold):
            nodes = list(reversed(g["task_nodes"])) if i % 3 == 0 else g["task_nodes"]
            right += nodes[0]["task"] == g["task_nodes"][0]["task"]
            result = {"task_steps": g["task_steps"], "task_nodes": nodes, "task_links": g["task_links"]}
            fh.write(json.dumps({"id": g["id"], "result": result}) + "\n")
    return right / len(gold)


def test_the_new_metric_is_scored_tabled_ranked_and_explained(plugin: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    preds = tmp_path / "model-a.jsonl"
    expected = _predictions(preds)
    assert 0 < expected < 1
    metrics = tmp_path / "model-a.json"
    code, out, err = run(capsys, "evaluate", "--data", "multimedia", "-p", str(preds), "--metrics", "f1,first",
                         "--bootstrap", "50", "-o", str(metrics))
    assert code == 0, err
    doc = json.loads(metrics.read_text())
    overall = doc["groups"]["overall_overall"]
    assert overall["metrics"]["first_tool_accuracy"] == pytest.approx(expected)
    assert "first_tool_accuracy" in overall["ci"] and doc["metrics"] == ["f1", "first"]
    assert "first tool" in out  # a headline metric: a column of the strict table
    # not asked for: not scored (its family is not a default one)
    code, _, err = run(capsys, "evaluate", "--data", "multimedia", "-p", str(preds), "--bootstrap", "0", "-o",
                       str(tmp_path / "plain.json"))
    assert code == 0 and "first_tool_accuracy" not in (tmp_path / "plain.json").read_text()
    # the leaderboard ranks by it, in the right direction, with its label
    code, out, err = run(capsys, "leaderboard", str(metrics), "--rank-by", "first_tool_accuracy")
    assert code == 0 and "first tool" in out, err
    from taskbench.report.leaderboard import glossary_lines
    from taskbench.report.view.boards import legend

    assert glossary_lines({"first tool"}) == [
        "first tool: samples whose first predicted tool is the gold graph's first tool; higher is better"]
    assert any(m["key"] == "first_tool_accuracy" and m["label"] == "first tool" for m in legend()["metrics"])


def test_the_new_agent_runs_from_the_command_line(plugin: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "TASKBENCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "taskbench", "agents", "eval", "--env", "restbench-tmdb", "--task-set", "own",
           "--limit", "1", "--agent", "one-call", "--model", "mock/echo", "--tools", "gold", "--bootstrap", "0",
           "-o", str(out), "-q"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads((out / "metrics.json").read_text())["agents"]) == {"one-call"}
    record = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
    events = [json.loads(line) for line in (out / record["trajectory"]).read_text().splitlines()]
    assert events[0]["models"] == {"caller": "mock/echo"}  # its own role took --model
    assert [e["kind"] for e in events if e["record"] == "event"] == ["model_call", "model_call", "final_answer"]


def test_the_new_agent_calls_a_tool_is_checked_and_described(plugin: Path, tmp_path: Path) -> None:
    from agent_helpers import mock, run_one
    from taskbench._plugins import load_plugins
    from taskbench.llm.providers.mock import tool_calls

    load_plugins()
    # success is proven by what the agent saw: one call answers "the three most popular movies" (tmdb-own-12)
    caller = mock("caller", [tool_calls(("GET /movie/popular", {})), "Barbie, Oppenheimer and Meg 2: The Trench."])
    traj, record, _ = run_one(tmp_path, "one-call", {"caller": caller}, task="tmdb-own-12")
    kinds = [e.kind for e in traj.events]
    assert kinds == ["model_call", "tool_call", "model_call", "final_answer"]
    assert record["success"] is True and record["tool_calls"] == 1
    from taskbench.report.view.agents import about

    described = about(["one-call", "react@3", "not-registered"])
    assert described["one-call"] == {"description": "one tool call chosen by the model, then the answer from its "
                                                    "result", "roles": ["caller"], "uses_code": False}
    assert described["react@3"]["roles"] == ["react"] and "not-registered" not in described


def test_a_broken_plugin_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "broken_plugin.py"
    bad.write_text("import not_a_module_anywhere\n")
    monkeypatch.setenv(_plugins.PLUGINS_ENV, str(bad))
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdb", "--agent", "react", "--model", "mock/echo",
                       "-o", str(tmp_path / "run"))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"plugin '{bad}' (TASKBENCH_PLUGINS) failed to load: ModuleNotFoundError" in err
    monkeypatch.setenv(_plugins.PLUGINS_ENV, str(tmp_path / "nowhere.py"))
    with pytest.raises(ConfigError, match="no such file"):
        _plugins.load_plugins()
    monkeypatch.setenv(_plugins.PLUGINS_ENV, "no_such_plugin_module")
    with pytest.raises(ConfigError, match="'no_such_plugin_module' .* failed to load"):
        _plugins.load_plugins()


def test_a_taken_name_is_refused_unless_replaced() -> None:
    from taskbench.agents.registry import agent_info, register_agent
    from taskbench.eval.metrics import Metric, find_metric, register_metric
    from taskbench.graph.formats import ToolFormat, get_format, register_tool_format

    react = agent_info("react")
    with pytest.raises(ConfigError, match="agent 'react' is already registered"):
        register_agent("react", react.make, roles=("react",), description="another react")
    with pytest.raises(ConfigError, match="'toolllm@N' already retries 'dfsdt'"):
        register_agent("my-search", react.make, roles=("react",), description="x", retry_name="toolllm")
    with pytest.raises(ConfigError, match="lower-case letters"):
        register_agent("My Agent", react.make, roles=("react",), description="x")
    f1 = find_metric("node_micro_f1")
    assert f1 is not None
    with pytest.raises(ConfigError, match="already registered"):
        register_metric(Metric(key="node_micro_f1", label="mine", family="mine", direction="higher",
                               explanation="x", sample=lambda g, p: 0.0))
    with pytest.raises(ConfigError, match="label 'n-F1' is taken"):
        register_metric(Metric(key="my_f1", label="n-F1", family="mine", direction="higher", explanation="x",
                               sample=lambda g, p: 0.0))
    with pytest.raises(ConfigError, match="per-sample function"):
        register_metric(Metric(key="my_f1", label="my", family="mine", direction="higher", explanation="x"))
    with pytest.raises(ConfigError, match="already registered"):
        register_tool_format(ToolFormat("openai", "OpenAI tools", get_format("mcp").load))
    # the same entry again (a module imported twice) is no error, and replace=True is a decision
    register_agent("react", react.make, roles=react.roles, description=react.description,
                   retry_name=react.retry_name)
    assert agent_info("react") == react


def test_the_docs_agent_table_lists_the_registered_agents() -> None:
    from taskbench.agents.registry import agent_names, retry_names

    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    table = text[text.index("## The agents"):].split("\n\n")[1]
    named = {n for row in table.splitlines()[2:] for n in re.findall(r"`([^`]+)`", row.split("|")[1])}
    assert named == set(agent_names()) | {f"{r}@N" for r in retry_names()}


def test_the_metric_table_is_what_every_view_reads() -> None:
    from taskbench.eval.metrics import BUILTIN, families, metric_table
    from taskbench.report import leaderboard, tables
    from taskbench.run import report

    table = metric_table()
    labels = [m.label for m in table.values()]
    assert len(set(labels)) == len(labels) and all(m.explanation and m.direction in ("higher", "lower")
                                                   for m in table.values())
    for key, label in (*leaderboard.BOARD_METRICS, *report.SUMMARY_METRICS):
        assert table[key].label == label
    for label, key in (*tables.STRICT_COLUMNS, *tables.ACCURACY_COLUMNS):
        assert table[key].label == label
    assert leaderboard.LOWER_IS_BETTER == {"edit_distance", "parse_failure_rate", "call_failure_rate",
                                           "missing_rate"}
    assert families() == ["f1", "ed", "link", "argument", "rouge", "bertscore"]
    assert [m.key for m in BUILTIN] == list(table)[:len(BUILTIN)]


def test_a_module_dropped_into_the_extension_package_registers_itself(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What agents/baselines/, eval/metrics/ and graph/formats/ rely on: every module of the registry's package is
    imported on the first read, with no list to update."""
    from taskbench._plugins import Registry

    pkg = tmp_path / "my_extensions_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from taskbench._plugins import Registry\nREG = Registry('widget', "
                                     "package=__name__)\nREG.register('built-in', 1)\n")
    (pkg / "added.py").write_text("from . import REG\nREG.register('added', 2)\n")
    (pkg / "_private.py").write_text("raise RuntimeError('not imported: a private module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import my_extensions_pkg

        registry: Registry[int] = my_extensions_pkg.REG
        assert registry.registered() == {"built-in": 1}  # nothing imported before the first read
        assert registry.names() == ["built-in", "added"] and "added" in registry
    finally:
        for name in [m for m in sys.modules if m.startswith("my_extensions_pkg")]:
            sys.modules.pop(name)
