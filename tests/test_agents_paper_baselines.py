"""The paper's other baselines under scripted models, against the real offline TMDB service (and the real
sandbox for RestGPT's parser): ReAct@N and ToolLLM@N (retry until solved), Reflexion, DFSDT, RestGPT and
alpha-UMi; and their names in the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_helpers import CREDITS, SEARCH, kinds, mock, prompts, run_one, sandbox_or_skip
from taskbench.agents.baselines import AGENTS, ROLES_OF, make_agent
from taskbench.agents.config import BASE_AGENTS, parse_agent
from taskbench.errors import ConfigError
from taskbench.llm.providers.mock import tool_calls

RIGHT = "Heath Ledger played the Joker."
WRONG = "Christian Bale played the Joker."


def search_call() -> object:
    return tool_calls((SEARCH, {"query": "The Dark Knight"}))


def credits_call(movie_id: object = 155) -> object:
    return tool_calls((CREDITS, {"movie_id": movie_id}))


def answer(text: str) -> object:
    return tool_calls(("final_answer", {"answer": text}))


def finals(traj: object) -> list[str]:
    return [e.answer for e in traj.events if e.kind == "final_answer"]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------------ names


def test_every_base_agent_has_a_maker_and_roles() -> None:
    for base in BASE_AGENTS:
        spec = parse_agent(base)
        assert make_agent(spec) is not None
        assert base.startswith("conagents") or (base in AGENTS and ROLES_OF[base])


def test_retry_names() -> None:
    assert (parse_agent("react@3").base, parse_agent("react@3").tries, parse_agent("react@3").name) == ("react", 3, "react@3")
    spec = parse_agent("toolllm@2")
    assert (spec.base, spec.tries, spec.name) == ("dfsdt", 2, "toolllm@2")
    assert parse_agent("reflexion").tries == 3 and parse_agent("reflexion@5").name == "reflexion@5"
    assert parse_agent("reflexion@3").name == "reflexion" and parse_agent("react@1").name == "react"
    for bad in ("react@0", "react@11", "dfsdt@2", "code@2"):
        with pytest.raises(ConfigError):
            parse_agent(bad)


# ------------------------------------------------------------------------------------------------ @N


def test_react_at_n_retries_from_a_fresh_environment_until_solved(tmp_path: Path) -> None:
    agent = mock("react", [search_call(), credits_call(), answer(WRONG),   # trial 1: the checker says no
                           search_call(), credits_call(), answer(RIGHT)])  # trial 2: solved, no third trial
    traj, rec, result = run_one(tmp_path, "react@3", {"agent": agent})
    assert finals(traj) == [WRONG, RIGHT]
    assert rec["success"] and rec["attempts"] == 2
    assert rec["calls"] == [SEARCH, CREDITS]  # the last trial's calls are scored
    assert rec["tool_calls"] == 4 and rec["cpr_f1"] == 1.0  # every trial's calls are counted as work
    assert traj.outcome.details["attempts"] == {"used": 2, "limit": 3, "last_start": 6, "trials": [
        {"seed": 0, "temperature": 0.0, "start": 0}, {"seed": 1_000_003, "temperature": 0.7, "start": 6}]}
    summary = result.metrics["agents"]["react@3"]
    assert summary["attempts"] == 2 and summary["attempts_when_solved"] == 2


def test_react_at_n_judges_each_trial_alone(tmp_path: Path) -> None:
    # trial 1 made the gold calls but answered wrong; trial 2 answers right from memory, with no call: the
    # environment was reset, so the solved checker (the answer must have appeared in a response) fails it
    agent = mock("react", [search_call(), credits_call(), answer(WRONG), answer(RIGHT)])
    traj, rec, _ = run_one(tmp_path, "react@2", {"agent": agent})
    assert finals(traj) == [WRONG, RIGHT]
    assert not rec["success"] and rec["attempts"] == 2 and rec["calls"] == []
    assert "never appeared in a successful tool response" in rec["reason"]


def test_react_at_n_stops_at_n(tmp_path: Path) -> None:
    agent = mock("react", [answer(WRONG), answer(WRONG)])
    _, rec, _ = run_one(tmp_path, "react@2", {"agent": agent})
    assert not rec["success"] and rec["attempts"] == 2


# ------------------------------------------------------------------------------------------------ Reflexion


def test_reflexion_reflects_after_a_failed_trial_and_the_next_trial_reads_it(tmp_path: Path) -> None:
    actor = mock("react", [credits_call("The Dark Knight"), answer(WRONG),
                           search_call(), credits_call(), answer(RIGHT)])
    reflect = mock("reflect", ["I passed a title as the movie id; next time I search for the id first."])
    traj, rec, _ = run_one(tmp_path, "reflexion", {"react": actor, "reflect": reflect})
    assert kinds(traj) == ["react", "tool", "react", "final", "reflect",
                           "react", "tool", "react", "tool", "react", "final"]
    reflection_prompt = prompts(traj, "reflect")[0]
    assert "Action: GET /movie/{movie_id}/credits" in reflection_prompt and WRONG in reflection_prompt
    second_trial = [e for e in traj.events if e.kind == "model_call" and e.role == "react"][2]
    assert "Trial 1: I passed a title as the movie id" in second_trial.messages[0].content
    first_trial = [e for e in traj.events if e.kind == "model_call" and e.role == "react"][0]
    assert "Trial 1" not in first_trial.messages[0].content
    assert rec["success"] and rec["attempts"] == 2


# ------------------------------------------------------------------------------------------------ DFSDT


def test_dfsdt_backtracks_from_a_failed_call_and_asks_for_a_different_action(tmp_path: Path) -> None:
    agent = mock("dfsdt", [credits_call("The Dark Knight"),  # root child 1: a 404, a dead end
                           search_call(),                    # root child 2, told child 1 failed
                           credits_call(),                   # depth 1
                           answer(RIGHT)])
    traj, rec, _ = run_one(tmp_path, "dfsdt", {"agent": agent})
    calls = [e for e in traj.events if e.kind == "model_call"]
    retry = calls[1].messages[-1]
    assert retry.role == "user" and "This is not the first time" in retry.content
    assert "GET /movie/{movie_id}/credits" in retry.content and "error" in retry.content
    assert all("This is not the first time" not in (m.content or "") for m in calls[2].messages)
    assert "give_up_and_restart" in calls[0].tools
    assert rec["success"] and rec["calls"] == [CREDITS, SEARCH, CREDITS]


def test_dfsdt_give_up_prunes_the_node_and_the_parent_tries_another_child(tmp_path: Path) -> None:
    agent = mock("dfsdt", [search_call(),                               # root child 1
                           tool_calls(("give_up_and_restart", {})),     # its child gives up: back to the root
                           search_call(),                               # root child 2 (told about child 1)
                           credits_call(), answer(RIGHT)])
    traj, rec, _ = run_one(tmp_path, "dfsdt", {"agent": agent})
    third = [e for e in traj.events if e.kind == "model_call"][2]
    assert "This is not the first time" in third.messages[-1].content
    assert rec["success"] and rec["calls"] == [SEARCH, SEARCH, CREDITS]


def test_dfsdt_that_exhausts_its_tree_stops_without_an_answer(tmp_path: Path) -> None:
    bad = credits_call("x")
    agent = mock("dfsdt", [bad, bad])  # width 2 at the root, both dead ends
    _, rec, _ = run_one(tmp_path, "dfsdt", {"agent": agent})
    assert not rec["answered"] and rec["stop"] == "step_cap" and rec["tool_calls"] == 2


def test_toolllm_at_n_is_dfsdt_retried(tmp_path: Path) -> None:
    agent = mock("dfsdt", [search_call(), credits_call(), answer(WRONG), search_call(), credits_call(), answer(RIGHT)])
    traj, rec, _ = run_one(tmp_path, "toolllm@2", {"agent": agent})
    assert traj.agent == "toolllm@2" and rec["success"] and rec["attempts"] == 2


# ------------------------------------------------------------------------------------------------ RestGPT


@pytest.mark.usefixtures("_sandbox")
def test_restgpt_plans_selects_calls_and_parses(tmp_path: Path) -> None:
    planner = mock("planner", [json.dumps({"thought": "t", "action": {"step": "find the id of the movie The Dark Knight"}}),
                               json.dumps({"step": "get the cast of movie 155 and find who played the Joker"}),
                               json.dumps({"final_answer": RIGHT})])
    selector = mock("selector", [json.dumps({"tool": SEARCH}), json.dumps({"tool": CREDITS})])
    caller = mock("caller", [search_call(), credits_call()])
    parser = mock("parser", ["```python\nresult = response['results'][0]['id']\n```",
                             "```python\nresult = response['no_such_key']\n```",  # fails: the parser reads instead
                             "Heath Ledger played the Joker (character: Joker)."])
    traj, rec, _ = run_one(tmp_path, "restgpt", {"planner": planner, "selector": selector, "caller": caller,
                                                 "parser": parser})
    assert kinds(traj) == ["planner", "selector", "caller", "tool", "parser", "code",
                           "planner", "selector", "caller", "tool", "parser", "code", "parser",
                           "planner", "final"]
    caller_calls = [e for e in traj.events if e.kind == "model_call" and e.role == "caller"]
    assert caller_calls[0].tools == [SEARCH] and caller_calls[1].tools == [CREDITS]  # the selected tool alone
    assert "1. find the id of the movie The Dark Knight -> 155" in caller_calls[1].messages[-1].content
    parser_prompt = prompts(traj, "parser")[0]
    assert "`response`" in parser_prompt and '"id": 155' not in parser_prompt  # the shape, not the data
    read_prompt = prompts(traj, "parser")[2]
    assert "Heath Ledger" in read_prompt  # the fallback reads the response itself
    last_planner = prompts(traj, "planner")[-1]
    assert "found: 155" in last_planner and "found: Heath Ledger played the Joker" in last_planner
    assert rec["success"] and rec["calls"] == [SEARCH, CREDITS]


def test_restgpt_reports_a_failed_call_to_the_planner(tmp_path: Path) -> None:
    planner = mock("planner", [json.dumps({"step": "get the cast of The Dark Knight"}),
                               json.dumps({"final_answer": "I do not know."})])
    selector = mock("selector", [json.dumps({"tool": CREDITS})])
    caller = mock("caller", [credits_call("The Dark Knight")])
    traj, rec, _ = run_one(tmp_path, "restgpt", {"planner": planner, "selector": selector, "caller": caller})
    assert "FAILED: error: invalid call: arguments do not fit" in prompts(traj, "planner")[-1]
    assert not rec["success"] and rec["answered"]


@pytest.fixture
def _sandbox() -> None:
    sandbox_or_skip()


# ------------------------------------------------------------------------------------------------ alpha-UMi


def nxt(who: str, why: str = "") -> str:
    return json.dumps({"rationale": why or f"{who} next", "next": who})


def test_alpha_umi_planner_caller_summarizer(tmp_path: Path) -> None:
    planner = mock("planner", [nxt("caller", "find the movie id"), nxt("caller", "get the cast of 155"),
                               nxt("summarizer")])
    caller = mock("caller", [search_call(), credits_call()])
    summarizer = mock("summarizer", [RIGHT])
    traj, rec, _ = run_one(tmp_path, "alpha-umi", {"planner": planner, "caller": caller, "summarizer": summarizer})
    assert kinds(traj) == ["planner", "caller", "tool", "planner", "caller", "tool", "planner", "summarizer",
                           "final"]
    second_caller = prompts(traj, "caller")[1]
    assert "Planner: get the cast of 155" in second_caller and "Call: GET /search/movie" in second_caller
    assert "Heath Ledger" in prompts(traj, "summarizer")[0]
    assert rec["success"] and traj.answer == RIGHT


def test_alpha_umi_give_up_goes_to_the_summarizer(tmp_path: Path) -> None:
    planner = mock("planner", [nxt("give_up")])
    summarizer = mock("summarizer", ["I could not find out."])
    traj, rec, _ = run_one(tmp_path, "alpha-umi", {"planner": planner, "summarizer": summarizer})
    assert kinds(traj) == ["planner", "summarizer", "final"]
    assert "(nothing: no call was made)" in prompts(traj, "summarizer")[0] and not rec["success"]


def test_restgpt_and_alpha_umi_schemas_are_objects_at_the_top() -> None:
    import jsonschema

    from taskbench.agents.baselines.restgpt import planner_schema, read_plan
    from taskbench.agents.baselines.umi import planner_schema as umi_schema

    schema = planner_schema()
    assert schema["type"] == "object" and umi_schema()["type"] == "object"  # as OpenAI structured output wants
    jsonschema.validate({"thought": "t", "action": {"step": "s"}}, schema)
    jsonschema.validate({"thought": "t", "action": {"final_answer": "a"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"thought": "t", "action": {"step": "s", "final_answer": "a"}}, schema)
    assert read_plan({"thought": "t", "action": {"final_answer": "A"}}) == (None, "A", None)
    assert read_plan({"step": "S"}) == ("S", None, None)
    assert read_plan({"thought": "t"})[2] is not None
