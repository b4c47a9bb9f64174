"""The API key is never printed or written, whatever a server echoes back (issue 24, point 1).

A loopback server (tests/fault_server.py) reads the ``Authorization`` header it was sent and puts the key back
in every place a body can carry it: a JSON 5xx error message, a plain-text 5xx body where the key straddles the
point error texts are cut, a 200 body without choices that echoes the request headers as JSON, a refusal, a 4xx,
a 429, and the masked prefix some APIs print ("sk-abc****xyz"). No 4-character prefix of the key, and no
8-character piece of it, may reach an error, a log record, stderr or a file. The key has no well-known prefix, so
only the known value finds it; :func:`redact` also finds key-shaped text whose value it does not know.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from cli_runner import run as cli
from fault_server import FaultServer
from taskbench.errors import ModelError
from taskbench.llm import get_model
from taskbench.llm.base import ProviderRequest
from taskbench.llm.providers.openai import aiohttp_available
from taskbench.llm.redact import clip, redact

_NO_AIOHTTP = pytest.mark.skipif(not aiohttp_available(), reason="openai[aiohttp] not installed")
TRANSPORTS = ["httpx", pytest.param("aiohttp", marks=_NO_AIOHTTP), pytest.param("native", marks=_NO_AIOHTTP)]

KEY = "tbQ7xLw2Rk9Mv4Np8Zs3Ty6Uc1Hd5Jf0Gb"


def _key(headers: dict[str, str]) -> str:
    return headers.get("authorization", "").removeprefix("Bearer ")


def leaks(text: str | bytes) -> list[str]:
    """The pieces of KEY found in ``text``: its 4-character prefix, or any 8 characters of it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    pieces = [KEY[:4]] + [KEY[i:i + 8] for i in range(len(KEY) - 7)]
    return [p for p in pieces if p in text]


ECHOES = {
    "json-5xx": ("status", 500, {}, f"invalid api key {KEY} for this model"),
    "text-5xx-straddling-the-cut": ("raw", 502, lambda h: "x" * 290 + " " + _key(h) + " end"),
    "200-headers-echoed": ("raw", 200, lambda h: json.dumps(
        {"error": {"code": "bad"}, "pad": "y" * 120, "headers": {"authorization": h.get("authorization")}}),
        "application/json"),
    "200-top-level-key": ("raw", 200, lambda h: json.dumps({"detail": "z" * 170, "key": _key(h)}),
                          "application/json"),
    "masked-prefix": ("status", 503, {}, f"Incorrect API key provided: {KEY[:6]}********{KEY[-4:]}"),
    "html-5xx": ("raw", 500, lambda h: f"<html><pre>Authorization: {h.get('authorization')}</pre></html>",
                 "text/html"),
    "429": ("status", 429, {"Retry-After": "0"}, f"slow down, {KEY}"),
    "4xx": ("status", 400, {}, f"bad request from {KEY}"),
    "refusal": ("message", {"content": None, "refusal": f"I will not repeat {KEY}"}, "stop"),
}


@pytest.fixture
def server():
    srv = FaultServer().start()
    yield srv
    srv.stop()


def _model(server: FaultServer, transport: str, **options):
    base = dict(base_url=server.base_url, timeout=2.0, max_retries=0, retry_base_delay=0.01, cache=False,
                api_key_env="TB_SECRET_TEST_KEY", transport=transport, concurrency=2)
    base.update(options)
    return get_model("openai-compatible/m", **base)


def _run(model, coro):
    async def main():
        try:
            return await coro
        finally:
            await model.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("echo", list(ECHOES))
