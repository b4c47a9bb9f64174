"""Executable TaskBench domains: every gold graph executes; every perturbation that changes the answer is caught,
and the ones that do not (argument order of a commutative tool, node order, reference style) pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskbench.bundled import path as bundled_path
from taskbench.dataset.layout import read_samples
from taskbench.envs.taskbench_exec import DomainRuntime, compare_executions, make_literal, normalise_literal
from taskbench.envs.taskbench_exec.dailylife import DailyLifeWorld
from taskbench.graph.loaders import load_tool_library
from taskbench.schema import NODE_REF, Sample, TaskArgument, TaskGraph, TaskLink, TaskNode

DOMAINS = ("huggingface", "multimedia", "dailylifeapis")


def _runtime(root: Path, domain: str) -> DomainRuntime:
    return DomainRuntime(load_tool_library(root / "tool_desc.json", None, name=domain))


def _bundled(domain: str) -> tuple[DomainRuntime, list[Sample]]:
    root = bundled_path(domain)
    return _runtime(root, domain), read_samples(root / "data.json")


def _reference(reference_dir: Path, domain: str) -> tuple[DomainRuntime, list[Sample]]:
    root = reference_dir / domain
    return _runtime(root, domain), read_samples(root / "gold_sample.jsonl")


@pytest.fixture
def reference_or_none(request) -> Path | None:
    """The reference data directory, or None when ../shared is absent (bundled data is tested either way)."""
    try:
        return request.getfixturevalue("reference_dir")
    except pytest.skip.Exception:
        return None


def _datasets(reference_dir: Path | None):
    for d in DOMAINS:
        yield ("bundled", d, *_bundled(d))
        if reference_dir is not None:
            yield ("reference", d, *_reference(reference_dir, d))


# ------------------------------------------------------------------------------------------ artifacts


def test_literals_normalise_and_type():
    assert normalise_literal("  'A  cat.' ") == normalise_literal("a cat")
    assert normalise_literal("https://www.Example.com/a.jpg/") == normalise_literal("example.com/a.jpg")
    assert normalise_literal("a cat") != normalise_literal("a dog")
    assert normalise_literal(1.25) == "1.25" and normalise_literal(2) == "2"
    assert make_literal("example.jpg").type == "image"
    assert make_literal("clip.MP4").type == "video"
    assert make_literal("https://example.com/example.jpg").type == "url"
    assert make_literal("Check out https://example.com/drone.mp4 now").type == "text"
    assert make_literal("example.wav").digest == make_literal(" example.wav ").digest


def test_commutative_tool_ignores_argument_order_and_others_do_not():
    rt, _ = _bundled("huggingface")
    a, b = make_literal("first text"), make_literal("second text")
    assert "Sentence Similarity" in rt.commutative
    assert rt.call_resource("Sentence Similarity", [a, b])[0].digest == rt.call_resource("Sentence Similarity", [b, a])[0].digest
    assert rt.call_resource("Question Answering", [a, b])[0].digest != rt.call_resource("Question Answering", [b, a])[0].digest


def test_provenance_records_tool_and_inputs():
    rt, _ = _bundled("multimedia")
    img = rt.call_resource("Text-to-Image", [make_literal("a red car")])[0]
    out = rt.call_resource("Image Colorizer", [img])[0]
    assert out.type == "image" and out.tool == "Image Colorizer" and out.inputs == (img.id,)
    assert out.expr == "Image Colorizer(Text-to-Image('a red car'))"
    assert out.id.startswith("image:") and out.content.endswith(".png")


# ------------------------------------------------------------------------------------------ gold graphs


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_bundled_gold_graph_executes_cleanly(domain):
    rt, samples = _bundled(domain)
    for s in samples:
        run = rt.execute(s, seed=5)
        assert run.notes == [], (s.id, run.notes)  # our own data has no quirks to handle
        assert len(run.nodes) == len(s.task_nodes)
        assert run.final or run.end_state["logs"]  # artifacts, or (daily life) a changed world
        assert compare_executions(run, rt.execute(s, seed=5)).exact


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_reference_gold_graph_executes(reference_dir, domain):
    rt, samples = _reference(reference_dir, domain)
    assert samples
    for s in samples:
        run = rt.execute(s, seed=0)
        assert len(run.nodes) == len(s.task_nodes)
        assert run.final or run.end_state["logs"], s.id
        check = compare_executions(run, rt.execute(s, seed=0))
        assert check.success and check.exact and check.recall == 1.0
        # the canonical form executes to the same artifacts
        assert compare_executions(run, rt.execute(rt.normalise(s), seed=0)).exact, s.id


def _by_id(samples, sid):
    return next(s for s in samples if s.id == sid)


def test_reference_quirks_are_handled_and_reported(reference_dir):
    rt, samples = _reference(reference_dir, "huggingface")
    one_based = _by_id(samples, "31235736")  # <node-1> stands for the first node throughout
    run = rt.execute(one_based)
    assert any("counted from 1" in n for n in run.notes)
    assert {(lk.source, lk.target) for lk in rt.normalise(one_based).task_links} == {
        (lk.source, lk.target) for lk in one_based.task_links}
    named = _by_id(samples, "13708813")  # <output_of_Image_Segmentation>
    assert {(lk.source, lk.target) for lk in rt.normalise(named).task_links} == {
        (lk.source, lk.target) for lk in named.task_links}
    forward = _by_id(samples, "25775436")  # node 0 uses node 1's output
    run = rt.execute(forward)
    assert run.order == [1, 0]
    unknown = _by_id(samples, "21313605")
    assert any("unknown tool" in n for n in rt.execute(unknown).notes)

    rt, samples = _reference(reference_dir, "multimedia")
    numbers = _by_id(samples, "22743517")  # 1.25 as an argument value
    assert rt.execute(numbers).artifacts
    bare = _by_id(samples, "17177733")  # the whole argument list as one string
    assert len(rt.execute(bare).nodes[0].inputs) == 1

    rt, samples = _reference(reference_dir, "dailylifeapis")
    result_ref = rt.execute(_by_id(samples, "22740108"))  # 'search_by_engine_result' as a value
    assert any("read as the output of 'search_by_engine'" in n for n in result_ref.notes)
    bad_params = rt.execute(_by_id(samples, "38563456"))
    assert any("has no parameter 'from_bank'" in n for n in bad_params.notes)


# ------------------------------------------------------------------------------------------ perturbations


def _signature(g: TaskGraph, i: int):
    node = g.task_nodes[i]
    return node.task, json.dumps([a.model_dump() if isinstance(a, TaskArgument) else a for a in node.arguments],
                                 sort_keys=True)


def _has_duplicates(g: TaskGraph) -> bool:
    sigs = [_signature(g, i) for i in range(len(g.task_nodes))]
    return len(set(sigs)) < len(sigs)


def _map_refs(value, fn):
    if isinstance(value, str) and NODE_REF.fullmatch(value):
        return fn(int(NODE_REF.fullmatch(value).group(1)))
    return value


def _rebuild(g: TaskGraph, nodes: list[TaskNode], links=None) -> TaskGraph:
    out = TaskGraph(task_steps=list(g.task_steps), task_nodes=nodes)
    out.task_links = list(links) if links is not None else out.reference_links()
    return out


def _arg_map(node: TaskNode, fn) -> TaskNode:
    args = [TaskArgument(name=a.name, value=fn(a.value)) if isinstance(a, TaskArgument) else fn(a)
            for a in node.arguments]
    return TaskNode(task=node.task, arguments=args)


def drop(g: TaskGraph, k: int, temporal: bool) -> TaskGraph:
    def fix(v):
        return _map_refs(v, lambda j: "<node-999>" if j == k else f"<node-{j - (j > k)}>")
    nodes = [_arg_map(n, fix) for i, n in enumerate(g.task_nodes) if i != k]
    name = g.task_nodes[k].task
    links = [lk for lk in g.task_links if name not in (lk.source, lk.target)] if temporal else None
    return _rebuild(g, nodes, links)


def replace_tool(g: TaskGraph, k: int, rt: DomainRuntime, temporal: bool) -> TaskGraph:
    old = rt.library.get(g.task_nodes[k].task)
    pool = [t for t in rt.library.tools if t.id != old.id and t.id not in {n.task for n in g.task_nodes}]
    same = [t for t in pool if (t.input_types, t.output_types) == (old.input_types, old.output_types)
            and [p.name for p in t.parameters or []] == [p.name for p in old.parameters or []]]
    new = (same or pool)[0]
    nodes = list(g.task_nodes)
    nodes[k] = TaskNode(task=new.id, arguments=list(nodes[k].arguments))
    links = [TaskLink(source=new.id if lk.source == old.id else lk.source,
                      target=new.id if lk.target == old.id else lk.target) for lk in g.task_links]
    return _rebuild(g, nodes, links if temporal else None)


def change_value(g: TaskGraph, k: int, temporal: bool) -> TaskGraph | None:
    node = g.task_nodes[k]
    for pos, a in enumerate(node.arguments):
        value = a.value if isinstance(a, TaskArgument) else a
        if not (isinstance(value, str) and NODE_REF.fullmatch(value)):
            new_value = f"x{value}"
            args = list(node.arguments)
            args[pos] = TaskArgument(name=a.name, value=new_value) if isinstance(a, TaskArgument) else new_value
            nodes = list(g.task_nodes)
            nodes[k] = TaskNode(task=node.task, arguments=args)
            return _rebuild(g, nodes, g.task_links if temporal else None)
    return None


def rewire(g: TaskGraph) -> TaskGraph | None:
    for i, node in enumerate(g.task_nodes):
        for pos, a in enumerate(node.arguments):
            if isinstance(a, str) and NODE_REF.fullmatch(a):
                j = int(NODE_REF.fullmatch(a).group(1))
                others = [c for c in range(i) if c != j]
                if others:
                    args = list(node.arguments)
                    args[pos] = f"<node-{others[0]}>"
                    nodes = list(g.task_nodes)
                    nodes[i] = TaskNode(task=node.task, arguments=args)
                    return _rebuild(g, nodes)
    return None


def swap_args(g: TaskGraph, k: int) -> TaskGraph | None:
    node = g.task_nodes[k]
    if len(node.arguments) < 2:
        return None
    a, b = node.arguments[0], node.arguments[1]
    if normalise_literal(a) == normalise_literal(b):
        return None
    nodes = list(g.task_nodes)
    nodes[k] = TaskNode(task=node.task, arguments=[b, a, *node.arguments[2:]])
    return _rebuild(g, nodes)


def reverse_nodes(g: TaskGraph, temporal: bool) -> TaskGraph:
    n = len(g.task_nodes)
    nodes = [_arg_map(node, lambda v: _map_refs(v, lambda j: f"<node-{n - 1 - j}>")) for node in reversed(g.task_nodes)]
    return _rebuild(g, nodes, g.task_links if temporal else None)


def _caught(rt, gold_run, graph) -> bool:
    return not compare_executions(gold_run, rt.execute(graph)).success


def test_perturbations_that_change_the_answer_are_caught(reference_or_none):
    counts = {"drop": 0, "replace": 0, "value": 0, "rewire": 0, "swap": 0}
    for origin, domain, rt, samples in _datasets(reference_or_none):
        temporal = not rt.resource
        for s in samples:
            g = rt.normalise(s)
            if _has_duplicates(g) or any(rt.library.get(n.task) is None for n in g.task_nodes):
                continue  # an exact duplicate node makes dropping one harmless; unknown tools have no peers
            gold = rt.execute(g)
            for k in range(len(g.task_nodes)):
                assert _caught(rt, gold, drop(g, k, temporal)), (origin, domain, s.id, "drop", k)
                assert _caught(rt, gold, replace_tool(g, k, rt, temporal)), (origin, domain, s.id, "replace", k)
                counts["drop"] += 1
                counts["replace"] += 1
                changed = change_value(g, k, temporal)
                if changed is not None:
                    assert _caught(rt, gold, changed), (origin, domain, s.id, "value", k)
                    counts["value"] += 1
                if not temporal and g.task_nodes[k].task not in rt.commutative:
                    swapped = swap_args(g, k)
                    if swapped is not None:
                        assert _caught(rt, gold, swapped), (origin, domain, s.id, "swap", k)
                        counts["swap"] += 1
            if not temporal:
                rewired = rewire(g)
                if rewired is not None:
                    assert _caught(rt, gold, rewired), (origin, domain, s.id, "rewire")
                    counts["rewire"] += 1
    assert all(v > 0 for v in counts.values()), counts


def test_perturbations_that_keep_the_answer_pass(reference_or_none):
    checked = {"reverse": 0, "commutative": 0, "dict_args": 0}
    for origin, domain, rt, samples in _datasets(reference_or_none):
        temporal = not rt.resource
        for s in samples:
            g = rt.normalise(s)
            gold = rt.execute(s)
            assert compare_executions(gold, rt.execute(reverse_nodes(g, temporal))).exact, (origin, domain, s.id)
            checked["reverse"] += 1
            for k, node in enumerate(g.task_nodes):
                if node.task in rt.commutative:
                    swapped = swap_args(g, k)
                    if swapped is not None:
                        assert compare_executions(gold, rt.execute(swapped)).exact, (origin, domain, s.id)
                        checked["commutative"] += 1
            if not temporal:  # arguments as {"value": ...} objects, as models often write them
                raw = [{"task": n.task, "arguments": [{"value": a} for a in n.arguments]} for n in g.task_nodes]
                assert compare_executions(gold, rt.execute(TaskGraph.model_validate({"task_nodes": raw}))).success
                checked["dict_args"] += 1
    assert all(v > 0 for v in checked.values()), checked


def test_one_based_prediction_is_read_as_intended():
    rt, _ = _bundled("huggingface")
    gold = TaskGraph.model_validate({"task_nodes": [
        {"task": "Automatic Speech Recognition", "arguments": ["example.wav"]},
        {"task": "Summarization", "arguments": ["<node-0>"]}]})
    pred = TaskGraph.model_validate({"task_nodes": [
        {"task": "Automatic Speech Recognition", "arguments": ["example.wav"]},
        {"task": "Summarization", "arguments": ["<node-1>"]}]})
    run = rt.execute(pred)
    assert compare_executions(rt.execute(gold), run).exact
    assert any("counted from 1" in n for n in run.notes)


def test_dangling_reference_and_type_mismatch_are_noted_not_raised():
    rt, _ = _bundled("multimedia")
    g = TaskGraph.model_validate({"task_nodes": [
        {"task": "Image Colorizer", "arguments": ["<node-7>"]},
        {"task": "Image Stitcher", "arguments": ["a sentence, not an image"]},
        {"task": "No Such Tool", "arguments": [3]}]})
    run = rt.execute(g)
    assert len(run.nodes) == 3
    text = "\n".join(run.notes)
    assert "does not name another node" in text and "expects image" in text and "unknown tool" in text
    assert "1 argument(s) given" in text


# ------------------------------------------------------------------------------------------ daily life


def test_daily_life_world_is_seeded_and_stateful():
    a, b = DailyLifeWorld(seed=1), DailyLifeWorld(seed=1)
    assert a.weather("Paris", "2024-05-18") == b.weather("Paris", "2024-05-18")
    assert DailyLifeWorld(seed=2).end_state()["cash"] != a.end_state()["cash"]
    start = a.end_state()["cash"]
    a.apply("pay_for_credit_card", {"credit_card": "Chase Sapphire"})
    a.apply("stock_operation", {"stock": "AAPL", "operation": "buy"})
    state = a.end_state()
    assert state["cash"] < start and state["portfolio"] == {"aapl": 1}
    assert state["logs"]["payments"][0]["credit_card"] == "chase sapphire"
    # order-free logs: the same calls in another order give the same state
    b.apply("stock_operation", {"stock": "AAPL", "operation": "buy"})
    b.apply("pay_for_credit_card", {"credit_card": "chase sapphire"})
    assert b.end_state() == state
    # order matters where it should: install then uninstall differs from the reverse
    c, d = DailyLifeWorld(), DailyLifeWorld()
    for w, ops in ((c, ("install", "uninstall")), (d, ("uninstall", "install"))):
        for op in ops:
            w.apply("software_management", {"software": "Zoom", "instruction": op})
    assert c.end_state()["installed"] != d.end_state()["installed"]


def test_daily_life_dates_compare_by_value():
    rt, _ = _bundled("dailylifeapis")
    iso = TaskGraph.model_validate({"task_nodes": [
        {"task": "book_hotel", "arguments": [{"name": "date", "value": "2024-10-02"}, {"name": "name", "value": "Ritz"}]}]})
    words = TaskGraph.model_validate({"task_nodes": [
        {"task": "book_hotel", "arguments": [{"name": "name", "value": "ritz"}, {"name": "date", "value": "October 2, 2024"}]}]})
    other = TaskGraph.model_validate({"task_nodes": [
        {"task": "book_hotel", "arguments": [{"name": "name", "value": "Ritz"}, {"name": "date", "value": "2024-10-03"}]}]})
    gold = rt.execute(iso)
    assert compare_executions(gold, rt.execute(words)).success
    check = compare_executions(gold, rt.execute(other))
    assert not check.success and check.state_equal is False and check.state_diff
