"""Compat mode, quirk by quirk, on small hand-computed cases (the reference evaluator's behaviour)."""

from __future__ import annotations

from typing import Any

import pytest

from taskbench.eval.api import evaluate
from taskbench.eval.compat import (
    evaluate_compat,
    expand_compat_metrics,
    get_content_type,
    score_samples_compat,
)
from taskbench.eval.groups import Group, group_mask, make_groups
from taskbench.schema import Tool, ToolLibrary

UNBOUND = "cannot access local variable 'new_argument' where it is not associated with a value"


def resource_lib() -> ToolLibrary:
    return ToolLibrary(
        dependency="resource",
        tools=[
            Tool.model_validate({"id": "Image Downloader", "input-type": ["url"], "output-type": ["image"]}),
            Tool.model_validate({"id": "Image Captioner", "input-type": ["image"], "output-type": ["text"]}),
            Tool.model_validate({"id": "Text Summarizer", "input-type": ["text"], "output-type": ["text"]}),
            Tool.model_validate({"id": "Speaker", "input-type": ["text"], "output-type": []}),
        ],
    )


def temporal_lib() -> ToolLibrary:
    return ToolLibrary(
        dependency="temporal",
        tools=[Tool(id="get_weather"), Tool(id="send_email"), Tool(id="book_car")],
    )


def gold(sid: str, nodes: list[Any], *, type_: str = "single", steps: Any = None, links: Any = None) -> dict:
    rec = {"id": sid, "type": type_, "task_nodes": nodes, "task_steps": steps or ["do it"]}
    if links is not None:
        rec["task_links"] = links
    return rec


def pred(sid: str, nodes: Any, *, steps: Any = None, links: Any = None) -> dict:
    result: dict[str, Any] = {"task_steps": steps if steps is not None else ["do it"], "task_nodes": nodes}
    if links is not None:
        result["task_links"] = links
    return {"id": sid, "result": result}


def one(g: dict, p: dict, lib: ToolLibrary | None = None, **kw: Any):
    (rec,) = score_samples_compat([g], [p], lib or resource_lib(), **kw)
    return rec


# ------------------------------------------------------------------------------------------ selection


def test_only_ids_in_both_count_and_missing_prediction_is_not_penalised() -> None:
    golds = [
        gold("a", [{"task": "Speaker", "arguments": ["hi"]}]),
        gold("b", [{"task": "Speaker", "arguments": []}]),
    ]
    preds = [pred("a", [{"task": "Speaker", "arguments": ["hi"]}]), pred("zzz", [])]
    res = evaluate_compat(golds, preds, resource_lib(), splits=("overall",), n_tools=("overall",))
    m = res.metrics["overall_overall"]
    assert m["all_samples"] == 1
    assert m["node_micro_f1_no_matching"] == 1.0


@pytest.mark.parametrize("mode", ["compat", "both"])
def test_evaluate_reads_one_pass_iterators_once(mode: str) -> None:
    """`evaluate` counts the prediction ids before compat scoring reads the predictions: a generator used to
    be exhausted by the count, and compat then scored nothing (every gold id "missing")."""
    golds = [
        gold("a", [{"task": "Speaker", "arguments": ["hi"]}]),
        gold("b", [{"task": "Image Captioner", "arguments": ["x.png"]}]),
    ]
    preds = [pred("a", [{"task": "Speaker", "arguments": ["hi"]}]), pred("b", [{"task": "Speaker"}])]
    kw: dict[str, Any] = {"mode": mode, "bootstrap": 0, "splits": ["overall"], "n_tools": ["overall"]}
    listed = evaluate(golds, preds, resource_lib(), **kw)
    streamed = evaluate((g for g in golds), (p for p in preds), resource_lib(), **kw)
    assert listed.compat is not None and listed.compat["overall_overall"]["all_samples"] == 2
    assert streamed.compat == listed.compat
    assert streamed.warnings == listed.warnings == []
    assert (streamed.strict is None) == (mode == "compat")


def test_missing_result_is_dropped_with_the_reference_text() -> None:
    golds = [
        gold("a", [{"task": "Speaker", "arguments": []}]),
        gold("b", [{"task": "Speaker", "arguments": []}]),
    ]
    preds = [{"id": "a", "answer": {}}, pred("b", [{"task": "Speaker", "arguments": []}])]
    res = evaluate_compat(golds, preds, resource_lib(), splits=("overall",), n_tools=("overall",))
    assert res.ignored_ids == {"a"}
    assert "Parsing Error: 'result', Ignore #id a" in res.log
    m = res.metrics["overall_overall"]
    assert (m["all_samples"], m["step_supports"], m["node_supports"], m["argument_supports"]) == (2, 1, 1, 1)


