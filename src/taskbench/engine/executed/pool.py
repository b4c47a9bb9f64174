"""The environment's own data, read through its own tools: which entities exist, and which names a search
finds. Nothing is invented: a task's first call takes a name that this environment's search is known to find
first, so every gold call can succeed.

The crawl (:func:`crawl`):

1. every read operation that needs nothing from an earlier call is called (each value of its choices, up to a
   few combinations; a page or two of lists);
2. from every result, the items at each returned field that feeds another operation (``results[].id`` feeds
   ``person_id``) are recorded as entities: their id and their name (the item's ``name`` or ``title``);
3. read operations that take one of those ids are called for some of them, and their results harvested the same
   way (a movie's credits give people; an album gives tracks), up to ``budget`` calls in all;
4. each search operation (a ``named`` parameter) is tried with the names of the entities its results feed the
   same parameters as, and a name is kept for it when the search's first hit is that entity.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...schema import ToolCall, ToolResult
from .ops import Feed, Operation, add_feed
from .paths import FieldPath, get

Caller = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]

NAME_KEYS = ("name", "title", "original_name", "original_title", "display_name")
CRAWL_BUDGET = 1200
SEARCH_BUDGET = 200
"""Calls per search operation and returned field spent on finding which names it finds first."""
PER_KIND = 40
"""Ids of one kind whose operations the crawl calls (seeded choice)."""
MAX_CHOICES = 4


@dataclass(frozen=True)
class Entity:
    """Something the environment holds: its id, its name, and the parameters its id feeds (its kind)."""

    id: Any
    name: str
    kind: frozenset[tuple[str, str]]


@dataclass
class Pool:
    """What the crawl found."""

    entities: dict[frozenset[tuple[str, str]], dict[str, Entity]] = field(default_factory=dict)
    found: dict[tuple[str, str], list[Entity]] = field(default_factory=dict)
    """(search operation, returned field) -> entities that search finds first by name."""
    seen: dict[str, int] = field(default_factory=dict)
    """How many results each entity (by id) appeared in: well-known entities come first when names are tried."""
    calls: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    """Crawl calls that failed, by operation (reported, never fatal)."""

    def add(self, entity: Entity) -> bool:
        bucket = self.entities.setdefault(entity.kind, {})
        key = str(entity.id)
        self.seen[key] = self.seen.get(key, 0) + 1
        if key in bucket:
            return False
        bucket[key] = entity
        return True

    def of_kind(self, kind: frozenset[tuple[str, str]]) -> list[Entity]:
        """Entities whose kind shares a fed parameter with ``kind``."""
        out: dict[str, Entity] = {}
        for k, bucket in self.entities.items():
            if k & kind:
                for key, e in bucket.items():
                    out.setdefault(key, e)
        return list(out.values())

    def summary(self) -> dict[str, Any]:
        return {"entities": sum(len(b) for b in self.entities.values()), "calls": self.calls,
                "searchable": {f"{op} {path}": len(v) for (op, path), v in sorted(self.found.items())},
                "failed_calls": dict(sorted(self.failed.items()))}


def kind_of(op: Operation, output: str) -> frozenset[tuple[str, str]]:
    """The parameters a returned field of ``op`` feeds: what kind of thing its values identify."""
    return frozenset((f.target, f.parameter) for f in op.outputs.get(output, []))


def items_at(content: Any, output: str) -> list[tuple[Any, dict[str, Any]]]:
    """(id, the object holding it) for every value at ``output`` in ``content``."""
    path = FieldPath.parse(output)
    out: list[tuple[Any, dict[str, Any]]] = []
    if path.list_parts is None:
        holder = get(content, list(path.rest[:-1])) if len(path.rest) > 1 else content
        value = get(content, list(path.rest))
        if isinstance(holder, dict) and value is not None:
            out.append((value, holder))
        return out
    lst = get(content, list(path.list_parts))
    if not isinstance(lst, list):
        return out
    for item in lst:
        holder = get(item, list(path.rest[:-1])) if len(path.rest) > 1 else item
        value = get(item, list(path.rest))
        if isinstance(holder, dict) and value is not None and not isinstance(value, (dict, list)):
            out.append((value, holder))
    return out


def display_name(holder: dict[str, Any]) -> str | None:
    """An object's name (its ``name``, ``title``, ...), when it has a short one."""
    for key in NAME_KEYS:
        value = holder.get(key)
        if isinstance(value, str) and 0 < len(value.strip()) <= 80:
            return value.strip()
    return None


