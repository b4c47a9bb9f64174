"""Guided generation (engine/guided.py): the schema fixes the sampled nodes and links, so any document that fits
it has exactly the sampled subgraph; the rule critic is left with the values. Pure tests, plus one with the tiny
model under the compiled grammar."""

from __future__ import annotations

import json
import random
import re

import pytest

from taskbench import bundled
from taskbench.engine.critics import check_against_sampled, rule_verdict
from taskbench.engine.generate import GenerateOptions
from taskbench.engine.guided import MEDIA_FILES, guided_order, guided_schema, link_slots
from taskbench.engine.parse import build_sample, sampled_view
from taskbench.engine.prompts import generation_messages
from taskbench.errors import ConfigError
from taskbench.graph.build import graph_from_path
from taskbench.graph.sampling import sample_plan
from taskbench.schema import SampledSubgraph, ToolLink

jsonschema = pytest.importorskip("jsonschema")

DOMAINS = ("huggingface", "multimedia", "dailylifeapis")


@pytest.fixture(scope="module")
def graphs():
    return {d: graph_from_path(bundled.path(d)) for d in DOMAINS}


def _fill(schema, rng):
    """A random document that fits ``schema`` (the subset of JSON Schema the engine's schemas use)."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "anyOf" in schema:
        return _fill(rng.choice([a for a in schema["anyOf"] if a.get("enum", [1])]), rng)
    kind = schema.get("type")
    if kind == "object":
        return {k: _fill(v, rng) for k, v in schema["properties"].items()}
    if kind == "array":
        if "prefixItems" in schema:
            return [_fill(s, rng) for s in schema["prefixItems"]]
        return [_fill(schema["items"], rng) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        words = ["example.jpg", "a sunny beach", "example.wav", "Paris", "example.mp4", "talk.mp3", "photo_2.png"]
        fits = [w for w in words if re.search(schema.get("pattern", ""), w)]
        assert fits, schema
        return rng.choice(fits)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    raise AssertionError(schema)


def _record(entry, library, result):
    nodes, links = sampled_view(entry, library)
    return {"id": "00000", "type": entry.mode, "n_tools": entry.size, "sampled_nodes": nodes,
            "sampled_links": links, "result": result}


@pytest.mark.parametrize("domain", DOMAINS)
def test_any_document_of_the_guided_schema_has_exactly_the_sampled_subgraph(graphs, domain):
    """Random fills of every guided schema of 30 plan entries: valid JSON Schema, the document validates, and
    the sample built from it has no node or link issue against the sampled subgraph (where every link has an
    argument that can carry it; the others are counted)."""
    g = graphs[domain]
    rng = random.Random(7)
    multi = 0
    for n, entry in enumerate(sample_plan(g, 30, 3)):
        schema = guided_schema(entry, g.library)
        if n < 3:
            jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        _, unplaced = link_slots(entry, g.library) if g.library.dependency == "resource" else ({}, [])
        for _ in range(2):
            doc = _fill(schema, rng)
            assert validator.is_valid(doc)
            sample = build_sample(_record(entry, g.library, doc), g.library)
            assert [n.task for n in sample.task_nodes] == guided_order(entry)
            issues = [i.code for i in check_against_sampled(sample)]
            if not unplaced:
                assert issues == [], (entry, doc, issues)
            # a media input is a reference or a file of its kind in every filling
            for node in doc["invoking_graph"]["nodes"]:
                tool = g.library.get(node["task"])
                for name, kind in zip(tool.argument_names(), tool.input_types or [], strict=False):
                    value = node["arguments"].get(name)
                    if kind in MEDIA_FILES and not str(value).startswith("<node-"):
                        assert str(value).rsplit(".", 1)[-1] in MEDIA_FILES[kind], (node, kind)
        multi += entry.size > 1
    assert multi >= 15  # chains and DAGs were among them


def test_the_guided_schema_refuses_other_tools_orders_references_and_links(graphs):
    g = graphs["multimedia"]
    entry = next(e for e in sample_plan(g, 60, 1) if e.mode == "chain" and e.size == 3)
    schema = guided_schema(entry, g.library)
    valid = jsonschema.Draft202012Validator(schema)
    good = _fill(schema, random.Random(0))
    assert valid.is_valid(good)
    nodes = good["invoking_graph"]["nodes"]
    swapped = json.loads(json.dumps(good))
    swapped["invoking_graph"]["nodes"] = [nodes[1], nodes[0], nodes[2]]
    assert not valid.is_valid(swapped)  # another order
    other = next(t for t in g.library.tools if t.id not in entry.nodes)
    replaced = json.loads(json.dumps(good))
    replaced["invoking_graph"]["nodes"][2]["task"] = other.id
    assert not valid.is_valid(replaced)  # a tool outside the subgraph
    slots, _ = link_slots(entry, g.library)
    (i, k), j = next(iter(slots.items()))
    key = g.library.get(guided_order(entry)[i]).argument_names()[k]
    for value in ("example.jpg", f"<node-{i}>", "<node-7>"):
        broken = json.loads(json.dumps(good))
        broken["invoking_graph"]["nodes"][i]["arguments"][key] = value
        assert not valid.is_valid(broken), value  # the sampled link dropped, a self-reference, a made-up node
    first = json.loads(json.dumps(good))
    first["invoking_graph"]["nodes"][0]["arguments"] = {k: "<node-1>" for k in nodes[0]["arguments"]}
    assert not valid.is_valid(first)  # a forward reference: a link that was not sampled
    assert not valid.is_valid({**good, "task_steps": good["task_steps"][:2]})


def test_temporal_links_are_the_sampled_ones_and_nothing_else(graphs):
    g = graphs["dailylifeapis"]
    entry = next(e for e in sample_plan(g, 60, 2) if e.mode == "dag" and e.size >= 3)
    schema = guided_schema(entry, g.library)
    valid = jsonschema.Draft202012Validator(schema)
    good = _fill(schema, random.Random(1))
    want = {(lk.source, lk.target) for lk in entry.links}
    assert {(lk["source"], lk["target"]) for lk in good["invoking_graph"]["links"]} == want
    for links in ([], good["invoking_graph"]["links"][:-1],
                  good["invoking_graph"]["links"] + [{"source": entry.nodes[-1], "target": entry.nodes[0]}]):
        bad = json.loads(json.dumps(good))
        bad["invoking_graph"]["links"] = links
        assert not valid.is_valid(bad)
    single = next(e for e in sample_plan(g, 60, 2) if e.mode == "single")
    one = guided_schema(single, g.library)
    doc = _fill(one, random.Random(2))
    assert doc["invoking_graph"]["links"] == []
    assert not jsonschema.Draft202012Validator(one).is_valid(
        {**doc, "invoking_graph": {**doc["invoking_graph"], "links": [{"source": "a", "target": "b"}]}})


def test_guided_order_is_topological_even_when_the_entry_is_not():
    entry = SampledSubgraph(index=0, seed=0, mode="chain", size=3, nodes=["C", "A", "B"],
                            links=[ToolLink(source="A", target="B"), ToolLink(source="B", target="C")])
    assert guided_order(entry) == ["A", "B", "C"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_guided_schemas_compile_to_llama_grammars(graphs, domain):
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    from taskbench.llm.grammar import schema_to_gbnf

    g = graphs[domain]
    for entry in sample_plan(g, 12, 0):
        gbnf = schema_to_gbnf(guided_schema(entry, g.library))
        assert llama_grammar.LlamaGrammar.from_string(gbnf, verbose=False) is not None


def test_the_prompt_says_the_nodes_are_fixed_and_options_refuse_guided_baselines(graphs):
    g = graphs["multimedia"]
    entry = next(e for e in sample_plan(g, 20, 0) if e.size > 1)
    free = generation_messages("back-instruct", entry, g.library, seed=1)[0]["content"]
    guided = generation_messages("back-instruct", entry, g.library, seed=1, guided=True)[0]["content"]
    assert "already fixed" in guided and "already fixed" not in free
    assert GenerateOptions(n=1).use_guided and GenerateOptions(n=1, method="two-stage").use_guided
    assert not GenerateOptions(n=1, method="no-edges").use_guided
    assert not GenerateOptions(n=1, guided=False).use_guided
    with pytest.raises(ConfigError, match="--guided"):
        GenerateOptions(n=1, method="self-instruct", guided=True).check_choices()


@pytest.mark.slow
@pytest.mark.model
def test_the_tiny_model_under_the_guided_grammar_writes_the_sampled_subgraph(graphs, tmp_path):
    """SmolLM2-135M (which gets structure wrong freely) generates 3 chains/DAGs of the bundled multimedia graph
    in guided mode: every answer parses and its nodes and links are the sampled ones."""
    pytest.importorskip("llama_cpp")
    from taskbench.engine.generate import generate
    from taskbench.llm import get_model
    from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file

    if locate_packaged_file(KNOWN_WEIGHTS["smollm2-135m"].chunks[0]) is None:
        pytest.skip(f"the tiny test model is not installed ({KNOWN_WEIGHTS['smollm2-135m'].pip_line})")
    g = graphs["multimedia"]
    model = get_model("llamacpp/smollm2-135m", cache=False, n_threads=1)
    options = GenerateOptions(n=3, seed=5, mode_weights={"chain": 1, "dag": 1}, size_weights={2: 1, 3: 1},
                              max_tokens=700, keep="none",
                              limits={"user_request": 120, "step": 60, "value": 40, "comments": 40})
    summary = generate(g, model, tmp_path / "gen", options, close_model=True)
    assert summary.done == 3
    rows = [json.loads(line) for line in (tmp_path / "gen" / "data_raw.json").read_text().splitlines()]
    for row in rows:
        assert row["guided"] is True and row.get("error") is None, row.get("error")
        sample = build_sample(row, g.library)
        assert [c.code for c in check_against_sampled(sample)] == [], row["raw"]
        structural = {"sampled_nodes_mismatch", "sampled_links_mismatch", "disconnected", "type_mismatch",
                      "duplicate_tool", "ref_type", "ref_self", "ref_out_of_range", "arg_count"}
        reasons = {r.split(":", 1)[0] for r in rule_verdict(sample, g.library, g).reasons}
        assert not reasons & structural, reasons


def test_a_guided_media_input_takes_a_file_of_its_kind_only(graphs):
    g = graphs["multimedia"]
    image = next(t for t in g.library.tools if (t.input_types or []) == ["image"])
    single = SampledSubgraph(index=0, seed=0, mode="single", size=1, nodes=[image.id], links=[])
    arg = guided_schema(single, g.library)["properties"]["invoking_graph"]["properties"]["nodes"]["prefixItems"][0]
    validator = jsonschema.Draft202012Validator(arg)
    doc = {"task": image.id, "arguments": {image.argument_names()[0]: "photo.png"}}
    assert validator.is_valid(doc)
    doc["arguments"][image.argument_names()[0]] = "example.wav"
    assert not validator.is_valid(doc)
