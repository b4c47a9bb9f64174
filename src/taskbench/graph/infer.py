"""Tool dependencies inferred from the tools themselves: ``taskbench graph build --infer schema``.

A link a -> b says "what a returns can be what b takes". It is found by giving every identifier that a tool
returns and every parameter a tool takes a *meaning*, ``(entity, kind)`` such as ``(person, id)`` or
``(track, uri)``, and linking the two when the meanings agree. Nothing here knows any particular API: the
vocabulary of entities is read from the library itself. (Reading names and schemas is :mod:`.shapes`; the
rules are here; docs/graph.md explains them with examples.)

Entities: the qualifier of any identifier parameter (``person_id`` -> person, ``season_number`` -> season)
and the path segment before a bare path parameter (``/tracks/{id}`` -> track). *Things*: qualifiers of
returned identifiers (``genre_ids``) and declared object types (``"type": {"enum": ["audiobook"]}``); no tool
takes them, they only keep objects from being mistaken for something else.

What a parameter takes:

1. identifier parameters (the last token is a kind, or the name is an entity and the description says "IDs"
   or "URIs"): the entity is the qualifier when it is an entity (``person_id``, ``seed_artists``); for a bare
   ``id``/``ids``/``uri``, the path segment before it (``/albums/{id}``), else the values of a sibling
   selector parameter (a ``type``/``kind`` enum of entities), else the entities its description names
   (possessives such as "the user's" do not count), else the last path segment that is an entity
   (``PUT /me/albums?ids=``). A qualified parameter whose entity nothing returns (``context_uri``) takes the
   entities its description names instead (:meth:`SchemaInference._refine`).
2. other parameters have no entity; they can only be fed by a returned field of the same name, and only when
   they are required and not a choice among fixed values (paging, filters and enums have defaults).

What a tool returns (OpenAPI response schema, else its example; MCP ``outputSchema``). Every object in the
result gets an entity from, in order: its own type field (declared enum/const, else an example value or a
quoted word of its description that is an entity); the nearest enclosing key that names an entity
(``networks[]``, ``production_companies[]``, ``tracks.items[]``); for objects at the top of the result (under
envelope keys such as ``results`` only), a selector parameter of the call (``media_type`` in ``{movie, tv,
person}``); its schema ``title``; its shape (fields weighted by how rare they are among the objects that the
library's getters ``GET /x/{x_id}`` return, so ``cast[]`` with ``profile_path`` and ``known_for_department``
is a person); any other enclosing key (``genres[]`` holds genres); and, at the top of the result, the call's
own subject (the last path segment that is an entity, else the entity of the last path parameter). A
returned field is an identifier of that object (``id``, ``uri``) or, when its name has a qualifier, of the
qualifier (``credit_id``, ``season_number``). The call's own identifier at the top of its result is its input
echoed back and feeds nothing new.

Tools without an output schema (OpenAI tools, most MCP tools, TaskBench APIs) give the entity their name or
path is about (``search_flights`` gives flight ids) and every "<entity> <kind>" their description names
("Returns the booking id"), unless they take that entity's identifier themselves.

State (OpenAPI only). A write (POST, PUT, PATCH, DELETE) changes the resource it acts on: the path up to its
last parameter (``/playlists/{playlist_id}``), else its parent when that has two or more segments
(``/me/player`` for ``PUT /me/player/pause``), else the path itself (``/me/albums``). Every other operation
on that resource (its path equal to it or below it) may follow the write, and a read of exactly that resource
may precede it. A data link between the same pair wins.

Each link keeps its reasons (:class:`~taskbench.schema.LinkReason`): the returned field and the parameter it
feeds, and how their meaning was told.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..schema import LinkReason, Tool, ToolGraph, ToolLibrary, ToolLink
from ..schema.graph import Confidence
from .infer_text import TextInference, documented_links
from .rules import build_graph
from .shapes import (
    ENVELOPE_KEYS,
    ID_TEXT,
    KIND_WORDS,
    QUOTED,
    TYPE_FIELDS,
    Lexicon,
    ResultObject,
    compatible,
    enum_values,
    join_path,
    params_of,
    path_segments,
    properties,
    result_schema,
    schema_type,
    segment_param,
    split_kind,
    tokens,
    walk_objects,
)

DATA = "data"
"""Link type of a link along which a value flows."""
STATE = "state"
"""Link type of a link where a write changes what the target reads."""

SELECTOR_WORDS = frozenset({"type", "types", "kind", "kinds"})
"""Last tokens of a parameter that picks what kind of object a call works on (with an enum of entities)."""

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

CONFIDENCE: dict[str, Confidence] = {"schema": "high", "name": "medium", "description": "medium", "state": "medium"}
"""The confidence of each rule's reasons (documented links are high, mention links low: :mod:`.infer_text`)."""

