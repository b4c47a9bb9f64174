"""Does an answer state the expected values, and only an answer's worth of other things?

:mod:`.answers` reads what an answer asserts; this module compares that with what a checker expects:

- :func:`stated`: an expected value is stated when an asserted clause names it (a name by its words, a date
  in any format, a number as digits or words, "one" included; a URL without its scheme or "www."; an image
  path as it is). A yes/no question's facts count in any declarative clause ("No, Mulholland Drive is not in
  the top 10" states Mulholland Drive).
- :func:`answer_problems`: what makes an answer no answer whatever it states. Beyond a length bound
  (:data:`ANSWER_CHARS` plus twice the expected text):

  * **names**: besides the expected names, the answer may assert at most :data:`SAME_KIND` other name of the
    same kind as an expected name (kinds come from the data: people, movie titles, keywords, review authors,
    places ...), none of them in a bare list with an expected name ("G, O1 or O2", "G and O") or beside a
    hedge ("or", "maybe", "possibly" ...), and at most :data:`OTHER_NAMES` other names of any kind. Names the
    query states, and the other parts of a place an expected part comes from ("California" beside "Universal
    City"), are not counted;
  * **dates**: besides the expected dates, at most :data:`OTHER_DATES` other date, and none beside a hedge;
  * **numbers**: the expected number is stated plainly ("about 8", "8 or 9", "8-9", "at least 8" hedge it);
    besides it at most :data:`OTHER_NUMBERS` other number and :data:`OTHER_YEARS` years (no other year when a
    year is expected), none beside a hedge; numbers of the query and inside names ("2 Broke Girls") do not
    count.

  Values the query states do not make these rules apply (the user named them), so a yes/no or which-one
  answer may list what it compares.
- :func:`picks`: which option a which-one answer picks: an asserted comparison decides ("W is rated higher
  than L", "L came out later", "L directed fewer films than W"), in the direction the query asks (higher,
  more, earlier, older ...); without one, the only option asserted, or the first of several that are not
  hedged.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from .answers import (
    COMMON_WORDS,
    Lexicon,
    Reading,
    iso_date,
    key,
    number_matches,
    number_spans,
    read_answer,
    words,
)

ANSWER_CHARS = 600
"""How long an answer may be beyond what its expected values need (see :func:`answer_limit`)."""
SAME_KIND = 1
"""Other names of an expected name's kind an answer may assert (never in a bare list with it, never hedged)."""
OTHER_NAMES = 8
"""Other names of any kind an answer may assert."""
OTHER_DATES = 1
"""Other dates an answer expecting a date may assert."""
OTHER_NUMBERS = 1
"""Other numbers (not years) an answer expecting a number may assert."""
OTHER_YEARS = 2
"""Years an answer expecting a number that is not a year may assert besides it."""
EXPECTED_KIND = "expected"


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