def test_no_piece_of_the_key_in_errors_or_logs(server, monkeypatch, caplog, capfd, transport, echo):
    monkeypatch.setenv("TB_SECRET_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    # two replicas of the same server, so the pool's take-out warning is logged too
    server.set_script([ECHOES[echo], ECHOES[echo]])
    model = _model(server, transport, base_url=[server.base_url, server.base_url.replace("127.0.0.1", "localhost")])
    request = ProviderRequest([{"role": "user", "content": "x"}], timeout=2.0)
    with pytest.raises(Exception) as raw:
        _run(model, model.provider.complete(request))
    server.set_script([ECHOES[echo]])
    model = _model(server, transport)
    with pytest.raises(ModelError) as err:
        _run(model, model.generate("q"))
    assert server.headers[-1]["authorization"] == f"Bearer {KEY}"  # the key was really sent
    out, errout = capfd.readouterr()
    blobs = {"provider error": str(raw.value), "model error": str(err.value), "stdout": out, "stderr": errout,
             "stats": json.dumps(model.provider.pool.stats())}
    blobs.update({f"log {i}": r.getMessage() for i, r in enumerate(caplog.records)})
    assert {k: leaks(v) for k, v in blobs.items() if leaks(v)} == {}
    assert str(err.value)  # still says what went wrong


def test_predict_writes_and_prints_no_piece_of_the_key(server, tmp_path, monkeypatch, capsys):
    """The whole command: every echo in turn, a retry each, failure records written, a summary printed."""
    monkeypatch.setenv("TB_SECRET_TEST_KEY", KEY)
    monkeypatch.setenv("TASKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    server.set_script([a for a in ECHOES.values() for _ in range(2)] * 3)
    out = tmp_path / "preds.jsonl"
    code, stdout, stderr = cli(capsys, "predict", "--data", "multimedia", "-m", "openai-compatible/m",
                               "--base-url", server.base_url, "--api-key-env", "TB_SECRET_TEST_KEY", "-o", str(out),
                               "--limit", "12", "-c", "2", "--max-retries", "1", "--max-tokens", "64",
                               "--timeout", "2", "--no-cache", "-q", "--free")
    assert code == 1, stderr  # some calls failed for good
    assert server.headers and all(h["authorization"] == f"Bearer {KEY}" for h in server.headers)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert any(r.get("error") for r in records)
    written = {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    found = {k: leaks(v) for k, v in {"stdout": stdout, "stderr": stderr, **written}.items() if leaks(v)}
    assert found == {}


@pytest.mark.parametrize(("text", "gone"), [
    ("HTTP 401: Incorrect API key provided: sk-proj-abcdEFGH1234ijklMNOP", "sk-proj-abcdEFGH"),
    ('{"authorization": "Bearer eyJhbGciOi.JIUzI1NiJ9.abc-def_ghi"}', "eyJhbGciOi"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNz"),
    ('{"x-api-key": "AbC123dEf456gHi789"}', "AbC123dEf"),
    ("https://host/v1?api_key=q1w2e3r4t5y6&x=1", "q1w2e3r4t5"),
    ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "ghp_16C7e42F"),
    ("invalid token: Zx81Lm02Qw93Er74Ty65Ui56Op47As38Dfe", "Zx81Lm02Qw"),
    ("a stray Zx81Lm02Qw93Er74Ty65Ui56Op47As38Df9 in text", "Zx81Lm02Qw"),
    ("password=hunter2hunter2", "hunter2h"),
])
def test_key_shaped_text_is_redacted_without_knowing_it(text, gone):
    assert gone not in redact(text)
    assert "***" in redact(text)


@pytest.mark.parametrize("text", [
    "HTTP 500: scripted 500", "max_tokens=1024 is above the limit", "connection error (ConnectionResetError)",
    "the prompt has 5000 tokens", "no answer within 2.0 s (timeout)", "invalid response body: no choices (list)",
    "request id 123e4567-e89b-12d3-a456-426614174000",
])
def test_ordinary_error_text_is_left_alone(text):
    assert redact(text) == text


def test_known_secret_pieces_and_cut_after_redaction():
    key = "Qm3Ns8Vb1Xc6Zl0Kj5Hg"
    assert leaks_of(redact(f"abc {key} def", [key]), key) == []
    assert leaks_of(redact(f"masked {key[:5]}****{key[-4:]}", [key]), key) == []
    assert leaks_of(redact(f"middle ..{key[3:13]}..", [key]), key) == []
    # the cut comes after redaction: a key straddling the limit leaves nothing
    text = "a" * 95 + " " + key
    for limit in range(90, 120):
        assert leaks_of(clip(text, limit, [key]), key) == [], limit
    assert clip("one\n  two\tthree", 100) == "one two three"
    assert len(clip("word " * 1000, 300)) <= 300


def leaks_of(text: str, key: str) -> list[str]:
    pieces = [key[:4]] + [key[i:i + 8] for i in range(len(key) - 7)]
    return [p for p in pieces if p in text]


def test_redaction_is_linear_on_a_huge_body():
    import time

    key = "Qm3Ns8Vb1Xc6Zl0Kj5Hg"
    body = ("Qm3N" + "x" * 60 + "Bearer " + "\n") * 20000
    t0 = time.monotonic()
    out = clip(body, 300, [key])
    assert time.monotonic() - t0 < 2.0
    assert "Qm3N" not in out

