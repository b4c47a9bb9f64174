"""Extracting the JSON object from model text (free mode) and building Prediction records."""

from __future__ import annotations

import pytest

from taskbench.predict.parse import extract_result, make_prediction
from taskbench.schema import Usage

GRAPH = {"task_steps": ["s"], "task_nodes": [{"task": "A", "arguments": ["x"]}]}


@pytest.mark.parametrize(
    "text",
    [
        '{"task_steps": ["s"], "task_nodes": [{"task": "A", "arguments": ["x"]}]}',
        'Sure! Here is the plan:\n```json\n{"task_steps": ["s"], "task_nodes": [{"task": "A", "arguments": ["x"]}]}\n```\nHope it helps.',
        '# RESULT #: {"task_steps": ["s"], "task_nodes": [{"task": "A", "arguments": ["x"]}]} done',
        '{"note": 1} then {"task_steps": ["s"], "task_nodes": [{"task": "A", "arguments": ["x"]}]}',
        '{"task_steps": ["s"],\n "task_nodes": [{"task": "A", "arguments": ["x"],},],}',
        "{'task_steps': ['s'], 'task_nodes': [{'task': 'A', 'arguments': ['x']}]}",
        '[{"task_steps": ["s"]}, {"task_nodes": [{"task": "A", "arguments": ["x"]}]}]',
    ],
    ids=["plain", "fenced-prose", "marker", "two-objects", "trailing-commas", "python-literal", "list-merge"],
)
def test_extract_json_finds_the_graph(text: str) -> None:
    obj, err = extract_result(text)
    assert err is None
    assert obj == GRAPH


def test_list_merge_concatenates_lists() -> None:
    obj, _ = extract_result('[{"task_nodes": [{"task": "A"}]}, {"task_nodes": [{"task": "B"}]}]')
    assert obj == {"task_nodes": [{"task": "A"}, {"task": "B"}]}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty output"),
        ("I cannot help with that.", "no JSON object"),
        ('{"task_steps": ["s"], "task_nodes": [{"task": "A", "argu', "unterminated"),
        ('{"task_steps": ["s"] "task_nodes": []}', "invalid JSON"),
    ],
)
def test_extract_json_failures_name_the_reason(text: str, reason: str) -> None:
    obj, err = extract_result(text)
    assert obj is None
    assert err is not None and reason in err


def test_make_prediction_prefers_backend_parse_and_keeps_raw() -> None:
    usage = Usage(prompt_tokens=10, completion_tokens=5, seconds=0.5)
    p = make_prediction("7", user_request="r", raw="garbage", model="mock/x", usage=usage, parsed=GRAPH)
    assert p.result == GRAPH and p.error is None and p.raw == "garbage"
    rec = p.to_record()
    assert list(rec)[:3] == ["id", "user_request", "result"]  # the reference layout first


def test_make_prediction_records_the_parse_error() -> None:
    p = make_prediction("7", user_request="r", raw="no json here", model="m/x", usage=None,
                        parse_error="backend: invalid")
    assert p.result is None
    assert p.error == "backend: invalid"
    assert p.to_record()["result"] is None
