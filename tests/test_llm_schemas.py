"""Task-graph JSON Schemas and JSON extraction/repair (pure)."""

from __future__ import annotations

import pytest

from taskbench.llm import extract_json, repair_json, resolve_schema, task_graph_schema
from taskbench.llm.providers.mock import minimal_instance
from taskbench.llm.schemas import JSONExtractionError
from taskbench.schema import TaskGraph, Tool, ToolLibrary


def _library(dependency):
    return ToolLibrary(tools=[Tool(id="Image Captioning"), Tool(id="Text-to-Speech")], dependency=dependency)


def test_resource_schema_shape():
    schema = task_graph_schema(_library("resource"))
    assert schema["required"] == ["task_steps", "task_nodes"]
    node = schema["properties"]["task_nodes"]["items"]
    assert node["properties"]["task"]["enum"] == ["Image Captioning", "Text-to-Speech"]
    assert node["properties"]["arguments"]["items"]["type"] == "string"
    assert schema["additionalProperties"] is False and "$ref" not in str(schema)


def test_temporal_schema_shape():
    schema = task_graph_schema(_library("temporal"))
    assert schema["required"] == ["task_steps", "task_nodes", "task_links"]
    arg = schema["properties"]["task_nodes"]["items"]["properties"]["arguments"]["items"]
    assert arg["required"] == ["name", "value"]
    link = schema["properties"]["task_links"]["items"]["properties"]
    assert link["source"]["enum"] == link["target"]["enum"] == ["Image Captioning", "Text-to-Speech"]
    instance = minimal_instance(schema)
    assert TaskGraph.model_validate(instance).task_nodes[0].task == "Image Captioning"
    assert task_graph_schema(["a"], "resource", include_links=True)["required"][-1] == "task_links"
    with pytest.raises(ValueError):
        task_graph_schema([], "resource")
    with pytest.raises(ValueError):
        task_graph_schema(["a"], "spatial")


def test_resolve_schema():
    schema, name, model = resolve_schema(TaskGraph)
    assert name == "TaskGraph" and model is TaskGraph and schema["type"] == "object"
    assert resolve_schema({"title": "My thing!", "type": "object"})[1] == "My_thing_"
    assert resolve_schema(None) == (None, "result", None)
    with pytest.raises(TypeError):
        resolve_schema("not a schema")


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure!\n```json\n{"a": [1, 2]}\n```\nDone.', {"a": [1, 2]}),
        ('# RESULT #: {"a": "x"} and then {"b": 2}', {"a": "x"}),
        ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}),
        ("{'a': 'it\\'s', 'b': True, 'c': None}", {"a": "it's", "b": True, "c": None}),
        ('{"a": 1, // a comment\n "b": /* x */ 2}', {"a": 1, "b": 2}),
        ('{"task_nodes": [{"task": "A", "arguments": ["<node-0>"', {"task_nodes": [{"task": "A",
                                                                     "arguments": ["<node-0>"]}]}),
        ('{"a": "unterminated', {"a": "unterminated"}),
        ('{"a": 1, "b":', {"a": 1}),
        ("[1, 2, 3", [1, 2, 3]),
        ('{"s": "a } inside"}', {"s": "a } inside"}),
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json at all", "{{{{", 42])
def test_extract_json_failures(text):
    with pytest.raises(JSONExtractionError):
        extract_json(text)


def test_repair_keeps_valid_json():
    valid = '{"a": [1, {"b": "c, ]"}], "d": null}'
    assert repair_json(valid) == valid


def test_bounded_schema():
    schema = task_graph_schema(["a", "b"], "temporal", max_nodes=3, max_arguments=2, max_string_length=40)
    props = schema["properties"]
    assert props["task_nodes"]["maxItems"] == 3 and props["task_nodes"]["minItems"] == 1
    assert props["task_steps"]["maxItems"] == 3 and props["task_steps"]["items"]["maxLength"] == 40
    assert props["task_nodes"]["items"]["properties"]["arguments"]["maxItems"] == 2
    assert props["task_links"]["maxItems"] == 6
    assert "maxItems" not in task_graph_schema(["a"])["properties"]["task_nodes"]
