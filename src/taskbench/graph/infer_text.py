"""The links that :mod:`.infer`'s schema rules cannot see: documented OpenAPI links, and what tools without
useful output schemas mention (most MCP servers: ``list_tables`` -> ``describe_table(table_name)``).

Documented links. An OpenAPI response's ``links`` object says which operation its body feeds, and with which
parameters. They are read first and marked ``documented`` (confidence high). An operation that documents its
links is taken at its word: no other link is inferred *from* it.

Mentions. A parameter names a *concept*: the last word of its name that is neither a generic kind nor an end
of the operation (``table_name`` -> table, ``source_timezone`` -> timezone, ``branch_name`` -> branch,
``entityNames`` -> entity); a name that is only a kind (``path``, ``names``, ``revision``) keeps that word,
refined by the first concept its description names ("An array of entity names" -> entity). A name that is
only an end (``from``, ``to``, ``source``, ``destination``, ``target``) takes the first concept its description
names ("The name of the entity where the relation starts" -> entity), else every concept the first sentence
of its tool's description names after the verb, or after "between"/"from" when it says so ("Move or rename
files and directories" -> path; "Shows differences between branches or commits" -> branch, revision). A
parameter its description calls the contents of its concept ("An array of observation contents") carries
values and names nothing. Words for the same concept are one concept: file, directory, folder and path are a
path; commit, sha, hash and revision are a revision. So are the required fields of the objects an array
parameter takes (``observations[].entityName`` -> entity), unless some other tool gives the objects whole (a
relation to delete comes from what shows relations, not from any tool that names its two entities).

A tool *gives* a concept when its output schema has a field of that concept (``timezone`` of
``get_current_time``) that is not one of its own inputs echoed back (``add_observations`` returns the
``entityName`` it was given), or, without one that says more, when its name or description mentions it and it
does not take that concept itself (``list_tables`` gives tables, ``describe_table`` takes one). A tool whose
name lists, searches, logs, shows a tree or creates gives its concept even though it takes one
(``list_directory(path)`` and ``directory_tree(path)`` list paths, ``create_entities`` makes the entities it is
given). A tool that makes a path still takes one, the directory the new one goes in
(``list_directory -> create_directory``); what a tool makes by mention is new and holds nothing yet, so it feeds
no tool that reads, lists, searches, opens, shows or edits (``create_directory -> write_file``, not ``->
read_text_file``).

Context parameters that most of a library's tools take (``repo_path`` of every git tool) are the session's
setting, not data: no link is made for them.

Reasons carry their confidence: documented and schema links high; name, description and state links medium;
mention links low (a concept shared by words alone, including identifiers whose entity could not be resolved).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ..schema import LinkReason, Tool, ToolLink
from .shapes import Lexicon, params_of, properties, result_schema, tokens

GENERIC = frozenset({"name", "names", "id", "ids", "key", "keys", "uri", "uris", "url", "urls", "identifier",
                     "identifiers", "number", "numbers", "path", "paths"})
"""Tokens that say a name identifies something, not what: ``table_name`` is about a table, ``repo_path`` about
a repository (a bare ``path`` is a path)."""

VALUES = frozenset({"value", "values", "text", "string", "content", "contents", "data", "info", "input", "body",
                    "message", "result", "results", "query", "list", "arg", "args", "param", "params", "type", "types",
                    "kind", "kinds"})
"""Tokens of names that carry a value rather than name a thing (``newText``, ``content``): no mention links."""

STOP = frozenset({"a", "an", "the", "all", "any", "of", "in", "on", "for", "to", "and", "or", "with", "from", "by",
                  "as", "at", "is", "are", "this", "that", "its", "their", "detailed", "specific", "given", "one",
                  "multiple", "new", "existing", "current", "available", "complete"})
"""Words skipped when reading what a description's opening verb acts on."""

