"""Typed, content-addressed artifacts: the values TaskBench tools consume and produce.

An :class:`Artifact` is either a *literal* the user supplied (a file name such as ``example.jpg``, a URL, a piece
of text) or the *output* of one tool call. Its identity is its provenance: a canonical description

- literal: ``["literal", normalised value]``
- output: ``["call", tool, output index, [input digests...], [[name, value-or-digest], ...]]`` (input digests
  sorted when the tool is commutative; named arguments sorted by name)

hashed with SHA-256. Two executions that call the same tools on the same inputs in the same way therefore yield
artifacts with the same digest, whatever ids the nodes had, whatever order independent nodes ran in.

Literal values are normalised before hashing (see :func:`normalise_literal`): Unicode NFKC, surrounding
quotes and whitespace trimmed, inner whitespace collapsed, case folded; URLs lose their scheme, ``www.`` and a
trailing slash (schemes http, https and ftp); text loses trailing ``.!?``. So ``"A cat."`` and ``'a  cat'`` are the same text and
``https://example.com/a.jpg`` and ``example.com/a.jpg`` the same URL; any other difference is a different
artifact.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...schema import content_type

MEDIA_TYPES = ("image", "audio", "video")
"""Artifact types that stand for files."""

_EXTENSION = {"image": "png", "audio": "wav", "video": "mp4", "text": "txt"}
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|www\.)\S+$|^[a-z0-9-]+(?:\.[a-z0-9-]+)+/\S*$", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_QUOTES = "'\"`\u2018\u2019\u201c\u201d"


class Artifact(BaseModel):
    """One typed value with its provenance (which tool made it from which inputs)."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="Handle an agent passes back: '<type>:<first 12 hex digits of the digest>'.")
    type: str = Field(description="image | audio | video | text | url | result | none | unknown | missing.")
    digest: str = Field(description="SHA-256 (hex) of the canonical provenance description.")
    tool: str | None = Field(default=None, description="Tool that produced it; None for a literal.")
    inputs: tuple[str, ...] = Field(default=(), description="Ids of the input artifacts, in call order.")
    value: str | None = Field(default=None, description="The normalised literal (literals only).")
    content: str = Field(default="", description="What it holds: the text, a file name, or a JSON record.")
    expr: str = Field(default="", description="Human-readable provenance, e.g. Image Colorizer(Text-to-Image('a cat')).")

    @property
    def is_literal(self) -> bool:
        """True for a value the user supplied."""
        return self.tool is None

    def public(self) -> dict[str, Any]:
        """What an agent sees of the artifact (its id, type, content and provenance)."""
        return {"artifact": self.id, "type": self.type, "content": self.content, "provenance": self.expr}


def digest_of(description: Any) -> str:
    """SHA-256 of a canonical JSON description."""
    text = json.dumps(description, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def as_text(value: Any) -> str:
    """Any JSON value as text (numbers as written, lists and objects as canonical JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def is_url(text: str) -> bool:
    """True when ``text`` looks like a URL (with a scheme, ``www.``, or a dotted host followed by a path)."""
    return bool(_URL.match(text.strip()))


def literal_type(text: str) -> str:
    """The artifact type a literal stands for: url; image / audio / video for a file name with such an
    extension; else text (a sentence that mentions a file name is text)."""
    text = text.strip()
    if is_url(text):
        return "url"
    if not text or any(c.isspace() for c in text):  # a sentence that mentions a file is text
        return "text"
    return content_type(text.lower())


def normalise_literal(value: Any) -> str:
    """The canonical form of a literal (see the module docstring)."""
    text = unicodedata.normalize("NFKC", as_text(value)).strip()
    while len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    text = _SPACE.sub(" ", text).casefold()
    if is_url(text):
        text = re.sub(r"^(?:https?|ftp)://", "", text)
        text = text.removeprefix("www.").rstrip("/")
        return text
    if literal_type(text) == "text":
        text = text.rstrip(".!?").rstrip()
    return text


def normalise_type(kind: Any) -> str:
    """A library's type name in canonical form ('Image' -> 'image')."""
    return str(kind).strip().lower() or "none"


def short(text: str, limit: int = 48) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def make_literal(value: Any) -> Artifact:
    """The artifact of a literal the user supplied."""
    norm = normalise_literal(value)
    digest = digest_of(["literal", norm])
    kind = literal_type(norm)
    raw = as_text(value).strip()
    return Artifact(
        id=f"{kind}:{digest[:12]}", type=kind, digest=digest, value=norm, content=raw, expr=repr(short(raw))
    )


def make_missing(reference: str) -> Artifact:
    """Stand-in for an input that cannot be resolved (a dangling ``<node-j>``)."""
    digest = digest_of(["missing", reference])
    return Artifact(id=f"missing:{digest[:12]}", type="missing", digest=digest, content=reference,
                    expr=f"<missing {reference}>")


def make_output(
    tool: str,
    index: int,
    kind: str,
    inputs: list[Artifact],
    named: list[tuple[str, Any]] | None = None,
    *,
    commutative: bool = False,
    content: str | None = None,
) -> Artifact:
    """The ``index``-th output (of type ``kind``) of calling ``tool`` on ``inputs`` and named arguments
    ``named`` (values: artifacts or plain JSON values)."""
    digests = [a.digest for a in inputs]
    if commutative:
        digests = sorted(digests)
    named_desc = sorted(
        [name, value.digest if isinstance(value, Artifact) else normalise_literal(value)] for name, value in named or []
    )
    digest = digest_of(["call", tool, index, digests, named_desc])
    parts = [a.expr for a in inputs]
    parts += [f"{n}={v.expr if isinstance(v, Artifact) else repr(short(as_text(v), 32))}" for n, v in named or []]
    expr = f"{tool}({', '.join(parts)})"
    if content is None:
        content = default_content(tool, kind, digest)
    return Artifact(
        id=f"{kind}:{digest[:12]}", type=kind, digest=digest, tool=tool, inputs=tuple(a.id for a in inputs),
        content=content, expr=short(expr, 400),
    )


def default_content(tool: str, kind: str, digest: str) -> str:
    """Deterministic stand-in content of a produced artifact: a file name for media, a tagged text for text."""
    slug = re.sub(r"[^a-z0-9]+", "-", tool.lower()).strip("-") or "tool"
    if kind in MEDIA_TYPES:
        return f"{slug}-{digest[:12]}.{_EXTENSION[kind]}"
    if kind == "url":
        return f"https://files.taskbench.invalid/{slug}/{digest[:12]}"
    return f"[{tool} output {digest[:12]}]"


__all__ = [
    "Artifact",
    "MEDIA_TYPES",
    "as_text",
    "default_content",
    "digest_of",
    "is_url",
    "literal_type",
    "make_literal",
    "make_missing",
    "make_output",
    "normalise_literal",
    "normalise_type",
    "short",
]
