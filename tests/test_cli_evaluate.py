"""`taskbench evaluate`, `compare` and `leaderboard` end to end: outputs, layouts, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskbench.cli.main import main

TOOLS = {"nodes": [
    {"id": "A", "desc": "a", "input-type": ["text"], "output-type": ["image"]},
    {"id": "B", "desc": "b", "input-type": ["image"], "output-type": ["text"]},
]}
GOLD = [
    {"id": "1", "type": "single", "n_tools": 1, "user_request": "r", "task_steps": ["make an image"],
     "task_nodes": [{"task": "A", "arguments": ["a cat"]}], "task_links": []},
    {"id": "2", "type": "chain", "n_tools": 2, "user_request": "r", "task_steps": ["make", "describe"],
     "task_nodes": [{"task": "A", "arguments": ["a dog"]}, {"task": "B", "arguments": ["<node-0>"]}],
     "task_links": [{"source": "A", "target": "B"}]},
]


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def write_jsonl(path: Path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "ds"
    d.mkdir()
    (d / "tool_desc.json").write_text(json.dumps(TOOLS))
    write_jsonl(d / "data.json", GOLD)
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": g["id"], "result": {k: g[k] for k in
                       ("task_steps", "task_nodes", "task_links")}, "model": "x"} for g in GOLD])
    half = write_jsonl(tmp_path / "half.jsonl", [{"id": "1", "result": {"task_steps": ["make an image"],
                       "task_nodes": [{"task": "A", "arguments": ["a cat"]}]}}])
    return d, good, half


def test_evaluate_strict_writes_json(data, tmp_path, capsys):
    d, good, half = data
    out = tmp_path / "m.json"
    code, stdout, _ = run(["evaluate", "--data", str(d), "--predictions", str(half), "--bootstrap", "50",
                           "-o", str(out), "--errors"], capsys)
    assert code in (0, None)
    assert "Strict metrics" in stdout and "missing prediction" in stdout
    doc = json.loads(out.read_text())
    g = doc["groups"]["overall_overall"]
    assert g["n_samples"] == 2 and g["metrics"]["missing_rate"] == 0.5
    assert g["metrics"]["node_micro_f1"] == pytest.approx(2 * 1 / (2 * 1 + 0 + 2))
    assert set(g["ci"]) >= {"node_micro_f1", "step_rougeL"}
    assert doc["groups"]["chain_overall"]["metrics"]["graph_accuracy"] == 0.0


def test_evaluate_both_and_compat_layouts(data, tmp_path, capsys):
    d, good, half = data
    both, compat = tmp_path / "both.json", tmp_path / "compat.json"
    assert run(["evaluate", "--data", str(d), "-p", str(half), "--both", "--bootstrap", "0", "-o", str(both)],
               capsys)[0] in (0, None)
    assert run(["evaluate", "--data", str(d), "-p", str(half), "--compat", "-o", str(compat)], capsys)[0] in (0, None)
    b, c = json.loads(both.read_text()), json.loads(compat.read_text())
    assert set(b) == {"model", "dataset", "mode", "n_samples", "strict", "compat"} and b["compat"] == c
    assert b["mode"] == "both" and b["n_samples"] == 2 and b["dataset"] == b["strict"].get("dataset", b["dataset"])
    # the compat file keeps the reference's exact layout: what it is of is in its run header beside it
    header = json.loads((tmp_path / ".compat.json.header.json").read_text())
    assert header["kind"] == "evaluate" and header["config"]["mode"] == "compat"
    assert header["config"]["n_samples"] == 2 and header["config"]["dataset"] == b["dataset"]
    assert c["overall_overall"]["all_samples"] == 1  # compat: only ids present in both count
    assert c["overall_overall"]["node_micro_f1_no_matching"] == 1.0
    assert b["strict"]["groups"]["overall_overall"]["n_samples"] == 2


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--splits", "cycle"], "unknown split"),
        (["--n-tools", "11"], "unknown tool count"),
        (["--metrics", "bleu"], "unknown metric"),
        (["--mode", "sum"], "--mode"),
        (["--compat", "--both"], "one of"),
        (["--dependency", "spatial"], "dependency"),
        (["--alignment", "node"], "alignment_ids.json"),
    ],
)
def test_evaluate_bad_flags_exit_2(data, capsys, extra, needle):
    d, good, _ = data
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(good), *extra], capsys)
    assert code == 2 and needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_evaluate_bad_files_exit_2(data, tmp_path, capsys):
    d, good, _ = data
    code, _, err = run(["evaluate", "--data", str(tmp_path / "nope"), "-p", str(good)], capsys)
    assert code == 2 and "no such file or directory" in err
    # a broken line is reported and the rest is scored; a file with nothing readable is an error
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "1", "result": {}}\n{not json\n')
    code, out, err = run(["evaluate", "--data", str(d), "-p", str(broken), "--bootstrap", "0"], capsys)
    assert code == 0 and "Strict metrics" in out and "Traceback" not in err
    assert f"1 prediction line(s) could not be read and were left out; first: {broken}:2: invalid JSON" in err
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"overall_overall": {"all_samples": 2}}, indent=2))
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(metrics)], capsys)
    assert code == 2 and err.count("\n") == 1 and f"{metrics}:1: no prediction could be read" in err
    assert "JSON Lines" in err


def _warnings(err: str) -> list[str]:
    return [line.removeprefix("taskbench: warning: ") for line in err.splitlines() if "warning:" in line]


def test_evaluate_warns_about_coverage(data, tmp_path, capsys):
    d, good, half = data
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(good), "--bootstrap", "0"], capsys)
    assert code == 0 and _warnings(err) == []
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(half), "--bootstrap", "0"], capsys)
    assert code == 0
    assert _warnings(err) == ["1 of 2 gold samples have no prediction (scored as empty graphs): '2'; use --ids or "
                              "--limit to score a subset on purpose"]
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(half), "--compat"], capsys)
    assert code == 0 and "(left out by the reference's rules): '2'" in err
    other = write_jsonl(tmp_path / "other.jsonl", [{"id": "x1", "result": {"task_nodes": [{"task": "Q"}]}},
                                                   {"id": "x2", "result": {"task_nodes": []}}])
    code, out, err = run(["evaluate", "--data", str(d), "-p", str(other), "--bootstrap", "0"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1  # nothing to score: an error
    assert "none of the 2 prediction ids is a gold id" in err and "(e.g. 'x1', 'x2')" in err
    assert "are these predictions for another dataset?" in err
    rows = [json.loads(line) for line in good.read_text().splitlines()]
    odd = write_jsonl(tmp_path / "odd.jsonl", [rows[0], rows[0], rows[1], {"id": "3", "result": {}},
                                               {"id": None, "result": {}}, [1, 2]])
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(odd), "--bootstrap", "0"], capsys)
    assert code == 0
    warnings = _warnings(err)
    assert any(f"{odd}:6: expected a JSON object per line" in w for w in warnings)
    assert "1 prediction record(s) have no usable 'id' (a string or an integer) and were left out" in warnings
    assert "1 prediction id(s) are not in the gold data and were ignored: '3'" in warnings
    assert "1 id(s) are predicted more than once (the last one counts): '1'" in warnings
    foreign = write_jsonl(tmp_path / "foreign.jsonl", [
        {"id": g["id"], "result": {"task_nodes": [{"task": f"Other {k}"} for k in range(3)]}} for g in GOLD])
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(foreign), "--bootstrap", "0"], capsys)
    assert _warnings(err) == ["6 of 6 predicted tools are not tools of this dataset's library: are these "
                              "predictions for another dataset?"]


def test_evaluate_ids_and_limit_score_a_subset(data, tmp_path, capsys):
    d, good, half = data
    out = tmp_path / "m.json"
    for flags in (["--ids", "1"], ["--limit", "1"], ["--ids", "@" + str(tmp_path / "ids.txt")]):
        (tmp_path / "ids.txt").write_text("1\n")
        code, _, err = run(["evaluate", "--data", str(d), "-p", str(half), "--bootstrap", "0", "-o", str(out),
                            *flags], capsys)
        doc = json.loads(out.read_text())
        assert code == 0 and _warnings(err) == [], flags
        assert doc["n_gold"] == 1 and doc["groups"]["overall_overall"]["metrics"]["node_micro_f1"] == 1.0
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(half), "--compat", "--limit", "1", "-o", str(out)],
                       capsys)
    assert code == 0 and json.loads(out.read_text())["overall_overall"]["all_samples"] == 1
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(good), "--bootstrap", "0", "--ids", "2,7"], capsys)
    assert code == 0 and _warnings(err) == ["1 of the 2 requested ids are not in the gold data: '7'"]
    for flags, needle in ((["--limit", "0"], "--limit must be a positive"), (["--ids", ","], "--ids names no ids"),
                          (["--unusable", "skp"], "did you mean 'skip'")):
        code, _, err = run(["evaluate", "--data", str(d), "-p", str(good), *flags], capsys)
        assert code == 2 and needle in err and err.count("\n") == 1


def test_evaluate_leaves_out_unusable_gold_and_says_so(data, tmp_path, capsys):
    d, good, _ = data
    rows = [json.loads(line) for line in (d / "data.json").read_text().splitlines()]
    rows[1]["task_links"] = [{"source": 0, "target": 1}]  # v1 release shape: node indices, usable
    bad = {**rows[0], "id": "3", "user_request": 7, "task_nodes": [{"task": ["not", "a", "name"]}]}
    (d / "data.json").write_text("".join(json.dumps(r) + "\n" for r in rows) + json.dumps(bad) + "\n{oops\n")
    out = tmp_path / "m.json"
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(good), "--bootstrap", "0", "-o", str(out)], capsys)
    doc = json.loads(out.read_text())
    assert code == 0 and doc["n_gold"] == 2
    assert doc["groups"]["overall_overall"]["metrics"]["link_f1"] == 1.0
    assert [w.split("; first: ")[0] for w in _warnings(err)] == [
        "2 gold record(s) cannot be scored and were left out (--unusable error stops instead)"]
    assert doc["unusable_gold"][0].startswith(f"{d / 'data.json'}:3: sample '3': task_nodes.0.task")
    assert doc["unusable_gold"][1].startswith(f"{d / 'data.json'}:4: invalid JSON")
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(good), "--unusable", "error"], capsys)
    assert code == 2 and err.startswith(f"taskbench: error: {d / 'data.json'}:3: sample '3'")


def test_compare_identical_and_different(data, tmp_path, capsys):
    d, good, half = data
    out = tmp_path / "cmp.json"
    code, stdout, _ = run(["compare", str(good), str(good), "--data", str(d), "--bootstrap", "100",
                           "--permutations", "100", "-o", str(out)], capsys)
    assert code in (0, None) and "randomization" in stdout
    res = json.loads(out.read_text())["groups"]["overall_overall"]["results"]
    assert all(r["diff"] in (0.0, None) for r in res)
    assert all(r["p_value"] == 1.0 for r in res if r["diff"] is not None)
    run(["compare", str(good), str(half), "--data", str(d), "--bootstrap", "100", "-o", str(out)], capsys)
    f1 = {r["metric"]: r for r in json.loads(out.read_text())["groups"]["overall_overall"]["results"]}
    assert f1["node_micro_f1"]["diff"] == pytest.approx(1 - 0.5)
    code, _, err = run(["compare", str(good), str(half), "--data", str(d), "--metrics", "bertscore"], capsys)
    assert code == 2 and "bertscore" in err


def test_leaderboard_cli(data, tmp_path, capsys):
    d, good, half = data
    for p in (good, half):
        run(["evaluate", "--data", str(d), "-p", str(p), "--bootstrap", "0", "-o", str(tmp_path / f"{p.stem}.json")],
            capsys)
    files = [str(tmp_path / "good.json"), str(tmp_path / "half.json")]
    # a model the predictions record ('x', in the metrics file) names it; else the file's stem
    assert json.loads((tmp_path / "good.json").read_text())["model"] == "x"
    (tmp_path / "human.json").write_text(json.dumps({"x": 2, "half": 1}))
    for suffix in (".md", ".html", ".json"):
        code, _, _ = run(["leaderboard", *files, "-o", str(tmp_path / f"board{suffix}"), "--against",
                          str(tmp_path / "human.json")], capsys)
        assert code in (0, None)
    assert "| 1 | x |" in (tmp_path / "board.md").read_text()
    board = json.loads((tmp_path / "board.json").read_text())
    assert [r["model"] for r in board["rows"]] == ["x", "half"]
    assert board["correlations"][0]["kendall_tau"] == pytest.approx(1.0)
    code, _, err = run(["leaderboard", *files, "-o", str(tmp_path / "board.txt")], capsys)
    assert code == 2 and "unsupported output" in err
    code, out, err = run(["leaderboard", *files, "--group", "chain"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "unknown --group 'chain' (did you mean 'chain_overall'?" in err
    code, _, err = run(["leaderboard", str(good)], capsys)
    assert code == 2 and "not a metrics file: this is a predictions file" in err and err.count("\n") == 1
    # 'half' was evaluated with a gold id missing: its recorded warning is repeated; a compat file is another mode
    ref = write_jsonl(tmp_path / "ref.jsonl", [{**json.loads(line), "model": "ref"}
                                               for line in good.read_text().splitlines()])
    run(["evaluate", "--data", str(d), "-p", str(ref), "--compat", "-o", str(tmp_path / "ref.json")], capsys)
    code, out, err = run(["leaderboard", *files, str(tmp_path / "ref.json")], capsys)
    assert code == 0 and "Leaderboard" in out
    warnings = [line for line in err.splitlines() if line.startswith("taskbench: warning: ")]
    assert any("mixed scoring modes: x, half strict, ref compat" in w for w in warnings)
    assert any(w.startswith("taskbench: warning: half: 1 of 2 gold samples have no prediction") for w in warnings)


def test_help_texts_have_examples(capsys):
    for cmd in ("evaluate", "compare", "leaderboard"):
        code, out, _ = run([cmd, "--help"], capsys)
        assert code == 0 and "Example" in out and f"taskbench {cmd}" in out


@pytest.mark.parametrize("domain", ["huggingface", "multimedia", "dailylifeapis"])
@pytest.mark.parametrize("k", [1, 2])
def test_compat_cli_reproduces_reference_json(parity_dir, tmp_path, capsys, domain, k):
    root = parity_dir / domain
    out = tmp_path / "compat.json"
    code, _, _ = run(["evaluate", "--data", str(root), "-p", str(root / "predictions" / f"perturbed_{k}.json"),
                      "--compat", "--splits", "all", "--n-tools", "all", "--mode", "add",
                      "--metrics", "f1,ed,link,argument,rouge", "-o", str(out)], capsys)
    assert code in (0, None)
    ours = json.loads(out.read_text())
    ref = json.loads((root / "metrics" / f"perturbed_{k}.json").read_text())

    def same(a, b, path):
        if isinstance(b, dict):
            assert isinstance(a, dict) and list(a) == list(b), path
            for key in b:
                same(a[key], b[key], f"{path}/{key}")
        else:
            assert a == pytest.approx(b, abs=1e-9), path

    same(ours, ref, domain)


def test_compare_advice_names_only_options_compare_has(data, capsys):
    """compare has neither --ids nor --limit: its missing-prediction warning must not send the user to them
    (issue 22); it names --alignment, the subset option compare does have."""
    d, good, half = data
    code, _, err = run(["compare", str(good), str(half), "--data", str(d), "--bootstrap", "0",
                        "--permutations", "0"], capsys)
    assert code in (0, None)
    line = next(w for w in err.splitlines() if "have no prediction" in w)
    assert "--ids" not in line and "--limit" not in line and "--alignment" in line
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(half), "--bootstrap", "0"], capsys)
    assert "use --ids or --limit" in err