def test_alignment_ids_filter_gold() -> None:
    golds = [
        gold("a", [{"task": "Speaker", "arguments": []}]),
        gold("b", [{"task": "Speaker", "arguments": []}]),
    ]
    preds = [pred("a", []), pred("b", [{"task": "Speaker", "arguments": []}])]
    res = evaluate_compat(
        golds, preds, resource_lib(), splits="overall", n_tools="overall", alignment_ids={"b"}
    )
    assert res.metrics["overall_overall"]["all_samples"] == 1
    assert res.metrics["overall_overall"]["node_micro_f1_no_matching"] == 1.0


def test_duplicate_prediction_ids_last_wins() -> None:
    g = gold("a", [{"task": "Speaker", "arguments": []}])
    preds = [pred("a", [{"task": "Speaker", "arguments": []}]), pred("a", [])]
    rec = one(g, preds[0])
    assert rec.node_tp == [3]
    (rec,) = score_samples_compat([g], preds, resource_lib())
    assert rec.node_tp == [] and rec.node_fn == [3]


# ----------------------------------------------------------------------------------------------- steps


@pytest.mark.parametrize(
    ("steps", "text"),
    [
        (["Step 1: a", "Step 2: b"], "Step 1: a\nStep 2: b"),
        ([{"task": "x", "description": "d"}, {"task": "y"}], "x\ny"),
        ([{"step": "s1"}, {"step": "s2"}], "s1\ns2"),
        ([{"id": "i1"}], "i1"),
        ([{"step_name": "n1"}], "n1"),
        ([{"description": "d1"}, {"description": "d2"}], "d1\nd2"),
        ("abc", "a\nb\nc"),  # a bare string is iterated
        ([], "[]"),  # failures become str() of the value
        ([{"task": "x"}, {"other": "y"}], "[{'task': 'x'}, {'other': 'y'}]"),
        ({"task": "x"}, "{'task': 'x'}"),
        (["a", 3], "['a', 3]"),
    ],
)
def test_step_joining_rules(steps: Any, text: str) -> None:
    g = gold("a", [{"task": "Speaker", "arguments": []}], steps=["g1", "g2"])
    rec = one(g, pred("a", [], steps=steps))
    assert rec.step_ok and rec.pred_steps == text and rec.gold_steps == "g1\ng2"


def test_prediction_without_steps_is_dropped_only_when_steps_are_scored() -> None:
    g = gold("a", [{"task": "Speaker", "arguments": []}])
    p = {"id": "a", "result": {"task_nodes": [{"task": "Speaker"}]}}
    assert one(g, p, metrics=("rouge",)).error == "'task_steps'"
    assert one(g, p, metrics=("bertscore",)).error == "'task_steps'"
    rec = one(g, p, metrics=("f1", "ed"))
    assert rec.error is None and rec.node_ok and not rec.step_ok


def test_step_support_counts_samples_that_fail_later_and_rouge_uses_them() -> None:
    golds = [
        gold("a", [{"task": "Speaker", "arguments": []}], steps=["the cat sat"]),
        gold("b", [{"task": "Speaker", "arguments": []}], steps=["a dog"]),
    ]
    preds = [
        pred("a", [{"name": "Speaker"}], steps=["the cat"]),
        pred("b", [{"task": "Speaker"}], steps=["a dog"]),
    ]
    res = evaluate_compat(
        golds, preds, resource_lib(), splits="overall", n_tools="overall", metrics=("rouge", "f1")
    )
    m = res.metrics["overall_overall"]
    assert (m["step_supports"], m["node_supports"], m["argument_supports"]) == (2, 1, 1)
    assert res.ignored_ids == {"a"}
    # "the cat" vs "the cat sat": P=1, R=2/3, F=0.8 ; "a dog" vs itself: 1.0 -> mean 0.9
    assert m["step_rouge1"] == pytest.approx(0.9, abs=1e-12)
    assert m["step_rougeL"] == pytest.approx(0.9, abs=1e-12)
    # bigrams: "the cat" vs "the cat sat": P=1, R=1/2, F=2/3; second 1 -> 5/6
    assert m["step_rouge2"] == pytest.approx(5 / 6, abs=1e-12)


