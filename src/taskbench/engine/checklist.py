"""The checklist critic: the model points, the code checks.

Asked "is this test case correct?", the embedded 0.5B model says yes to nearly everything (57 of 60 of its own
samples, kappa 0.00 against hand labels; docs/generate.md). Here it is asked something it can answer: for each
step of the invocation graph, copy the words of the user request that ask for that step. The verdict is then
computed, not asked for. A step is covered when the words the model copied

- are in the request (after folding case and punctuation; a copy that is not there is an invention),
- hold at least :data:`MIN_WORDS` words (a file name alone, "example.jpg", asks for nothing), and
- share a content word with the step that the other steps do not share: a word of its tool's name or
  description, or of its task step that no other task step has, less the words of the other tools' names and
  descriptions (prefixes of
  :data:`STEM` letters, so "caption" meets "captioning"; file names and common words do not count). So
  "Download the video" asks for Video Downloader and not for Video-to-Audio.

The sample passes when every step is covered. :func:`checklist_verdict` is pure; the prompt is
``templates/checklist.j2``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..schema import STEP_PREFIX, CriticVerdict, Sample, ToolLibrary
from .critics import FILE_IN_TEXT, fold, split_camel
from .schemas import Limits, _array, _closed, _text

__all__ = ["MIN_WORDS", "STEM", "checklist_messages", "checklist_schema", "checklist_verdict"]

MIN_WORDS = 2
"""Words the copy of a step must hold."""

STEM = 5
"""Letters of a word's prefix that must match for two words to count as the same."""

_STOP = frozenset("""a an the and or of to in on for from with by at as is are be it its this that these those my me i
you your we our please could would can will want need like help some any all into then also using use used get
given provide file files one two three step steps tool task text data example user request about http https www
com org net html""".split())
_WORD = re.compile(r"[^\W_]+")


def checklist_schema(n_steps: int, limits: Limits | None = None) -> dict[str, Any]:
    """The answer: ``steps``, exactly one ``{step, words}`` per step."""
    limits = limits or Limits()
    entry = _closed({"step": {"type": "integer", "minimum": 1, "maximum": max(n_steps, 1)},
                     "words": _text(limits.step)})
    return _closed({"steps": _array(entry, n_steps, n_steps)}, "Checklist")


def checklist_messages(sample: Sample, library: ToolLibrary) -> list[dict[str, str]]:
    """The checklist prompt for ``sample``: its request, then one line per node with the tool's name only (shown
    the task steps too, the 0.5B model copied them instead of the request's words; docs/generate.md)."""
    from .prompts import render

    steps = []
    for i, node in enumerate(sample.task_nodes):
        tool = library.get(node.task)
        step = sample.task_steps[i] if i < len(sample.task_steps) else ""
        steps.append({"tool": node.task, "desc": tool.desc if tool is not None else "", "step": step})
    return [{"role": "user", "content": render("checklist.j2", user_request=sample.user_request, steps=steps)}]


def _content(text: str) -> set[str]:
    words = _WORD.findall(FILE_IN_TEXT.sub(" ", text).lower())
    return {w[:STEM] for w in words if len(w) >= 3 and w not in _STOP and not w.isdigit()}


def _tool_words(node: str, library: ToolLibrary | None) -> set[str]:
    tool = library.get(node) if library is not None else None
    return _content(" ".join((split_camel(node), tool.desc if tool is not None else "")))


def _about(sample: Sample, library: ToolLibrary | None, i: int) -> set[str]:
    """The words of step ``i`` (its tool's name and description, its task step) that the other steps' tools do
    not share: what the words for this step, and not for another, must touch (all of them when none is left)."""
    node = sample.task_nodes[i].task
    steps = [_content(STEP_PREFIX.sub("", t)) for t in sample.task_steps]
    own_step = steps[i] if i < len(steps) else set()
    other_steps: set[str] = set()
    others: set[str] = set()
    for j, other in enumerate(sample.task_nodes):
        if j != i and other.task != node:
            others |= _tool_words(other.task, library)
            other_steps |= steps[j] if j < len(steps) else set()
    # a word every step's text shares ("the article") names what flows between steps, not this step
    own = _tool_words(node, library) | (own_step - other_steps)
    return (own - others) or own


def checklist_verdict(sample: Sample, answer: Mapping[str, Any] | None,
                      library: ToolLibrary | None = None) -> CriticVerdict:
    """The verdict on ``sample`` from the model's ``answer`` (the parsed checklist; None when the call gave
    none, which fails): passed when every step is covered (see the module docstring), with one reason per
    step that is not."""
    if not isinstance(answer, Mapping) or not isinstance(answer.get("steps"), list):
        return CriticVerdict(name="checklist", passed=False, reasons=["no checklist answer"])
    if not sample.task_nodes:
        return CriticVerdict(name="checklist", passed=False, reasons=["the sample has no task nodes"])
    request = fold(sample.user_request)
    entries = answer["steps"]
    reasons = []
    for i, node in enumerate(sample.task_nodes):
        entry = entries[i] if i < len(entries) and isinstance(entries[i], Mapping) else {}
        raw = entry.get("words")
        words = raw if isinstance(raw, str) else ""
        folded = fold(FILE_IN_TEXT.sub(" ", words))
        label = f"step {i + 1} ({node.task})"
        if not folded:
            reasons.append(f"{label}: no words of the request ask for it")
        elif f" {fold(words)} " not in f" {request} ":
            reasons.append(f"{label}: {words.strip()[:60]!r} is not in the request")
        elif len(folded.split()) < MIN_WORDS:
            reasons.append(f"{label}: {words.strip()[:60]!r} is too short to ask for the step")
        elif not _content(words) & _about(sample, library, i):
            reasons.append(f"{label}: {words.strip()[:60]!r} is not about the step")
    return CriticVerdict(name="checklist", passed=not reasons, reasons=reasons)
