"""Checkers and solution scripts: the environment decides success, not a judge model.

A task's **checker** is a list of conditions, all of which must hold::

    {"all": VALUE}                  the final answer mentions every value (a list, or one value)
    {"any": VALUE}                  ... at least one of them
    {"at_least": 2, "of": VALUE}    ... at least n of them
    {"none": VALUE}                 ... none of them
    {"yes": true}                   the answer says yes (true) or no (false)
    {"picks": VALUE, "over": [...]} the answer names VALUE before the other candidates (which-one questions)
    {"called": ["PUT /x", ...]}     these operations were called, in this order (for actions whose end state
                                    equals the start, such as pausing and resuming)
    {"state": EXPR, "equals": VALUE}        end state: EXPR over the final state equals VALUE
    {"state": EXPR, "same_items": VALUE}    ... as a multiset (order ignored)
    {"state": EXPR, "includes": VALUE}      ... contains every item of VALUE
    {"state": EXPR, "one_of": VALUE}        ... is one of the items of VALUE
    {"state": EXPR, "excludes": VALUE}      ... contains none of the items of VALUE
    {"state": EXPR, "below": VALUE}         ... is a number below VALUE

A VALUE is computed from the fixture database, never written out by hand where the database can say it:

    {"api": "GET /movie/{movie_id}/credits", "args": {"movie_id": 155}, "expr": "cast[0].name"}
        what the service answers for that request (in-process, against the initial state), then EXPR
    {"api": ..., "each": {"movie_id": VALUE}, "expr": ...}
        one request per value of VALUE (a list), results flattened
    {"argmax": {"A": VALUE, "B": VALUE}}    the name whose value is largest ("argmin": smallest)
    {"initial": EXPR}               EXPR over the initial state (stateful APIs: what the episode started with)
    {"value": X} or a plain JSON value      a literal

EXPR is JMESPath, plus ``split(text, sep)``, ``years(text)`` and ``day(datetime)``. "Mentions" compares normalised text: accents, case and punctuation are ignored; a
number must be stated as that number ("8", "eight"; "8.5" and "18" are not 8; a float may be rounded to the
decimals given); a date YYYY-MM-DD also matches "June 8, 1983" and "8 June 1983"; an image path matches as
it is.

What makes success mean the task was solved, not that some text was said (:func:`evaluate`):

- only *affirmed* clauses mention anything: in "It is not Christian Bale; it is Heath Ledger." the first
  clause is negated (:func:`affirmed`);
- the answer is bounded: at most ANSWER_CHARS plus twice the expected values' text (:func:`answer_limit`),
  so the gold buried in noise fails;
- an answer whose expected values are names may state at most 2 + (names required) / 2 other candidate
  names (the fixtures' names and titles, passed as ``candidates``; names in the query do not count), so a
  list of every candidate fails (:func:`distractors`);
- a count is one number: beside it, no other number but years and numbers of the query or of an expected
  text (:func:`other_numbers`), so "between 1, 2, ... 10" fails;
- a checker with a ``yes`` condition is a yes/no question: a bare "Yes" or "No" answers it.

The environment adds, in its default ``check="solved"`` mode, that a call on the task's gold path succeeded
(``check="answer-only"`` is the RestBench-compatible mode: the answer alone decides).

A **solution script** solves a task through the service::

    {"steps": [{"call": "GET /search/person", "args": {"query": "Sofia Coppola"},
                "bind": {"pid": "results[0].id"}},
               {"call": "GET /person/{person_id}/movie_credits", "args": {"person_id": "=pid"},
                "bind": {"n": "length(crew[?job=='Director'])"}}],
     "answer": "Sofia Coppola has directed ${n} movies."}

An argument ``"=EXPR"`` is EXPR over the variables bound so far (any JSON type); ``${EXPR}`` inside a string
is replaced by its value (lists joined by ", "). ``bind`` expressions run over the response body, after
``${...}`` in them is filled in. A step marked ``"extra": "why"`` is one the dataset's gold path lacks.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping
from functools import lru_cache
from typing import Any

from ...errors import MissingDependencyError

# ----------------------------------------------------------------------------------------- expressions


def _jmespath() -> Any:
    try:
        import jmespath
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError("jmespath", "restbench", "RestBench checkers and solution scripts") from exc
    return jmespath


_OPTIONS: Any = None


def _options() -> Any:
    """JMESPath with three functions of ours: ``split(text, sep)``, ``years(text)`` (the four-digit years in a
    text, as numbers) and ``day(text)`` (the YYYY-MM-DD at the start of a date-time)."""
    global _OPTIONS
    if _OPTIONS is None:
        jmespath = _jmespath()
        from jmespath import functions

        # jmespath ships no type hints: its base class and decorator are untyped
        class Ours(functions.Functions):  # type: ignore[misc]
            @functions.signature({"types": ["string"]}, {"types": ["string"]})  # type: ignore[untyped-decorator]
            def _func_split(self, text: str, sep: str) -> list[str]:
                return [part.strip() for part in text.split(sep)]

            @functions.signature({"types": ["string", "null"]})  # type: ignore[untyped-decorator]
            def _func_years(self, text: str | None) -> list[int]:
                return [int(y) for y in re.findall(r"\b(1[89]\d\d|20\d\d)\b", text or "")]

            @functions.signature({"types": ["string", "null"]})  # type: ignore[untyped-decorator]
            def _func_day(self, text: str | None) -> str | None:
                return text[:10] if text else text

        _OPTIONS = jmespath.Options(custom_functions=Ours())
    return _OPTIONS


def search(expr: str, data: Any) -> Any:
    """JMESPath ``expr`` over ``data`` (with the functions of :func:`_options`)."""
    return _jmespath().search(expr, data, options=_options())


_TEMPLATE = re.compile(r"\$\{([^}]*)\}")


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, bool)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def fill(template: Any, variables: Mapping[str, Any]) -> Any:
    """``template`` with ``=EXPR`` strings and ``${EXPR}`` parts evaluated over ``variables`` (recursively)."""
    if isinstance(template, str):
        if template.startswith("="):
            return search(template[1:], dict(variables))
        return _TEMPLATE.sub(lambda m: _text(search(m.group(1), dict(variables))), template)
    if isinstance(template, list):
        return [fill(v, variables) for v in template]
    if isinstance(template, dict):
        return {k: fill(v, variables) for k, v in template.items()}
    return template


# ----------------------------------------------------------------------------------------- mentions

_NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
                 "twenty"]
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(T[0-9:.]+Z?)?$")


def normalize_text(text: str) -> str:
    """Lower case, accents stripped, every run of non-alphanumerics one space, padded with spaces."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    plain = plain.replace("&", " and ").replace("'", "").replace("\u2019", "")
    return " " + " ".join(re.sub(r"[^0-9a-z]+", " ", plain).split()) + " "