def test_argument_support_counts_a_non_text_tool_name_in_temporal_domains() -> None:
    g = gold("a", [{"task": "book_car", "arguments": []}], links=[])
    rec = one(g, pred("a", [{"task": 5, "arguments": []}], links=[]), temporal_lib())
    assert rec.graph_ok and not rec.node_ok and rec.error == "5"


def test_bertscore_callable_mean_over_step_supported_samples() -> None:
    golds = [
        gold("a", [{"task": "Speaker", "arguments": []}]),
        gold("b", [{"task": "Speaker", "arguments": []}]),
    ]
    preds = [pred("a", [{"task": "Speaker"}]), pred("b", [{"task": "Speaker"}])]
    calls = []

    def fake(p: list[str], r: list[str]) -> dict[str, list[float]]:
        calls.append(len(p))
        return {"precision": [0.5, 1.0], "recall": [0.25, 0.75], "f1": [0.0, 1.0]}

    res = evaluate_compat(golds, preds, resource_lib(), metrics=("bertscore",), bertscore=fake)
    m = res.metrics["overall_overall"]
    assert calls == [2]  # once for all groups
    assert (m["step_bertscore_precision"], m["step_bertscore_recall"], m["step_bertscore_f1"]) == (
        0.75,
        0.5,
        0.5,
    )
    res = evaluate_compat(golds, preds, resource_lib(), metrics=("bertscore",))
    assert "step_bertscore_f1" not in res.metrics["overall_overall"]
    assert any("BERTScore skipped" in line for line in res.log)


# ------------------------------------------------------------------------------- resource arguments


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("a.png", "image"),
        ("'clip.mp4'", "video"),
        ("song.mp3", "audio"),
        ("notes.aux", "audio"),
        ("hello", "text"),
        ("x.jpeg.mp4", "image"),
    ],
)
def test_content_type_guess(content: str, kind: str) -> None:
    assert get_content_type(content) == kind


def test_underscores_become_spaces_in_names_and_links_from_node_refs() -> None:
    g = gold(
        "a",
        [
            {"task": "Image Downloader", "arguments": ["http://x/a.png"]},
            {"task": "Image Captioner", "arguments": ["<node-0>", "<node-1>"]},  # self reference skipped
        ],
        type_="chain",
    )
    p = pred(
        "a",
        [
            {"task": "Image_Downloader", "arguments": ["http://x/a.png"]},
            {"task": "Image_Captioner", "arguments": [{"image": "<node-0>"}]},
        ],
    )
    rec = one(g, p)
    assert sorted(rec.node_tp) == [0, 1] and rec.node_fp == [] and rec.node_fn == []
    # the link target is the raw task name: gold "Image Captioner", prediction "Image_Captioner"
    assert rec.link == (0, 1, 1)
    # arguments: Image Downloader-image(-url), Image Captioner-image-Image Downloader on both sides
    assert rec.arg_name == (2, 0, 0) and rec.arg_value == (2, 0, 0)
    assert rec.edit_similarity == 1.0


def test_dict_list_and_bare_string_arguments() -> None:
    g = gold("a", [{"task": "Text Summarizer", "arguments": ["a b"]}])
    rec = one(g, pred("a", [{"task": "Text Summarizer", "arguments": [["a", "b"]]}]))
    assert rec.arg_value == (1, 0, 0)  # a list argument is joined with spaces
    rec = one(g, pred("a", [{"task": "Text Summarizer", "arguments": [{"text": "a b", "other": "z"}]}]))
    assert rec.arg_value == (1, 0, 0)  # a dict argument: its first value
    # a bare string as the argument list is iterated character by character: "ab" -> "a", "b"
    rec = one(g, pred("a", [{"task": "Text Summarizer", "arguments": "ab"}]))
    assert rec.arg_name == (1, 0, 0)
    # the reference puts the prediction's strings {..-a, ..-b} on its "gold" side: tp 0, fp 1, fn 2
    assert rec.arg_value == (0, 1, 2)


def test_non_text_argument_repeats_the_last_value_of_the_sample() -> None:
    g = gold("a", [{"task": "Image Downloader", "arguments": ["clip.mp4", 2]}])
    rec = one(g, pred("a", [{"task": "Image Downloader", "arguments": ["clip.mp4"]}]))
    # gold gets (video, clip.mp4) twice -> one distinct string, same as the prediction's
    assert rec.error is None and rec.arg_value == (1, 0, 0)
    # gold's last value carries over to the prediction's first (gold nodes are processed first)
    rec = one(g, pred("a", [{"task": "Image Downloader", "arguments": [7]}]))
    assert rec.error is None and rec.arg_value == (1, 0, 0)


