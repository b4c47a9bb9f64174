"""`taskbench data list|check|fetch`: output, exit codes, one-line errors, --help with examples."""

from __future__ import annotations

import json
import shutil

import pytest

from cli_runner import run
from taskbench import bundled


def test_list_shows_counts(capsys):
    code, out, _ = run(capsys, "data", "list")
    assert code == 0
    for name in bundled.names():
        row = next(line for line in out.splitlines() if line.strip().startswith(name))
        cells = row.split()
        assert cells[2:] == [cells[2], cells[3], "30", "10", "12", "8", "1-6"]
    assert "225" in out and "449" in out and "1560" in out


@pytest.mark.parametrize("name", bundled.names())
def test_check_bundled_is_clean_and_strict_passes(capsys, name):
    code, out, _ = run(capsys, "data", "check", name, "--strict")
    assert code == 0
    assert "30 clean, 0 with issues" in out


def test_check_reports_issues_and_strict_fails(capsys, tmp_path):
    src = bundled.path("dailylifeapis")
    dest = tmp_path / "broken"
    shutil.copytree(src, dest)
    lines = (dest / "data.json").read_text().splitlines()
    bad = json.loads(lines[0])
    bad["task_nodes"][0]["arguments"][0]["name"] = "city"  # get_weather has 'location', not 'city'
    bad["n_tools"] = 3
    lines[0] = json.dumps(bad)
    (dest / "data.json").write_text("\n".join(lines) + "\n")

    code, out, _ = run(capsys, "data", "check", str(dest))
    assert code == 0
    assert "29 clean, 1 with issues" in out
    for text in ("unknown_param", "missing_param", "n_tools_mismatch", f"{bad['id']}  unknown_param"):
        assert text in out
    code, out, _ = run(capsys, "data", "check", str(dest), "--strict", "--show", "0")
    assert code == 1
    assert "29 clean, 1 with issues" in out and "unknown_param" in out  # the summary table
    assert f"{bad['id']}  " not in out and "more (use --show N)" not in out  # --show 0: only the summary
    code, out, _ = run(capsys, "data", "check", str(dest), "--show", "1")
    assert code == 0
    assert len([line for line in out.splitlines() if line.startswith(f"  {bad['id']}  ")]) == 1
    assert "  ... 2 more (use --show N)" in out
    code, out, _ = run(capsys, "data", "check", str(dest), "--show", "3")
    assert len([line for line in out.splitlines() if line.startswith(f"  {bad['id']}  ")]) == 3
    assert "more (use --show N)" not in out


def test_check_released_gold(capsys, reference_dir):
    code, out, _ = run(capsys, "data", "check", str(reference_dir / "multimedia"), "--strict")
    assert code == 1
    assert "34 samples" in out and "29 clean, 5 with issues" in out and "ref_self" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["data", "check", "/nonexistent/dir"], "dataset directory not found"),
        (["data", "check", "multimedia", "--dependency", "causal"], "unknown dependency kind 'causal'"),
        (["data", "fetch", "toolbench"], "unknown dataset 'toolbench' to fetch"),
        (["data", "fetch", "taskbench", "--domain", "tmdb"], "unknown TaskBench domain 'tmdb'"),
    ],
)
def test_errors_exit_2_with_one_line(capsys, args, message):
    code, _, err = run(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("taskbench: error: ") and message in lines[0]


def test_bad_data_line_is_listed_with_file_and_line_and_the_rest_is_checked(capsys, tmp_path):
    dest = tmp_path / "ds"
    shutil.copytree(bundled.path("huggingface"), dest)
    with (dest / "data.json").open("a") as fh:
        fh.write('{"id": "1", "task_nodes": [\n')
    code, out, err = run(capsys, "data", "check", str(dest))
    assert code == 0 and err == ""
    assert "30 samples" in out and "1 unusable" in out
    assert f"unusable: {dest / 'data.json'}:31: invalid JSON" in out
    code, *_ = run(capsys, "data", "check", str(dest), "--strict")
    assert code == 1


@pytest.mark.parametrize("command", ["list", "check", "fetch"])
def test_help_has_an_example(capsys, command):
    code, out, _ = run(capsys, "data", command, "--help")
    assert code == 0
    assert "Example" in out and f"taskbench data {command}" in out