def surface_forms(value: Any) -> list[str]:
    """The normalised texts any of which counts as a mention of ``value``."""
    if isinstance(value, bool):
        return [normalize_text("yes" if value else "no")]
    if isinstance(value, int):
        forms = [normalize_text(str(value))]
        if 0 <= value < len(_NUMBER_WORDS):
            forms.append(normalize_text(_NUMBER_WORDS[value]))
        return forms
    if isinstance(value, float):
        return [normalize_text(f"{value:g}"), normalize_text(f"{value:.1f}")]
    text = str(value)
    match = _DATE.match(text.strip())
    if match:
        year, month, day = int(match.group(1)), int(match.group(2)), int(match.group(3))
        name = _MONTHS[month - 1] if 1 <= month <= 12 else ""
        return [normalize_text(text[:10]), normalize_text(f"{name} {day} {year}"), normalize_text(f"{day} {name} {year}"),
                normalize_text(f"{name} {day:02d} {year}"), normalize_text(f"{day:02d} {name} {year}")]
    return [normalize_text(text)]


_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w]|[.,]\d)")
_ISO_DATE = re.compile(r"\b(\d{4})-\d{2}-\d{2}(?:T[0-9:.]+Z?)?\b")


def numbers(text: str) -> list[float]:
    """The numbers ``text`` states, in order: digits ("8", "8.5", "1,000"; an ISO date is no number) and the
    English words two to twenty ("one" is too common a word to count). An ISO date states its year only."""
    plain = _ISO_DATE.sub(lambda m: f" {m.group(1)} ", text)
    spans: list[tuple[int, float]] = []
    for m in _NUMBER.finditer(plain):
        whole = m.group(1).replace(",", "")
        spans.append((m.start(), float(f"{whole}.{m.group(2)}") if m.group(2) else float(whole)))
    for i, word in enumerate(_NUMBER_WORDS[2:], 2):
        spans += [(m.start(), float(i)) for m in re.finditer(rf"\b{word}\b", plain, re.I)]
    return [v for _, v in sorted(spans)]


