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
- :func:`parse_tool_output` splits an answer into text and calls.
"""

from __future__ import annotations

import json
import re
from typing import Any

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)


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
        conv: Any = SchemaConverter(prop_order={"name": 0, "arguments": 1}, allow_fetch=False, dotall=False,
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
                call = {"name": fn.get("name"), "arguments": _args_object(fn.get("arguments"))}
                parts.append(f"{CALL_OPEN}\n{json.dumps(call, ensure_ascii=False)}\n{CALL_CLOSE}")
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


__all__ = ["parse_tool_output", "render_messages", "template_knows_tools", "tool_grammar"]
