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
    assert set(b) == {"strict", "compat"} and b["compat"] == c
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
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "1", "result": {}}\n{not json\n')
    code, _, err = run(["evaluate", "--data", str(d), "-p", str(broken)], capsys)
    assert code == 2 and "broken.jsonl:2" in err


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
    (tmp_path / "human.json").write_text(json.dumps({"good": 2, "half": 1}))
    for suffix in (".md", ".html", ".json"):
        code, _, _ = run(["leaderboard", *files, "-o", str(tmp_path / f"board{suffix}"), "--against",
                          str(tmp_path / "human.json")], capsys)
        assert code in (0, None)
    assert "| 1 | good |" in (tmp_path / "board.md").read_text()
    board = json.loads((tmp_path / "board.json").read_text())
    assert [r["model"] for r in board["rows"]] == ["good", "half"]
    assert board["correlations"][0]["kendall_tau"] == pytest.approx(1.0)
    code, _, err = run(["leaderboard", *files, "-o", str(tmp_path / "board.txt")], capsys)
    assert code == 2 and "unsupported output" in err


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
