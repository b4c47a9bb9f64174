"""Tool calling for the embedded llama.cpp provider: prompts, grammars and parsing (pure, no model).

The model answers a tool call the way Qwen2.5's chat template teaches it::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

and a llama.cpp grammar makes that the only thing it *can* write: the tool name comes from the offered tools,
and the arguments follow that tool's own JSON Schema (one grammar alternative per tool), so even a 0.5B model
never emits a malformed call. Only the token limit can cut a call short; the Model wrapper then reports it.

- :func:`tool_grammar` builds the GBNF text for a tool choice: ``required`` or a named tool (a call is the
  whole answer), or ``auto`` (a call, or free text that does not start with ``<``, ``{``, ``[``, a code fence or blank space).
- :func:`render_messages` prepares the messages for the GGUF chat template: templates that know tools (Qwen2.5)
  get ``tools=`` and assistant calls with object arguments; templates that do not (SmolLM2) get the tools and the
  call format described in the system message, calls written back as ``<tool_call>`` text and results as
  ``<tool_response>`` user turns.
- :func:`render_prompt` is the whole prompt text the provider completes (:func:`render_messages`, then the chat
  template), and :func:`answer_text` the text a model writes for an assistant turn under the provider's grammar.
  The provider and the trainer of students (``taskbench.distill.train.encode``) both use them, so a student is
  trained on the prompt it sees at inference, token for token.
- :func:`parse_tool_output` splits an answer into text and calls.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jinja2 import BaseLoader
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
# the properties a tool call's grammar puts first, in this order, in every object (tool_grammar's prop_order)
_PROP_ORDER = {"name": 0, "arguments": 1}


def template_knows_tools(template: str | None) -> bool:
    """True when a chat template renders ``tools`` and ``tool_call`` turns itself (Qwen2.5, Llama 3.1, ...)."""
    return bool(template) and "tools" in template and "tool_call" in template  # type: ignore[operator]


def _call_schema(name: str, parameters: Any) -> dict[str, Any]:
    args = parameters if isinstance(parameters, dict) and parameters else {"type": "object"}
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": args},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def _rules(schema: dict[str, Any], rule: str) -> str | None:
    """GBNF rules for ``schema`` with its top rule called ``rule`` (None when llama.cpp cannot convert it)."""
    from llama_cpp.llama_grammar import SchemaConverter

    try:
        conv: Any = SchemaConverter(prop_order=dict(_PROP_ORDER), allow_fetch=False, dotall=False,
                                    raw_pattern=False)  # type: ignore[no-untyped-call]
        resolved = conv.resolve_refs(schema, "tool")
        conv.visit(resolved, rule)
        return str(conv.format_grammar())
    except Exception:  # the converter raises bare exceptions for constructs it does not support
        return None


def tool_grammar(tools: list[dict[str, Any]], choice: Any) -> str:
    """GBNF for an answer to a tool call request (``tools`` in OpenAI's format, ``choice`` as sent)."""
    fns = [t["function"] for t in tools if isinstance(t.get("function"), dict)]
    if isinstance(choice, dict):
        wanted = (choice.get("function") or {}).get("name")
        fns = [f for f in fns if f.get("name") == wanted] or fns
    alternatives = []
    for fn in fns:
        schema = _call_schema(fn["name"], fn.get("parameters"))
        # a tool whose argument schema llama.cpp cannot convert still gets a call with any JSON object
        if _rules(schema, "probe") is None:
            schema = _call_schema(fn["name"], {"type": "object"})
        alternatives.append(schema)
    text = _rules({"anyOf": alternatives} if len(alternatives) > 1 else alternatives[0], "tool-call")
    if text is None:  # pragma: no cover - every alternative converted on its own
        raise ValueError("cannot build a grammar for these tools")
    call = f'"{CALL_OPEN}\\n" tool-call "\\n{CALL_CLOSE}"'
    if choice == "auto":
        # free text may not start like a call written some other way (a JSON object, a code fence): a model that
        # means to call a tool then has to write the real call
        root = f"root ::= {call} | free-text\nfree-text ::= [^<{{`\\[ \\t\\n] [^\\x00]*"
    else:
        root = f"root ::= {call}"
    return root + "\n" + text


def _args_object(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (json.JSONDecodeError, RecursionError):
            return arguments
    return arguments


def format_call(name: str | None, arguments: Any) -> str:
    """One call as the model writes it (and as templates without tools show it): ``<tool_call>``, a newline,
    ``{"name": ..., "arguments": {...}}`` (JSON with ``", "`` and ``": "`` separators), a newline,
    ``</tool_call>``."""
    call = {"name": name, "arguments": _args_object(arguments)}
    return f"{CALL_OPEN}\n{json.dumps(call, ensure_ascii=False)}\n{CALL_CLOSE}"


def _describe_tools(tools: list[dict[str, Any]]) -> str:
    lines = [
        "You can call functions to help with the user's request. The functions, as JSON signatures:",
        "<tools>",
        *(json.dumps(t.get("function", t), ensure_ascii=False) for t in tools),
        "</tools>",
        "To call a function, answer with exactly one JSON object holding its name and arguments inside "
        "<tool_call></tool_call> tags:",
        '<tool_call>\n{"name": "<function name>", "arguments": {<arguments as JSON>}}\n</tool_call>',
        "A function's result comes back inside <tool_response></tool_response> tags.",
    ]
    return "\n".join(lines)


def render_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, native: bool
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(messages, tools) to hand to the chat template; see the module docstring."""
    out: list[dict[str, Any]] = []
    if native:
        for m in messages:
            m = dict(m)
            if m.get("role") == "assistant" and m.get("tool_calls"):
                calls = []
                for c in m["tool_calls"]:
                    fn = dict(c.get("function") or {})
                    fn["arguments"] = _args_object(fn.get("arguments"))
                    calls.append({**c, "function": fn})
                m["tool_calls"] = calls
                m["content"] = m.get("content") or ""
            elif m.get("content") is None:
                m["content"] = ""
            out.append(m)
        return out, tools
    for m in messages:
        role = m.get("role")
        content = m.get("content") or ""
        if role == "assistant" and m.get("tool_calls"):
            parts = [content] if content else []
            for c in m["tool_calls"]:
                fn = c.get("function") or {}
                parts.append(format_call(fn.get("name"), fn.get("arguments")))
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            text = f"<tool_response>\n{content}\n</tool_response>"
            if out and out[-1]["role"] == "user" and out[-1]["content"].startswith("<tool_response>"):
                out[-1] = {"role": "user", "content": out[-1]["content"] + "\n" + text}
            else:
                out.append({"role": "user", "content": text})
        else:
            out.append({"role": role, "content": content})
    if tools:
        described = _describe_tools(tools)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + described}
        else:
            out.insert(0, {"role": "system", "content": described})
    return out, None

@dataclass(frozen=True)
class ChatFormat:
    """A chat template (a GGUF file's ``tokenizer.chat_template``) and the text of the special tokens it is
    rendered with."""

    template: str
    bos_token: str = ""
    eos_token: str = ""


class _SkipGenerationTag(Extension):
    """``{% generation %}...{% endgeneration %}`` (Hugging Face's marker of assistant text) renders its body."""

    tags = {"generation"}

    def parse(self, parser: Any) -> Any:
        next(parser.stream)  # the tag's name
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    # what chat templates expect of tojson (transformers' and llama-cpp-python's): plain json.dumps, where
    # Jinja's own filter would escape <, > and & for HTML
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise(message: str) -> None:
    raise ValueError(message)


@functools.lru_cache(maxsize=8)
def _compiled(template: str) -> Any:
    env = ImmutableSandboxedEnvironment(loader=BaseLoader(), trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_SkipGenerationTag, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    return env.from_string(template)


def offered_tools(tools: list[dict[str, Any]] | None, tool_choice: Any) -> list[dict[str, Any]] | None:
    """The tools a request puts into the prompt and the grammar: none when ``tool_choice`` is ``"none"``."""
    return tools if tools and tool_choice != "none" else None


def render_prompt(chat: ChatFormat, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
                  ) -> str:
    """The prompt text the provider completes: ``messages`` (OpenAI chat dicts, as the Model wrapper sends
    them) and ``tools`` (as :func:`offered_tools` leaves them) through :func:`render_messages`, then the chat
    template with the generation prompt. The template runs as transformers and llama-cpp-python run chat
    templates (sandboxed, ``trim_blocks``, ``lstrip_blocks``, loop controls, ``tojson`` without HTML escapes,
    ``raise_exception`` raising ValueError). The text holds the template's special tokens as text (a BOS the
    template writes included); the provider tokenises it with special tokens parsed and no BOS added."""
    msgs, template_tools = render_messages(messages, tools, template_knows_tools(chat.template))
    return str(_compiled(chat.template).render(
        messages=msgs, tools=template_tools, bos_token=chat.bos_token, eos_token=chat.eos_token,
        add_generation_prompt=True, raise_exception=_raise, functions=None, function_call=None, tool_choice=None,
        strftime_now=lambda fmt: datetime.now().strftime(fmt)))


def grammar_order(value: Any, schema: Any) -> Any:
    """``value`` (JSON) with the keys of its objects in the order the grammar of ``schema`` (llama.cpp's JSON
    Schema converter, with :func:`tool_grammar`'s property order) makes a model write them: ``name``, then
    ``arguments``, then the other required properties, then the optional ones, each group in the schema's order,
    then properties the schema does not list, as given. Objects without listed properties keep their order."""
    schema = schema if isinstance(schema, dict) else {}
    if isinstance(value, list):
        return [grammar_order(v, schema.get("items")) for v in value]
    if not isinstance(value, dict):
        return value
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return value
    listed = [k for _, k in sorted(enumerate(props), key=lambda ik: (_PROP_ORDER.get(ik[1], len(_PROP_ORDER)),
                                                                        ik[0]))]
    required = set(schema.get("required") or [])
    keys = [k for k in listed if k in required and k in value] + \
        [k for k in listed if k not in required and k in value] + [k for k in value if k not in props]
    extra = schema.get("additionalProperties")
    return {k: grammar_order(value[k], props[k] if k in props else extra) for k in keys}


def _tool_parameters(tools: list[dict[str, Any]], name: str) -> Any:
    for t in tools:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and fn.get("name") == name:
            params = fn.get("parameters")
            return params if isinstance(params, dict) and params else {"type": "object"}
    offered = ", ".join(str((t.get("function") or {}).get("name")) for t in tools if isinstance(t, dict))
    raise ValueError(f"a call to {name!r}, which is not among the offered tools ({offered})")


def answer_text(message: dict[str, Any], tools: list[dict[str, Any]] | None = None, tool_choice: Any = None
                ) -> str:
    """The text a model writes for ``message`` (an assistant turn, OpenAI format) at inference, where the
    provider offers ``tools`` (as :func:`offered_tools` leaves them) under ``tool_choice`` (as sent). Without
    tools: the content. A tool call: :func:`format_call` with the arguments' keys in :func:`grammar_order`,
    which is what :func:`tool_grammar` lets the model write. The model's end-of-turn token follows it.

    Raises ValueError (what is wrong) for a turn that grammar cannot produce: more than one call, text beside
    a call, a call to a tool not offered (or not the one ``tool_choice`` names), arguments that are not a JSON
    object, lack a required one or have one the tool's schema does not list (llama.cpp's converter allows
    unlisted properties only with ``additionalProperties`` true or a schema), or a text answer where the choice requires a call (anything but ``auto``)
    or that starts like a call written some other way."""
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("the answer's content is not a string")
    calls = message.get("tool_calls") or []
    if not tools:
        if calls:
            raise ValueError("the answer is a tool call, but the example offers no tools (give them in \"tools\")")
        return content or ""
    if not calls:
        if tool_choice != "auto":
            raise ValueError(f"the answer is text, but tool_choice {tool_choice!r} makes a call the whole answer")
        if not content or content[0] in "<{`[ \t\n":
            raise ValueError("the answer text is empty or starts with <, {, [, ` or blank space, which the "
                             "grammar's free text does not allow")
        return content
    if len(calls) > 1:
        raise ValueError(f"the answer makes {len(calls)} calls; the provider's grammar writes one call a turn")
    if content:
        raise ValueError("the answer has text beside its call; the provider's grammar writes the call alone")
    fn = calls[0].get("function") if isinstance(calls[0], dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise ValueError("the answer's call has no function name ({\"function\": {\"name\", \"arguments\"}})")
    name = fn["name"]
    wanted = (tool_choice.get("function") or {}).get("name") if isinstance(tool_choice, dict) else None
    if wanted is not None and wanted != name and any((t.get("function") or {}).get("name") == wanted
                                                     for t in tools):
        raise ValueError(f"the answer calls {name!r}, but tool_choice names {wanted!r}")
    params = _tool_parameters(tools, name)
    args = _args_object(fn.get("arguments") if fn.get("arguments") is not None else {})
    if not isinstance(args, dict):
        raise ValueError(f"the arguments of the call to {name!r} are not a JSON object")
    missing = [k for k in params.get("required") or [] if k not in args]
    if missing:
        raise ValueError(f"the call to {name!r} lacks the required argument(s) {', '.join(map(str, missing))}")
    extra = params.get("additionalProperties")
    if isinstance(params.get("properties"), dict) and params["properties"] and not (extra is True or
                                                                                  isinstance(extra, dict)):
        # llama.cpp's converter writes only the listed properties unless additionalProperties allows more
        unknown = [k for k in args if k not in params["properties"]]
        if unknown:
            raise ValueError(f"the call to {name!r} has argument(s) its tool does not take: {', '.join(unknown)}")
    return format_call(name, grammar_order(args, params))


def parse_tool_output(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(text outside the calls, calls as ``{"id", "name", "arguments"}``) from an answer.

    A call cut off before its closing tag is still returned, with whatever arguments text it has, so the Model
    wrapper can report it (it will not parse)."""
    calls: list[dict[str, Any]] = []
    if CALL_OPEN not in text:
        return text, calls
    for i, m in enumerate(_CALL_RE.finditer(text)):
        body = m.group(1).strip()
        name, arguments = "", body
        try:
            obj = json.loads(body)
        except (json.JSONDecodeError, RecursionError):
            found = re.search(r'"name"\s*:\s*"([^"]*)"', body)
            name = found.group(1) if found else ""
            args_at = body.find('"arguments"')
            colon = body.find(":", args_at) if args_at >= 0 else -1
            arguments = body[colon + 1:].strip() if colon >= 0 else ""
            if arguments.endswith("}") and arguments.count("{") < arguments.count("}"):
                arguments = arguments[:-1].rstrip()
        else:
            if isinstance(obj, dict):
                name = str(obj.get("name", ""))
                args = obj.get("arguments", obj.get("parameters", {}))
                arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        calls.append({"id": f"call_{i}", "name": name, "arguments": arguments})
    rest = _CALL_RE.sub("", text).strip()
    return rest, calls


__all__ = ["ChatFormat", "answer_text", "format_call", "grammar_order", "offered_tools", "parse_tool_output",
           "render_messages", "render_prompt", "template_knows_tools", "tool_grammar"]
