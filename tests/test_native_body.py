"""The native transport's request bodies: the bytes equal ``json.dumps(body, ensure_ascii=False)`` whatever the
body holds, and a schema sent again (the same object) is not encoded again (encoding a 140 kB plan schema per
request was half of the client's CPU at the released size)."""

from __future__ import annotations

import json

import pytest

from taskbench.dataset.layout import load_dataset
from taskbench.llm.providers import native_http
from taskbench.llm.providers.native_http import BodyEncoder
from taskbench.predict.plan import plan_schema
from taskbench.run.resolve import resolve_data


def _plain(body):
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


@pytest.fixture(scope="module")
def schema():
    return plan_schema(load_dataset(resolve_data("multimedia")).library)


def _bodies(schema):
    msgs = [{"role": "user", "content": "Ünïcode \u2028 \"quotes\" \\ </script>"}]
    return [
        {"model": "m", "messages": msgs, "temperature": 0.0, "seed": 0,
         "response_format": {"type": "json_schema", "json_schema": {"name": "TaskPlan", "schema": schema,
                                                                      "strict": False}}},
        {"model": "m", "messages": msgs, "guided_json": schema, "max_tokens": 5},
        {"model": "m", "messages": msgs, "response_format": {"type": "json_object"}},
        {"model": "m", "messages": msgs, "tools": [{"type": "function", "function": {"name": "f"}}]},
        {"response_format": {"json_schema": {"schema": {"type": "object"}}}, "model": "key order kept"},
    ]


def test_the_bytes_equal_a_plain_encoding(schema):
    enc = BodyEncoder()
    for _ in range(2):  # the second time from the cache
        for body in _bodies(schema):
            assert enc.encode(body) == _plain(body)


def test_a_schema_sent_again_is_not_encoded_again(schema, monkeypatch):
    enc = BodyEncoder()
    body = _bodies(schema)[0]
    enc.encode(body)
    encoded: list[object] = []
    real = native_http._dumps

    def counting(value):
        encoded.append(value)
        return real(value)

    monkeypatch.setattr(native_http, "_dumps", counting)
    for _ in range(3):
        assert enc.encode(dict(body)) == _plain(body)
    assert not any(v is schema for v in encoded)
    # another schema object (even an equal one) is encoded on its own, and an edited copy gives its own bytes
    other = json.loads(json.dumps(schema))
    other["title"] = "Other"
    changed = {**body, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": other}}}
    assert enc.encode(changed) == _plain(changed) and any(v is other for v in encoded)


def test_the_cache_is_bounded():
    enc = BodyEncoder(size=2)
    schemas = [{"type": "object", "title": str(i)} for i in range(5)]
    for s in schemas:
        body = {"guided_json": s}
        assert enc.encode(body) == _plain(body)
    assert len(enc._cache) == 2 and [v[0] for v in enc._cache.values()] == schemas[-2:]
