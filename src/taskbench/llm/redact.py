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
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with known ``secrets`` (and pieces of them) and credential-shaped values replaced by ``***``."""
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        if secret and len(secret) >= 4:
            spans.extend(_known_spans(text, secret))
    if spans:
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        parts, pos = [], 0
        for start, end in merged:
            parts += [text[pos:start], MASK]
            pos = end
        parts.append(text[pos:])
        text = "".join(parts)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def clip(text: str, limit: int, secrets: Iterable[str] = ()) -> str:
    """``text`` on one line, redacted (:func:`redact`), then cut to ``limit`` characters: the order that keeps a
    key cut in half by the limit out."""
    return " ".join(redact(text[:MAX_SCAN], secrets).split())[:limit]


__all__ = ["MASK", "clip", "redact"]
