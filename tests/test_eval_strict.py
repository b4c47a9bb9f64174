"""Strict scoring on hand-computed cases: every gold id counts, failures are counted, not dropped."""

from __future__ import annotations

import math

import pytest

from taskbench.errors import ConfigError
from taskbench.eval.api import aggregate_strict, evaluate, score_strict
from taskbench.eval.strict import content_type, normalise_graph, parse_strict, score_sample, split_groups
from taskbench.schema import Sample, TaskGraph, Tool, ToolLibrary

LIB = ToolLibrary(
    tools=[
        Tool(id="A", **{"input-type": ["text"], "output-type": ["image"]}),
        Tool(id="B", **{"input-type": ["image"], "output-type": ["text"]}),
        Tool(id="C", **{"input-type": ["text"], "output-type": ["audio"]}),
    ],
    dependency="resource",
)


def node(task, *args):
    return {"task": task, "arguments": list(args)}


def sample(sid, type_, nodes, links=(), steps=None):
    return Sample.model_validate(
        {
            "id": sid,
            "type": type_,
            "task_steps": steps or [f"step {i}" for i in range(len(nodes))],
            "task_nodes": nodes,
            "task_links": [{"source": s, "target": t} for s, t in links],
        }
    )


def pred(sid, nodes, links=(), steps=None):
    return {
        "id": sid,
        "result": {
            "task_steps": steps or [f"step {i}" for i in range(len(nodes))],
            "task_nodes": nodes,
            "task_links": [{"source": s, "target": t} for s, t in links],
        },
    }


GOLD = [
    sample("s1", "single", [node("A", "x.jpg")]),
    sample("s2", "chain", [node("A", "x.jpg"), node("B", "<node-0>")], links=[("A", "B")]),
    sample("s3", "single", [node("C", "hello")]),
]
PREDS = [
    pred("s1", [node("A", "x.jpg")]),
    pred("s2", [node("A", "x.jpg"), node("B", "y.jpg")]),  # right tools, link lost, one wrong value
    # s3 missing
    pred("zz", [node("A", "q")]),  # an id that is not in gold
]


def test_parse_strict_statuses():
    assert parse_strict("1", None).status == "missing"
    assert parse_strict("1", {"id": "1"}).status == "parse_error"
    assert parse_strict("1", {"id": "1", "result": "text"}).status == "parse_error"
    assert parse_strict("1", {"id": "1", "result": {"task_steps": []}}).status == "parse_error"
    bad = parse_strict("1", {"id": "1", "result": {"task_nodes": [{"task": 3}]}})
    assert bad.status == "parse_error" and "task" in bad.error and bad.graph.task_nodes == []
    ok = parse_strict("1", {"id": "1", "result": {"task_nodes": [node("A")]}, "extra": 1})
    assert ok.status == "ok" and ok.graph.tool_names == ["A"]


def test_content_type_and_resource_arguments():
    assert [content_type(t) for t in ("a.png", "b.wav", "c.mp4", "hello")] == ["image", "audio", "video", "text"]
    g = TaskGraph.model_validate(
        {"task_nodes": [node("A", "x.jpg"), node("B", "<node-0>", "<node-1>", "<node-7>", {"k": "v.wav"})]}
    )
    ng = normalise_graph(g, LIB, "resource")
    assert ng.links == [("A", "B")]  # self and out-of-range references give no link
    pairs = [(a.name, a.value) for a in ng.arguments[1]]
    assert pairs == [("image", "A"), ("text", "<node-7>"), ("audio", "v.wav")]


def test_temporal_vs_resource_links():
    g = TaskGraph.model_validate(
        {"task_nodes": [node("A", "x"), node("B", "<node-0>")], "task_links": [{"source": "B", "target": "A"}]}
    )
    assert normalise_graph(g, LIB, "resource").links == [("A", "B")]
    assert normalise_graph(g, LIB, "temporal").links == [("B", "A")]
    temporal = normalise_graph(
        TaskGraph.model_validate({"task_nodes": [node("A", {"name": "city", "value": "Paris"}, {"when": 3})]}),
        LIB,
        "temporal",
    )
    assert [(a.name, a.value) for a in temporal.arguments[0]] == [("city", "Paris"), ("when", "3")]


