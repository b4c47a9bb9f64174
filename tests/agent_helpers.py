"""Shared pieces of the agent tests: scripted answers for the TMDB task "Which actor played the Joker in The
Dark Knight?" (tmdb-own-01, gold path search -> credits), and a runner for one episode with scripted mock
models per role against the real offline TMDB service and the real sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taskbench.agents import AgentEvalConfig, Budgets, run_agents
from taskbench.dataset.trajectories import read_trajectory
from taskbench.llm import get_model

TASK = "tmdb-own-01"
SEARCH = "GET /search/movie"
CREDITS = "GET /movie/{movie_id}/credits"

SEARCH_CODE = "```python\nr = GET_search_movie(query='The Dark Knight')\nresult = r['results'][0]['id']\n```"
CREDITS_CODE = ("```python\nr = GET_movie_movie_id_credits(movie_id=155)\n"
                "result = [c['name'] for c in r['cast'] if 'Joker' in c['character']]\n```")
BAD_CODE = "```python\nr = GET_search_movie(query='The Dark Knight')\nresult = r['no_such_key']\n```"
WRONG_ID_CODE = "```python\nresult = GET_movie_movie_id_credits(movie_id='The Dark Knight')['cast'][0]['name']\n```"


def plan(tool: str, args: dict[str, str] | None = None, target: str = "", answer: str = "") -> str:
    """A plan in the schema's shape: a thought, then a call action or a FINISH action."""
    if tool == "FINISH":
        return json.dumps({"thought": "done", "action": {"tool": tool, "answer": answer}})
    return json.dumps({"thought": "next", "action": {
        "tool": tool, "arguments": [{"name": k, "value": v} for k, v in (args or {}).items()], "target": target}})


def search_plan() -> str:
    return plan(SEARCH, {"query": "The Dark Knight"}, "the movie id")


def credits_plan() -> str:
    return plan(CREDITS, {"movie_id": "155"}, "the actor who played the Joker")


def finish(answer: str = "Heath Ledger played the Joker.") -> str:
    return plan("FINISH", answer=answer)


def verdict(v: str = "accept", route: str = "grounding", problem: str = "none", feedback: str = "") -> str:
    return json.dumps({"problem": problem, "feedback": feedback, "route": route, "verdict": v})


def mock(name: str, responses: list[Any]) -> Any:
    return get_model(f"mock/{name}", responses=responses)


def sandbox_or_skip() -> None:
    from taskbench.envs.sandbox import sandbox_status

    status = sandbox_status()
    if not status.available:
        pytest.skip(f"no bwrap sandbox here: {status.reason}")


def no_sandbox_here() -> bool:
    """True where bwrap cannot confine agent code. Tests of an agent's control flow then run the scripted
    code (ours, loopback calls only) with ``unsafe_local=True`` instead of skipping."""
    from taskbench.envs.sandbox import sandbox_status

    return not sandbox_status().available


def run_one(tmp: Path, agent: str, models: dict[str, Any], *, task: str = TASK, tools: str = "gold",
            max_steps: int = 8, **config: Any) -> tuple[Any, dict[str, Any], Any]:
    """Run one episode; returns (trajectory, its record, the run result)."""
    config.setdefault("unsafe_local", no_sandbox_here())
    cfg = AgentEvalConfig(env="restbench-tmdb", agents=[agent], model="mock/unused", tools=tools,
                          task_ids=[task], env_options={"task_set": "own"}, budgets=Budgets(max_steps=max_steps),
                          bootstrap=0, **config)
    result = run_agents(cfg, tmp, models=models)
    records = [json.loads(line) for line in (tmp / "episodes.jsonl").read_text().splitlines()]
    rec = records[-1]
    return read_trajectory(tmp / rec["trajectory"]), rec, result


def kinds(traj: Any) -> list[str]:
    """The events as short labels: grounding, execution, review (model calls), code, tool, verdict:..., final."""
    out = []
    for e in traj.events:
        if e.kind == "model_call":
            out.append(e.role)
        elif e.kind == "code_run":
            out.append("code")
        elif e.kind == "tool_call":
            out.append("tool")
        elif e.kind == "review":
            out.append(f"verdict:{e.target}:{e.verdict}" + (f":{e.route}" if e.route else ""))
        else:
            out.append("final")
    return out


def prompts(traj: Any, role: str) -> list[str]:
    """The last user message of every model call of ``role``."""
    return [[m for m in e.messages if m.role == "user"][-1].content for e in traj.events
            if e.kind == "model_call" and e.role == role]
