"""Retries, cache and secrets over real HTTP: the openai-compatible provider against a misbehaving loopback
server (tests/fault_server.py) that counts the requests it receives."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from fault_server import FaultServer
from taskbench.errors import ConfigError, ModelError
from taskbench.llm import ResponseCache, get_model
from taskbench.llm.base import ProviderRequest, TransientProviderError
from taskbench.llm.providers.openai import aiohttp_available

_NO_AIOHTTP = pytest.mark.skipif(not aiohttp_available(), reason="openai[aiohttp] not installed")
TRANSPORTS = ["httpx", pytest.param("aiohttp", marks=_NO_AIOHTTP), pytest.param("native", marks=_NO_AIOHTTP)]

SECRET = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def server():
    srv = FaultServer().start()
    yield srv
    srv.stop()


def _model(server: FaultServer, **options):
    base = dict(base_url=server.base_url, timeout=0.5, max_retries=6, retry_base_delay=0.01, cache=False)
    base.update(options)
    return get_model("openai-compatible/test-model", **base)


def _run(model, coro):
    async def main():
        try:
            return await coro
        finally:
            await model.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_fault_is_retried_then_succeeds(server, tmp_path, transport):
    server.set_script(
        [
            ("status", 429, {"Retry-After": "1"}),
            ("status", 500),
            ("hang", 3),
            ("truncate",),
            ("reset",),
            ("invalid_json",),
        ]
    )
    cache = ResponseCache(tmp_path / "c.sqlite")
    model = _model(server, cache=cache, transport=transport)
    assert model.provider.transport == transport
    t0 = time.monotonic()
    out = _run(model, model.generate("hello"))
    elapsed = time.monotonic() - t0
    assert server.count == 7  # six failures, then the answer
    assert out.text == '{"echo": "hello", "n": 1}'
    assert out.usage.retries == 6 and not out.usage.cached
    assert out.usage.prompt_tokens == 11 and out.usage.completion_tokens == 7
    assert elapsed >= 1.0 + 0.5  # waited the Retry-After and the hang's timeout
    assert model.requests == 7 and model.usage.retries == 6
    assert len(cache) == 1  # only the success was stored


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (("status", 429, {"Retry-After": "2"}), "HTTP 429"),
        (("status", 503), "HTTP 503"),
        (("hang", 3), "no answer within 0.3 s (timeout)"),
        (("truncate",), "connection error"),
        (("reset",), "connection error (ConnectionResetError"),
        (("invalid_json",), "invalid response body (JSONDecodeError"),
    ],
)
def test_fault_mapping_per_transport(server, transport, action, expected):
    """Each transport's exceptions map to the same retryable errors; a reset is not reported as a timeout (the
    SDK's aiohttp transport raises it as APITimeoutError)."""
    server.set_script([action])
    model = _model(server, transport=transport)
    request = ProviderRequest([{"role": "user", "content": "x"}], timeout=0.3)
    with pytest.raises(TransientProviderError) as err:
        _run(model, model.provider.complete(request))
    assert expected in str(err.value)
    assert "\n" not in str(err.value)
    if action[0] == "status" and action[1] == 429:
        assert err.value.status == 429 and err.value.retry_after == 2.0
    if action[0] != "hang":
        assert "timeout" not in str(err.value)


def test_transport_option(server, monkeypatch):
    auto = _model(server)  # openai-compatible: the bare aiohttp client by default
    assert auto.provider.transport == ("native" if aiohttp_available() else "httpx")
    assert auto.provider.identity() == _model(server, transport="httpx").provider.identity()  # not in the cache key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    official = get_model("openai/gpt-4o-mini", base_url=server.base_url, cache=False)
    assert official.provider.transport == ("aiohttp" if aiohttp_available() else "httpx")  # the SDK for openai/
    with pytest.raises(ConfigError, match="transport must be one of auto, native, aiohttp, httpx"):
        _model(server, transport="requests")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_compatible_servers_get_no_platform_headers(server, transport, monkeypatch):
    monkeypatch.setenv("TB_TEST_KEY", "k")
    model = _model(server, transport=transport, api_key_env="TB_TEST_KEY")
    _run(model, model.generate("x"))
    sent = server.headers[-1]
    assert sent["authorization"] == "Bearer k" and sent["content-type"] == "application/json"
    assert not any(k.startswith("x-stainless-") and k not in ("x-stainless-retry-count", "x-stainless-read-timeout")
                   for k in sent)
    # a base URL with a query string keeps it (the SDK merges the relative path)
    model = _model(server, transport=transport, base_url=server.base_url + "?api-version=1")
    out = _run(model, model.generate("y"))
    assert out.text == '{"echo": "y", "n": 1}'
    assert server.paths[-1] == "/v1/chat/completions?api-version=1"


def test_retry_after_is_honoured(server):
    server.set_script([("status", 429, {"Retry-After": "1"})])
    model = _model(server, retry_base_delay=0.001, retry_max_delay=0.001)
    t0 = time.monotonic()
    out = _run(model, model.generate("x"))
    assert time.monotonic() - t0 >= 1.0
    assert server.count == 2 and out.usage.retries == 1


def test_gives_up_after_the_attempt_bound_and_caches_nothing(server, tmp_path):
    server.set_script([("status", 503)] * 10)
    cache = ResponseCache(tmp_path / "c.sqlite")
    model = _model(server, max_retries=2, cache=cache)
    with pytest.raises(ModelError) as err:
        _run(model, model.generate("x"))
    assert server.count == 3
    message = str(err.value)
    assert "after 3 attempts" in message and "HTTP 503" in message and "max_retries=2" in message
    assert len(cache) == 0 and model.errors == 1
    # the failure was not cached: the same call goes to the server again (and now succeeds)
    server.set_script([])
    model2 = _model(server, cache=cache)
    out = _run(model2, model2.generate("x"))
    assert server.count == 4 and not out.usage.cached and len(cache) == 1


