"""Two Ray nodes on loopback, started as a user starts a cluster: ``ray start --head`` and ``ray start --address``,
each node with its own temp dir, one CPU and a custom resource of its own (``head``, ``node2``), both with Ray 2.x
token authentication (``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN_PATH``: the token file of this test, never
``~/.ray``). The drivers are separate processes joining by address, as ``taskbench ... --ray-address`` does.

- work lands on both nodes: predict shards and generate shards, each shard's Ray node recorded (the node id its
  worker reports), and the sharded generate directory equals a local run's byte for byte;
- the shared cache is shared across the nodes: predictions made on ``node2`` only (``resources={"node2": 1}``)
  are answered from the cache on the ``head`` only, with no request reaching the server, for ``dir://`` and, when
  ``redis-server`` is installed, ``redis://`` (a loopback Redis this test starts);
- ``node2``'s raylet SIGKILLed mid-shard loses nothing: the output equals a local run's, and at most the requests
  in flight at the kill are asked again.

Every Ray process is stopped by pid (each ``ray start`` runs in a session of its own; never ``ray stop``, which
would stop every Ray cluster on the machine), and the test checks that none is left. Marked slow; skipped only
when ray is not importable."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fault_server import FaultServer
from proc_sessions import session_members, stop_sessions
from redis_server import RedisServer, free_port
from run_files import run_files

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'taskbench[ray]')")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))

# A driver: joins the cluster, runs the passes it is given, prints one JSON line per pass. Each pass's executor
# records the Ray node every shard ran on (run_shard_in_worker returns it).
DRIVER = r"""
import asyncio, json, sys
from taskbench.executors.ray import RayExecutor

spec = json.loads(open(sys.argv[1]).read())


class Recording(RayExecutor):
    nodes: list = []

    async def amap(self, fn, calls, *, poll=None):
        out = await super().amap(fn, calls, poll=poll)
        self.nodes = [r["node"] for r in out]
        return out


async def one(p):
    ex = Recording(address=spec["address"], workers=p["workers"], resources=p.get("resources"))
    if p["kind"] == "predict":
        from taskbench.executors.predict import apredict_sharded
        from taskbench.llm.config import ModelConfig
        from taskbench.predict.runner import PredictOptions

        s = await apredict_sharded(p["data"], ModelConfig(spec="openai-compatible/m", options=p["model"]), p["out"],
                                   PredictOptions(concurrency=p["c"], max_tokens=64), executor=ex, shards=p["shards"])
        return {"nodes": ex.nodes, "cache_hits": s.cache_hits, "complete": s.complete, "written": s.written}
    from taskbench import bundled
    from taskbench.engine.generate import GenerateOptions, generate
    from taskbench.executors.generate import agenerate_sharded
    from taskbench.graph.build import graph_from_path
    from taskbench.llm import get_model
    from taskbench.llm.config import ModelConfig

    graph = graph_from_path(bundled.path("multimedia"))
    options = GenerateOptions(n=p["n"], seed=2, concurrency=2, dedup="drop")
    local = await asyncio.to_thread(generate, graph, get_model("mock/echo", cache=p["cache"]), p["local"], options,
                                    close_model=True)
    s = await agenerate_sharded(graph, ModelConfig(spec="mock/echo", options={"cache": p["cache"]}), p["out"], options,
                                executor=ex, shards=p["shards"])
    return {"nodes": ex.nodes, "complete": s.complete and local.complete, "written": s.written}


async def main():
    import ray

    for p in spec["passes"]:
        print(json.dumps(await one(p)), flush=True)
    print(json.dumps({"cluster": [n["NodeID"] for n in ray.nodes() if n["Alive"]]}), flush=True)