SAME_CONCEPT: dict[str, str] = {
    "file": "path", "files": "path", "directory": "path", "directories": "path", "folder": "path",
    "folders": "path", "dir": "path", "paths": "path", "commit": "revision", "commits": "revision",
    "sha": "revision", "hash": "revision", "revisions": "revision", "ref": "revision",
}
"""Words that name one concept: a file or a directory is given as a path, a commit as a revision."""

GIVERS = frozenset({"list", "search", "find", "log", "tree", "create", "add", "new", "make", "status", "branch"})
"""Name tokens (after a shared prefix; any of them, ``directory_tree`` too) of tools that give their concept
though they take one."""

ROLES = frozenset({"from", "to", "source", "destination", "target", "src", "dst", "dest", "origin"})
"""Tokens that say which end of an operation a parameter is (``move_file(source, destination)``,
``relations[].from``), not what it is: the description says that, or else the tool's own description."""

ENDS = frozenset({"between", "from"})
"""Words after which a description names the ends of an operation ("Find flights between two airports": the
ends are airports, not flights)."""

HIERARCHICAL = frozenset({"path"})
"""Concepts whose new values are made inside existing ones: a tool that creates a directory still takes the
directory it goes in."""

WRITERS = frozenset({"move", "delete", "remove", "write", "edit", "update", "set", "reset", "rename", "drop",
                     "append", "insert", "clear"})
"""First name tokens of tools whose text result is a confirmation: they give nothing by mention."""

MAKERS = frozenset({"create", "add", "new", "make"})
"""First name tokens of tools that make their own concept from what they are given (``create_entities``): their
parameters of that concept are new values, fed by no other tool."""

READERS = frozenset({"read", "list", "search", "find", "tree", "open", "show", "edit", "view"})
"""Name tokens of tools that work on what something already holds: a thing just made (by mention: a new
directory, a new table) holds nothing yet and feeds none of them."""

CONTEXT_SHARE = 0.5
"""A parameter concept that more than this share of the tools take is the session's context."""


@dataclass(frozen=True)
class Need:
    parameter: str
    concept: str


def _concept(lex: Lexicon, word: str) -> str:
    lem = lex.lemma(word)
    return SAME_CONCEPT.get(word, SAME_CONCEPT.get(lem, lem))


def _first_sentence(text: str) -> str:
    return text.split(". ", 1)[0]


def _holds_values(lex: Lexicon, word: str, desc: str) -> bool:
    """Whether the description calls the parameter the contents of its concept ("An array of observation
    contents"): then it carries values, it names nothing."""
    toks = tokens(desc)
    return any(lex.lemma(a) == lex.lemma(word) and b in VALUES for a, b in zip(toks, toks[1:], strict=False))


def _name_concepts(lex: Lexicon, name: str, desc: str, known: set[str], tool_desc: str = "") -> list[str]:
    """The concepts a parameter names (see the module docstring); [] for a value."""
    toks = tokens(name)
    if not toks or toks[-1] in VALUES:
        return []
    core = [t for t in toks if t not in GENERIC and t not in ROLES]
    if core:
        return [] if _holds_values(lex, core[-1], desc) else [_concept(lex, core[-1])]
    for t in tokens(desc):
        c = _concept(lex, t)
        if c in known and t not in GENERIC and t not in VALUES and t not in ROLES:
            return [c]
    if any(t in ROLES for t in toks):  # an end of the operation: what the tool's description acts on
        words = tokens(_first_sentence(tool_desc))[1:]
        ends = next((i for i, t in enumerate(words) if t in ENDS), None)
        if ends is not None:  # "differences between branches or commits": the ends are branches or commits
            words = words[ends + 1:]
        return list(dict.fromkeys(_concept(lex, t) for t in words if t not in STOP and t not in GENERIC
                                  and t not in VALUES and t not in ROLES and _concept(lex, t) in known))
    return [_concept(lex, toks[-1])] if toks[-1] in ("name", "names", "path", "paths") else []


