# mypy: disable-error-code="no-untyped-call,no-any-return"
# (this module extends llama-cpp-python's converter, whose methods carry no type hints)
"""JSON Schema -> llama.cpp grammar (GBNF), with two constructs llama-cpp-python's converter handles badly.

llama-cpp-python ships a JSON-Schema-to-GBNF converter (``llama_cpp.llama_grammar.SchemaConverter``). This module
subclasses it and changes two things, both standard JSON Schema that other backends (OpenAI-compatible servers
with guided decoding) read as they are:

- **Variable-length tuples.** ``{"type": "array", "prefixItems": [s0, s1, ...], "items": false, "minItems": m}``
  means "between m and len(prefixItems) items, item i valid against s_i". The stock converter turns every
  ``prefixItems`` into a fixed-length tuple; here it becomes ``"[" s0 ("," s1 ("," s2 ...)?)? "]"``, so the
  model may stop after any item from the m-th on, and must stop after the last.
- **Unions of objects with a common head.** ``anyOf`` over objects whose first properties are the same (same
  names, same schemas, all required) is compiled as the shared head followed by a union of the tails. The
  stock converter makes one alternative per object, and llama.cpp's sampler then advances every alternative
  in parallel while the shared part (e.g. a free-text step description) is written: with 40 tools, 40 times
  the grammar work per token. Factored, the union only costs anything once the tails differ.

- **Bounded strings with a first-character rule.** ``{"type": "string", "maxLength": n, "pattern": "^[^<]"}``
  (a pattern that is exactly ``^`` and one character class, with no end anchor: "starts with one of these")
  becomes the class followed by at most n - 1 characters. The stock converter drops ``maxLength`` when a
  ``pattern`` is present. The plan schema uses it so that free text can never pose as a ``<node-j>``.

Everything else is the stock converter. Pure (no model is loaded); llama-cpp-python must be installed.
"""

from __future__ import annotations

import json
import re
from typing import Any


def _converter_class() -> Any:
    from llama_cpp.llama_grammar import PRIMITIVE_RULES, SchemaConverter, _build_repetition

    class PlanSchemaConverter(SchemaConverter):  # type: ignore[misc, valid-type]
        def visit(self, schema: dict[str, Any], name: str) -> str:
            if _is_variable_tuple(schema):
                return self._variable_tuple(schema, name)
            first = _first_char_class(schema)
            if first is not None:
                char = self._add_primitive("char", PRIMITIVE_RULES["char"])
                rest = _build_repetition(char, 0, int(schema["maxLength"]) - 1)
                return self._add_rule(name or "root", rf'"\"" {first} {rest} "\"" space')
            if isinstance(schema.get("pattern"), str) and "\\" in schema["pattern"]:
                schema = {**schema, "pattern": _escapes_as_classes(schema["pattern"])}
            alternatives = schema.get("anyOf") or schema.get("oneOf")
            if isinstance(alternatives, list) and "$ref" not in schema:
                head = _common_head(alternatives)
                if head:
                    return self._factored_union(alternatives, head, name)
            return super().visit(schema, name)

        def _variable_tuple(self, schema: dict[str, Any], name: str) -> str:
            items = schema["prefixItems"]
            min_items = int(schema.get("minItems", 0))
            base = f"{name}{'-' if name else ''}tuple"
            rules = [self.visit(item, f"{base}-{i}") for i, item in enumerate(items)]
            body = ' "," space '.join(rules[:min_items])
            tail = ""
            for i in range(len(rules) - 1, min_items - 1, -1):
                sep = '"," space ' if i > 0 else ""
                tail = f"({sep}{rules[i]}{' ' + tail if tail else ''})?"
            inner = " ".join(part for part in (body, tail) if part)
            return self._add_rule(name or "root", f'"[" space {inner} "]" space')

        def _kv(self, prop: str, schema: dict[str, Any], name: str) -> str:
            value = self.visit(schema, f"{name}-{prop}")
            return f'{self._format_literal(json.dumps(prop))} space ":" space {value}'

        def _factored_union(self, alternatives: list[dict[str, Any]], head: list[str], name: str) -> str:
            first = alternatives[0]["properties"]
            base = name or "root"
            head_kvs = [self._kv(p, first[p], f"{base}-head") for p in head]
            tails = []
            for i, alt in enumerate(alternatives):
                rest = [p for p in alt["properties"] if p not in head]
                kvs = [self._kv(p, alt["properties"][p], f"{base}-{i}") for p in rest]
                tails.append(self._add_rule(f"{base}-tail-{i}", ' "," space '.join(kvs)))
            rule = '"{" space ' + ' "," space '.join(head_kvs)
            rule += ' "," space (' + " | ".join(tails) + ') "}" space'
            return self._add_rule(base, rule)

    return PlanSchemaConverter


