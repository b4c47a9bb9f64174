"""Secrets out of every text a server can put in an error: the known API key, and anything shaped like a key.

A server may echo what it was sent (the ``Authorization`` header, the key in an error message, a masked prefix
such as ``sk-abc****xyz``), and error texts travel to log lines, stderr, failure records and reports. So every
error text built from a server's answer goes through :func:`clip`: redacted *first*, then cut, because a key cut
in half by the cut is no longer the whole key a later redaction looks for.

:func:`redact` replaces

- every known secret (``Provider.secrets()``), every run of 4 or more characters that starts it (a prefix, as
  masked keys show) and every piece of 8 or more characters of it;
- text shaped like a credential, known or not: ``Bearer``/``Basic`` values, ``sk-...`` and other well-known key
  prefixes, values assigned to ``api_key``/``token``/``secret``/``password``/``authorization``-like names, and
  long mixed-case alphanumeric tokens (32+ characters with upper, lower and digits).

Ordinary error text (status codes, token counts, timeouts, UUIDs) is left alone. Pure and linear in the length of
the text; :func:`clip` looks at no more than :data:`MAX_SCAN` characters.

Answers that *succeed* carry secrets too: a server that puts the key in a 200 answer, an MCP tool that returns
the environment it was started with (``TOKEN=$TOKEN``). Those texts are data, so only the known secrets are
taken out of them (:func:`redact_known`, :func:`redact_value`, :class:`StreamRedactor`), never text that merely
looks like a key. The secrets the user passed in this process (API keys, ``$NAME`` values of ``mcp:`` specs) are
remembered (:func:`remember`, :func:`remembered`), so the writers of records and log lines can take them out
as a last guard wherever a value came from.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any

MASK = "***"
MAX_SCAN = 65536
"""Characters of an error body looked at; a key straddling this bound leaves fewer than 4 characters, or a prefix
that the prefix rule removes."""

_NAMED = r"(?:api[-_ ]?key|x-api-key|api[-_]?token|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|" \
         r"secret(?:[-_]?key)?|client[-_]?secret|password|passwd|private[-_]?key|session[-_]?token)"
_VALUE = r"[^\s\"',;&}<>)\]]"

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # an Authorization scheme and its credential
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)(?=[A-Za-z0-9._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{6,}"),
     r"\1\2" + MASK),
    (re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=\-]{1,}"), r"\1\2" + MASK),
    # well-known key prefixes: OpenAI/Anthropic sk-/pk-/rk-, GitHub, GitLab, Hugging Face, Slack, AWS
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{6,}"), MASK),
    (re.compile(r"\b(?:gh[pousr]_|github_pat_|glpat-|hf_|xox[abprs]-|AKIA|ASIA)[A-Za-z0-9_\-]{8,}"), MASK),
    # values given to credential-like names: api_key=..., "x-api-key": "...", password: ...
    (re.compile(r"(?i)(\b" + _NAMED + r"[\"']?\s*[:=]\s*[\"']?)" + _VALUE + r"{4,}"), r"\1" + MASK),
    # "authorization"/"token"/"auth" followed by a value that looks random (letters and digits)
    (re.compile(r"(?i)(\b(?:authorization|auth|token|credentials?|key)[\"']?\s*[:=]\s*[\"']?)"
                r"(?=" + _VALUE + r"*[0-9])(?=" + _VALUE + r"*[A-Za-z])" + _VALUE + r"{8,}"), r"\1" + MASK),
    # a long high-entropy token anywhere (a key echoed without context)
    (re.compile(r"(?<![A-Za-z0-9_\-])(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[a-z])(?=[A-Za-z0-9_\-]*[A-Z])"
                r"[A-Za-z0-9_\-]{32,}(?![A-Za-z0-9_\-])"), MASK),
]


def _known_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a run of 4+ characters starting ``secret`` or 8+ characters of it."""
    spans: list[tuple[int, int]] = []
    head = secret[:4]
    start = text.find(head)
    while start >= 0:
        end = start + 4
        while end - start < len(secret) and end < len(text) and text[end] == secret[end - start]:
            end += 1
        spans.append((start, end))
        start = text.find(head, end)
    for i in range(0, len(secret) - 7):
        piece = secret[i:i + 8]
        start = text.find(piece)
        while start >= 0:
            spans.append((start, start + 8))
            start = text.find(piece, start + 1)
    return spans


