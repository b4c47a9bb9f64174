"""The data engine's pure parts: answer schemas (valid JSON Schema, accepted by llama.cpp, closed for OpenAI
strict mode), prompts, parsing of our and the reference engine's answer shapes, the teacher's verdict, the rule
verdict, near-duplicate detection and the statistics table."""

from __future__ import annotations

import json

import pytest

from taskbench import bundled
from taskbench.engine.critics import rule_verdict
from taskbench.engine.dedup import near_duplicates
from taskbench.engine.output import statistics
from taskbench.engine.parse import NameIndex, build_sample, sampled_view, teacher_text, teacher_verdict
from taskbench.engine.prompts import critic_messages, generation_messages, judge_messages
from taskbench.engine.schemas import critic_schema, generation_schema, judge_schema
from taskbench.graph.build import graph_from_path
from taskbench.graph.sampling import sample_plan

jsonschema = pytest.importorskip("jsonschema")

DOMAINS = ("huggingface", "multimedia", "dailylifeapis")


@pytest.fixture(scope="module")
def graphs():
    return {d: graph_from_path(bundled.path(d)) for d in DOMAINS}


def _walk(schema):
    yield schema
    for value in schema.values():
        if isinstance(value, dict):
            yield from _walk(value)
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, dict):
                    yield from _walk(v)


@pytest.mark.parametrize("domain", DOMAINS)
def test_generation_schemas_are_valid_closed_and_become_llama_grammars(graphs, domain):
    g = graphs[domain]
    plan = sample_plan(g, 12, 0)
    for entry in plan:
        tools = [g.library.get(n) for n in entry.nodes]
        for parts in (("task_steps", "user_request", "invoking_graph", "check_by_teacher"), ("user_request",)):
            schema = generation_schema(tools, g.library.dependency, n_nodes=entry.size, max_links=entry.size, parts=parts)
            jsonschema.Draft202012Validator.check_schema(schema)
            for node in _walk(schema):
                if node.get("type") == "object":
                    assert node["additionalProperties"] is False and node["required"] == list(node["properties"])
                if node.get("type") == "string" and "enum" not in node:
                    assert node["maxLength"] > 0
                assert "$ref" not in node
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    whole = generation_schema(g.library.tools, g.library.dependency, n_nodes=4, max_links=6)
    llama_grammar.LlamaGrammar.from_json_schema(json.dumps(whole), verbose=False)
    for extra in (critic_schema(), judge_schema()):
        jsonschema.Draft202012Validator.check_schema(extra)
        llama_grammar.LlamaGrammar.from_json_schema(json.dumps(extra), verbose=False)


def test_schema_rejects_other_tools_other_argument_names_and_wrong_lengths(graphs):
    g = graphs["dailylifeapis"]
    entry = next(e for e in sample_plan(g, 20, 1) if e.size == 2)
    tools = [g.library.get(n) for n in entry.nodes]
    schema = generation_schema(tools, "temporal", n_nodes=2, max_links=1)
    valid = jsonschema.Draft202012Validator(schema)

    def answer(nodes, links, steps=2):
        return {"task_steps": ["a"] * steps, "user_request": "r", "invoking_graph": {"nodes": nodes, "links": links},
                "check_by_teacher": {"comments": "c", "executable": True, "correct": True}}

    def node(tool, **override):
        args = {p.name: ("v" if p.required else None) for p in tool.parameters}
        args.update(override)
        return {"task": tool.id, "arguments": args}

    good = answer([node(tools[0]), node(tools[1])], [{"source": tools[0].id, "target": tools[1].id}])
    assert valid.is_valid(good)
    other = next(t for t in g.library.tools if t.id not in entry.nodes)
    assert not valid.is_valid(answer([node(tools[0]), node(other)], []))  # a tool outside the subgraph
    assert not valid.is_valid(answer([node(tools[0]), node(tools[1], bogus="x")], []))  # an unknown parameter
    assert not valid.is_valid(answer([node(tools[0])], [], steps=1))  # too few nodes
    assert not valid.is_valid(answer([node(tools[0]), node(tools[1])], [{"source": tools[0].id,
                                                                           "target": tools[1].id}] * 2))  # links


def test_prompts_show_the_subgraph_and_its_edges_and_are_pure(graphs):
    g = graphs["multimedia"]
    entry = next(e for e in sample_plan(g, 30, 2) if e.mode == "chain")
    one = generation_messages("back-instruct", entry, g.library, seed=7)
    assert one == generation_messages("back-instruct", entry, g.library, seed=7)
    text = one[0]["content"]
    for name in entry.nodes:
        assert f'"id": "{name}"' in text
    for lk in entry.links:
        assert f"{lk.source} -> {lk.target}" in text
    assert "random seed 7" in text and "check_by_teacher" in text and "example.jpg" in text
    assert "check_by_teacher" not in generation_messages("back-instruct", entry, g.library, seed=7, check=False)[0][
        "content"]
    two = generation_messages("two-stage", entry, g.library, seed=7, stage=2, user_request="MY REQUEST")[0]["content"]
    assert "MY REQUEST" in two and '"user_request"' not in two.split("# OUTPUT #")[1]