MAX_REASONS = 4
"""Reasons kept per link (distinct parameters first)."""

# ------------------------------------------------------------------------------------------------ meanings


@dataclass(frozen=True)
class Wanted:
    """What one parameter of a tool takes."""

    name: str
    kind: str | None
    entities: frozenset[str]
    type: str
    required: bool
    how: str
    desc: str = ""
    qualified: bool = False


@dataclass(frozen=True)
class Produced:
    """One value a tool returns."""

    path: str
    name: str
    kind: str | None
    entities: frozenset[str]
    type: str
    how: str


@dataclass
class ToolFacts:
    """Everything the rules read from one tool."""

    tool: Tool
    wanted: list[Wanted] = field(default_factory=list)
    produced: list[Produced] = field(default_factory=list)
    has_output: bool = False
    subject: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    """Every field path of the result (``results[].id``), identifiers or not."""
    described: dict[tuple[str, str | None], str] = field(default_factory=dict)
    """Tools without an output schema: (entity, kind or None for any kind) -> how that was told."""


# ------------------------------------------------------------------------------------------------ inference


class SchemaInference:
    """The rules of the module docstring over one library (see :func:`infer_links`)."""

    def __init__(self, library: ToolLibrary) -> None:
        self.library = library
        tools = library.tools
        words: list[str] = []
        for t in tools:
            words += tokens(t.id)
            words += [w for name, *_ in params_of(t) for w in tokens(name)]
        results = {t.id: result_schema(t) for t in tools}
        for schema, _ in results.values():
            words += [w for key, _ in properties(schema) for w in tokens(key)]
        self.lex = Lexicon(words)
        self.lex.entities = self._vocabulary()
        # things the results identify without the library addressing them: genre_ids, cast_id, and the
        # object types declared by type fields ("type": {"enum": ["audiobook"]})
        for schema, _ in results.values():
            for key, sub in properties(schema):
                kind, qual = split_kind(self.lex, key)
                if kind is not None and qual:
                    self.lex.things.add("_".join(qual))
                if key.lower() in TYPE_FIELDS:
                    self.lex.things.update(self.lex.lemma(v.lower()) for v in enum_values(sub) if v.strip())
        self.objects: dict[str, list[ResultObject]] = {}
        for t in tools:
            schema, example = results[t.id]
            found: list[ResultObject] = []
            walk_objects(schema, example, self.lex, found)
            self.objects[t.id] = found
        self.canon = self._canonical_shapes()
        self.facts = {t.id: self._facts(t) for t in tools}
        self._refine()

    # -- vocabulary --------------------------------------------------------------------------------------

    def _vocabulary(self) -> set[str]:
        lex = self.lex
        out: set[str] = set()
        for t in self.library.tools:
            segs = path_segments(t)
            for i, seg in enumerate(segs):
                pname = segment_param(seg)
                if pname is None:
                    continue
                kind, qual = split_kind(lex, pname)
                if kind is None:
                    continue
                if qual:
                    out.add("_".join(qual))
                elif i > 0 and segment_param(segs[i - 1]) is None:
                    out.add(lex.lemma(segs[i - 1].lower()))
            for name, *_ in params_of(t):
                kind, qual = split_kind(lex, name)
                if kind is not None and qual:
                    out.add("_".join(qual))
        return {e for e in out if e}

    def _type_field(self, obj: ResultObject) -> list[str]:
        """What an object's own type field says it is: its ``enum``/``const`` values as declared, else the
        entities its example value or the quoted words of its description name."""
        for name, sub in obj.props.items():
            if name.lower() not in TYPE_FIELDS or not isinstance(sub, dict):
                continue
            declared = [self.lex.lemma(v.lower()) for v in enum_values(sub) if v.strip()]
            if declared:
                return list(dict.fromkeys(declared))
            loose = QUOTED.findall(sub["description"]) if isinstance(sub.get("description"), str) else []
            if obj.example and isinstance(obj.example.get(name), str):
                loose.append(obj.example[name])
            known = [e for e in (self.lex.lemma(v.lower()) for v in loose) if e in self.lex.entities]
            if known:
                return list(dict.fromkeys(known))
        return []

    def _canonical_shapes(self) -> dict[str, dict[str, float]]:
        """entity -> {field: weight} of the object its getter (``GET /x/{x_id}``) returns."""
        shapes: dict[str, set[str]] = {}
        self.getters: dict[str, str] = {}
        for t in self.library.tools:
            if t.http is None or t.http.method != "GET":
                continue
            segs = path_segments(t)
            if not segs or segment_param(segs[-1]) is None:
                continue
            ent = self._param_segment_entity(segs, len(segs) - 1)
            root = next((o for o in self.objects[t.id] if o.path == ""), None)
            if ent and root is not None and ent not in shapes:
                shapes[ent] = set(root.props)
                self.getters[ent] = t.id
        n = len(shapes)
        df: dict[str, int] = {}
        for fields in shapes.values():
            for f in fields:
                df[f] = df.get(f, 0) + 1
        self._idf = {f: math.log((1 + n) / (1 + c)) for f, c in df.items()}
        return {e: {f: self._idf[f] for f in fields} for e, fields in shapes.items()}

    def _param_segment_entity(self, segs: list[str], i: int) -> str | None:
        pname = segment_param(segs[i])
        if pname is None:
            return None
        kind, qual = split_kind(self.lex, pname)
        if kind is None:
            return None
        if qual:
            return "_".join(qual)
        if i > 0 and segment_param(segs[i - 1]) is None:
            lem = self.lex.lemma(segs[i - 1].lower())
            return lem if lem in self.lex.entities else None
        return None

    # -- what tools take ---------------------------------------------------------------------------------

    def _selector(self, tool: Tool) -> tuple[str, list[str]] | None:
        """(parameter, entities) of a parameter that picks the kind of object a call works on."""
        for name, _loc, schema, _req, _desc in params_of(tool):
            toks = tokens(name)
            if not toks or toks[-1] not in SELECTOR_WORDS:
                continue
            values = enum_values(schema)
            ents = list(dict.fromkeys(self.lex.lemma(v.lower()) for v in values))
            ents = [e for e in ents if e in self.lex.entities]
            if ents:
                return name, ents
        return None

    def _wanted(self, tool: Tool) -> list[Wanted]:
        lex = self.lex
        segs = path_segments(tool)
        out = []
        selector = self._selector(tool)
        for name, location, schema, required, desc in params_of(tool):
            kind, qual = split_kind(lex, name)
            typ = schema_type(schema)
            if kind is None:
                named = lex.entities_in(name)
                if named and ID_TEXT.search(desc or ""):  # 'tracks': "Spotify URIs of the tracks"
                    m = ID_TEXT.search(desc or "")
                    word = m.group(0).lower().rstrip("s").replace("'", "") if m else "id"
                    kind = KIND_WORDS.get(word, "id") if word != "identifier" else "id"
                    out.append(Wanted(name, kind, frozenset(named), typ, required, f"'{name}' names {', '.join(named)}"))
                    continue
                if selector is not None and name == selector[0]:
                    continue  # a choice among fixed values, not data
                if enum_values(schema):
                    continue
                out.append(Wanted(name, None, frozenset(), typ, required, "its name"))
                continue
            ents: list[str] = []
            how = ""
            qual_ents = [q for q in qual if q in lex.entities]
            if qual_ents:
                out.append(Wanted(name, kind, frozenset(qual_ents), typ, required,
                                  f"'{name}' names {', '.join(qual_ents)}", desc, True))
                continue
            elif not qual and location == "path" and f"{{{name}}}" in segs:
                ent = self._param_segment_entity(segs, segs.index(f"{{{name}}}"))
                if ent:
                    ents, how = [ent], f"the path segment before {{{name}}}"
            if not ents and not qual and selector is not None:
                ents, how = selector[1], f"its selector '{selector[0]}'"
            if not ents:
                mentioned = [e for e in lex.entities_in_text(desc) if e not in qual]
                if mentioned:
                    ents, how = mentioned, "its description"
            if not ents and not qual:
                for seg in reversed(segs):
                    if segment_param(seg) is None and lex.lemma(seg.lower()) in lex.entities:
                        ents, how = [lex.lemma(seg.lower())], f"the path segment '{seg}'"
                        break
            if not ents and qual:
                ents, how = ["_".join(qual)], f"'{name}'"
            if ents:
                out.append(Wanted(name, kind, frozenset(ents), typ, required, how, desc))
        return out

    def _refine(self) -> None:
        """A qualified parameter whose entity no tool returns (``context_uri``: no tool returns a "context")
        takes the entities its description names instead ("Valid contexts are albums, artists & playlists")."""
        made: set[tuple[str, str | None]] = {
            (e, p.kind) for f in self.facts.values() for p in f.produced if p.kind for e in p.entities}
        made |= {key for f in self.facts.values() for key in f.described}

        def is_made(ent: str, kind: str | None) -> bool:
            return (ent, kind) in made or (ent, None) in made

        for facts in self.facts.values():
            for i, w in enumerate(facts.wanted):
                if not w.qualified or any(is_made(e, w.kind) for e in w.entities):
                    continue
                mentioned = [e for e in self.lex.entities_in_text(w.desc) if e not in w.entities]
                if any(is_made(e, w.kind) for e in mentioned):
                    facts.wanted[i] = Wanted(w.name, w.kind, frozenset(mentioned), w.type, w.required,
                                             f"its description (no tool returns {'/'.join(sorted(w.entities))} "
                                             f"{w.kind}s)", w.desc)

    # -- what tools return -------------------------------------------------------------------------------

    def _subject(self, tool: Tool) -> list[str]:
        """The entity a call is about: its last entity path segment, else its last entity parameter; for
        tools without a path, the last entity its name names."""
        segs = path_segments(tool)
        if segs:
            for i in range(len(segs) - 1, -1, -1):
                if segment_param(segs[i]) is None:
                    lem = self.lex.lemma(segs[i].lower())
                    if lem in self.lex.entities:
                        return [lem]
                else:
                    ent = self._param_segment_entity(segs, i)
                    if ent:
                        return [ent]
            return []
        named = self.lex.entities_in(tool.id)
        return named[-1:]

    def _shape(self, obj: ResultObject) -> tuple[str, float] | None:
        """The getter shape an object matches: the idf-weighted share of its fields known to any getter shape
        that this one has (fields no getter returns, such as a credit's ``character``, do not count)."""
        known = [f for f in obj.props if f in self._idf]
        total = sum(self._idf[f] for f in known)
        if total <= 0:
            return None
        scored = []
        for ent, shape in self.canon.items():
            shared = [f for f in known if f in shape and self._idf[f] > 0]
            scored.append((sum(self._idf[f] for f in shared) / total, len(shared), ent))
        scored.sort(reverse=True)
        if not scored:
            return None
        best, count, ent = scored[0]
        second = scored[1][0] if len(scored) > 1 else 0.0
        if best >= 0.6 and count >= 2 and best - second >= 0.15:
            return ent, best
        return None

    def _object_entities(self, tool: Tool, obj: ResultObject, subject: list[str],
                         selector: tuple[str, list[str]] | None) -> tuple[list[str], str]:
        own = self._type_field(obj)
        if own:
            return own, "the object's type field"
        for key in reversed(obj.keys):
            named = self.lex.entities_in(key)
            if named:
                return named[-1:], f"the key '{key}'"
        if obj.top and selector is not None:
            return selector[1], f"the call's selector parameter '{selector[0]}'"
        if obj.title:
            named = self.lex.entities_in(obj.title)
            if named:
                return named[:1], f"the schema title '{obj.title}'"
        shape = self._shape(obj)
        if shape is not None:
            return [shape[0]], f"the object's fields, like those of {self.getters[shape[0]]}"
        for key in reversed(obj.keys):
            named = self.lex.things_in(key)
            if named:
                return named[-1:], f"the key '{key}'"
            if key.lower() not in ENVELOPE_KEYS and key:
                return ["_".join(self.lex.lemmas(key))], f"the key '{key}'"
        if obj.top and subject:
            return subject, "the operation's path" if tool.http is not None else "the tool's name"
        return [], ""

    def _produced(self, tool: Tool, subject: list[str], wanted: list[Wanted]) -> list[Produced]:
        selector = self._selector(tool)
        takes = {(e, w.kind) for w in wanted if w.kind is not None for e in w.entities}
        out = []
        for obj in self.objects[tool.id]:
            found: tuple[list[str], str] | None = None
            for name, sub in obj.props.items():
                kind, qual = split_kind(self.lex, name)
                path = join_path(obj.path, name)
                typ = schema_type(sub)
                if kind is None:
                    if not isinstance(sub, dict) or sub.get("type") not in ("object", "array") and "properties" not in sub:
                        out.append(Produced(path, name, None, frozenset(), typ, "its name"))
                    continue
                if qual:
                    qents = [q for q in qual if q in self.lex.entities] or ["_".join(qual)]
                    out.append(Produced(path, name, kind, frozenset(qents), typ, f"'{name}'"))
                    continue
                if found is None:
                    found = self._object_entities(tool, obj, subject, selector)
                ents, how = found
                if obj.path == "":  # the call's own identifier echoed back is nothing new
                    ents = [e for e in ents if (e, kind) not in takes]
                if ents:
                    out.append(Produced(path, name, kind, frozenset(ents), typ, how))
        return out

    def _facts(self, tool: Tool) -> ToolFacts:
        subject = self._subject(tool)
        facts = ToolFacts(tool=tool, wanted=self._wanted(tool), subject=subject)
        facts.has_output = bool(self.objects[tool.id])
        facts.fields = list(dict.fromkeys(join_path(o.path, name) for o in self.objects[tool.id] for name in o.props))
        if facts.has_output:
            facts.produced = self._produced(tool, subject, facts.wanted)
        else:
            facts.described = self._described(tool, subject, facts.wanted)
        return facts

    def _described(self, tool: Tool, subject: list[str], wanted: list[Wanted]) -> dict[tuple[str, str | None], str]:
        """What a tool without an output schema gives, by its name and description: the entity it is about
        (``search_flights``: flights), and every "<entity> <kind>" its description names ("returns the
        booking id"), except identifiers it takes itself."""
        takes = {e for w in wanted if w.kind is not None for e in w.entities}
        out: dict[tuple[str, str | None], str] = {}
        for ent in subject:
            if ent not in takes:
                where = "its path" if tool.http is not None else "its name"
                out[(ent, None)] = f"{where} says it is about {ent.replace('_', ' ')}s"
        toks = tokens(tool.desc or "")
        for a, b in zip(toks, toks[1:], strict=False):
            ent = self.lex.lemma(a)
            if b in KIND_WORDS and ent in self.lex.entities and ent not in takes:
                out.setdefault((ent, KIND_WORDS[b]), f"its description names the {ent.replace('_', ' ')} {KIND_WORDS[b]}")
        return out

    # -- links -------------------------------------------------------------------------------------------

    def _index(self) -> None:
        """Who returns what: (entity, kind) and field names -> [(tool id, value)], in library order."""
        self._by_meaning: dict[tuple[str, str], list[tuple[str, Produced]]] = {}
        self._by_name: dict[str, list[tuple[str, Produced]]] = {}
        self._by_description: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
        for t in self.library.tools:
            facts = self.facts[t.id]
            for p in facts.produced:
                if p.kind is None:
                    self._by_name.setdefault(p.name, []).append((t.id, p))
                else:
                    for e in sorted(p.entities):
                        self._by_meaning.setdefault((e, p.kind), []).append((t.id, p))
            for key, how in facts.described.items():
                self._by_description.setdefault(key, []).append((t.id, how))

    def reasons_into(self, b: ToolFacts) -> dict[str, list[LinkReason]]:
        """source tool id -> why ``b`` can follow it (its best reasons, distinct parameters first)."""
        found: dict[str, list[tuple[tuple[int, int, int], LinkReason]]] = {}

        def add(src: str, rank: tuple[int, int, int], reason: LinkReason) -> None:
            if src != b.tool.id:
                found.setdefault(src, []).append((rank, reason))

        for w in b.wanted:
            if w.kind is None:
                if w.required:
                    for src, p in self._by_name.get(w.name, ()):
                        if p.path in ENVELOPE_KEYS and not self._says(src, w.name):
                            continue  # a text result's 'content' is not every tool's content
                        if compatible(w.type, p.type):
                            add(src, (1, 1, p.path.count(".")),
                                LinkReason(rule="name", output=p.path, parameter=w.name, note="same name"))
                continue
            for ent in sorted(w.entities):
                for src, p in self._by_meaning.get((ent, w.kind), ()):
                    if not compatible(w.type, p.type):
                        continue
                    note = f"{_article(ent)} {ent.replace('_', ' ')} {w.kind}"
                    if p.how and not p.how.startswith("'"):
                        note += f", known from {p.how}"
                    add(src, (0 if w.required else 1, 0, p.path.count(".") + p.path.count("[]")),
                        LinkReason(rule="schema", output=p.path, parameter=w.name, note=note))
                for kind in (w.kind, None):
                    for src, how in self._by_description.get((ent, kind), ()):
                        add(src, (0 if w.required else 1, 2, 0), LinkReason(
                            rule="description", parameter=w.name,
                            note=f"{_article(ent)} {ent.replace('_', ' ')} {w.kind}: {how} (no output schema)"))
        out: dict[str, list[LinkReason]] = {}
        for src, items in found.items():
            items.sort(key=lambda x: x[0])
            chosen: list[LinkReason] = []
            params: set[str | None] = set()
            for _, r in items:  # distinct parameters first, then more fields of the same parameter
                if r.parameter not in params:
                    chosen.append(r)
                    params.add(r.parameter)
            for _, r in items:
                if len(chosen) >= MAX_REASONS:
                    break
                if r not in chosen:
                    chosen.append(r)
            out[src] = chosen[:MAX_REASONS]
        return out

    def _says(self, src: str, word: str) -> bool:
        """Whether a tool's name or the first sentence of its description (what it does, not its caveats:
        "... without reading the actual content") names ``word`` (the thing its envelope holds)."""
        tool = self.facts[src].tool
        lemma = self.lex.lemma(word.lower())
        what = (tool.desc or "").split(". ", 1)[0]
        return lemma in {self.lex.lemma(t) for t in tokens(tool.id) + tokens(what)}

    def state_reason(self, a: Tool, b: Tool) -> LinkReason | None:
        """OpenAPI operations on the same resource: a write ``a`` changes what ``b`` works on, or a read ``a``
        reads exactly the resource that the write ``b`` changes."""
        if a.http is None or b.http is None:
            return None
        ma, mb = a.http.method.upper(), b.http.method.upper()
        if ma in WRITE_METHODS:
            resource = _resource(a.http.path)
            path = b.http.path.rstrip("/")
            if path == resource or path.startswith(resource + "/"):
                return LinkReason(rule="state", note=f"{ma} {a.http.path} changes {resource}, which "
                                  f"{mb} {b.http.path} works on")
        elif mb in WRITE_METHODS and a.http.path.rstrip("/") == _resource(b.http.path):
            return LinkReason(rule="state", note=f"{ma} {a.http.path} reads what {mb} {b.http.path} changes")
        return None

    def links(self) -> list[ToolLink]:
        """Every inferred link, source-major in library order: data links, then state links for the pairs
        that have no data link."""
        tools = self.library.tools
        self._index()
        documented = documented_links(tools)
        quiet = {lk.source for lk in documented}  # an operation that documents its links is taken at its word
        data: dict[tuple[str, str], list[LinkReason]] = {(lk.source, lk.target): list(lk.reasons) for lk in documented}
        for b in tools:
            for src, reasons in self.reasons_into(self.facts[b.id]).items():
                if src not in quiet:
                    data[(src, b.id)] = [r.model_copy(update={"confidence": CONFIDENCE[r.rule]}) for r in reasons]
        state: dict[tuple[str, str], LinkReason] = {}
        http = [t for t in tools if t.http is not None]
        writes = [t for t in http if t.http.method.upper() in WRITE_METHODS]  # type: ignore[union-attr]
        for w in writes:
            for t in http:
                if t.id == w.id:
                    continue
                for a, b in ((w, t), (t, w)):
                    if (a.id, b.id) not in data and (a.id, b.id) not in state and a.id not in quiet:
                        reason = self.state_reason(a, b)
                        if reason is not None:
                            state[(a.id, b.id)] = reason.model_copy(update={"confidence": "medium"})
        pos = {t.id: i for i, t in enumerate(tools)}
        out = [ToolLink(source=a, target=b, type=DATA, reasons=tuple(r)) for (a, b), r in data.items()]
        out += [ToolLink(source=a, target=b, type=STATE, reasons=(r,)) for (a, b), r in state.items()]
        made = set(self._by_meaning) | {key for key in self._by_description}
        understood = {(t.id, w.name) for t in tools for w in self.facts[t.id].wanted if w.kind is not None
                      and any((e, w.kind) in made or (e, None) in made for e in w.entities)}
        out += TextInference(tools).links({(lk.source, lk.target) for lk in out}, quiet, understood)
        out.sort(key=lambda lk: (pos[lk.source], pos[lk.target]))
        return out


