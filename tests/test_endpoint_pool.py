"""Many endpoints per model: the openai-compatible provider over a pool of loopback replicas (FaultServer),
load-balanced with a per-endpoint limit, failing over at once, taking a broken endpoint out and putting it back
after a health probe, with a cache identity that does not depend on the replicas."""

from __future__ import annotations

import asyncio
import time

import pytest

from fault_server import FaultServer
from taskbench.errors import ConfigError
from taskbench.llm import get_model
from taskbench.llm.cache import cache_key
from taskbench.llm.providers.pool import EndpointPool, parse_urls


@pytest.fixture
def servers(request):
    n, delay = getattr(request, "param", (3, 0.05))
    srvs = [FaultServer(delay=delay).start() for _ in range(n)]
    yield srvs
    for s in srvs:
        if s._thread.is_alive():
            s.stop()


def _pool_model(servers, **options):
    base = dict(base_url=[s.base_url for s in servers], cache=False, max_retries=2, retry_base_delay=0.01,
                timeout=5, health_cooldown=0.1)
    base.update(options)
    return get_model("openai-compatible/m", **base)


async def _fire(model, n: int, concurrency: int, on_answer=None):
    sem = asyncio.Semaphore(concurrency)
    outs = []

    async def one(i: int):
        async with sem:
            out = await model.generate(f"q{i}")
            outs.append(out)
            if on_answer is not None:
                await on_answer(len(outs))

    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await model.aclose()
    return outs


def test_parse_urls(tmp_path):
    f = tmp_path / "urls.txt"
    f.write_text("# replicas\nhttp://127.0.0.1:8001/v1\n\nhttp://127.0.0.1:8002/v1  # node 2\nhttp://127.0.0.1:8001/v1\n")
    assert parse_urls(f"@{f}") == ["http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"]
    assert parse_urls(["http://a/v1", "http://b/v1,http://c/v1"]) == ["http://a/v1", "http://b/v1", "http://c/v1"]
    assert parse_urls("http://a/v1") == ["http://a/v1"] and parse_urls(None) == []
    with pytest.raises(ConfigError, match="must start with http"):
        parse_urls("127.0.0.1:8000")
    with pytest.raises(ConfigError, match="cannot read the file of base URLs"):
        parse_urls(f"@{tmp_path / 'missing.txt'}")
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(ConfigError, match="no base URLs"):
        parse_urls(f"@{tmp_path / 'empty.txt'}")


def test_cache_identity_does_not_depend_on_the_replicas():
    def key(base_url):
        model = get_model("openai-compatible/m", base_url=base_url, cache=False)
        return cache_key(model.provider.identity(), [{"role": "user", "content": "q"}], {}, None)

    one = key("http://127.0.0.1:8001/v1")
    assert one != key("http://127.0.0.1:8002/v1")  # one server: its URL stays in the identity, as before
    pool = key(["http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"])
    assert pool == key(["http://127.0.0.1:8003/v1", "http://127.0.0.1:8001/v1", "http://127.0.0.1:8004/v1"])
    model = get_model("openai-compatible/m", base_url="http://127.0.0.1:1/v1,http://127.0.0.1:2/v1", cache=False)
    assert "http://127.0.0.1:2/v1" in repr(model.provider)


def test_requests_are_spread_over_the_replicas(servers):
    outs = asyncio.run(_fire(_pool_model(servers), 60, 12))
    assert len(outs) == 60 and all(o.usage.retries == 0 for o in outs)
    counts = [s.count for s in servers]
    assert sum(counts) == 60 and min(counts) >= 12, counts


@pytest.mark.parametrize("servers", [(2, 0.1)], indirect=True)
def test_concurrency_limit_per_endpoint(servers):
    outs = asyncio.run(_fire(_pool_model(servers, endpoint_concurrency=2, concurrency=16), 16, 16))
    assert len(outs) == 16
    assert [s.max_in_flight for s in servers] == [2, 2]


def test_failing_endpoint_fails_over_and_comes_back_after_the_probe(servers):
    a, b, c = servers
    a.set_script([("status", 503)])
    model = _pool_model(servers)

    async def main():
        try:
            out = await model.generate("first")  # the round-robin start lands on some endpoint...
            pool = model.provider.pool
            while not a.count:  # ...keep asking until A has seen (and failed) one
                out = await model.generate(f"again {a.count}")
            assert out.usage.retries == 0  # failed over inside the attempt: no retry, no backoff
            assert pool.endpoints[0].errors == 1
            # A is out: nothing goes there until its probe (GET /models) has answered
            deadline = time.monotonic() + 5
            while pool.endpoints[0].needs_probe and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert not pool.endpoints[0].needs_probe
            before = a.count
            await asyncio.gather(*(model.generate(f"after {i}") for i in range(9)))
            assert a.count > before  # back in the pool
        finally:
            await model.aclose()

    asyncio.run(main())