def test_reference_engine_answer_shape_is_read_with_names_normalised(graphs):
    g = graphs["multimedia"]
    entry = next(e for e in sample_plan(g, 40, 3) if e.mode == "chain" and e.size == 3)
    nodes, links = sampled_view(entry, g.library)
    a, b, c = entry.nodes
    record = {"id": "1", "type": "chain", "n_tools": 3, "sampled_nodes": nodes, "sampled_links": links,
              "result": {"task_steps": ["s1", "s2", "s3"], "user_request": "do it",
                         "invoking_graph": {
                             "nodes": [{"id": a.replace(" ", "_"), "input": ["example.jpg"]},
                                       {"id": b.upper(), "input": [a]},
                                       {"id": c, "input": [b.lower()]}],
                             "links": [{"source": a, "target": b}, {"source": b, "target": c}]}}}
    sample = build_sample(record, g.library)
    assert sample.tool_names == [a, b, c]
    assert sample.task_nodes[1].arguments == ["<node-0>"] and sample.task_nodes[2].arguments == ["<node-1>"]
    assert {(lk.source, lk.target) for lk in sample.task_links} == {(a, b), (b, c)}
    assert NameIndex(g.library).resolve("nope tool") == "nope tool"


def test_temporal_object_arguments_become_pairs_and_drop_nulls(graphs):
    g = graphs["dailylifeapis"]
    tool = g.library.tools[0]
    params = [p.name for p in tool.parameters]
    record = {"id": "x", "type": "single", "n_tools": 1, "result": {
        "task_steps": ["s"], "user_request": "r",
        "invoking_graph": {"nodes": [{"task": tool.id, "arguments": {params[0]: "Paris", **{p: None for p in params[1:]}}}],
                           "links": []}}}
    sample = build_sample(record, g.library)
    assert [a.model_dump() for a in sample.task_nodes[0].arguments] == [{"name": params[0], "value": "Paris"}]


@pytest.mark.parametrize("value, passed", [
    ({"comments": "ok", "executable": True, "correct": True}, True),
    ({"comments": "ok", "executable": True, "correct": False}, False),
    ({"comments": "x", "executable": "no", "correct": "yes"}, False),
    ("Let me check... After carefully evaluating, found some mistakes: none. Conclusion: Executable: yes, Correct: yes", True),
    ("... Conclusion: Executable: yes, Correct: no", False),
    ("I think it is fine.", None),
    (None, None),
])
def test_teacher_verdict(value, passed):
    v = teacher_verdict(value)
    assert v.name == "llm" and v.passed is passed
    if passed is not True:
        assert v.reasons


def test_teacher_text_is_the_released_string_form():
    assert teacher_text({"comments": "All good.", "executable": True, "correct": False}) == \
        "All good. Conclusion: Executable: yes, Correct: no"


def test_rule_verdict_checks_alignment_types_and_parameters(graphs):
    g = graphs["huggingface"]
    entry = next(e for e in sample_plan(g, 50, 4) if e.mode == "chain" and e.size == 2)
    nodes, links = sampled_view(entry, g.library)
    a, b = entry.nodes
    base = {"id": "1", "type": "chain", "n_tools": 2, "sampled_nodes": nodes, "sampled_links": links}
    ta, tb = g.library.get(a), g.library.get(b)
    literal = {"image": "example.jpg", "audio": "example.wav", "video": "example.mp4"}

    def args(tool, ref=None):
        out = {}
        for name, kind in zip(tool.argument_names(), tool.input_types, strict=True):
            out[name] = ref if ref and kind == ta.first_output_type() and ref not in out.values() else \
                literal.get(kind, "some text")
        return out

    request = "r with example.jpg, example.wav and example.mp4"  # the files the arguments use are named
    good = {**base, "result": {"task_steps": ["1", "2"], "user_request": request, "invoking_graph": {"nodes": [
        {"task": a, "arguments": args(ta)}, {"task": b, "arguments": args(tb, "<node-0>")}]}}}
    assert rule_verdict(build_sample(good, g.library), g.library, g).passed is True
    no_link = json.loads(json.dumps(good))
    no_link["result"]["invoking_graph"]["nodes"][1]["arguments"] = args(tb)
    verdict = rule_verdict(build_sample(no_link, g.library), g.library, g)
    assert verdict.passed is False and any(r.startswith("sampled_links_mismatch") for r in verdict.reasons)
    short = json.loads(json.dumps(good))
    short["result"]["task_steps"] = ["1"]
    assert any(r.startswith("steps_count") for r in rule_verdict(build_sample(short, g.library), g.library, g).reasons)


