"""Checkers and solution scripts: the environment decides success, not a judge model.

A task's **checker** is a list of conditions, all of which must hold::

    {"all": VALUE}                  the final answer mentions every value (a list, or one value)
    {"any": VALUE}                  ... at least one of them
    {"at_least": 2, "of": VALUE}    ... at least n of them
    {"none": VALUE}                 ... none of them
    {"yes": true}                   the answer says yes (true) or no (false)
    {"picks": VALUE, "over": [...]} the answer picks VALUE over the others (which-one questions)
    {"observed": VALUE}             the episode observed these values (no mention asked; the ``solved`` mode)
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

EXPR is JMESPath, plus ``split(text, sep)``, ``years(text)`` and ``day(datetime)``.

What makes success mean the task was solved, not that some text was said (:func:`evaluate`):

- the answer is read for what it *asserts* (:mod:`.answers`): names by their words (accents, case,
  punctuation, a leading article ignored), dates in any common format, numbers as digits or words; a
  negated, asked, hypothetical or retracted clause asserts nothing ("Was it G? No, it was O.", "G is wrong;
  it is O." assert O), while "G and not anything else" and "There is no doubt: G" assert G;
- the answer is one answer (:mod:`.judge`): bounded in length, no list or hedge of candidates of the kind
  asked for ("G, O1 or O2"), no dates or numbers around the right one, no hedged number ("about 8");
- a which-one answer is read for the option its comparison picks ("L is rated lower than W" picks W);
- a yes/no question with mention conditions asks for the fact too: a bare "Yes." does not state it; an answer
  with the fact and no yes/no word answers yes, or no when negated;
- ``called`` counts only calls that succeeded;
- in the default ``solved`` mode every value credited must have appeared in a successful tool response of
  the episode (:mod:`.provenance`); ``check="answer-only"`` is the RestBench-compatible mode (the answer
  alone decides).

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
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...errors import MissingDependencyError
from .answers import Lexicon, key, read_answer, says_yes, words
from .judge import (
    ANSWER_CHARS,
    answer_lexicon,
    answer_limit,
    answer_problems,
    decide_pick,
    is_number,
    mentions,
    picks,
    stated,
)
from .provenance import Observed, Source

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


# ----------------------------------------------------------------------------------------- resolving

Resolver = Callable[[Any], Any]
VALUE_KEYS = ("all", "any", "of", "none", "yes", "picks", "observed", "equals", "same_items", "includes", "one_of",
              "excludes", "below")


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        out: list[Any] = []
        for v in value:
            out.extend(_as_list(v))
        return out
    return [] if value is None else [value]


def resolve(spec: Any, *, api: Callable[[str, dict[str, Any]], Any], initial: Any,
            trace: list[Source] | None = None) -> Any:
    """The value a VALUE spec stands for (see the module docstring). ``api(op, args)`` answers a request
    in-process; ``initial`` is the initial state view (None for stateless APIs); ``trace`` collects where
    each value was read (:class:`~.provenance.Source`), for the provenance check."""
    if isinstance(spec, dict):
        if "api" in spec and "each" in spec:  # one request per value: {"each": {"movie_id": VALUE}}
            (name, over), = dict(spec["each"]).items()
            out: list[Any] = []
            for value in _as_list(resolve(over, api=api, initial=initial, trace=trace)):
                single = {k: v for k, v in spec.items() if k != "each"}
                single["args"] = {**dict(spec.get("args") or {}), name: value}
                out.extend(_as_list(resolve(single, api=api, initial=initial, trace=trace)))
            return out
        if "api" in spec:
            args = dict(spec.get("args") or {})
            body = api(str(spec["api"]), args)
            found = search(spec["expr"], body) if spec.get("expr") else body
            if trace is not None:
                trace.append(Source(str(spec["api"]), args, body, found))
            return found
        if "initial" in spec:
            found = search(str(spec["initial"]), initial)
            if trace is not None:
                trace.append(Source("initial", {}, None, found))
            return found
        for name, pick in (("argmax", max), ("argmin", min)):
            if name in spec:  # {"argmax": {"name": VALUE, ...}} -> the name whose value is largest
                scored = {option: resolve(v, api=api, initial=initial, trace=trace) for option, v in dict(spec[name]).items()}
                return pick(scored, key=lambda option: scored[option])
        if "value" in spec:
            return spec["value"]
    if isinstance(spec, list):
        return [resolve(s, api=api, initial=initial, trace=trace) for s in spec]
    return spec


Traces = list[dict[str, list[Source]]]
"""Per condition of a checker: per key (``all``, ``picks`` ...), where its values were read."""


def resolve_checker(checker: list[dict[str, Any]], *, api: Callable[[str, dict[str, Any]], Any],
                    initial: Any, traces: Traces | None = None) -> list[dict[str, Any]]:
    """The checker with every VALUE computed: what the task's expected answer or end state is. ``traces``
    (a list) receives, per condition, where each key's values were read."""
    out = []
    for cond in checker:
        done = dict(cond)
        found: dict[str, list[Source]] = {}
        for name in VALUE_KEYS:
            if name in done:
                found[name] = []
                done[name] = resolve(done[name], api=api, initial=initial, trace=found[name])
        out.append(done)
        if traces is not None:
            traces.append(found)
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


