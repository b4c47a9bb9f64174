"""`generate --env`: the environment's state in the generation prompt, every gold graph executed in it (the exec
critic), and the generated dataset as agent tasks (`agents eval --tasks DIR`).

Fast tests on an in-process SQL environment with the tools mcp-server-sqlite offers (list_tables,
describe_table, read_query, write_query over sqlite3) and a scripted generator that, like the models in
issue 27, queries a table it saw in the prompt, or "users" when it saw none; the same path against the real
server is tests/test_mcp_walkthrough.py."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from engine_oracle import prompt_of
from taskbench.engine.generate import GenerateOptions, generate
from taskbench.envs.base import Environment
from taskbench.envs.tasks import load_tasks
from taskbench.errors import ConfigError
from taskbench.graph.build import build_graph
from taskbench.llm import get_model
from taskbench.records import run_sync
from taskbench.schema import AgentTask, ToolCall, ToolLibrary, ToolResult, ToolSpec

PARAMS = {
    "list_tables": {},
    "describe_table": {"table_name": {"type": "string"}},
    "read_query": {"query": {"type": "string"}},
    "write_query": {"query": {"type": "string"}},
}


class SqlEnv(Environment):
    """The sqlite server's tools over an in-memory database; results as that server gives them (a repr)."""

    name = "sql-test"

    def __init__(self) -> None:
        super().__init__()
        self.db = sqlite3.connect(":memory:")
        self.db.row_factory = sqlite3.Row
        self.db.executescript("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);"
                              "INSERT INTO customers VALUES (1, 'Ana', 'Lisbon'), (2, 'Bo', 'Oslo');"
                              "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL);"
                              "INSERT INTO orders VALUES (1, 1, 30.5)")

    def tools(self) -> list[ToolSpec]:
        return [ToolSpec(name=n, description=n, parameters={"type": "object", "properties": p})  # type: ignore[arg-type]
                for n, p in PARAMS.items()]

    async def _execute(self, call: ToolCall) -> ToolResult:
        def rows(sql: str, *args: Any) -> str:
            return str([dict(r) for r in self.db.execute(sql, args).fetchall()])

        try:
            if call.name == "list_tables":
                text = rows("SELECT name FROM sqlite_master WHERE type='table'")
            elif call.name == "describe_table":
                text = rows(f"PRAGMA table_info({call.arguments['table_name']})")
            else:
                text = rows(str(call.arguments.get("query", "")))
        except (sqlite3.Error, KeyError) as exc:  # as mcp-server-sqlite does: an answer, not an MCP error
            return ToolResult(call_id=call.id, name=call.name, content=f"Database error: {exc}")
        return ToolResult(call_id=call.id, name=call.name, content=text)


def library() -> ToolLibrary:
    """The tools as an MCP tools/list gives them, through the MCP loader."""
    from taskbench.graph.loaders import JsonSource, tools_from_mcp

    doc = {"tools": [{"name": n, "description": f"{n} of the database",
                      "inputSchema": {"type": "object", "properties": p, "required": list(p)}}
                     for n, p in PARAMS.items()]}
    return ToolLibrary(tools=tools_from_mcp(JsonSource(None, json.dumps(doc), doc)), dependency="temporal")


def scripted(request: Any) -> str:
    """Answers with a query over the first table the prompt's state lists, else over "users"."""
    prompt = prompt_of(request)
    tables = re.findall(r"^- table (\w+):", prompt, re.M)
    table = tables[0] if tables else "users"
    names = [json.loads(ln)["id"] for ln in prompt.splitlines() if ln.startswith('{"id"')]
    values = {"list_tables": [], "describe_table": [{"name": "table_name", "value": table}],
              "read_query": [{"name": "query", "value": f"SELECT COUNT(*) AS n FROM {table}"}],
              "write_query": [{"name": "query", "value": f"DELETE FROM {table} WHERE id = 99"}]}
    edges = [ln.split(" -> ") for ln in prompt.splitlines() if " -> " in ln and not ln.startswith("{")]
    return json.dumps({
        "task_steps": [f"Step {i + 1}: use {n}" for i, n in enumerate(names)],
        "user_request": f"How many rows does the {table} table of my shop database hold right now?",
        "invoking_graph": {"nodes": [{"task": n, "arguments": values[n]} for n in names],
                           "links": [{"source": s, "target": t.split(" (")[0]} for s, t in edges]},
        "check_by_teacher": {"comments": "Let me check your result step by step. Fine.", "executable": True,
                             "correct": True},
    })


