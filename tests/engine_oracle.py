"""A scripted data-engine answerer for control-flow tests: it reads the prompt (tool lines, edges, seed) and the
requested JSON Schema like a perfect model would, and answers what the critics should accept.

Used as ``get_model("mock/oracle", responses=Oracle())``; ``Oracle(break_edges=True)`` reverses the first
edge (the rule critic must catch it), ``teacher=False`` makes the self-check say "not correct".
"""

from __future__ import annotations

import json
import re
from typing import Any

_EDGE = re.compile(r"^(.+?) -> (.+?)(?: \((?:passes|because): .*\))?$")
_SEED = re.compile(r"random seed (\d+)")
_LITERAL = {"image": "example.jpg", "audio": "example.wav", "video": "example.mp4", "url": "https://example.com/a"}


def prompt_of(request: Any) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.messages)


def tool_lines(prompt: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in prompt.splitlines() if line.startswith('{"id"')]


def edge_pairs(prompt: str) -> list[tuple[str, str]]:
    out = []
    for line in prompt.splitlines():
        m = _EDGE.match(line)
        if m and not line.startswith("{"):
            out.append((m.group(1), m.group(2)))
    return out


class Oracle:
    """Answers generation, critic and judge calls (see the module docstring)."""

    def __init__(self, *, break_edges: bool = False, teacher: bool = True, request: str | None = None) -> None:
        self.break_edges = break_edges
        self.teacher = teacher
        self.request = request
        self.calls: list[str] = []

    def __call__(self, request: Any) -> str:
        schema = request.json_schema or {}
        title = schema.get("title", "")
        self.calls.append(title)
        prompt = prompt_of(request)
        seed = (_SEED.findall(prompt) or ["0"])[0]
        if title == "Judge":
            return json.dumps({"reason": "fine", "naturalness": 4, "complexity": 3, "alignment": 5})
        if title == "Critic":
            return json.dumps({"comments": "Let me check the result step by step. Fine.", "executable": True,
                               "correct": self.teacher})
        text = self.request or (f"Please help me with case {seed}: handle example.jpg (or example.png), example.wav and "
                                f"example.mp4 and the text 'hello {seed}'.")
        if title == "UserRequest":
            return json.dumps({"user_request": text})
        graph_schema = (schema.get("properties") or {}).get("invoking_graph") or {}
        k = graph_schema.get("properties", {}).get("nodes", {}).get("minItems")
        tools = tool_lines(prompt)[:k]
        edges = edge_pairs(prompt)
        if self.break_edges and edges:
            edges[0] = (edges[0][1], edges[0][0])
        names = [t["id"] for t in tools]
        resource = "input-type" in tools[0]
        nodes = []
        for tool in tools:
            incoming = [s for s, t in edges if t == tool["id"]]
            if resource:
                args: dict[str, Any] = {}
                used: set[str] = set()
                for arg, kind in zip(tool["arguments"], tool["input-type"], strict=True):
                    src = next((s for s in incoming if s not in used and
                                next(x for x in tools if x["id"] == s)["output-type"][:1] == [kind]), None)
                    if src is not None:
                        used.add(src)
                        args[arg] = f"<node-{names.index(src)}>"
                    else:
                        args[arg] = _LITERAL.get(kind, f"some {kind} {seed}")
            else:
                args = {p["name"]: (f"{p['name']} {seed}" if p["required"] else None) for p in tool["parameters"]}
            nodes.append({"task": tool["id"], "arguments": args})
        graph: dict[str, Any] = {"nodes": nodes}
        if not resource:
            graph["links"] = [{"source": s, "target": t} for s, t in edges]
        answer: dict[str, Any] = {"task_steps": [f"Step {i + 1}: run {n}" for i, n in enumerate(names)]}
        if title != "InvocationGraph":
            answer["user_request"] = text
        answer["invoking_graph"] = graph
        if "check_by_teacher" in (schema.get("properties") or {}):
            answer["check_by_teacher"] = {"comments": "Let me check your result step by step. All good.",
                                          "executable": True, "correct": self.teacher}
        return json.dumps(answer)
