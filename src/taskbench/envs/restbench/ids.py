"""Deterministic identifiers for what the fixtures do not spell out: image paths, credit and review ids,
Spotify base-62 ids. Each is a hash of what it names, so it is the same on every machine and run."""

from __future__ import annotations

import hashlib
import zlib

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()


def base62(*parts: object, length: int = 22) -> str:
    """A base-62 string of ``length`` characters (Spotify ids are 22) named by ``parts``."""
    n = int.from_bytes(_digest(*parts), "big")
    out = []
    for _ in range(length):
        n, r = divmod(n, 62)
        out.append(_B62[r])
    return "".join(out)


def hex_id(*parts: object, length: int = 24) -> str:
    """A lower-case hex id (TMDB credit and review ids are 24 characters)."""
    return _digest(*parts).hex()[:length]


def image_path(*parts: object, ext: str = ".jpg") -> str:
    """A TMDB-style image path, '/' + 27 base-62 characters + extension."""
    return "/" + base62("image", *parts, length=27) + ext


def small_int(*parts: object, modulo: int = 400_000) -> int:
    """A stable positive integer (keyword ids)."""
    return zlib.crc32("\x1f".join(str(p) for p in parts).encode("utf-8")) % modulo + 1


__all__ = ["base62", "hex_id", "image_path", "small_int"]