def graph() -> Any:
    from taskbench.schema import ToolLink

    g = build_graph(library())
    return g.model_copy(update={"links": [ToolLink(source="list_tables", target="describe_table"),
                                          ToolLink(source="describe_table", target="read_query")]})


def run(tmp: Path, env: Environment | None, n: int = 6) -> tuple[Path, Any, Any]:
    model = get_model("mock/script", responses=scripted, cache=False, max_retries=0)
    out = tmp / "gen"
    summary = generate(graph(), model, out, GenerateOptions(n=n, guided=False, seed=3), env=env)
    return out, summary, model


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def test_read_state_lists_tables_columns_rows() -> None:
    env = SqlEnv()
    state = run_sync(env.read_state())
    assert state is not None
    assert "table customers: id INTEGER primary key, name TEXT, city TEXT; 2 rows" in state
    assert "table orders" in state and '"Lisbon"' in state
    assert env.calls == []  # unrecorded


def test_the_prompt_shows_the_state_and_gold_graphs_run_in_the_environment(tmp_path: Path) -> None:
    env = SqlEnv()
    out, summary, model = run(tmp_path, env)
    prompts = [prompt_of(r) for r in model.provider.requests]
    assert prompts and all("# ENVIRONMENT STATE #" in p and "- table customers:" in p for p in prompts)
    assert (out / "env_state.txt").read_text().startswith("The database has 2 tables:")
    raw = lines(out / "data_raw.json")
    assert all(r["execution"]["passed"] for r in raw), [r["execution"] for r in raw]
    read = [c for r in raw for c in r["execution"]["calls"] if c["tool"] == "read_query"]
    assert read and all(c["result"] == "[{'n': 2}]" for c in read)  # it really ran: customers has 2 rows
    stats = summary.statistics
    assert stats["exec_critic"] == {"passed": 6, "rate": 1.0, "run": 6}
    kept = lines(out / "data.json")
    assert len(kept) == 6 and all(s["critics"]["exec"]["passed"] for s in kept)


def test_without_the_state_the_gold_graph_fails_and_the_exec_critic_rejects_it(tmp_path: Path) -> None:
    """The issue's failure: no state in the prompt, the gold graph queries "users", which does not exist.
    The state read is switched off so the prompt has none; the environment still executes."""

    class Blind(SqlEnv):
        async def read_state(self) -> str | None:
            return None

    out, summary, _ = run(tmp_path, Blind())
    raw = lines(out / "data_raw.json")
    queried = [r for r in raw if any(n["task"] in ("read_query", "write_query")  # a missing table errs there
                                     for n in r["result"]["invoking_graph"]["nodes"])]
    assert queried  # the plan has samples that read a table
    for r in queried:
        assert r["execution"]["passed"] is False
        assert "users" in r["execution"]["reasons"][0] and r["execution"]["reasons"][0].startswith("exec_failed")
    errors = {e["id"]: e for e in lines(out / "data_error.json")}
    assert {r["id"] for r in queried} <= set(errors)
    assert all(any(x.startswith("exec_failed: node") for x in errors[r["id"]]["reasons"]) for r in queried)
    stats = summary.statistics
    assert stats["exec_critic"]["run"] == 6 and stats["exec_critic"]["passed"] == 6 - len(queried)
    assert stats["reasons"]["exec_failed"] == len(queried)
    kept_ids = {s["id"] for s in lines(out / "data.json")}
    assert not kept_ids & {r["id"] for r in queried}