def choice_values(op: Operation, param: str, output: str | None = None) -> list[Any]:
    """The values a choice parameter may take, those matching ``output`` first (``type=artist`` for
    ``artists.items[].id``)."""
    schema = op.params.get(param, {})
    values = schema.get("enum") or (schema.get("items") or {}).get("enum") or []
    values = [v for v in values if v is not None]
    if output:
        words = {re.sub(r"s$", "", w) for w in re.split(r"[.\[\]_]+", output.lower()) if w}
        matching = [v for v in values if isinstance(v, str) and re.sub(r"s$", "", v.lower()) in words]
        values = matching + [v for v in values if v not in matching]
    if schema.get("type") == "array":
        return [[v] for v in values]
    return list(values)


def number_value(op: Operation, param: str, rng: random.Random) -> int | None:
    schema = op.params.get(param, {})
    try:
        low = int(float(schema.get("minimum", 0)))
        high = int(float(schema.get("maximum", 100)))
    except (TypeError, ValueError):
        return None
    if high < low:
        return None
    if high - low >= 20:  # a round value reads like a person's choice ("set the volume to 40")
        return rng.choice(range(low + (-low) % 5, high + 1, 5) or [low])
    return rng.randint(low, high)


def named_objects(content: Any, depth: int = 3) -> list[tuple[str, Any, str]]:
    """(list key, id, name) of every object with an id and a name in the lists of a result."""
    out: list[tuple[str, Any, str]] = []

    def walk(value: Any, key: str, level: int) -> None:
        if level > depth:
            return
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, (dict, list)):
                    walk(v, str(k), level + 1)
        elif isinstance(value, list):
            for item in value[:50]:
                if isinstance(item, dict):
                    name = display_name(item)
                    ident = item.get("id")
                    if name is not None and isinstance(ident, (str, int)) and not isinstance(ident, bool):
                        out.append((key, ident, name))
                    walk(item, key, level + 1)

    walk(content, "", 0)
    return out


ID_KEY = re.compile(r"^(id|uri|[a-z]+_id|[a-z]+_number)$")


def id_paths(content: Any, depth: int = 4) -> list[str]:
    """Paths of identifier-like fields in a result (``results[].id``, ``item.album.id``): lists written ``[]``."""
    out: list[str] = []

    def walk(value: Any, path: str, level: int) -> None:
        if level > depth or len(out) >= 60:
            return
        if isinstance(value, dict):
            for key, v in value.items():
                sub = f"{path}.{key}" if path else str(key)
                if ID_KEY.match(str(key)) and isinstance(v, (str, int)) and not isinstance(v, bool):
                    out.append(sub)
                elif isinstance(v, (dict, list)):
                    walk(v, sub, level + 1)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            walk(value[0], f"{path}[]", level + 1)

    walk(content, "", 0)
    return out


def _rank(path: str, param: str) -> float:
    key = path.rsplit(".", 1)[-1]
    qualifier = param.rsplit("_", 1)[0] if "_" in param else ""
    score = 0.0
    if key == param:
        score += 3
    if key in ("id", "uri") and (param.endswith(("_id", "_ids", "_uri")) or param in ("id", "ids", "uri", "uris")):
        score += 2
    if qualifier and qualifier in path:
        score += 1
    if "[]" in path:
        score += 0.5
    return score - 0.2 * path.count(".")


async def discover(ops: dict[str, Operation], op: Operation, content: Any, call: Caller, pool: Pool) -> int:
    """For the links of ``op`` whose feeding field the graph could not name, find it in ``content`` (a real
    result of ``op``) by calling the target with the candidates' values; -> the feeds found."""
    found = 0
    for target_name, param in list(op.pending):
        target = ops.get(target_name)
        if target is None or target.writes:
            continue
        others = [p for p in target.required if p != param]
        if any(target.kind(p) != "choice" for p in others):
            continue
        for path in sorted(id_paths(content), key=lambda p: -_rank(p, param))[:4]:
            hits = items_at(content, path)
            if not hits:
                continue
            args: dict[str, Any] = {param: hits[0][0]}
            for p in others:
                args[p] = choice_values(target, p)[0]
            pool.calls += 1
            result = await call(target.name, args)
            if result.error is None:
                add_feed(ops, Feed(source=op.name, output=path, target=target.name, parameter=param))
                found += 1
                break
    return found


