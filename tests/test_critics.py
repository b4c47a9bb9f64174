"""The rule critic: crafted good and bad samples, and what it finds in the released v1 gold samples."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from taskbench.dataset import load_dataset
from taskbench.engine.critics import (
    ISSUE_CODES,
    check_against_sampled,
    check_dataset,
    check_sample,
    issue_counts,
    rule_verdict,
)
from taskbench.schema import Sample, ToolGraph, ToolLibrary, ToolLink

RESOURCE_TOOLS = [
    {"id": "Image Captioner", "desc": "", "input-type": ["image"], "output-type": ["text"]},
    {"id": "Translator", "desc": "", "input-type": ["text"], "output-type": ["text"]},
    {"id": "Speaker", "desc": "", "input-type": ["text"], "output-type": ["audio"]},
    {"id": "Painter", "desc": "", "input-type": ["text"], "output-type": ["image"]},
    {"id": "Editor", "desc": "", "input-type": ["text", "image"], "output-type": ["image"]},
    {"id": "Comparer", "desc": "", "input-type": ["text", "text"], "output-type": []},
]
TEMPORAL_TOOLS = [
    {"id": "get_weather", "desc": "", "parameters": [{"name": "location", "type": "string", "desc": ""},
                                                     {"name": "date", "type": "date", "desc": ""}]},
    {"id": "send_sms", "desc": "", "parameters": [{"name": "phone_number", "type": "string", "desc": ""},
                                                  {"name": "content", "type": "string", "desc": ""}]},
    {"id": "take_note", "desc": "", "parameters": [{"name": "content", "type": "string", "desc": ""}]},
]


@pytest.fixture(scope="module")
def resource_lib() -> ToolLibrary:
    return ToolLibrary.model_validate({"tools": RESOURCE_TOOLS, "dependency": "resource"})


@pytest.fixture(scope="module")
def temporal_lib() -> ToolLibrary:
    return ToolLibrary.model_validate({"tools": TEMPORAL_TOOLS, "dependency": "temporal"})


def _resource_graph(lib: ToolLibrary, drop: tuple[str, str] | None = None) -> ToolGraph:
    links = []
    for a in lib.tools:
        for b in lib.tools:
            shared = [t for t in a.output_types or [] if t in (b.input_types or [])]
            if a.id != b.id and shared and (a.id, b.id) != drop:
                links.append(ToolLink(source=a.id, target=b.id, type=shared[0]))
    return ToolGraph(nodes=lib.tools, links=links, dependency="resource")


def good_resource() -> dict[str, Any]:
    """A 4-node dag: caption an image, translate the caption, read it aloud, compare it with a text."""
    return {
        "id": "10000001", "seed": 1, "type": "dag", "n_tools": 4,
        "user_request": "Caption example.jpg, translate the caption, read it aloud and compare it with 'a dog'.",
        "task_steps": ["Step 1: caption", "Step 2: translate", "Step 3: speak", "Step 4: compare"],
        "task_nodes": [
            {"task": "Image Captioner", "arguments": ["example.jpg"]},
            {"task": "Translator", "arguments": ["<node-0>"]},
            {"task": "Speaker", "arguments": ["<node-1>"]},
            {"task": "Comparer", "arguments": ["<node-1>", "a dog"]},
        ],
        "task_links": [
            {"source": "Image Captioner", "target": "Translator"},
            {"source": "Translator", "target": "Speaker"},
            {"source": "Translator", "target": "Comparer"},
        ],
        "sampled_nodes": [{"task": t, "input-type": [], "output-type": []}
                          for t in ("Comparer", "Image Captioner", "Speaker", "Translator")],
        "sampled_links": [
            {"source": "Image Captioner", "target": "Translator"},
            {"source": "Translator", "target": "Comparer"},
            {"source": "Translator", "target": "Speaker"},
        ],
    }


def good_temporal() -> dict[str, Any]:
    return {
        "id": "20000001", "seed": 2, "type": "chain", "n_tools": 3,
        "user_request": "Check the weather in Oslo on 2024-05-01, text it to 555-0100 and note it.",
        "task_steps": ["Step 1", "Step 2", "Step 3"],
        "task_nodes": [
            {"task": "get_weather", "arguments": [{"name": "location", "value": "Oslo"},
                                                  {"name": "date", "value": "2024-05-01"}]},
            {"task": "send_sms", "arguments": [{"name": "phone_number", "value": "555-0100"},
                                               {"name": "content", "value": "weather"}]},
            {"task": "take_note", "arguments": [{"name": "content", "value": "weather sent"}]},
        ],
        "task_links": [{"source": "get_weather", "target": "send_sms"},
                       {"source": "send_sms", "target": "take_note"}],
        "sampled_nodes": [{"task": "get_weather"}, {"task": "send_sms"}, {"task": "take_note"}],
        "sampled_links": [{"source": "get_weather", "target": "send_sms"},
                          {"source": "send_sms", "target": "take_note"}],
    }


def codes(issues) -> set[str]:
    return {i.code for i in issues}


def test_good_samples_are_clean(resource_lib, temporal_lib):
    assert check_sample(Sample.model_validate(good_resource()), resource_lib, _resource_graph(resource_lib)) == []
    assert check_sample(Sample.model_validate(good_temporal()), temporal_lib) == []
    single = {**good_resource(), "type": "single", "n_tools": 1, "task_steps": ["Step 1"],
              "user_request": "Make example.png blue",
              "task_nodes": [{"task": "Editor", "arguments": ["make it blue", "example.png"]}],
              "task_links": [], "sampled_nodes": [{"task": "Editor"}], "sampled_links": []}
    assert check_sample(Sample.model_validate(single), resource_lib) == []


def _set(path: list, value):
    def mutate(rec):
        target = rec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return rec
    return mutate


RESOURCE_CASES = [
    ("unknown_tool", _set(["task_nodes", 2, "task"], "Narrator")),
    ("duplicate_tool", _set(["task_nodes", 2], {"task": "Translator", "arguments": ["<node-1>"]})),
    ("steps_count", _set(["task_steps"], ["only one step"])),
    ("n_tools_mismatch", _set(["n_tools"], 5)),
    ("type_mismatch", _set(["type"], "chain")),
    ("type_mismatch", _set(["type"], "single")),
    ("ref_out_of_range", _set(["task_nodes", 2, "arguments"], ["<node-7>"])),
    ("ref_self", _set(["task_nodes", 2, "arguments"], ["<node-2>"])),
    ("ref_type", _set(["task_nodes", 3, "arguments"], ["<node-2>", "a dog"])),
    ("arg_count", _set(["task_nodes", 3, "arguments"], ["<node-1>"])),
    ("arg_type", _set(["task_nodes", 1, "arguments"], ["example.wav"])),
    ("arg_format", _set(["task_nodes", 3, "arguments"], ["<node-1>", 3.5])),
    ("links_refs_mismatch", _set(["task_links"], [{"source": "Image Captioner", "target": "Translator"}])),
    ("cycle", _set(["task_nodes", 0, "arguments"], ["<node-2>"])),
    ("sampled_nodes_mismatch", _set(["sampled_nodes"], [{"task": "Translator"}])),
    ("sampled_links_mismatch", _set(["sampled_links"], [])),
]


@pytest.mark.parametrize(("code", "mutate"), RESOURCE_CASES, ids=[c for c, _ in RESOURCE_CASES])
def test_resource_defects_are_found(resource_lib, code, mutate):
    record = mutate(copy.deepcopy(good_resource()))
    issues = check_sample(Sample.model_validate(record), resource_lib, _resource_graph(resource_lib))
    assert code in codes(issues), issues
    assert all(i.code in ISSUE_CODES for i in issues)
    assert all(str(i).startswith(i.code + ": ") for i in issues)


def test_link_not_in_graph(resource_lib):
    sample = Sample.model_validate(good_resource())
    graph = _resource_graph(resource_lib, drop=("Translator", "Speaker"))
    issues = check_sample(sample, resource_lib, graph)
    assert [i.code for i in issues] == ["link_not_in_graph"]
    assert "Translator -> Speaker" in issues[0].message


def test_disconnected_chain(resource_lib):
    record = good_resource()
    record["task_nodes"][1]["arguments"] = ["some text"]
    record["task_nodes"][3]["arguments"] = ["some text", "a dog"]
    record["task_links"] = [{"source": "Translator", "target": "Speaker"}]
    record["type"] = "chain"
    got = codes(check_sample(Sample.model_validate(record), resource_lib, sampled=False))
    assert {"disconnected", "type_mismatch"} <= got


TEMPORAL_CASES = [
    ("unknown_param", _set(["task_nodes", 2, "arguments", 0, "name"], "text")),
    ("missing_param", _set(["task_nodes", 0, "arguments"], [{"name": "location", "value": "Oslo"}])),
    ("duplicate_param", _set(["task_nodes", 2, "arguments"], [{"name": "content", "value": "a"},
                                                              {"name": "content", "value": "b"}])),
    ("arg_format", _set(["task_nodes", 2, "arguments"], ["weather sent"])),
    ("link_unknown_node", _set(["task_links", 1], {"source": "send_sms", "target": "book_car"})),
    ("duplicate_link", _set(["task_links"], [{"source": "get_weather", "target": "send_sms"}] * 2
                            + [{"source": "send_sms", "target": "take_note"}])),
    ("cycle", _set(["task_links", 1], {"source": "send_sms", "target": "get_weather"})),
    ("type_mismatch", _set(["type"], "dag")),
    ("disconnected", _set(["task_links"], [{"source": "get_weather", "target": "send_sms"}])),
    ("sampled_links_mismatch", _set(["sampled_links"], [{"source": "get_weather", "target": "take_note"}])),
]


@pytest.mark.parametrize(("code", "mutate"), TEMPORAL_CASES, ids=[c for c, _ in TEMPORAL_CASES])
def test_temporal_defects_are_found(temporal_lib, code, mutate):
    record = mutate(copy.deepcopy(good_temporal()))
    if code == "type_mismatch":  # a 2-node dag
        record["task_nodes"] = record["task_nodes"][:2]
        record["task_steps"] = record["task_steps"][:2]
        record["n_tools"] = 2
        record["task_links"] = record["task_links"][:1]
    issues = check_sample(Sample.model_validate(record), temporal_lib, sampled=code.startswith("sampled"))
    assert code in codes(issues), issues


def test_check_against_sampled_uses_given_links():
    sample = Sample.model_validate(good_temporal())
    assert check_against_sampled(sample) == []
    wrong = check_against_sampled(sample, links=[])
    assert [i.code for i in wrong] == ["sampled_links_mismatch"]
    assert "missing: get_weather -> send_sms" in wrong[0].message
    no_sampled = Sample.model_validate({**good_temporal(), "sampled_nodes": None})
    assert check_against_sampled(no_sampled) == []


def test_issue_counts_count_samples_once_per_code(temporal_lib):
    bad = copy.deepcopy(good_temporal())
    bad["id"] = "2"
    bad["task_nodes"][0]["arguments"] = []  # two missing params: one sample for the code
    results = check_dataset([Sample.model_validate(good_temporal()), Sample.model_validate(bad)], temporal_lib)
    assert results["20000001"] == []
    assert len([i for i in results["2"] if i.code == "missing_param"]) == 2
    assert issue_counts(results) == {"missing_param": 1}


# What the critic finds in the released v1 gold samples (../shared/reference/taskbench/*/gold_sample.jsonl).
# Known quirks: 1-based <node-j> references in some chains (read as self references), tools renamed by the
# generating model, n_tools off by one, explicit links that disagree with the references or the sampled
# subgraph, numbers as arguments, parameter names that the tool does not have.
KNOWN_FINDINGS: dict[str, dict[str, set[str]]] = {
    "huggingface": {
        "21313605": {"unknown_tool", "sampled_nodes_mismatch"},
        "13708813": {"n_tools_mismatch", "disconnected", "type_mismatch", "links_refs_mismatch",
                     "sampled_nodes_mismatch", "sampled_links_mismatch"},
        "31235736": {"disconnected", "type_mismatch", "ref_self", "links_refs_mismatch"},
        "20974659": {"disconnected", "type_mismatch", "ref_self", "links_refs_mismatch"},
        "19917773": {"unknown_tool", "sampled_nodes_mismatch", "sampled_links_mismatch"},
        "12916151": {"links_refs_mismatch", "sampled_links_mismatch"},
    },
    "multimedia": {
        "24732754": {"arg_format"},
        "31416321": {"disconnected", "type_mismatch", "ref_self", "links_refs_mismatch"},
        "22743517": {"disconnected", "type_mismatch", "arg_format", "ref_self", "links_refs_mismatch"},
        "23190139": {"disconnected", "ref_self", "links_refs_mismatch"},
        "26662822": {"disconnected", "type_mismatch", "ref_self", "links_refs_mismatch"},
    },
    "dailylifeapis": {
        "38563456": {"unknown_param", "missing_param"},
        "13364607": {"unknown_param", "missing_param"},
        "37557023": {"unknown_tool", "sampled_nodes_mismatch", "sampled_links_mismatch"},
        "33765020": {"unknown_tool", "sampled_nodes_mismatch", "sampled_links_mismatch"},
    },
}


@pytest.mark.parametrize("domain", sorted(KNOWN_FINDINGS))
def test_released_gold_samples_known_findings(reference_dir, domain):
    ds = load_dataset(reference_dir / domain)
    results = check_dataset(ds.samples, ds.library, ds.graph)
    found = {sid: codes(issues) for sid, issues in results.items() if issues}
    assert found == KNOWN_FINDINGS[domain]
    assert len(results) == len(ds.samples)


# ------------------------------------------------------------------------------------------ the request itself

@pytest.mark.parametrize("request_text,code", [
    ("read_file read_file", "request_is_tool_names"),       # issue 27: what generation wrote on MCP tools
    ("SELECT * FROM users;", "request_is_code"),            # issue 27
    ("get_weather", "request_is_tool_names"),
    ("get_weather, send_sms and take_note.", "request_is_tool_names"),
    ("get weather send sms", "request_is_tool_names"),
    ("get_weather(location='Oslo')", "request_is_code"),
    ('{"location": "Oslo"}', "request_is_code"),
    ("INSERT INTO orders (customer) VALUES ('Dave')", "request_is_code"),
    ("   ", "request_empty"),
])
def test_a_request_that_is_no_user_request_is_refused(request_text, code):
    read_file = {"id": "read_file", "desc": "", "parameters": [{"name": "path", "type": "string", "desc": ""}]}
    lib = ToolLibrary.model_validate({"tools": [*TEMPORAL_TOOLS, read_file], "dependency": "temporal"})
    sample = Sample.model_validate({**good_temporal(), "user_request": request_text})
    assert code in codes(check_sample(sample, lib))
    verdict = rule_verdict(sample, lib)
    assert not verdict.passed and any(code in r for r in verdict.reasons)


@pytest.mark.parametrize("request_text", [
    "Select the three cheapest flights from Rome and note them.",
    "Get the weather in Oslo and send it by SMS to 555-0100.",
    "Run SELECT name FROM users on my database and take a note of the names.",
])
def test_real_requests_pass_the_request_check(temporal_lib, request_text):
    sample = Sample.model_validate({**good_temporal(), "user_request": request_text})
    assert not codes(check_sample(sample, temporal_lib)) & {"request_is_tool_names", "request_is_code",
                                                              "request_empty"}


def test_requests_copied_from_a_tool_description_are_rejected():
    """What the embedded 0.5B model wrote as requests in 14 of 60 generated samples (issue 26); the released
    gold and bundled requests pass (tests/test_critic_grounding.py reads them)."""
    from taskbench import bundled
    from taskbench.dataset.layout import load_dataset
    from taskbench.engine.critics import check_request

    resource_lib = load_dataset(bundled.path("multimedia"), samples=False).library
    desc = next(t.desc for t in resource_lib.tools if t.id == "Video-to-Audio")
    copied = [desc, desc.rstrip(".") + ".", f"Please help me. {desc}"]
    for text in copied:
        assert codes(check_request(text, resource_lib)) == {"request_is_tool_description"}, text
    for text in ("Make example.png blue", f"I have a photo example.jpg of my cat; {desc.lower()[:12]} it for me"):
        assert check_request(text, resource_lib) == [], text