def _number_matches(stated: float, value: float) -> bool:
    if float(value).is_integer():
        return stated == value
    # a float: stated as it is, or rounded to the decimals the answer gives ("8.46" or "8.5" for 8.456)
    text = f"{stated:g}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    return stated == value or (decimals >= 1 and abs(round(value, decimals) - stated) < 1e-9)


def mentions(answer: str, value: Any) -> bool:
    """Whether ``answer`` mentions ``value`` (see the module docstring); a number must be stated as that
    number ("8.5" and "18" are not 8)."""
    if value is None:
        return False
    if isinstance(value, str) and value.startswith("/") and "." in value:  # an image path: as it is
        return value in answer
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return any(_number_matches(n, float(value)) for n in numbers(answer))
    norm = normalize_text(answer)
    return any(form.strip() and form in norm for form in surface_forms(value))


_CLAUSE = re.compile(r"[.!?:](?=\s|$)|[;\n()]|,\s|\s[-\u2013\u2014]+\s|"
                     r"\b(?:but|whereas|while|although|however|instead|rather)\b", re.I)
_NEGATION = re.compile(r"\b(not|no|never|neither|nor|isnt|wasnt|arent|werent|doesnt|didnt|dont|cannot|cant|"
                       r"couldnt|wont|without|except)\b")


def affirmed(answer: str) -> str:
    """``answer`` without its negated clauses: in "It is not Christian Bale; it is Heath Ledger." only the
    second clause names anyone. Clauses end at sentence and clause punctuation and before "but", "while",
    "instead" ...; a clause holding "not", "no", "never", "isn't" ... is negated."""
    kept = [part for part in _CLAUSE.split(answer) if part and not _NEGATION.search(normalize_text(part))]
    return " . ".join(kept)


ANSWER_CHARS = 600
"""How long an answer may be beyond what its expected values need (see :func:`answer_limit`)."""


def answer_limit(expected: list[Any]) -> int:
    """The longest answer accepted: ANSWER_CHARS plus twice the length of the expected values' text, so
    that a list answer fits and the gold buried in pages of noise does not."""
    return ANSWER_CHARS + 2 * sum(len(_text(v)) for v in expected)


@lru_cache(maxsize=8)
def _candidate_forms(candidates: tuple[str, ...]) -> tuple[str, ...]:
    """Normalised candidate names worth counting: two words or more, or one long word (a one-word title such
    as "Up" or "Heat" is an ordinary word in an answer)."""
    out = []
    for name in candidates:
        form = normalize_text(str(name))
        words = form.split()
        if len(words) >= 2 or (len(words) == 1 and len(words[0]) >= 7 and not words[0].isdigit()):
            out.append(form)
    return tuple(dict.fromkeys(out))


def distractors(answer: str, candidates: Any, expected: list[Any], query: str = "") -> list[str]:
    """The candidate names ``answer`` states that are neither expected nor part of the query (nor part of an
    expected value or of a longer stated name)."""
    norm = normalize_text(affirmed(answer))
    known = " | ".join(normalize_text(_text(v)) for v in expected if isinstance(v, str)) + " | " + normalize_text(query)
    found = [form for form in _candidate_forms(tuple(str(c) for c in candidates or ())) if form in norm
             and form not in known]
    return [f.strip() for f in found if not any(f != g and f in g for g in found)]


def other_numbers(answer: str, expected: list[Any], query: str = "") -> list[float]:
    """The numbers ``answer`` states besides the expected ones: not a year (1800-2099), not in the query,
    not part of an expected text or date."""
    wanted = [float(v) for v in expected if isinstance(v, (int, float)) and not isinstance(v, bool)]
    allowed = set(numbers(query))
    for v in expected:
        if isinstance(v, str):
            allowed.update(numbers(v))
            allowed.update(numbers(" ".join(surface_forms(v))))
    out = []
    for n in numbers(affirmed(answer)):
        if any(_number_matches(n, w) for w in wanted) or n in allowed:
            continue
        if n.is_integer() and 1800 <= n <= 2099:
            continue
        out.append(n)
    return out


