"""Real data as released: every real gold file scores itself perfectly, and no shape of a released record
stops a whole run (property tests over mutated real records).

The records are the released TaskBench v1 gold samples (../shared/reference/taskbench/*/gold_sample.jsonl),
the parity fixtures' gold (../shared/parity/*/data.json) and the bundled demo datasets. Mutations are those
real releases show or could show: link endpoints given as node indices (``{"source": 0, "target": 1}``) or
``"<node-j>"``, JSON strings where lists are expected, bare-string argument lists, numbers as values, fields
missing or of another type, ids as integers.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskbench import bundled
from taskbench.dataset import load_dataset, read_raw_records
from taskbench.errors import InputError
from taskbench.eval.api import evaluate
from taskbench.graph.loaders import load_tool_library

DOMAINS = ("huggingface", "multimedia", "dailylifeapis")
PROPERTY = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def gold_files(shared: Path | None) -> list[tuple[str, Path, Path]]:
    """(label, gold file, tool library) for every real gold file at hand."""
    out = [(f"bundled/{d}", bundled.path(d) / "data.json", bundled.path(d) / "tool_desc.json") for d in DOMAINS]
    if shared is not None:
        for d in DOMAINS:
            ref = shared / "reference" / "taskbench" / d
            if (ref / "gold_sample.jsonl").is_file():
                out.append((f"reference/{d}", ref / "gold_sample.jsonl", ref / "tool_desc.json"))
            par = shared / "parity" / d
            if (par / "data.json").is_file():
                out.append((f"parity/{d}", par / "data.json", par / "tool_desc.json"))
    return out


def as_prediction(rec: dict[str, Any]) -> dict[str, Any]:
    """A gold record as its own prediction (the reference predictions format), fields as stored."""
    fields = {"task_steps": "tool_steps", "task_nodes": "tool_nodes", "task_links": "tool_links"}
    return {"id": rec["id"], "result": {k: rec.get(k, rec.get(alt)) for k, alt in fields.items()}}


def index_links(rec: dict[str, Any], *, form: str = "int") -> dict[str, Any]:
    """The record with its task_links endpoints written as node indices, as some v1 records do."""
    rec = copy.deepcopy(rec)
    nodes = rec["task_nodes"] if isinstance(rec["task_nodes"], list) else json.loads(rec["task_nodes"])
    names = [n["task"] for n in nodes]
    links = rec.get("task_links") or []
    if isinstance(links, str):
        links = json.loads(links)

    def ref(name: str) -> Any:
        return names.index(name) if form == "int" else f"<node-{names.index(name)}>"

    rec["task_links"] = [{"source": ref(lk["source"]), "target": ref(lk["target"])} for lk in links]
    return rec


def overall(result: Any) -> dict[str, Any]:
    return result.strict.groups["overall_overall"].metrics


@pytest.fixture(scope="module")
def real(request: pytest.FixtureRequest) -> list[tuple[str, Path, Path]]:
    from conftest import SHARED

    return gold_files(SHARED if SHARED.is_dir() else None)


def test_every_real_gold_file_scores_itself_perfectly(real) -> None:
    assert len(real) >= 3
    for label, path, tools in real:
        library = load_tool_library(tools)
        gold = read_raw_records(path)
        preds = [as_prediction(r) for r in gold]
        res = evaluate(gold, preds, library, mode="both", bootstrap=0)
        m, c = overall(res), res.compat["overall_overall"]
        assert res.warnings == [], (label, res.warnings)
        assert m["node_micro_f1"] == 1.0 and m["graph_accuracy"] == 1.0, label
        assert m["link_f1"] in (1.0, None), label  # None: a file without any link (none here has that)
        assert m["link_f1"] == 1.0, label
        assert c["node_micro_f1_no_matching"] == 1.0 and c["link_binary_f1"] == 1.0, label
        assert c["node_supports"] == len(gold), label


def test_gold_with_index_links_scores_like_gold_with_names(real) -> None:
    """v1 records that give link endpoints as node indices load, and score the same as with tool names."""
    for label, path, tools in real:
        library = load_tool_library(tools)
        gold = read_raw_records(path)
        for form in ("int", "node"):
            indexed = [index_links(r, form=form) for r in gold]
            named = evaluate(gold, [as_prediction(r) for r in gold], library, bootstrap=0)
            for preds in ([as_prediction(r) for r in indexed], [as_prediction(r) for r in gold]):
                res = evaluate(indexed, preds, library, bootstrap=0)
                assert res.warnings == [] and res.strict.n_gold == len(gold), (label, form)
                assert overall(res) == overall(named), (label, form)


def test_a_dataset_with_index_links_loads_predicts_and_checks(tmp_path: Path, real, capsys) -> None:
    from taskbench.cli.main import main

    for label, path, tools in real:
        root = tmp_path / label.replace("/", "_")
        root.mkdir()
        shutil.copy(tools, root / "tool_desc.json")
        rows = [index_links(r) for r in read_raw_records(path)]
        (root / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        ds = load_dataset(root)
        assert ds.problems == [] and len(ds.samples) == len(rows), label
        with pytest.raises(SystemExit) as exc:
            main(["data", "check", str(root), "--show", "0"])
        assert exc.value.code in (0, None), capsys.readouterr().err


# ------------------------------------------------------------------------------- mutated real records


REAL_SHAPES: list[Any] = [None, "", "  ", 0, 7, -1, 2.5, True, [], {}, "text", ["a", "b"], {"task": "x"}, [[]],
                          [{"name": "n", "value": 3}], "<node-0>", "<node-9>", [1, 2, 3], {"source": 0}]


@st.composite
def mutated(draw: st.DrawFn, records: list[dict[str, Any]]) -> dict[str, Any]:
    rec = copy.deepcopy(draw(st.sampled_from(records)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["index_links", "json_string", "field", "drop", "node", "bare_args", "int_id"]))
        nodes = rec.get("task_nodes") if isinstance(rec.get("task_nodes"), list) else []
        if kind == "index_links" and isinstance(rec.get("task_links"), list):
            n = len(nodes)
            rec["task_links"] = [{"source": draw(st.integers(-1, n)), "target": draw(st.integers(0, max(n, 1)))}
                                 for _ in rec["task_links"] or [0]]
        elif kind == "json_string":
            key = draw(st.sampled_from(["task_nodes", "task_links", "sampled_nodes", "sampled_links"]))
            if key in rec and not isinstance(rec[key], str):
                rec[key] = json.dumps(rec[key])
        elif kind == "field":
            rec[draw(st.sampled_from(sorted(rec) + ["user_request", "instruction"]))] = draw(st.sampled_from(REAL_SHAPES))
        elif kind == "drop" and rec:
            rec.pop(draw(st.sampled_from(sorted(rec))))
        elif kind == "node" and nodes and isinstance(nodes[0], dict):
            nodes[0][draw(st.sampled_from(["task", "arguments"]))] = draw(st.sampled_from(REAL_SHAPES))
        elif kind == "bare_args" and nodes and isinstance(nodes[-1], dict):
            args = nodes[-1].get("arguments")
            nodes[-1]["arguments"] = args[0] if isinstance(args, list) and args else "a bare string"
        elif kind == "int_id" and isinstance(rec.get("id"), str) and rec["id"].isdigit():
            rec["id"] = int(rec["id"])
    return rec


def _load_records() -> dict[str, list[dict[str, Any]]]:
    from conftest import SHARED

    return {label: read_raw_records(path) for label, path, _ in gold_files(SHARED if SHARED.is_dir() else None)}


RECORDS = _load_records()
ALL = [r for rows in RECORDS.values() for r in rows]


@PROPERTY
@given(st.lists(st.one_of(mutated(ALL), st.sampled_from(ALL)), min_size=1, max_size=8), st.sampled_from(DOMAINS))
def test_no_released_shape_stops_a_whole_run(tmp_path_factory, rows, domain) -> None:
    """Every record either loads or is reported with file:line; scoring (strict and compat) always finishes,
    counting exactly the records it could use."""
    root = tmp_path_factory.mktemp("mut")
    shutil.copy(bundled.path(domain) / "tool_desc.json", root / "tool_desc.json")
    (root / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = load_dataset(root)
    assert len(ds.samples) + len(ds.problems) == len(rows)
    assert all(p.path == str(root / "data.json") and 1 <= (p.line or 0) <= len(rows) for p in ds.problems)
    gold = read_raw_records(root / "data.json")
    preds = [{"id": s.id, "result": s.graph.model_dump(mode="json")} for s in ds.samples]
    try:
        res = evaluate(gold, preds, ds.library, mode="both", bootstrap=10, gold_problems=[])
    except InputError as err:  # only when nothing at all can be scored: one clean error, not a score of 0
        assert ds.samples == [] and str(err).startswith("none of the gold records can be scored"), str(err)
        return
    assert res.strict is not None and res.compat is not None
    assert res.strict.n_gold + len(res.strict.unusable_gold) == len(rows)
    scored = {e.id for e in res.strict.errors}
    assert {s.id for s in ds.samples} <= scored  # scoring reads fewer fields than a Sample: it may score more
    if ds.samples:  # each loaded sample scored against itself is perfect
        own = evaluate(gold, preds, ds.library, ids=[s.id for s in ds.samples], bootstrap=0)
        assert own.strict.n_gold == len(ds.samples)
        assert all("gold record(s) cannot be scored" in w for w in own.warnings)  # e.g. a repeated id
        assert overall(own)["node_micro_f1"] in (1.0, None) and overall(own)["link_f1"] in (1.0, None)
        assert overall(own)["graph_accuracy"] == 1.0
