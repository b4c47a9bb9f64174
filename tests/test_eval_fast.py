"""The fast strict path (raw JSON records, no pydantic models) gives exactly what the model path gives.

Checked on the parity fixtures, on the benchmark's synthetic data (every perturbation kind) and on odd
hand-made records; scores are compared with an independent Counter-based reference scorer; the bootstrap
and the metrics JSON writer are checked against explicit computations.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from taskbench.dataset.layout import read_raw_records, read_samples
from taskbench.errors import InputError
from taskbench.eval.api import dumps_metrics, evaluate, score_strict
from taskbench.eval.runtime import gc_paused
from taskbench.eval.stats import bootstrap_groups, poisson_weights, rng_for
from taskbench.eval.strict import (
    normalise_graph,
    normalise_record,
    output_types,
    parse_strict,
    prepare_gold,
)
from taskbench.eval.taxonomy import CATEGORIES
from taskbench.graph.loaders import load_tool_library
from taskbench.schema import Sample, TaskGraph, Tool, ToolLibrary

ROOT = Path(__file__).resolve().parents[1]
LIB = ToolLibrary(
    tools=[
        Tool(id="A", **{"input-type": ["text"], "output-type": ["image"]}),
        Tool(id="B", **{"input-type": ["image"], "output-type": ["text"]}),
        Tool(id="C", **{"input-type": ["text"]}),
    ],
    dependency="resource",
)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_evaluate", ROOT / "benchmarks" / "bench_evaluate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def model_normal(result, library, dependency):
    """The model path: validate, then normalise (None when the model rejects the record)."""
    try:
        graph = TaskGraph.model_validate(result)
    except ValidationError:
        return None
    return normalise_graph(graph, library, dependency)


def as_tuple(g):
    return g.names, g.links, [[tuple(a) for a in args] for args in g.arguments], g.steps


ODD_ARGUMENTS = [
    "x.jpg", "hello world", "<node-0>", "<node-1>", "<node-9>", "see <node-1> and <node-0>", "<node-01>",
    "<node-١>", "<node- 1>", "a.au.txt", "'q.png'", "", 2, 1.5, True, None, float("nan"), [1, "a.wav"],
    ["<node-0>", "b"], {}, {"value": "v.mp4"}, {"name": "city", "value": "Paris"}, {"name": "n", "value": 3},
    {"name": "r", "value": "<node-0>"}, {"name": 3, "value": "x"}, {"name": "only"}, {"k": "<node-1>"},
    {"k": {"deep": [1, 2]}}, {"name": "x", "value": {"a": [1]}, "extra": 1},
]
ODD_RESULTS = [
    {"task_nodes": []},
    {"task_nodes": [{"task": "A", "arguments": ODD_ARGUMENTS}, {"task": "B", "arguments": ["<node-0>"]}]},
    {"task_nodes": [{"task": "A", "arguments": "<node-1>"}, {"task": "Zeta", "arguments": None}]},
    {"task_nodes": [{"task": "A"}, {"task": "B", "arguments": ["<node-0>"]}], "task_links": None},
    {"task_nodes": [{"task": "A"}], "task_links": [{"source": "A", "target": "B", "extra": 1}]},
    {"task_nodes": [{"task": "A"}], "task_links": [{"source": "A", "target": 3}]},
    {"task_nodes": [{"task": "A"}], "task_links": [["A", "B"]]},
    {"task_nodes": [{"task": "A"}], "task_links": ""},
    {"task_nodes": [{"task": "A"}], "task_links": {}},
    {"task_nodes": [{"task": 3}]},
    {"task_nodes": [{"task": "A", "arguments": {"a": 1}}]},
    {"task_nodes": [{"task": "A", "arguments": 5}]},
    {"task_nodes": ["A"]},
    {"task_nodes": [{"task": "A"}], "task_steps": "one step"},
    {"task_nodes": [{"task": "A"}], "task_steps": None},
    {"task_nodes": [{"task": "A"}], "task_steps": [{"step": "s"}, {"id": 3, "description": "d"}, 4, None, ["x"]]},
    {"task_nodes": [{"task": "A"}], "task_steps": [{"nothing": 1}, {"task": 2}]},
    {"task_nodes": [{"task": "A"}], "task_steps": {"a": 1}},
    {"task_nodes": [{"task": "A"}], "task_steps": 5},
]


@pytest.mark.parametrize("dependency", ["resource", "temporal"])
def test_fast_normaliser_matches_model_on_odd_records(dependency):
    out_types = output_types(LIB)
    for result in ODD_RESULTS:
        fast = normalise_record(result, dependency == "resource", out_types, {})
        model = model_normal(result, LIB, dependency)
        if model is None:
            assert fast is None, result  # the model rejects it: the fast path must not accept it
        elif fast is not None:
            assert as_tuple(fast) == as_tuple(model), result
    # the plain odd shapes stay on the fast path
    assert normalise_record(ODD_RESULTS[1], dependency == "resource", out_types) is not None


def _records_from_files(root: Path):
    gold = read_raw_records(root / "data.json")
    preds = [r for f in sorted((root / "predictions").glob("*.json")) for r in read_raw_records(f)]
    return gold, preds


def _check_records(records, library, dependency, *, must_be_fast):
    out_types = output_types(library)
    for rec in records:
        result = rec.get("result", rec)
        if not isinstance(result, dict) or not isinstance(result.get("task_nodes"), list):
            continue
        fast = normalise_record(result, dependency == "resource", out_types, {})
        model = model_normal(result, library, dependency)
        if model is None:
            assert fast is None
            continue
        if must_be_fast:
            assert fast is not None, rec.get("id")
        if fast is not None:
            assert as_tuple(fast) == as_tuple(model), rec.get("id")


@pytest.mark.parametrize("domain", ["huggingface", "multimedia", "dailylifeapis"])
def test_fast_normaliser_matches_model_on_parity_fixtures(parity_dir, domain):
    root = parity_dir / domain
    library = load_tool_library(root / "tool_desc.json")
    gold, preds = _records_from_files(root)
    _check_records(gold, library, library.dependency, must_be_fast=True)
    _check_records(preds, library, library.dependency, must_be_fast=False)


def test_fast_normaliser_matches_model_on_benchmark_perturbations():
    bench = _bench()
    rng = random.Random(3)
    tools = bench.load_library()
    gold = bench.make_gold(rng, tools, 400)
    preds = [p for g in gold if (p := bench.make_prediction(rng, g, tools)) is not None]
    library = ToolLibrary(tools=[Tool.model_validate(t) for t in tools], dependency="resource")
    for dependency in ("resource", "temporal"):
        _check_records(gold, library, dependency, must_be_fast=True)
        _check_records(preds, library, dependency, must_be_fast=False)


# ------------------------------------------------------------------------ an independent reference scorer


def reference_scores(samples, records, library, dependency):
    """Strict per-sample counts the slow, obvious way: pydantic models, Counters, sets."""
    by_id = {str(r["id"]): r for r in records if "id" in r}
    out = []
    for s in samples:
        parsed = parse_strict(s.id, by_id.get(s.id))
        g = normalise_graph(s, library, dependency)
        p = normalise_graph(parsed.graph, library, dependency)

        def prf(gold, pred):
            tp = sum((Counter(gold) & Counter(pred)).values())
            return tp, len(pred) - tp, len(gold) - tp

        def args(graph, with_value):
            return [(t, a.name, a.value) if with_value else (t, a.name)
                    for t, pairs in zip(graph.names, graph.arguments, strict=True) for a in pairs]

        gl, pl = sorted(set(g.links)), sorted(set(p.links))
        gn, pn = Counter(g.names), Counter(p.names)
        labels = reference_labels(parsed.status, g, p, library)
        tools = {n: (min(gn[n], pn[n]), pn[n] - min(gn[n], pn[n]), gn[n] - min(gn[n], pn[n]))
                 for n in set(gn) | set(pn) if n in library}
        out.append({
            "status": parsed.status, "error": parsed.error, "node": prf(g.names, p.names), "link": prf(gl, pl),
            "arg_name": prf(args(g, False), args(p, False)), "arg_value": prf(args(g, True), args(p, True)),
            "node_set_match": gn == pn, "edge_defined": bool(gl), "edge_set_match": gl == pl,
            "graph_match": gn == pn and gl == pl, "tool_counts": tools,
            "hallucinated": [n for n in p.names if n not in library and n not in gn],
            "steps": (g.steps, p.steps), "labels": labels,
        })
    return out


def reference_labels(status, g, p, library):
    """The error taxonomy labels the obvious way (Counters, k-th occurrence matching)."""
    if status != "ok":
        return ["missing_prediction" if status == "missing" else "parse_failure"]
    gn, pn = Counter(g.names), Counter(p.names)
    shared = set(gn) & set(pn)
    g_links = {lk for lk in g.links if lk[0] in shared and lk[1] in shared}
    p_links = {lk for lk in p.links if lk[0] in shared and lk[1] in shared}

    def occurrences(names):
        seen = Counter()
        out = []
        for n in names:
            out.append((n, seen[n]))
            seen[n] += 1
        return out

    absent = set(gn) - set(pn)
    pred_pos = {occ: i for i, occ in enumerate(occurrences(p.names))}
    wrong_params = False
    for gi, occ in enumerate(occurrences(g.names)):
        pi = pred_pos.get(occ)
        if pi is None:
            continue
        ga = Counter((a.name, a.value) for a in g.arguments[gi] if a.ref not in absent)
        excused = sum(1 for a in g.arguments[gi] if a.ref is not None and a.ref in absent)
        pa = Counter((a.name, a.value) for a in p.arguments[pi])
        wrong_params |= bool(ga - pa) or sum((pa - ga).values()) > excused
    flags = {
        "missing_tool": bool(gn - pn), "extra_tool": bool(pn - gn),
        "hallucinated_tool": any(n not in library and n not in gn for n in p.names),
        "dependency_error": g_links != p_links, "parameter_error": wrong_params,
    }
    return [c for c in CATEGORIES if flags.get(c)]


def _compare_with_reference(gold_records, preds, library):
    samples = [Sample.model_validate(r) for r in gold_records]
    dep = library.dependency
    fast = score_strict(gold_records, preds, library, metrics=["f1", "ed", "link", "argument"])
    model = score_strict(samples, preds, library, metrics=["f1", "ed", "link", "argument"])
    ref = reference_scores(samples, preds, library, dep)
    assert [e.model_dump() for e in fast.errors] == [e.model_dump() for e in model.errors]
    for k in fast.columns:
        assert np.array_equal(fast.columns[k], model.columns[k]), k
    for s, r in zip(fast.scores, ref, strict=True):
        for key in ("status", "error", "node", "link", "arg_name", "arg_value", "node_set_match",
                    "edge_defined", "edge_set_match", "graph_match", "tool_counts", "hallucinated"):
            assert getattr(s, key) == r[key], (s.id, key)
    assert [e.labels for e in fast.errors] == [r["labels"] for r in ref]
    return fast


@pytest.mark.parametrize("domain", ["huggingface", "multimedia", "dailylifeapis"])
def test_strict_scores_match_reference_on_parity_fixtures(parity_dir, domain):
    root = parity_dir / domain
    library = load_tool_library(root / "tool_desc.json")
    gold = read_raw_records(root / "data.json")
    for pred_file in sorted((root / "predictions").glob("*.json")):
        _compare_with_reference(gold, read_raw_records(pred_file), library)


def test_strict_scores_match_reference_on_benchmark_data():
    bench = _bench()
    rng = random.Random(5)
    tools = bench.load_library()
    gold = bench.make_gold(rng, tools, 500)
    preds = [p for g in gold if (p := bench.make_prediction(rng, g, tools)) is not None]
    library = ToolLibrary(tools=[Tool.model_validate(t) for t in tools], dependency="resource")
    scored = _compare_with_reference(gold, preds, library)
    statuses = Counter(s.status for s in scored.scores)
    assert statuses["ok"] and statuses["missing"] and statuses["parse_error"]  # every path was exercised


def test_cli_strict_equals_model_path(tmp_path, capsys):
    """`taskbench evaluate` (raw records, fast path) writes what evaluate() gives on validated Samples."""
    from taskbench.cli.main import main

    bench = _bench()
    data_dir, pred_path = bench.write_dataset(tmp_path / "ds", 300, 11)
    out = tmp_path / "m.json"
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--data", str(data_dir), "-p", str(pred_path), "--bootstrap", "200", "-o", str(out)])
    assert exc.value.code in (0, None)
    capsys.readouterr()
    library = load_tool_library(data_dir / "tool_desc.json", name=data_dir.name)
    expected = evaluate(read_samples(data_dir / "data.json"), read_raw_records(pred_path), library, bootstrap=200)
    assert json.loads(out.read_text()) == json.loads(dumps_metrics(expected.to_json()))


# ------------------------------------------------------------------------------------------ gold checks


def test_gold_records_are_checked_with_file_and_line(tmp_path):
    path = tmp_path / "data.json"
    good = {"id": "1", "type": "single", "task_nodes": [{"task": "A"}], "task_steps": ["s"]}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "id": "2", "task_nodes": [{"task": 3}]}) + "\n")
    with pytest.raises(InputError) as exc:
        prepare_gold(read_raw_records(path), LIB, "resource", path=path)
    assert f"{path}:3" in str(exc.value) and "task" in str(exc.value)
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(InputError, match="duplicate sample id '1'"):
        prepare_gold(read_raw_records(path), LIB, "resource", path=path)
    # fields the evaluator does not score are not read (`taskbench data check` validates them)
    odd = {**good, "sampled_links": "not json", "seed": "x"}
    (item,) = prepare_gold([odd], LIB, "resource")
    assert item.graph.names == ["A"] and item.split == "single"
    # release shapes still work through the model: JSON-string nodes, hub field names, numeric ids
    v1 = {"id": 7, "type": "chain", "tool_nodes": json.dumps([{"task": "A"}, {"task": "B", "arguments": ["<node-0>"]}])}
    (item,) = prepare_gold([v1], LIB, "resource")
    assert (item.id, item.n_tools, item.graph.links) == ("7", 2, [("A", "B")])


# ------------------------------------------------------------------------------------------- bootstrap


def test_poisson_weights_have_poisson_frequencies():
    w = poisson_weights(5000, 40, rng_for(0))
    assert w.dtype == np.float32 and w.shape == (40, 5000)
    freq = np.bincount(w.astype(int).ravel(), minlength=6)[:6] / w.size
    pmf = [math.exp(-1) / math.factorial(k) for k in range(6)]
    assert np.allclose(freq, pmf, atol=3e-3)
    assert np.array_equal(w, poisson_weights(5000, 40, rng_for(0)))  # seeded


def test_bootstrap_groups_equals_explicit_weighting():
    rng = np.random.default_rng(1)
    n = 300
    cols = {"n": np.ones(n), "x": (rng.random(n) < 0.6).astype(float), "r": rng.random(n),
            "t": rng.integers(0, 3, (n, 4)).astype(float)}
    groups = {"all": np.ones(n, bool), "even": np.arange(n) % 2 == 0, "small": np.arange(n) < 7,
              "none": np.zeros(n, bool)}

    def stat(s):
        return {"mean_x": s["x"] / s["n"], "mean_r": s["r"] / s["n"], "t0": s["t"][..., 0] / s["n"],
                "per_tool": s["t"]}  # a vector statistic: not a CI

    got = bootstrap_groups(cols, groups, stat, n_boot=250, seed=4, key="k")
    # the same draws, explicitly: one weight matrix for all groups, drawn for the samples in input order (so a
    # group's CI does not depend on the other groups)
    w = poisson_weights(n, 250, rng_for(4, "k")).astype(float)
    for g in ("all", "even", "small"):
        m = groups[g]
        sums = {k: w[:, m] @ v[m] for k, v in cols.items()}
        for metric, values in stat(sums).items():
            if values.ndim != 1:
                assert metric not in got[g]
                continue
            finite = values[np.isfinite(values)]
            lo, hi = np.percentile(finite, [2.5, 97.5])
            assert got[g][metric] == pytest.approx((lo, hi), rel=1e-5, abs=1e-6), (g, metric)
    assert got["none"] == {}
    point = cols["x"][groups["all"]].mean()
    assert got["all"]["mean_x"][0] < point < got["all"]["mean_x"][1]


def test_bootstrap_of_strict_metrics_covers_point_estimates():
    bench = _bench()
    rng = random.Random(2)
    tools = bench.load_library()
    gold = bench.make_gold(rng, tools, 600)
    preds = [p for g in gold if (p := bench.make_prediction(rng, g, tools)) is not None]
    library = ToolLibrary(tools=[Tool.model_validate(t) for t in tools], dependency="resource")
    res = evaluate(gold, preds, library, bootstrap=400, seed=3, metrics=["f1", "ed", "link", "argument"])
    for key, group in res.strict.groups.items():
        for metric, value in group.metrics.items():
            ci = group.ci.get(metric)
            if value is None or ci is None or group.n_samples < 30:
                continue
            assert ci[0] - 1e-9 <= value <= ci[1] + 1e-9, (key, metric)
    overall = res.strict.groups["overall_overall"]
    assert set(overall.ci) == set(overall.metrics)  # every metric of the group has a CI
    again = evaluate(gold, preds, library, bootstrap=400, seed=3, metrics=["f1", "ed", "link", "argument"])
    assert again.strict.groups["overall_3"].ci == res.strict.groups["overall_3"].ci


# ---------------------------------------------------------------------------------------- output, runtime


def test_dumps_metrics_round_trips_and_puts_errors_on_lines():
    bench = _bench()
    rng = random.Random(9)
    tools = bench.load_library()
    gold = bench.make_gold(rng, tools, 40)
    preds = [p for g in gold if (p := bench.make_prediction(rng, g, tools)) is not None]
    library = ToolLibrary(tools=[Tool.model_validate(t) for t in tools], dependency="resource")
    for mode in ("strict", "both", "compat"):
        doc = evaluate(gold, preds, library, mode=mode, bootstrap=50).to_json()
        text = dumps_metrics(doc)
        assert json.loads(text) == json.loads(json.dumps(doc))
        if mode != "compat":
            lines = text.splitlines()
            first = next(i for i, line in enumerate(lines) if line.strip().startswith('"errors": ['))
            assert all(json.loads(lines[first + 1 + k].strip().rstrip(","))["id"] == gold[k]["id"]
                       for k in range(len(gold)))
        else:
            assert text == json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def test_gc_paused_restores_and_nests():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
