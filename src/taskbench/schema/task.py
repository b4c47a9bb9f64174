"""Task graphs: what a user request decomposes into (gold) and what a model predicts.

The ``<node-j>`` convention: an argument string ``"<node-j>"`` (j counted from 0 over ``task_nodes``) stands
for the output of the j-th node. In resource domains links follow from these references; in temporal domains
links are explicit (``task_links``) and arguments are ``{"name", "value"}`` pairs.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

NODE_REF = re.compile(r"<node-(\d+)>")
"""Matches a ``<node-j>`` reference inside an argument."""

STEP_PREFIX = re.compile(r"^\s*step\s*\d+\s*[:.)-]\s*", re.I)
"""A "Step n:" prefix a model (or gold data) wrote in front of a step text."""

_EXTENSIONS = (
    ("image", ("jpg", "png", "jpeg", "gif", "bmp", "tiff", "svg", "ico")),
    ("audio", ("mp3", "wav", "wma", "ogg", "aac", "flac", "aiff", "au")),
    ("video", ("mp4", "avi", "mov", "flv", "wmv", "mkv", "webm", "m4v", "mpg", "mpeg")),
)
_TYPE_PATTERNS = [(kind, re.compile(r"\.(?:" + "|".join(exts) + ")")) for kind, exts in _EXTENSIONS]


def content_type(text: str) -> str:
    """The resource type a literal argument stands for: image / audio / video by file extension, else text (one
    rule for the scorer and the executable TaskBench environment)."""
    for kind, pattern in _TYPE_PATTERNS:
        if pattern.search(text):
            return kind
    return "text"


_NODE_NAME = re.compile(r"\s*<node-(\d+)>\s*")


def node_index(digits: str) -> int:
    """The index of a ``<node-j>`` reference from its digits; an absurdly long number (which ``int`` would
    refuse past 4,300 digits) is out of range of any graph and becomes ``sys.maxsize``."""
    return int(digits) if len(digits) <= 18 else sys.maxsize


def link_endpoint(value: Any, names: list[Any]) -> Any:
    """A link endpoint as a tool name: an integer ``j`` (not a bool) or the string ``"<node-j>"`` stands for
    the j-th node's tool, as some records of the first TaskBench release give them. Anything else is returned
    as it is; an index past the last node raises ``ValueError``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        j = value
    elif isinstance(value, str) and value.startswith(("<", " ", "\t")) and (m := _NODE_NAME.fullmatch(value)):
        j = node_index(m.group(1))
    else:
        return value
    if 0 <= j < len(names) and isinstance(names[j], str):
        return names[j]
    if 0 <= j < len(names):
        return value  # that node has no tool name: the node's own error is the one to report
    shown = value if not isinstance(value, str) or len(value) <= 24 else value[:24] + "..."
    if isinstance(shown, int) and j > 10**12:
        shown = "a huge integer"
    raise ValueError(f"node index {shown!r} is out of range ({len(names)} nodes)")


def resolve_link_indices(links: Any, nodes: Any, key: str = "task", *, field: str = "task_links") -> Any:
    """``links`` (a raw list of link objects) with node-index endpoints replaced by the tools they name (see
    :func:`link_endpoint`; ``nodes`` is the raw node list, ``key`` the field holding a node's tool). Returns
    ``links`` itself when nothing is an index, so the common case copies nothing."""
    if type(links) is not list or not links:
        return links
    if all(type(lk) is not dict or (type(lk.get("source")) is str and type(lk.get("target")) is str
                                    and not lk["source"].startswith("<") and not lk["target"].startswith("<"))
           for lk in links):
        return links
    names = [n.get(key, n.get("id")) if isinstance(n, dict) else None for n in nodes] if isinstance(nodes, list) else []
    out = []
    for k, lk in enumerate(links):
        if type(lk) is dict and ("source" in lk or "target" in lk):
            lk = dict(lk)
            for end in ("source", "target"):
                if end in lk:
                    try:
                        lk[end] = link_endpoint(lk[end], names)
                    except ValueError as exc:
                        raise ValueError(f"{field}.{k}.{end}: {exc}") from None
        out.append(lk)
    return out


