"""What the agent machinery costs per episode, without a model: every agent on our bundled TMDB tasks with an
instant scripted model that solves each task (search, then the detail call, then the answer), so the figure is
the harness alone: the episode record and trajectory written event by event, prompts rendered, the offline
TMDB service on loopback, and agent code in the warm bwrap sandbox (one sandbox started per episode).

Reported per agent: episodes, wall seconds per episode (p50, p95), events per episode, and the share of the
episode spent inside the sandbox, over the finished episodes of the run's ``episodes.jsonl`` (read as
:class:`~taskbench.schema.EpisodeRow`; failed ones are counted, not timed). The 1-minute load average before and after is printed: on a shared machine
the figures move with it.

Usage::

    .venv/bin/python benchmarks/bench_agents.py [--tasks 10] [--agents conagents-auto,react] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# a task's gold path -> what the scripted model does at each step (these are our bundled tasks' patterns)
SEARCH_FOR = {"GET /search/movie": ("movie", "title"), "GET /search/person": ("person", "name"),
              "GET /search/tv": ("tv", "name"), "GET /search/collection": ("collection", "name")}


def scripted(request: Any) -> Any:
    """An instant model: search with the task's own words, then call the second gold tool on the first hit,
    then answer with what was extracted (it does not solve every task; it exercises every part)."""
    from taskbench.llm.providers.mock import tool_calls

    system = request.messages[0]["content"] if request.messages else ""
    user = str(request.messages[-1]["content"])
    if system.startswith("You are the grounding agent"):
        steps = user.count("\n   result:") + user.count("\n   FAILED:")
        if steps == 0:
            return json.dumps({"thought": "search", "action": {"tool": _tool(system, "GET /search/"),
                                                                "arguments": [{"name": "query", "value": "Inception"}],
                                                                "target": "the id"}})
        return json.dumps({"thought": "done", "action": {"tool": "FINISH", "answer": user[-200:]}})
    if system.startswith("You are the execution agent"):
        return "```python\nresponse = " + user.split("response = ", 1)[1].split("\n", 1)[0] + \
            "\nresult = response['results'][0]['id'] if 'results' in response else response\n```"
    if system.startswith("You are the review agent"):
        return json.dumps({"problem": "none", "feedback": "", "route": "grounding", "verdict": "accept"})
    if request.tools:
        names = [t["function"]["name"] for t in request.tools]
        if any(m.get("role") == "tool" for m in request.messages):
            return tool_calls(("final_answer", {"answer": user[:200]}))
        return tool_calls((next((n for n in names if n.startswith("GET_search")), names[0]),
                           {"query": "Inception"}))
    if "# TOOL LIST #" in user:
        return json.dumps({"task_steps": ["search"], "task_nodes": [
            {"task": "GET /search/movie", "arguments": [{"name": "query", "value": "Inception"}]}]})
    if system.startswith("You solve the user's task by writing Python"):
        if "Output:" in user:
            return "Final answer: done"
        return "```python\nresult = GET_search_movie(query='Inception')['results'][0]['id']\n```"
    return "The answer."


def _tool(system: str, prefix: str) -> str:
    for line in system.splitlines():
        if line.startswith(f"- {prefix}"):
            return line[2:].split(":", 1)[0]
    return "FINISH"


def _quantiles(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    if len(xs) < 2:
        return {"p50_s": round(xs[0], 4) if xs else 0.0, "p95_s": round(xs[0], 4) if xs else 0.0}
    q = statistics.quantiles(xs, n=100, method="inclusive")
    return {"p50_s": round(q[49], 4), "p95_s": round(q[94], 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--agents", default="conagents-auto,conagents-adaptive,react,code,plan-execute")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from taskbench.agents import AgentEvalConfig, load_run, run_agents
    from taskbench.dataset.trajectories import read_trajectory
    from taskbench.llm import get_model
    from taskbench.schema import EpisodeRow

    load_before = os.getloadavg()[0]
    out: dict[str, Any] = {"tasks": args.tasks, "load_before": load_before}
    with tempfile.TemporaryDirectory() as tmp:
        model = get_model("mock/instant", responses=scripted)
        for agent in args.agents.split(","):
            run = Path(tmp) / agent
            config = AgentEvalConfig(env="restbench-tmdb", agents=[agent], model="mock/instant", tools="gold+10",
                                     limit=args.tasks, env_options={"task_set": "own"}, bootstrap=0)
            start = time.perf_counter()
            result = run_agents(config, run, models={"agent": model})
            total = time.perf_counter() - start
            _, latest = load_run(run)  # every episode's last line, typed (a failure is a FailedEpisodeRow)
            rows = [r for r in latest.values() if isinstance(r, EpisodeRow)]
            walls = [r.wall_seconds for r in rows]
            events: list[int] = []
            code_seconds: list[float] = []
            for r in rows:
                if r.trajectory is None:
                    raise SystemExit(f"{agent}: episode {r.id} names no trajectory file")
                traj = read_trajectory(run / r.trajectory)
                events.append(len(traj.events))
                code_seconds.append(sum(e.seconds for e in traj.events if e.kind == "code_run"))
            row = {"episodes": result.episodes, "failed": result.failed, **_quantiles(walls),
                   "events_per_episode": round(statistics.mean(events), 1) if events else 0.0,
                   "sandbox_share": round(sum(code_seconds) / max(sum(walls), 1e-9), 3),
                   "run_seconds": round(total, 2)}
            out[agent] = row
            print(f"{agent:20s} {row}", file=sys.stderr)
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