def test_non_text_argument_without_a_previous_value_drops_the_sample() -> None:
    g = gold("a", [{"task": "Speaker", "arguments": [2]}])
    rec = one(g, pred("a", [{"task": "Speaker", "arguments": ["hi"]}]))
    assert not rec.node_ok and rec.error == UNBOUND
    g = gold("a", [{"task": "Speaker", "arguments": []}])
    rec = one(g, pred("a", [{"task": "Speaker", "arguments": [None, "x"]}]))
    assert rec.error == UNBOUND


def test_out_of_range_node_reference_repeats_or_drops() -> None:
    g = gold(
        "a",
        [
            {"task": "Image Downloader", "arguments": ["u.png"]},
            {"task": "Image Captioner", "arguments": ["<node-0>"]},
        ],
    )
    rec = one(g, pred("a", [{"task": "Image Captioner", "arguments": ["<node-5>"]}]))
    # repeats the gold's last value (image, Image Downloader) and adds no link
    assert rec.error is None and rec.link == (0, 0, 1) and rec.arg_value == (1, 1, 0)
    g = gold("a", [{"task": "Speaker", "arguments": []}])
    assert one(g, pred("a", [{"task": "Speaker", "arguments": ["<node-5>"]}])).error == UNBOUND


def test_node_reference_output_type_none_and_other() -> None:
    g = gold(
        "a",
        [{"task": "Speaker", "arguments": ["hi"]}, {"task": "Image Captioner", "arguments": ["<node-0>"]}],
    )
    p = pred(
        "a", [{"task": "Magic", "arguments": ["hi"]}, {"task": "Image Captioner", "arguments": ["<node-0>"]}]
    )
    res = evaluate_compat(
        [g], [p], resource_lib(), splits="overall", n_tools="overall", metrics=("argument",)
    )
    rec = res.samples[0]
    # gold: Speaker-text, Image Captioner-none ; prediction: Magic-text, Image Captioner-other
    assert rec.arg_name == (0, 2, 2)
    assert res.metrics["overall_overall"]["argument_task_argname_binary_f1_no_matching"] == 0.0


# ------------------------------------------------------------------------------------------- temporal


def test_temporal_links_from_task_links_and_string_arguments_drop() -> None:
    g = gold(
        "a",
        [
            {"task": "get_weather", "arguments": [{"name": "city", "value": "Rome"}]},
            {"task": "send_email", "arguments": [{"name": "to", "value": "x@y"}]},
        ],
        type_="chain",
        links=[{"source": "get_weather", "target": "send_email"}],
    )
    p = pred(
        "a",
        [
            {"task": "get_weather", "arguments": [{"name": "city", "value": "rome"}]},
            {"task": "send_email", "arguments": [{"name": "to", "value": "x@y"}]},
        ],
        links=[{"source": "get_weather", "target": "send_email"}, {"source": "send_email", "target": "x"}],
    )
    rec = one(g, p, temporal_lib())
    assert rec.link == (1, 1, 0)  # the extra predicted link is a false positive
    assert rec.arg_name == (2, 0, 0) and rec.arg_value == (1, 1, 1)
    p_bad = pred("a", [{"task": "get_weather", "arguments": ["city=Rome"]}], links=[])
    # Python's own wording of the error, as the reference prints it (3.11 added "not 'str'")
    assert one(g, p_bad, temporal_lib()).error in ("string indices must be integers, not 'str'",
                                                   "string indices must be integers")
    p_int = pred("a", [{"task": "get_weather", "arguments": [3]}], links=[])
    assert one(g, p_int, temporal_lib()).error == "'int' object is not subscriptable"
    p_nolinks = pred("a", [{"task": "get_weather", "arguments": []}])
    assert one(g, p_nolinks, temporal_lib()).error == "'task_links'"


# ------------------------------------------------------------------------------------ node P/R/F, ED