asyncio.run(main())
"""


class TwoNodes:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.sessions: list[int] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        token = work / "auth_token"
        from ray._private.authentication.authentication_token_generator import (
            generate_new_authentication_token,
        )

        token.write_text(generate_new_authentication_token())
        token.chmod(0o600)
        self.env = dict(os.environ)
        self.env.update({
            "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_USAGE_STATS_ENABLED": "0",
            "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT / "tests") + os.pathsep
            + os.environ.get("PYTHONPATH", ""),
            "TASKBENCH_CACHE": str(work / "sqlite-cache"),
        })
        self.env.pop("RAY_ADDRESS", None)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"

    def _ray_start(self, name: str, *args: str) -> None:
        cmd = [RAY, "start", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--temp-dir",
               str(self.work / f"ray-{name}"), "--resources", json.dumps({name: 1}), "--disable-usage-stats",
               "--dashboard-agent-listen-port", str(free_port()), "--metrics-export-port", str(free_port()),
               "--runtime-env-agent-port", str(free_port()), *args]
        log = (self.work / f"ray-start-{name}.log").open("wb")
        proc = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.sessions.append(proc.pid)
        self.procs.append(proc)
        code = proc.wait(120)
        log.close()
        if code != 0:
            raise RuntimeError(f"ray start ({name}) failed ({code}):\n"
                               + (self.work / f"ray-start-{name}.log").read_text()[-3000:])

    def start(self) -> TwoNodes:
        self._ray_start("head", "--head", "--port", str(self.port), "--include-dashboard", "false")
        self._ray_start("node2", "--address", self.address)
        return self

    def members(self, name: str) -> dict[int, str]:
        return session_members(self.sessions[["head", "node2"].index(name)])

    def driver(self, passes: list[dict], timeout: float = 240) -> list[dict]:
        spec = self.work / f"spec-{time.monotonic_ns()}.json"
        spec.write_text(json.dumps({"address": self.address, "passes": passes}))
        proc = subprocess.run([sys.executable, "-c", DRIVER, str(spec)], env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        assert proc.returncode == 0, proc.stderr[-4000:]
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    def stop(self) -> dict[int, str]:
        return stop_sessions(self.sessions)


def _ours(work: Path) -> list[str]:
    """Any process whose command line names this test's directory (Ray's node processes carry their temp dir)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if str(work) in cmd and state not in ("Z", "X"):
                out.append(f"{entry.name}: {cmd[:200]}")
    return out


@pytest.fixture(scope="module")
def nodes():
    # a short directory: Ray's socket paths under the temp dir must stay below 108 bytes (AF_UNIX)
    work = Path(tempfile.mkdtemp(prefix="tbnodes-", dir="/tmp"))
    cluster = TwoNodes(work)
    try:
        cluster.start()
        yield cluster
    finally:
        left = cluster.stop()
        stray = _ours(work)
        assert not left and not stray, f"Ray processes left after the test: {left} {stray}"
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def ids(nodes):
    """The node id of each node: a one-shard pass pinned to each node's resource reports where it ran."""
    from taskbench.run.resolve import resolve_data

    srv = FaultServer().start()
    try:
        base = {"kind": "predict", "data": str(resolve_data("multimedia")), "c": 4, "shards": 1, "workers": 1,
                "model": {"base_url": srv.base_url, "cache": False, "max_retries": 0}}
        got = nodes.driver([{**base, "out": str(nodes.work / f"id-{name}.jsonl"), "resources": {name: 1}}
                            for name in ("head", "node2")])
    finally:
        srv.stop()
    head, node2 = got[0]["nodes"][0], got[1]["nodes"][0]
    assert head and node2 and head != node2 and sorted(got[-1]["cluster"]) == sorted([head, node2])
    return {"head": head, "node2": node2}




def test_work_lands_on_both_nodes(nodes, ids, tmp_path):
    from taskbench.run.resolve import resolve_data

    srv = FaultServer(delay=0.1).start()
    try:
        data = str(resolve_data("multimedia"))
        cache = str(tmp_path / "gen-cache.sqlite")
        got = nodes.driver([
            {"kind": "predict", "data": data, "out": str(tmp_path / "p.jsonl"), "c": 2, "shards": 4, "workers": 2,
             "model": {"base_url": srv.base_url, "cache": False, "max_retries": 0}},
            {"kind": "generate", "n": 24, "cache": cache, "local": str(tmp_path / "gen-local"),
             "out": str(tmp_path / "gen-ray"), "shards": 4, "workers": 2},
        ])
    finally:
        srv.stop()
    predict, gen = got[0], got[1]
    assert predict["complete"] and predict["written"] == 30 and srv.count == 30
    assert len(predict["nodes"]) == 4 and set(predict["nodes"]) == set(ids.values()), (predict, ids)
    assert gen["complete"] and gen["written"] == 24
    assert len(gen["nodes"]) == 4 and set(gen["nodes"]) == set(ids.values()), (gen, ids)
    assert run_files(tmp_path / "gen-ray") == run_files(tmp_path / "gen-local")


def _cache_urls(tmp_path: Path) -> list[tuple[str, RedisServer | None]]:
    urls: list[tuple[str, RedisServer | None]] = [(f"dir://{tmp_path / 'shared-cache'}", None)]
    if RedisServer.available():
        redis = RedisServer(tmp_path).start()
        urls.append((redis.url, redis))
    return urls


