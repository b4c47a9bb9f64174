"""The Model wrapper's logic with the scripted mock provider: retries, bounds, concurrency, accounting,
structured output, the sync API, the cache. (Real HTTP is in test_llm_faults.py and test_llm_serve.py.)"""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from taskbench.errors import ConfigError, ModelError, ModelRefusedError
from taskbench.llm import GenerationConfig, ProviderResponse, RetryPolicy, get_model
from taskbench.llm.base import TransientProviderError
from taskbench.llm.retry import call_with_retries
from taskbench.schema import TaskGraph


def run(coro):
    return asyncio.run(coro)


def fast(**options):
    options.setdefault("retry_base_delay", 0.001)
    options.setdefault("cache", False)
    return get_model("mock/test", **options)


def test_scripted_list_dict_and_callable():
    model = fast(responses=["a", "b"])
    assert [model.generate_sync("x").text for _ in range(2)] == ["a", "b"]
    with pytest.raises(ModelError, match="all 2 scripted responses were used"):
        model.generate_sync("x")
    model.close()
    model = fast(responses={"hi": "hello", "bye": {"k": 1}})
    assert model.generate_sync("bye").text == '{"k": 1}'
    assert model.generate_sync([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]).text == "hello"
    model.close()

    async def answer(request):
        await asyncio.sleep(0)
        return ProviderResponse(text=request.messages[-1]["content"].upper(), prompt_tokens=3, completion_tokens=2)

    model = fast(responses=answer)
    out = model.generate_sync("shout")
    assert out.text == "SHOUT" and out.usage.prompt_tokens == 3 and out.usage.completion_tokens == 2
    model.close()


def test_transient_failures_are_retried_and_counted():
    model = fast(responses=["ok"], failures=[429, 500, "timeout", "reset", "truncated"])
    out = model.generate_sync("x")
    assert out.text == "ok" and out.usage.retries == 5
    assert len(model.provider.requests) == 6 and model.requests == 6
    model.close()


def test_attempt_bound_gives_a_clear_error():
    model = fast(responses=["never"], failures=[502] * 10, max_retries=3, strict=False)
    with pytest.raises(ModelError) as err:
        model.generate_sync("x")
    assert "failed after 4 attempts" in str(err.value) and "HTTP 502" in str(err.value)
    assert len(model.provider.requests) == 4 and model.errors == 1 and model.calls == 0
    model.close()


def test_permanent_failure_is_not_retried():
    model = fast(responses=["never"], failures=[400], strict=False)
    with pytest.raises(ModelError, match="permanent"):
        model.generate_sync("x")
    assert len(model.provider.requests) == 1
    model.close()
    model = fast(responses=["never"], failures=[ValueError("boom")], strict=False)
    with pytest.raises(ModelError, match="ValueError: boom"):
        model.generate_sync("x")
    model.close()


def test_hanging_provider_times_out_and_is_retried():
    model = fast(responses=["late", "late"], delay=0.3, timeout=0.1, max_retries=1, max_total_seconds=5, strict=False)
    with pytest.raises(ModelError, match="timeout"):
        model.generate_sync("x")
    assert len(model.provider.requests) == 2
    model.close()