def test_pool_survives_a_replica_being_stopped_and_takes_it_back(servers):
    a, b, c = servers
    model = _pool_model(servers)
    pool = model.provider.pool
    seen: dict[str, int] = {}

    async def on_answer(done: int):
        if done == 20 and not seen:
            await asyncio.to_thread(b.stop)  # requests are in flight at B right now
            seen["b"] = b.count

    async def main():
        sem = asyncio.Semaphore(9)
        outs = []

        async def one(i: int):
            async with sem:
                outs.append(await model.generate(f"q{i}"))
                await on_answer(len(outs))

        try:
            await asyncio.gather(*(one(i) for i in range(90)))
            assert pool.endpoints[1].needs_probe  # B is out
            # B comes back on its port: the probe puts it back in the pool, and it gets requests again
            back = await asyncio.to_thread(lambda: FaultServer(port=b.port, delay=0.05).start())
            try:
                deadline = time.monotonic() + 10
                while pool.endpoints[1].needs_probe and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                more = await asyncio.gather(*(model.generate(f"z{i}") for i in range(12)))
                return outs, more, back.count
            finally:
                await asyncio.to_thread(back.stop)
        finally:
            await model.aclose()

    outs, more, back_count = asyncio.run(main())
    assert len(outs) == 90 and all(o.usage.retries == 0 for o in outs)  # none lost, none even retried
    assert {o.text for o in outs} == {f'{{"echo": "q{i}", "n": 1}}' for i in range(90)}
    assert b.count == seen["b"]  # nothing reached B once it was down
    assert a.count + c.count + b.count >= 90  # those in flight at B were sent again elsewhere
    assert len(more) == 12 and back_count >= 2


def test_all_endpoints_down_raises_for_the_retry_policy():
    from redis_server import free_port

    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    model = get_model("openai-compatible/m", base_url=urls, cache=False, max_retries=1, retry_base_delay=0.01,
                      timeout=2, health_cooldown=0.05)

    async def main():
        try:
            return await model.generate("x")
        finally:
            await model.aclose()

    from taskbench.errors import UnreachableError

    # nothing ever answered and both refused: not worth a retry (issue 22), one line naming both URLs
    with pytest.raises(UnreachableError, match="nothing is listening at .*" + urls[1].replace(".", r"\.")):
        asyncio.run(main())
    assert model.requests == 1  # one attempt, which tried both endpoints


def test_pool_picks_least_loaded_and_waits_for_a_slot():
    async def main():
        pool = EndpointPool(["http://a", "http://b"], limit=1)
        e1 = await pool.acquire()
        e2 = await pool.acquire()
        assert {e1.index, e2.index} == {0, 1}
        waiter = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0.02)
        assert not waiter.done()  # both at their limit
        pool.release(e2)
        got = await asyncio.wait_for(waiter, 1)
        assert got is e2
        # an endpoint taken out (no probe function: a pool without probes) is skipped while another is healthy
        # a 429 takes an endpoint out for its Retry-After: the other one serves meanwhile
        pool.release(e1, error="HTTP 429", probe=False, wait=10)
        assert not pool.endpoints[e1.index].healthy(time.monotonic())
        waiter = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0.02)
        assert not waiter.done()  # e2 is busy and e1 is out: wait rather than hit the busy one
        pool.release(got)
        assert await asyncio.wait_for(waiter, 1) is e2

    asyncio.run(main())


def test_take_out_warning_says_only_what_is_true(caplog):
    """One endpoint: nothing to take out of (the retry line says it all), so no warning at all; several endpoints
    without a probe: no "health probe" promised; with a probe: the probe's real delay."""
    import logging

    async def main():
        caplog.set_level(logging.INFO, logger="taskbench.llm.pool")
        single = EndpointPool(["http://a"], limit=4, probe=_never_alive)
        for _ in range(5):
            single.release(await single.acquire(), error="HTTP 500: boom")
        assert [r.getMessage() for r in caplog.records] == []
        unprobed = EndpointPool(["http://a", "http://b"], limit=4, cooldown=0.25)
        unprobed.release(await unprobed.acquire(), error="HTTP 500: boom")
        assert ["probe" in r.getMessage() for r in caplog.records] == [False]
        assert "back in 0.2 s" in caplog.records[0].getMessage()
        caplog.clear()
        probed = EndpointPool(["http://a", "http://b"], limit=4, cooldown=0.25, probe=_never_alive)
        probed.release(await probed.acquire(), error="HTTP 500: boom")
        assert [r.getMessage().split("; ")[-1] for r in caplog.records] == ["health probe in 0.2 s"]
        await probed.aclose()

    asyncio.run(main())


async def _never_alive(endpoint) -> bool:
    return False


def test_a_server_that_answered_then_refuses_is_retried_not_called_unreachable():
    """The fail-fast 'nothing is listening' is for a URL that never answered; a server that stops mid-run (a
    restart) is retried as any connection error."""
    from taskbench.errors import ModelError, UnreachableError

    server = FaultServer().start()
    model = get_model("openai-compatible/m", base_url=server.base_url, cache=False, max_retries=1,
                      retry_base_delay=0.01, timeout=2)

    async def main():
        try:
            await model.generate("x")
            server.stop()
            with pytest.raises(ModelError) as info:
                await model.generate("y")
            return info.value
        finally:
            await model.aclose()

    err = asyncio.run(main())
    assert not isinstance(err, UnreachableError) and "connection error" in str(err)
    assert model.requests == 3  # one answered, then two attempts (1 retry) on the stopped server