def test_keep_none_keeps_a_failed_gold_graph_and_no_env_means_no_exec_verdict(tmp_path: Path) -> None:
    model = get_model("mock/script", responses=scripted, cache=False, max_retries=0)
    out = tmp_path / "plain"
    summary = generate(graph(), model, out, GenerateOptions(n=3, guided=False, seed=3))
    assert "exec_critic" not in summary.statistics
    assert all("execution" not in r for r in lines(out / "data_raw.json"))
    assert not (out / "env_state.txt").exists()


def test_a_rerun_with_another_environment_is_refused(tmp_path: Path) -> None:
    out, _, _ = run(tmp_path, SqlEnv(), n=2)
    with pytest.raises(ConfigError):
        run(tmp_path, None, n=2)


def test_an_environment_without_the_graphs_tools_is_refused(tmp_path: Path) -> None:
    class Other(SqlEnv):
        def tools(self) -> list[ToolSpec]:
            return [ToolSpec(name="get_time", parameters={"type": "object"})]

    model = get_model("mock/script", responses=scripted, cache=False, max_retries=0)
    with pytest.raises(ConfigError, match="none of the tool graph's tools"):
        generate(graph(), model, tmp_path / "x", GenerateOptions(n=1, guided=False), env=Other())
    assert not (tmp_path / "x").exists()


def test_the_generated_dataset_is_a_task_file_whose_checker_passes_the_gold_and_fails_doing_nothing(
        tmp_path: Path) -> None:
    env = SqlEnv()
    out, _, _ = run(tmp_path, env)
    tasks = load_tasks(out, env="sql-test")
    kept = lines(out / "data.json")
    assert [t.id for t in tasks] == [s["id"] for s in kept]

    async def play(task: AgentTask, calls: list[tuple[str, dict[str, Any]]], answer: str) -> Any:
        await env.reset(task=task)
        for name, args in calls:
            await env.call(ToolCall(id=name, name=name, arguments=args))
        return await env.check(task, answer)

    for task, sample in zip(tasks, kept, strict=True):
        assert task.query == sample["user_request"]
        calls = sample["critics"]["exec"]["raw"]
        assert task.gold_path == [c["tool"] for c in calls]
        gold = run_sync(play(task, [(c["tool"], c["arguments"]) for c in calls], f"It says: {calls[-1]['result']}"))
        assert gold.success, gold.reason
        idle = run_sync(play(task, [], "I do not know."))
        assert not idle.success
        if task.gold_path[-1] == "read_query":  # the answer must mention what the gold's last call returned
            wrong = run_sync(play(task, [(c["tool"], c["arguments"]) for c in calls], "It has 7 rows."))
            assert not wrong.success and "does not mention" in wrong.reason


def test_the_state_of_the_real_sqlite_and_filesystem_servers(tmp_path: Path) -> None:
    """Read through the real servers' own tools (installed by make mcp-servers)."""
    from mcp_servers import server_or_skip
    from taskbench.envs import open_environment

    db = sqlite3.connect(tmp_path / "shop.db")
    db.executescript("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'Ana')")
    db.commit()
    db.close()
    env = open_environment(f"mcp:{server_or_skip('mcp-server-sqlite')} --db-path {tmp_path / 'shop.db'}")
    try:
        state = run_sync(env.read_state())
    finally:
        env.close()
    assert state == ('The database has 1 table:\n- table customers: id INTEGER primary key, name TEXT; 1 rows; '
                     'first rows: [{"id": 1, "name": "Ana"}]')
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "notes.txt").write_text("hi")
    env = open_environment(f"mcp:{server_or_skip('mcp-server-filesystem')} {tmp_path / 'files'}")
    try:
        state = run_sync(env.read_state())
    finally:
        env.close()
    assert state is not None and "[FILE] notes.txt" in state and str(tmp_path / "files") in state
