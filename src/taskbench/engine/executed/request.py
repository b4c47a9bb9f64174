"""The request of an executed chain: a model writes what a user would have asked, and the code checks it.

The model sees the calls in words (each operation with the first sentence of its description, its arguments
and what was taken from its result), the answer, and the names the request must contain; it answers
``{"request": ...}`` under a bounded schema (``executed_request.j2``, our wording, with examples of another
service so that no task of the environment is shown). :func:`check_request` then refuses a request that
misses a name the calls need, gives the answer away, speaks in the API's terms, drops a condition, names a list
that only a call outside the plan gives, or copies the examples; each refusal is counted by its code
(:data:`REQUEST_CODES`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ...envs.heldout import fold
from ..prompts import render
from .chains import Chain, Target

REQUEST_CHARS = 220
REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"request": {"type": "string", "minLength": 8, "maxLength": REQUEST_CHARS}},
    "required": ["request"],
    "additionalProperties": False,
}
REQUEST_CODES = {
    "request_misses_name": "the request does not name what a call needs (a search's query)",
    "request_gives_answer": "the request contains the answer",
    "request_api_terms": "the request speaks in the API's terms (paths, ids, field names, JSON)",
    "request_shape": "not a request: too short, too long, or not one sentence or two",
    "request_copies_example": "the request took a word of the prompt's examples (another service: a shelf, a "
                              "novel, a podcast) that its own question does not have",
    "request_drops_condition": "the request lost a condition that decides the answer (which one, how many, "
                               "a role such as the director)",
    "request_unparsed": "the model's answer was not a request",
    "request_other_call": "the request names a list or a kind of thing that only a call outside the plan gives "
                          "(recommendations for a discover call, an episode for a show)",
}


def first_sentence(text: str | None, limit: int = 110) -> str:
    text = " ".join((text or "").split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    out = m.group(1) if m else text
    return out if len(out) <= limit else out[: limit - 3].rstrip() + "..."


def _value_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def describe(chain: Chain, descriptions: dict[str, str]) -> list[str]:
    """The calls of ``chain`` in words, one line each (what the request writer reads)."""
    lines = []
    for i, step in enumerate(chain.steps):
        parts = []
        for name, value in step.args.items():
            if name in step.sources:
                parts.append(f"{name} from call {step.sources[name] + 1}")
            else:
                parts.append(f"{name}={_value_text(value[0] if isinstance(value, list) and len(value) == 1 else value)}")
        args = ", ".join(parts) or "no arguments"
        doc = first_sentence(descriptions.get(step.op))
        what = step.phrase or "the result"
        if step.named and step.item_name:
            what = f"{what}: {json.dumps(step.item_name, ensure_ascii=False)}"
        lines.append(f"{i + 1}. {step.op} ({args}){' - ' + doc if doc else ''}: {what}.")
    return lines


def answer_text(target: Target) -> str:
    if target.kind == "state":
        return "(the change is the answer)"
    return ", ".join(_value_text(v) for v in target.values)


def must_mention(chain: Chain) -> list[str]:
    """The names a request must contain: every named argument (a search's query)."""
    return list(dict.fromkeys(v for s in chain.steps for v in s.named.values()))


_VERB = re.compile(r"^(get|search( for)?|retrieve|list|fetch|find|returns?|show)\s+", re.I)


def words(name: str) -> str:
    """A field or key as words: ``release_date`` -> ``release date``, ``file_path`` -> ``file path``."""
    return " ".join(re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ").split())


def resource(op: str, description: str | None) -> str:
    """What an operation returns, in words: ``Get Movie Credits`` -> ``movie credits``; ``details`` -> ''."""
    text = _VERB.sub("", first_sentence(description).rstrip(".")).strip()
    if not text:
        text = words(op.rsplit("/", 1)[-1])
    text = re.sub(r"\b(current )?user'?s\b", "my", text, flags=re.I)
    low = text.lower()
    return "" if low in ("details", "detail") else low


def subject_of(step: Any, descriptions: dict[str, str]) -> str:
    """The first call's subject: the named thing (``the person "Tom Hanks"``), else the list it reads."""
    op = step.op
    if step.named:
        name = next(iter(step.named.values()))
        segments = [p for p in op.split(" ", 1)[-1].split("/") if p and not p.startswith("{")]
        kind = segments[-1] if segments and segments[-1] not in ("search",) else ""
        if not kind and step.output:  # the list that holds the id: artists.items[] of albums.items[].artists[].id
            holders = [p.replace("[]", "").replace("[0]", "") for p in step.output.split(".")[:-1]
                       if p.replace("[]", "") != "items"]
            kind = re.sub(r"s$", "", holders[-1]) if holders else ""
        return f'the {words(kind)} "{name}"'.replace("the  ", "the ") if kind else f'"{name}"'
    res = resource(op, descriptions.get(op)) or words(op)
    segments = [p for p in op.split(" ", 1)[-1].split("/") if p and not p.startswith("{")]
    noun = words(segments[0]) if segments else ""
    if noun and noun.lower() not in res.lower() and noun.lower() not in ("me", "my"):
        res = f"{res} {noun}s"
    choices = [str(v[0] if isinstance(v, list) and v else v) for v in step.args.values()]
    where = f" ({', '.join(choices)})" if choices else ""
    return f"the {res}{where}"


_SUPERLATIVE_WORDS = {("max", "popularity"): "most popular", ("min", "popularity"): "least popular"}


def path_noun(op: str) -> str:
    """What an operation's results are, by its path: ``GET /movie/upcoming`` -> ``movie``, ``GET /tv/{tv_id}/similar``
    -> ``tv show``; '' when the path does not say."""
    segments = [p for p in op.split(" ", 1)[-1].split("/") if p and not p.startswith("{")]
    if not segments or segments[0] in ("search", "me", "discover", "trending", "browse"):
        segment = segments[1] if len(segments) > 1 and segments[0] in ("search", "discover") else ""
    else:
        segment = segments[0]
    noun = words(segment)
    return "TV show" if noun.lower() == "tv" else noun


def _nouns(text: str, noun: str) -> str:
    """"result" -> the operation's own noun (a movie, a person) where the path says what its results are."""
    if not noun:
        return text
    return re.sub(r"\bresults\b", noun + "s", re.sub(r"\bresult\b", noun, text))


def canonical(chain: Chain, target: Target, descriptions: dict[str, str]) -> str:
    """The request in a plain, stiff form built from the calls alone: what the task asks, unambiguously."""
    steps = chain.steps
    last = len(steps) - 1 if target.kind == "state" else len(steps)
    if target.kind == "state" and last == 0:
        action = first_sentence(descriptions.get(steps[0].op)).rstrip(".") or words(steps[0].op)
        args = ", ".join(f"{words(k)} {v}" for k, v in steps[0].args.items())
        return f"{action}{' (' + args + ')' if args else ''}."
    subject = subject_of(steps[0], descriptions)
    for i in range(1, last):
        prev = steps[i - 1]
        if prev.named and prev.pick is not None and prev.pick.how == "first" and i == 1:
            item = subject  # the search's first hit is the thing named
        elif prev.pick is not None:
            item = _nouns(f"{_pick_words(prev.pick, prev.output or '')} of {subject}", path_noun(prev.op))
        else:
            item = subject
        res = resource(steps[i].op, descriptions.get(steps[i].op))
        subject = f"the {res} of {item}" if res else item
    if target.kind == "state":
        prev = steps[-2]
        item = subject if prev.named and (prev.pick is None or prev.pick.how == "first") and last == 1 else \
            (f"{_pick_words(prev.pick, prev.output or '')} of {subject}" if prev.pick is not None else subject)
        action = first_sentence(descriptions.get(steps[-1].op)).rstrip(".") or words(steps[-1].op)
        extra = {k: v for k, v in steps[-1].args.items() if k not in steps[-1].sources}
        args = ", ".join(f"{words(k)} {v}" for k, v in extra.items())
        return f"{action}{' (' + args + ')' if args else ''}: {item}."
    phrase = _nouns(_target_words(target), path_noun(steps[-1].op))
    for (how, by), word in _SUPERLATIVE_WORDS.items():  # "the movie with the highest popularity" -> "the most popular movie"
        extreme = "highest" if how == "max" else "lowest"
        phrase = re.sub(rf"\bthe (\w+(?: (?!of\b)\w+)?) with the {extreme} {by}\b", rf"the {word} \1", phrase)
    if target.kind == "pick":  # "the most popular movie", not "the title of the most popular movie"
        phrase = re.sub(r"^the (name|title) of ", "", phrase)
    if len(steps) == 1 and steps[0].named and target.kind == "pick" and target.jmes.startswith("results[0]."):
        phrase = re.sub(r" of the first result$", "", phrase)  # the search's first hit is the thing named
    if target.kind == "count":
        return f"{phrase[0].upper()}{phrase[1:]} in {subject}?"
    if target.kind == "top":
        return f"What are {phrase} in {subject}?"
    if target.kind == "values":
        return f"What are {phrase} in {subject}?"
    return f"What is {phrase} of {subject}?" if target.kind == "field" else f"What is {phrase} of {subject}?"


def _pick_words(pick: Any, output: str) -> str:
    """``items[].album.artists[0].id`` picked first -> ``the first artist of the album of the first item``."""
    parts = [p for p in output.split(".") if p]
    cut = next((i for i, p in enumerate(parts) if p.endswith("[]")), 0)
    head = [p.replace("[]", "") for p in parts[:cut + 1] if p.replace("[]", "") != "items"] or ["item"]
    noun = words(head[-1])
    noun = "result" if noun == "results" else re.sub(r"s$", "", noun)
    text = str(pick.phrase(noun)).replace("_", " ")
    for seg in parts[cut + 1:-1]:
        name = words(seg.replace("[0]", ""))
        text = (f"the first {re.sub(r's$', '', name)} of " if seg.endswith("[0]") else f"the {name} of ") + text
    return text


def _target_words(target: Target) -> str:
    text = target.phrase
    text = re.sub(r" in (results|items|[a-z_.]+)$", "", text) if target.kind in ("pick", "values", "top", "count") else text
    return words(text) if "_" in text else text


def request_messages(chain: Chain, target: Target, descriptions: dict[str, str]) -> list[dict[str, str]]:
    """The request writer's prompt: the calls for context, the stiff question to rewrite, the names to keep
    (the answer is not shown, so it cannot leak)."""
    must = must_mention(chain)
    prompt = render("executed_request.j2", question=canonical(chain, target, descriptions),
                    must=", ".join(json.dumps(m, ensure_ascii=False) for m in must) or "(nothing)")
    return [{"role": "user", "content": prompt}]


def mentions(text: str, value: Any) -> bool:
    needle = fold(str(value))
    return bool(needle) and f" {needle} " in f" {fold(text)} "


_API = re.compile(r"\b(GET|POST|PUT|DELETE|PATCH) /|/[A-Za-z_{}]+/|\{[a-z_]+\}|\b[a-z]+_(id|ids|path|date|name)\b|"
                  r"\b(json|JSON|api|API|endpoint|id|ID|entry|entries|path|paths|[Dd]iscover)\b|\bresults\[")
"""How a request in the API's terms gives itself away: a route, an id, a field name (``release_date``, ``file
path``), a list's row (``crew entry``), an operation's name (``movie discover``)."""


EXAMPLE_WORDS = frozenset({"book", "novel", "shelf", "author", "bestseller", "fiction", "podcast", "radiolab",
                           "ursula", "guin", "toni", "morrison", "hobbit", "published", "to-read"})
"""The words of ``executed_request.j2``'s examples (another service: books and podcasts) that no request about
the environment's own calls needs; a request that has one its own stiff question does not have copied an
example (measured: "Add to my to-read shelf 'Please Please Me'" for saving a Spotify track)."""


def _example_words(text: str) -> set[str]:
    found = set()
    for w in re.findall(r"[a-z][a-z-]+", text.lower()):
        w = w[:-1] if w.endswith("s") and w[:-1] in EXAMPLE_WORDS else w
        if w in EXAMPLE_WORDS:
            found.add(w)
    return found


def canonical_text(chain: Chain, target: Target) -> str:
    """The stiff question's words and the names the calls need, without the tools' descriptions."""
    return " ".join([target.phrase, *must_mention(chain), *(s.phrase or "" for s in chain.steps)])


_GENERIC = {"search", "list", "latest", "first", "top", "new", "info", "details", "browse", "me", "users",
            "get", "lookup", "multi", "all", "current", "currently", "media", "type", "time", "window", "week",
            "day", "today", "next", "previous", "date", "dates"}
"""Route words that say how or when, not what: a request may use them whatever the plan (``latest``,
``today``, ``next``)."""


def _root(word: str) -> str:
    """A word without its plural, so a route word and a request's word meet: "companies" is "company",
    "episodes" "episode", "recommendations" "recommend"; other endings stay ("played" is not "playing",
    "recent" not "recently")."""
    w = word.lower()
    if w.endswith("ies") and len(w) > 5:
        return w[:-3] + "y"
    for suffix in ("ations", "ation", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4 and not w.endswith("ss"):
            return w[: -len(suffix)]
    return w


def _forms(word: str) -> list[str]:
    """The roots a word is met by: its own, and for a noun made of a verb the verb's past ("recommendations":
    "recommend", "recommended")."""
    root = _root(word)
    return [root, root + "ed"] if word.lower().endswith(("ation", "ations")) else [root]


def op_terms(ops: Iterable[str]) -> dict[str, str]:
    """The words of an API's routes that name what a call gives, by root: ``GET /movie/{movie_id}/similar``
    gives ``movie`` and ``similar``, ``GET /browse/new-releases`` gives ``release``; a noun made of a verb
    also gives the verb's forms ("recommendations": "recommend", "recommended"). A request that uses one of
    them names a list or a kind of thing; :func:`check_request` refuses it when no call of the plan gives it."""
    out: dict[str, str] = {}
    for op in ops:
        path = op.split(" ", 1)[-1]
        for segment in path.split("/"):
            if not segment or segment.startswith("{"):
                continue
            for word in re.split(r"[-_]", segment):
                if len(word) >= 4 and word.lower() not in _GENERIC and word.isalpha():
                    for form in _forms(word):
                        out.setdefault(form, word.lower())
    return out


def _plan_roots(chain: Chain, target: Target) -> set[str]:
    """The roots a request about this plan may use: its routes' words, its arguments, what it picks by, the
    answer's field and the names it must mention."""
    text = [s.op.split(" ", 1)[-1] for s in chain.steps]
    text += [f"{k} {v}" for s in chain.steps for k, v in s.args.items()]
    text += [f"{s.pick.key or ''} {s.pick.by or ''}" for s in chain.steps if s.pick is not None]
    text += [target.phrase, *(str(v) for v in target.values), *must_mention(chain)]
    said = " ".join(text)
    said += "".join(f" {also}" for field, also in _FIELD_WORDS.items() if re.search(field, said))
    return {form for w in re.findall(r"[A-Za-z]{4,}", said) for form in _forms(w)}


_FIELD_WORDS = {"vote_average": "rated rating review score", "popularity": "popular", "release_date": "released",
                "air_date": "airing aired", r"\w+_path\b": "image images picture"}
"""Words a request uses for a field the plan reads (the highest-*rated* movie reads ``vote_average``; a
poster's *image* is its ``poster_path``)."""


def check_request(request: str, chain: Chain, target: Target, terms: dict[str, str] | None = None) -> str | None:
    """Why ``request`` is refused (a code of :data:`REQUEST_CODES` and the detail), or None. ``terms``: the
    route words of the whole API (:func:`op_terms`), for ``request_other_call``."""
    text = " ".join(request.split())
    words = text.split()
    if not 3 <= len(words) <= 45 or len(re.findall(r"[.!?](\s|$)", text)) > 3:
        return f"request_shape: {len(words)} words"
    copied = _example_words(text) - _example_words(canonical_text(chain, target))
    if copied:
        return f"request_copies_example: {sorted(copied)[0]!r}"
    for name in must_mention(chain):
        if not mentions(text, name):
            return f"request_misses_name: {name!r}"
    if target.kind != "state":
        said = {fold(str(v)) for v in must_mention(chain)}
        for value in target.values:
            if fold(str(value)) in said:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if re.search(rf"(?<![\d.]){re.escape(str(value))}(?![\d.])", text):
                    return f"request_gives_answer: {value!r}"
            elif mentions(text, value):
                return f"request_gives_answer: {value!r}"
    m = _API.search(text)
    if m is not None:
        return f"request_api_terms: {m.group(0)!r}"
    for label, pattern in conditions(chain, target):
        if not re.search(pattern, text, re.I):
            return f"request_drops_condition: {label}"
    if terms:
        allowed = _plan_roots(chain, target)
        for word in re.findall(r"[A-Za-z]{4,}", text):
            root = _root(word)
            if root in terms and root not in allowed:
                return f"request_other_call: {word!r} ({terms[root]!r} is no call of the plan)"
    return None


_DATE_WORDS = r"\b(when|date|day|year|born|birthday|released?|premiered?|aired?|came out|come out)\b"
_PICTURE_WORDS = r"\b(pictures?|images?|photos?|posters?|logos?|backdrops?|profile|covers?|stills?|look like|wallpaper)\b"
_SUPERLATIVE = r"\b(\w+est|most|least|first|last|top|best|worst|recent|newest|oldest|biggest|number one|#1)\b"
_NUMBER_WORDS = {2: "two|couple|pair", 3: "three", 4: "four", 5: "five"}


def conditions(chain: Chain, target: Target) -> list[tuple[str, str]]:
    """What a request must still say for its answer to be this one: (label, regular expression)."""
    out: list[tuple[str, str]] = []
    picks = [s.pick for s in chain.steps[:-1] if s.pick is not None and not (s.named and s.pick.how == "first")]
    m = re.search(r"(the first|with the (\w+) )", target.phrase)
    for pick in picks:
        if pick.how in ("max", "min"):
            out.append((f"{pick.how} {pick.by}", _SUPERLATIVE))
        if pick.key is not None and isinstance(pick.value, str):
            out.append((f"{pick.key} {pick.value}", _stems(pick.value)))
        if pick.how == "first" and pick.key is None and not chain.steps[0].named:
            out.append(("the first", _SUPERLATIVE + r"|\bpopular\b"))
    if target.kind == "count":
        out.append(("how many", r"\b(how many|number of|count)\b"))
    shown = [v for v in target.values if isinstance(v, str)]
    if target.kind in ("pick", "field", "values", "top") and shown and len(shown) == len(target.values):
        if all(re.match(r"\d{4}-\d{2}-\d{2}", v) for v in shown):
            out.append(("asks for a date", _DATE_WORDS))
        elif all(re.match(r"/\w+\.(jpg|jpeg|png|svg)$", v) for v in shown):
            out.append(("asks for a picture", _PICTURE_WORDS))
        else:  # a name or a text: a request for a date, a picture or a count asks for something else
            out.append(("asks for a name, not a date or a count", rf"^(?!.*({_DATE_WORDS}|\bhow many\b|{_PICTURE_WORDS}))"))
    if target.kind == "top":
        k = len(target.values)
        out.append((f"{k} items", rf"\b({k}|{_NUMBER_WORDS.get(k, str(k))}|some|few|list)\b"))
    if target.kind in ("pick", "values", "count") and m is not None and target.kind != "count":
        if "with the" in target.phrase:
            out.append(("which one", _SUPERLATIVE))
    value = re.search(r'(?:whose|have) \w+ (?:is )?"([^"]+)"', target.phrase)
    if value is not None:
        out.append((f"filter {value.group(1)}", _stems(value.group(1))))
    return out


def _stems(value: str) -> str:
    stems = [w[:5].lower() for w in re.findall(r"[A-Za-z]{4,}", value)] or [value.lower()]
    return r"(" + "|".join(re.escape(s) for s in stems) + r")"


__all__ = ["REQUEST_CODES", "REQUEST_SCHEMA", "answer_text", "check_request", "describe", "fold", "mentions",
           "must_mention", "op_terms", "request_messages"]