def _mentioned(lex: Lexicon, tool: Tool, prefix_words: set[str]) -> set[str]:
    """Concepts the tool's name names, and what its description's opening verb acts on ("List all tables",
    "Shows the commit logs"; not "Shows differences between branches")."""
    words = [w for w in tokens(tool.id) if w not in prefix_words]
    opening = [w for w in tokens(tool.desc or "") if w not in STOP and w not in prefix_words][:2]
    return {_concept(lex, w) for w in words + opening if w not in GENERIC and w not in VALUES}


class TextInference:
    """Documented links and mention links over one library (see the module docstring)."""

    def __init__(self, tools: list[Tool]) -> None:
        self.tools = tools
        words = [w for t in tools for w in tokens(t.id) + tokens(t.desc or "")]
        self.lex = Lexicon(words)
        self.prefix = _shared_prefix(tools)
        self.known = {_concept(self.lex, w) for t in tools for w in tokens(t.id)[self.prefix:] if w not in GENERIC}
        self.needs = {t.id: self._needs(t) for t in tools}
        self.prefix_words = set(tokens(tools[0].id)[: self.prefix]) if tools else set()
        self.gave = {t.id: self.gives(t) for t in tools}
        counts: dict[str, int] = {}
        for needs in self.needs.values():
            for c in {n.concept for n in needs}:
                counts[c] = counts.get(c, 0) + 1
        listed = {c for t in tools if self._giver(t) for c in self.gave[t.id]}
        self.context = {c for c, n in counts.items()
                        if len(tools) >= 4 and n > CONTEXT_SHARE * len(tools) and c not in listed}

    def _giver(self, tool: Tool) -> bool:
        own = tokens(tool.id)[self.prefix:]
        return any(w in GIVERS for w in own)

    def _made(self, tool: Tool) -> set[str]:
        """The concepts a maker makes (``create_entities``: entities)."""
        own = tokens(tool.id)[self.prefix:]
        return {_concept(self.lex, w) for w in own[1:]} if own and own[0] in MAKERS else set()

    def _needs(self, tool: Tool) -> list[Need]:
        out: list[Need] = []
        made = self._made(tool)
        for need in self._all_needs(tool):
            if need.concept not in made or need.concept in HIERARCHICAL:
                out.append(need)
        return out

    def _all_needs(self, tool: Tool) -> list[Need]:
        out: list[Need] = []
        for name, _loc, schema, required, desc in params_of(tool):
            if not required:
                continue
            for c in _name_concepts(self.lex, name, desc or "", self.known, tool.desc or ""):
                out.append(Need(name, c))
            items = schema.get("items") if isinstance(schema, dict) else None
            if isinstance(items, dict) and isinstance(items.get("properties"), dict):
                found_req = items.get("required")
                req: list[Any] = found_req if isinstance(found_req, list) else []
                for sub, sub_schema in items["properties"].items():
                    if sub not in req:
                        continue
                    sub_desc = sub_schema.get("description", "") if isinstance(sub_schema, dict) else ""
                    for sc in _name_concepts(self.lex, sub, str(sub_desc), self.known, tool.desc or ""):
                        out.append(Need(f"{name}[].{sub}", sc))
        return out

    def gives(self, tool: Tool) -> dict[str, tuple[str | None, str]]:
        """concept -> (returned field or None, how it is known)."""
        out: dict[str, tuple[str | None, str]] = {}
        schema, _ = result_schema(tool)
        inputs = {name for name, *_ in params_of(tool)} | {sub for _, _, sch, _, _ in params_of(tool)
                                                           for sub, _ in properties(sch)}
        made = self._made(tool)
        for key, _sub in properties(schema):
            for t in tokens(key):
                c = _concept(self.lex, t)
                if t not in GENERIC and not (key in inputs and c not in made):  # an input echoed back is nothing new
                    out.setdefault(c, (key, f"it returns '{key}'"))
        takes = {n.concept for n in self.needs[tool.id]}
        giver = self._giver(tool)
        own = tokens(tool.id)[self.prefix:]
        if own and own[0] in WRITERS:
            return out
        for c in _mentioned(self.lex, tool, self.prefix_words):
            if c not in out and (c not in takes or giver):
                out[c] = (None, f"its name or description mentions {c}s")
        return out

    def links(self, existing: set[tuple[str, str]], quiet: set[str],
              understood: AbstractSet[tuple[str, str]] = frozenset()) -> list[ToolLink]:
        """Mention links for the pairs that have no link yet; none from the tools in ``quiet``, none into the
        (tool, parameter) pairs in ``understood`` (identifiers whose entity the schema rules resolved: what
        returns them is known, so a mere mention says nothing more)."""
        gives = self.gave
        out: list[ToolLink] = []
        for b in self.tools:
            found: dict[str, list[LinkReason]] = {}
            given = {c for t in self.tools if t.id != b.id for c in gives[t.id]}
            whole = {n.parameter for n in self.needs[b.id] if "[]" not in n.parameter and n.concept in given}
            reads = bool(READERS & set(tokens(b.id)[self.prefix:]))
            for need in self.needs[b.id]:
                if need.concept in self.context or (b.id, need.parameter.split("[]")[0]) in understood:
                    continue
                if need.parameter.split("[]")[0] in whole and "[]" in need.parameter:
                    continue  # the objects come whole from what gives them (delete_relations: relations)
                for a in self.tools:
                    if a.id == b.id or a.id in quiet or (a.id, b.id) in existing:
                        continue
                    hit = gives[a.id].get(need.concept)
                    if hit is None:
                        continue
                    field, how = hit
                    if field is None and reads and need.concept in self._made(a):
                        continue  # a new directory holds nothing to read yet
                    found.setdefault(a.id, []).append(LinkReason(
                        rule="mention", output=field, parameter=need.parameter, confidence="low",
                        note=f"{_article(need.concept)} {need.concept}: {how}"))
            for a_id, reasons in found.items():
                out.append(ToolLink(source=a_id, target=b.id, type="data", reasons=tuple(reasons[:4])))
        return out


