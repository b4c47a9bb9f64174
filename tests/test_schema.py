"""The data model: round trips, both release shapes, aliases, the <node-j> convention."""

from __future__ import annotations

import json

import pytest

from taskbench.dataset import read_samples
from taskbench.schema import Prediction, Sample, TaskArgument, TaskGraph, Tool, ToolLibrary

V1 = {
    "id": "1",
    "seed": 3,
    "n_tools": 2,
    "type": "chain",
    "sampled_nodes": '[{"task": "A", "input-type": ["text"], "output-type": ["image"]}]',
    "sampled_links": '[{"source": "A", "target": "B"}]',
    "instruction": "do it",
    "task_nodes": [{"task": "A", "arguments": ["hi"]}, {"task": "B", "arguments": ["<node-0>"]}],
    "task_links": [{"source": "A", "target": "B"}],
    "task_steps": ["Step 1", "Step 2"],
}


def test_v1_shape_reads_and_round_trips():
    s = Sample.model_validate(V1)
    assert s.user_request == "do it"
    assert s.sampled_nodes == [{"task": "A", "input-type": ["text"], "output-type": ["image"]}]
    assert s.sampled_links[0].source == "A"
    rec = s.to_record()
    assert "instruction" not in rec and rec["user_request"] == "do it"
    again = Sample.model_validate(json.loads(json.dumps(rec)))
    assert again == s


def test_hub_aliases():
    rec = {"id": 7, "user_request": "x", "tool_nodes": [{"task": "A", "arguments": []}], "tool_steps": ["s"],
           "tool_links": [], "type": "single"}
    s = Sample.model_validate(rec)
    assert s.id == "7" and s.tool_names == ["A"] and s.task_steps == ["s"] and s.n_tools == 1


def test_temporal_arguments_are_named_pairs_and_quirks_kept():
    s = Sample.model_validate({"id": "1", "task_nodes": [
        {"task": "t", "arguments": [{"name": "city", "value": "Paris"}, 2, "plain"]},
        {"task": "u", "arguments": "a bare string"},
    ]})
    args = s.task_nodes[0].arguments
    assert isinstance(args[0], TaskArgument) and args[0].name == "city"
    assert args[1] == 2 and args[2] == "plain"
    assert s.task_nodes[1].arguments == ["a bare string"]
    assert s.task_nodes[0].named_arguments() == {"city": "Paris"}


def test_reference_links_follow_node_refs():
    g = TaskGraph.model_validate({"task_nodes": [
        {"task": "A", "arguments": ["x"]},
        {"task": "B", "arguments": ["<node-0>", "<node-1>", "<node-9>"]},
        {"task": "C", "arguments": ["<node-0> and <node-1>"]},
    ]})
    assert [(lk.source, lk.target) for lk in g.reference_links()] == [("A", "B"), ("A", "C"), ("B", "C")]


def test_steps_as_dicts_are_read():
    g = TaskGraph.model_validate({"task_steps": [{"step": "one"}, {"description": "two"}]})
    assert g.task_steps == ["one", "two"]


def test_tool_aliases_and_library_uniqueness():
    t = Tool.model_validate({"name": "x", "description": "d", "input_types": ["a"], "output-type": ["b"]})
    assert (t.id, t.desc, t.input_types, t.output_types) == ("x", "d", ["a"], ["b"])
    with pytest.raises(ValueError, match="duplicate tool id"):
        ToolLibrary(tools=[t, t], dependency="resource")


def test_prediction_record_is_reference_format():
    p = Prediction(id="5", user_request="r", result={"task_steps": [], "task_nodes": [], "task_links": []},
                   raw="{}", model="mock/x")
    rec = p.to_record()
    assert rec["id"] == "5" and rec["result"]["task_nodes"] == [] and rec["model"] == "mock/x"
    assert Prediction.model_validate(rec) == p
    assert Prediction(id="1", result={"task_nodes": "bad"}).graph() is None


def test_released_gold_samples_round_trip(reference_dir):
    for domain in ("huggingface", "multimedia", "dailylifeapis"):
        samples = read_samples(reference_dir / domain / "gold_sample.jsonl")
        assert len(samples) >= 20
        for s in samples:
            assert Sample.model_validate(json.loads(json.dumps(s.to_record()))) == s
