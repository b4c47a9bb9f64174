"""Grounded arguments (issue 20, point 9): id-like plan arguments take only values seen in the task or in an
earlier tool result, by the plan's schema (a grammar under constrained decoding) and, where the backend does
not constrain, by the plan check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent_helpers import (
    CREDITS,
    CREDITS_CODE,
    SEARCH,
    SEARCH_CODE,
    credits_plan,
    finish,
    mock,
    plan,
    prompts,
    run_one,
    sandbox_or_skip,
    search_plan,
)
from taskbench.agents.config import parse_agent
from taskbench.agents.grounded import id_like, plan_argument_schema, seen_values, ungrounded
from taskbench.agents.prompts import Plan, plan_schema
from taskbench.schema import ToolSpec


def tool(name: str, *params: str, required: tuple[str, ...] = ()) -> ToolSpec:
    return ToolSpec(name=name, description="", parameters={"type": "object",
                                                           "properties": {p: {"type": "string"} for p in params},
                                                           "required": list(required)})


TOOLS = [tool(SEARCH, "query", "page", required=("query",)), tool(CREDITS, "movie_id", required=("movie_id",))]


def test_id_like_names() -> None:
    for name in ("id", "movie_id", "person_id", "ids", "playlistId", "user_ids", "ID"):
        assert id_like(name), name
    for name in ("query", "idea", "paid", "video", "include_adult", "valid"):
        assert not id_like(name), name


def test_seen_values_come_from_results_extractions_and_the_task() -> None:
    search = {"page": 1, "results": [{"id": 155, "title": "The Dark Knight", "genre_ids": [18, 28]},
                                     {"id": 49026, "title": "The Dark Knight Rises"}]}
    values = seen_values("Who directed movie 603?", [search], [155])
    assert values[0] == "155"  # what the execution agent extracted, first
    assert {"155", "18", "28", "49026", "603"} <= set(values)
    assert "1" not in values and "The Dark Knight" not in values  # a page number, a title: not ids
    assert seen_values("Which actor played the Joker?", []) == []


def test_the_schema_allows_only_seen_ids_and_no_id_before_one_is_seen() -> None:
    def valid(schema: dict[str, Any], name: str, value: str) -> bool:
        doc = {"thought": "t", "action": {"tool": CREDITS, "arguments": [{"name": name, "value": value}],
                                          "target": "x"}}
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError:
            return False
        return True

    before = plan_schema([SEARCH, CREDITS], plan_argument_schema(TOOLS, []))
    assert not valid(before, "movie_id", "1")  # the 0.5B model's invented id: impossible
    assert valid(before, "query", "The Dark Knight")
    after = plan_schema([SEARCH, CREDITS], plan_argument_schema(TOOLS, ["155", "49026"]))
    assert valid(after, "movie_id", "155") and not valid(after, "movie_id", "The Dark Knight")
    assert not valid(after, "title", "The Dark Knight")  # names are the offered tools' parameters
    plain = plan_schema([SEARCH, CREDITS])
    assert valid(plain, "movie_id", "1")  # the plain prompt's schema allows anything


def test_per_tool_grounded_schema_offers_each_tool_its_own_names_and_seen_ids() -> None:
    from taskbench.agents.grounded import tool_argument_schemas

    def valid(schema: dict[str, Any], tool: str, name: str, value: str) -> bool:
        doc = {"thought": "t", "action": {"tool": tool, "arguments": [{"name": name, "value": value}],
                                          "target": "x"}}
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError:
            return False
        return True

    first = plan_schema(TOOLS, per_tool=tool_argument_schemas(TOOLS, []))
    assert valid(first, SEARCH, "query", "The Dark Knight")
    assert not valid(first, CREDITS, "movie_id", "155")  # no id seen: the credits are not offered yet
    later = plan_schema(TOOLS, per_tool=tool_argument_schemas(TOOLS, ["155"]))
    assert valid(later, CREDITS, "movie_id", "155") and not valid(later, CREDITS, "movie_id", "156")
    assert not valid(later, CREDITS, "query", "The Dark Knight")  # the search's parameter, not the credits'
    assert not valid(later, SEARCH, "movie_id", "155")  # and the other way round
    shared = plan_schema([SEARCH, CREDITS], plan_argument_schema(TOOLS, ["155"]))
    assert valid(shared, SEARCH, "movie_id", "155")  # the names over all tools, as before the per-tool schema


def test_ungrounded_names_the_argument() -> None:
    bad = Plan(tool=CREDITS, arguments={"movie_id": "The Dark Knight"})
    assert "movie_id='The Dark Knight' was not seen" in str(ungrounded(bad, []))
    assert "call a tool that finds it first" in str(ungrounded(bad, []))
    assert ungrounded(Plan(tool=CREDITS, arguments={"movie_id": "155"}), ["155"]) is None
    assert ungrounded(Plan(tool=SEARCH, arguments={"query": "anything"}), []) is None


def test_an_integer_id_takes_only_integers_and_a_call_gives_what_the_tool_requires() -> None:
    """Seen in a student's RestBench episode: the top-rated film's title, a value the execution extracted, was
    offered as movie_id and the tool answered 404; and a search called with no query (400)."""
    from taskbench.agents.grounded import tool_argument_schemas
    from taskbench.llm.grammar import schema_to_gbnf

    typed = [ToolSpec(name=SEARCH, description="", parameters={
        "type": "object", "properties": {"query": {"type": "string"}, "page": {"type": "integer"}},
        "required": ["query"]}),
        ToolSpec(name=CREDITS, description="", parameters={
            "type": "object", "properties": {"movie_id": {"type": "integer"}}, "required": ["movie_id"]})]
    title = "The Shawshank Redemption"
    assert tool_argument_schemas(typed, [title])[CREDITS] is None  # no integer seen: not offered yet
    schema = plan_schema(typed, per_tool=tool_argument_schemas(typed, [title, "278"]))
    call = next(c for c in schema["properties"]["action"]["anyOf"] if c["properties"]["tool"]["enum"] == [CREDITS])
    assert call["properties"]["arguments"]["items"]["properties"]["value"]["enum"] == ["278"]
    search = next(c for c in schema["properties"]["action"]["anyOf"] if c["properties"]["tool"]["enum"] == [SEARCH])
    assert search["properties"]["arguments"]["minItems"] == 1 and call["properties"]["arguments"]["minItems"] == 1
    assert "root ::=" in schema_to_gbnf(schema)  # minItems and all: the grammar llama.cpp decodes under
    # where the backend does not constrain: the same rules by the check
    assert "was not seen" in str(ungrounded(Plan(tool=CREDITS, arguments={"movie_id": title}), [title], typed[1]))
    assert ungrounded(Plan(tool=CREDITS, arguments={"movie_id": "278"}), [title, "278"], typed[1]) is None
    assert "needs query" in str(ungrounded(Plan(tool=SEARCH, arguments={"page": "1"}), [], typed[0]))
    assert ungrounded(Plan(tool=SEARCH, arguments={"query": "Heat"}), [], typed[0]) is None
    # a string id (Spotify's) takes any seen value, as before
    spotify = ToolSpec(name="GET /artists/{id}", description="", parameters={
        "type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]})
    assert ungrounded(Plan(tool=spotify.name, arguments={"id": "0OdUWJ0sBjDrqHygGUXeCF"}),
                      ["0OdUWJ0sBjDrqHygGUXeCF"], spotify) is None


def test_names() -> None:
    spec = parse_agent("conagents-adaptive-no-exec-review-grounded-a1b2")
    assert spec.grounded and spec.ablation == "no-exec-review" and (spec.alpha, spec.beta) == (1, 2)
    assert spec.name == "conagents-adaptive-no-exec-review-grounded-a1b2"
    assert parse_agent("conagents-auto-grounded").name == "conagents-auto-grounded"
    assert not parse_agent("conagents-auto").grounded


@pytest.fixture
def _sandbox() -> None:
    sandbox_or_skip()


@pytest.mark.usefixtures("_sandbox")
def test_a_constrained_model_can_only_pass_an_id_it_has_seen(tmp_path: Path) -> None:
    """A model under the grammar: it passes an id when the schema offers one (the first value), else it
    searches; the first plan cannot hold an id, the second gets the id the search found."""
    schemas: list[dict[str, Any]] = []

    def constrained(request: Any) -> str:
        schema = request.json_schema
        schemas.append(schema)
        if len(schemas) == 3:
            return finish()
        call = schema["properties"]["action"]["anyOf"][0]
        item = call["properties"]["arguments"]["items"]
        shapes = item.get("anyOf", [item])
        ids = [s for s in shapes if "movie_id" in s["properties"]["name"].get("enum", [])]
        if ids:
            return plan(CREDITS, {"movie_id": ids[0]["properties"]["value"]["enum"][0]}, "the Joker's actor")
        return search_plan()

    grounding = mock("grounding", constrained)
    execution = mock("x", [SEARCH_CODE, CREDITS_CODE])
    traj, rec, result = run_one(tmp_path, "conagents-adaptive-grounded", {"grounding": grounding,
                                                                          "execution": execution})
    assert rec["success"] and rec["calls"] == [SEARCH, CREDITS]
    assert "GET_movie_movie_id_credits(movie_id=155)" in prompts(traj, "execution")[1]
    assert rec["counters"] == {"grounded_plans": 3, "grounded_plans_no_ids_yet": 1, "grounded_plans_with_ids": 2,
                               "grounded_values_offered": rec["counters"]["grounded_values_offered"],
                               "grounded_tools_withheld": 1}  # the credits, until the search found an id
    assert rec["counters"]["grounded_values_offered"] >= 2
    assert result.metrics["agents"]["conagents-adaptive-grounded"]["counters"]["grounded_plans"] == 3


@pytest.mark.usefixtures("_sandbox")
def test_an_invented_id_is_refused_where_the_backend_does_not_constrain(tmp_path: Path) -> None:
    invented = plan(CREDITS, {"movie_id": "The Dark Knight"}, "the actor")
    grounding = mock("grounding", [invented, search_plan(), credits_plan(), finish()])
    execution = mock("x", [SEARCH_CODE, CREDITS_CODE])
    traj, rec, _ = run_one(tmp_path, "conagents-adaptive-grounded", {"grounding": grounding, "execution": execution})
    first = [e for e in traj.events if e.kind == "model_call"][0]
    assert first.error is not None and "movie_id='The Dark Knight' was not seen" in first.error
    assert "could not be used" in prompts(traj, "grounding")[1]
    assert rec["counters"]["grounded_refused"] == 1 and rec["success"] and rec["calls"] == [SEARCH, CREDITS]
    # the plain agent executes the same invented plan
    grounding = mock("grounding", [invented, finish("I do not know.")])
    execution = mock("x", ["```python\nresult = GET_movie_movie_id_credits(movie_id='The Dark Knight')\n```"])
    review = mock("review", [json.dumps({"problem": "tool_error", "feedback": "f", "route": "grounding",
                                         "verdict": "revise"})])
    traj, rec, _ = run_one(tmp_path / "plain", "conagents-adaptive", {"grounding": grounding, "execution": execution,
                                                                      "review": review})
    assert [e for e in traj.events if e.kind == "model_call"][0].error is None
    assert rec["counters"] == {} and rec["calls"] == [CREDITS]