def documented_links(tools: list[Tool]) -> list[ToolLink]:
    """The OpenAPI ``links`` of each operation, as data links with reasons of rule ``documented``."""
    ids = {t.id for t in tools}
    out: list[ToolLink] = []
    for t in tools:
        if t.http is None:
            continue
        seen: set[str] = set()
        for link in t.http.links:
            target = str(link.get("target"))
            if target not in ids or target == t.id or target in seen:
                continue
            seen.add(target)
            params = link.get("parameters")
            pairs = list(params.items()) if isinstance(params, dict) else []
            reasons = tuple(LinkReason(rule="documented", output=_pointer(str(expr)), parameter=name,
                                       note="the spec's link", confidence="high") for name, expr in pairs[:4])
            out.append(ToolLink(source=t.id, target=target, type="data", reasons=reasons or (
                LinkReason(rule="documented", note="the spec's link", confidence="high"),)))
    return out


def _pointer(expr: str) -> str | None:
    """``$response.body#/owner/username`` -> ``owner.username``."""
    if "#/" not in expr:
        return None
    return ".".join(p for p in expr.split("#/", 1)[1].split("/") if p) or None


def _shared_prefix(tools: list[Tool]) -> int:
    """Leading name tokens every tool shares (``git_`` of ``git_log``), which say nothing of what it does."""
    toks = [tokens(t.id) for t in tools]
    if len(toks) < 2:
        return 0
    n = 0
    while all(len(t) > n + 1 for t in toks) and len({t[n] for t in toks}) == 1:
        n += 1
    return n


def _article(word: str) -> str:
    return "an" if word[:1] in "aeio" else "a"


__all__ = ["TextInference", "documented_links"]