def test_node_scores_by_hand() -> None:
    lib = resource_lib()
    golds = [
        gold(
            "a",
            [{"task": "Image Downloader", "arguments": []}, {"task": "Image Captioner", "arguments": []}],
            type_="chain",
        ),
        gold("b", [{"task": "Text Summarizer", "arguments": []}]),
    ]
    preds = [
        pred("a", [{"task": "Image Downloader"}, {"task": "Made Up Tool"}]),
        pred("b", [{"task": "Text Summarizer"}, {"task": "Image Downloader"}]),
    ]
    res = evaluate_compat(golds, preds, lib, splits="overall", n_tools="overall", metrics=("f1", "ed"))
    m = res.metrics["overall_overall"]
    # tp: ID(a), TS(b); fn: IC(a); fp: ID(b); "Made Up Tool" counts nothing
    assert m["node_micro_precision_no_matching"] == pytest.approx(2 / 3)
    assert m["node_micro_recall_no_matching"] == pytest.approx(2 / 3)
    per = m["node_per_type_no_matchcing"]
    assert list(per) == lib.names
    assert per["Image Downloader"] == {
        "precision": 0.5,
        "recall": 1.0,
        "f1-score": pytest.approx(2 / 3),
        "support": 1,
    }
    assert per["Image Captioner"] == {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 1}
    assert per["Speaker"]["support"] == 0
    # macro over all 4 library tools (Speaker counts as 0)
    assert m["node_macro_precision_no_matching"] == pytest.approx((0.5 + 0 + 1 + 0) / 4)
    assert m["node_macro_f1_no_matching"] == pytest.approx((2 / 3 + 0 + 1 + 0) / 4)
    # ED: a: [1,0] vs [1,2] -> indel sim 1/2 ; b: [3,1] vs [3] -> 2/3 ; 1 - mean
    assert m["edit_distance"] == pytest.approx(1 - (0.5 + 2 / 3) / 2)
    assert "link_binary_f1" not in m and "step_rouge1" not in m


def test_edit_distance_pad_and_empty() -> None:
    g = gold("a", [{"task": "Speaker", "arguments": []}])
    assert one(g, pred("a", [{"task": "<PAD>"}])).edit_similarity == 0.0
    assert one(gold("a", []), pred("a", [])).edit_similarity == 1.0  # both empty: ratio 1


# --------------------------------------------------------------------------------- groups and metrics


def test_groups_add_and_mul() -> None:
    assert [g.key for g in make_groups(("all",), ("overall", "2"), "add")] == [
        "overall_overall",
        "single_overall",
        "chain_overall",
        "dag_overall",
        "overall_2",
    ]
    assert [g.key for g in make_groups(("single", "dag"), ("1", "2"), "mul")] == [
        "single_1",
        "single_2",
        "dag_1",
        "dag_2",
    ]
    assert len(make_groups("all", "all", "add")) == 14
    assert group_mask(Group("overall", "03"), ["single"], [3]).tolist() == [False]
    assert group_mask(Group("chain", "3"), ["chain", "chain", "dag"], [3, 2, 3]).tolist() == [
        True,
        False,
        False,
    ]


def test_group_without_supported_samples_reports_only_counts() -> None:
    golds = [
        gold("a", [{"task": "Speaker", "arguments": []}]),
        gold("b", [{"task": "Speaker", "arguments": []}] * 2, type_="chain"),
    ]
    preds = [pred("a", [{"task": "Speaker"}]), {"id": "b"}]
    res = evaluate_compat(
        golds, preds, resource_lib(), splits=("single", "chain"), n_tools=("2",), mode="add"
    )
    assert list(res.metrics) == ["single_overall", "chain_overall", "overall_2"]
    assert res.metrics["chain_overall"] == {
        "all_samples": 1,
        "step_supports": 0,
        "node_supports": 0,
        "link_supports": 0,
        "argument_supports": 0,
    }
    assert res.metrics["overall_2"] == res.metrics["chain_overall"]
    assert "step_rouge1" in res.metrics["single_overall"]


def test_metric_selection_and_key_order() -> None:
    assert expand_compat_metrics(["all"]) == ["f1", "ed", "link", "argument", "rouge", "bertscore"]
    g = gold("a", [{"task": "Speaker", "arguments": ["x"]}])
    p = pred("a", [{"task": "Speaker", "arguments": ["x"]}])
    m = evaluate_compat(
        [g], [p], resource_lib(), splits="overall", n_tools="overall", metrics=("argument",)
    ).metrics["overall_overall"]
    assert list(m)[5:] == [  # "argument" brings the node metrics too, as in the reference
        "node_micro_precision_no_matching",
        "node_micro_recall_no_matching",
        "node_micro_f1_no_matching",
        "node_macro_precision_no_matching",
        "node_macro_recall_no_matching",
        "node_macro_f1_no_matching",
        "node_per_type_no_matchcing",
        "argument_task_argname_binary_f1_no_matching",
        "argument_task_argname_value_binary_f1_no_matching",
    ]
    m = evaluate_compat(
        [g], [p], resource_lib(), splits="overall", n_tools="overall", metrics=("all",)
    ).metrics["overall_overall"]
    assert list(m)[5:9] == ["step_rouge1", "step_rouge2", "step_rougeL", "step_rougeLsum"]
    assert list(m)[-2:] == ["edit_distance", "link_binary_f1"]