class TaskArgument(BaseModel):
    """A named argument ``{"name": ..., "value": ...}`` (temporal domains)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="Parameter name, one of the tool's parameters.")
    value: JsonValue = Field(description="The value; usually a string, numbers and booleans are kept as given.")


Argument = Annotated[TaskArgument | str | JsonValue, Field(union_mode="left_to_right")]
"""One argument: a named pair, a plain string (resource domains: text, a file name or ``<node-j>``), or any
other JSON value as found in real data."""


class TaskNode(BaseModel):
    """One tool invocation: the tool's name and its arguments."""

    model_config = ConfigDict(extra="ignore")

    task: str = Field(description="Tool id (must be a tool of the library to be correct).")
    arguments: list[Argument] = Field(
        default_factory=list,
        description="Arguments in order; see the module docstring for the <node-j> convention.",
    )

    @field_validator("arguments", mode="before")
    @classmethod
    def _bare_string(cls, value: Any) -> Any:
        # v1 gold data sometimes gives the whole argument list as one bare string
        if isinstance(value, str):
            return [value]
        if value is None:
            return []
        return value

    def references(self) -> list[int]:
        """Indices j of every ``<node-j>`` reference in this node's arguments, in order."""
        out: list[int] = []
        for arg in self.arguments:
            text = arg.value if isinstance(arg, TaskArgument) else arg
            if isinstance(text, str):
                out.extend(node_index(m) for m in NODE_REF.findall(text))
        return out

    def named_arguments(self) -> dict[str, Any]:
        """``{name: value}`` for the named arguments of this node."""
        return {a.name: a.value for a in self.arguments if isinstance(a, TaskArgument)}


class TaskLink(BaseModel):
    """A dependency between two task nodes, by tool name (a task graph reads a node index ``0`` or
    ``"<node-0>"`` as that node's tool)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    source: str = Field(description="Tool name of the node that runs first.")
    target: str = Field(description="Tool name of the node that runs after it (and may use its output).")


class TaskGraph(BaseModel):
    """Task steps plus the tool invocation graph (nodes and links) that solves a request.

    The same model is written by the data engine (gold), parsed from model output (prediction), scored by
    the evaluator and executed by agents.
    """

    model_config = ConfigDict(extra="ignore")

    task_steps: list[str] = Field(default_factory=list, description="Natural-language steps, one per node.")
    task_nodes: list[TaskNode] = Field(default_factory=list, description="Tool invocations in order.")
    task_links: list[TaskLink] = Field(
        default_factory=list,
        description="Explicit links (temporal domains; derived in resource domains). Endpoints given as node "
        "indices (0, or \"<node-0>\") are read as that node's tool.",
    )

    @model_validator(mode="before")
    @classmethod
    def _index_links(cls, data: Any) -> Any:
        if isinstance(data, dict) and type(data.get("task_links")) is list:
            links = resolve_link_indices(data["task_links"], data.get("task_nodes"))
            if links is not data["task_links"]:
                data = {**data, "task_links": links}
        return data

    @field_validator("task_steps", mode="before")
    @classmethod
    def _steps(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            out = []
            for step in value:
                if isinstance(step, dict):
                    for key in ("task", "step", "description", "step_name", "id"):
                        if isinstance(step.get(key), str):
                            out.append(step[key])
                            break
                    else:
                        out.append(json.dumps(step, ensure_ascii=False))
                else:
                    out.append(step if isinstance(step, str) else json.dumps(step, ensure_ascii=False))
            return out
        return value

    @property
    def tool_names(self) -> list[str]:
        """Tool names of the nodes, in order."""
        return [n.task for n in self.task_nodes]

    def reference_links(self) -> list[TaskLink]:
        """Links implied by ``<node-j>`` references (resource domains); out-of-range and self references are
        skipped, duplicates removed, order kept."""
        names = self.tool_names
        seen: set[tuple[str, str]] = set()
        out: list[TaskLink] = []
        for i, node in enumerate(self.task_nodes):
            for j in node.references():
                if j == i or j >= len(names):
                    continue
                key = (names[j], node.task)
                if key not in seen:
                    seen.add(key)
                    out.append(TaskLink(source=key[0], target=key[1]))
        return out

    def links_for(self, dependency: str) -> list[TaskLink]:
        """The graph's links under a dependency kind: references for 'resource', explicit for 'temporal'."""
        return self.reference_links() if dependency == "resource" else list(self.task_links)


def graph_from_result(result: Any) -> TaskGraph:
    """Validate a raw ``result`` dict (model output) into a :class:`TaskGraph` (raises pydantic errors)."""
    return TaskGraph.model_validate(result)
