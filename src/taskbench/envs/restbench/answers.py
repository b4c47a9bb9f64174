"""Reading a final answer: which names, dates and numbers it *asserts*, and whether it hedges.

The checker (:mod:`.checking`) asks whether an answer states the expected values. Stating is more than
containing: ``read_answer`` turns an answer into a :class:`Reading` in four steps.

1. **Spans.** Dates in any common format ("1983-06-08", "June 8th, 1983", "8th June 1983", "Jun 8, 1983",
   "06/08/1983", "8.6.1983") become one date each; the names of a :class:`Lexicon` (every name, title,
   keyword ... the data holds, with its *kind*, plus the expected values) are found by their words (case,
   accents, punctuation, a possessive "'s" and a leading article ignored), longest first. Both are masked, so
   the punctuation and words inside them ("Avatar: The Way of Water", "Don't Look Up", "Mr. Robot") never
   split a clause or negate one.
2. **Sentences.** A sentence that ends with "?" asks, it does not state ("Was it G? No, it was O." states O
   only). A retraction ("No, wait", "scratch that", "actually", "correction:") takes back what came before it.
3. **Clauses.** Sentences split at clause punctuation and before "but", "whereas", "instead"...; a clause that
   holds a negation or a rejection ("not", "never", "isn't", "wrong", "incorrect", "false", "mistaken",
   "allegedly"...) asserts nothing; "and not", "rather than", "instead of", "except", "if", "unless" ... negate
   only what follows them ("G and not anything else" asserts G). Idioms that only look negative ("no doubt",
   "not only", "none other than") are read as what they mean.
4. **What is asserted**: the names, dates and numbers of the asserted clauses; the bare lists ("G, O1 or O2",
   "hbo.com or netflix.com": names, dates and web addresses joined only by commas, "and", "or", "/", names
   the lexicon does not know included as capitalised words); clauses that are nothing but an item ("G. O.");
   the names of a question left open ("G (or is it O?)"); whether the answer hedges ("or", "maybe",
   "perhaps", "not sure" ...).

Pure functions over text: no data is read here; the lexicon is passed in.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import Any

# ------------------------------------------------------------------------------------------------ text


def plain(text: str) -> str:
    """``text`` with accents stripped and quotes and dashes made ASCII (case and punctuation kept)."""
    decomposed = unicodedata.normalize("NFKD", text)
    out = "".join(c for c in decomposed if not unicodedata.combining(c))
    return (out.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
            .replace("\u2013", "-").replace("\u2014", "-").replace("\u00a0", " "))


_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)*|&")


def _token(word: str) -> str:
    word = word.lower()
    if word == "&":
        return "and"
    if word.endswith("'s"):
        word = word[:-2]
    return word.replace("'", "")


@lru_cache(maxsize=1 << 16)
def words(text: str) -> tuple[str, ...]:
    """The words of ``text`` as the lexicon compares them (lower case, accents, apostrophes and a possessive
    "'s" dropped, "&" read as "and")."""
    return tuple(t for t in (_token(m.group()) for m in _WORD.finditer(plain(text))) if t)


def key(text: str) -> str:
    """One string per name: its words joined by spaces."""
    return " ".join(words(text))


_ARTICLES = ("the", "a", "an")
_ANNOTATION = re.compile(r"\s*\(\s*(?:1[89]\d\d|20\d\d)(?:\s*[-\u2013]\s*(?:1[89]\d\d|20\d\d)?)?\s*\)")
_ID = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9_-]{12,}$|^[^@\s]+@[^@\s]+$")

# ------------------------------------------------------------------------------------------------ dates

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]
_MONTH_NUMBER = {name: i + 1 for i, name in enumerate(MONTHS)}
_MONTH_NUMBER.update({name[:3]: i + 1 for i, name in enumerate(MONTHS)})
_MONTH_NUMBER["sept"] = 9
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>1[5-9]\d\d|20\d\d|21\d\d)"
_WEEKDAY = r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+)?"
_DATE_PATTERNS = [
    re.compile(r"(?<![\w/.-])(?P<year>\d{4})-(?P<m>\d{1,2})-(?P<day>\d{1,2})(?:T[0-9:.]+(?:Z|[+-]\d\d:?\d\d)?)?(?![\w/-])"),
    re.compile(r"(?<![\w/.-])(?P<year>\d{4})/(?P<m>\d{1,2})/(?P<day>\d{1,2})(?![\w/])"),
    re.compile(_WEEKDAY + r"\b" + _MONTH + r"\s+" + _DAY + r"(?:,\s*|\s+)" + _YEAR + r"\b", re.I),
    re.compile(_WEEKDAY + r"\b(?:the\s+)?" + _DAY + r"(?:\s+of)?\s+" + _MONTH + r",?\s+" + _YEAR + r"\b", re.I),
    re.compile(r"(?<![\w/.-])(?P<a>\d{1,2})([/.-])(?P<b>\d{1,2})\2(?P<year>\d{4})(?![\w/])"),
]


def _valid(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def find_dates(text: str) -> list[tuple[int, int, frozenset[str]]]:
    """(start, end, ISO readings) of every date ``text`` states (a numeric date such as 06/08/1983 has two
    readings when month and day could swap; a date-time counts as its day)."""
    found: list[tuple[int, int, frozenset[str]]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            groups = m.groupdict()
            year = int(groups["year"])
            readings: set[str] = set()
            if groups.get("mon"):
                month = _MONTH_NUMBER[groups["mon"].lower().rstrip(".")]
                readings.add(_valid(year, month, int(groups["day"])) or "")
            elif groups.get("m"):
                readings.add(_valid(year, int(groups["m"]), int(groups["day"])) or "")
            else:
                a, b = int(groups["a"]), int(groups["b"])
                readings.update({_valid(year, a, b) or "", _valid(year, b, a) or ""})
            readings.discard("")
            if readings:
                found.append((m.start(), m.end(), frozenset(readings)))
                taken.append((m.start(), m.end()))
    return sorted(found)


_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ][0-9:.]+(?:Z|[+-]\d\d:?\d\d)?)?$")


def iso_date(value: Any) -> str | None:
    """``value`` as a YYYY-MM-DD date when it is one (an ISO date or date-time), else None."""
    if not isinstance(value, str):
        return None
    m = _ISO.match(value.strip())
    return _valid(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


# ------------------------------------------------------------------------------------------------ numbers

NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_VALUE = {w: i for i, w in enumerate(NUMBER_WORDS)}
_WORD_VALUE.update({w: 20 + 10 * i for i, w in enumerate(_TENS)})
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_TENS) + r")(?:[\s-]+(" + "|".join(NUMBER_WORDS[1:10]) + r"))?\b|\b("
                          + "|".join(NUMBER_WORDS) + r")\b", re.I)
_DIGITS = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?!\d|[.,]\d)")


def number_spans(text: str) -> list[tuple[int, int, float, bool]]:
    """(start, end, value, is_word) of every number ``text`` states: digits ("8", "8.5", "1,000") and English
    words ("eight", "twenty-one"). A date is no number here (mask dates first)."""
    spans: list[tuple[int, int, float, bool]] = []
    for m in _DIGITS.finditer(text):
        whole = m.group(1).replace(",", "")
        spans.append((m.start(), m.end(), float(f"{whole}.{m.group(2)}") if m.group(2) else float(whole), False))
    for m in _NUMBER_WORD.finditer(text):
        if m.group(3):
            value = _WORD_VALUE[m.group(3).lower()]
        else:
            value = _WORD_VALUE[m.group(1).lower()] + (_WORD_VALUE[m.group(2).lower()] if m.group(2) else 0)
        spans.append((m.start(), m.end(), float(value), True))
    return sorted(spans)


def number_matches(stated: float, value: float) -> bool:
    """Whether a stated number is ``value``: an integer exactly; a float as it is or rounded to the decimals
    stated ("8.46" or "8.5" for 8.456; "8" is not 8.456)."""
    if float(value).is_integer():
        return stated == value
    text = f"{stated:g}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    return stated == value or (decimals >= 1 and abs(round(value, decimals) - stated) < 1e-9)


# ------------------------------------------------------------------------------------------------ lexicon


@dataclass
class Entry:
    """One name of a lexicon."""

    text: str
    kinds: set[str] = field(default_factory=set)
    parents: set[str] = field(default_factory=set)  # keys of the longer strings it is a comma-part of
    first: bool = False  # it opens one of those strings (a city, not the state or country after it)


# one-word names that are ordinary words of an answer: never read as a name (unless expected)
COMMON_WORDS = frozenset("""
a an the and or nor but if so as at by for from in into of off on onto out over to up down with without about
above after again against all also am any are around away back be because been before being below between both
can could did do does doing done each either else even ever every few first for further get got had has have
having he her here hers herself him himself his how i is it its itself just last least less let like made make
many may me might more most much must my myself never new next no none not nothing now once one only other
our ours ourselves own same see she should since some still such than that their theirs them themselves then
there these they this those though through thus too under until upon us very was we well were what when where
whether which while who whom whose why will would yes yet you your yours yourself yourselves nope yeah okay ok
zero two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen
eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million
true false right wrong correct incorrect maybe perhaps please thanks thank sorry answer question result results
""".split())


class Lexicon:
    """The names an answer can state, each with its kinds ("tmdb:person.name", "keyword" ...). A name is found
    by its words; a title also without its leading article; each part of a comma-separated string ("Universal
    City, California, United States") is a name of kind ``part`` too. One-word names that are common words
    ("It", "Up", "Eleven") are not names unless added with ``force``.

    ``base``: a lexicon this one extends (its names are found too; adding a name the base has adds kinds
    here, leaving the base as it is), so a large shared lexicon is not copied per check."""

    MAX_WORDS = 12
    MAX_CHARS = 90

    def __init__(self, entries: Iterable[tuple[str, str]] = (), *, base: Lexicon | None = None) -> None:
        self.base = base
        self.entries: dict[str, Entry] = {}
        self.aliases: dict[str, str] = {}  # article-less key -> key
        self._first: dict[str, set[tuple[str, ...]]] = {}
        self._sorted: dict[str, list[tuple[str, ...]]] = {}
        for kind, text in entries:
            self.add(kind, text)

    def __len__(self) -> int:
        return len(self.entries) + (len(self.base) if self.base is not None else 0)

    def __contains__(self, k: object) -> bool:
        return isinstance(k, str) and self.entry(self.canonical(k)) is not None

    def entry(self, k: str) -> Entry | None:
        found = self.entries.get(k)
        return found if found is not None or self.base is None else self.base.entry(k)

    def add(self, kind: str, text: Any, *, force: bool = False) -> str | None:
        """Add ``text`` as a name of ``kind``; returns its key (None when it is no name: not a string, empty,
        too long, a number, a date, a URL or a path, or one common word unless ``force``)."""
        if not isinstance(text, str):
            return None
        raw = text.strip()
        if not raw or len(raw) > self.MAX_CHARS or iso_date(raw) or "://" in raw or raw.startswith("/"):
            return None
        toks = words(raw)
        if not toks or len(toks) > self.MAX_WORDS or all(t.isdigit() for t in toks):
            return None
        if len(toks) >= 5 and not force and (raw.endswith(".") or ". " in raw):
            return None  # a sentence (a description, a tagline), not a name
        if len(toks) == 1 and not force and (toks[0] in COMMON_WORDS or _ID.match(raw)):
            return None  # a common word, or an id ("Gxiapi9kcioZ9CaWkdbpJc")
        k = " ".join(toks)
        self._insert(k, toks, raw, kind)
        if len(toks) >= 2 and toks[0] in _ARTICLES and (len(toks) > 2 or toks[1] not in COMMON_WORDS or force):
            self.aliases.setdefault(" ".join(toks[1:]), k)
            self._index(toks[1:])
        parts = [p.strip() for p in raw.split(",")] if "," in raw else []
        for i, part in enumerate(parts if len(parts) >= 2 else []):
            ptoks = words(part)
            if ptoks and not all(t.isdigit() for t in ptoks) and not (len(ptoks) == 1 and ptoks[0] in COMMON_WORDS):
                pkey = " ".join(ptoks)
                self._insert(pkey, ptoks, part, "part")
                self.entries[pkey].parents.add(k)
                self.entries[pkey].first |= i == 0
        return k

    def _insert(self, k: str, toks: tuple[str, ...], raw: str, kind: str) -> None:
        entry = self.entries.get(k)
        if entry is None:
            inherited = self.base.entry(k) if self.base is not None else None
            entry = self.entries[k] = Entry(inherited.text if inherited else raw,
                                            set(inherited.kinds) if inherited else set(),
                                            set(inherited.parents) if inherited else set(),
                                            inherited.first if inherited else False)
            self._index(toks)
        entry.kinds.add(kind)

    def _index(self, toks: tuple[str, ...]) -> None:
        self._first.setdefault(toks[0], set()).add(toks)
        self._sorted.pop(toks[0], None)

    def _candidates(self, first: str) -> list[tuple[str, ...]]:
        cands = self._sorted.get(first)
        if cands is None:
            pool = set(self._first.get(first, ()))
            if self.base is not None:
                pool.update(self.base._candidates(first))
            cands = self._sorted[first] = sorted(pool, key=len, reverse=True)
        return cands

    def canonical(self, k: str) -> str:
        """The key ``k`` stands for (an article-less title -> the title)."""
        if self.entry(k) is not None:
            return k
        alias = self.aliases.get(k)
        if alias is None and self.base is not None:
            alias = self.base.aliases.get(k)
        return alias or k

    def text(self, k: str) -> str:
        entry = self.entry(self.canonical(k))
        return entry.text if entry else k

    def kinds(self, k: str) -> set[str]:
        entry = self.entry(self.canonical(k))
        return set(entry.kinds) if entry else set()

    def parents(self, k: str) -> set[str]:
        """Keys of the longer strings ``k`` is a comma-part of."""
        entry = self.entry(self.canonical(k))
        return set(entry.parents) if entry else set()

    def qualifier(self, k: str) -> bool:
        """Whether ``k`` is only ever a later part of a place ("California", "USA"): it qualifies a place
        rather than naming another."""
        entry = self.entry(self.canonical(k))
        return entry is not None and bool(entry.parents) and not entry.first

    def companions(self, k: str) -> set[str]:
        """Keys of the strings ``k`` is part of and of their other parts ("California" beside "Universal
        City" when the data says "Universal City, California, United States")."""
        entry = self.entry(self.canonical(k))
        out: set[str] = set()
        for parent in entry.parents if entry else set():
            out.add(parent)
            parent_entry = self.entry(parent)
            if parent_entry is not None:
                out.update(key(p) for p in parent_entry.text.split(","))
        return out

    def find(self, toks: list[str], accept: Callable[[int, int, str], bool] | None = None
             ) -> Iterator[tuple[int, int, str]]:
        """(first, last + 1, key) of every name in the word list ``toks``, longest first, left to right
        (``accept(first, last, key)`` may turn a match down; a shorter one is tried then)."""
        i = 0
        while i < len(toks):
            for cand in self._candidates(toks[i]):
                n = len(cand)
                if tuple(toks[i:i + n]) == cand:
                    k = self.canonical(" ".join(cand))
                    if accept is not None and not accept(i, i + n, k):
                        continue
                    yield i, i + n, k
                    i += n
                    break
            else:
                i += 1

    @classmethod
    def from_data(cls, data: Any, prefix: str = "", *, into: Lexicon | None = None) -> Lexicon:
        """A lexicon of the short strings of a JSON value, each of kind ``prefix`` + its key path (list
        positions as ``[]``; the items of a list of lists by position: ``cast[].1``)."""
        lex = into if into is not None else cls()
        for path, text in string_leaves(data, prefix):
            lex.add(path, text)
        return lex


def string_leaves(data: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(key path, string) of every string in a JSON value (see :meth:`Lexicon.from_data`)."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from string_leaves(v, f"{path}.{k}" if path and not path.endswith(":") else f"{path}{k}")
    elif isinstance(data, list):
        tuple_like = bool(data) and all(isinstance(v, list) for v in data)
        for v in data:
            if tuple_like:
                for i, item in enumerate(v):
                    yield from string_leaves(item, f"{path}[].{i}")
            else:
                yield from string_leaves(v, f"{path}[]")
    elif isinstance(data, str):
        yield path, data


# ------------------------------------------------------------------------------------------------ reading

_OPEN, _CLOSE = "\ue000", "\ue001"
_MARK = re.compile(_OPEN + r"([EDU])(\d+)" + _CLOSE)

# words that make a clause assert nothing (after idioms are taken out; apostrophes dropped)
_NEGATORS = re.compile(
    r"\b(not|no|never|neither|nor|none|nothing|nobody|nowhere|cannot|without|isnt|wasnt|arent|werent|doesnt|"
    r"didnt|dont|cant|couldnt|wont|wouldnt|shouldnt|hasnt|havent|hadnt|aint|nt|"
    r"wrong|incorrect|false|untrue|mistaken|mistakenly|inaccurate|erroneous|erroneously|invalid|"
    r"ruled out|rejected|debunked|myth|misconception|allegedly|supposedly|rumou?red|confused|doubt|doubtful|"
    r"unlikely|impossible|fake|bogus|nonsense|misinformation|disputed|hypothetical|imaginary|"
    r"some (?:people )?(?:say|think|believe|claim)|(?:people|many|others) (?:say|think|believe|claim)|"
    r"commonly (?:thought|believed)|often (?:thought|believed|said)|some sources|other sources|according to some|"
    r"sources (?:differ|vary|disagree)|depending on|they say)\b")
# of those, the ones that leave a value in doubt rather than deny it (what such a clause names stays open)
_DOUBT = re.compile(
    r"\b(allegedly|supposedly|rumou?red|doubt|doubtful|unlikely|disputed|some (?:people )?(?:say|think|believe|claim)|"
    r"(?:people|many|others) (?:say|think|believe|claim)|commonly (?:thought|believed)|often (?:thought|believed|said)|"
    r"some sources|other sources|according to some|sources (?:differ|vary|disagree)|depending on|they say)\b")
# markers that negate only what follows them in the clause
_SCOPED = re.compile(
    r"\b(?:and|but|or|yet)\s+(?:not|never|no)\b|\b(?:rather than|instead of|other than|as opposed to|unlike|"
    r"except(?: for)?|excluding|apart from|not including|with the exception of|let alone|if|unless|whether|"
    r"suppose|supposing|assuming|hypothetically|in place of|in contrast to|contrary to)\b", re.I)
# phrases that look negative and are not
_IDIOMS = re.compile(
    r"\b(?:there is |there s |theres )?(?:no doubt(?: about it)?|without (?:a |any )?doubt|beyond (?:a |any )?doubt|"
    r"no question(?: about it)?|not only|not just|none other than|no other than|no one (?:else )?(?:but|other than)|"
    r"nobody (?:else )?(?:but|other than)|nothing (?:else )?but|no wonder|not surprisingly|needless to say|"
    r"no less than|not to mention|no matter|never mind that|no mistake)\b", re.I)
_RETRACT = re.compile(
    r"^\s*(?:no,? wait|wait|scratch that|strike that|correction|actually|i mean|sorry|my mistake|my bad|oops|"
    r"never ?mind|on second thought|just kidding|kidding|i take (?:that|it) back|let me correct(?: that| myself)?|"
    r"or rather|rather,|update:|edit:)")
_BARE_NO = re.compile(r"^\s*(?:no|nope|nah|wrong|incorrect|false|not quite|not really)\s*[!.]*\s*$")
_SENTENCE = re.compile(r"([.!?;:]+)(?=[\s)\]\"']|$)|\n|[()\[\]]")
_CLAUSE = re.compile(r",\s|\s-+\s|\b(?:but|whereas|while|although|though|however|instead|yet|whilst)\b", re.I)
_HEDGE = re.compile(r"\b(or|either|maybe|perhaps|possibly|probably|(?:might|could|may) (?:also |well |just )?be|"
                    r"unsure|uncertain|not sure|not certain|i guess|my guess|i think|i believe|likely|"
                    r"alternatively|otherwise|or else|also possible)\b|\w\s*/\s*\w")
_LIST_GAP = re.compile(r"^[\s,;/&]*(?:(?:and|or|nor|and/or|as well as|plus|either|or maybe|or perhaps|or possibly)"
                       r"\b[\s,;/&]*)?$", re.I)


def _hide(text: str) -> str:
    """Masks blanked out (positions kept), lower case: where markers are looked for."""
    return _MARK.sub(lambda m: "\x00" * len(m.group()), text).lower()


def _bare(text: str) -> str:
    """Masks out, lower case, apostrophes dropped: the text negation and hedge words are looked for in."""
    return _MARK.sub(" ", text).lower().replace("'", "")


@dataclass
class Clause:
    """One clause of an answer: whether it asserts, what it names, its text with names restored."""

    masked: str
    asserts: bool
    text: str = ""
    names: list[str] = field(default_factory=list)  # lexicon keys, in order
    dates: list[frozenset[str]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # names the lexicon does not know: "Chris Weitz", "hbo.com"

    def alone(self) -> bool:
        """Whether the clause is nothing but names, dates and numbers (an item of a list, not a statement)."""
        rest = self.masked
        for start, end, (what, _item) in reversed(_items(self.masked, [])):
            if what == "name" and len(self.masked[start:end].split()) >= 2:  # an unknown full name is an item
                rest = rest[:start] + " " + rest[end:]
        rest = _MARK.sub(" ", rest)
        rest = _DIGITS.sub(" ", _NUMBER_WORD.sub(" ", rest))
        return not re.search(r"[A-Za-z]{2,}", re.sub(r"\b(?:and|or|nor|the|a|an|also|then|plus)\b", " ", rest,
                                                     flags=re.I))

    def hedges(self) -> bool:
        """Whether the clause hedges ("or", "maybe", "could also be" ...)."""
        return bool(_HEDGE.search(_bare(self.masked)))

    def name_positions(self) -> list[tuple[int, str]]:
        """(position in :meth:`blanked`, key) of each name, in order."""
        names = iter(self.names)
        return [(m.start(), next(names)) for m in _MARK.finditer(self.masked) if m.group(1) == "E"]

    def blanked(self) -> str:
        """The clause's own words, lower case, with its names and dates blanked out (positions kept)."""
        return _hide(self.masked)


@dataclass
class Reading:
    """What an answer asserts (see the module docstring)."""

    answer: str
    clauses: list[Clause] = field(default_factory=list)
    lists: list[list[Any]] = field(default_factory=list)  # bare lists of names (keys) or dates, asserted sentences
    hedges: bool = False  # a hedge word in an asserted clause
    tokens: list[str] = field(default_factory=list)  # the whole answer's words, each name or date one "<n>" token
    wondered: list[Any] = field(default_factory=list)  # names of questions left open ("or is it X?"); unknown
    # names as ("name", text)

    def asserted(self) -> list[Clause]:
        return [c for c in self.clauses if c.asserts]

    @property
    def text(self) -> str:
        """The asserted clauses, joined."""
        return " . ".join(c.text for c in self.asserted())

    @property
    def declarative(self) -> str:
        """Every clause that is not a question or retracted, asserted or not (a yes/no answer's facts)."""
        return " . ".join(c.text for c in self.clauses)

    def names(self, asserted: bool = True) -> list[str]:
        return [n for c in self.clauses if c.asserts or not asserted for n in c.names]

    def dates(self, asserted: bool = True) -> list[frozenset[str]]:
        return [d for c in self.clauses if c.asserts or not asserted for d in c.dates]

    def numbers(self, asserted: bool = True) -> list[tuple[float, bool, str, int, Clause]]:
        """(value, is_word, the clause's text with names and dates blanked, position in it, the clause) of the
        numbers stated outside names and dates."""
        out = []
        for c in self.clauses:
            if c.asserts or not asserted:
                bare = _MARK.sub(" ; ", c.masked)
                out += [(v, w, bare, s, c) for s, _e, v, w in number_spans(bare)]
        return out


def read_answer(answer: str, lexicon: Lexicon | None = None, *, yes_no: bool = False) -> Reading:
    """Read ``answer`` (see the module docstring). ``yes_no``: the question is a yes/no question, so a
    leading "No" answers it rather than taking back what came before."""
    lexicon = lexicon if lexicon is not None else Lexicon()
    text = plain(answer)
    dates = find_dates(text)
    spans: list[tuple[int, int, str, Any]] = [(s, e, "D", r) for s, e, r in dates]
    for m in _DOMAIN.finditer(text):  # web addresses: one item each ("hbo.com" names no network)
        if not any(s < m.end() and m.start() < e for s, e, _k, _v in spans):
            spans.append((m.start(), m.end(), "U", m.group()))
    toks = [(m.start(), m.end(), _token(m.group())) for m in _WORD.finditer(text)]
    toks = [t for t in toks if t[2] and not any(s <= t[0] < e for s, e, _k, _v in spans)]
    def accept(first: int, last: int, k: str) -> bool:
        """A title of ordinary words ("On the Air") written in lower case is those words, not the title."""
        raw = text[toks[first][0]:toks[last - 1][1]]
        words_of = k.split()
        return not (raw == raw.lower() and lexicon.text(k) != lexicon.text(k).lower() and len(words_of) > 1
                    and sum(w in COMMON_WORDS for w in words_of) * 2 >= len(words_of))

    for first, last, k in lexicon.find([t[2] for t in toks], accept):
        end = toks[last - 1][1]
        tail = lexicon.text(k)[-1:]
        if tail and not tail.isalnum() and text[end:end + 1] == tail:
            end += 1  # "Love Is All You Need?", "Lucasfilm Ltd.": the name's own punctuation is part of it
        year = _ANNOTATION.match(text, end)
        if year:
            end = year.end()  # "Lost in Translation (2003)": the year belongs to the title, it counts nothing
        spans.append((toks[first][0], end, "E", k))
    spans.sort(key=lambda s: s[0])
    values: list[Any] = []
    pieces: list[str] = []
    at = 0
    for start, end, kind, value in spans:
        if start < at:
            continue
        pieces.append(text[at:start])
        pieces.append(f"{_OPEN}{kind}{len(values)}{_CLOSE}")
        values.append(value)
        at = end
    pieces.append(text[at:])
    masked = _IDIOMS.sub(" ~ ", "".join(pieces))
    reading = Reading(answer=answer)
    reading.tokens = [f"<{m.group(1)}>" if m.group(1) else _token(m.group(2)) for m in
                      re.finditer(_OPEN + r"[EDU](\d+)" + _CLOSE + r"|(" + _WORD.pattern + ")", masked)]
    reading.tokens = [t for t in reading.tokens if t]
    clauses: list[Clause] = []
    asked: list[Any] = []  # the names of the last question, until an answer says "no" to it
    for sentence, ends in _sentences(masked):
        if ends.startswith("?"):  # a question states nothing; one left open leaves its names in doubt
            reading.wondered += asked
            asked = [item if what == "E" else ("name", item) for _s, _e, (what, item) in _items(sentence, values)
                     if what in ("E", "name")]
            continue
        if asked and not re.match(r"\s*(?:no|nope|nah|wrong|incorrect|not)\b", _bare(sentence)):
            reading.wondered += asked
        asked = []
        sentence_clauses: list[Clause] = []
        for part in _CLAUSE.split(sentence):
            if not part or not part.strip():
                continue
            retract = _RETRACT.match(_hide(part))
            if retract or (not yes_no and _BARE_NO.match(_bare(part)) and (clauses or sentence_clauses)):
                clauses, sentence_clauses = [], []  # what came before is taken back
                reading.lists = []
                part = part[retract.end():] if retract else ""
            for piece, asserts in _scopes(part):
                clause = _clause(piece, asserts, values, lexicon)
                sentence_clauses.append(clause)
                if not asserts and _DOUBT.search(_bare(piece)):  # "some sources give X": X stays open
                    reading.wondered += [*clause.names, *clause.dates, *[("name", u) for u in clause.unknown]]
        if any(c.asserts for c in sentence_clauses):
            reading.lists += _bare_lists(sentence, values)
            for c in sentence_clauses:  # a clause of nothing but items is a list of them
                items = [item if what in ("D", "E") else ("name", item) for _s, _e, (what, item) in _items(c.masked, values)]
                if c.asserts and len(items) >= 2 and c.alone():
                    reading.lists.append(items)
        clauses += sentence_clauses
    reading.wondered += asked
    reading.clauses = [c for c in clauses if c.masked.strip()]
    reading.hedges = any(c.hedges() for c in reading.asserted())
    return reading


def _sentences(masked: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    at = 0
    for m in _SENTENCE.finditer(masked):
        out.append((masked[at:m.start()], m.group(1) or ""))
        at = m.end()
    out.append((masked[at:], ""))
    return [(s, e) for s, e in out if s.strip()]


_CONDITIONAL = re.compile(r"\b(?:if|unless|suppose|supposing|assuming)\b")
_APODOSIS = re.compile(r"\b(?:then|you|i|we|he|she|they|it|there)\b")


def _scopes(clause: str) -> list[tuple[str, bool]]:
    """The parts of a clause with whether each asserts: before a scoped marker the clause may assert; from
    it on, not (a condition ends where its consequence starts: "If you like X you could try Y" asserts Y); a
    negator anywhere in a part makes it assert nothing."""
    hidden = _hide(clause)
    m = _SCOPED.search(hidden)
    if not m:
        return [(clause, not _NEGATORS.search(_bare(clause)))]
    head, rest = clause[:m.start()], clause[m.start():]
    out = [(head, not _NEGATORS.search(_bare(head)))] if head.strip() else []
    if _CONDITIONAL.fullmatch(m.group()):
        words_after = list(re.finditer(r"\S+", hidden[m.end():]))
        if len(words_after) > 2:  # the condition's own subject is its first word after "if"
            start = m.end() + words_after[1].start()
            then = _APODOSIS.search(hidden, start)
            if then:
                cut = then.start()
                out.append((clause[m.start():cut], False))
                tail = clause[cut:]
                out += _scopes(tail)
                return out
    out.append((rest, False))
    return out


def _clause(part: str, asserts: bool, values: list[Any], lexicon: Lexicon) -> Clause:
    names = [values[int(m.group(2))] for m in _MARK.finditer(part) if m.group(1) == "E"]
    dates = [values[int(m.group(2))] for m in _MARK.finditer(part) if m.group(1) == "D"]

    def restore(m: re.Match[str]) -> str:
        value = values[int(m.group(2))]
        kind = m.group(1)
        return " " + (min(value) if kind == "D" else value if kind == "U" else lexicon.text(value)) + " "

    unknown = [item for _s, _e, (what, item) in _items(part, values) if what == "name" and item]
    return Clause(masked=part, asserts=asserts, text=_MARK.sub(restore, part).strip(), names=names, dates=dates,
                  unknown=unknown)


_CAPITALISED = re.compile(r"(?<![\w\x00])[A-Z][A-Za-z0-9'-]*(?:\s+(?:(?:of|the|and|de|del|da|van|von|der|la|le|du)\s+)?"
                          r"[A-Z0-9][A-Za-z0-9'-]*)*")
_DOMAIN = re.compile(r"(?<![\w@/.])(?:[a-z][a-z0-9+.-]*://)?(?:www\d?\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*"
                     r"\.(?:com|org|net|io|tv|co|uk|de|fr|jp|gov|edu|info|me)\b(?:/[^\s,;]*)?", re.I)


def _items(sentence: str, values: list[Any]) -> list[tuple[int, int, Any]]:
    """(start, end, item) of what a sentence names: its names (keys) and dates (readings), and the names the
    lexicon does not know: capitalised words ("John Williams") and web addresses, as ("name", text)."""
    found: list[tuple[int, int, Any]] = [(m.start(), m.end(), ("name" if m.group(1) == "U" else m.group(1),
                                                                 values[int(m.group(2))] if values else None))
                                         for m in _MARK.finditer(sentence)]
    hidden = _MARK.sub(lambda m: "\x00" * len(m.group()), sentence)
    lead = re.match(r"\s*", hidden)
    for m in _CAPITALISED.finditer(hidden):
        text, start = m.group(), m.start()
        first = text.split()[0]
        if start == (lead.end() if lead else 0) and first.lower() in COMMON_WORDS:
            rest = text[len(first):].lstrip()
            text, start = rest, m.end() - len(rest)
        if text and text != "I" and not any(s <= start < e for s, e, _ in found):
            found.append((start, start + len(text), ("name", text)))
    return sorted(found, key=lambda f: f[0])


def _bare_lists(sentence: str, values: list[Any]) -> list[list[Any]]:
    """Runs of two or more names and dates joined only by list separators (commas, "and", "or", "/", "&"):
    names as keys (names the lexicon does not know as ("name", text)), dates as their sets of readings."""
    runs: list[list[Any]] = []
    current: list[Any] = []
    prev_end: int | None = None
    for start, end, (what, item) in _items(sentence, values):
        gap = sentence[prev_end:start] if prev_end is not None else ""
        joined = prev_end is not None and gap.strip() != "" and _LIST_GAP.match(gap)
        if not joined:
            if len(current) >= 2:
                runs.append(current)
            current = []
        current.append(item if what in ("D", "E") else ("name", item))
        prev_end = end
    if len(current) >= 2:
        runs.append(current)
    return runs


# ------------------------------------------------------------------------------------------------ yes / no

_YES = re.compile(r"\b(yes|yeah|yep|yup|indeed|correct|true|affirmative|same person|both|definitely|certainly|"
                  r"absolutely)\b")
_NO = re.compile(r"\b(no|nope|nah|not|isnt|arent|wasnt|werent|doesnt|didnt|dont|neither|nor|never|different|"
                 r"false|incorrect|wrong|untrue|mistaken|none|outside|absent|missing|lacks)\b")
_BOTH = re.compile(r"\b(yes|yeah|yep|yup)\W+(?:and|or|but)?\W*(no|nope|nah)\b|\b(no|nope|nah)\W+(?:and|or|but)?\W*"
                   r"(yes|yeah|yep|yup)\b")
_LEAD = re.compile(r"^\s*(yes|yeah|yep|yup|no|nope|nah)\b")
_NON_ANSWER = re.compile(r"\b(could not|couldnt|cannot|can not|cant|unable|dont know|do not know|not sure|"
                         r"no information|no data|no idea|not (?:able|possible) to|unknown|unclear)\b")


def says_yes(answer: str | Reading, lexicon: Lexicon | None = None, *, facts: bool = True) -> bool | None:
    """True for an answer that says yes, False for no, None when it says both, hedges, or says it could not
    tell. A leading "Yes"/"No" decides unless a later one contradicts it; an answer with no yes/no word
    answers by its facts (``facts``: it states the ones the question is about): stated plainly, yes;
    negated, no."""
    reading = answer if isinstance(answer, Reading) else read_answer(answer, lexicon, yes_no=True)
    declarative = [_bare(c.masked) for c in reading.clauses]
    text = " " + " . ".join(declarative) + " "
    if not any(d.strip() for d in declarative) or _NON_ANSWER.search(text) or _BOTH.search(text):
        return None
    lead = _LEAD.match(declarative[0])
    if lead:
        said = lead.group(1) in ("yes", "yeah", "yep", "yup")
        later = " . ".join(declarative[1:])
        opposite = r"\b(yes|yeah|yep|yup)\b" if not said else r"(?:^|\. )\s*(no|nope|nah)\s*(?:\.|$)"
        return None if re.search(opposite, later) else said
    yes_word, no_word = bool(_YES.search(text)), bool(_NO.search(text))
    if yes_word != no_word:
        return yes_word
    if yes_word or reading.hedges or not facts:
        return None
    return True

__all__ = [
    "MONTHS",
    "NUMBER_WORDS",
    "Clause",
    "Entry",
    "Lexicon",
    "Reading",
    "find_dates",
    "iso_date",
    "key",
    "number_matches",
    "number_spans",
    "plain",
    "read_answer",
    "says_yes",
    "string_leaves",
    "words",
]
