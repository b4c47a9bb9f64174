"""The bounded, step-aligned task plan: its schema rejects degenerate answers, the llama.cpp grammar built from
it stops a model that tries to loop, filled plans become reference results, and a cut-off answer is a failure
in strict scoring."""

from __future__ import annotations

import json

import pytest

from taskbench import bundled
from taskbench.dataset.layout import load_dataset
from taskbench.eval.api import evaluate
from taskbench.eval.strict import parse_strict
from taskbench.predict.plan import (
    PlanBounds,
    argument_keys,
    max_plan_chars,
    plan_schema,
    plan_to_result,
    sample_plan,
)

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module", params=["huggingface", "multimedia", "dailylifeapis"])
def ds(request):
    return load_dataset(bundled.path(request.param))


_VALIDATORS: dict[int, object] = {}


def _valid(doc, schema) -> bool:
    """Valid against the schema (one checked validator per schema object: checking a 40-tool plan schema
    itself is the slow part)."""
    validator = _VALIDATORS.get(id(schema))
    if validator is None:
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = _VALIDATORS[id(schema)] = (jsonschema.Draft202012Validator(schema), schema)
    return validator[0].is_valid(doc)


def _step(tool, args, after=None, text="do it"):
    out = {"step": text, "tool": tool, "arguments": args}
    if after is not None:
        out["after"] = after
    return out


def test_every_gold_sample_is_a_valid_plan_and_converts_back(ds) -> None:
    schema = plan_schema(ds.library)
    dep = ds.library.dependency
    for s in ds.samples:
        plan = sample_plan(s, ds.library)
        assert _valid(plan, schema), s.id
        result = plan_to_result(plan)
        assert sorted(n["task"] for n in result["task_nodes"]) == sorted(s.tool_names)
        back = {(lk["source"], lk["target"]) for lk in result["task_links"]}
        assert back == {(lk.source, lk.target) for lk in s.graph.links_for(dep)}, s.id
        assert all(t.startswith(f"Step {i + 1}: ") for i, t in enumerate(result["task_steps"]))


def test_degenerate_answers_do_not_fit_the_schema() -> None:
    mm = load_dataset(bundled.path("multimedia"))
    schema = plan_schema(mm.library)
    ok = {"steps": [_step("Audio Noise Reduction", {"audio": "example.wav"}),
                    _step("Audio-to-Text", {"audio": "<node-0>"})]}
    assert _valid(ok, schema)
    looping = {"steps": [_step("Audio Noise Reduction", {"audio": "example.wav"})] * 11}
    assert not _valid(looping, schema)  # more than 10 nodes
    assert _valid({"steps": looping["steps"][:10]}, schema)
    assert not _valid({"steps": []}, schema)
    assert not _valid({"steps": [_step("Audio Noise Reduction", {"audio": "a.wav", "text": "x"})]}, schema)
    assert not _valid({"steps": [_step("Audio Noise Reduction", {})]}, schema)  # its one input is missing
    assert not _valid({"steps": [_step("Audio Noise Reduction", {"audio": "<node-0>"})]}, schema)  # itself
    assert not _valid({"steps": [_step("Audio Noise Reduction", {"audio": "a.wav"}),
                                 _step("Audio-to-Text", {"audio": "<node-1>"})]}, schema)  # not earlier
    assert not _valid({"steps": [_step("Audio Noise Reduction", {"audio": ""})]}, schema)
    assert not _valid({"steps": [_step("No Such Tool", {"audio": "a.wav"})]}, schema)
    assert not _valid({"steps": [_step("Audio Noise Reduction", {"audio": "x" * 201})]}, schema)
    assert not _valid({"steps": [_step("Audio Noise Reduction", {"audio": "a"}, text="y" * 121)]}, schema)
    # <node-j> only for earlier steps: step 1 may use <node-0>, never <node-1> (itself) or <node-2>
    refs = schema["$defs"]["value_1"]["anyOf"][0]["enum"]
    assert refs == ["<node-0>"] and "value_0" not in schema["$defs"]


def test_temporal_links_join_chosen_steps_only_and_never_a_step_to_itself() -> None:
    dl = load_dataset(bundled.path("dailylifeapis"))
    schema = plan_schema(dl.library)
    weather = {"location": "Lisbon", "date": "2024-05-01"}
    first = _step("get_weather", weather, after=[])
    assert _valid({"steps": [first, _step("get_weather", weather, after=["<node-0>"])]}, schema)
    assert not _valid({"steps": [_step("get_weather", weather, after=["<node-0>"])]}, schema)  # self-link
    assert not _valid({"steps": [first, _step("get_weather", weather, after=["<node-1>"])]}, schema)
    assert not _valid({"steps": [first, _step("get_weather", {"location": "x"}, after=[])]}, schema)
    assert not _valid({"steps": [first, _step("get_weather", {**weather, "city": "x"}, after=[])]}, schema)
    result = plan_to_result({"steps": [first, _step("send_sms", {"phone_number": "1", "content": "hi"},
                                                    after=["<node-0>", "<node-0>", "<node-5>"])]})
    assert result["task_links"] == [{"source": "get_weather", "target": "send_sms"}]
    assert result["task_nodes"][1]["arguments"] == [{"name": "phone_number", "value": "1"},
                                                   {"name": "content", "value": "hi"}]


def test_argument_keys_follow_input_types_and_parameters() -> None:
    hf = load_dataset(bundled.path("huggingface")).library
    assert [k for k, _ in argument_keys(hf.get("Question Answering"), "resource")] == ["text_1", "text_2"]
    assert [k for k, _ in argument_keys(hf.get("Image Classification"), "resource")] == ["image"]
    dl = load_dataset(bundled.path("dailylifeapis")).library
    assert [k for k, _ in argument_keys(dl.get("get_weather"), "temporal")] == ["location", "date"]


