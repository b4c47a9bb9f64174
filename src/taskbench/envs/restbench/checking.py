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

EXPR is JMESPath, plus ``split(text, sep)``, ``years(text)`` and ``day(datetime)``. "Mentions" compares normalised text: accents, case and punctuation are ignored; numbers
match as whole numbers (or their English words up to twenty); a date YYYY-MM-DD also matches "June 8,
1983" and "8 June 1983"; an image path matches as it is.

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


def mentions(answer: str, value: Any) -> bool:
    """Whether ``answer`` mentions ``value`` (see the module docstring)."""
    if value is None:
        return False
    if isinstance(value, str) and value.startswith("/") and "." in value:  # an image path: as it is
        return value in answer
    norm = normalize_text(answer)
    return any(form.strip() and form in norm for form in surface_forms(value))


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


def evaluate(resolved: list[dict[str, Any]], answer: str | None, state: Any,
             calls: list[str] | None = None) -> tuple[bool, list[str]]:
    """(success, what failed) for a resolved checker, a final answer, the final state view and the names of the
    calls made."""
    text = answer or ""
    failures: list[str] = []
    for cond in resolved:
        why = f" ({cond['why']})" if cond.get("why") else ""
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
            said = says_yes(text)
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


__all__ = [
    "ScriptError",
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