def first_position(answer: str, value: Any) -> int | None:
    """Where ``answer`` first mentions ``value`` (in its normalised text), or None."""
    norm = normalize_text(answer)
    found = [norm.find(form) for form in surface_forms(value) if form.strip() and form in norm]
    return min(found) if found else None


def picks(answer: str, winner: Any, others: list[Any]) -> bool:
    """Whether ``answer`` names ``winner`` before any of ``others`` (a heuristic for "which one" questions: answers
    state their pick first; a longer name at the same place, "Avatar: The Way of Water" over "Avatar", wins)."""
    at = first_position(answer, winner)
    if at is None:
        return False
    for other in others:
        other_at = first_position(answer, other)
        if other_at is None:
            continue
        if other_at < at or (other_at == at and len(normalize_text(str(other))) > len(normalize_text(str(winner)))):
            return False
    return True


_YES = re.compile(r"\b(yes|yeah|indeed|correct|same person|both)\b")
_NO = re.compile(r"\b(no|not|isn t|isnt|aren t|doesn t|didn t|neither|different)\b")


_NON_ANSWER = re.compile(r"\b(could not|couldn t|couldnt|cannot|can not|can t|unable|don t know|do not know|not sure|no information)\b")


def says_yes(answer: str) -> bool | None:
    """True for an answer that says yes, False for no, None when it says neither, both, or that it could not
    tell ("I could not find it" is no answer, not a no)."""
    norm = normalize_text(answer).replace(" n t ", " nt ")
    if _NON_ANSWER.search(normalize_text(answer)):
        return None
    yes, no = bool(_YES.search(norm)), bool(_NO.search(norm))
    if yes == no:
        return None
    return yes


# ----------------------------------------------------------------------------------------- checking

Resolver = Callable[[Any], Any]


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        out: list[Any] = []
        for v in value:
            out.extend(_as_list(v))
        return out
    return [] if value is None else [value]


def resolve(spec: Any, *, api: Callable[[str, dict[str, Any]], Any], initial: Any) -> Any:
    """The value a VALUE spec stands for (see the module docstring). ``api(op, args)`` answers a request
    in-process; ``initial`` is the initial state view (None for stateless APIs)."""
    if isinstance(spec, dict):
        if "api" in spec and "each" in spec:  # one request per value: {"each": {"movie_id": VALUE}}
            (key, over), = dict(spec["each"]).items()
            out: list[Any] = []
            for value in _as_list(resolve(over, api=api, initial=initial)):
                single = {k: v for k, v in spec.items() if k != "each"}
                single["args"] = {**dict(spec.get("args") or {}), key: value}
                out.extend(_as_list(resolve(single, api=api, initial=initial)))
            return out
        if "api" in spec:
            body = api(str(spec["api"]), dict(spec.get("args") or {}))
            return search(spec["expr"], body) if spec.get("expr") else body
        if "initial" in spec:
            return search(str(spec["initial"]), initial)
        for key, pick in (("argmax", max), ("argmin", min)):
            if key in spec:  # {"argmax": {"name": VALUE, ...}} -> the name whose value is largest
                scored = {name: resolve(v, api=api, initial=initial) for name, v in dict(spec[key]).items()}
                return pick(scored, key=lambda name: scored[name])
        if "value" in spec:
            return spec["value"]
    if isinstance(spec, list):
        return [resolve(s, api=api, initial=initial) for s in spec]
    return spec


def resolve_checker(checker: list[dict[str, Any]], *, api: Callable[[str, dict[str, Any]], Any],
                    initial: Any) -> list[dict[str, Any]]:
    """The checker with every VALUE computed: what the task's expected answer or end state is."""
    out = []
    for cond in checker:
        done = dict(cond)
        for key in ("all", "any", "of", "none", "yes", "picks", "equals", "same_items", "includes", "one_of", "excludes", "below"):
            if key in done:
                done[key] = resolve(done[key], api=api, initial=initial)
        out.append(done)
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


_MENTION_KEYS = ("all", "any", "at_least", "picks")


def expected_values(resolved: list[dict[str, Any]]) -> list[Any]:
    """Every value a resolved checker expects the answer to mention (or may accept: ``of``, ``over``)."""
    out: list[Any] = []
    for cond in resolved:
        for key in ("all", "any", "of", "picks", "over"):
            if key in cond:
                out.extend(_as_list(cond[key]))
    return out