def test_node_reference_parsing_follows_python_int() -> None:
    g = gold(
        "a",
        [
            {"task": "Image Downloader", "arguments": ["u.png"]},
            {"task": "Image Captioner", "arguments": ["<node- 0>"]},
            # -1 is the last node (this one), but -1 != 2 so it is not skipped as a self reference
            {"task": "Text Summarizer", "arguments": ["<node--1>"]},
        ],
        type_="chain",
    )
    rec = one(g, pred("a", []))
    # links: (Image Downloader -> Image Captioner), (Text Summarizer -> Text Summarizer)
    assert rec.link == (0, 0, 2)
    # an index whose ">" comes first does not parse: the previous value is repeated, no link
    g2 = gold(
        "a", [{"task": "Speaker", "arguments": ["x"]}, {"task": "Speaker", "arguments": ["a>b <node-0>"]}]
    )
    assert one(g2, pred("a", [])).link == (0, 0, 0)


def test_duplicate_gold_ids_last_record_in_the_group_wins() -> None:
    golds = [
        gold("a", [{"task": "Speaker", "arguments": []}], type_="single"),
        gold(
            "a",
            [{"task": "Speaker", "arguments": []}, {"task": "Image Captioner", "arguments": []}],
            type_="chain",
        ),
    ]
    preds = [pred("a", [{"task": "Speaker"}])]
    res = evaluate_compat(
        golds, preds, resource_lib(), splits=("overall", "single"), n_tools="1", metrics=("f1",)
    )
    assert res.metrics["overall_overall"]["node_micro_recall_no_matching"] == 0.5  # the chain record
    assert res.metrics["single_overall"]["node_micro_recall_no_matching"] == 1.0  # the only single one
    assert res.metrics["overall_1"]["all_samples"] == 1


def test_malformed_temporal_links_drop_the_sample() -> None:
    g = gold("a", [{"task": "book_car", "arguments": []}], links=[])
    rec = one(g, pred("a", [{"task": "book_car", "arguments": []}], links=[{"from": "x"}]), temporal_lib())
    assert rec.error is not None and rec.error.startswith("'source'") and not rec.node_ok


def test_input_and_option_errors() -> None:
    from taskbench.errors import ConfigError, InputError

    g = gold("a", [{"task": "Speaker", "arguments": []}])
    with pytest.raises(ConfigError, match="unknown metric 'rogue'"):
        evaluate_compat([g], [pred("a", [])], resource_lib(), metrics=("rogue",))
    with pytest.raises(ConfigError, match="group mode"):
        evaluate_compat([g], [pred("a", [])], resource_lib(), mode="sum")
    # a prediction without an id matches nothing (evaluate's coverage warnings count it)
    assert evaluate_compat([g], [{"result": {}}], resource_lib()).metrics["overall_overall"]["all_samples"] == 0
    with pytest.raises(InputError, match="gold record #1 has no usable 'task_nodes'"):
        evaluate_compat([{"id": "a", "type": "single"}], [pred("a", [])], resource_lib())
    problems: list = []
    res = evaluate_compat([{"id": "a"}, {"id": ["x"], "task_nodes": []}, g], [pred("a", [])], resource_lib(),
                          problems=problems)
    assert [str(e) for e in problems] == [
        "gold record #1 has no usable 'task_nodes' (gold records need an 'id' (a string) and a 'task_nodes' list)",
        "gold record #2 has no usable 'id' (gold records need an 'id' (a string) and a 'task_nodes' list)",
    ]
    assert res.metrics["overall_overall"]["all_samples"] == 1
    assert expand_compat_metrics("f1,rouge") == ["f1", "rouge"]
    # a gold record without 'type' counts in the overall groups only
    g2 = {k: v for k, v in g.items() if k != "type"}
    res = evaluate_compat([g2], [pred("a", [{"task": "Speaker"}])], resource_lib(), splits="all", n_tools="1")
    assert res.metrics["overall_overall"]["all_samples"] == 1
    assert res.metrics["single_overall"]["all_samples"] == 0
    assert res.metrics["overall_1"]["all_samples"] == 1
