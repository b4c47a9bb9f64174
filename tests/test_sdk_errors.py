"""The openai SDK's own error objects (issue 19 point 6): the fault tests' error bodies are written by us; here
the SDK itself turns each HTTP status into its exception class (its status -> class table, its message format,
its headers object), and the provider's mapping is checked on what the SDK really raises."""

from __future__ import annotations

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

from taskbench.errors import ModelError  # noqa: E402
from taskbench.llm.base import TransientProviderError  # noqa: E402
from taskbench.llm.providers.openai import _map_status_error  # noqa: E402

URL = "http://127.0.0.1:9/v1/chat/completions"


def _sdk_error(status: int, *, headers: dict[str, str] | None = None, body: object = None) -> Exception:
    client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    error = body if body is not None else {"error": {"message": f"status {status} from the server",
                                                      "type": "invalid_request_error", "param": None,
                                                      "code": None}}
    response = httpx.Response(status, json=error, headers=headers or {}, request=httpx.Request("POST", URL))
    exc = client._make_status_error_from_response(response)  # the SDK's own status -> class mapping
    client.close()
    return exc


@pytest.mark.parametrize(("status", "sdk_class", "retried"), [
    (400, "BadRequestError", False),
    (401, "AuthenticationError", False),
    (403, "PermissionDeniedError", False),
    (404, "NotFoundError", False),
    (409, "ConflictError", True),
    (422, "UnprocessableEntityError", False),
    (429, "RateLimitError", True),
    (500, "InternalServerError", True),
    (503, "InternalServerError", True),
])
def test_every_sdk_status_error_maps_to_retried_or_final(status, sdk_class, retried):
    exc = _sdk_error(status)
    assert type(exc).__name__ == sdk_class  # the SDK's class for the status, not ours
    mapped = _map_status_error(exc, "openai/gpt-4o-mini")
    assert isinstance(mapped, ModelError)
    assert isinstance(mapped, TransientProviderError) == retried, (status, mapped)
    assert f"HTTP {status}" in str(mapped) and f"status {status} from the server" in str(mapped)
    if status == 401:
        assert "api_key_env" in str(mapped)
    if status == 404:
        assert "model name and base_url" in str(mapped)


def test_retry_after_is_read_from_the_sdk_response_headers():
    for headers, want in (({"retry-after": "2"}, 2.0), ({"retry-after-ms": "1500"}, 1.5), ({}, None)):
        mapped = _map_status_error(_sdk_error(429, headers=headers), "openai/gpt-4o-mini")
        assert isinstance(mapped, TransientProviderError) and mapped.retry_after == want, headers


def test_a_key_in_the_sdk_message_is_redacted():
    secret = "sk-live-" + "abcd1234" * 4
    body = {"error": {"message": f"Incorrect API key provided: {secret}", "type": "invalid_request_error",
                      "param": None, "code": "invalid_api_key"}}
    mapped = _map_status_error(_sdk_error(401, body=body), "openai/gpt-4o-mini", (secret,))
    assert secret not in str(mapped) and "sk-live-abcd" not in str(mapped)
