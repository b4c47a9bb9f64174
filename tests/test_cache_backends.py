"""The response cache's backends: SQLite (default), a shared directory of content-addressed files, Redis (a real
``redis-server`` on loopback), chosen by spec or ``$TASKBENCH_CACHE_URL``; Models on different backends answer
from the cache without a request."""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing as mp

import pytest

from fault_server import FaultServer
from redis_server import RedisServer
from taskbench.errors import ConfigError
from taskbench.llm import get_model
from taskbench.llm.cache import (
    CACHE_URL_ENV,
    CacheBackend,
    DirectoryCache,
    RedisCache,
    ResponseCache,
    cache_key,
    open_cache,
)

KEY = cache_key({"provider": "p", "model": "m", "base_url": None}, [{"role": "user", "content": "q"}], {}, None)
VALUE = {"text": "héllo", "prompt_tokens": 3, "completion_tokens": 1, "finish_reason": "stop", "extra": {},
         "latency": 0.25}


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    pytest.importorskip("redis", reason="the redis client is not installed (pip install 'taskbench[ray]')")
    if not RedisServer.available():
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    srv = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield srv.url
    srv.stop()


def test_open_cache_picks_the_backend_by_spec(tmp_path, monkeypatch):
    assert open_cache(False) is None and open_cache(None) is None
    sqlite = open_cache(tmp_path / "a.sqlite")
    assert isinstance(sqlite, ResponseCache) and sqlite.url == f"sqlite://{tmp_path / 'a.sqlite'}"
    assert isinstance(open_cache(f"sqlite://{tmp_path}/b.sqlite"), ResponseCache)
    d = open_cache(f"dir://{tmp_path}/shared")
    assert isinstance(d, DirectoryCache) and d.root == tmp_path / "shared" and (tmp_path / "shared").is_dir()
    assert open_cache(d) is d and isinstance(d, CacheBackend)
    monkeypatch.setenv(CACHE_URL_ENV, f"dir://{tmp_path}/from-env")
    assert isinstance(open_cache(True), DirectoryCache) and (tmp_path / "from-env").is_dir()
    monkeypatch.delenv(CACHE_URL_ENV)
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "home"))
    default = open_cache(True)
    assert isinstance(default, ResponseCache) and default.path == tmp_path / "home" / "llm-cache.sqlite"
    with pytest.raises(ConfigError, match="unknown response cache 'ftp://x'"):
        open_cache("ftp://x")
    for c in (sqlite, d, default):
        c.close()


def test_directory_cache_round_trip_and_no_temporary_files(tmp_path):
    cache = DirectoryCache(tmp_path / "c")
    assert cache.get(KEY) is None and len(cache) == 0
    cache.put(KEY, VALUE, model="p/m")
    assert cache.get(KEY) == VALUE and len(cache) == 1
    files = [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    assert [p.name for p in files] == [f"{KEY}.json"] and files[0].parent.name == KEY[:2]
    cache.put(KEY, {**VALUE, "text": "second"})  # last writer wins
    assert cache.get(KEY)["text"] == "second" and len(cache) == 1
    with pytest.raises(ValueError, match="hex digests"):
        cache.get("../../etc/passwd")
    cache.clear()
    assert len(cache) == 0


def test_directory_cache_unreadable_file_is_a_miss(tmp_path, caplog):
    cache = DirectoryCache(tmp_path)
    cache.put(KEY, VALUE)
    path = tmp_path / KEY[:2] / f"{KEY}.json"
    path.write_text(path.read_text()[:10])  # as a non-atomic file system could leave it
    with caplog.at_level(logging.WARNING, logger="taskbench.llm.cache"):
        assert cache.get(KEY) is None
    assert "does not parse" in caplog.text


def _dir_writer(root: str, worker: int, n: int) -> None:
    cache = DirectoryCache(root)
    for i in range(n):
        key = cache_key({"w": i % 7}, [], {}, None)  # the 3 processes write the same 7 keys over and over
        cache.put(key, {"text": f"answer {i % 7}", "pad": "x" * 5000, "by": worker})
        got = cache.get(key)
        assert got is not None and got["text"] == f"answer {i % 7}", got


def test_directory_cache_many_processes_same_keys(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_dir_writer, args=(str(tmp_path), w, 40)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    cache = DirectoryCache(tmp_path)
    assert len(cache) == 7
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_redis_cache_round_trip_shared_by_clients(redis_url):
    a, b = RedisCache(redis_url, prefix="t1:"), RedisCache(redis_url, prefix="t1:")
    a.clear()
    assert a.get(KEY) is None
    a.put(KEY, VALUE, model="p/m")
    assert b.get(KEY) == VALUE and len(b) == 1
    other = RedisCache(redis_url, prefix="t2:")  # another prefix is another cache
    assert other.get(KEY) is None
    b.clear()
    assert len(a) == 0
    for c in (a, b, other):
        c.close()


def test_redis_cache_bad_url_and_outage(tmp_path, caplog):
    pytest.importorskip("redis")
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    from redis_server import free_port

    with pytest.raises(ConfigError, match="cannot reach the Redis server"):
        RedisCache(f"redis://127.0.0.1:{free_port()}/0", timeout=1)
    srv = RedisServer(tmp_path).start()
    cache = RedisCache(srv.url, timeout=1)
    cache.put(KEY, VALUE)
    assert cache.get(KEY) == VALUE
    srv.stop()
    with caplog.at_level(logging.WARNING, logger="taskbench.llm.cache"):
        assert cache.get(KEY) is None  # an outage is a miss, not an error
        cache.put(KEY, VALUE)
    assert "get failed" in caplog.text and "put failed" in caplog.text
    cache.close()


def test_redis_password_never_shown(redis_url):
    from taskbench.llm.cache import _without_password

    assert _without_password("redis://user:s3cretpw@10.1.2.3:6380/1") == "redis://user:***@10.1.2.3:6380/1"
    assert _without_password(redis_url) == redis_url


@pytest.fixture
def server():
    srv = FaultServer().start()
    yield srv
    srv.stop()


def _ask(spec: str, base_url: str, cache: object, prompt: str):
    async def main():
        model = get_model(spec, base_url=base_url, cache=cache, max_retries=0)
        try:
            out = await model.generate(prompt)
            return out, repr(model)
        finally:
            await model.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("backend", ["sqlite", "dir", "redis"])
def test_models_share_answers_through_each_backend(backend, server, tmp_path, request):
    spec = {"sqlite": f"sqlite://{tmp_path}/c.sqlite", "dir": f"dir://{tmp_path}/c"}.get(backend)
    if backend == "redis":
        spec = request.getfixturevalue("redis_url")
        open_cache(spec).clear()
    first, shown = _ask("openai-compatible/m", server.base_url, spec, "what?")
    again, _ = _ask("openai-compatible/m", server.base_url, spec, "what?")  # a second Model, as on another worker
    assert server.count == 1
    assert not first.usage.cached and again.usage.cached
    assert (again.text, again.latency, again.usage.prompt_tokens) == (first.text, first.latency, 11)
    assert json.loads(again.text) == {"echo": "what?", "n": 1}
    assert spec.split("://")[0] in shown


def test_cache_url_env_reaches_models(server, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_URL_ENV, f"dir://{tmp_path}/envcache")
    _ask("openai-compatible/m", server.base_url, True, "x")
    assert len(DirectoryCache(tmp_path / "envcache")) == 1
