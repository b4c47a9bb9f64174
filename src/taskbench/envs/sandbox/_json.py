"""JSON that comes out of the sandbox (tool calls, the result): bounded before it is parsed, made safe after.

- :func:`count_values` counts the values of a JSON text without parsing it, so that a cap on what the host builds
  holds before any Python object exists (1 MB of ``{},`` is 250,000 dicts, about 16 MB, when parsed).
- :func:`clean` replaces each lone surrogate (from a ``"\\ud800"`` escape, or raw surrogate bytes) with U+FFFD:
  a string the code made cannot then break whatever encodes it as UTF-8 later (pydantic's JSON, a tool handler,
  a terminal).
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")  # an escaped or a raw surrogate


def count_values(data: bytes, cap: int | None = None) -> int:
    """How many values the JSON text ``data`` holds: each array and object, and each element of one (an object's
    keys not counted). Exact for valid JSON, and for any other text a number that bounds what parsing it could
    build; linear in the text, with bytes methods only, without building any of the values. With ``cap``, a text
    that is over it by its strings alone (many tiny strings, the slow case) is found without splitting it, and
    counted as ``cap + 1``."""
    # at most the count: the strings that are not keys (a quote after a backslash may be escaped: not counted)
    if cap is not None and (data.count(b'"') - data.count(b'\\"')) // 2 - data.count(b":") > cap:
        return cap + 1
    # escaped backslashes first, then escaped quotes: what is left of "..." holds no quote
    bare = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"0".join(bare.split(b'"')[::2])  # each string becomes one scalar, whatever it holds
    outside = outside.translate(None, b" \t\n\r")
    opened = outside.count(b"[") + outside.count(b"{")
    empty = outside.count(b"[]") + outside.count(b"{}")  # no element: its brackets must not count one
    return 1 + outside.count(b",") + opened - empty  # the top value, and the elements of every container


def may_hold_surrogates(data: bytes | str) -> bool:
    """Whether JSON text (or a parsed string) may hold a lone surrogate; False means it holds none."""
    if isinstance(data, str):
        return _SURROGATE.search(data) is not None or "\\u" in data
    return _MAYBE_SURROGATE.search(data) is not None


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def clean(value: Any) -> Any:
    """A JSON value with each lone surrogate in its strings and keys replaced by U+FFFD (the value is nested at
    most as deep as the caller checked)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): clean(v) for k, v in value.items()}
    return value


__all__ = ["clean", "clean_text", "count_values", "may_hold_surrogates"]