def test_total_time_bound_stops_before_a_long_retry_after(server):
    server.set_script([("status", 429, {"Retry-After": "30"})])
    model = _model(server, max_total_seconds=2.0)
    t0 = time.monotonic()
    with pytest.raises(ModelError, match="Retry-After of 30 s would exceed the total time bound of 2 s"):
        _run(model, model.generate("x"))
    assert time.monotonic() - t0 < 1.5
    assert server.count == 1


def test_timeouts_are_bounded_by_total_time(server):
    server.set_script([("hang", 5)] * 5)
    model = _model(server, timeout=0.4, max_total_seconds=1.0, max_retries=10)
    t0 = time.monotonic()
    with pytest.raises(ModelError, match="timeout"):
        _run(model, model.generate("x"))
    assert time.monotonic() - t0 < 2.0
    assert 2 <= server.count <= 4


def test_permanent_errors_are_not_retried(server):
    server.set_script([("status", 400), ("status", 401)])
    model = _model(server)
    with pytest.raises(ModelError, match="HTTP 400"):
        _run(model, model.generate("x"))
    assert server.count == 1
    model = _model(server)
    with pytest.raises(ModelError, match="HTTP 401.*api_key_env"):
        _run(model, model.generate("x"))
    assert server.count == 2


def test_cache_hit_makes_zero_requests_and_is_identical(server, tmp_path):
    path = tmp_path / "cache.sqlite"
    model = _model(server, cache=path, temperature=0.0)
    first = _run(model, model.generate([{"role": "user", "content": "same"}], schema={"type": "object"}))
    assert server.count == 1 and not first.usage.cached
    model = _model(server, cache=path, temperature=0.0)  # a new Model (as in a new process) on the same file
    second = _run(model, model.generate([{"role": "user", "content": "same"}], schema={"type": "object"}))
    assert server.count == 1  # counted at the server: no request
    assert second.usage.cached and model.cache_hits == 1 and model.requests == 0
    assert (second.text, second.parsed, second.finish_reason) == (first.text, first.parsed, first.finish_reason)
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (11, 7)
    # anything that changes the answer changes the key: messages, sampling, schema, base URL
    model = _model(server, cache=path, temperature=0.7)
    _run(model, model.generate([{"role": "user", "content": "same"}], schema={"type": "object"}))
    assert server.count == 2
    model = _model(server, cache=path)
    _run(model, model.generate([{"role": "user", "content": "same"}]))
    assert server.count == 3
    model = _model(server, cache=False)
    _run(model, model.generate([{"role": "user", "content": "same"}], schema={"type": "object"}))
    assert server.count == 4


def test_structured_output_request_shapes(server):
    schema = {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]}
    for mode, check in [
        ("response_format", lambda b: b["response_format"]["json_schema"]["schema"] == schema),
        ("vllm", lambda b: b["guided_json"] == schema and "response_format" not in b),
        ("sglang", lambda b: b["response_format"]["type"] == "json_schema"),
        ("json_object", lambda b: b["response_format"] == {"type": "json_object"} and "JSON Schema" in
         b["messages"][0]["content"]),
        ("none", lambda b: "response_format" not in b and b["messages"][0]["role"] == "system"),
    ]:
        model = _model(server, guided_decoding=mode)
        out = _run(model, model.generate("hi", schema=schema))
        assert check(server.requests[-1]), mode
        assert out.parsed == {"echo": "hi", "n": 1} and out.parse_error is None


def test_secret_never_leaks(server, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TB_TEST_SECRET_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    cache_path = tmp_path / "cache.sqlite"
    server.set_script([("status", 500), ("status", 401)])
    model = _model(server, api_key_env="TB_TEST_SECRET_KEY", cache=cache_path)
    with pytest.raises(ModelError) as err:
        _run(model, model.generate("a question"))
    model = _model(server, api_key_env="TB_TEST_SECRET_KEY", cache=cache_path)
    out = _run(model, model.generate("a question", schema={"type": "object"}))
    # the key was really sent...
    assert server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    # ...and appears nowhere we write or show
    blobs = [repr(model), repr(model.provider), str(model.provider.identity()), str(err.value), out.model_dump_json()]
    blobs += [r.getMessage() for r in caplog.records]
    assert all(SECRET not in blob for blob in blobs)
    assert "api_key_env='TB_TEST_SECRET_KEY'" in repr(model.provider)
    model.cache.close()
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}  # the SQLite file and its WAL/SHM
    assert any(b"a question" in data for data in files.values())  # the cached answer is really in there
    assert all(SECRET.encode() not in data for data in files.values())
    assert len(ResponseCache(cache_path)) == 1
    assert any("attempt 1 failed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_aclose_from_another_loop_closes_the_clients_on_theirs(server, transport):
    """Clients opened on a loop running in another thread are closed there, not skipped (no open session)."""
    import gc
    import warnings

    from taskbench._loop import LoopThread

    model = _model(server, transport=transport)
    thread = LoopThread("test-client-loop")
    try:
        out = thread.run(model.provider.complete(ProviderRequest([{"role": "user", "content": "x"}], timeout=5)))
        assert out.text
        clients = [c for ep in model.provider.pool.endpoints for c in ep.state["clients"]]
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            asyncio.run(model.provider.aclose())
            gc.collect()
        assert [str(w.message) for w in seen if "nclosed" in str(w.message)] == []
        closed = [getattr(c, "_session", None) for c in clients]
        if transport == "native":
            assert all(s.closed for s in closed)
        else:
            assert all(c.is_closed() for c in clients)
    finally:
        thread.stop()