_MENTION_KEYS = ("all", "any", "at_least", "picks")


def expected_values(resolved: list[dict[str, Any]]) -> list[Any]:
    """Every value a resolved checker expects the answer to mention (or may accept: ``of``, ``over``)."""
    out: list[Any] = []
    for cond in resolved:
        for name in ("all", "any", "of", "picks", "over"):
            if name in cond:
                out.extend(_as_list(cond[name]))
    return out


def _numbers_asked(resolved: list[dict[str, Any]]) -> list[Any]:
    return [v for c in resolved for k in ("all", "any", "of") if k in c for v in _as_list(c[k]) if is_number(v)]


# ----------------------------------------------------------------------------------------- checking


def _sources_of(value: Any, sources: list[Source]) -> list[Source]:
    """The sources whose value holds ``value``."""
    want = _canonical(value)
    return [s for s in sources if any(_canonical(v) == want for v in _as_list(s.value))]


NOT_OBSERVED = "never appeared in a successful tool response of this episode"


STATE_SLACK = 1
"""Items an end-state list may gain (``includes``) or lose (``excludes``) beyond the ones the task names: a
task that asks to follow one artist is not solved by following every artist."""


def evaluate(resolved: list[dict[str, Any]], answer: str | None, state: Any,
             calls: list[str] | None = None, *, candidates: Any = None, query: str = "",
             observed: Observed | None = None, traces: Traces | None = None,
             initial: Any = None) -> tuple[bool, list[str]]:
    """(success, what failed) for a resolved checker, a final answer, the final state view and the names of the
    calls that succeeded. ``candidates``: the names the data holds (a :class:`~.answers.Lexicon` or a list;
    an answer asserting many of an expected name's kind fails); ``query``: the task's text (what it names is
    no distractor, and numbers it states are no other numbers).

    ``initial``: the state view the episode started from (an ``includes`` / ``excludes`` end state must not
    gain / lose more than :data:`STATE_SLACK` items beyond the ones named).

    ``observed`` (the ``solved`` mode): the episode's successful responses; every value the answer is credited
    for must have appeared in one (:class:`~.provenance.Observed`, with ``traces`` from
    :func:`resolve_checker` saying where the checker read each value). Without it, the answer alone decides.

    Values count when asserted (:mod:`.answers`: not negated, not asked, not retracted); a yes/no question's
    facts count in any declarative clause. A ``yes`` condition with mention conditions asks for both: a bare
    "Yes." does not state the supporting fact."""
    raw = answer or ""
    expected = expected_values(resolved)
    yes_no = any("yes" in c for c in resolved)
    options = [o for c in resolved if "picks" in c for o in [c["picks"], *_as_list(c.get("over"))]]
    lexicon = answer_lexicon(candidates, expected, query, options)
    too_long = len(raw) > answer_limit(expected)
    reading = read_answer("" if too_long else raw, lexicon, yes_no=yes_no)
    failures: list[str] = answer_problems(expected, _numbers_asked(resolved), reading, lexicon, query=query,
                                          answer=raw, options=options) if raw else []
    facts = not yes_no  # a yes/no answer's facts count negated too

    def said(value: Any) -> bool:
        return stated(reading, value, lexicon, asserted=facts)

    def seen(value: Any, sources: list[Source]) -> bool:
        return observed is None or observed.shows(value, _sources_of(value, sources), query=query, answers=expected)

    query_words = " " + " ".join(words(query)) + " "
    mentioned = [v for c in resolved for k in ("all", "any", "of") if k in c for v in _as_list(c[k])
                 if f" {' '.join(words(str(v)))} " not in query_words]  # the user's own words prove nothing
    subjects = {lexicon.canonical(n) for n in read_answer(query, lexicon, yes_no=True).names(False)}
    facts_stated = any(stated(reading, v, lexicon) for v in mentioned) and subjects <= {
        lexicon.canonical(n) for n in reading.names(False)}  # a plain statement of the fact, about what was asked
    for i, cond in enumerate(resolved):
        why = f" ({cond['why']})" if cond.get("why") else ""
        trace = traces[i] if traces is not None and i < len(traces) else {}
        if "called" in cond:
            it = iter(calls or [])
            wanted = [str(c) for c in _as_list(cond["called"])]
            if not all(any(c == w for c in it) for w in wanted):
                failures.append(f"the calls that succeeded do not include {_short(wanted)} in that order{why}")
        if "all" in cond:
            values = _as_list(cond["all"])
            missing = [v for v in values if not said(v)]
            if missing or not values:
                failures.append(f"the answer does not mention {_short(missing or cond['all'])}{why}")
            unseen = [v for v in values if v not in missing and not seen(v, trace.get("all", []))]
            if unseen:
                failures.append(f"{_short(unseen)} {NOT_OBSERVED}{why}")
        if "any" in cond:
            values = _as_list(cond["any"])
            hits = [v for v in values if said(v)]
            if not hits:
                failures.append(f"the answer mentions none of {_short(values)}{why}")
            elif not any(seen(v, trace.get("any", [])) for v in hits):
                failures.append(f"{_short(hits[:3])} {NOT_OBSERVED}{why}")
        if "at_least" in cond:
            values = _as_list(cond.get("of"))
            hits = [v for v in values if said(v)]
            need = int(cond["at_least"])
            if len(hits) < need:
                failures.append(f"the answer mentions {len(hits)} of {_short(values)}, needs {need}{why}")
            elif sum(seen(v, trace.get("of", [])) for v in hits) < need:
                failures.append(f"of {_short(hits[:5])}, fewer than {need} {NOT_OBSERVED}{why}")
        if "none" in cond:
            wrong = [v for v in _as_list(cond["none"]) if stated(reading, v, lexicon)]
            if wrong:
                failures.append(f"the answer mentions {_short(wrong)}, which is wrong{why}")
        if "picks" in cond:
            winner = cond["picks"]
            choices = [key(str(o)) for o in dict.fromkeys([winner, *_as_list(cond.get("over"))])]
            choice = decide_pick(reading, choices, lexicon, query)
            if choice != lexicon.canonical(key(str(winner))):
                others = [o for o in _as_list(cond.get("over")) if o != winner]
                failures.append(f"the answer does not pick {_short(winner)} over {_short(others)}{why}")
            elif observed is not None:  # what decided the pick was seen (the scores compared; a literal: itself)
                sources = trace.get("picks", [])
                unseen = [s.value for s in sources if s.op != "initial" and not observed.shows(s.value, [s])]
                if not sources and not observed.shows(winner, query=query):
                    unseen = [winner]
                if unseen:
                    failures.append(f"what decides the pick ({_short(unseen)}) {NOT_OBSERVED}{why}")
        if "yes" in cond:
            said_yes = says_yes(reading, facts=facts_stated)
            if said_yes is not bool(cond["yes"]):
                failures.append(f"the answer does not say {'yes' if cond['yes'] else 'no'}{why}")
            elif observed is not None and trace.get("yes") and not observed.shows(bool(cond["yes"]), trace["yes"]):
                failures.append(f"the response the yes/no is read from {NOT_OBSERVED}{why}")
        if "observed" in cond and observed is not None:
            unseen = [v for v in _as_list(cond["observed"]) if not seen(v, trace.get("observed", []))]
            if unseen:
                failures.append(f"{_short(unseen)} {NOT_OBSERVED}{why}")
        if "state" in cond:
            failures += _state_failures(cond, state, why, initial)
    if observed is not None and yes_no and not _provable(resolved, traces):
        failures.append("the checker names nothing the tools must have shown for this yes/no question (add an "
                        "'observed' condition); check=answer-only does not ask for it")
    return not failures, failures