MIN_SECRET = 4
"""A secret shorter than this is not looked for (it would mask ordinary words)."""


def _merged_spans(text: str, secrets: Iterable[str]) -> list[list[int]]:
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET:
            spans.extend(_known_spans(text, secret))
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _mask(text: str, merged: list[list[int]]) -> str:
    parts, pos = [], 0
    for start, end in merged:
        parts += [text[pos:start], MASK]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def redact_known(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with the known ``secrets`` (and every run of 4+ characters starting one, and every piece of 8+
    characters of one) replaced by ``***``; nothing else is touched (for answers and tool results, which are
    data: text that only looks like a key stays)."""
    merged = _merged_spans(text, secrets)
    return _mask(text, merged) if merged else text


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with known ``secrets`` (and pieces of them) and credential-shaped values replaced by ``***``."""
    text = redact_known(text, secrets)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


MAX_DEPTH = 200
"""Nesting levels :func:`redact_value` walks; deeper values are replaced by ``***`` whole (they cannot be
checked, so they are not kept)."""


def redact_value(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON-like ``value`` (dicts, lists, strings, numbers) with :func:`redact_known` applied to every string
    in it, keys included; the same object when nothing in it held a secret."""
    keep = [s for s in secrets if s and len(s) >= MIN_SECRET]
    if not keep:
        return value
    return _walk(value, keep, 0)


def _walk(value: Any, secrets: list[str], depth: int) -> Any:
    if isinstance(value, str):
        return redact_known(value, secrets)
    if not isinstance(value, (dict, list, tuple)):
        return value
    if depth > MAX_DEPTH:
        return MASK
    if isinstance(value, dict):
        pairs = [(_walk(k, secrets, depth + 1), _walk(v, secrets, depth + 1)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    items = [_walk(v, secrets, depth + 1) for v in value]
    if all(a is b for a, b in zip(items, value, strict=True)):
        return value
    return type(value)(items)


class StreamRedactor:
    """Known secrets out of a text that arrives in pieces (a streamed answer): :meth:`feed` returns the text that
    is safe to pass on, holding back as many characters as the longest secret, so that a secret split across
    pieces is masked whole; :meth:`flush` returns the rest at the end."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = [s for s in secrets if s and len(s) >= MIN_SECRET]
        self.hold = max((len(s) for s in self.secrets), default=0)
        self._pending = ""

    def feed(self, piece: str) -> str:
        if not self.secrets:
            return piece
        self._pending += piece
        cut = len(self._pending) - self.hold
        if cut <= 0:
            return ""
        merged = _merged_spans(self._pending, self.secrets)
        for start, end in merged:  # never cut inside a secret: a span that starts before the cut ends in the text
            if start < cut < end:
                cut = start
        head, self._pending = self._pending[:cut], self._pending[cut:]
        return redact_known(head, self.secrets)

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return redact_known(rest, self.secrets)


_REMEMBERED: set[str] = set()
_LOCK = threading.Lock()


def remember(*secrets: str | None) -> None:
    """Remember secret values the user passed in this process (API keys read from the environment, ``$NAME``
    values of ``mcp:`` specs): :func:`remembered` gives them to the writers of records and log lines, which take
    them out of whatever they write. Values shorter than :data:`MIN_SECRET` characters are ignored."""
    with _LOCK:
        _REMEMBERED.update(s for s in secrets if s and len(s) >= MIN_SECRET)


def remembered() -> tuple[str, ...]:
    """Every secret :func:`remember` was given in this process, longest first."""
    with _LOCK:
        return tuple(sorted(_REMEMBERED, key=len, reverse=True))


def forget_all() -> None:
    """Forget every remembered secret (for tests)."""
    with _LOCK:
        _REMEMBERED.clear()


def clip(text: str, limit: int, secrets: Iterable[str] = ()) -> str:
    """``text`` on one line, redacted (:func:`redact`), then cut to ``limit`` characters: the order that keeps a
    key cut in half by the limit out."""
    return " ".join(redact(text[:MAX_SCAN], secrets).split())[:limit]


__all__ = ["MASK", "StreamRedactor", "clip", "forget_all", "redact", "redact_known", "redact_value", "remember",
           "remembered"]
