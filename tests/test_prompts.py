"""Prompt rendering and demo choice (pure; no model)."""

from __future__ import annotations

import json

import pytest

from taskbench.errors import ConfigError
from taskbench.predict.demos import REFERENCE_DEMO_IDS, demo_candidates, demos_for
from taskbench.predict.prompts import build_messages, render_prompt, render_reformat, tool_lines
from taskbench.schema import Sample, Tool, ToolLibrary, ToolParameter

RESOURCE = ToolLibrary(
    dependency="resource",
    tools=[
        Tool(id="Image Captioning", desc="Describe an image in words.", input_types=["image"], output_types=["text"]),
        Tool(id="Text-to-Speech", desc="Read text aloud.", input_types=["text"], output_types=["audio"]),
    ],
)
TEMPORAL = ToolLibrary(
    dependency="temporal",
    tools=[
        Tool(id="get_weather", desc="Weather for a place and day.",
             parameters=[ToolParameter(name="location"), ToolParameter(name="date")]),
        Tool(id="send_email", desc="Send an email.", parameters=[ToolParameter(name="to")]),
    ],
)


def _sample(i: str, kind: str, nodes: list[dict], links: list[dict] | None = None) -> Sample:
    return Sample.model_validate({
        "id": i, "type": kind, "user_request": f"request {i}", "task_steps": [f"step of {i}"] * len(nodes),
        "task_nodes": nodes, "task_links": links or [],
    })


def test_resource_prompt_structure() -> None:
    demo = _sample("1", "chain", [{"task": "Image Captioning", "arguments": ["a.jpg"]},
                                  {"task": "Text-to-Speech", "arguments": ["<node-0>"]}])
    text = render_prompt(RESOURCE, "Caption photo.png and read it out", [demo])
    lines = text.splitlines()
    assert lines[0] == "# TOOL LIST #:"
    # one JSON object per tool, in library order, with resource types
    tools = [json.loads(line) for line in lines[1:3]]
    assert [t["id"] for t in tools] == ["Image Captioning", "Text-to-Speech"]
    assert tools[0]["input-type"] == ["image"] and tools[0]["output-type"] == ["text"]
    assert "parameters" not in tools[0]
    assert "<node-j>" in text and "task_links" not in text.split("# EXAMPLE #")[0]
    # the demo: its request and its gold result as JSON, without links (resource domain)
    ex = text.index("# EXAMPLE #:")
    demo_line = next(line for line in lines if line.startswith("# RESULT #: {"))
    shown = json.loads(demo_line.removeprefix("# RESULT #: "))
    assert shown["task_nodes"][1] == {"task": "Text-to-Speech", "arguments": ["<node-0>"]}
    assert "task_links" not in shown
    assert "request 1" in text[ex:]
    # the sample's request comes last, after every demo, and the prompt ends with the result marker
    assert text.rindex("# USER REQUEST #: Caption photo.png and read it out") > ex
    assert text.endswith("# RESULT #:")


def test_temporal_prompt_shows_parameters_and_links() -> None:
    demo = _sample("7", "chain", [{"task": "get_weather", "arguments": [{"name": "location", "value": "Paris"}]},
                                  {"task": "send_email", "arguments": [{"name": "to", "value": "bob"}]}],
                   [{"source": "get_weather", "target": "send_email"}])
    text = render_prompt(TEMPORAL, "Weather in Rome, then email it", [demo])
    tools = [json.loads(line) for line in tool_lines(TEMPORAL)]
    assert tools[0] == {"id": "get_weather", "desc": "Weather for a place and day.", "parameters": ["location", "date"]}
    assert "task_links" in text
    demo_line = next(line for line in text.splitlines() if line.startswith("# RESULT #: {"))
    assert json.loads(demo_line.removeprefix("# RESULT #: "))["task_links"] == [
        {"source": "get_weather", "target": "send_email"}
    ]


def test_zero_shot_has_no_example_and_messages_are_one_user_turn() -> None:
    msgs = build_messages(RESOURCE, "Read 'hi' aloud")
    assert len(msgs) == 1 and msgs[0]["role"] == "user"
    assert "# EXAMPLE #" not in msgs[0]["content"]
    assert msgs[0]["content"].count("# USER REQUEST #: Read 'hi' aloud") == 1


def test_shared_prefix_is_identical_across_requests() -> None:
    a = render_prompt(RESOURCE, "first request")
    b = render_prompt(RESOURCE, "second one")
    prefix = a[: a.rindex("# USER REQUEST #")]
    assert b.startswith(prefix)


def test_reformat_prompt_embeds_the_bad_answer() -> None:
    text = render_reformat("temporal", '{"task_nodes": [')
    assert '# RESULT #: {"task_nodes": [' in text
    assert text.endswith("# STRICT JSON FORMAT #:")
    assert "task_links" in text and "task_links" not in render_reformat("resource", "x")


def test_custom_template_file(tmp_path) -> None:
    tpl = tmp_path / "t.j2"
    tpl.write_text("{{ tools | length }} tools; {{ demos | length }} demos; Q: {{ user_request }}")
    assert render_prompt(RESOURCE, "hello", template=tpl) == "2 tools; 0 demos; Q: hello"


def test_reference_demo_ids_are_used_when_present() -> None:
    ids = REFERENCE_DEMO_IDS["temporal"]
    samples = [_sample(str(i), "single", [{"task": "send_email", "arguments": []}]) for i in (5, 6)]
    samples += [_sample(i, "chain", [{"task": "send_email", "arguments": []}]) for i in reversed(ids)]
    got = demo_candidates(samples, TEMPORAL, name="whatever")
    assert [s.id for s in got[:3]] == list(ids)  # in the reference's order


def test_fallback_demos_are_stratified_by_id_order() -> None:
    node = [{"task": "Text-to-Speech", "arguments": ["x"]}]
    samples = [_sample("30", "single", node), _sample("4", "dag", node), _sample("100", "chain", node),
               _sample("20", "chain", node), _sample("3", "single", node)]
    got = demo_candidates(samples, RESOURCE, name="mydata")
    # chain, dag, single round robin; within a structure by numeric id
    assert [s.id for s in got] == ["20", "4", "3", "100"]


def test_a_demo_is_never_its_own_example() -> None:
    node = [{"task": "Text-to-Speech", "arguments": ["x"]}]
    cands = [_sample(i, "chain", node) for i in ("a", "b", "c", "d")]
    assert [d.id for d in demos_for("b", cands, 3)] == ["a", "c", "d"]
    assert [d.id for d in demos_for("z", cands, 2)] == ["a", "b"]
    assert demos_for("a", cands, 0) == []
    with pytest.raises(ConfigError):
        demos_for("a", cands, 4)