def test_backoff_is_exponential_full_jitter_and_honours_retry_after():
    policy = RetryPolicy(max_retries=5, base_delay=0.5, max_delay=4.0)
    assert [policy.delay(i, None, lambda: 1.0) for i in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert policy.delay(3, None, lambda: 0.0) == 0.0
    assert policy.delay(0, 7.0, lambda: 1.0) == 7.0  # Retry-After beats the backoff
    rng = random.Random(1)
    draws = [policy.delay(2, None, rng.random) for _ in range(200)]
    assert 0 <= min(draws) < 0.3 and 1.7 < max(draws) <= 2.0  # spread over [0, 2)


def test_retry_driver_with_fake_clock():
    now = [0.0]
    sleeps: list[float] = []

    async def sleep(s):
        sleeps.append(s)
        now[0] += s

    calls = []

    async def attempt(timeout):
        calls.append(timeout)
        raise TransientProviderError("busy", status=429, retry_after=2.0)

    policy = RetryPolicy(max_retries=10, max_total_seconds=5.0, base_delay=0.1)
    with pytest.raises(ModelError, match="would exceed the total time bound of 5 s"):
        run(call_with_retries(attempt, policy, timeout=10.0, sleep=sleep, clock=lambda: now[0], rand=lambda: 0.5))
    assert sleeps == [2.0, 2.0] and len(calls) == 3
    assert calls[0] == 5.0 and calls[1] == 3.0  # per-attempt timeout capped by the remaining budget


def test_concurrency_limit_holds():
    in_flight = 0
    peak = 0

    async def answer(request):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return "ok"

    model = fast(responses=answer, concurrency=4)

    async def main():
        return await asyncio.gather(*(model.generate(str(i)) for i in range(20)))

    outs = run(main())
    assert len(outs) == 20 and peak == 4
    assert model.calls == 20 and model.usage.completion_tokens == 20


def test_structured_output_parse_and_validation():
    good = {"task_steps": ["s"], "task_nodes": [{"task": "A", "arguments": ["x"]}], "task_links": []}
    model = fast(responses=[
        "Here you go:\n```json\n" + json.dumps(good) + "\n```",
        "no json here",
        '{"task_steps": "oops", "task_nodes": 5}',
    ])
    out = model.generate_sync("q", schema=TaskGraph)
    assert out.parsed == good and out.parse_error is None
    assert out.require_json() == good
    assert model.provider.requests[0].json_schema == TaskGraph.model_json_schema()
    assert model.provider.requests[0].schema_name == "TaskGraph"
    bad = model.generate_sync("q", schema=TaskGraph)
    assert bad.parsed is None and "no valid JSON" in bad.parse_error
    with pytest.raises(ModelRefusedError):
        bad.require_json()
    invalid = model.generate_sync("q", schema=TaskGraph)
    assert invalid.parsed == {"task_steps": "oops", "task_nodes": 5}
    assert invalid.parse_error.startswith("JSON does not fit the schema")
    model.close()


def test_default_mock_answers_a_schema_with_a_valid_instance():
    from taskbench.llm import task_graph_schema

    model = fast()
    schema = task_graph_schema(["Tool A", "Tool B"], "temporal")
    out = model.generate_sync("q", schema=schema)
    TaskGraph.model_validate(out.parsed)
    assert out.parsed["task_nodes"][0]["task"] == "Tool A"
    assert model.generate_sync("plain").text == "plain"
    model.close()


def test_generation_config_reaches_the_provider():
    model = fast(responses=["a", "b"], temperature=0.3, max_tokens=17, seed=5, stop="END")
    model.generate_sync("x")
    cfg = model.provider.requests[0].config
    assert (cfg.temperature, cfg.max_tokens, cfg.seed, cfg.stop) == (0.3, 17, 5, ("END",))
    model.generate_sync("x", config=GenerationConfig(temperature=1.0))
    assert model.provider.requests[1].config.temperature == 1.0
    model.close()


def test_cache_with_mock(tmp_path):
    path = tmp_path / "c.sqlite"
    model = fast(responses=["first", "second"], cache=path, strict=False)
    a = model.generate_sync("same")
    b = model.generate_sync("same")
    assert (a.text, b.text) == ("first", "first")
    assert len(model.provider.requests) == 1 and b.usage.cached and not a.usage.cached
    assert model.cache_hits == 1 and model.usage.prompt_tokens == 2
    model.close()


def test_sync_api_inside_a_running_loop():
    model = fast(responses=["x"])

    async def main():
        return model.generate_sync("q")  # blocks this loop, runs on the model's own thread

    assert run(main()).text == "x"
    model.close()


def test_model_config_errors():
    with pytest.raises(ConfigError):
        get_model("mock/x", concurrency=0)
    with pytest.raises(ConfigError):
        get_model("mock/x", max_total_seconds=0)
    with pytest.raises(ConfigError, match="bad option for the 'mock' provider"):
        get_model("mock/x", base_ur="typo")


def test_a_longer_attempt_timeout_is_not_cut_by_the_total_bound(monkeypatch):
    """--timeout 900 (the embedded models' default) was cut at 600 s: the whole-call bound stayed at 600."""
    from taskbench.llm.providers.mock import MockProvider

    long = get_model("mock/x", timeout=900.0, max_retries=0)
    assert long.retry_policy.max_total_seconds >= 900.0
    assert get_model("mock/x", timeout=300.0, max_retries=2).retry_policy.max_total_seconds >= 900.0
    assert get_model("mock/x").retry_policy.max_total_seconds == 600.0  # the default bound is kept
    # an explicit bound is the user's and is kept as given
    assert get_model("mock/x", timeout=900.0, max_total_seconds=30.0).retry_policy.max_total_seconds == 30.0
    # a provider whose own default attempt timeout is longer (llama.cpp: 900 s) gets a bound that fits it
    monkeypatch.setattr(MockProvider, "wrapper_defaults", {"timeout": 900.0, "max_retries": 0}, raising=False)
    assert get_model("mock/x").retry_policy.max_total_seconds >= 900.0