def _provable(resolved: list[dict[str, Any]], traces: Traces | None) -> bool:
    """Whether a checker asks for something an episode must have observed (a yes/no read from a response, a
    value to mention or to observe)."""
    for i, cond in enumerate(resolved):
        trace = traces[i] if traces is not None and i < len(traces) else {}
        if any(k in cond for k in ("all", "any", "at_least", "observed", "picks")):
            return True
        if "yes" in cond and any(s.op != "initial" for s in trace.get("yes", [])):
            return True
    return False


def _state_failures(cond: dict[str, Any], state: Any, why: str, initial: Any = None) -> list[str]:
    failures: list[str] = []
    try:
        got = search(str(cond["state"]), state)
    except Exception as exc:  # a type error inside the expression: the state is not what was asked for
        return [f"end state {cond['state']} cannot be read ({type(exc).__name__}: {exc}){why}"]
    if initial is not None and ("includes" in cond or "excludes" in cond):
        try:
            before = {_canonical(v) for v in _as_list(search(str(cond["state"]), initial))}
        except Exception:  # noqa: BLE001 - the initial state has another shape: nothing to compare
            before = None
        if before is not None:
            after = {_canonical(v) for v in _as_list(got)}
            if "includes" in cond and len(after - before) > len(_as_list(cond["includes"])) + STATE_SLACK:
                failures.append(f"end state {cond['state']} gained {len(after - before)} items, the task names "
                                f"{len(_as_list(cond['includes']))}{why}")
            if "excludes" in cond and len(before - after) > len(_as_list(cond["excludes"])) + STATE_SLACK:
                failures.append(f"end state {cond['state']} lost {len(before - after)} items, the task names "
                                f"{len(_as_list(cond['excludes']))}{why}")
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
    return failures


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
    "VALUE_KEYS",
    "Lexicon",
    "Observed",
    "ScriptError",
    "Source",
    "Traces",
    "answer_limit",
    "evaluate",
    "expected_values",
    "fill",
    "mentions",
    "path_scores",
    "picks",
    "resolve",
    "resolve_checker",
    "run_script",
    "says_yes",
    "search",
]