def test_hallucinated_tool_is_a_false_positive():
    gold = sample("h", "single", [node("A", "x.jpg")])
    s = score_sample(gold, parse_strict("h", pred("h", [node("A", "x.jpg"), node("Zeta", "x.jpg")])), LIB, "resource")
    assert s.node == (1, 1, 0)
    assert s.hallucinated == ["Zeta"]
    assert "Zeta" not in s.tool_counts and s.tool_counts["A"] == (1, 0, 0)
    assert not s.node_set_match and not s.graph_match
    assert s.ned == pytest.approx(1 - 2 * 1 / 3)  # indel: 1 insertion over len 1 + 2


def test_set_and_graph_accuracy_per_sample():
    scored = score_strict(GOLD, PREDS, LIB)
    s1, s2, s3 = scored.scores
    assert (s1.node_set_match, s1.edge_defined, s1.graph_match) == (True, False, True)
    assert (s2.node_set_match, s2.edge_defined, s2.edge_set_match, s2.graph_match) == (True, True, False, False)
    assert s3.status == "missing" and s3.node == (0, 0, 1) and s3.ned == 1.0
    assert scored.unmatched_ids == ["zz"]


def test_group_metrics_hand_computed():
    scored = score_strict(GOLD, PREDS, LIB, metrics=["f1", "ed", "link", "argument"])
    res = aggregate_strict(
        scored, dependency="resource", splits=["overall", "single", "chain"], n_tools=["overall", "2"],
        metrics=["f1", "ed", "link", "argument"], bootstrap=0,
    )
    m = res.groups["overall_overall"].metrics
    assert res.groups["overall_overall"].n_samples == 3  # the missing prediction counts
    assert m["node_micro_precision"] == pytest.approx(1.0)
    assert m["node_micro_recall"] == pytest.approx(3 / 4)
    assert m["node_micro_f1"] == pytest.approx(6 / 7)
    assert m["node_macro_f1"] == pytest.approx(2 / 3)  # A: 1, B: 1, C: 0
    assert m["link_f1"] == pytest.approx(0.0)
    assert m["argument_name_f1"] == pytest.approx(6 / 7)  # tp 3, fn 1
    assert m["argument_value_f1"] == pytest.approx(4 / 7)  # tp 2, fp 1, fn 2
    assert m["edit_distance"] == pytest.approx(1 / 3)
    assert m["node_set_accuracy"] == pytest.approx(2 / 3)
    assert m["edge_set_accuracy"] == pytest.approx(0.0)
    assert m["graph_accuracy"] == pytest.approx(1 / 3)
    assert m["missing_rate"] == pytest.approx(1 / 3) and m["parse_failure_rate"] == 0.0
    single = res.groups["single_overall"].metrics
    assert single["link_f1"] is None and single["edge_set_accuracy"] is None  # undefined, not 0 or 1
    assert res.groups["chain_overall"].n_samples == 1 and res.groups["overall_2"].n_samples == 1
    assert res.chain_edit_distance == pytest.approx(0.0)
    assert res.groups["overall_overall"].per_tool["C"] == {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 1}
    assert "step_rougeL" not in m  # not asked for


def test_empty_prediction_and_parse_failure_score_zero():
    gold = [sample("a", "single", [node("A", "x.jpg")]), sample("b", "single", [node("B", "y.jpg")])]
    preds = [pred("a", []), {"id": "b", "result": None, "error": "not JSON"}]
    res = evaluate(gold, preds, LIB, bootstrap=0, splits=["overall"], n_tools=["overall"])
    m = res.strict.groups["overall_overall"].metrics
    assert m["node_micro_f1"] == 0.0 and m["parse_failure_rate"] == 0.5
    assert m["step_rougeL"] == 0.0  # empty steps against gold steps
    assert res.strict.errors[1].detail == "not JSON"


def test_rouge_per_sample_in_strict():
    gold = [sample("a", "single", [node("A", "x.jpg")], steps=["classify the image"])]
    res = evaluate(gold, [pred("a", [node("A", "x.jpg")], steps=["classify the image"])], LIB, bootstrap=0,
                   splits=["overall"], n_tools=["overall"])
    assert res.strict.groups["overall_overall"].metrics["step_rouge1"] == pytest.approx(1.0)


