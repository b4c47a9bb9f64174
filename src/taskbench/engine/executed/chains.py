"""Executable chains: calls sampled over the inferred tool graph, each argument taken from the environment's
data or from an earlier call's result, executed as they are sampled, and ended by a *target*: what the last
result answers (a field, a few values, a count) or, for a write, the state it leaves.

One chain is drawn from ``random.Random((seed, index))`` alone, so plan entry *i* is the same on every rerun:

1. a start: a search whose first hit is an entity the crawl saw (``GET /search/person`` with ``query="Tom
   Hanks"``), or an operation that takes only choices (``GET /movie/top_rated``,
   ``GET /trending/{media_type}/{time_window}`` with ``movie``, ``day``);
2. each next call takes an identifier that the previous result holds (the link reason ``results[].id ->
   person_id``), picked from its list: the first item, the first with some value of a categorical field (a
   crew entry whose ``job`` is ``Director``), or the one with the largest or smallest date or number (the
   latest film);
3. the target: a field of the last result (of a picked item, for a list), all values of a short filtered list,
   a count, or the first few items; for a write (PUT, POST, DELETE), the change in the environment's state.

Every call is made as it is sampled; a call that fails ends the attempt with the reason, counted by the job.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...schema import ToolResult
from .ops import Operation
from .paths import FieldPath, Pick, _jkey, get, jmes_path, py_path
from .pool import Caller, Entity, Pool, choice_values, display_name, number_value

SKIP_KEYS = re.compile(r"(^|_)(id|ids|uri|uris|href|url|type|adult|video|iso_\d+_\d+|iso_3166_1|iso_639_1|"
                       r"credit_id|snapshot_id|order|popularity|vote_count|gender|external_urls|"
                       r"preview_url|is_local|explicit|disc_number|available_markets|images|width|height|"
                       r"aspect_ratio|vote_average_count|_path|page|total_pages|total_results|total|limit|offset|next|previous|"
                       r"original_language|status_code|success|backdrop_path|homepage_url)$", re.I)
"""Fields that are not asked for: identifiers, internal codes, flags, sizes (image paths are asked for by
name: ``file_path``, ``logo_path``)."""
ASK_PATHS = re.compile(r"^(file_path|logo_path|poster_path|profile_path|still_path)$")
MAX_TEXT = 60
"""Longest text value asked for (longer texts, such as overviews, are not answers a checker can hold)."""
MAX_VALUES = 4
FEED_FIELD = re.compile(r"(^|\.)(id|uri|[a-z]+_number)$")
"""Returned fields a chain follows: an entity's id or uri, a season or episode number."""
SEARCH_SHARE = 0.7
"""Share of chains that start with a search for a named thing (the rest start at a list such as top rated)."""
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass
class Step:
    """One executed call of a chain."""

    op: str
    args: dict[str, Any]
    """The arguments as called (typed)."""
    sources: dict[str, int] = field(default_factory=dict)
    """parameter -> the earlier step whose extracted value it took."""
    content: Any = None
    output: str | None = None
    """For a step that feeds the next: the returned field it feeds from, and how the item was picked."""
    pick: Pick | None = None
    value: Any = None
    """What this step extracted (the id the next step takes, or the answer of the last step)."""
    item_name: str | None = None
    """The name of the item picked, when it has one (kept out of the request unless the user named it)."""
    named: dict[str, str] = field(default_factory=dict)
    """parameter -> the name the user gives (a search's query)."""
    jmes: str = ""
    py: str = ""
    phrase: str = ""

    def record(self) -> dict[str, Any]:
        return {"tool": self.op, "arguments": self.args, "from": {k: v for k, v in self.sources.items()},
                "named": self.named, "extract": self.jmes, "code": self.py, "target": self.phrase,
                "value": self.value, "item": self.item_name}


