"""Reading tools' names and JSON Schemas: word tokens and lemmas, identifier kinds, the parameters a tool
takes and the objects in what it returns. The rules that turn these into links are in :mod:`.infer`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..schema import Tool

KIND_WORDS: dict[str, str] = {
    "id": "id", "ids": "id", "uri": "uri", "uris": "uri", "url": "url", "urls": "url", "key": "key",
    "keys": "key", "code": "code", "codes": "code", "number": "number", "numbers": "number", "slug": "slug",
    "slugs": "slug", "handle": "handle", "handles": "handle",
}
"""Tokens that make a name an identifier, and the kind each stands for."""

TYPE_FIELDS = frozenset({"type", "object", "kind", "media_type", "object_type", "entity_type", "item_type"})
"""Names of the field by which an object says what it is."""

ENVELOPE_KEYS = frozenset({
    "result", "results", "item", "items", "data", "list", "entries", "records", "hits", "values", "objects",
    "elements", "content", "contents", "docs", "documents", "rows", "nodes", "response", "payload", "body",
    "page", "matches",
})
"""Keys that only wrap what a call returns (``results[]``, ``items[]``, ``data``). Any other key names what it
holds (``genres[]`` holds genres), so the objects under it are not the call's own subject."""

_IRREGULAR = {"people": "person", "children": "child", "men": "man", "women": "woman", "data": "data",
              "media": "media", "series": "series", "news": "news", "status": "status"}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")
QUOTED = re.compile(r"[\"'`]([A-Za-z_][A-Za-z0-9_ -]{0,40})[\"'`]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:'s\b|’s\b)?")
ID_TEXT = re.compile(r"\b(ids?|uris?|urls?|keys?|identifiers?)\b|\bid's\b", re.IGNORECASE)


def tokens(name: str) -> list[str]:
    """Lower-case word tokens of an identifier or a path: ``movieId`` -> [movie, id]."""
    return [t.lower() for t in _SPLIT.split(_CAMEL.sub(" ", name)) if t]


# ------------------------------------------------------------------------------------------------ words


class Lexicon:
    """Lemmatises plural tokens against the words a library uses, and holds its entity vocabulary."""

    def __init__(self, words: Iterable[str]) -> None:
        self.seen = set(words)
        self.entities: set[str] = set()
        self.things: set[str] = set()
        self._cache: dict[str, str] = {}

    def lemma(self, word: str) -> str:
        """The singular of ``word``, preferring a form the library uses elsewhere."""
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        out = word
        if word in _IRREGULAR:
            out = _IRREGULAR[word]
        elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            cands = []
            if word.endswith("ies"):
                cands += [word[:-3] + "y", word[:-1]]
            elif word.endswith(("sses", "xes", "ches", "shes", "zes")):
                cands += [word[:-2], word[:-1]]
            else:
                cands += [word[:-1], word[:-2]] if word.endswith("es") else [word[:-1]]
            out = next((c for c in cands if c in self.seen), cands[0])
        self._cache[word] = out
        return out

    def lemmas(self, name: str) -> list[str]:
        return [self.lemma(t) for t in tokens(name)]

    def entities_in(self, name: str) -> list[str]:
        """Entities named by the tokens of ``name`` (in order, no duplicates)."""
        return list(dict.fromkeys(t for t in self.lemmas(name) if t in self.entities))

    def things_in(self, name: str) -> list[str]:
        """Entities, and other things the library's results identify (``genre`` of ``genre_ids``), that the
        tokens of ``name`` name."""
        return list(dict.fromkeys(t for t in self.lemmas(name) if t in self.entities or t in self.things))

    def entities_in_text(self, text: str) -> list[str]:
        """Entities a description names, possessives ("the user's device") excluded."""
        out = []
        for m in _WORD.finditer(text or ""):
            word = m.group(0)
            if word.endswith(("'s", "’s")):
                continue
            for t in tokens(word):
                lem = self.lemma(t)
                if lem in self.entities:
                    out.append(lem)
        return list(dict.fromkeys(out))


def split_kind(lex: Lexicon, name: str) -> tuple[str | None, list[str]]:
    """(kind, qualifier lemmas) of a name: ``season_number`` -> ("number", ["season"])."""
    toks = tokens(name)
    if toks and toks[-1] in KIND_WORDS:
        return KIND_WORDS[toks[-1]], [lex.lemma(t) for t in toks[:-1]]
    return None, [lex.lemma(t) for t in toks]


