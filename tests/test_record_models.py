"""The episode row and the generation manifest (issue 19, point 1): what an agent run writes to episodes.jsonl
and what generate writes as its run header's config are exactly the keys their models declare, and read back
through the models unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from agent_helpers import no_sandbox_here
from taskbench import bundled
from taskbench.agents import AgentEvalConfig, Budgets, run_agents
from taskbench.agents.eval import load_run
from taskbench.engine.generate import GenerateOptions, generate, read_manifest
from taskbench.graph.build import graph_from_path
from taskbench.llm import get_model
from taskbench.schema import EpisodeRow, FailedEpisodeRow, GenerationManifest, parse_episode


def test_the_episode_rows_an_agent_run_writes_are_the_keys_of_the_model(tmp_path: Path) -> None:
    cfg = AgentEvalConfig(env="restbench-tmdb", agents=["react"], model="mock/echo", tools="gold",
                          task_ids=["tmdb-own-01"], env_options={"task_set": "own"}, budgets=Budgets(max_steps=2),
                          bootstrap=0, unsafe_local=no_sandbox_here())
    run_agents(cfg, tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines
    for line in lines:
        assert not line.get("failed"), line
        assert list(line) == list(EpisodeRow.model_fields)  # the same keys, in the same order
        row = parse_episode(line)
        assert isinstance(row, EpisodeRow) and row.model_dump(mode="json") == line
    _, records = load_run(tmp_path)
    assert all(isinstance(r, EpisodeRow) and r.trajectory for r in records.values())


def test_failed_and_older_episode_rows_load() -> None:
    failed = {"id": "react/t/s0", "agent": "react", "task": "t", "seed": 0, "fingerprint": "f" * 16,
              "trajectory": "trajectories/react/t__s0.jsonl", "failed": True, "error": "boom"}
    row = parse_episode(failed)
    assert isinstance(row, FailedEpisodeRow) and row.model_dump(mode="json") == failed
    assert list(failed) == list(FailedEpisodeRow.model_fields)
    runner_failure = parse_episode({"id": "x", "failed": True, "error": "TimeoutError: late"})
    assert isinstance(runner_failure, FailedEpisodeRow) and runner_failure.agent is None
    old = parse_episode({"id": "react/t/s0", "agent": "react", "task": "t", "seed": 1, "success": True})
    assert isinstance(old, EpisodeRow) and old.success and old.attempts == 1 and old.cpr_f1 is None


def test_the_generation_manifest_is_the_keys_of_the_model_and_reads_back(tmp_path: Path) -> None:
    graph = graph_from_path(bundled.path("multimedia"))
    out = tmp_path / "gen"
    generate(graph, get_model("mock/echo", cache=False), out, GenerateOptions(n=2, keep="none"))
    header = json.loads((out / "header.json").read_text(encoding="utf-8"))
    config = header["config"]
    assert list(config) == list(GenerationManifest.model_fields)
    # the values as the hand-built dict wrote them: the default weights as ints, size keys as strings
    assert config["mode_weights"] == {"single": 3, "chain": 7, "dag": 8}
    assert all(isinstance(v, int) for v in config["mode_weights"].values())
    assert config["size_weights"]["2"] == 0.1 and config["env"] is None and config["guided"] is True
    assert config["limits"] == {"user_request": 800, "step": 200, "value": 200, "comments": 400}
    manifest = read_manifest(out)
    assert manifest is not None and manifest.model_dump(mode="json") == config
    assert header["identity"] == {k: config[k] for k in header["identity"]}
    # a rerun of the same arguments resumes (the fingerprint of the typed manifest is the one on disk)
    generate(graph, get_model("mock/echo", cache=False), out, GenerateOptions(n=2, keep="none"))
    again = json.loads((out / "header.json").read_text(encoding="utf-8"))
    assert again["fingerprint"] == header["fingerprint"] and again["config"] == config


def test_a_legacy_generation_json_reads_through_the_model(tmp_path: Path) -> None:
    doc = {"schema": 1, "method": "two-stage", "seed": 3, "n": 5, "mode_weights": {"single": 1.0},
           "size_weights": {"2": 1.0}, "model": "mock/echo", "critic_model": None, "check": False}
    (tmp_path / "generation.json").write_text(json.dumps(doc), encoding="utf-8")
    manifest = read_manifest(tmp_path)
    assert manifest is not None and manifest.method == "two-stage" and manifest.size_weights == {2: 1.0}
    assert manifest.guided is None and "guided" not in manifest.model_fields_set


def test_the_viewer_shows_only_keys_an_episode_row_has() -> None:
    from taskbench.report.view.agents import _EPISODE_KEYS

    assert set(_EPISODE_KEYS) <= set(EpisodeRow.model_fields)