@dataclass
class Target:
    """What the task asks for: ``kind`` field | values | count | top | state."""

    kind: str
    jmes: str = ""
    py: str = ""
    phrase: str = ""
    values: list[Any] = field(default_factory=list)
    checker: list[dict[str, Any]] = field(default_factory=list)
    """Extra checker conditions (state checks for writes)."""

    def record(self) -> dict[str, Any]:
        return {"kind": self.kind, "extract": self.jmes, "code": self.py, "target": self.phrase,
                "values": self.values, "checker": self.checker}


@dataclass
class Chain:
    steps: list[Step]
    target: Target | None = None
    structure: str = "chain"

    @property
    def gold_path(self) -> list[str]:
        return [s.op for s in self.steps]


class Unrealizable(Exception):
    """A sampled chain that cannot be executed (the reason is the message, a short code first)."""


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def askable(key: str, value: Any) -> bool:
    """Whether a field is something a person asks for."""
    if ASK_PATHS.match(key):
        return isinstance(value, str) and bool(value)
    if SKIP_KEYS.search(key):
        return False
    if isinstance(value, str):
        return 0 < len(value.strip()) <= MAX_TEXT and not value.startswith(("http://", "https://", "spotify:")) \
            and (bool(DATE.match(value)) or bool(re.search(r"[A-Za-z]{2}", value))) \
            and not re.fullmatch(r"[a-z]{2,3}", value)
    # a number of 0 in a service's data most often means "not known" (a budget, a revenue, a runtime): no
    # person asks for it, and "0" would be an answer guessed without a call
    return _scalar(value) and value != 0


ORDERED = re.compile(r"^(order|position|rank|track_number|episode_number)$")
ENVELOPES = ("results", "items", "data")


def ordered(parts: Sequence[str], items: list[Any]) -> bool:
    """Whether "the first" item of a list means something: a ranking or search result (an envelope such as
    ``results``), or items that carry their position (a cast's ``order``)."""
    if parts and parts[-1] in ENVELOPES:
        return True
    first = items[0] if items and isinstance(items[0], dict) else {}
    return any(ORDERED.match(k) for k in first)


def wordy(value: Any) -> bool:
    """A value a person would say: words, not a date, a code or a number."""
    return isinstance(value, str) and 3 < len(value) <= 30 and bool(re.search(r"[A-Za-z]{3}", value)) and \
        not DATE.match(value) and not re.fullmatch(r"[a-z]{2,3}(-[A-Z]{2})?", value)