async def crawl(ops: dict[str, Operation], call: Caller, *, seed: int = 0, budget: int = CRAWL_BUDGET,
                search_budget: int = SEARCH_BUDGET) -> Pool:
    """Harvest entities and searchable names (see the module docstring)."""
    rng = random.Random(f"crawl:{seed}")
    pool = Pool()
    reads = {n: op for n, op in ops.items() if not op.writes}

    async def visit(op: Operation, args: dict[str, Any]) -> Any:
        if pool.calls >= budget:
            return None
        pool.calls += 1
        result = await call(op.name, args)
        if result.error is not None:
            pool.failed[op.name] = pool.failed.get(op.name, 0) + 1
            return None
        if op.pending:
            await discover(ops, op, result.content, call, pool)
        for output in op.outputs:
            kind = kind_of(op, output)
            for value, holder in items_at(result.content, output):
                name = display_name(holder)
                if name is not None and isinstance(value, (str, int)):
                    pool.add(Entity(id=value, name=name, kind=kind))
        for key, ident, label in named_objects(result.content):  # whatever the graph says, names are names
            pool.add(Entity(id=ident, name=label, kind=frozenset({("?", key)})))
        return result.content

    # 1. operations that need nothing from an earlier call (choices only)
    for op in reads.values():
        if not all(op.kind(p) == "choice" for p in op.required):
            continue
        combos = list(itertools.product(*[choice_values(op, p) for p in op.required])) or [()]
        rng.shuffle(combos)
        for combo in combos[:MAX_CHOICES]:
            await visit(op, dict(zip(op.required, combo, strict=True)))
    # 2. operations taking one id, for some entities of each kind, until the budget is spent
    fed_ops = [op for op in reads.values()
               if sum(1 for p in op.required if op.kind(p) == "fed") == 1
               and all(op.kind(p) in ("fed", "choice") for p in op.required)]
    for _ in range(2):  # two rounds: ids found in the first round are visited in the second
        for op in fed_ops:
            param = next(p for p in op.required if op.kind(p) == "fed")
            kind = frozenset({(op.name, param)})
            candidates = [e for e in pool.of_kind(kind)]
            rng.shuffle(candidates)
            for e in candidates[:PER_KIND]:
                args: dict[str, Any] = {param: e.id}
                for p in op.required:
                    if p != param:
                        args[p] = choice_values(op, p)[0]
                await visit(op, args)
    # 3. which names each search finds first (a search whose fields the graph could not name learns them from
    #    the result of a name the crawl found: the first that gives a result)
    for op in reads.values():
        named = [p for p in op.required if op.kind(p) == "named"]
        if len(named) != 1:
            continue
        if op.pending:
            everyone = [e for bucket in pool.entities.values() for e in bucket.values()]
            rng.shuffle(everyone)
            everyone.sort(key=lambda e: -pool.seen.get(str(e.id), 0))
            known = list(dict.fromkeys(e.name for e in everyone))
            for name in known[:20]:
                args = {named[0]: name}
                for p in op.required:
                    if p != named[0] and op.kind(p) == "choice":
                        args[p] = choice_values(op, p)[0]
                pool.calls += 1
                result = await call(op.name, args)
                if result.error is None and id_paths(result.content):
                    await discover(ops, op, result.content, call, pool)
                    if not op.pending:
                        break
        for output in op.outputs:
            path = FieldPath.parse(output)
            if path.list_parts is None or path.rest != ("id",) and path.rest[-1] != "id":
                continue
            kind = kind_of(op, output)
            anonymous = frozenset(pair for kinds in pool.entities for pair in kinds if pair[0] == "?")
            candidates = pool.of_kind(kind) + pool.of_kind(anonymous)
            candidates = list({str(e.id): e for e in candidates}.values())
            rng.shuffle(candidates)
            candidates.sort(key=lambda e: -pool.seen.get(str(e.id), 0))  # well-known ones first, ties seeded
            found: list[Entity] = []
            for e in candidates[:search_budget]:
                args = {named[0]: e.name}
                for p in op.required:
                    if p != named[0] and op.kind(p) == "choice":
                        args[p] = choice_values(op, p, output)[0]
                pool.calls += 1
                result = await call(op.name, args)
                hits = items_at(result.content, output) if result.error is None else []
                if hits and str(hits[0][0]) == str(e.id) and display_name(hits[0][1]) == e.name:
                    found.append(e)
            if found:
                pool.found[(op.name, output)] = found
    return pool


def make_caller(env: Any) -> Caller:
    """A caller through ``env`` (calls are recorded by the environment as any call is; reset it afterwards)."""
    counter = itertools.count()

    async def call(name: str, args: dict[str, Any]) -> ToolResult:
        result: ToolResult = await env.call(ToolCall(id=f"crawl-{next(counter)}", name=name, arguments=args))
        return result

    return call


__all__ = ["CRAWL_BUDGET", "Caller", "Entity", "Pool", "choice_values", "crawl", "discover", "display_name",
           "id_paths", "items_at", "kind_of", "make_caller", "number_value"]
