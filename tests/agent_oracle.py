"""A scripted oracle for every agent: it knows each task's solution (the task's solution script) and plays
every role of every agent (ConAgents' three, ReAct's, the code agent's, plan-execute's, Reflexion's, DFSDT's,
RestGPT's four, alpha-UMi's three) like a perfect model would, so a run with it measures what the agents'
machinery allows, not a model: a task it does not solve is one the agent cannot reach (a tool it needs is not
offered, a step it cannot take).

The oracle reads where the episode stands from the environment itself (the calls made since the reset and
their results): the next step is the first step of the solution script without a successful call, its
arguments filled from what the earlier calls returned (the script's ``bind`` expressions), and once every step
is done it answers with the script's answer. It never sees the agent's prompt beyond telling the roles apart.

Use: ``oracle = Oracle()``; ``run_agents(config, out, models=oracle.models(), env_factory=oracle.open(factory))``
(one environment: concurrency 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from taskbench.envs.restbench.checking import fill, search
from taskbench.llm import get_model
from taskbench.llm.providers.mock import tool_calls

ROLES = ("grounding", "execution", "review", "react", "code", "planner", "reflect", "dfsdt", "selector", "caller",
         "parser", "summarizer", "agent")


class Oracle:
    """Plays every role (see the module docstring); :attr:`env` is the episode's environment."""

    def __init__(self) -> None:
        self.env: Any = None
        self.asked: dict[str, int] = {}

    def open(self, factory: Callable[[], Any]) -> Callable[[], Any]:
        """An environment factory that remembers the environment it made (the oracle reads its calls)."""
        def make() -> Any:
            self.env = factory()
            return self.env
        return make

    def models(self) -> dict[str, Any]:
        """One scripted model per role."""
        return {role: get_model(f"mock/oracle-{role}", responses=self.role(role)) for role in ROLES}

    # ------------------------------------------------------------------------------------------ the solution

    def progress(self) -> tuple[str | None, dict[str, Any], str]:
        """(the next step's operation or None when every step is done, its arguments, the answer so far)."""
        task = self.env.task
        script = task.meta["solution"]
        done = [(c, r) for c, r in zip(self.env.calls, self.env.results, strict=True) if r.error is None]
        variables: dict[str, Any] = {}
        at = 0
        for step in script.get("steps") or []:
            op = str(step["call"])
            args = self.fit(op, fill(step.get("args") or {}, variables))
            j = next((i for i in range(at, len(done)) if done[i][0].name == op), None)
            if j is None:
                return op, args, ""
            at = j + 1
            body = done[j][1].content
            variables["_"] = body
            for name, expr in (step.get("bind") or {}).items():
                variables[name] = search(fill(str(expr), variables), body)
        return None, {}, str(fill(str(script.get("answer") or ""), variables))

    def fit(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments as the tool's schema types them, as a model writes them (a solution script may pass a
        list where the API takes comma-separated text, which the service reads either way)."""
        spec = self.env.tool(op)
        props = ((spec.parameters if spec is not None else {}) or {}).get("properties") or {}
        out = {}
        for name, value in args.items():
            kind = (props.get(name) or {}).get("type")
            if kind == "string" and isinstance(value, list):
                value = ",".join(str(v) for v in value)
            elif kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)
            out[name] = value
        return out

    # ------------------------------------------------------------------------------------------ the roles

    def role(self, role: str) -> Callable[[Any], Any]:
        def answer(request: Any) -> Any:
            self.asked[role] = self.asked.get(role, 0) + 1
            return self.answer(role, request)
        return answer

    def answer(self, role: str, request: Any) -> Any:
        op, args, final = self.progress()
        schema = request.json_schema or {}
        props = schema.get("properties") or {}
        if role == "review":
            return json.dumps({"problem": "none", "feedback": "", "route": "grounding", "verdict": "accept"})
        if role == "grounding":
            if op is None:
                return json.dumps({"thought": "done", "action": {"tool": "FINISH", "answer": final}})
            arguments = [{"name": k, "value": v if isinstance(v, str) else json.dumps(v)} for k, v in args.items()]
            return json.dumps({"thought": "next", "action": {"tool": op, "arguments": arguments,
                                                               "target": "what the next step needs"}})
        if role in ("execution", "code"):
            if op is None:
                return f"Final answer: {final}"
            return code_for(op, args)
        if role == "parser":  # RestGPT's parser: the code reads the response it was given
            return "```python\nresult = response if response not in (None, '', [], {}) else 'done'\n```"
        if role in ("react", "dfsdt", "agent", "caller"):
            if op is None:
                return tool_calls(("final_answer", {"answer": final}))
            return tool_calls((op, args))
        if role == "selector":
            return json.dumps({"tool": op})
        if role == "summarizer":
            return final
        if role == "reflect":
            return "Nothing to change."
        if role == "planner":
            if "task_nodes" in props:  # plan-execute: the whole graph at once, from where the episode starts
                steps = self.env.task.meta["solution"]["steps"]
                return json.dumps({"task_steps": [f"call {s['call']}" for s in steps],
                                   "task_nodes": [{"task": s["call"], "arguments": []} for s in steps]})
            if "next" in props:  # alpha-UMi
                return json.dumps({"rationale": "next step" if op else "done",
                                   "next": "caller" if op else "summarizer"})
            if "action" in props:  # RestGPT
                action = {"step": f"call {op}"} if op else {"final_answer": final}
                return json.dumps({"thought": "next", "action": action})
            return final  # plan-execute's answer
        raise AssertionError(f"the oracle has no answer for role {role!r}")


def code_for(op: str, args: dict[str, Any]) -> str:
    """Python that makes the call and keeps a non-empty result."""
    return (f"```python\nr = call_tool({op!r}, {args!r})\n"
            "result = r if r not in (None, '', [], {}) else 'done'\n```")


__all__ = ["ROLES", "Oracle", "code_for"]