def categorical_keys(items: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    """Keys whose values sort the items into a few named groups (``job``: Director, Writer, ...)."""
    out = []
    keys = {k for x in items for k in x}
    for key in sorted(keys):
        if SKIP_KEYS.search(key) or key in ("name", "title", "original_name", "original_title", "character",
                                             "overview", "biography", "content", "author", "tagline"):
            continue
        values = [x.get(key) for x in items if isinstance(x.get(key), str)]
        if not values or len(values) < len(items) * 0.8 or not all(wordy(v) for v in values):
            continue
        distinct = list(dict.fromkeys(values))  # in list order: the main entries of a credit list come first
        if 2 <= len(distinct) <= 60 and len(distinct) < len(values):
            out.append((key, distinct))
    return out


def early_value(values: list[Any], rng: random.Random) -> Any:
    """One of the values, those of the first items most often (a film's director, not its third grip)."""
    head = values[: max(2, min(5, len(values)))]
    return rng.choice(head) if rng.random() < 0.8 else rng.choice(values)


def entity_items(items: list[Any]) -> bool:
    """Whether the items are things with names (films, people), not media files."""
    dicts = [x for x in items if isinstance(x, dict)]
    return bool(dicts) and any(k in dicts[0] for k in ("name", "title")) and "file_path" not in dicts[0]


def sortable_keys(items: list[dict[str, Any]]) -> list[str]:
    """Keys with dates or numbers to rank the items by."""
    out = []
    keys = {k for x in items for k in x}
    for key in sorted(keys):
        if re.search(r"(^|_)(id|order|count|gender|width|height|number)$", key):
            continue
        values = [x.get(key) for x in items if x.get(key) not in (None, "")]
        if len(values) < 2:
            continue
        if all(isinstance(v, str) and DATE.match(v) for v in values) or \
                all(_scalar(v) and not isinstance(v, str) for v in values):
            if len(set(map(str, values))) >= 2:
                out.append(key)
    return out


def picks_for(items: list[Any], rng: random.Random, *, first_only: bool = False, first: bool = True,
              ranked: bool = False) -> list[Pick]:
    """The ways to pick one item of ``items`` in a seeded order (``first``: whether the list's order means
    something, so that "the first" may be one of them; ``ranked``: the list is a ranking already (top rated,
    popular, trending), so no other order is put on it: "the lowest rated of the top rated" is nobody's
    question)."""
    dicts = [x for x in items if isinstance(x, dict)]
    if not dicts:
        return []
    out = [Pick("first")]
    if first_only or len(dicts) < 2 or not entity_items(dicts):
        return out
    cats = categorical_keys(dicts)
    sorts = sortable_keys(dicts)
    if cats:
        key, values = rng.choice(cats)
        out.append(Pick("where", key=key, value=early_value(values, rng)))
    if sorts and not ranked:
        by = rng.choice(sorts)
        out.append(Pick(rng.choice(["max", "min"]) if not DATE.match(str(dicts[0].get(by, ""))) else "max", by=by))
        if cats:
            key, values = rng.choice(cats)
            out.append(Pick("max", key=key, value=early_value(values, rng), by=by))
    head, rest = out[0], out[1:]
    rng.shuffle(rest)
    if not first:
        return rest
    return [*rest, head] if rng.random() < 0.6 else [head, *rest]


def noun_of(parts: Sequence[str]) -> str:
    """``cast`` -> ``cast member``; ``results`` -> ``result``; ``tracks.items`` -> ``track``."""
    words = [p for p in parts if p not in ("items", "data")]
    word = words[-1] if words else (parts[-1] if parts else "item")
    if word == "results":
        return "result"
    if word in ("cast", "crew"):
        return f"{word} member"
    return re.sub(r"ies$", "y", word) if word.endswith("ies") else re.sub(r"s$", "", word)


async def _call(call: Caller, op: str, args: dict[str, Any]) -> ToolResult:
    return await call(op, args)


def _fill_free(op: Operation, rng: random.Random, args: dict[str, Any], output: str | None = None) -> None:
    """Choices and numbers of ``op`` that are required (raises Unrealizable for what cannot be filled)."""
    for p in op.required:
        if p in args:
            continue
        kind = op.kind(p)
        if kind == "choice":
            values = choice_values(op, p, output)
            if not values:
                raise Unrealizable(f"unfillable: {op.name} {p}")
            args[p] = values[0] if output else rng.choice(values)
        elif kind == "number":
            value = number_value(op, p, rng)
            if value is None:
                raise Unrealizable(f"unfillable: {op.name} {p}")
            args[p] = value
        else:
            raise Unrealizable(f"unfillable: {op.name} needs {p} ({kind})")


@dataclass
class Start:
    """A way to start a chain: a search with a name it finds first, or an operation that takes choices only."""

    op: str
    output: str | None = None
    entities: list[Entity] = field(default_factory=list)


def starts(ops: dict[str, Operation], pool: Pool) -> list[Start]:
    """Every way to start a chain."""
    out = [Start(op=name, output=output, entities=found) for (name, output), found in sorted(pool.found.items())]
    for op in ops.values():
        if not op.startable():
            continue
        if any(op.kind(p) == "named" for p in op.required):
            continue
        out.append(Start(op=op.name))
    return out


class Sampler:
    """Draws executable chains (see the module docstring)."""

    def __init__(self, ops: dict[str, Operation], pool: Pool, call: Caller, *, exclude: Any = None) -> None:
        self.ops = ops
        self.pool = pool
        self.call = call
        self.starts = starts(ops, pool)
        self.exclude = exclude
        """A callable (entity name, operations so far) -> True to refuse: the held-out pairs."""

    async def sample(self, rng: random.Random, length: int) -> Chain:
        """One chain of ``length`` calls (raises Unrealizable with the reason)."""
        if not self.starts:
            raise Unrealizable("no_start: no operation can start a chain (no search finds a name, and every "
                               "operation needs an earlier result)")
        searches = [s for s in self.starts if s.entities]
        lists = [s for s in self.starts if not s.entities]
        if searches and (not lists or rng.random() < SEARCH_SHARE):
            # a search in proportion to the square root of the names it finds: 140 films and 20 companies give
            # films more often, without making companies rare
            start = rng.choices(searches, weights=[len(s.entities) ** 0.5 for s in searches])[0]
        else:
            start = rng.choice(lists)
        op = self.ops[start.op]
        args: dict[str, Any] = {}
        named: dict[str, str] = {}
        if start.entities:
            entity = rng.choice(start.entities)
            param = next(p for p in op.required if op.kind(p) == "named")
            args[param] = entity.name
            named[param] = entity.name
        _fill_free(op, rng, args, start.output)
        steps = [Step(op=op.name, args=args, named=named)]
        await self._run(steps[-1])
        if op.writes:  # a write that needs nothing from earlier calls is a task of its own ("skip this song")
            return Chain(steps=steps, structure="single")
        for k in range(length - 1):
            nxt = await self._extend(steps, rng, first_only=bool(start.entities) and len(steps) == 1,
                                     output=start.output if len(steps) == 1 else None, final=k == length - 2)
            steps.append(nxt)
            if self.ops[nxt.op].writes:
                break
        return Chain(steps=steps, structure="single" if len(steps) == 1 else "chain")

    async def _run(self, step: Step) -> None:
        result = await self.call(step.op, step.args)
        if result.error is not None:
            raise Unrealizable(f"call_failed: {step.op}: {result.error[:120]}")
        step.content = result.content

    async def _extend(self, steps: list[Step], rng: random.Random, *, first_only: bool,
                      output: str | None, final: bool = True) -> Step:
        """Pick a field of the last result that feeds another operation, and call that operation."""
        last = steps[-1]
        op = self.ops[last.op]
        used = {s.op for s in steps}
        options = []
        for out, feeds in op.outputs.items():
            if output is not None and out != output:
                continue
            if not FEED_FIELD.search(out):
                continue  # a credit id or a snapshot id: a link no person follows
            for feed in feeds:
                target = self.ops.get(feed.target)
                if target is None or feed.target in used or feed.parameter not in target.required:
                    continue
                if set(target.outputs) == set(op.outputs) and len(steps) >= 1 and steps[0].op != last.op:
                    continue  # a list of the same things again (similar of recommended): nobody asks that
                if target.writes and not final:
                    continue  # a write ends a chain: what it changed is the task's answer
                options.append((out, feed))
        rng.shuffle(options)
        for out, feed in options[:6]:
            target = self.ops[feed.target]
            path = FieldPath.parse(out)
            if path.list_parts is not None:
                items = get(last.content, list(path.list_parts))
                if not isinstance(items, list) or not items:
                    continue
                ranking = not last.named and len(steps) == 1 and bool(path.list_parts) and \
                    path.list_parts[-1] in ENVELOPES
                picks: list[Pick | None] = list(picks_for(items, rng, first_only=first_only,
                                                          first=ordered(path.list_parts, items), ranked=ranking))
            else:
                picks = [None]
            for pick in picks[:2]:
                value, holder = _extract(last.content, path, pick)
                if value is None or isinstance(value, (dict, list)):
                    continue
                args = {feed.parameter: value if target.params.get(feed.parameter, {}).get("type") != "array"
                        else [value]}
                try:
                    _fill_free(target, rng, args, out)
                except Unrealizable:
                    break
                step = Step(op=target.name, args=args, sources={feed.parameter: len(steps) - 1})
                try:
                    await self._run(step)
                except Unrealizable:
                    continue
                _describe_feed(last, path, pick, holder, value)
                return step
        raise Unrealizable(f"dead_end: nothing that {last.op} returns leads to a call that succeeds")

    def target(self, chain: Chain, rng: random.Random) -> Target:
        """What the chain's last result answers (raises Unrealizable when it answers nothing askable)."""
        last = chain.steps[-1]
        said = [v for s in chain.steps for v in s.named.values()]
        ranked = len(chain.steps) == 1 and not last.named  # a single call to a ranking: top rated, popular
        options = targets(last.content, rng, said, ranked=ranked)
        if not options:
            raise Unrealizable(f"no_target: {last.op} returns nothing to ask for")
        target = options[0]
        last.jmes, last.py, last.phrase = target.jmes, target.py, target.phrase
        last.value = target.values if target.kind in ("values", "top") else (target.values[0] if target.values else None)
        return target


def _extract(content: Any, path: FieldPath, pick: Pick | None) -> tuple[Any, dict[str, Any] | None]:
    if path.list_parts is None:
        holder = get(content, list(path.rest[:-1])) if len(path.rest) > 1 else content
        return get(content, list(path.rest)), holder if isinstance(holder, dict) else None
    items = get(content, list(path.list_parts))
    assert pick is not None and isinstance(items, list)
    item = pick.choose(items)
    if item is None:
        return None, None
    holder = get(item, list(path.rest[:-1])) if len(path.rest) > 1 else item
    return get(item, list(path.rest)), holder if isinstance(holder, dict) else None


def _describe_feed(step: Step, path: FieldPath, pick: Pick | None, holder: dict[str, Any] | None, value: Any) -> None:
    """Set how ``step`` extracts the value the next step takes (JMESPath, Python, phrase)."""
    field_name = path.rest[-1] if path.rest else "value"
    if path.list_parts is None:
        step.jmes = path.rest_jmes()
        step.py = f"response{path.rest_py()}"
        step.phrase = f"the {field_name}" + (f" of {' '.join(path.rest[:-1])}" if len(path.rest) > 1 else "")
    else:
        assert pick is not None
        lst_j, lst_p = jmes_path(list(path.list_parts)), f"response{py_path(list(path.list_parts))}"
        item_j, item_p = pick.item_jmes(lst_j), pick.item_py(lst_p)
        rest_j, rest_p = path.rest_jmes(), path.rest_py()
        step.jmes = f"{item_j}.{rest_j}" if rest_j else item_j
        if " | " in item_j and rest_j:
            step.jmes = f"{item_j}.{rest_j}"
        step.py = f"{item_p}{rest_p}"
        noun = noun_of(path.list_parts)
        inner = " ".join(p.replace("[0]", "") for p in path.rest[:-1])
        step.phrase = f"the {field_name} of " + (f"the first {inner} of " if inner else "") + pick.phrase(noun)
        step.pick = pick
    step.output = ".".join(path.list_parts or ()) + ("[]" if path.list_parts else "") + \
        ("." if path.list_parts and path.rest else "") + ".".join(path.rest)
    step.value = value
    step.item_name = display_name(holder) if holder is not None else None


KIND_WEIGHT = {"pick": 3.0, "values": 3.0, "count": 1.5, "top": 1.0, "field": 2.0}
"""How often each kind of target is chosen (seeded, weighted)."""


def targets(content: Any, rng: random.Random, avoid: Sequence[str] = (), *, ranked: bool = False) -> list[Target]:
    """What a result can answer, in a seeded, weighted order (see the module docstring). Values the user gave
    (``avoid``: the names a request must mention) are never the answer."""
    said = {a.strip().lower() for a in avoid}
    out: list[tuple[float, Target]] = []

    def add(target: Target, weight: float) -> None:
        if any(str(v).strip().lower() in said for v in target.values):
            return
        out.append((rng.random() ** (1.0 / weight), target))

    if isinstance(content, dict):
        for key, value in content.items():
            if askable(key, value) and key not in ("name", "title", "original_name", "original_title"):
                weight = KIND_WEIGHT["field"] * (1.5 if DATE.match(str(value)) or not isinstance(value, str) else 1)
                add(Target("field", jmes=_jkey(key), py=f"response[{key!r}]", phrase=f"the {key}",
                           values=[value]), weight)
        lists = [(k, v) for k, v in content.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
        for k, v in content.items():  # an envelope such as tracks.items
            if isinstance(v, dict) and isinstance(v.get("items"), list) and v["items"] and isinstance(v["items"][0], dict):
                lists.append((f"{k}.items", v["items"]))
        for lkey, items in lists:
            for target in _list_targets(lkey.split("."), items, rng, ranked=ranked and lkey in ENVELOPES):
                add(target, KIND_WEIGHT[target.kind] / max(1, len(lists)) ** 0.5)
    elif isinstance(content, list) and content and isinstance(content[0], dict):
        for target in _list_targets([], content, rng):
            add(target, KIND_WEIGHT[target.kind])
    out.sort(key=lambda pair: -pair[0])
    return [t for _, t in out]


def _list_targets(parts: list[str], items: list[dict[str, Any]], rng: random.Random, *,
                  ranked: bool = False) -> list[Target]:
    out: list[Target] = []
    lst_j = jmes_path(parts) if parts else "@"
    lst_p = f"response{py_path(parts)}"
    noun = noun_of(parts) if parts else "item"
    where = ".".join(parts) or "the list"
    fields = sorted({k for x in items for k, v in x.items() if askable(k, v)})
    name_key = next((k for k in ("name", "title") if k in fields), None)
    entities = entity_items(items)
    # a field of one picked item: an entity's name (or a date, a number), a media file's path
    for pick in picks_for(items, rng, first=ordered(parts, items), ranked=ranked)[:3]:
        item = pick.choose(items)
        if item is None:
            continue
        keys = [k for k in fields if askable(k, item.get(k)) and k not in (pick.key or "", pick.by or "")]
        if not entities:
            keys = [k for k in keys if ASK_PATHS.match(k)]
        if not keys:
            continue
        key = name_key if name_key in keys and rng.random() < 0.7 else rng.choice(keys)
        out.append(Target("pick", jmes=f"{pick.item_jmes(lst_j)}.{_jkey(key)}",
                          py=f"{pick.item_py(lst_p)}[{key!r}]",
                          phrase=f"the {key} of {pick.phrase(noun)} in {where}", values=[item[key]]))
    if name_key is None or not entities:
        return out
    # every name of a short filtered list, and how many there are
    cats = categorical_keys(items)
    rng.shuffle(cats)
    for key, values in cats[:2]:
        value = early_value(values, rng)
        if "'" in value:
            continue
        filt_j = f"{lst_j}[?{_jkey(key)}=='{value}']"
        filt_p = f"[x for x in {lst_p} if x.get({key!r}) == {value!r}]"
        chosen = list(dict.fromkeys(x[name_key] for x in items if x.get(key) == value and isinstance(x.get(name_key), str)))
        if 1 <= len(chosen) <= MAX_VALUES:
            out.append(Target("values", jmes=f"{filt_j}.{name_key}", py=f"[x[{name_key!r}] for x in {filt_p}]",
                              phrase=f"every {name_key} of the {noun}s whose {key} is {json.dumps(value)} in {where}",
                              values=chosen))
        count = len([x for x in items if x.get(key) == value])
        if 1 <= count <= 60:
            out.append(Target("count", jmes=f"length({filt_j})", py=f"len({filt_p})",
                              phrase=f"how many {noun}s have {key} {json.dumps(value)} in {where}", values=[count]))
    if len(items) >= 3 and ordered(parts, items):
        k = rng.choice([2, 3])
        names = [x.get(name_key) for x in items[:k]]
        if all(isinstance(n, str) for n in names):
            out.append(Target("top", jmes=f"{lst_j}[:{k}].{name_key}", py=f"[x[{name_key!r}] for x in {lst_p}[:{k}]]",
                              phrase=f"the {name_key}s of the first {k} {noun}s in {where}", values=names))
    return out


__all__ = ["Chain", "Sampler", "Start", "Step", "Target", "Unrealizable", "askable", "categorical_keys",
           "noun_of", "picks_for", "sortable_keys", "starts", "targets"]
