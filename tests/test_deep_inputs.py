"""Inputs that used to escape validation as tracebacks (issue 43, point 13): YAML values JSON has no word for
(``!!set``, ``!!pairs``, ``!!omap``), tool schemas nested past pydantic's recursion limit (OpenAI and MCP tool
lists), and a task file whose checker nests deeply. Each is read (YAML) or refused in one line naming the file.
"""

from __future__ import annotations

import json

import pytest

from cli_runner import run as cli
from taskbench.dataset.yamldoc import read_yaml


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def _deep_schema(levels: int) -> dict:
    deep: dict = {"type": "string"}
    for _ in range(levels):
        deep = {"type": "object", "properties": {"a": deep}}
    return deep


def test_yaml_sets_pairs_and_omaps_read_as_json_would_hold_them():
    _, doc = read_yaml("s: !!set {b, a}\np: !!pairs [{a: 1}, {a: 2}]\no: !!omap [{x: 1}, {y: 2}]\n")
    assert doc == {"s": ["a", "b"], "p": [["a", 1], ["a", 2]], "o": [["x", 1], ["y", 2]]}
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("text", [
    "- name: t\n  description: d\n  parameters: {type: object, properties: !!set {a, b}}\n",
    "- name: t\n  description: d\n  parameters: {type: object, properties: {a: {enum: !!pairs [{x: 1}]}}}\n",
])
def test_a_yaml_tool_list_with_a_set_or_pairs_is_built_or_refused_in_one_line(text, tmp_path, capsys):
    (tmp_path / "tools.yaml").write_text(text)
    code, _, err = cli(capsys, "graph", "build", "tools.yaml", "-o", "g.json")
    assert "Traceback" not in err and code in (0, 2), err
    if code == 2:
        assert err.strip().splitlines()[-1].startswith("taskbench: error: tools.yaml")


@pytest.mark.parametrize("kind", ["openai", "mcp"])
def test_a_tool_schema_nested_past_the_limit_is_one_line(kind, tmp_path, capsys):
    deep = _deep_schema(300)
    doc = ([{"type": "function", "function": {"name": "t", "description": "d", "parameters": deep}}]
           if kind == "openai" else {"tools": [{"name": "t", "description": "d", "inputSchema": deep}]})
    (tmp_path / "tools.json").write_text(json.dumps(doc))
    code, _, err = cli(capsys, "graph", "build", "tools.json", "-o", "g.json")
    assert code == 2 and "Traceback" not in err, err
    assert "nested deeper than 64 levels" in err.strip().splitlines()[-1]
    assert not (tmp_path / "g.json").exists()


def test_a_tool_schema_at_the_limit_is_accepted(tmp_path, capsys):
    (tmp_path / "tools.json").write_text(json.dumps({"tools": [{"name": "t", "inputSchema": _deep_schema(30)}]}))
    code, _, err = cli(capsys, "graph", "build", "tools.json", "-o", "g.json")
    assert code == 0, err


@pytest.mark.parametrize("nest", ["any", "list"])
def test_a_deeply_nested_task_checker_is_one_line(nest, tmp_path, capsys):
    cond: object = {"all": ["x"]}
    for _ in range(400):
        cond = {"any": [cond]} if nest == "any" else [cond]
    checker = [cond] if nest == "any" else [{"all": cond}]
    (tmp_path / "tasks.jsonl").write_text(json.dumps({"id": "t", "query": "q", "checker": checker}) + "\n")
    code, _, err = cli(capsys, "agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m",
                       "mock/echo", "--tasks", "tasks.jsonl", "-q", "--bootstrap", "0", "-o", "run")
    assert code == 2 and "Traceback" not in err, err
    assert "tasks.jsonl:1: the task nests deeper than 64 levels" in err.strip().splitlines()[-1]
    assert not (tmp_path / "run").exists()