def test_bootstrap_ci_contains_point_and_is_seeded():
    gold = [sample(str(i), "single", [node("A", "x.jpg")]) for i in range(40)]
    preds = [pred(str(i), [node("A" if i % 3 else "B", "x.jpg")]) for i in range(40)]
    a = evaluate(gold, preds, LIB, bootstrap=300, seed=7, splits=["overall"], n_tools=["overall"])
    b = evaluate(gold, preds, LIB, bootstrap=300, seed=7, splits=["overall"], n_tools=["overall"])
    c = evaluate(gold, preds, LIB, bootstrap=300, seed=8, splits=["overall"], n_tools=["overall"])
    ga, gb, gc = (r.strict.groups["overall_overall"] for r in (a, b, c))
    assert ga.ci == gb.ci and ga.ci != gc.ci
    for key in ("node_micro_f1", "graph_accuracy", "argument_value_f1", "edit_distance"):
        lo, hi = ga.ci[key]
        assert lo <= ga.metrics[key] <= hi and lo < hi
    assert ga.ci["link_f1"] is None  # undefined in every replicate (no links at all)


def test_split_groups_modes():
    assert split_groups(["overall", "chain"], ["overall", "2"], "add") == [
        ("overall", "overall"), ("chain", "overall"), ("overall", "2")
    ]
    assert split_groups(["chain"], ["overall", "2"], "mul") == [("chain", "overall"), ("chain", "2")]
    with pytest.raises(ConfigError, match="unknown group mode 'sum'"):
        split_groups(["overall"], ["overall"], "sum")


def test_to_json_layouts():
    res = evaluate(GOLD, PREDS, LIB, bootstrap=0, splits=["overall"], n_tools=["overall"])
    doc = res.to_json()
    assert doc["mode"] == "strict" and doc["n_gold"] == 3
    assert doc["groups"]["overall_overall"]["metrics"]["node_micro_f1"] == pytest.approx(6 / 7)
    assert doc["taxonomy"]["counts"]["missing_prediction"] == 1
    assert not any(isinstance(v, float) and math.isnan(v) for v in doc["groups"]["overall_overall"]["metrics"].values())


def test_failed_calls_are_their_own_error_class():
    """A call that failed for good (``"failed": true``, a refused connection, say) is not a parse failure: it
    has its own rate and taxonomy label, so a run whose every connection was refused does not read as a model
    that could not write JSON."""
    gold = [sample("a", "single", [node("A", "x.jpg")]), sample("b", "single", [node("B", "y.jpg")]),
            sample("c", "single", [node("A", "z.jpg")])]
    refused = "openai-compatible/m failed after 6 attempts in 1.0 s; last error: connection error (ECONNREFUSED)"
    preds = [{"id": "a", "error": refused, "failed": True}, {"id": "b", "result": None, "error": "not JSON"},
             pred("c", [node("A", "z.jpg")])]
    res = evaluate(gold, preds, LIB, bootstrap=0, splits=["overall"], n_tools=["overall"])
    m = res.strict.groups["overall_overall"].metrics
    assert m["call_failure_rate"] == pytest.approx(1 / 3)
    assert m["parse_failure_rate"] == pytest.approx(1 / 3)
    assert m["node_micro_f1"] == pytest.approx(0.5)  # still scored as an empty graph: tp 1, fn 2
    labels = {e.id: e.labels for e in res.strict.errors}
    assert labels["a"] == ["call_failure"] and labels["b"] == ["parse_failure"]
    assert res.strict.errors[0].detail == refused
    from taskbench.report.tables import strict_table

    heads = [c.header for c in strict_table(res.strict.groups).columns]
    assert "call fail" in heads and "parse fail" in heads
    clean = evaluate(gold, preds[1:], LIB, bootstrap=0, splits=["overall"], n_tools=["overall"])
    assert "call fail" not in [c.header for c in strict_table(clean.strict.groups).columns]  # only when it happened