def test_near_duplicates_point_at_the_earliest_similar_request():
    texts = ["Translate my essay example.txt into French please",
             "Please translate my essay example.txt into French",
             "Make a video from example.jpg with music",
             "",
             "translate my essay example.txt into french, please!",
             ""]
    assert near_duplicates(texts, threshold=90) == [None, 0, None, None, 0, None]
    # word order, case and punctuation are ignored: these three are the same request
    assert near_duplicates(texts, threshold=100, block=2) == [None, 0, None, None, 0, None]
    assert near_duplicates(["Translate my essay into French", "Translate my essay into German"], threshold=95) == \
        [None, None]


def test_minhash_finds_the_same_duplicates_as_every_pair_on_released_requests(shared):
    texts = []
    for domain in DOMAINS:
        path = shared / "reference" / "taskbench" / domain / "user_requests.json"
        texts += [json.loads(line)["user_request"] for line in path.read_text().splitlines()[:500] if line.strip()]
    exact = near_duplicates(texts, method="exact")
    fast = near_duplicates(texts, method="minhash")
    assert sum(1 for x in exact if x is not None) >= 5  # the released data has near duplicates
    assert fast == exact


def test_near_duplicates_blocks_agree_with_one_block():
    import random

    rng = random.Random(0)
    words = "image video audio text translate summarise colour stitch extract caption".split()
    texts = [" ".join(rng.choice(words) for _ in range(6)) for _ in range(300)]
    assert near_duplicates(texts, block=7) == near_duplicates(texts, block=1024)
    exact, fast = near_duplicates(texts), near_duplicates(texts, method="minhash")
    # MinHash only proposes candidates, each scored exactly: whatever it flags, every pair comparison flags too
    assert all(e is not None and e <= f for e, f in zip(exact, fast, strict=True) if f is not None)
    with pytest.raises(ValueError):
        near_duplicates(texts, method="nope")


def test_statistics_rates_are_over_attempts_and_grouped_by_mode_and_size():
    def row(mode, size, *, failed=False, rule=True, llm=True, kept=None):
        return {"mode": mode, "size": size, "call_failed": failed, "answered": not failed, "rule": rule, "llm": llm,
                "kept": (rule and llm) if kept is None else kept, "duplicate": False, "nodes": size, "links": size - 1,
                "words": 10, "reasons": [] if rule else ["sampled_links_mismatch"]}

    rows = [row("single", 1), row("chain", 2, rule=False), row("chain", 2, llm=False), row("dag", 3, failed=True,
                                                                                            rule=False, llm=False)]
    s = statistics(rows)
    assert s["planned"] == 4 and s["attempts"] == 3 and s["failed_calls"] == 1
    assert s["rule_critic"] == {"passed": 2, "rate": round(2 / 3, 4)}
    assert s["llm_critic"] == {"passed": 2, "rate": round(2 / 3, 4)}
    assert s["both_critics"] == {"passed": 1, "rate": round(1 / 3, 4)}
    assert s["by_mode"]["chain"]["rule_critic"]["rate"] == 0.5 and s["by_size"]["2"]["planned"] == 2
    assert s["by_mode"]["dag"]["rule_critic"]["rate"] is None
    assert s["reasons"] == {"sampled_links_mismatch": 2} and s["avg_nodes"] == 1.0


def test_critic_and_judge_prompts_show_the_sample(graphs):
    g = graphs["dailylifeapis"]
    entry = sample_plan(g, 3, 0)[1]
    nodes, links = sampled_view(entry, g.library)
    record = {"id": "1", "type": entry.mode, "n_tools": entry.size, "sampled_nodes": nodes, "sampled_links": links,
              "result": {"task_steps": ["first step"], "user_request": "THE REQUEST",
                         "invoking_graph": {"nodes": [{"task": entry.nodes[0], "arguments": {}}], "links": []}}}
    sample = build_sample(record, g.library)
    critic = critic_messages(sample, g.library, entry)[0]["content"]
    assert "THE REQUEST" in critic and "first step" in critic and "EDGES" in critic
    assert "EDGES" not in critic_messages(sample, g.library, None)[0]["content"]
    judge = judge_messages(sample, g.library)[0]["content"]
    assert "naturalness" in judge and "THE REQUEST" in judge and entry.nodes[0] in judge


def test_any_json_answer_is_assessed_without_raising(graphs):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from taskbench.engine.output import assess

    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
        max_leaves=20,
    )
    keys = st.sampled_from(["task_steps", "user_request", "invoking_graph", "check_by_teacher", "task_nodes",
                            "task_links", "nodes", "links", "task", "id", "arguments", "input"])
    answers = st.dictionaries(keys, json_values | st.dictionaries(keys, json_values, max_size=3), max_size=5)
    g = graphs["multimedia"]
    entry = sample_plan(g, 3, 0)[0]
    nodes, links = sampled_view(entry, g.library)

    @settings(max_examples=150, deadline=None)
    @given(answers)
    def check(result):
        record = {"id": "1", "type": entry.mode, "n_tools": entry.size, "sampled_nodes": nodes,
                  "sampled_links": links, "result": result}
        sample, verdicts = assess(record, g.library, g)
        assert verdicts["rule"].passed in (True, False) and verdicts["llm"].passed in (True, False, None)
        sample.to_record()

    check()
