"""Task files for any environment (`agents eval --tasks FILE`): loading with file:line errors, setup calls, the
default checker (RestBench's conditions, VALUEs and end-state reads by tool calls), the bundled MCP examples,
and those examples solved for real against mcp-server-sqlite / server-filesystem / mcp-server-time when found."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_servers import server_or_skip
from taskbench.envs.base import Environment
from taskbench.envs.tasks import BUNDLED, load_tasks
from taskbench.errors import InputError
from taskbench.schema import ToolCall, ToolResult, ToolSpec


class Shelf(Environment):
    """A tiny stateful environment: a list of books, as JSON text (as many MCP tools answer)."""

    name = "shelf"

    def __init__(self) -> None:
        super().__init__()
        self.books: list[str] = []

    def tools(self) -> list[ToolSpec]:
        return [ToolSpec(name=n, description=n, parameters={"type": "object", "properties": {}})
                for n in ("add", "list", "clear")]

    async def _execute(self, call: ToolCall) -> ToolResult:
        if call.name == "add":
            self.books.append(str(call.arguments["title"]))
            return ToolResult(call_id=call.id, name=call.name, content="ok")
        if call.name == "clear":
            self.books = []
            return ToolResult(call_id=call.id, name=call.name, content="cleared")
        return ToolResult(call_id=call.id, name=call.name, content=json.dumps({"books": self.books}))


def write(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def run(coro: Any) -> Any:
    return asyncio.run(coro)


TASK = {"id": "add-dune", "query": "Put Dune on the shelf, then tell me how many books there are.",
        "gold_path": ["add", "list"],
        "setup": [{"call": "clear"}, {"call": "add", "args": {"title": "Emma"}}],
        "checker": [{"all": {"api": "list", "expr": "length(books)"}},
                    {"call": "list", "expr": "books", "same_items": ["Emma", "Dune"]}]}


def test_the_default_check_runs_the_task_checker(tmp_path):
    """Before task files, every environment without its own checker failed every task ("no checker")."""
    (task,) = load_tasks(write(tmp_path, TASK), env="shelf")
    env = Shelf()
    run(env.reset(0, task))
    assert env.books == ["Emma"] and env.calls == []  # setup made its calls, unrecorded
    run(env.call(ToolCall(id="1", name="add", arguments={"title": "Dune"})))
    unseen = run(env.check(task, "There are 2 books now."))  # the count was never read: not found out
    assert not unseen.success and "never appeared in a successful tool response" in unseen.reason
    run(env.call(ToolCall(id="2", name="list", arguments={})))
    good = run(env.check(task, "There are 2 books now."))
    assert good.success, good.reason
    assert good.calls == ["add", "list"] and good.details["path"]["recall"] == 1.0
    bad = run(env.check(task, "There are 3 books."))
    assert not bad.success and "does not mention [2]" in bad.reason
    run(env.reset(0, task))  # a new episode: setup puts the state back
    assert not run(env.check(task, "2")).success  # Dune was not added this time: the end state says so
    assert "end state" in run(env.check(task, "2")).reason


class Calculator(Environment):
    """Adds two numbers (JSON text, as MCP tools answer), echoes a text, and fails on demand."""

    name = "calc"

    def tools(self) -> list[ToolSpec]:
        return [ToolSpec(name=n, description=n, parameters={"type": "object", "properties": {}})
                for n in ("add", "echo", "fail")]

    async def _execute(self, call: ToolCall) -> ToolResult:
        if call.name == "add":
            a, b = call.arguments["a"], call.arguments["b"]
            return ToolResult(call_id=call.id, name=call.name, content=json.dumps({"total": a + b, "terms": [a, b]}))
        if call.name == "echo":
            return ToolResult(call_id=call.id, name=call.name, content=str(call.arguments["text"]))
        return ToolResult(call_id=call.id, name=call.name, error="failed on purpose")


SUM = {"id": "sum", "query": "What is 2 + 3?", "gold_path": ["add"],
       "checker": [{"all": {"api": "add", "args": {"a": 2, "b": 3}, "expr": "total"}}]}


def test_a_numeric_answer_may_restate_the_numbers_of_the_query(tmp_path):
    """Issue 42: "The sum of 2 and 3 is 5." failed "What is 2 + 3?": the task-file checker was built without
    the query, so 2 and 3 were "other numbers beside the count"."""
    (task,) = load_tasks(write(tmp_path, SUM))
    env = Calculator()
    run(env.reset(0, task))
    run(env.call(ToolCall(id="1", name="add", arguments={"a": 2, "b": 3})))
    for answer in ("The sum of 2 and 3 is 5.", "2 + 3 = 5", "Five.", "It is 5."):
        verdict = run(env.check(task, answer))
        assert verdict.success, (answer, verdict.reason)
    for answer in ("The sum of 2 and 3 is 6.", "5 or 6", "About 5.", "4, 5 or 6"):
        assert not run(env.check(task, answer)).success, answer


def test_a_task_file_answer_must_have_been_observed(tmp_path):
    """The ``solved`` mode for task files and MCP environments: the answer's values must have appeared in a
    successful response of the episode, not in one that echoes the agent's own arguments; answer-only mode
    (``check="answer-only"``) reads the answer alone."""
    (task,) = load_tasks(write(tmp_path, SUM))
    (literal,) = load_tasks(write(tmp_path, {**SUM, "checker": [{"all": [5]}]}))
    env = Calculator()
    for t in (task, literal):
        run(env.reset(0, t))
        assert not run(env.check(t, "The sum of 2 and 3 is 5.")).success  # from memory
        run(env.call(ToolCall(id="1", name="echo", arguments={"text": "5"})))  # the answer, echoed back
        run(env.call(ToolCall(id="2", name="fail", arguments={"a": 2, "b": 3})))
        verdict = run(env.check(t, "The sum of 2 and 3 is 5."))
        assert not verdict.success and "never appeared" in verdict.reason, verdict.reason
        run(env.call(ToolCall(id="3", name="add", arguments={"a": 2, "b": 3})))
        assert run(env.check(t, "The sum of 2 and 3 is 5.")).success
    loose = Calculator()
    loose.check_mode = "answer-only"
    run(loose.reset(0, task))
    assert run(loose.check(task, "The sum of 2 and 3 is 5.")).success


def test_a_literal_yes_needs_something_observed_in_solved_mode(tmp_path):
    (task,) = load_tasks(write(tmp_path, {"query": "Is 2 + 3 odd?", "checker": [{"yes": True}]}))
    (backed,) = load_tasks(write(tmp_path, {"query": "Is 2 + 3 odd?", "checker": [
        {"yes": True}, {"observed": {"api": "add", "args": {"a": 2, "b": 3}, "expr": "total"}}]}))
    env = Calculator()
    run(env.reset(0, task))
    run(env.call(ToolCall(id="1", name="add", arguments={"a": 2, "b": 3})))
    verdict = run(env.check(task, "Yes."))
    assert not verdict.success and "'observed'" in verdict.reason
    assert run(env.check(backed, "Yes.")).success
    run(env.reset(0, backed))
    assert not run(env.check(backed, "Yes.")).success  # nothing observed this time


def test_called_counts_only_calls_that_succeeded_in_task_files(tmp_path):
    (task,) = load_tasks(write(tmp_path, {"query": "Add 2 and 3.", "checker": [{"called": ["fail"]}]}))
    env = Calculator()
    run(env.reset(0, task))
    run(env.call(ToolCall(id="1", name="fail", arguments={})))
    verdict = run(env.check(task, "Done."))
    assert not verdict.success and "succeeded" in verdict.reason


def test_a_task_without_a_checker_says_how_to_add_one(tmp_path):
    (task,) = load_tasks(write(tmp_path, {"query": "hello"}))
    assert task.id == "line-1"
    result = run(Shelf().check(task, "hi"))
    assert not result.success and "--tasks FILE" in result.reason


def test_a_broken_checker_fails_the_check_with_its_reason(tmp_path):
    (task,) = load_tasks(write(tmp_path, {"query": "q", "checker": [{"all": {"api": "missing_tool"}}]}))
    result = run(Shelf().check(task, "x"))
    assert not result.success and "lacks" in result.reason
    with pytest.raises(InputError, match="checker expression 'books\\['"):  # refused at load (issue 42)
        load_tasks(write(tmp_path, {"query": "q", "checker": [{"call": "list", "expr": "books[", "equals": 1}]}))


def test_a_failing_setup_names_the_task(tmp_path):
    from taskbench.errors import ConfigError

    (task,) = load_tasks(write(tmp_path, {"id": "t", "query": "q", "setup": [{"call": "nope"}]}))

    class Failing(Shelf):
        async def _execute(self, call: ToolCall) -> ToolResult:
            return ToolResult(call_id=call.id, name=call.name, error="no such tool")

    with pytest.raises(ConfigError, match="set-up failed: task 't' \\(line 1 of the task file\\): call 1 \\(nope\\) failed"):
        run(Failing().reset(0, task))


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "invalid JSON"),
    ({"id": "a"}, "'query' must be a non-empty string"),
    ({"query": "q", "golden": []}, "unknown key 'golden'"),
    ({"query": "q", "gold_path": "add"}, "'gold_path' must be a list"),
    ({"query": "q", "checker": {"all": 1}}, "'checker' must be a list"),
    ({"query": "q", "checker": [{"because": 1}]}, "tests nothing"),
    ({"query": "q", "checker": [{"call": "list"}]}, "end-state condition"),
    ({"query": "q", "setup": [{"args": {}}]}, "each setup step"),
    ({"id": "a/b", "query": "q"}, "without '/'"),
])
def test_bad_task_lines_are_one_line_errors_with_their_line(tmp_path, line, message):
    path = write(tmp_path, {"query": "fine"}, line)
    with pytest.raises(InputError) as info:
        load_tasks(path)
    assert message in info.value.message and info.value.line == 2


def test_duplicate_ids_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="duplicate task id 'x'"):
        load_tasks(write(tmp_path, {"id": "x", "query": "a"}, {"id": "x", "query": "b"}))
    with pytest.raises(InputError, match="no tasks"):
        load_tasks(write(tmp_path, ""))
    with pytest.raises(InputError, match="mcp-sqlite"):
        load_tasks(tmp_path / "absent.jsonl")


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_examples_load(name):
    tasks = load_tasks(name)
    assert len(tasks) >= 3 and all(t.meta.get("checker") for t in tasks)


# ------------------------------------------------------------------------------------------ real servers

def _solve(spec: str, tasks_name: str, solutions: dict[str, tuple[list[tuple[str, dict[str, Any]]], str]]) -> None:
    pytest.importorskip("mcp", reason="the mcp package (extra [mcp]) is not installed")
    from taskbench.envs import open_environment

    env = open_environment(spec, call_timeout=30, startup_timeout=60)
    try:
        for task in load_tasks(tasks_name, env=spec):
            calls, answer = solutions[task.id]
            run(env.reset(0, task))
            for i, (name, args) in enumerate(calls):
                result = run(env.call(ToolCall(id=str(i), name=name, arguments=args)))
                assert result.error is None, result.error
            verdict = run(env.check(task, answer))
            assert verdict.success, f"{task.id}: {verdict.reason}"
            run(env.reset(1, task))  # the same task, nothing done, a wrong answer: not solved
            assert not run(env.check(task, "I do not know.")).success, task.id
    finally:
        env.close()


@pytest.mark.slow
def test_sqlite_examples_solved_for_real(tmp_path):
    exe = server_or_skip("mcp-server-sqlite")
    _solve(f"mcp:{exe} --db-path {tmp_path / 'shop.db'}", "mcp-sqlite", {
        "alice-orders": ([("read_query", {"query": "SELECT COUNT(*) FROM orders WHERE customer = 'Alice'"})],
                         "Alice has placed 2 orders."),
        "top-customer": ([("read_query", {"query": "SELECT customer, SUM(total) FROM orders GROUP BY customer"})],
                         "Chen spent the most (99.0), ahead of Alice and Bob."),
        "add-order": ([("write_query", {"query": "INSERT INTO orders (customer, total) VALUES ('Dave', 12.5)"})],
                      "Done."),
    })


@pytest.mark.slow
def test_filesystem_examples_solved_for_real(tmp_path):
    exe = server_or_skip("mcp-server-filesystem")
    _solve(f"mcp:--cwd={tmp_path} {exe} .", "mcp-filesystem", {
        "read-todo": ([("read_text_file", {"path": "notes/todo.txt"})], "Buy milk, and call Ana."),
        "write-shopping": ([("write_file", {"path": "notes/shopping.txt", "content": "bread\neggs\n"})], "Done."),
        "make-archive": ([("create_directory", {"path": "notes/archive"})], "Done."),
    })


@pytest.mark.slow
def test_time_examples_solved_for_real():
    exe = server_or_skip("mcp-server-time")
    import datetime

    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    _solve(f"mcp:{exe} --local-timezone=UTC", "mcp-time", {
        "london-tokyo": ([("convert_time", {"source_timezone": "Europe/London", "time": "09:00",
                                            "target_timezone": "Asia/Tokyo"})], "It is 18:00 (or 17:00 in summer)."),
        "ny-berlin": ([("convert_time", {"source_timezone": "America/New_York", "time": "12:00",
                                         "target_timezone": "Europe/Berlin"})], "Berlin is 6 hours ahead."),
        "today-utc": ([("get_current_time", {"timezone": "UTC"})], f"Today is {today}."),
    })


def test_agents_eval_runs_a_task_file_on_an_mcp_server(tmp_path, capsys):
    """`agents eval --env mcp:... --tasks FILE`: before, "has no tasks to run" (exit 2)."""
    pytest.importorskip("mcp", reason="the mcp package (extra [mcp]) is not installed")
    from cli_runner import run as cli

    server = Path(__file__).parent / "data" / "mcp_server.py"
    tasks = write(tmp_path, {"id": "sum", "query": "What is 2 + 3?", "gold_path": ["add"],
                             "checker": [{"all": {"api": "add", "args": {"a": 2, "b": 3}, "expr": "total"}}]})
    out = tmp_path / "run"
    code, stdout, err = cli(capsys, "agents", "eval", "--env", f"mcp:{sys.executable} {server}", "--tasks",
                            str(tasks), "--agent", "react", "--model", "mock/echo", "--tools", "gold",
                            "--max-steps", "1", "--bootstrap", "0", "-o", str(out), "-q")
    assert code == 0, err
    record = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
    assert record["id"] == "react/sum/s0"
    assert "no checker" not in json.dumps(record)
    bad = cli(capsys, "agents", "eval", "--env", "mcp:x", "--tasks", str(tmp_path / "nope.jsonl"), "--agent",
              "react", "--model", "mock/echo", "-o", str(tmp_path / "run2"), "-q")
    assert bad[0] == 2 and "nope.jsonl" in bad[2] and not (tmp_path / "run2").exists()
