"""`generate` and `agents eval` as sharded jobs, without Ray (LocalExecutor: threads, but every shard rebuilt from
its serialised job as a Ray worker does). The directory a sharded run writes equals a local run's answered by the
same cache: for generate every file byte for byte (critics and near-duplicates decided after the merge, across
shards), for agents eval the episodes, trajectories and metrics (wall-clock figures aside). The Ray and two-node
versions are in test_ray_stages.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run
from fault_server import FaultServer
from run_files import run_files
from taskbench import bundled
from taskbench.engine.generate import GenerateOptions, generate
from taskbench.executors import LocalExecutor, shard_dir
from taskbench.graph.build import graph_from_path
from taskbench.llm import get_model
from taskbench.llm.config import ModelConfig

GEN_FILES = ("data_raw.json", "data.json", "user_requests.json", "data_error.json", "tool_desc.json",
             "graph_desc.json", "statistics.json", "header.json")


@pytest.fixture(scope="module")
def mm():
    return graph_from_path(bundled.path("multimedia"))




def test_sharded_generate_equals_a_local_run(tmp_path, mm):
    from taskbench.executors.generate import agenerate_sharded

    # mock/echo answers the smallest document the schema allows: every request alike, so near-duplicate
    # detection flags all but the first, across shard boundaries (it must run after the merge to see that)
    cache = str(tmp_path / "cache.sqlite")
    options = GenerateOptions(n=14, seed=2, concurrency=2, dedup="drop")
    local = tmp_path / "local"
    summary = generate(mm, get_model("mock/echo", cache=cache), local, options, close_model=True)
    assert summary.planned == 14 and summary.complete and summary.cache_hits == 0
    stats = json.loads((local / "statistics.json").read_text())
    assert stats["kept"] < 14  # the dedup and the critics did something to compare
    sharded = tmp_path / "sharded"
    got = asyncio.run(agenerate_sharded(mm, ModelConfig(spec="mock/echo", options={"cache": cache}), sharded, options,
                                        executor=LocalExecutor(3), shards=4))
    assert got.complete and got.written == 14 and got.cache_hits == got.calls == 14
    assert got.statistics == summary.statistics
    assert run_files(sharded) == run_files(local)
    assert sorted(run_files(local)) == sorted(GEN_FILES)
    assert not shard_dir(sharded / "data_raw.json").exists()

    # a larger --n extends the plan, sharded too; the directory's manifest is checked as locally
    bigger = options.model_copy(update={"n": 18})
    more = asyncio.run(agenerate_sharded(mm, ModelConfig(spec="mock/echo", options={"cache": cache}), sharded,
                                         bigger, executor=LocalExecutor(2)))
    assert more.skipped == 14 and more.written == 4 and more.extended_from == 14
    generate(mm, get_model("mock/echo", cache=cache), local, bigger, close_model=True)
    assert run_files(sharded) == run_files(local)


def test_cli_generate_executor_local_refuses_ray_options_and_ray_is_accepted(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    code, _, err = run(capsys, "generate", "--tools", "multimedia", "-o", str(tmp_path / "g"), "-n", "2",
                       "-m", "mock/echo", "--workers", "2", "-q")
    assert code == 2 and "--workers need --executor ray" in err
    code, out, err = run(capsys, "generate", "--help")
    assert code == 0 and "--executor" in out and "--ray-address" in out
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdb", "--agent", "react", "-m", "mock/echo",
                       "-o", str(tmp_path / "a"), "--ray-address", "auto", "-q")
    assert code == 2 and "--ray-address and --workers need --executor ray" in err
    assert not (tmp_path / "a").exists()  # refused before anything was written
    code, out, _ = run(capsys, "agents", "eval", "--help")
    assert code == 0 and "--executor" in " ".join(out.split())


# ---- agents eval -------------------------------------------------------------------------------------------------

def react_reply(body: dict[str, Any]) -> Any:
    """A scripted ReAct model as a pure function of the request (so any worker, in any order, answers alike):
    search for the film, then its credits, then the answer; tasks without those tools get an answer at once."""
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
    search = next((t for t in tools if "search" in t and "movie" in t), None)
    credits = next((t for t in tools if "credits" in t), None)
    final = next((t for t in tools if "final" in t), "final_answer")
    if search and credits and done == 0:
        call = (search, {"query": "The Dark Knight"})
    elif search and credits and done == 1:
        call = (credits, {"movie_id": 155})
    else:
        call = (final, {"answer": "Heath Ledger played the Joker."})
    return {"role": "assistant", "content": f"step {done}", "tool_calls": [
        {"id": f"call_{done}", "type": "function", "function": {"name": call[0], "arguments": json.dumps(call[1])}}]}


def _without_run_facts(value: Any) -> Any:
    """A document without its wall-clock figures (``wall_seconds``, the events' times)."""
    if isinstance(value, dict):
        return {k: _without_run_facts(v) for k, v in value.items()
                if "wall" not in k and k not in ("t", "time", "seconds", "latency", "started", "elapsed", "created",
                                                 "updated")}
    if isinstance(value, list):
        return [_without_run_facts(v) for v in value]
    return value


def _agent_dir(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in (".json", ".jsonl"):
            text = p.read_text()
            docs = [json.loads(x) for x in text.splitlines()] if p.suffix == ".jsonl" else json.loads(text)
            out[str(p.relative_to(root))] = _without_run_facts(docs)
    return out


def agent_config(**extra: Any) -> Any:
    from taskbench.agents import AgentEvalConfig, Budgets

    return AgentEvalConfig(env="restbench-tmdb", agents=["react"], model="openai-compatible/m", tools="gold",
                           limit=3, seeds=2, temperature=0.5, env_options={"task_set": "own"},
                           budgets=Budgets(max_steps=4), bootstrap=100, concurrency=2, unsafe_local=True, **extra)


def test_sharded_agents_eval_equals_a_local_run(tmp_path):
    from taskbench.agents import run_agents
    from taskbench.executors.agents import arun_agents_sharded

    srv = FaultServer(reply=react_reply).start()
    try:
        cache = str(tmp_path / "cache.sqlite")
        opts = {"max_retries": 0}
        local = run_agents(agent_config(), tmp_path / "local", cache=cache, base_url=srv.base_url,
                           model_options=opts)
        assert local.complete and local.episodes == 6
        asked = srv.count
        assert asked >= 6
        sharded = asyncio.run(arun_agents_sharded(agent_config(), tmp_path / "sharded", executor=LocalExecutor(3),
                                                  shards=3, cache=cache, base_url=srv.base_url, model_options=opts))
        assert srv.count == asked  # every call answered from the shared cache
        assert sharded.complete and sharded.episodes == 6 and sharded.written == 6
        a, b = _agent_dir(tmp_path / "local"), _agent_dir(tmp_path / "sharded")
        assert sorted(a) == sorted(b)
        assert a == b
        successes = [r for r in a["episodes.jsonl"] if r.get("success")]
        assert successes and len(successes) < 6  # the script solves the Joker task only: a metric to compare
        assert not shard_dir(tmp_path / "sharded" / "episodes.jsonl").exists()
    finally:
        srv.stop()


class SpyExecutor(LocalExecutor):
    """LocalExecutor that remembers which jobs it was given (the job class of every shard)."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.jobs: list[str] = []

    async def amap(self, fn, calls, *, poll=None):
        self.jobs += [c[0].rsplit(":", 1)[-1] for c in calls if isinstance(c[0], str) and ":" in c[0]]
        return await super().amap(fn, calls, poll=poll)


@pytest.mark.slow
def test_run_with_an_executor_shards_every_stage_and_equals_a_local_run(tmp_path, monkeypatch):
    from taskbench.predict.runner import PredictOptions
    from taskbench.run import run_benchmark

    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    kwargs: dict[str, Any] = dict(models=["mock/echo"], datasets=["multimedia"], options=PredictOptions(limit=3),
                                  generate=3, agents=["react"], agent_tasks=["tmdb-own-02"], bootstrap=50, plots=False,
                                  cache=True)
    local = run_benchmark(tmp_path / "local", **kwargs)
    spy = SpyExecutor(2)
    sharded = run_benchmark(tmp_path / "sharded", executor=spy, **kwargs)
    assert local.status == sharded.status == "complete"
    assert sorted(set(spy.jobs)) == ["AgentsJob", "GenerateJob", "PredictJob"]
    assert spy.jobs.count("GenerateJob") == 2 and spy.jobs.count("PredictJob") == 2  # two shards each
    assert run_files(tmp_path / "sharded" / "generated") == run_files(tmp_path / "local" / "generated")
    assert _agent_dir(tmp_path / "sharded" / "agents") == _agent_dir(tmp_path / "local" / "agents")
    def scores(entries: Any) -> list[Any]:
        return [None if e.strict is None else e.strict.model_dump(mode="json") for e in entries]

    assert scores(sharded.entries) == scores(local.entries)
    assert [st.kind for st in sharded.stages] == ["generate", "agents"]


def test_sharded_generate_refuses_a_malformed_data_raw_line_before_any_model_call(tmp_path, mm):
    from taskbench.errors import InputError
    from taskbench.executors.generate import agenerate_sharded

    cache = str(tmp_path / "cache.sqlite")
    options = GenerateOptions(n=4, seed=2, concurrency=1)
    out = tmp_path / "sharded"
    asyncio.run(agenerate_sharded(mm, ModelConfig(spec="mock/echo", options={"cache": cache}), out, options,
                                  executor=LocalExecutor(2), shards=2))
    raw = out / "data_raw.json"
    lines = raw.read_text().splitlines()
    broken = json.loads(lines[1])
    broken["plan"] = "not a plan"
    raw.write_text("\n".join([lines[0], json.dumps(broken), *lines[2:]]) + "\n")
    before = raw.read_text()
    with pytest.raises(InputError, match=r"data_raw\.json:2: .*malformed"):
        asyncio.run(agenerate_sharded(mm, ModelConfig(spec="mock/echo", options={"cache": cache}), out,
                                      options.model_copy(update={"n": 6}), executor=LocalExecutor(2),
                                      shards=2))
    assert raw.read_text() == before  # the two new entries were never generated
