"""Leaderboard from metrics files: layouts, ranking, md/html/png/json outputs, rank correlation."""

from __future__ import annotations

import base64
import json
import re

import pytest

from taskbench.errors import InputError
from taskbench.report.leaderboard import (
    build_board,
    entry_from_json,
    load_entries,
    plot_board,
    plot_png,
    rank_correlations,
    read_ranking,
    to_html,
    to_markdown,
)


def strict_doc(f1, ned):
    groups = {}
    for key, shift in [("overall_overall", 0), ("single_overall", 0.05), ("chain_overall", -0.05),
                       ("dag_overall", -0.1)] + [(f"overall_{n}", -0.03 * n) for n in range(1, 11)]:
        groups[key] = {"split": key.split("_")[0], "n_tools": key.split("_")[1], "n_samples": 5,
                       "metrics": {"node_micro_f1": f1 + shift, "edit_distance": ned, "link_f1": None}}
    return {"mode": "strict", "groups": groups}


def compat_doc(f1):
    return {"overall_overall": {"all_samples": 3, "node_micro_f1_no_matching": f1, "link_binary_f1": 0.5,
                                "edit_distance": 0.2, "node_per_type_no_matchcing": {}}}


@pytest.fixture
def files(tmp_path):
    paths = []
    for name, doc in [("weak", strict_doc(0.5, 0.4)), ("strong", strict_doc(0.9, 0.1)),
                      ("mid", {"strict": strict_doc(0.7, 0.2), "compat": compat_doc(0.2)})]:
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc))
        paths.append(p)
    return paths


def test_layouts_and_ranking(files):
    board = build_board(load_entries(files))
    assert [r["model"] for r in board.rows] == ["strong", "mid", "weak"]
    assert board.metrics == ["node_micro_f1", "edit_distance"]  # link_f1 is undefined everywhere
    by_ned = build_board(load_entries(files), rank_by="edit_distance")
    assert [r["model"] for r in by_ned.rows] == ["strong", "mid", "weak"]  # lower NED is better
    compat = entry_from_json(compat_doc(0.3), model="ref")
    assert compat.source == "compat" and compat.value("node_micro_f1") == 0.3 and compat.value("link_f1") == 0.5
    mid = load_entries([files[2]], source="compat")[0]
    assert mid.value("node_micro_f1") == 0.2


def test_bad_inputs(tmp_path, files):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}))
    with pytest.raises(InputError, match="no metrics found"):
        load_entries([bad])
    with pytest.raises(InputError, match="two metrics files"):
        load_entries([files[0], files[0]])
    with pytest.raises(InputError, match="rank-by"):
        build_board(load_entries(files), rank_by="nonsense")


def test_markdown_html(files):
    board = build_board(load_entries(files))
    corr = rank_correlations(board, {"strong": 3, "mid": 2, "weak": 1})
    md = to_markdown(board, corr)
    lines = md.splitlines()
    assert lines[2] == "| # | model | n-F1 | NED |"
    assert lines[4] == "| 1 | strong | 90.00 | 10.00 |"
    assert "| n-F1 | 3 | 1.000 | 1.000 |" in md and "| NED | 3 | 1.000 | 1.000 |" in md
    page = to_html(board, corr, plots=False)
    assert page.startswith("<!DOCTYPE html>") and "<td>strong</td><td>90.00</td>" in page
    assert "<img" not in page


def test_html_embeds_the_plots_as_a_png_data_uri(files, tmp_path):
    board = build_board(load_entries(files))
    page = to_html(board)
    assert "<td>strong</td><td>90.00</td>" in page
    found = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(found) == 1
    png = base64.b64decode(found[0], validate=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert png == plot_png(board)  # the same figure as -o board.png
    assert "http://" not in page and "https://" not in page  # self-contained: nothing to fetch
    # another metric gives another figure
    assert to_html(board, metric="edit_distance") != page


def test_cli_html_has_table_and_plots(files, tmp_path):
    from typer.testing import CliRunner

    from taskbench.cli.main import app

    out = tmp_path / "board.html"
    result = CliRunner().invoke(app, ["leaderboard", *map(str, files), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "<td>strong</td><td>90.00</td>" in page and '<img src="data:image/png;base64,' in page


def test_rank_correlation_reversed(files, tmp_path):
    board = build_board(load_entries(files))
    (tmp_path / "human.json").write_text(json.dumps(["weak", "mid", "strong"]))
    corr = rank_correlations(board, read_ranking(tmp_path / "human.json"))
    assert corr[0]["kendall_tau"] == pytest.approx(-1.0) and corr[0]["spearman_rho"] == pytest.approx(-1.0)
    (tmp_path / "bad.json").write_text(json.dumps({"a": "b"}))
    with pytest.raises(InputError):
        read_ranking(tmp_path / "bad.json")


def test_png(files, tmp_path):
    out = plot_board(build_board(load_entries(files)), tmp_path / "board.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert data == plot_png(build_board(load_entries(files)))