_CLASS = re.compile(r"^\^\[(\^?)([^\]\\\"]+)\]$")


def _escapes_as_classes(pattern: str) -> str:
    """``pattern`` with each escaped punctuation character outside a class (``\\.``) written as a class (``[.]``).
    The stock converter copies ``\\.`` into a GBNF literal, where llama.cpp does not know the escape: the grammar
    fails to parse and the sampler crashes the process (SIGSEGV, seen with ``^[a-z]+\\.(wav|mp3)$``)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if not in_class and not nxt.isalnum():
                out.append("[\\]]" if nxt == "]" else "[\\\\]" if nxt == "\\" else
                           "[\\^]" if nxt == "^" else f"[{nxt}]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def _first_char_class(schema: dict[str, Any]) -> str | None:
    """The GBNF class of the first character for a bounded string with a ``^[...]`` pattern, else None."""
    if schema.get("type") != "string" or not isinstance(schema.get("maxLength"), int) or schema["maxLength"] < 1:
        return None
    m = _CLASS.match(str(schema.get("pattern", "")))
    if m is None:
        return None
    negated, chars = m.groups()
    # a JSON string character: never an unescaped quote, backslash or control character
    return "[^" + chars + '"' + "\\\\" + "\\x00-\\x1f]" if negated else f"[{chars}]"


def _is_variable_tuple(schema: dict[str, Any]) -> bool:
    items = schema.get("prefixItems")
    return (
        schema.get("type") in (None, "array")
        and isinstance(items, list)
        and bool(items)
        and schema.get("items") is False
        and int(schema.get("minItems", 0)) < len(items)
    )


def _closed_object(schema: Any) -> bool:
    return (
        isinstance(schema, dict)
        and schema.get("type") == "object"
        and isinstance(schema.get("properties"), dict)
        and schema.get("additionalProperties") is False
        and set(schema.get("required", ())) == set(schema["properties"])
    )


def _common_head(alternatives: list[Any]) -> list[str]:
    """The leading property names that every alternative shares with identical schemas (all alternatives
    closed objects with every property required), or [] when the union cannot be factored."""
    if len(alternatives) < 2 or not all(_closed_object(a) for a in alternatives):
        return []
    lists = [list(a["properties"].items()) for a in alternatives]
    head: list[str] = []
    for i in range(min(len(items) for items in lists)):
        key, schema = lists[0][i]
        if all(items[i][0] == key and items[i][1] == schema for items in lists[1:]):
            head.append(key)
        else:
            break
    # every member must have a tail after the head (the grammar is head "," (tail | tail | ...))
    return head if all(len(items) > len(head) for items in lists) else []


def schema_to_gbnf(schema: dict[str, Any]) -> str:
    """The GBNF grammar of a JSON Schema (see the module docstring for what differs from the stock
    converter). Raises whatever the converter raises on unsupported constructs."""
    converter = _converter_class()(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    resolved = converter.resolve_refs(json.loads(json.dumps(schema)), "stdin")
    converter.visit(resolved, "")
    return converter.format_grammar()


__all__ = ["schema_to_gbnf"]
