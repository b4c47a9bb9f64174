"""Local ``$ref`` pointers of OpenAPI / JSON Schema documents: following one, and inlining a schema's references
within a budget (a spec whose references fan out would otherwise expand exponentially)."""

from __future__ import annotations

from typing import Any

__all__ = ["INLINE_MAX_NODES", "inline_schema"]


def _resolve(doc: Any, value: Any, depth: int = 0) -> Any:
    """Follow local ``$ref`` pointers (``#/components/...``); unknown refs resolve to {}."""
    while isinstance(value, dict) and isinstance(value.get("$ref"), str) and depth < 32:
        ref = value["$ref"]
        if not ref.startswith("#/"):
            return {}
        target: Any = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                return {}
            target = target[part]
        value = target
        depth += 1
    return value


INLINE_MAX_NODES = 5_000
"""Most schema objects one inlined schema may hold: a spec whose references fan out (each schema pointing
several times at the next) would otherwise expand exponentially."""


def inline_schema(doc: Any, schema: Any, *, depth: int = 0, stack: tuple[str, ...] = ()) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by its target, recursively (a self-contained JSON Schema).

    A reference cycle, or nesting deeper than 24 levels, becomes ``{}`` (any value) at the point where it would
    repeat; unknown references become ``{}`` too. The result holds at most :data:`INLINE_MAX_NODES` schema
    objects: once that many are written, every further reference becomes ``{}`` (so a fan-out of references
    costs linear time, not exponential).
    """
    return _Inliner(doc).inline(schema, depth, stack)


class _Inliner:
    """One :func:`inline_schema` call: a budget of schema objects, and the size of each reference's expansion
    (so a reference too big for what is left is cut at once, without expanding it again)."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc
        self.left = INLINE_MAX_NODES
        self.sizes: dict[str, int] = {}
        self.targets: dict[str, Any] = {}

    def inline(self, schema: Any, depth: int, stack: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(schema, dict) or depth > 24 or self.left <= 0:
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref in stack or self.sizes.get(ref, 0) > self.left:
                return {}
            if ref not in self.targets:
                self.targets[ref] = _resolve(self.doc, {"$ref": ref})
            target = self.targets[ref]
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            merged = {**target, **rest} if isinstance(target, dict) else rest
            before = self.left
            expanded = self.inline(merged, depth + 1, (*stack, ref))
            self.sizes[ref] = max(self.sizes.get(ref, 0), before - self.left)
            return expanded
        self.left -= 1
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(value, dict):
                out[key] = {k: self.inline(v, depth + 1, stack) for k, v in value.items()}
            elif key in ("items", "additionalProperties", "not", "contains", "propertyNames") and isinstance(value, dict):
                out[key] = self.inline(value, depth + 1, stack)
            elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
                out[key] = [self.inline(v, depth + 1, stack) for v in value]
            elif key == "items" and isinstance(value, list):
                out[key] = [self.inline(v, depth + 1, stack) for v in value]
            else:
                out[key] = value
        return out
