"""The baselines' loops under scripted models, against the real offline TMDB service (and the real sandbox for
the code-writing ones): ReAct with native tool calls, the CodeAct-style code agent, plan-then-execute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_helpers import CREDITS, CREDITS_CODE, SEARCH, SEARCH_CODE, kinds, mock, run_one, sandbox_or_skip
from taskbench.agents.baselines import fill_reference
from taskbench.llm.providers.mock import tool_calls


def test_react_thought_action_observation(tmp_path: Path) -> None:
    agent = mock("react", [
        tool_calls((SEARCH, {"query": "The Dark Knight"}), content="I need the movie id first."),
        tool_calls((CREDITS, {"movie_id": 155})),
        tool_calls(("final_answer", {"answer": "Heath Ledger played the Joker."})),
    ])
    traj, rec, _ = run_one(tmp_path, "react", {"agent": agent})
    assert kinds(traj) == ["react", "tool", "react", "tool", "react", "final"]
    assert traj.answer == "Heath Ledger played the Joker."
    assert rec["success"] and rec["calls"] == [SEARCH, CREDITS] and rec["cpr_contains"] is True
    second = [e for e in traj.events if e.kind == "model_call"][1]
    assert second.messages[2].content == "I need the movie id first."  # the thought, kept in the history
    observation = second.messages[-1]
    assert observation.role == "tool" and '"id": 155' in observation.content  # the raw JSON, bounded
    assert len(observation.content) <= 1500 + 60
    # the gold setting: the gold tools (offered in a seeded shuffle, see test_agents_confounds), and the way out
    assert sorted(second.tools[:-1]) == sorted([SEARCH, CREDITS]) and second.tools[-1] == "final_answer"


def test_react_gets_a_bad_call_back_as_an_error(tmp_path: Path) -> None:
    agent = mock("react", [
        tool_calls(("GET /no/such/tool", {})),
        tool_calls((CREDITS, {"movie_id": "not a number"})),
        "I could not find out.",  # a backend that answers in text despite tool_choice=required: the answer
    ])
    traj, rec, _ = run_one(tmp_path, "react", {"agent": agent})
    results = [e.result for e in traj.events if e.kind == "tool_call"]
    assert results[0].error is not None and "GET /no/such/tool" in results[0].error
    assert results[1].error is not None  # the schema rejects the argument, or the service answers 404
    assert not rec["success"] and rec["answered"]


@pytest.fixture
def _sandbox() -> None:
    sandbox_or_skip()


@pytest.mark.usefixtures("_sandbox")
def test_code_agent_writes_code_reads_the_output_and_answers(tmp_path: Path) -> None:
    code = ("```python\nr = GET_search_movie(query='The Dark Knight')\nmid = r['results'][0]['id']\n"
            "cast = GET_movie_movie_id_credits(movie_id=mid)['cast']\nprint('movie', mid)\n"
            "result = [c['name'] for c in cast if 'Joker' in c['character']]\n```")
    agent = mock("code", ["```python\nresult = GET_search_movie(query='The Dark Knight')['oops']\n```", code,
                          "Final answer: Heath Ledger"])
    traj, rec, _ = run_one(tmp_path, "code", {"agent": agent})
    assert kinds(traj) == ["code", "code", "code", "code", "code", "final"]
    calls = [e for e in traj.events if e.kind == "model_call"]
    assert "KeyError" in calls[1].messages[-1].content  # the error of the first run, to repair
    assert "movie 155" in calls[2].messages[-1].content and "Heath Ledger" in calls[2].messages[-1].content
    assert rec["success"] and rec["calls"] == [SEARCH, SEARCH, CREDITS] and rec["code_runs"] == 2
    assert traj.answer == "Heath Ledger"


@pytest.mark.usefixtures("_sandbox")
def test_plan_execute_predicts_a_graph_then_executes_each_node(tmp_path: Path) -> None:
    graph = {"task_steps": ["find the movie", "read its cast"],
             "task_nodes": [{"task": SEARCH, "arguments": [{"name": "query", "value": "The Dark Knight"}]},
                            {"task": CREDITS, "arguments": [{"name": "movie_id", "value": "<node-0>"}]}]}
    planner = mock("planner", [json.dumps(graph), "Heath Ledger played the Joker."])
    execution = mock("x", [SEARCH_CODE, CREDITS_CODE])
    traj, rec, _ = run_one(tmp_path, "plan-execute", {"planner": planner, "execution": execution})
    assert kinds(traj) == ["planner", "execution", "code", "execution", "code", "planner", "final"]
    planner_prompt = traj.events[0].messages[0].content
    assert "# TOOL LIST #" in planner_prompt and "Which actor played the Joker" in planner_prompt  # the predictor's
    second = [e for e in traj.events if e.kind == "model_call" and e.role == "execution"][1].messages[-1].content
    assert "Results of earlier steps:\n1. GET /search/movie -> 155" in second
    assert "GET_movie_movie_id_credits(movie_id=155)" in second  # <node-0> filled with what node 0 extracted
    answer_prompt = [e for e in traj.events if e.kind == "model_call"][-1].messages[0].content
    assert '2. GET /movie/{movie_id}/credits (movie_id="155") -> result: ["Heath Ledger"]' in answer_prompt
    assert rec["success"]


def test_plan_execute_without_a_usable_graph_stops(tmp_path: Path) -> None:
    planner = mock("planner", ["no graph here"])
    traj, rec, _ = run_one(tmp_path, "plan-execute", {"planner": planner})
    assert kinds(traj) == ["planner"] and traj.events[0].error
    assert rec["stop"] == "no_plan" and not rec["answered"]


def test_fill_reference() -> None:
    done = [(SEARCH, 155), (CREDITS, ["Heath Ledger"]), ("X", {"a": 1})]
    assert fill_reference("<node-0>", done) == "155"
    assert fill_reference("<node-1>", done) == "Heath Ledger"  # a one-item list stands for its item
    assert fill_reference("<node-2>", done) == "<node-2>"  # not a single value: left for the executor
    assert fill_reference("<node-7>", done) == "<node-7>"
    assert fill_reference(SEARCH, done) == "155"  # the tool name, as the temporal prompt writes references
    assert fill_reference("The Dark Knight", done) == "The Dark Knight"