def test_the_shared_cache_is_shared_across_nodes(nodes, ids, tmp_path):
    from taskbench.run.resolve import resolve_data

    data = str(resolve_data("multimedia"))
    caches = _cache_urls(tmp_path)
    try:
        for url, _ in caches:
            srv = FaultServer().start()
            try:
                model = {"base_url": srv.base_url, "cache": url, "max_retries": 0}
                base = {"kind": "predict", "data": data, "c": 4, "shards": 2, "workers": 1, "model": model}
                first, second = nodes.driver([
                    {**base, "out": str(tmp_path / f"{url[:3]}-node2.jsonl"), "resources": {"node2": 1}},
                    {**base, "out": str(tmp_path / f"{url[:3]}-head.jsonl"), "resources": {"head": 1}},
                ])[:2]
            finally:
                srv.stop()
            assert first["nodes"] == [ids["node2"]] * 2 and first["cache_hits"] == 0, (url, first)
            # the head answers every request from what node2 put in the cache: no request reaches the server
            assert second["nodes"] == [ids["head"]] * 2 and second["cache_hits"] == 30, (url, second)
            assert srv.count == 30, url
            assert ((tmp_path / f"{url[:3]}-head.jsonl").read_bytes()
                    == (tmp_path / f"{url[:3]}-node2.jsonl").read_bytes())
    finally:
        for _, redis in caches:
            if redis is not None:
                redis.stop()
    if not RedisServer.available():
        pytest.skip("dir:// shown shared; redis-server is not installed, so redis:// was not tried")


def test_a_killed_raylet_loses_nothing(nodes, ids, tmp_path):
    """Last in this module: it takes node2 down. SIGKILL node2's raylet while node2 writes a shard; Ray runs that
    shard again on the head, which resumes from the shard file."""
    from taskbench.executors import shard_dir
    from taskbench.llm.config import ModelConfig
    from taskbench.predict.runner import PredictOptions, predict_file
    from taskbench.run.resolve import resolve_data

    data = resolve_data("multimedia")
    cache = f"dir://{tmp_path / 'cache'}"
    out = tmp_path / "out.jsonl"
    srv = FaultServer(delay=0.25).start()
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"address": nodes.address, "passes": [
        {"kind": "predict", "data": str(data), "out": str(out), "c": 1, "shards": 2, "workers": 2,
         "model": {"base_url": srv.base_url, "cache": cache, "max_retries": 0}}]}))
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(spec)], env=nodes.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        sdir = shard_dir(out)
        victim_shard = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and victim_shard is None:
            for info in sdir.glob("shard-*.jsonl.worker") if sdir.is_dir() else []:
                try:
                    doc = json.loads(info.read_text())
                except (OSError, ValueError):
                    continue
                shard = info.with_name(info.name[: -len(".worker")])
                if doc.get("node") == ids["node2"] and shard.exists() and shard.read_bytes().count(b"\n") >= 3:
                    victim_shard = shard
            time.sleep(0.05)
        assert victim_shard is not None, "node2 never wrote a shard"
        raylets = [pid for pid, cmd in nodes.members("node2").items() if "/raylet" in cmd.split(" ")[0]]
        assert len(raylets) == 1, nodes.members("node2")
        written_before = victim_shard.read_bytes().count(b"\n")
        os.kill(raylets[0], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 0, stderr[-4000:]
        # Ray prints its own lines (the raylet's death) on the driver's stdout; ours are the JSON ones
        result = next(json.loads(x) for x in stdout.splitlines() if x.startswith("{"))
        assert result["complete"] and result["written"] == 30, result
        assert 3 <= written_before < 15  # killed mid-shard (each shard holds 15 ids)
        assert ids["head"] in result["nodes"]  # the lost shard ran again on the head
        # at most the one request in flight on node2 at the kill was asked again
        assert 30 <= srv.count <= 31, srv.count
        local = tmp_path / "local.jsonl"
        config = ModelConfig(spec="openai-compatible/m", options={"base_url": srv.base_url, "cache": cache,
                                                                  "max_retries": 0})
        summary = predict_file(data, config.open(), local, PredictOptions(concurrency=1, max_tokens=64),
                               close_model=True)
        assert summary.complete and summary.cache_hits == 30
        assert out.read_bytes() == local.read_bytes() and not sdir.exists()
        assert not any("/raylet" in c for c in nodes.members("node2").values())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        srv.stop()
