"""Coverage: does a prediction set fit the gold it is scored against? Warnings, and one error.

A prediction set of which no id is a selected gold id has nothing to score (:attr:`Coverage.disjoint`): that is
an error (:func:`disjoint_error`), not a table of zeros. Otherwise a score is only as meaningful as the match between the two files. Scoring predictions for 2 of 30 gold ids,
or another dataset's predictions, gives plausible-looking numbers; :func:`coverage_warnings` says what does not
fit, one line per problem:

- gold samples without a prediction (strict scores them as empty graphs, compat leaves them out);
- prediction ids that are not in the gold data (none at all: another dataset's predictions?);
- predicted tools that are not in the library (most of them: another dataset's predictions?);
- ids predicted more than once, prediction records without a usable id, prediction lines that could not be read;
- gold records that cannot be scored (left out, or an error with ``unusable="error"``);
- requested ids (``ids=``) that are not in the gold data.

:class:`IdTally` counts the prediction ids of a (possibly one-pass) stream as the scorer reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..schema import record_id

__all__ = ["Coverage", "IdTally", "coverage_warnings", "disjoint_error"]

_SHOW = 5


class IdTally:
    """Wraps prediction records and counts their ids as they pass (each record is passed on unchanged).

    After iteration: ``ids`` (usable ids, in order of first appearance), ``duplicates``, ``no_id`` (records
    without a usable id: not an object, no ``id``, or an id that is not a string or an integer) and ``models``
    (the ``model`` names the records give, in order)."""

    def __init__(self, records: Iterable[Any]) -> None:
        self._records = records
        self.ids: dict[str, None] = {}
        self.duplicates: dict[str, None] = {}
        self.no_id = 0
        self.models: dict[str, None] = {}

    def __iter__(self) -> Iterator[Any]:
        ids, dups, models = self.ids, self.duplicates, self.models
        for rec in self._records:
            sid = rec.get("id") if isinstance(rec, Mapping) else None
            model = rec.get("model") if isinstance(rec, Mapping) else None
            if type(model) is str and model not in models:
                models[model] = None
            if type(sid) is not str:
                sid = record_id(sid)
            if sid is None:
                self.no_id += 1
            elif sid in ids:
                dups[sid] = None
            else:
                ids[sid] = None
            yield rec

    def count(self) -> IdTally:
        """Iterate the records once (for a list that the scorer reads on its own)."""
        for _ in self:
            pass
        return self


@dataclass
class Coverage:
    """How a prediction set covers the selected gold samples (see the module docstring)."""

    selected: Sequence[str]
    """Gold ids scored, in order."""
    gold_ids: set[str]
    """Every usable gold id (selected or not)."""
    predicted: Mapping[str, None] | set[str]
    """Usable prediction ids."""
    duplicates: Sequence[str] = ()
    no_id: int = 0
    unreadable: Sequence[InputError] = ()
    """Prediction lines that could not be read."""
    unusable_gold: Sequence[InputError] = ()
    """Gold records left out because they cannot be scored."""
    requested: Sequence[str] | None = None
    """The ids asked for (``ids=``), if any."""
    predicted_nodes: int = 0
    foreign_nodes: int = 0
    """Predicted nodes in all, and those whose tool is not in the library."""
    missing: list[str] = field(init=False)
    unmatched: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.missing = [i for i in self.selected if i not in self.predicted]
        self.unmatched = [i for i in self.predicted if i not in self.gold_ids]

    @property
    def disjoint(self) -> bool:
        """Predictions were given, gold samples were selected, and no prediction is for one of them (another
        dataset's predictions, most likely): there is nothing to score."""
        return bool(self.predicted) and bool(self.selected) and len(self.missing) == len(self.selected) \
            and bool(self.unmatched)


def disjoint_error(cov: Coverage, *, dataset: str | None = None, name: str | None = None) -> InputError:
    """The one-line error of a :attr:`Coverage.disjoint` prediction set (``name``: which set, when there are
    two)."""
    of = f" of {dataset!r}" if dataset else ""
    who = f"{name}: " if name else ""
    return InputError(
        f"{who}none of the {len(cov.predicted)} prediction ids is a gold id{of} (e.g. {_ids(list(cov.predicted), 3)}): "
        "are these predictions for another dataset?",
        hint="score them with --data of the dataset they were made for",
    )


def _ids(ids: Sequence[str], n: int = _SHOW) -> str:
    shown = ", ".join(repr(i) if len(i) <= 40 else repr(i[:37] + "...") for i in list(ids)[:n])
    return shown + (f", ... ({len(ids) - n} more)" if len(ids) > n else "")


SUBSET_HINT = "use --ids or --limit to score a subset on purpose"
"""What the missing-prediction warning advises (``evaluate``'s options; a caller with other options passes its own)."""


def coverage_warnings(cov: Coverage, *, strict: bool = True, subset_hint: str = SUBSET_HINT) -> list[str]:
    """One line per coverage problem (empty when the predictions fit the gold); ``subset_hint`` ends the
    missing-prediction line with the options the calling command really has."""
    out: list[str] = []
    n = len(cov.selected)
    if cov.unusable_gold:
        first = cov.unusable_gold[0]
        out.append(
            f"{len(cov.unusable_gold)} gold record(s) cannot be scored and were left out (--unusable error "
            f"stops instead); first: {first}"
        )
    if cov.requested is not None:
        unknown = [i for i in cov.requested if i not in cov.gold_ids]
        if unknown:
            out.append(f"{len(unknown)} of the {len(cov.requested)} requested ids are not in the gold data: "
                       f"{_ids(unknown)}")
    if cov.unreadable:
        out.append(f"{len(cov.unreadable)} prediction line(s) could not be read and were left out; first: "
                   f"{cov.unreadable[0]}")
    if cov.no_id:
        out.append(f"{cov.no_id} prediction record(s) have no usable 'id' (a string or an integer) and were left out")
    if cov.predicted and n and not any(i in cov.predicted for i in cov.selected) and cov.unmatched:
        out.append(
            f"none of the {len(cov.predicted)} prediction ids is a gold id here: are these predictions for "
            f"another dataset? (e.g. {_ids(list(cov.predicted), 3)})"
        )
        return out
    if cov.missing:
        how = "scored as empty graphs" if strict else "left out by the reference's rules"
        out.append(
            f"{len(cov.missing)} of {n} gold samples have no prediction ({how}): {_ids(cov.missing)}; "
            f"{subset_hint}"
        )
    if cov.unmatched:
        out.append(f"{len(cov.unmatched)} prediction id(s) are not in the gold data and were ignored: "
                   f"{_ids(cov.unmatched)}")
    if cov.duplicates:
        out.append(f"{len(cov.duplicates)} id(s) are predicted more than once (the last one counts): "
                   f"{_ids(list(cov.duplicates))}")
    if cov.predicted_nodes >= 5 and cov.foreign_nodes > cov.predicted_nodes / 2:
        out.append(
            f"{cov.foreign_nodes} of {cov.predicted_nodes} predicted tools are not tools of this dataset's "
            "library: are these predictions for another dataset?"
        )
    return out