def test_a_shortlist_restricts_the_tools_and_the_worst_case_is_bounded() -> None:
    mm = load_dataset(bundled.path("multimedia"))
    small = plan_schema(mm.library, ["Audio-to-Text", "Audio Noise Reduction", "nonsense"])
    tools = [a["properties"]["tool"]["const"] for a in small["properties"]["steps"]["prefixItems"][0]["anyOf"]]
    assert tools == [t for t in mm.library.names if t in {"Audio-to-Text", "Audio Noise Reduction"}]
    tight = plan_schema(mm.library, ["Audio-to-Text"], bounds=PlanBounds(max_steps=2, step_chars=10,
                                                                         value_chars=10))
    worst = {"steps": [_step("Audio-to-Text", {"audio": "a" * 10}, text="s" * 10)] * 2}
    assert _valid(worst, tight)
    assert len(json.dumps(worst, separators=(",", ":"))) <= max_plan_chars(tight)
    assert max_plan_chars(plan_schema(mm.library)) < 10_000


def test_truncated_records_are_failures_in_strict_scoring() -> None:
    hf = load_dataset(bundled.path("huggingface"))
    gold = hf.samples[:4]
    records = [{"id": s.id, "result": s.graph.model_dump(mode="json")} for s in gold]
    # the same perfect results, but two were reported as cut off by the token limit
    records[1]["finish_reason"] = records[3]["finish_reason"] = "length"
    assert parse_strict(gold[1].id, records[1]).status == "parse_error"
    assert "token limit" in (parse_strict(gold[1].id, records[1]).error or "")
    doc = evaluate(gold, records, hf.library, mode="strict", bootstrap=0).to_json()
    metrics = doc["groups"]["overall_overall"]["metrics"]
    assert metrics["parse_failure_rate"] == pytest.approx(0.5)
    assert metrics["node_micro_recall"] < 1.0


# ------------------------------------------------------------------------------------------ the grammar


def _llama_grammar():
    llama_cpp = pytest.importorskip("llama_cpp")
    from llama_cpp.llama_grammar import LlamaGrammar

    return llama_cpp, LlamaGrammar


def test_the_grammar_compiles_for_every_domain(ds) -> None:
    _, LlamaGrammar = _llama_grammar()
    from taskbench.llm.grammar import schema_to_gbnf

    gbnf = schema_to_gbnf(plan_schema(ds.library))
    assert LlamaGrammar.from_string(gbnf, verbose=False) is not None
    # the shared step text is one rule before the per-tool union, not one copy per tool
    assert gbnf.count('"\\"step\\"" space ":"') <= 10


@pytest.mark.slow
@pytest.mark.model
def test_a_model_that_tries_to_loop_is_stopped_by_the_schema() -> None:
    """A real model (SmolLM2-135M) steered by a scripted logits processor that always prefers to go on:
    another step, another character, another argument. The grammar of the plan schema still closes every
    string at its maxLength and the step list at max_steps, so the answer ends by itself, parses and fits."""
    llama_cpp, LlamaGrammar = _llama_grammar()
    from taskbench.llm.grammar import schema_to_gbnf
    from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file, resolve_model_path

    if locate_packaged_file(KNOWN_WEIGHTS["smollm2-135m"].chunks[0]) is None:
        pytest.skip(f"the tiny test model is not installed ({KNOWN_WEIGHTS['smollm2-135m'].pip_line})")
    import numpy as np

    mm = load_dataset(bundled.path("multimedia"))
    bounds = PlanBounds(max_steps=4, step_chars=12, value_chars=12)
    schema = plan_schema(mm.library, ["Audio Noise Reduction", "Audio-to-Text", "Image Stitcher"], bounds=bounds)
    llm = llama_cpp.Llama(str(resolve_model_path("smollm2-135m")), n_ctx=2048, n_threads=1, verbose=False)
    vocab = llm.n_vocab()
    eager = [t for t in range(vocab)
             if llm.detokenize([t]).decode("utf-8", "ignore").strip() in {",", "a", "aa", "aaa", "{", '{"', "<"}]

    def keep_going(input_ids, scores):
        scores = np.array(scores, copy=True)
        scores[eager] += 100.0  # whenever continuing is allowed, continue
        return scores

    grammar = LlamaGrammar.from_string(schema_to_gbnf(schema), verbose=False)
    budget = max_plan_chars(schema)  # every token adds at least one character
    out = llm.create_completion(
        "Plan the tool calls for: clean up example.wav and transcribe it.\nJSON:", max_tokens=budget,
        temperature=0.0, grammar=grammar, logits_processor=llama_cpp.LogitsProcessorList([keep_going]),
    )
    llm.close()
    choice = out["choices"][0]
    text = choice["text"]
    assert choice["finish_reason"] == "stop", text
    doc = json.loads(text)
    assert _valid(doc, schema)
    assert len(doc["steps"]) == bounds.max_steps  # it went on as long as it was allowed to, and no further
    # the scripted preference really drove every string to its bound
    assert all(len(step["step"]) == bounds.step_chars for step in doc["steps"]), text
    # the looping steps repeat one another, and a result keeps each step once (issue 26 point 4)
    result = plan_to_result(doc)
    distinct = {(step["tool"], step["step"]) for step in doc["steps"]}
    assert 1 <= len(result["task_nodes"]) <= len(distinct) <= bounds.max_steps
