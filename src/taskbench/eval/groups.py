"""Split groups: which samples a metrics block is computed over.

A group is a task structure (``overall``, ``single``, ``chain``, ``dag``) and a tool count (``overall`` or
``"1"`` .. ``"10"``); its key in the metrics JSON is ``f"{split}_{n_tools}"`` (e.g. ``overall_overall``,
``chain_overall``, ``overall_3``). ``"all"`` expands to every split / every count. Mode ``add`` gives each split
with ``n_tools="overall"`` followed by ``overall`` with each count; mode ``mul`` gives the cross product. Both
keep first-seen order and drop repeats, as the reference evaluator does.

Selection is vectorised: :func:`group_mask` turns a group into a boolean mask over per-sample arrays, so every
group is aggregated from the same per-sample scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError

__all__ = [
    "ALL_N_TOOLS",
    "ALL_SPLITS",
    "Group",
    "GroupMode",
    "expand_n_tools",
    "expand_splits",
    "group_mask",
    "make_groups",
]

ALL_SPLITS: tuple[str, ...] = ("overall", "single", "chain", "dag")
"""What ``--splits all`` means, in report order."""

ALL_N_TOOLS: tuple[str, ...] = ("overall",) + tuple(str(i) for i in range(1, 11))
"""What ``--n-tools all`` means, in report order."""

GroupMode = Literal["add", "mul"]


class Group(NamedTuple):
    """One metrics block: samples of structure ``split`` with ``n_tools`` tools (``overall`` = any)."""

    split: str
    n_tools: str

    @property
    def key(self) -> str:
        """The key of this group in the metrics JSON, e.g. ``chain_overall`` or ``overall_3``."""
        return f"{self.split}_{self.n_tools}"


def _names(values: Iterable[str] | str) -> list[str]:
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        out.extend(p.strip() for p in str(v).split(",") if p.strip())
    return out


def expand_splits(splits: Iterable[str] | str) -> list[str]:
    """Split names with ``all`` expanded (a comma-separated string is accepted too)."""
    names = _names(splits)
    return list(ALL_SPLITS) if "all" in names else names


def expand_n_tools(n_tools: Iterable[str | int] | str) -> list[str]:
    """Tool counts as strings with ``all`` expanded (``overall`` or a positive integer)."""
    names = _names([str(n) for n in ([n_tools] if isinstance(n_tools, str) else n_tools)])
    if "all" in names:
        return list(ALL_N_TOOLS)
    for name in names:
        if name != "overall" and not (name.isdigit() and int(name) > 0):
            raise ConfigError(f"unknown tool count {name!r}: use 'overall', 'all' or a positive integer")
    return names


def make_groups(
    splits: Iterable[str] | str = ("all",), n_tools: Iterable[str | int] | str = ("all",), mode: str = "add"
) -> list[Group]:
    """The groups to report, in the reference evaluator's order (see the module docstring)."""
    split_names = expand_splits(splits)
    count_names = expand_n_tools(n_tools)
    pairs: list[tuple[str, str]]
    if mode == "mul":
        pairs = [(s, n) for s in split_names for n in count_names]
    elif mode == "add":
        pairs = [(s, "overall") for s in split_names] + [("overall", n) for n in count_names]
    else:
        raise ConfigError(f"unknown group mode {mode!r}: use 'add' or 'mul'")
    groups: list[Group] = []
    for pair in pairs:
        group = Group(*pair)
        if group not in groups:
            groups.append(group)
    return groups


def group_mask(
    group: Group, types: Sequence[str] | NDArray[Any], n_tools: Sequence[int] | NDArray[Any]
) -> NDArray[np.bool_]:
    """Boolean mask of the samples in ``group`` given each sample's structure and gold tool count.

    A sample is in the group when its structure equals ``group.split`` (or the split is ``overall``) and its
    tool count, as a decimal string, equals ``group.n_tools`` (or that is ``overall``).
    """
    n = len(types)
    mask = np.ones(n, dtype=bool)
    if group.split != "overall":
        mask &= np.asarray(types, dtype=object) == group.split
    if group.n_tools != "overall":
        # the reference compares str(count) == n, so "03" selects nothing
        if not group.n_tools.isdigit() or str(int(group.n_tools)) != group.n_tools:
            return np.zeros(n, dtype=bool)
        mask &= np.asarray(n_tools) == int(group.n_tools)
    return mask
