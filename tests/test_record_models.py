"""The episode row, the generation manifest and the generation record (issue 19, point 1): what an agent run
writes to episodes.jsonl, what generate writes as its run header's config and as each line of data_raw.json are
exactly the keys their models declare, and read back through the models unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import no_sandbox_here
from engine_oracle import Oracle
from taskbench import bundled
from taskbench.agents import AgentEvalConfig, Budgets, run_agents
from taskbench.agents.eval import load_run
from taskbench.dataset.jsonio import dumps_line
from taskbench.engine.generate import GenerateOptions, generate, read_manifest
from taskbench.engine.output import assess, finalize_dataset
from taskbench.errors import InputError
from taskbench.graph.build import graph_from_path
from taskbench.llm import get_model
from taskbench.llm.base import ProviderResponse
from taskbench.schema import (
    EpisodeRow,
    FailedEpisodeRow,
    FailedGenerationRecord,
    GenerationManifest,
    GenerationRecord,
    parse_episode,
    parse_generation_record,
)
from taskbench.schema.generation import GoldExecution


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


def _oracle(responses: Any, **kw: Any) -> Any:
    return get_model("mock/oracle", responses=responses, cache=False, max_retries=0, **kw)


def _raw_lines(out: Path) -> list[str]:
    return (out / "data_raw.json").read_text(encoding="utf-8").splitlines()


def _round_trips(line: str) -> GenerationRecord | FailedGenerationRecord:
    """The line read through the model and written back: the same bytes (keys, order, values); its keys are
    fields of the model, in field order (but a stage-1 refusal's, tested on its own)."""
    doc = json.loads(line)
    rec = parse_generation_record(doc)
    assert dumps_line(rec.to_record()) == line
    if not str(doc.get("error", "")).startswith("stage 1:"):
        assert list(doc) == [k for k in type(rec).model_fields if k in doc]
    return rec


def test_generated_records_read_back_through_the_model_to_the_same_bytes(tmp_path: Path) -> None:
    mm = graph_from_path(bundled.path("multimedia"))
    daily = graph_from_path(bundled.path("dailylifeapis"))
    out = tmp_path / "bi"
    generate(mm, _oracle(Oracle()), out, GenerateOptions(n=4, seed=1), critic_model=_oracle(Oracle(teacher=False)))
    records = [_round_trips(line) for line in _raw_lines(out)]
    assert all(isinstance(r, GenerationRecord) for r in records)
    first = records[0]
    assert isinstance(first, GenerationRecord) and first.plan is not None and first.result is not None
    assert first.critic is not None and first.critic.model == "mock/oracle" and first.critic.result is not None
    assert first.critics == {"rule": True, "llm": False, "self": True}
    assert first.sampled_links is not None and first.usage is not None and first.stages is None
    assert "stages" not in json.loads(_raw_lines(out)[0]) and "error" not in json.loads(_raw_lines(out)[0])

    calls = {"n": 0}

    def stage_one_cut_first(request: Any) -> Any:
        if (request.json_schema or {}).get("title") == "UserRequest":
            calls["n"] += 1
            if calls["n"] == 1:
                return ProviderResponse('{"user_request": "cu', 10, 2048, "length")
        return Oracle()(request)

    two = tmp_path / "two"
    generate(daily, _oracle(stage_one_cut_first), two, GenerateOptions(n=3, method="two-stage"))
    lines = _raw_lines(two)
    cut, *fine = [_round_trips(line) for line in lines]
    assert isinstance(cut, GenerationRecord) and cut.error_code == "truncated" and cut.result is None
    assert cut.error is not None and cut.error.startswith("stage 1:") and cut.stages is not None
    keys = list(json.loads(lines[0]))
    assert keys.index("stages") < keys.index("error_code") < keys.index("error") < keys.index("raw")
    assert len(fine) == 2
    for rec, line in zip(fine, lines[1:], strict=True):
        assert isinstance(rec, GenerationRecord) and rec.stages is not None and len(rec.stages) == 2
        assert rec.usage is not None and rec.usage.prompt_tokens == sum(s.usage.prompt_tokens for s in rec.stages)
        keys = list(json.loads(line))
        assert keys.index("raw") < keys.index("result") and "error" not in keys


def test_a_record_writes_only_the_keys_it_was_given() -> None:
    assert GenerationRecord(id="00001").to_record() == {"id": "00001"}
    rec = GenerationRecord(id="00001", finish_reason=None)
    rec.error_code = "unparseable"
    assert rec.to_record() == {"id": "00001", "finish_reason": None, "error_code": "unparseable"}
    run = GoldExecution.model_validate({"passed": False, "reasons": ["exec_failed: node 0 (q): no"],
                                        "calls": [{"node": 0, "tool": "q", "arguments": {}, "error": "no"}]})
    assert run.model_dump(mode="python")["calls"] == [{"node": 0, "tool": "q", "arguments": {}, "error": "no"}]


def test_the_failed_variant_reads_and_writes_as_the_engine_writes_it(tmp_path: Path) -> None:
    mm = graph_from_path(bundled.path("multimedia"))
    out = tmp_path / "gen"
    failing = _oracle(Oracle(), failures=[500, 500])
    generate(mm, failing, out, GenerateOptions(n=4, keep="none"))
    lines = _raw_lines(out)
    failed = [r for r in (_round_trips(line) for line in lines) if isinstance(r, FailedGenerationRecord)]
    assert len(failed) == 2
    doc = json.loads(next(line for line in lines if '"failed": true' in line))
    assert list(doc) == [k for k in FailedGenerationRecord.model_fields if k in doc]
    assert doc["failed"] is True and doc["error"] and doc["plan"]["index"] == int(doc["id"])
    sample, verdicts = assess(doc, mm.library, mm)
    assert sample.task_nodes == [] and verdicts["rule"].reasons[0].startswith("call_failed:")
    # a failure the runner wrote itself: only id, failed and error
    bare = parse_generation_record({"id": "00009", "failed": True, "error": "TimeoutError: late"})
    assert isinstance(bare, FailedGenerationRecord) and bare.plan is None
    assert bare.to_record() == {"id": "00009", "failed": True, "error": "TimeoutError: late"}
    # a false "failed" is an answered record, as the runner reads it
    assert isinstance(parse_generation_record({"id": "1", "failed": False}), GenerationRecord)


@pytest.mark.parametrize("record, words", [
    ({"id": "00001", "usage": {"prompt_tokens": "many"}}, "usage.prompt_tokens"),
    ({"id": "00001", "type": "tree"}, "type"),
    ({"id": "00001", "result": ["not", "an", "object"]}, "result"),
    ({"id": "00001", "failed": True, "error": 5}, "error"),
    ({"seed": 1}, "id"),
    (["a", "list"], "not list"),
])
def test_a_malformed_record_is_refused_with_its_field(record: Any, words: str) -> None:
    with pytest.raises(InputError, match=words) as info:
        parse_generation_record(record, path="d/data_raw.json", line=3)
    assert str(info.value).startswith("d/data_raw.json:3: ")


def test_a_malformed_line_of_data_raw_stops_the_output_step_and_the_resume_naming_it(tmp_path: Path) -> None:
    mm = graph_from_path(bundled.path("multimedia"))
    out = tmp_path / "gen"
    generate(mm, _oracle(Oracle()), out, GenerateOptions(n=3, keep="none"))
    lines = _raw_lines(out)
    bad = json.loads(lines[1])
    bad["critics"] = {"rule": "maybe"}
    (out / "data_raw.json").write_text("\n".join([lines[0], json.dumps(bad), lines[2]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"data_raw\.json:2: generation record '00001' is malformed: critics\.rule"):
        finalize_dataset(out, mm.library, mm)
    resumed = Oracle()
    with pytest.raises(InputError, match=r"data_raw\.json:2: .*critics\.rule"):
        generate(mm, _oracle(resumed), out, GenerateOptions(n=4, keep="none"))
    assert resumed.calls == []  # refused before any model call, not after generating entry 3


def test_records_the_engine_wrote_before_the_model_read_back_to_the_same_bytes() -> None:
    # tests/data/data_raw_36b4828.json: lines the engine wrote at 36b4828, before the record was a model (the
    # scripted oracle: back-instruct with a separate critic, two-stage, and two calls that failed for good)
    lines = (Path(__file__).parent / "data" / "data_raw_36b4828.json").read_text(encoding="utf-8").splitlines()
    records = [_round_trips(line) for line in lines]
    assert sum(isinstance(r, FailedGenerationRecord) for r in records) == 2
    assert any(isinstance(r, GenerationRecord) and r.critic is not None for r in records)
    assert any(isinstance(r, GenerationRecord) and r.stages for r in records)