def enum_values(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    values: list[Any] = []
    if isinstance(schema.get("enum"), list):
        values += schema["enum"]
    if "const" in schema:
        values.append(schema["const"])
    if isinstance(schema.get("items"), dict):
        values += enum_values(schema["items"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            for sub in schema[key]:
                values += enum_values(sub)
    return [v for v in values if isinstance(v, str)]


def schema_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t == "array":
        return schema_type(schema.get("items"))
    if isinstance(t, str):
        return t
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema_type(schema[key][0])
    return "any"


def compatible(param_type: str, field_type: str) -> bool:
    """Can a returned value of ``field_type`` be passed as a parameter of ``param_type``?"""
    if "any" in (param_type, field_type) or param_type in (field_type, "string", "object"):
        return True
    numeric = {"integer", "number"}
    return param_type in numeric and field_type in numeric


@dataclass
class ResultObject:
    """One object in what a tool returns, with where it sits."""

    path: str
    props: dict[str, Any]
    example: Any
    keys: tuple[str, ...]  # enclosing keys, nearest last, since the nearest object that has an identity
    top: bool  # reached from the root through no entity-named key and no object with an identity
    title: str | None


def params_of(tool: Tool) -> list[tuple[str, str, dict[str, Any], bool, str]]:
    """(name, location, JSON Schema, required, description) of each parameter, one per name."""
    out: dict[str, tuple[str, str, dict[str, Any], bool, str]] = {}
    if tool.http is not None:
        for hp in tool.http.parameters:
            if hp.name not in out:
                out[hp.name] = (hp.name, hp.location, dict(hp.json_schema), hp.required, hp.description)
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    props, required = schema.get("properties"), schema.get("required")
    req = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    if isinstance(props, dict):
        for name, sub in props.items():
            if name not in out:
                sub_schema: dict[str, Any] = sub if isinstance(sub, dict) else {}
                desc = sub_schema.get("description")
                out[name] = (name, "body", sub_schema, name in req, desc if isinstance(desc, str) else "")
    for tp in tool.parameters or ():
        if tp.name not in out:
            out[tp.name] = (tp.name, "query", {"type": tp.type}, tp.required, tp.desc)
    return list(out.values())


def path_segments(tool: Tool) -> list[str]:
    if tool.http is not None:
        return [s for s in tool.http.path.split("/") if s]
    return []


def segment_param(seg: str) -> str | None:
    return seg[1:-1] if seg.startswith("{") and seg.endswith("}") else None


def walk_objects(schema: Any, example: Any, lex: Lexicon, out: list[ResultObject], *, path: str = "",
                  keys: tuple[str, ...] = (), top: bool = True, depth: int = 0) -> None:
    """Every object in a result schema (allOf merged, each anyOf/oneOf branch on its own, arrays entered)."""
    if not isinstance(schema, dict) or depth > 12:
        return
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        props = dict(_dict(merged.get("properties")))
        for part in schema["allOf"]:
            part = _merged(part)
            if isinstance(part, dict):
                props.update(_dict(part.get("properties")))
                for k in ("type", "title", "items"):
                    merged.setdefault(k, part.get(k))
        merged["properties"] = props
        schema = {k: v for k, v in merged.items() if v is not None}
        if not props:
            schema.pop("properties")
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            for branch in schema[key]:
                walk_objects(branch, example, lex, out, path=path, keys=keys, top=top, depth=depth + 1)
    if schema.get("type") == "array" or isinstance(schema.get("items"), dict):
        item_ex = example[0] if isinstance(example, list) and example else None
        walk_objects(schema.get("items"), item_ex, lex, out, path=path + "[]", keys=keys, top=top, depth=depth + 1)
        return
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return
    title = schema.get("title") if isinstance(schema.get("title"), str) else None
    ex = example if isinstance(example, dict) else None
    out.append(ResultObject(path, props, ex, keys, top, title))
    identified = any(split_kind(lex, name)[0] is not None for name in props)
    for name, sub in props.items():
        if not isinstance(sub, dict):
            continue
        named = bool(lex.things_in(name)) or (bool(name) and name.lower() not in ENVELOPE_KEYS)
        child_keys = (name,) if identified else (*keys, name)
        child_path = join_path(path, name)
        walk_objects(sub, ex.get(name) if ex else None, lex, out, path=child_path, keys=child_keys,
                      top=top and not identified and not named, depth=depth + 1)


def join_path(path: str, name: str) -> str:
    """``results[]`` + ``id`` -> ``results[].id`` (an empty key, seen in real specs, is written ``''``)."""
    name = name or "''"
    return f"{path}.{name}" if path else name


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _merged(schema: Any) -> Any:
    if isinstance(schema, dict) and isinstance(schema.get("allOf"), list):
        props: dict[str, Any] = dict(_dict(schema.get("properties")))
        for part in schema["allOf"]:
            part = _merged(part)
            if isinstance(part, dict):
                props.update(_dict(part.get("properties")))
        return {**{k: v for k, v in schema.items() if k != "allOf"}, "properties": props}
    return schema


def properties(schema: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Every (property name, schema) in a JSON Schema, at any depth."""
    if not isinstance(schema, dict) or depth > 16:
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            yield name, sub
            yield from properties(sub, depth + 1)
    for key in ("items", "additionalProperties"):
        yield from properties(schema.get(key), depth + 1)
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            for sub in schema[key]:
                yield from properties(sub, depth + 1)


def schema_from_example(value: Any, depth: int = 0) -> dict[str, Any]:
    """A JSON Schema describing an example value (for results that have an example but no schema)."""
    if depth > 12:
        return {}
    if isinstance(value, dict):
        return {"type": "object", "properties": {k: schema_from_example(v, depth + 1) for k, v in value.items()}}
    if isinstance(value, list):
        return {"type": "array", "items": schema_from_example(value[0], depth + 1) if value else {}}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    return {}


def result_schema(tool: Tool) -> tuple[Any, Any]:
    """(schema, example) of what a tool returns; the schema is made from the example when there is none."""
    schema = tool.output_schema
    example = tool.http.response_example if tool.http is not None else None
    if not (isinstance(schema, dict) and schema) and example is not None:
        schema = schema_from_example(example)
    return schema, example
