"""The agents' prompt pieces, pure: tool documentation (lines, signatures, response shapes, typed calls),
output schemas, and parsing of plans, verdicts and code."""

from __future__ import annotations

import json

import jsonschema
import pytest

from taskbench.agents import tooldocs
from taskbench.agents.prompts import (
    FINISH,
    extract_code,
    final_answer,
    parse_plan,
    parse_verdict,
    plan_schema,
    render,
    review_schema,
)
from taskbench.envs import open_environment
from taskbench.schema import HttpOperation, ToolSpec

SPEC = ToolSpec(
    name="GET /search/person",
    description="Search People. Search for people by name. Pages of 20.",
    parameters={"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string", "description": "Text to search for. URI encoded."},
        "page": {"type": "integer", "description": "Which page."},
        "include_adult": {"type": "boolean"},
        "region": {"type": "string", "enum": ["US", "GB"]}}},
    output_schema={"type": "object", "properties": {
        "page": {"type": "integer"},
        "results": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "integer"}, "name": {"type": "string"},
            "known_for": {"type": "array", "items": {"oneOf": [{"type": "object", "properties": {
                "title": {"type": "string"}}}]}}}}}}},
)


def test_tool_line_and_signature() -> None:
    assert tooldocs.tool_line(SPEC) == ("- GET /search/person: Search People. Search for people by name. "
                                        "Arguments: query*, page, include_adult, region")
    assert tooldocs.signature(SPEC, "GET_search_person") == (
        "GET_search_person(query: str, page: int = None, include_adult: bool = None, region: str = None)")
    help_text = tooldocs.argument_help(SPEC)
    assert "query (str, required): Text to search for." in help_text and 'One of: "US", "GB"' in help_text


def test_response_shape() -> None:
    assert tooldocs.shape(SPEC.output_schema) == (
        '{"page": int, "results": [{"id": int, "name": str, "known_for": [...]}, ...]}')
    assert tooldocs.shape(SPEC.output_schema, depth=5) == (
        '{"page": int, "results": [{"id": int, "name": str, "known_for": [{"title": str}, ...]}, ...]}')
    example = {"page": 1, "results": [{"id": 31, "name": "Tom Hanks", "popularity": 9.5, "adult": False}]}
    assert tooldocs.example_shape(example) == (
        '{"page": int, "results": [{"id": int, "name": str, "popularity": float, "adult": bool}, ...]}')
    op = HttpOperation(method="GET", path="/search/person", response_example=example)
    assert tooldocs.returns(SPEC.model_copy(update={"output_schema": None, "http": op})).startswith('{"page": int')


def test_python_call_types_the_values() -> None:
    call = tooldocs.python_call(SPEC, "GET_search_person", {"query": "Tom Hanks", "page": "2",
                                                            "include_adult": "false", "region": "GB"})
    assert call == "GET_search_person(query='Tom Hanks', page=2, include_adult=False, region='GB')"
    assert tooldocs.python_call(SPEC, "f", {"page": "two"}) == "f(page='two')"  # not a number: left as text
    assert tooldocs.python_call(None, "f", {"a-b": "1"}) == "f(**{'a-b': '1'})"


def test_every_environment_tool_documents_itself() -> None:
    for name in ("restbench-tmdb", "restbench-spotify", "taskbench-multimedia", "taskbench-dailylifeapis"):
        env = open_environment(name)
        for spec in env.tools():
            doc = tooldocs.execution_doc(spec, "fn")
            # the complete response shape: Spotify's /search (seven paged kinds of item) is the longest, ~5 kB
            assert doc.startswith("fn(") and "Returns: " in doc and len(doc) < 6000, (name, spec.name)