def answer_limit(expected: list[Any]) -> int:
    """The longest answer accepted: ANSWER_CHARS plus twice the length of the expected values' text, so
    that a list answer fits and the gold buried in pages of noise does not."""
    return ANSWER_CHARS + 2 * sum(len(_text(v)) for v in expected)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_path(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("/") and "." in value


_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://)?(?:www\d?\.)?", re.I)


def is_url(value: Any) -> bool:
    return isinstance(value, str) and bool(re.match(r"^[a-z][a-z0-9+.-]*://\S+$", value.strip(), re.I))


def url_key(value: str) -> str:
    """A URL's words without its scheme, ``www.`` and trailing slash: "hbo com" for https://www.hbo.com/."""
    return key(_URL.sub("", value.strip()).rstrip("/"))


def is_name(value: Any) -> bool:
    """A value stated as a name (not a number, a date, a path or a URL)."""
    return isinstance(value, str) and not iso_date(value) and not is_path(value) and not is_url(value) and bool(
        words(value))


def is_year(value: float) -> bool:
    return float(value).is_integer() and 1800 <= value <= 2099


# ------------------------------------------------------------------------------------------------ lexicon


def answer_lexicon(candidates: Any, expected: list[Any], query: str = "", options: list[Any] | None = None) -> Lexicon:
    """The lexicon an answer is read with: ``candidates`` (a :class:`Lexicon`, or a list of names of one
    kind) extended with the expected names (kind :data:`EXPECTED_KIND`), and the surnames of which-one
    ``options`` ("Spielberg")."""
    if isinstance(candidates, Lexicon):
        base = candidates
    else:
        base = Lexicon(("name", str(c)) for c in candidates or ())
    lex = Lexicon(base=base)
    for value in expected:
        if is_name(value):
            lex.add(EXPECTED_KIND, value, force=True)
    for option in options or []:
        toks = words(str(option))
        if len(toks) >= 2 and len(toks[-1]) >= 4:
            lex.aliases.setdefault(toks[-1], " ".join(toks))
            lex._index((toks[-1],))
    return lex


# ------------------------------------------------------------------------------------------------ stated


def stated(reading: Reading, value: Any, lexicon: Lexicon, *, asserted: bool = True) -> bool:
    """Whether ``reading`` states ``value`` (see the module docstring); ``asserted=False`` counts negated
    clauses too (a yes/no answer's facts)."""
    if value is None or isinstance(value, bool):
        return False
    clauses = [c for c in reading.clauses if c.asserts or not asserted]
    if is_number(value):
        target = float(value)
        for v, is_word, _text, _pos, _clause in reading.numbers(asserted):
            if number_matches(v, target) and (not is_word or target.is_integer()):
                return True
        if is_year(target):  # a date states its year
            return any(int(min(d)[:4]) == target for d in reading.dates(asserted))
        return False
    if isinstance(value, (dict, list)):
        return False
    text = str(value)
    day = iso_date(text)
    if day:
        return any(day in d for d in reading.dates(asserted))
    joined = " . ".join(c.text for c in clauses)
    if is_path(text):
        return text in joined
    if is_url(text):
        needle = url_key(text)
        return bool(needle) and f" {needle} " in " " + " ".join(words(joined)) + " "
    k = key(text)
    if not k:
        return False
    if k in lexicon:
        canonical = lexicon.canonical(k)
        wholes = lexicon.parents(canonical)  # "Universal City" is stated by "Universal City, California, ..."
        return any(lexicon.canonical(n) == canonical or lexicon.canonical(n) in wholes for n in reading.names(asserted))
    return f" {k} " in " " + " ".join(words(joined)) + " "


# ------------------------------------------------------------------------------------------------ one answer

_APPROX_BEFORE = re.compile(r"\b(about|around|approximately|approx|roughly|nearly|almost|over|under|some|circa|ca|"
                            r"at least|at most|more than|less than|fewer than|up to|maybe|perhaps|possibly|probably|"
                            r"estimated|est|likely|between|from|~)\s*$")
_APPROX_CLAUSE = re.compile(r"\b(?:give or take|more or less|or thereabouts|approximately|approx|roughly|circa|"
                            r"ballpark|estimated|rough(?:ly)? estimate|a few|or so|plus or minus)\b")

_LISTED_BEFORE = re.compile(r"\d\s*(?:,|;|&|/|-|\band\b|\bor\b|\bto\b)\s*$")
_APPROX_AFTER = re.compile(r"^\s*(?:\+|ish\b|or so\b|or more\b|or less\b|or fewer\b|or\b|to\b|-\s*\d|/\s*\d|"
                           r"and\s+\d|plus\b)")


def answer_problems(expected: list[Any], numbers_expected: list[Any], reading: Reading, lexicon: Lexicon, *,
                    query: str = "", answer: str = "", options: list[Any] | None = None) -> list[str]:
    """What makes ``answer`` no answer whatever it states (see the module docstring). ``expected``: every
    value the checker expects or accepts; ``numbers_expected``: the numbers it asks for; ``options``: a
    which-one question's options (asked for even when the query names them: "V, Following or Taxi Driver"
    is no pick)."""
    limit = answer_limit(expected)
    if len(answer) > limit:
        return [f"the answer is too long ({len(answer)} characters, at most {limit} for this task)"]
    problems: list[str] = []
    filler = _filler(reading, query, expected)
    if filler:
        problems.append(filler)
    query_reading = read_answer(query, lexicon, yes_no=True)
    query_names = {lexicon.canonical(n) for n in query_reading.names(False)}
    query_words = " " + " ".join(words(query)) + " "

    def in_query(value: Any) -> bool:
        if is_name(value):
            k = lexicon.canonical(key(value))
            return k in query_names or f" {key(value)} " in query_words
        return False

    names = [v for v in expected if is_name(v)]
    asked_names = [lexicon.canonical(key(v)) for v in names if not in_query(v) or v in (options or [])]
    expected_keys = {lexicon.canonical(key(v)) for v in names}
    allowed: set[str] = set(expected_keys) | query_names
    for k in expected_keys:
        allowed |= {lexicon.canonical(c) for c in lexicon.companions(k)}
    if any("part" in lexicon.kinds(k) for k in asked_names):  # a place: its state and country qualify it
        allowed |= {n for n in reading.names() if lexicon.qualifier(n)}
    if asked_names:
        others = list(dict.fromkeys(n for n in reading.names() if n not in allowed))
        kinds = set().union(*(lexicon.kinds(k) for k in asked_names)) - {EXPECTED_KIND}
        same = [n for n in others if lexicon.kinds(n) & kinds]
        alone = [n for c in reading.asserted() if c.alone() for n in c.names if n in same]
        doubted = [n for n in reading.wondered if isinstance(n, str) and n not in allowed and lexicon.kinds(n) & kinds]
        doubted += [n[1] for n in reading.wondered if isinstance(n, tuple)
                    and lexicon.canonical(key(n[1])) not in allowed]
        if len(same) > SAME_KIND:
            problems.append(f"the answer names {len(same)} other candidates of the kind asked for "
                            f"({_short([lexicon.text(n) for n in same[:5]])}), at most {SAME_KIND}")
        elif alone:
            problems.append(f"the answer gives {_short([lexicon.text(n) for n in alone[:3]])} as an answer too")
        elif doubted:
            problems.append(f"the answer leaves {_short([lexicon.text(n) for n in doubted[:3]])} open as an answer")
        elif any(c.hedges() and c.unknown for c in reading.asserted()):
            problems.append(f"the answer hedges with {_short([u for c in reading.asserted() if c.hedges() for u in c.unknown][:3])}")
        elif any(c.alone() and any(len(u.split()) >= 2 for u in c.unknown) for c in reading.asserted()):
            problems.append(f"the answer gives {_short([u for c in reading.asserted() if c.alone() for u in c.unknown][:3])} "
                            "as an answer too")
        elif any(n in same for c in reading.asserted() if c.hedges() for n in c.names):
            problems.append(f"the answer hedges between {_short([lexicon.text(n) for n in same[:3]])} and the "
                            "answer")
        if len(others) > OTHER_NAMES:
            problems.append(f"the answer names {len(others)} other things ({_short([lexicon.text(n) for n in others[:5]])}"
                            f"), at most {OTHER_NAMES}")
    problems += _list_problems(reading, lexicon, expected, asked_names, allowed)
    days = {iso_date(v) for v in expected if isinstance(v, str) and iso_date(v) and not in_query(v)}
    days.discard(None)
    if days:
        other_days = [d for d in reading.dates() if not d & days]
        distinct = {min(d) for d in other_days}
        if len(distinct) > OTHER_DATES:
            problems.append(f"the answer states {len(distinct)} other dates ({_short(sorted(distinct)[:5])}), at most "
                            f"{OTHER_DATES}")
        elif any(not d & days for c in reading.asserted() if c.hedges() for d in c.dates):
            problems.append(f"the answer hedges between dates ({_short(sorted(distinct)[:3])})")
        elif any(c.alone() and any(not d & days for d in c.dates) for c in reading.asserted()):
            problems.append(f"the answer gives another date ({_short(sorted(distinct)[:3])}) as an answer too")
        elif distinct and any(any(d & days for d in dates) and any(not d & days for d in dates)
                              for dates in ([m for m in run if isinstance(m, frozenset)] for run in reading.lists)):
            problems.append(f"the answer lists dates ({_short(sorted(distinct)[:3])}) beside the one asked for")
        elif any(isinstance(d, frozenset) and not d & days for d in reading.wondered):
            problems.append("the answer leaves another date open")
    asked_numbers = [float(v) for v in numbers_expected if is_number(v)]
    if asked_numbers:
        problems += _number_problems(asked_numbers, expected, reading, query)
    return problems


def _list_problems(reading: Reading, lexicon: Lexicon, expected: list[Any], asked: list[str],
                   allowed: set[str]) -> list[str]:
    """A bare list ("G, O1 or O2", "G and O", "hbo.com or netflix.com") that holds an expected name or address
    and another candidate: a known name of the kind asked for, or a name the data does not know."""
    kinds = set().union(*(lexicon.kinds(k) for k in asked)) - {EXPECTED_KIND} if asked else set()
    addresses = {url_key(v) for v in expected if is_url(v)}
    asserted = {lexicon.canonical(n) for n in reading.names()}

    def expected_text(text: str) -> bool:
        return url_key(text) in addresses or lexicon.canonical(key(text)) in set(asked)

    for run in reading.lists:
        known = [lexicon.canonical(m) for m in run if isinstance(m, str)]
        unknown = [m[1] for m in run if isinstance(m, tuple)]
        if not ({k for k in known if k in asserted} & set(asked) or any(expected_text(u) for u in unknown)):
            continue
        others = [lexicon.text(k) for k in known if k not in allowed and (lexicon.kinds(k) & kinds or not kinds)]
        others += [u for u in unknown if not expected_text(u)]
        if others:
            return [f"the answer is a list of candidates ({_short(others[:4])} beside the answer), not one answer"]
    return []


SHORT_ANSWER = 12
"""An answer expecting a number and longer than this many words must share a word with the query."""


def _stems(text: str) -> set[str]:
    """Crude stems of the content words of ``text`` ("directed", "directing" -> "direct")."""
    out = set()
    for w in words(text):
        if w in COMMON_WORDS or w.isdigit() or len(w) < 3 or w.startswith("<"):
            continue
        for suffix in ("ings", "ing", "ies", "ed", "es", "s"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                break
        out.add(w)
    return out


FILLER_WORDS = 40
"""Answers of at least this many words are read for filler (see :func:`_filler`)."""


def _filler(reading: Reading, query: str, expected: list[Any]) -> str | None:
    """Why a long answer is filler around its values, or None: it repeats a run of five words three times, or
    fewer than a fifth of its content words are names, dates, numbers, words of the query or of the expected
    values ("the gold buried in noise")."""
    toks = reading.tokens
    if len(toks) < FILLER_WORDS:
        return None
    grams = Counter(tuple(toks[i:i + 5]) for i in range(len(toks) - 4))
    if grams and grams.most_common(1)[0][1] >= 3:
        return "the answer repeats itself (" + " ".join(t for t in grams.most_common(1)[0][0] if t[0] != "<") + " ...)"
    relevant = set(words(query)) | {w for v in expected for w in words(_text(v))}
    content = [t for t in toks if t not in COMMON_WORDS]
    hits = sum(1 for t in content if t[0] == "<" or t in relevant or t.isdigit())
    if content and hits * 5 < len(content):
        return f"the answer is mostly filler ({hits} of its {len(content)} content words name anything asked about)"
    return None


def _number_problems(asked: list[float], expected: list[Any], reading: Reading, query: str) -> list[str]:
    query_numbers = {v for _s, _e, v, w in number_spans(query) if not w}
    inside = {n for v in expected if isinstance(v, str) for _s, _e, n, _w in number_spans(v)}
    others: list[float] = []
    hedged: list[float] = []
    alone: list[float] = []
    # an approximation that qualifies no number of its own qualifies the answer's ("138, give or take a few")
    loose = any(not number_spans(m.string[m.end():m.end() + 25]) or number_spans(m.string[m.end():m.end() + 25])[0][0] > 8
                for c in reading.asserted() for m in _APPROX_CLAUSE.finditer(c.blanked()))
    for value, is_word, text, pos, clause in reading.numbers():
        if any(number_matches(value, a) for a in asked):
            before, after = text[max(0, pos - 30):pos], text[pos:pos + 40]
            after = re.sub(r"^[\d.,]+|^[a-z]+(?:[\s-][a-z]+)?", "", after, count=1)
            if (_APPROX_BEFORE.search(before.lower()) or _APPROX_AFTER.match(after.lower())
                    or _LISTED_BEFORE.search(before.lower()) or loose):
                hedged.append(value)
            continue
        if (is_word and value == 1) or value in query_numbers or value in inside:
            continue
        others.append(value)
        if clause.alone():
            alone.append(value)
    problems = []
    if len(reading.tokens) > SHORT_ANSWER and not _stems(" ".join(reading.tokens)) & _stems(query):
        problems.append("the answer does not speak of what was asked (a number in another context is no count)")
    if hedged:
        problems.append(f"the answer hedges its number ({_short(hedged[:3])}: about, or, at least, a range ...)")
    if alone:
        problems.append(f"the answer gives another number ({_short(alone[:3])}) as an answer too")
    year_asked = any(is_year(a) for a in asked)
    years = [o for o in others if is_year(o)]
    plain = [o for o in others if not is_year(o)] + (years if year_asked else [])
    if len(plain) > OTHER_NUMBERS or (not year_asked and len(set(years)) > OTHER_YEARS):
        problems.append(f"the answer states other numbers beside the one asked for ({_short((plain or years)[:5])})")
    elif plain and any(clause.hedges() for _v, _w, _t, _p, clause in reading.numbers()
                       if _v in plain or any(number_matches(_v, a) for a in asked)):
        problems.append(f"the answer hedges between numbers ({_short(plain[:3])})")
    return problems


# ------------------------------------------------------------------------------------------------ picks

_GROUPS = {
    "up": ("more", "most", "greater", "greatest", "larger", "largest", "bigger", "biggest", "higher", "highest",
           "better", "best", "top", "longer", "longest", "exceeds", "outnumbers", "outranks", "beats", "wins",
           "winner", "ahead", "above", "superior", "outscores", "edges"),
    "down": ("fewer", "fewest", "less", "least", "smaller", "smallest", "lower", "lowest", "worse", "worst",
             "shorter", "shortest", "below", "behind", "trails", "loses", "inferior"),
    "early": ("earlier", "earliest", "first", "before", "sooner", "soonest", "older", "oldest", "preceded",
              "predates", "prior"),
    "late": ("later", "latest", "last", "after", "newer", "newest", "younger", "youngest", "followed",
             "subsequent", "recent"),
}
_OPPOSITE = {"up": "down", "down": "up", "early": "late", "late": "early"}
_PREPOSITIONS = r"(?:before|after|ahead|behind|above|below|prior|beyond|past)\b"
_WORD_GROUP = {w: g for g, ws in _GROUPS.items() for w in ws}


def _direction(query: str) -> str | None:
    for w in words(query):
        if w in _WORD_GROUP:
            return _WORD_GROUP[w]
    return None


def decide_pick(reading: Reading, options: list[str], lexicon: Lexicon, query: str = "") -> str | None:
    """The option key the answer picks (see the module docstring), or None when it picks none or several."""
    keys = [lexicon.canonical(o) for o in options]
    target = _direction(query)
    verdicts: list[str] = []
    if target is not None:
        for clause in reading.asserted():
            named = [lexicon.canonical(n) for n in clause.names if lexicon.canonical(n) in keys]
            if not named:
                continue
            marks = [(pos, lexicon.canonical(k)) for pos, k in clause.name_positions()]
            comparative = [(m.start(), _WORD_GROUP[m.group(1)]) for m in re.finditer(r"\b([a-z]+)\b", clause.blanked())
                           if m.group(1) in _WORD_GROUP and _WORD_GROUP[m.group(1)] in (target, _OPPOSITE[target])]
            if not comparative:
                continue
            at, group = comparative[0]
            before = [k for pos, k in marks if pos < at and k in keys]
            after = [k for pos, k in marks if pos > at and k in keys]
            than = re.match(r"[a-z]+\s+(?:rated\s+|ranked\s+|rating\s+)?(?:than|of|over|to)\b", clause.blanked()[at:])
            if (than or re.match(_PREPOSITIONS, clause.blanked()[at:])) and after:
                # "..., lower than W", "ahead of A and B", "released before L": compared to what follows
                if group != target:
                    verdicts.append(after[0])
                else:
                    rest = [k for k in keys if k not in after]
                    if len(rest) == 1:
                        verdicts.append(rest[0])
                continue
            subject = before[0] if before else after[0] if after else None
            if subject is None:
                continue
            if group == target:
                verdicts.append(subject)
            elif len(keys) == 2:
                verdicts.append(keys[1 - keys.index(subject)])
    if verdicts:
        return verdicts[0] if len(set(verdicts)) == 1 else None
    named = [lexicon.canonical(n) for n in reading.names() if lexicon.canonical(n) in keys]
    if not named:
        return None
    standing = {lexicon.canonical(n) for c in reading.asserted() if c.alone() for n in c.names} & set(keys)
    if len(standing) > 1:  # "W. L.": options listed, none picked
        return None
    if len(set(named)) > 1 and (reading.hedges or any(
            len({lexicon.canonical(n) for n in run if isinstance(n, str)} & set(keys)) > 1 for run in reading.lists)):
        return None
    return named[0]


def picks(answer: str, winner: Any, others: list[Any], query: str = "", candidates: Any = None) -> bool:
    """Whether ``answer`` picks ``winner`` over ``others`` (see :func:`decide_pick`)."""
    options = [str(winner), *[str(o) for o in others if o != winner]]
    lexicon = answer_lexicon(candidates, options, query, options)
    choice = decide_pick(read_answer(answer, lexicon), [key(o) for o in options], lexicon, query)
    return choice is not None and choice == lexicon.canonical(key(str(winner)))


def mentions(answer: str, value: Any, candidates: Any = None) -> bool:
    """Whether ``answer`` states ``value`` in an asserted clause (see :func:`stated`)."""
    lexicon = answer_lexicon(candidates, [value])
    return stated(read_answer(answer, lexicon), value, lexicon)


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "ANSWER_CHARS",
    "OTHER_DATES",
    "OTHER_NAMES",
    "OTHER_NUMBERS",
    "OTHER_YEARS",
    "SAME_KIND",
    "answer_lexicon",
    "answer_limit",
    "answer_problems",
    "decide_pick",
    "is_name",
    "mentions",
    "picks",
    "stated",
    "url_key",
]
