"""get_model parsing, the lazy provider registry and its error messages."""

from __future__ import annotations

import sys

import pytest

from taskbench.errors import ConfigError, MissingDependencyError
from taskbench.llm import ProviderSpec, get_model, known_providers, parse_model_string, register_provider
from taskbench.llm.base import ProviderRequest
from taskbench.llm.registry import _PROVIDERS


def test_split_on_first_slash_only():
    assert parse_model_string("openai-compatible/Qwen/Qwen2.5-7B-Instruct") == (
        "openai-compatible",
        "Qwen/Qwen2.5-7B-Instruct",
    )
    assert parse_model_string("llamacpp/qwen2.5-coder-0.5b") == ("llamacpp", "qwen2.5-coder-0.5b")
    model = get_model("openai-compatible/Qwen/Qwen2.5-7B-Instruct", base_url="http://127.0.0.1:9/v1", cache=False)
    assert model.provider.model == "Qwen/Qwen2.5-7B-Instruct"
    assert model.name == "openai-compatible/Qwen/Qwen2.5-7B-Instruct"
    assert model.provider.identity()["base_url"] == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("bad", ["gpt-4o", "/model", "openai/", ""])
def test_malformed_model_strings(bad):
    with pytest.raises(ConfigError, match="provider/model"):
        get_model(bad)


def test_unknown_provider_names_the_known_ones():
    with pytest.raises(ConfigError) as err:
        get_model("antropic/claude")
    message = str(err.value)
    assert "'antropic'" in message
    for name in ("llamacpp", "mock", "openai", "openai-compatible"):
        assert name in message
    assert set(known_providers()) >= {"openai", "openai-compatible", "llamacpp", "mock"}


def test_registry_is_lazy_strings():
    assert _PROVIDERS["llamacpp"].target == "taskbench.llm.providers.llamacpp:LlamaCppProvider"
    assert all(":" in spec.target for spec in _PROVIDERS.values())
    import subprocess

    code = (
        "import sys, taskbench.llm; "
        "print(any(m in sys.modules for m in ('openai', 'llama_cpp', 'fastapi', 'taskbench.llm.providers.openai')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_optional_package_gives_the_pip_line(tmp_path, monkeypatch):
    (tmp_path / "tb_fake_provider_mod.py").write_text(
        "import tb_definitely_missing_pkg\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    register_provider(
        "fakeprov",
        ProviderSpec("tb_fake_provider_mod:Fake", "fake-sdk", "fakeextra", ("tb_definitely_missing_pkg",)),
    )
    try:
        with pytest.raises(MissingDependencyError) as err:
            get_model("fakeprov/x")
        assert 'pip install "taskbench[fakeextra]"' in str(err.value)
        assert "fake-sdk" in str(err.value)
        register_provider("fakeprov", ProviderSpec("tb_fake_provider_mod:Fake", "fake-sdk", None,
                                                   ("tb_definitely_missing_pkg",)))
        with pytest.raises(MissingDependencyError, match="pip install fake-sdk"):
            get_model("fakeprov/x")
    finally:
        _PROVIDERS.pop("fakeprov", None)


def test_missing_llama_cpp_names_the_extra(monkeypatch):
    pytest.importorskip("taskbench.llm.providers.llamacpp", reason="the llamacpp provider is not built yet")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.delitem(sys.modules, "taskbench.llm.providers.llamacpp", raising=False)
    try:
        model = get_model("llamacpp/smollm2-135m", cache=False)
    except MissingDependencyError as err:
        assert 'pip install "taskbench[llamacpp]"' in str(err)
    else:  # the provider imports llama_cpp lazily; then the first call must say it
        with pytest.raises(MissingDependencyError, match=r"taskbench\[llamacpp\]"):
            model.generate_sync("x")


def test_option_errors(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        get_model("openai/gpt-4o-mini")
    with pytest.raises(ConfigError, match="MY_KEY_VAR"):
        get_model("openai/gpt-4o-mini", api_key_env="MY_KEY_VAR")
    with pytest.raises(ConfigError, match="api_key_env"):
        get_model("openai/gpt-4o-mini", api_key="sk-should-not-be-passed")
    with pytest.raises(ConfigError, match="base_url"):
        get_model("openai-compatible/m")
    with pytest.raises(ConfigError, match="guided_decoding must be one of"):
        get_model("openai-compatible/m", base_url="http://x/v1", guided_decoding="outlines")
    with pytest.raises(ConfigError, match="bad option"):
        get_model("openai-compatible/m", base_url="http://x/v1", tempreature=0.2)


def test_openai_request_arguments(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unit-test")
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
              "additionalProperties": False}
    req = ProviderRequest([{"role": "user", "content": "q"}], json_schema=schema, schema_name="Thing", timeout=9.0)
    body = get_model("openai/gpt-4o-mini", cache=False).provider.build_body(req)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Thing", "schema": schema, "strict": True},
    }
    # a schema beyond OpenAI's strict subset is sent unenforced instead of being refused with a 400
    for loose in ({**schema, "additionalProperties": True},
                  {**schema, "properties": {"a": {"type": "string", "maxLength": 9}}},
                  {"type": "array", "prefixItems": [{"type": "string"}], "items": False}):
        req2 = ProviderRequest([{"role": "user", "content": "q"}], json_schema=loose, schema_name="Thing")
        body2 = get_model("openai/gpt-4o-mini", cache=False).provider.build_body(req2)
        assert body2["response_format"]["json_schema"]["strict"] is False
    assert body["max_completion_tokens"] == 1024 and body["model"] == "gpt-4o-mini" and "timeout" not in body
    compat = get_model("openai-compatible/m", base_url="http://x/v1", guided_decoding="vllm",
                       extra_body={"top_k": 5}, cache=False).provider
    body = compat.build_body(req)
    assert body["guided_json"] == schema and body["top_k"] == 5 and body["max_tokens"] == 1024
    assert compat.identity()["guided_decoding"] == "vllm" and compat.identity()["extra_body"] == {"top_k": 5}
    plain = ProviderRequest([{"role": "user", "content": "q"}])
    assert "response_format" not in compat.build_body(plain)