def test_schemas_accept_what_the_parsers_read() -> None:
    schema = plan_schema(["GET /search/person", "GET /person/{person_id}"])
    call = {"thought": "find her", "action": {"tool": "GET /search/person", "arguments": [
        {"name": "query", "value": "Sofia Coppola"}], "target": "her id"}}
    done = {"thought": "known", "action": {"tool": FINISH, "answer": "Eight."}}
    for doc in (call, done):
        jsonschema.validate(doc, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"thought": "", "action": {"tool": "GET /nope", "arguments": [], "target": ""}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"thought": "x" * 161, "action": done["action"]}, schema)  # bounded
    plan, why = parse_plan(call)
    assert why is None and plan is not None and plan.tool == "GET /search/person" and not plan.finish
    assert plan.arguments == {"query": "Sofia Coppola"} and plan.target == "her id"
    assert plan.describe() == 'GET /search/person (query="Sofia Coppola") -> target: her id'
    plan, _ = parse_plan(done)
    assert plan is not None and plan.finish and plan.answer == "Eight."
    # the flat shape, arguments as an object, values that are not text
    plan, _ = parse_plan({"tool": "X", "arguments": {"id": 7, "flag": True}})
    assert plan is not None and plan.arguments == {"id": "7", "flag": "true"}
    assert parse_plan([1, 2]) == (None, "the answer is not a JSON object")
    assert parse_plan({"thought": "no tool"})[0] is None
    verdict = {"problem": "missing_arguments", "feedback": "add the query", "route": "grounding", "verdict": "revise"}
    jsonschema.validate(verdict, review_schema())
    v, _ = parse_verdict(verdict)
    assert v is not None and not v.accept and v.route == "grounding"
    v, _ = parse_verdict({"problem": "none"})
    assert v is not None and v.accept


def test_extract_code_and_final_answer() -> None:
    assert extract_code("```python\nresult = 1\n```\nThis sets result.") == "result = 1"
    assert extract_code("Here you go:\n```py\nx = 2\nresult = x\n") == "x = 2\nresult = x"  # cut at the stop
    assert extract_code("result = GET_x()['a']") == "result = GET_x()['a']"
    assert extract_code("Final answer: 42") is None and extract_code("The answer is 42.") is None
    assert extract_code("") is None and extract_code("```python\n```") is None
    assert final_answer("I found it.\nFinal answer: Heath Ledger") == "Heath Ledger"
    assert final_answer("no marker") is None


def test_prompts_render_from_the_data_files() -> None:
    text = render("grounding_user", task="T?", steps=[], feedback="", note="")
    assert text == "Task: T?\n\nNo steps yet.\n\nGive the next step as one JSON object."
    system = render("grounding", tools=tooldocs.tool_list([SPEC]))
    assert system.endswith("- GET /search/person: Search People. Search for people by name. Arguments: query*, "
                           "page, include_adult, region")
    review = render("review", tools="- X: y")
    assert "missing_arguments" in review and review.endswith("Tools:\n- X: y")
    assert json.dumps(review_schema())  # JSON-able


def test_argument_names_are_an_enum_of_the_tools_parameters() -> None:
    """ConAgents' argument names were free text, and a model put the SQL into a name (issue 27)."""
    read = ToolSpec(name="read_query", description="SELECT.", source="mcp", parameters={
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})
    tables = ToolSpec(name="list_tables", description="Tables.", source="mcp",
                      parameters={"type": "object", "properties": {}})
    schema = plan_schema([read, tables])
    good = {"thought": "t", "action": {"tool": "read_query", "arguments": [
        {"name": "query", "value": "SELECT 1"}], "target": "x"}}
    jsonschema.validate(good, schema)
    sql_as_name = {"thought": "t", "action": {"tool": "read_query", "arguments": [
        {"name": "SELECT * FROM users;", "value": ""}], "target": "x"}}
    other_tools_name = {"thought": "t", "action": {"tool": "list_tables", "arguments": [
        {"name": "query", "value": "SELECT 1"}], "target": "x"}}
    for bad in (sql_as_name, other_tools_name):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    jsonschema.validate({"thought": "t", "action": {"tool": "list_tables", "arguments": [], "target": "x"}}, schema)
    jsonschema.validate({"thought": "t", "action": {"tool": FINISH, "answer": "Done."}}, schema)
    plan, why = parse_plan(good)
    assert why is None and plan is not None and plan.arguments == {"query": "SELECT 1"}
    # the names alone (no specs) keep the old free-text names
    jsonschema.validate(sql_as_name, plan_schema(["read_query"]))
