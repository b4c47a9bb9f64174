"""Bad input never ends in a traceback: one regression test per root cause found by fuzzing (issue 9).

Each test feeds the hostile shape through the real code path a user hits (the CLI in-process, or the library
function the CLI calls) and checks the outcome a user should see: a clean one-line error with exit code 2, or
the input loaded with the bad part reported (file:line) and the rest used.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

from taskbench import bundled
from taskbench.cli.main import main
from taskbench.dataset import JsonlAppender, iter_jsonl, load_dataset, read_json, write_json, write_jsonl
from taskbench.errors import ConfigError, InputError

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000  # more digits than int() converts (4,300)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else 0
    return code, out.out, out.err


def one_line_error(code: int, err: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("taskbench: error: "), err


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    """A copy of the bundled huggingface dataset (30 samples)."""
    dest = tmp_path / "ds"
    shutil.copytree(bundled.path("huggingface"), dest)
    return dest


def append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")


def gold_lines(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "data.json").read_text(encoding="utf-8").splitlines() if line]


def self_predictions(root: Path, out: Path) -> Path:
    write_jsonl(out, [{"id": r["id"], "result": {k: r[k] for k in ("task_steps", "task_nodes", "task_links")}}
                      for r in gold_lines(root)])
    return out


# ----------------------------------------------------------------------------------- deep nesting (JSONL)


def test_deeply_nested_jsonl_line_is_one_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "1"}\n' + DEEP + "\n")
    with pytest.raises(InputError) as info:
        list(iter_jsonl(path))
    assert (info.value.path, info.value.line) == (str(path), 2) and "nested too deeply" in str(info.value)
    errors: list[InputError] = []
    assert list(iter_jsonl(path, errors=errors)) == [(1, {"id": "1"})] and errors[0].line == 2


def test_deep_line_in_gold_predictions_or_requests_does_not_stop_the_command(ds: Path, tmp_path, capsys) -> None:
    preds = self_predictions(ds, tmp_path / "p.jsonl")
    append(ds / "data.json", DEEP)
    append(preds, DEEP)
    append(ds / "user_requests.json", '{"id": "x", "user_request": ' + DEEP + "}")
    code, out, err = run(capsys, "data", "check", str(ds))
    assert code == 0 and "30 samples" in out and "2 unusable" in out and "nested too deeply" in out
    code, out, err = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), "--bootstrap", "0")
    assert code == 0 and "Traceback" not in err and "Strict metrics" in out
    assert f"{preds}:31: JSON nested too deeply" in err and f"{ds / 'data.json'}:31: JSON nested too deeply" in err
    loaded = load_dataset(ds)  # what predict reads: every usable sample, the deep lines reported
    assert len(loaded.samples) == 30
    assert sorted((Path(p.path).name, p.line) for p in loaded.problems) == [("data.json", 31), ("user_requests.json", 31)]


# --------------------------------------------------------------------------- giant integers, <node-N>


def test_integer_over_4300_digits_in_jsonl_and_in_whole_documents(ds: Path, tmp_path, capsys) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": ' + HUGE + "}\n")
    with pytest.raises(InputError, match="an integer with more than 4300 digits") as info:
        list(iter_jsonl(path))
    assert info.value.line == 1
    doc = tmp_path / "doc.json"
    doc.write_text('{"a": ' + HUGE + "}")
    with pytest.raises(InputError, match="more than 4300 digits"):
        read_json(doc)
    (ds / "graph_desc.json").write_text('{"nodes": [], "links": [' + HUGE + "]}")
    code, out, _ = run(capsys, "data", "check", str(ds))
    assert code == 0 and f"{ds / 'graph_desc.json'}: invalid JSON: an integer with more than 4300 digits" in out
    code, _, err = run(capsys, "graph", "stats", str(ds / "graph_desc.json"))
    one_line_error(code, err)


def test_node_reference_with_a_giant_index_is_out_of_range_not_a_crash(ds: Path, tmp_path, capsys) -> None:
    from taskbench.schema import TaskNode

    assert TaskNode(task="A", arguments=[f"<node-{HUGE}>"]).references() == [sys.maxsize]
    rows = gold_lines(ds)
    chain = next(r for r in rows if r["type"] == "chain")
    chain["task_nodes"][1]["arguments"] = [f"<node-{HUGE}>"]
    (ds / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = self_predictions(ds, tmp_path / "p.jsonl")
    for mode in ("--strict", "--compat"):
        code, out, err = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), mode, "--bootstrap", "0")
        assert code == 0 and "Traceback" not in err, err
    code, out, _ = run(capsys, "data", "check", str(ds), "--show", "100")
    assert code == 0 and f"<node-{HUGE[:12]}...> but there are" in out


# ------------------------------------------------------------------------- whole documents, alignment ids


def test_data_check_never_reads_alignment_ids(ds: Path, capsys) -> None:
    (ds / "alignment_ids.json").write_text(DEEP)
    code, out, err = run(capsys, "data", "check", str(ds))
    assert code == 0 and err == "" and "alignment" not in out


def test_broken_alignment_ids_is_one_error_when_asked_for(ds: Path, tmp_path, capsys) -> None:
    preds = self_predictions(ds, tmp_path / "p.jsonl")
    for text in (DEEP, '{"node_alignment_id": {"single": ' + HUGE + "}}", "[1, 2]"):
        (ds / "alignment_ids.json").write_text(text)
        code, _, err = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), "--alignment", "node")
        one_line_error(code, err)
        assert str(ds / "alignment_ids.json") in err
    (ds / "alignment_ids.json").write_text(json.dumps({"node_alignment_id": {"single": ["a"]}}))
    code, _, err = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), "--alignment", "nod")
    one_line_error(code, err)
    assert "did you mean 'node'?" in err


def test_deep_graph_document_is_one_error(tmp_path: Path, capsys) -> None:
    path = tmp_path / "graph_desc.json"
    path.write_text('{"nodes": ' + DEEP + ', "links": []}')
    for cmd in (("graph", "stats", str(path)), ("graph", "build", str(path)), ("sample", str(path), "--n", "1")):
        code, _, err = run(capsys, *cmd)
        one_line_error(code, err)


# ------------------------------------------------------------------------ sampled_nodes as nested text


def test_sampled_nodes_as_a_deeply_nested_json_string_is_an_unusable_record(ds: Path, tmp_path, capsys) -> None:
    rows = gold_lines(ds)
    rows[3]["sampled_nodes"] = DEEP
    rows[4]["sampled_links"] = "[" + HUGE + "]"
    (ds / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_dataset(ds)
    assert len(loaded.samples) == 28
    messages = sorted(str(p) for p in loaded.problems)
    assert messages[0].startswith(f"{ds / 'data.json'}:4: sample {rows[3]['id']!r}: ")
    assert "nested too deeply" in messages[0] and "4300" in messages[1]
    preds = self_predictions(ds, tmp_path / "p.jsonl")
    code, _, err = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), "--bootstrap", "0")
    assert code == 0 and "Traceback" not in err  # strict scoring does not read sampled_nodes


# --------------------------------------------------------------------------------- lone surrogates


def test_lone_surrogates_are_written_as_json_escapes(tmp_path: Path, capsys) -> None:
    tools = {"nodes": [{"id": "Cut \ud800", "desc": "d", "input-type": ["text"], "output-type": ["text"]},
                       {"id": "Paste", "desc": "d", "input-type": ["text"], "output-type": ["image"]}]}
    src = tmp_path / "tool_desc.json"
    src.write_text(json.dumps(tools))  # ensure_ascii: the file holds the escape "\ud800"
    out = tmp_path / "graph_desc.json"
    code, _, err = run(capsys, "graph", "build", str(src), "-o", str(out))
    assert code == 0, err
    assert "\\ud800" in out.read_text(encoding="utf-8") and read_json(out)["nodes"][0]["id"] == "Cut \ud800"
    code, stdout, err = run(capsys, "graph", "build", str(src))
    assert code == 0 and json.loads(stdout.replace("\\\\ud800", "\\ud800"))["links"][0]["source"] == "Cut \ud800"
    write_json(tmp_path / "a.json", {"k": "\udfff"})
    write_jsonl(tmp_path / "b.jsonl", [{"k": "\ud800x"}])
    with JsonlAppender(tmp_path / "c.jsonl") as app:
        app.write({"id": "\ud800"})
    assert read_json(tmp_path / "a.json") == {"k": "\udfff"}
    assert [v for _, v in iter_jsonl(tmp_path / "b.jsonl")] == [{"k": "\ud800x"}]
    assert [v for _, v in iter_jsonl(tmp_path / "c.jsonl")] == [{"id": "\ud800"}]


def test_lone_surrogate_in_sample_ids_evaluate_and_check(ds: Path, tmp_path, capsys) -> None:
    rows = gold_lines(ds)
    rows[0]["id"] = "id-\ud800"
    (ds / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = self_predictions(ds, tmp_path / "p.jsonl")
    metrics = tmp_path / "m.json"
    code, _, err = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), "--bootstrap", "0", "--errors",
                       "-o", str(metrics))
    assert code == 0, err
    assert read_json(metrics)["groups"]["overall_overall"]["metrics"]["node_micro_f1"] == 1.0
    code, _, err = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), "--compat", "-o", str(metrics))
    assert code == 0 and read_json(metrics)["overall_overall"]["all_samples"] == 30
    rows[0]["task_nodes"] = [{"task": "Nope \ud800"}]
    (ds / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = run(capsys, "data", "check", str(ds))
    assert code == 0 and "unknown tool 'Nope \\ud800'" in out


# -------------------------------------------------------------------------------- ids of every type


def test_list_object_and_null_ids(ds: Path, tmp_path, capsys) -> None:
    rows = gold_lines(ds)
    rows[0]["id"], rows[1]["id"], rows[2]["id"], rows[3]["id"] = None, [1, 2], {"a": 1}, 12345
    (ds / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_dataset(ds)
    assert len(loaded.samples) == 27 and "12345" in loaded.by_id()
    assert [(p.line, p.message) for p in loaded.problems] == [
        (1, "the record's id is null"), (2, "the record's id is a list"), (3, "the record's id is an object")]
    code, out, _ = run(capsys, "data", "check", str(ds))
    assert code == 0 and "27 samples" in out and "3 unusable" in out  # a null id is not "clean"
    preds = tmp_path / "p.jsonl"
    write_jsonl(preds, [{"id": r["id"], "result": {"task_nodes": r["task_nodes"]}} for r in rows])
    for mode in ("--strict", "--compat", "--both"):
        code, _, err = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), mode, "--bootstrap", "0")
        assert code == 0 and "Traceback" not in err, (mode, err)
        assert "3 gold record(s) cannot be scored" in err or mode == "--compat"
        assert "3 prediction record(s) have no usable 'id'" in err  # null, the list and the object


# ----------------------------------------------------------------------------- non-string user_request


def test_non_string_user_request_is_reported_not_a_crash_mid_run(ds: Path, tmp_path, capsys) -> None:
    rows = gold_lines(ds)
    rows[5]["user_request"] = 42
    (ds / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = rows[0]["id"]
    (ds / "user_requests.json").write_text(
        json.dumps({"id": first, "user_request": ["not", "text"]}) + "\n"
        + json.dumps({"id": rows[1]["id"], "user_request": "rewritten"}) + "\n"
    )
    loaded = load_dataset(ds)
    assert len(loaded.samples) == 29 and loaded.requests == {rows[1]["id"]: "rewritten"}
    assert loaded.request_for(first) == rows[0]["user_request"]
    assert sorted(p.line for p in loaded.problems) == [1, 6]
    # predict runs over every usable sample with the requests that are text
    from taskbench.predict.runner import PredictOptions, predict_file

    out = tmp_path / "preds.jsonl"
    summary = predict_file(ds, "mock/echo", out, PredictOptions(structured=True))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 29 and all(isinstance(r["user_request"], str) for r in records), summary


# ------------------------------------------------------------------------------- large tool libraries


def typed_library(n: int) -> dict:
    return {"nodes": [{"id": f"Tool {i}", "desc": "d", "input-type": ["text"], "output-type": ["text"]}
                      for i in range(n)]}


def test_graph_of_3000_tools_sharing_a_type_is_refused_quickly(tmp_path: Path, capsys) -> None:
    src = tmp_path / "tools.json"
    src.write_text(json.dumps(typed_library(3000)))
    start = time.perf_counter()
    for cmd in (("graph", "build", str(src), "-o", str(tmp_path / "g.json")), ("graph", "stats", str(src)),
                ("sample", str(src), "--n", "1")):
        code, _, err = run(capsys, *cmd)
        one_line_error(code, err)
        assert "has 8,997,000 links" in err and "--max-links" in err
    assert time.perf_counter() - start < 30  # counting, not building (about 1 s on 2 shared cores)
    assert not (tmp_path / "g.json").exists()


def test_streamed_graph_equals_the_built_one_and_the_limit_can_be_lifted(tmp_path: Path, capsys) -> None:
    from taskbench.graph.build import build_graph, count_links
    from taskbench.graph.loaders import load_tools

    src = tmp_path / "tools.json"
    src.write_text(json.dumps(typed_library(120)))
    out = tmp_path / "g.json"
    code, _, err = run(capsys, "graph", "build", str(src), "-o", str(out), "--max-links", "1000")
    one_line_error(code, err)
    assert "has 14,280 links" in err and "--max-links 14280" in err
    code, _, err = run(capsys, "graph", "build", str(src), "-o", str(out), "--max-links", "0")
    assert code == 0, err
    library = load_tools(src)
    expected = json.dumps(build_graph(library).to_taskbench(), ensure_ascii=False, indent=2) + "\n"
    assert out.read_text(encoding="utf-8") == expected
    assert count_links(library) == 120 * 119 == len(json.loads(expected)["links"])
    with pytest.raises(ConfigError, match="more than the limit of 100"):
        build_graph(library, max_links=100)


# ----------------------------------------------------------------------------------------- umask


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_output_files_are_created_with_the_users_umask(ds: Path, tmp_path: Path, capsys) -> None:
    preds = self_predictions(ds, tmp_path / "p.jsonl")
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {})
        with JsonlAppender(tmp_path / "b.jsonl") as app:
            app.write({})
        code, _, _ = run(capsys, "evaluate", "--data", str(ds), "-p", str(preds), "--bootstrap", "0",
                         "-o", str(tmp_path / "metrics.json"))
        code2, _, _ = run(capsys, "leaderboard", str(tmp_path / "metrics.json"), "-o", str(tmp_path / "board.json"))
        assert code == code2 == 0
        for name in ("a.json", "b.jsonl", "metrics.json", "board.json"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name
        os.umask(0o077)
        write_json(tmp_path / "private.json", {})
        assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600
    finally:
        os.umask(old)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]


# ----------------------------------------------------------------------------- names and small things


def test_version(capsys) -> None:
    import taskbench

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"taskbench {taskbench.__version__}\n"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["graph", "stats", "multimedai"], "did you mean 'multimedia'?"),
        (["graph", "build", "huggingface", "--format", "opnai"], "did you mean 'openai'?"),
        (["graph", "stats", "huggingface", "-D", "resorce"], "did you mean 'resource'?"),
        (["data", "fetch", "taskbnch"], "did you mean 'taskbench'?"),
        (["data", "fetch", "taskbench", "--domain", "multimedai"], "did you mean 'multimedia'?"),
        (["evaluate", "--data", "huggingface", "-p", "x.jsonl", "-M", "rogue"], "did you mean 'rouge'?"),
        (["evaluate", "--data", "huggingface", "-p", "x.jsonl", "--splits", "chian"], "did you mean 'chain'?"),
        (["evaluate", "--data", "huggingface", "-p", "x.jsonl", "--mode", "ad"], "did you mean 'add'?"),
        (["sample", "huggingface", "--n", "1", "--mode-weights", "chian=1"], "did you mean 'chain'?"),
        (["graph", "show", "huggingface", "-o", "x.png", "--layout", "sprin"], "did you mean 'spring'?"),
    ],
)
def test_a_bad_name_suggests_the_close_one(capsys, argv, needle) -> None:
    code, _, err = run(capsys, *argv)
    one_line_error(code, err)
    assert needle in err


def test_bad_provider_and_tool_names_suggest_the_close_one(ds: Path, capsys) -> None:
    from taskbench.llm import get_model

    with pytest.raises(ConfigError, match="did you mean 'openai'"):
        get_model("opneai/gpt-4o-mini")
    rows = gold_lines(ds)
    rows[0]["task_nodes"][0]["task"] = rows[0]["task_nodes"][0]["task"].lower()
    (ds / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, _ = run(capsys, "data", "check", str(ds))
    real = gold_lines(bundled.path("huggingface"))[0]["task_nodes"][0]["task"]
    assert code == 0 and f"unknown tool {real.lower()!r} - did you mean {real!r}?" in out


def test_one_rule_for_the_dependency_kind_of_a_mixed_library(tmp_path: Path) -> None:
    from taskbench.graph.build import graph_from_path, load_graph
    from taskbench.graph.loaders import load_tools
    from taskbench.schema import ToolGraph, infer_dependency

    mixed = {"nodes": [{"id": "A", "input-type": ["text"], "output-type": ["image"]},
                       {"id": "B", "parameters": [{"name": "x", "type": "string"}]}]}
    src = tmp_path / "tools.json"
    src.write_text(json.dumps(mixed))
    library = load_tools(src)
    graph = ToolGraph(nodes=library.tools)  # no recorded dependency
    assert library.dependency == graph.dependency_kind == infer_dependency(library.tools) == "temporal"
    doc = tmp_path / "graph_desc.json"
    doc.write_text(json.dumps({**mixed, "links": [{"source": "A", "target": "B", "type": "complete"}]}))
    assert load_graph(doc).dependency_kind == graph_from_path(src).dependency_kind == "temporal"


def test_one_group_rule_for_a_tool_count_such_as_03() -> None:
    from taskbench.eval.groups import Group, group_mask

    mask = group_mask(Group("overall", "03"), ["chain"] * 3, [3, 3, 2])
    assert not mask.any()  # as the reference: str(3) != "03"
    assert group_mask(Group("overall", "3"), ["chain"] * 3, [3, 3, 2]).tolist() == [True, True, False]
    from taskbench.eval.strict import group_mask as strict_mask

    # the strict module's call shape is the same rule
    assert strict_mask(["chain"] * 3, [3, 3, 2], "overall", "03").tolist() == [False] * 3
    assert strict_mask(["chain"] * 3, [3, 3, 2], "chain", "3").tolist() == [True, True, False]


def test_intervals_are_unambiguous_with_negative_bounds() -> None:
    from taskbench.report.tables import fmt, fmt_interval

    assert fmt_interval((-0.031, 0.0125)) == "[-3.1, 1.2]"
    assert fmt_interval((-0.031, 0.0125), signed=True) == "[-3.10, +1.25]"
    assert fmt(0.5, (0.41, 0.6)) == "50.00\n[41.0, 60.0]"


def test_tables_at_100_columns_never_cut_a_number(shared: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    parity = shared / "parity" / "huggingface"
    preds = parity / "predictions" / "perturbed_1.json"
    code, out, err = run(capsys, "evaluate", "--data", str(parity), "-p", str(preds), "--both", "--bootstrap", "200")
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100 and "…" not in out
    assert "not shown at 100 columns:" in out  # what did not fit is named, not cut
    for cmd in (["leaderboard", str(shared / "parity" / "huggingface" / "metrics" / "perturbed_1.json")],
                ["data", "list"]):
        code, out, err = run(capsys, *cmd)
        assert code == 0 and max(len(line) for line in out.splitlines()) <= 100 and "…" not in out, err


def test_no_module_is_over_800_lines() -> None:
    src = Path(__file__).resolve().parents[1] / "src" / "taskbench"
    sizes = {p.relative_to(src).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in src.rglob("*.py")}
    # no exception: the sandbox's supervisor is split into modules mounted beside it (backend.SUPERVISOR_FILES)
    assert {k: v for k, v in sizes.items() if v > 800} == {}


def test_a_gold_type_that_is_not_text_counts_in_the_overall_groups_only() -> None:
    """Found by the fuzz suite: compat mode crashed in numpy on a 'type' that is a list."""
    from taskbench.eval.compat import evaluate_compat
    from taskbench.graph.loaders import load_tool_library

    library = load_tool_library(bundled.path("huggingface") / "tool_desc.json")
    gold = gold_lines(bundled.path("huggingface"))[:3]
    gold[0] = {**gold[0], "type": []}
    gold[1] = {**gold[1], "type": {"a": 1}}
    res = evaluate_compat(gold, [{"id": g["id"], "result": {k: g[k] for k in ("task_steps", "task_nodes", "task_links")}}
                                 for g in gold], library)
    assert res.metrics["overall_overall"]["all_samples"] == 3
    assert sum(res.metrics[f"{s}_overall"]["all_samples"] for s in ("single", "chain", "dag")) == 1


def test_short_flags_mean_one_thing_across_commands():
    """-m is --model and -d is --data wherever they exist (issue: -m was --metrics in evaluate, -d --dependency
    in graph and sample)."""
    import click
    import typer.main

    from taskbench.cli.main import app

    seen: dict[str, set[str]] = {}

    def walk(cmd: click.Command) -> None:
        for p in getattr(cmd, "params", []):
            for opt in p.opts + p.secondary_opts:
                if opt.startswith("-") and not opt.startswith("--"):
                    seen.setdefault(opt, set()).add(p.opts[0] if p.opts[0].startswith("--") else p.opts[-1])
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    assert seen["-m"] == {"--model"} and seen["-d"] == {"--data"}
