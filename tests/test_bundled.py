"""The bundled demo datasets: present, well formed, clean under the rule critic, faithful to the released facts."""

from __future__ import annotations

import fnmatch
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from taskbench import bundled
from taskbench.dataset import load_dataset, read_jsonl
from taskbench.engine.critics import check_dataset
from taskbench.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
RELEASED_LINKS = {"huggingface": 225, "multimedia": 449, "dailylifeapis": 1560}
MEDIA = re.compile(r"[\w./:-]+\.(?:jpe?g|png|gif|bmp|wav|mp3|flac|mp4|avi|mov)\b", re.IGNORECASE)


@pytest.fixture(scope="module", params=bundled.names())
def ds(request):
    return load_dataset(bundled.path(request.param))


def test_names_and_paths():
    assert bundled.names() == ["huggingface", "multimedia", "dailylifeapis"]
    for name in bundled.names():
        assert (bundled.path(name) / "tool_desc.json").is_file()
    with pytest.raises(ConfigError, match="unknown bundled dataset 'tmdb'"):
        bundled.path("tmdb")


def test_package_data_ships_every_bundled_file():
    """pyproject's package-data globs cover every data file (so a wheel carries them)."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["taskbench"]
    pkg = ROOT / "src" / "taskbench"
    files = [p for p in (pkg / "bundled").rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".gguf")]
    # 3 domains x 4 files, the 3 example MCP task files, and 2 shipped students (adapter + its distill.json)
    assert len(files) == 19
    for f in files:
        rel = f.relative_to(pkg).as_posix()
        assert any(fnmatch.fnmatch(rel, pat.replace("**/", "*/")) for pat in patterns), rel


def test_shape_and_counts(ds):
    n = len(ds.samples)
    assert 25 <= n <= 40
    kinds = Counter(s.type for s in ds.samples)
    assert kinds["single"] >= 8 and kinds["chain"] >= 10 and kinds["dag"] >= 6
    sizes = {s.n_tools for s in ds.samples}
    assert min(sizes) == 1 and max(sizes) == 6 and len(sizes) == 6
    assert all(s.n_tools == len(s.task_nodes) for s in ds.samples)
    ids = [s.id for s in ds.samples]
    assert len(set(ids)) == n and all(re.fullmatch(r"\d{8}", i) for i in ids)
    assert all(isinstance(s.seed, int) for s in ds.samples)
    assert ds.graph is not None and len(ds.graph.links) == RELEASED_LINKS[ds.root.name]


def test_rule_critic_finds_nothing(ds):
    results = check_dataset(ds.samples, ds.library, ds.graph)
    assert {sid: [str(i) for i in issues] for sid, issues in results.items() if issues} == {}


def test_structures_are_what_the_type_says(ds):
    for s in ds.samples:
        links = s.links_for(ds.library.dependency)
        if s.type == "dag":  # a real dag: some node has two parents or two children
            outs = Counter(lk.source for lk in links)
            ins = Counter(lk.target for lk in links)
            assert max(outs.values()) > 1 or max(ins.values()) > 1, s.id
        if ds.library.dependency == "resource":
            assert [(lk.source, lk.target) for lk in s.task_links] == [
                (lk.source, lk.target) for lk in s.reference_links()
            ]
        assert {lk.source for lk in links} | {lk.target for lk in links} <= set(s.tool_names)
        assert sorted((lk.source, lk.target) for lk in s.sampled_links) == sorted(
            (lk.source, lk.target) for lk in s.task_links
        )


def test_conventions(ds):
    for s in ds.samples:
        assert s.user_request and all(step.startswith(f"Step {k + 1}: ") for k, step in enumerate(s.task_steps))
        for node in s.task_nodes:
            for arg in node.arguments:
                if ds.library.dependency == "resource":
                    assert isinstance(arg, str), (s.id, arg)
                else:
                    assert not isinstance(arg, str) and isinstance(arg.value, str), (s.id, arg)
        for media in MEDIA.findall(s.user_request):
            assert media.startswith("http") or re.fullmatch(r"example\.\w+", media), (s.id, media)


def test_tools_are_widely_covered(ds):
    used = {n.task for s in ds.samples for n in s.task_nodes}
    assert used == set(ds.library.names)


def test_user_requests_file_matches(ds):
    rows = read_jsonl(ds.root / "user_requests.json")
    assert [(r["id"], r["user_request"]) for r in rows] == [(s.id, s.user_request) for s in ds.samples]


def test_graph_is_the_rule_built_graph(ds):
    from taskbench.graph.build import build_graph

    built = build_graph(ds.library)
    assert {(lk.source, lk.target, lk.type) for lk in built.links} == {
        (lk.source, lk.target, lk.type) for lk in ds.graph.links
    }


def test_facts_equal_the_released_libraries_and_descriptions_are_ours(reference_dir, ds):
    ref = json.loads((reference_dir / ds.root.name / "tool_desc.json").read_text())["nodes"]
    ours = json.loads((ds.root / "tool_desc.json").read_text())["nodes"]
    assert [t["id"] for t in ours] == [t["id"] for t in ref]
    for mine, theirs in zip(ours, ref, strict=True):
        for key in ("input-type", "output-type"):
            assert mine.get(key) == theirs.get(key), mine["id"]
        assert [(p["name"], p["type"]) for p in mine.get("parameters", [])] == [
            (p["name"], p["type"]) for p in theirs.get("parameters", [])
        ]
        assert mine["desc"] and mine["desc"] != theirs["desc"], mine["id"]
        for p, q in zip(mine.get("parameters", []), theirs.get("parameters", []), strict=True):
            assert p["desc"] and p["desc"] != q["desc"], (mine["id"], p["name"])
    ref_links = json.loads((reference_dir / ds.root.name / "graph_desc.json").read_text())["links"]
    assert {(lk["source"], lk["target"], lk["type"]) for lk in ref_links} == {
        (lk.source, lk.target, lk.type) for lk in ds.graph.links
    }


def test_requests_are_not_copied_from_the_release(reference_dir, ds):
    released = {r["user_request"] for r in read_jsonl(reference_dir / ds.root.name / "user_requests.json")}
    gold = read_jsonl(reference_dir / ds.root.name / "gold_sample.jsonl")
    released |= {r.get("instruction", "") for r in gold}
    assert not released & {s.user_request for s in ds.samples}
