"""Error taxonomy: the paper's case study and crafted cases."""

from __future__ import annotations

from taskbench.eval.strict import parse_strict
from taskbench.eval.taxonomy import CATEGORIES, classify, summarize
from taskbench.schema import Sample, Tool, ToolLibrary

AUDIO = ToolLibrary(
    tools=[
        Tool(id="Audio Downloader", **{"input-type": ["text"], "output-type": ["audio"]}),
        Tool(id="Audio Noise Reduction", **{"input-type": ["audio"], "output-type": ["audio"]}),
        Tool(id="Audio Effects", **{"input-type": ["audio", "text"], "output-type": ["audio"]}),
        Tool(id="Audio Splicer", **{"input-type": ["audio", "audio"], "output-type": ["audio"]}),
    ],
    dependency="resource",
)
URL = "https://www.example.com/example.wav"
GOLD = Sample.model_validate(
    {
        "id": "case",
        "type": "chain",
        "task_nodes": [
            {"task": "Audio Downloader", "arguments": [URL]},
            {"task": "Audio Noise Reduction", "arguments": ["<node-0>"]},
            {"task": "Audio Effects", "arguments": ["<node-1>", "reverb 50%"]},
            {"task": "Audio Splicer", "arguments": ["<node-2>", "example.wav"]},
        ],
    }
)


def labels(nodes, gold=GOLD, library=AUDIO, dependency="resource", links=()):
    rec = {"id": gold.id, "result": {"task_nodes": nodes, "task_links": list(links)}}
    return classify(gold, parse_strict(gold.id, rec), library, dependency)


def test_paper_case_study_gpt4_correct():
    assert labels([n.model_dump() for n in GOLD.task_nodes]).labels == []


def test_paper_case_study_gpt35_missing_tool_only():
    e = labels(
        [
            {"task": "Audio Noise Reduction", "arguments": [URL]},
            {"task": "Audio Effects", "arguments": ["<node-0>", "reverb 50%"]},
            {"task": "Audio Splicer", "arguments": ["<node-1>", "example.wav"]},
        ]
    )
    assert e.labels == ["missing_tool"] and e.missing_tools == ["Audio Downloader"]


def test_paper_case_study_codellama_three_errors():
    e = labels(
        [
            {"task": "Audio Noise Reduction", "arguments": ["example.wav"]},
            {"task": "Audio Effects", "arguments": ["<node-0>", "reverb 50%"]},
            {"task": "Audio Splicer", "arguments": ["<node-1>", "<node-0>"]},
        ]
    )
    assert e.labels == ["missing_tool", "dependency_error", "parameter_error"]
    assert e.wrong_links == [("Audio Noise Reduction", "Audio Splicer")]
    assert e.parameter_tools == ["Audio Splicer"]


def test_extra_and_hallucinated_tools():
    nodes = [n.model_dump() for n in GOLD.task_nodes] + [
        {"task": "Audio Effects", "arguments": ["<node-3>", "echo"]},
        {"task": "Audio Teleporter", "arguments": ["x"]},
    ]
    e = labels(nodes)
    assert e.labels == ["extra_tool", "hallucinated_tool", "dependency_error"]
    assert e.extra_tools == ["Audio Effects", "Audio Teleporter"] and e.hallucinated_tools == ["Audio Teleporter"]


def test_temporal_dependency_and_parameter_errors():
    lib = ToolLibrary(tools=[Tool(id="get_weather"), Tool(id="send_email")], dependency="temporal")
    gold = Sample.model_validate(
        {
            "id": "t",
            "type": "chain",
            "task_nodes": [
                {"task": "get_weather", "arguments": [{"name": "city", "value": "Paris"}]},
                {"task": "send_email", "arguments": [{"name": "to", "value": "a@b.c"}]},
            ],
            "task_links": [{"source": "get_weather", "target": "send_email"}],
        }
    )
    nodes = [
        {"task": "get_weather", "arguments": [{"name": "city", "value": "Rome"}]},
        {"task": "send_email", "arguments": [{"name": "to", "value": "a@b.c"}]},
    ]
    e = labels(nodes, gold, lib, "temporal", links=[{"source": "send_email", "target": "get_weather"}])
    assert e.labels == ["dependency_error", "parameter_error"]
    assert e.missing_links == [("get_weather", "send_email")] and e.parameter_tools == ["get_weather"]


def test_parse_failure_missing_and_summary():
    missing = classify(GOLD, parse_strict("case", None), AUDIO, "resource")
    broken = classify(GOLD, parse_strict("case", {"id": "case", "answer": {}}), AUDIO, "resource")
    ok = labels([n.model_dump() for n in GOLD.task_nodes])
    assert missing.labels == ["missing_prediction"] and broken.labels == ["parse_failure"]
    s = summarize([missing, broken, ok])
    assert s.total == 3 and s.correct == 1
    assert list(s.counts) == list(CATEGORIES)
    assert s.counts["missing_prediction"] == 1 and s.counts["parse_failure"] == 1 and s.counts["missing_tool"] == 0
