"""Leaderboard from metrics files: layouts, ranking, md/html/png/json outputs, rank correlation."""

from __future__ import annotations

import base64
import json
import re

import pytest

from taskbench.errors import ConfigError, InputError
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
    # the whole strict document, as taskbench evaluate writes it (the leaderboard reads it through MetricsFile)
    return {"mode": "strict", "dependency": "resource", "metrics": ["f1", "ed"], "bootstrap": 0, "seed": 0,
            "n_gold": 5, "taxonomy": {"total": 5, "correct": 0, "counts": {}}, "groups": groups}


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
    with pytest.raises(ConfigError, match="rank-by"):
        build_board(load_entries(files), rank_by="nonsense")


def test_markdown_html(files):
    board = build_board(load_entries(files))
    corr = rank_correlations(board, {"strong": 3, "mid": 2, "weak": 1})
    md = to_markdown(board, corr)
    lines = md.splitlines()
    assert lines[2] == "| # | model | n | n-F1 | NED |"
    assert lines[4] == "| 1 | strong | 5 | 90.00 | 10.00 |"
    assert "| n-F1 | 3 | 1.000 | 1.000 |" in md and "| NED | 3 | 1.000 | 1.000 |" in md
    page = to_html(board, corr, plots=False)
    assert page.startswith("<!DOCTYPE html>") and "<td>strong</td><td>5</td><td>90.00</td>" in page
    assert "<img" not in page


def test_html_embeds_the_plots_as_a_png_data_uri(files, tmp_path):
    board = build_board(load_entries(files))
    page = to_html(board)
    assert "<td>strong</td><td>5</td><td>90.00</td>" in page
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
    assert "<td>strong</td><td>5</td><td>90.00</td>" in page and '<img src="data:image/png;base64,' in page


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


def test_unknown_group_or_metric_suggests_the_name(files):
    entries = load_entries(files)
    with pytest.raises(ConfigError, match=r"unknown --group 'chain' \(did you mean 'chain_overall'\?"):
        build_board(entries, group="chain")
    with pytest.raises(ConfigError, match=r"did you mean 'overall_3'\?"):
        build_board(entries, group="overall_03")
    with pytest.raises(ConfigError, match=r"did you mean 'node_micro_f1'\?"):
        build_board(entries, rank_by="node_micro_f")
    with pytest.raises(ConfigError, match=r"did you mean 'compat'\?"):
        load_entries(files, source="compta")


def test_predictions_or_gold_file_is_named_for_what_it_is(tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text('{"id": "1", "result": {"task_nodes": []}}\n{"id": "2", "result": null}\n')
    with pytest.raises(InputError) as info:
        load_entries([preds])
    assert str(info.value).startswith(f"{preds}: not a metrics file: this is a predictions file")
    assert "taskbench evaluate --data DATASET -p FILE" in str(info.value)
    gold = tmp_path / "data.json"
    gold.write_text('{"id": "1", "user_request": "x", "task_nodes": []}\n{"id": "2"}\n')
    with pytest.raises(InputError, match="this is a gold data file"):
        load_entries([gold])
    single = tmp_path / "one.json"
    single.write_text('{"id": "1", "result": {}}')  # one line: valid JSON, but no metrics
    with pytest.raises(InputError, match="no metrics found .*this is a predictions file"):
        load_entries([single])


def test_mixed_modes_different_n_and_recorded_warnings_are_reported(tmp_path):
    docs = {"a": strict_doc(0.5, 0.4), "b": compat_doc(0.3), "c": strict_doc(0.6, 0.3)}
    docs["c"]["groups"]["overall_overall"]["n_samples"] = 4
    docs["c"]["warnings"] = ["1 of 5 gold samples have no prediction"]
    paths = []
    for name, doc in docs.items():
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(doc))
    board = build_board(load_entries(paths))
    assert board.warnings[0].startswith("mixed scoring modes: a, c strict, b compat")
    assert board.warnings[1] == ("different sample counts in overall_overall: a n=5, b n=3, c n=4; the models "
                                 "were not scored on the same samples")
    assert board.warnings[2] == "c: 1 of 5 gold samples have no prediction"
    same = build_board(load_entries(paths[:1]))
    assert same.warnings == []


def test_cells_show_the_ci_unambiguously(tmp_path):
    doc = strict_doc(0.5, 0.4)
    doc["groups"]["overall_overall"]["ci"] = {"node_micro_f1": [0.41, 0.6], "edit_distance": [-0.02, 0.05]}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    board = build_board(load_entries([path]))
    assert board.rows[0]["ci"] == {"node_micro_f1": [0.41, 0.6], "edit_distance": [-0.02, 0.05]}
    md = to_markdown(board)
    assert "| 1 | m | 5 | 50.00 [41.0, 60.0] | 40.00 [-2.0, 5.0] |" in md and "[95% CI]" in md
    page = to_html(board, plots=False)
    assert "<td>50.00<br><small>[41.0, 60.0]</small></td>" in page


def test_plot_shows_no_data_apart_from_zero(files, tmp_path):
    """A structure without samples is drawn as a labelled stub, a 0 as a bar with its n: the pictures differ."""
    zero = json.loads(files[0].read_text())
    zero["groups"]["dag_overall"]["metrics"]["node_micro_f1"] = 0.0
    none = json.loads(files[0].read_text())
    none["groups"]["dag_overall"] = {**none["groups"]["dag_overall"], "n_samples": 0, "metrics": {}}
    pngs = []
    for name, doc in (("zero", zero), ("none", none)):
        (tmp_path / name).mkdir()
        path = tmp_path / name / "weak.json"
        path.write_text(json.dumps(doc))
        pngs.append(plot_png(build_board(load_entries([path]))))
    assert pngs[0] != pngs[1]
    from taskbench.report import leaderboard as lb

    fig = lb._board_figure(build_board(load_entries([tmp_path / "none" / "weak.json"])), None)
    try:
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    assert "no data" in texts and any(t.endswith("\nn=5") for t in texts)  # value and n above each bar
    assert ticks == ["single\nn=5", "chain\nn=5", "dag\nn=0"]


def test_read_ranking_board_uses_its_group_and_metric(files, tmp_path):
    """A board JSON is read in the group asked for and by the metric it was ranked by, not node_micro_f1."""
    board = build_board(load_entries(files), group="chain_overall", rank_by="edit_distance")
    doc = board.model_dump(mode="json", exclude={"entries"})
    # make the two metrics disagree, so reading the wrong one shows
    for row in doc["rows"]:
        row["node_micro_f1"] = {"strong": 0.05, "mid": 0.5, "weak": 0.95}[row["model"]]
    (tmp_path / "board.json").write_text(json.dumps(doc))
    scores = read_ranking(tmp_path / "board.json", group="chain_overall")
    # the edit_distance column, negated so that higher is better as in the other formats
    assert scores == {"strong": -0.1, "mid": -0.2, "weak": -0.4}
    assert rank_correlations(board, scores)[0]["kendall_tau"] == pytest.approx(1.0)
    assert read_ranking(tmp_path / "board.json", group="chain_overall", metric="node_micro_f1")["weak"] == 0.95
    with pytest.raises(InputError, match="chain_overall"):
        read_ranking(tmp_path / "board.json", group="overall_overall")