def answer_problems(resolved: list[dict[str, Any]], answer: str, *, candidates: Any = None,
                    query: str = "") -> list[str]:
    """What makes ``answer`` no answer whatever it mentions: too long for what it must say, more candidate
    names than a statement of the answer holds, or (for a count) other numbers beside it."""
    expected = expected_values(resolved)
    problems = []
    limit = answer_limit(expected)
    if len(answer) > limit:  # nothing else is looked at in an answer of that length
        return [f"the answer is too long ({len(answer)} characters, at most {limit} for this task)"]
    asks = any(k in c for c in resolved for k in _MENTION_KEYS)  # not an end-state-only checker
    if asks and not any("yes" in c for c in resolved):
        required = sum(len(_as_list(c["all"])) if "all" in c else int(c["at_least"]) if "at_least" in c else 1
                       for c in resolved if any(k in c for k in _MENTION_KEYS))
        allowed = 2 + required // 2
        names = [v for v in expected if isinstance(v, str) and not _DATE.match(v.strip()) and not v.startswith("/")]
        extra = distractors(answer, candidates, expected, query) if names else []  # names are the answer
        if len(extra) > allowed:
            problems.append(f"the answer lists {len(extra)} other candidates ({_short(extra[:5])}), at most "
                            f"{allowed} beside the answer")
        counts = [v for c in resolved for k in ("all", "any") if k in c for v in _as_list(c[k])
                  if isinstance(v, int) and not isinstance(v, bool)]
        if counts:
            others = other_numbers(answer, expected, query)
            if others:
                problems.append(f"the answer states other numbers beside the count ({_short(others[:5])})")
    return problems


def evaluate(resolved: list[dict[str, Any]], answer: str | None, state: Any,
             calls: list[str] | None = None, *, candidates: Any = None, query: str = "") -> tuple[bool, list[str]]:
    """(success, what failed) for a resolved checker, a final answer, the final state view and the names of the
    calls made. ``candidates``: the names the answer could be drawn from (an answer listing many of them
    fails); ``query``: the task's text (what it names is no distractor).

    Mentions count only outside negated clauses (:func:`affirmed`). A checker with a ``yes`` condition is a
    yes/no question: a bare "Yes" or "No" answers it, so its mention conditions are not required."""
    raw = answer or ""
    failures: list[str] = answer_problems(resolved, raw, candidates=candidates, query=query) if raw else []
    too_long = len(raw) > answer_limit(expected_values(resolved))
    text = "" if too_long else affirmed(raw)  # an answer of that length mentions nothing
    yes_no = any("yes" in c for c in resolved)
    for cond in resolved:
        why = f" ({cond['why']})" if cond.get("why") else ""
        if yes_no:
            cond = {k: v for k, v in cond.items() if k not in (*_MENTION_KEYS, "of", "over")}
        if "called" in cond:
            it = iter(calls or [])
            wanted = [str(c) for c in _as_list(cond["called"])]
            if not all(any(c == w for c in it) for w in wanted):
                failures.append(f"the calls made do not include {_short(wanted)} in that order{why}")
        if "all" in cond:
            missing = [v for v in _as_list(cond["all"]) if not mentions(text, v)]
            if missing or not _as_list(cond["all"]):
                failures.append(f"the answer does not mention {_short(missing or cond['all'])}{why}")
        if "any" in cond:
            values = _as_list(cond["any"])
            if not any(mentions(text, v) for v in values):
                failures.append(f"the answer mentions none of {_short(values)}{why}")
        if "at_least" in cond:
            values = _as_list(cond.get("of"))
            hits = sum(mentions(text, v) for v in values)
            if hits < int(cond["at_least"]):
                failures.append(f"the answer mentions {hits} of {_short(values)}, needs {cond['at_least']}{why}")
        if "none" in cond:
            wrong = [v for v in _as_list(cond["none"]) if mentions(text, v)]
            if wrong:
                failures.append(f"the answer mentions {_short(wrong)}, which is wrong{why}")
        if "picks" in cond:
            winner, others = cond["picks"], [o for o in _as_list(cond.get("over")) if o != cond["picks"]]
            if not picks(text, winner, others):
                failures.append(f"the answer does not pick {_short(winner)} over {_short(others)}{why}")
        if "yes" in cond:
            said = says_yes(raw)
            if said is not bool(cond["yes"]):
                failures.append(f"the answer does not say {'yes' if cond['yes'] else 'no'}{why}")
        if "state" in cond:
            try:
                got = search(str(cond["state"]), state)
            except Exception as exc:  # a type error inside the expression: the state is not what was asked for
                failures.append(f"end state {cond['state']} cannot be read ({type(exc).__name__}: {exc}){why}")
                continue
            if "equals" in cond and _canonical(got) != _canonical(cond["equals"]):
                failures.append(f"end state {cond['state']} is {_short(got)}, expected {_short(cond['equals'])}{why}")
            if "same_items" in cond:
                a = sorted(_canonical(v) for v in _as_list(got))
                b = sorted(_canonical(v) for v in _as_list(cond["same_items"]))
                if a != b:
                    failures.append(f"end state {cond['state']} is {_short(got)}, expected the items "
                                    f"{_short(cond['same_items'])}{why}")
            if "excludes" in cond:
                have = {_canonical(v) for v in _as_list(got)}
                kept = [v for v in _as_list(cond["excludes"]) if _canonical(v) in have]
                if kept:
                    failures.append(f"end state {cond['state']} still has {_short(kept)}{why}")
            if "below" in cond and not (isinstance(got, (int, float)) and isinstance(cond["below"], (int, float))
                                        and got < cond["below"]):
                failures.append(f"end state {cond['state']} is {_short(got)}, expected below {_short(cond['below'])}{why}")
            if "one_of" in cond and _canonical(got) not in {_canonical(v) for v in _as_list(cond["one_of"])}:
                failures.append(f"end state {cond['state']} is {_short(got)}, expected one of {_short(cond['one_of'])}{why}")
            if "includes" in cond:
                have = {_canonical(v) for v in _as_list(got)}
                lacking = [v for v in _as_list(cond["includes"]) if _canonical(v) not in have]
                if lacking:
                    failures.append(f"end state {cond['state']} lacks {_short(lacking)}{why}")
    return not failures, failures


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------------------- scripts