def _article(word: str) -> str:
    return "an" if word[:1] in "aeio" else "a"  # "a user", "an album"


def _resource(path: str) -> str:
    segs = [s for s in path.split("/") if s]
    last_param = max((i for i, s in enumerate(segs) if segment_param(s) is not None), default=None)
    if last_param is not None:
        keep = segs[: last_param + 1]
    elif len(segs) - 1 >= 2:
        keep = segs[:-1]
    else:
        keep = segs
    return "/" + "/".join(keep)


def infer_links(library: ToolLibrary) -> list[ToolLink]:
    """Links inferred from the tools' schemas, names and descriptions (rules: the module docstring),
    source-major in library order, each with its reasons."""
    return SchemaInference(library).links()


def infer_graph(library: ToolLibrary) -> ToolGraph:
    """The tool graph of a library with links inferred from the tools themselves (``--infer schema``).

    Typed TaskBench libraries keep the resource rule (their types already say what flows). Every other
    library gets a ``temporal`` graph (any order is allowed between linked tools) whose links are only the
    inferred ones, with ``type`` ``data`` or ``state`` and their reasons.
    """
    if library.dependency == "resource":
        return build_graph(library)
    return ToolGraph(nodes=list(library.tools), links=infer_links(library), dependency="temporal", inferred="schema")