Caller = Callable[[str, dict[str, Any]], Awaitable[tuple[int | None, Any, str | None]]]


class ScriptError(Exception):
    """A solution script could not go on (a call failed, a binding found nothing)."""


async def run_script(script: Mapping[str, Any], call: Caller) -> tuple[str, dict[str, Any]]:
    """Run a solution script; ``call(op, args) -> (status, body, error)`` performs one request. Returns the
    final answer and the variables bound."""
    variables: dict[str, Any] = {}
    for i, step in enumerate(script.get("steps") or []):
        op = str(step["call"])
        args = fill(step.get("args") or {}, variables)
        status, body, error = await call(op, args)
        if error is not None:
            raise ScriptError(f"step {i} ({op}): {error}")
        variables["_"] = body
        for name, expr in (step.get("bind") or {}).items():
            value = search(fill(str(expr), variables), body)
            if value is None or value == []:
                raise ScriptError(f"step {i} ({op}): binding {name} = {expr} found nothing")
            variables[name] = value
    answer = fill(str(script.get("answer") or ""), variables)
    return answer, variables


def path_scores(calls: list[str], gold: list[str]) -> dict[str, Any]:
    """Precision, recall and F1 of the called tools against the gold path (as multisets), and whether the gold
    path is a subsequence of the calls (RestGPT's 'correct path')."""
    from collections import Counter

    made, want = Counter(calls), Counter(gold)
    hit = sum((made & want).values())
    precision = hit / sum(made.values()) if made else 0.0
    recall = hit / sum(want.values()) if want else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    it = iter(calls)
    subsequence = all(any(c == g for c in it) for g in gold)
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "contains_gold": subsequence}


__all__ = [
    "ANSWER_CHARS",
    "ScriptError",
    "affirmed",
    "answer_limit",
    "answer_problems",
    "distractors",
    "expected_values",
    "numbers",
    "other_numbers",
    "path_scores",
    "evaluate",
    "fill",
    "mentions",
    "normalize_text",
    "picks",
    "resolve",
    "resolve_checker",
    "run_script",
    "says_yes",
    "search",
    "surface_forms",
]
