"""A critic's calibration set: labels known by construction, so any critic is scored without hand labels.

The positives are the samples given, meant to be human-verified (benchmarks/bench_critics.py gives the released
TaskBench gold, which people checked, less the samples whose graphs the rule critic finds broken). Each positive
is followed by one negative when a fault applies to it: a copy whose request is broken the way the embedded 0.5B
model's requests were broken when it back-instructed (docs/generate.md, issue 26), with the invocation graph
left as it was. The faults (:data:`FAULTS`) are dealt so that each kind is used about as often as the others,
in a seeded order; a fault that cannot apply to a sample (a file name where the graph uses no file, one step of
a one-step graph) is not dealt to it.

:func:`critic_agreement` scores a critic's verdicts against the labels: agreement, Cohen's kappa, the good
samples passed and the broken ones rejected per fault. Pure: no model, no file.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ..eval.agreement import cohen_kappa, observed_agreement
from ..schema import STEP_PREFIX, Sample, TaskArgument, ToolLibrary
from .critics import arg_text

__all__ = ["FAULTS", "CalibrationItem", "CriticAgreement", "calibration_set", "critic_agreement", "break_request"]

FAULTS: dict[str, str] = {
    "file_name": "the request is only the file the graph uses ('example.jpg')",
    "tool_description": "the request is the first tool's description, copied",
    "tool_names": "the request only lists the tools",
    "one_step": "the request asks for the first step only (samples of two or more tools)",
    "other_request": "the request of another sample that uses none of this sample's tools",
    "wrong_file_kind": "a file of another kind in the request and the arguments (example.jpg -> example.wav)",
}
"""The ways a negative's request is broken, each one seen in the 0.5B model's answers."""

_MEDIA = re.compile(r"\bexample(_\d+)?\.(jpg|jpeg|png|wav|mp3|mp4|avi|mov)\b", re.I)
_OTHER_KIND = {"jpg": "wav", "jpeg": "wav", "png": "wav", "wav": "jpg", "mp3": "jpg", "mp4": "wav", "avi": "wav",
               "mov": "wav"}


class CalibrationItem(BaseModel):
    """One sample of a calibration set and its label."""

    sample: Sample = Field(description="The sample a critic sees (a negative's id is '<source id>~<fault>').")
    good: bool = Field(description="True for a human-verified sample, False for a broken copy of one.")
    fault: str | None = Field(default=None, description="How a negative was broken (a key of FAULTS); None for a positive.")
    source: str = Field(description="The id of the human-verified sample it comes from.")


def _files(sample: Sample) -> list[str]:
    out: list[str] = []
    for node in sample.task_nodes:
        for arg in node.arguments:
            text = arg_text(arg)
            if isinstance(text, str):
                out.extend(m.group(0) for m in _MEDIA.finditer(text))
    return out


def break_request(sample: Sample, fault: str, library: ToolLibrary, pool: Sequence[Sample],
                  rng: random.Random) -> Sample | None:
    """A copy of ``sample`` broken by ``fault`` (see :data:`FAULTS`), or None when the fault cannot apply to
    it. ``pool``: the samples ``other_request`` draws a request from."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r} (one of {', '.join(FAULTS)})")
    tools = list(dict.fromkeys(sample.tool_names))
    update: dict[str, object] = {"id": f"{sample.id}~{fault}"}
    if fault == "file_name":
        files = _files(sample)
        if not files:
            return None
        update["user_request"] = files[0]
    elif fault == "tool_description":
        tool = library.get(tools[0]) if tools else None
        if tool is None or len(tool.desc) < 25:
            return None
        update["user_request"] = tool.desc
    elif fault == "tool_names":
        if not tools:
            return None
        update["user_request"] = ", ".join(tools) + "."
    elif fault == "one_step":
        if len(sample.task_nodes) < 2 or not sample.task_steps:
            return None
        first = STEP_PREFIX.sub("", sample.task_steps[0]).strip()
        if not first:
            return None
        update["user_request"] = first[0].upper() + first[1:]
    elif fault == "other_request":
        mine = set(tools)
        others = [s for s in pool if s.id != sample.id and s.user_request.strip() and not mine & set(s.tool_names)]
        if not others:
            return None
        update["user_request"] = rng.choice(others).user_request
    elif fault == "wrong_file_kind":
        files = _files(sample)
        if not files:
            return None
        old = files[0]
        stem, ext = old.rsplit(".", 1)
        new = f"{stem}.{_OTHER_KIND[ext.lower()]}"
        if old.lower() not in sample.user_request.lower():
            return None
        update["user_request"] = re.sub(re.escape(old), new, sample.user_request, flags=re.I)
        nodes = []
        for node in sample.task_nodes:
            args = []
            for arg in node.arguments:
                text = arg_text(arg)
                if isinstance(text, str) and old in text:
                    swapped = text.replace(old, new)
                    arg = arg.model_copy(update={"value": swapped}) if isinstance(arg, TaskArgument) else swapped
                args.append(arg)
            nodes.append(node.model_copy(update={"arguments": args}))
        update["task_nodes"] = nodes
    return sample.model_copy(update=update)


def calibration_set(samples: Sequence[Sample], library: ToolLibrary, *, seed: int = 0,
                    faults: Sequence[str] = tuple(FAULTS)) -> list[CalibrationItem]:
    """Every sample of ``samples`` as a positive, each followed by one negative made from it when a fault applies:
    the fault dealt is the least used of those that apply to it (ties broken by a seeded order), so the kinds
    stay balanced."""
    for fault in faults:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r} (one of {', '.join(FAULTS)})")
    rng = random.Random(seed)
    order = list(faults)
    rng.shuffle(order)
    used: Counter[str] = Counter()
    items: list[CalibrationItem] = []
    for sample in samples:
        items.append(CalibrationItem(sample=sample, good=True, source=sample.id))
        for fault in sorted(order, key=lambda f: (used[f], order.index(f))):
            broken = break_request(sample, fault, library, samples, rng)
            if broken is not None:
                used[fault] += 1
                items.append(CalibrationItem(sample=broken, good=False, fault=fault, source=sample.id))
                break
    return items


class CriticAgreement(BaseModel):
    """How a critic's verdicts agree with a calibration set's labels. A missing verdict (a failed call) counts
    as a rejection, as in the data engine, which keeps only what a critic passed."""

    critic: str = Field(description="The critic's name.")
    n: int = Field(description="Items scored.")
    passed: int = Field(description="Items the critic passed.")
    good_passed: int = Field(description="Good items passed.")
    good: int = Field(description="Good items.")
    bad_rejected: int = Field(description="Broken items rejected.")
    bad: int = Field(description="Broken items.")
    agreement: float | None = Field(description="Share of items where the verdict equals the label.")
    balanced_accuracy: float | None = Field(
        description="Mean of the share of good items passed and the share of broken items rejected.")
    kappa: float | None = Field(description="Cohen's kappa of verdicts and labels; None when undefined.")
    rejected_by_fault: dict[str, list[int]] = Field(
        default_factory=dict, description="Per fault: [rejected, items] among the broken items.")
    no_verdict: int = Field(default=0, description="Items without a verdict (a failed call), counted as rejected.")


def critic_agreement(critic: str, items: Sequence[CalibrationItem], verdicts: Sequence[bool | None]) -> CriticAgreement:
    """Scores ``verdicts`` (True: passed; False or None: rejected) against the items' labels."""
    if len(items) != len(verdicts):
        raise ValueError(f"{len(items)} items but {len(verdicts)} verdicts")
    passed = [v is True for v in verdicts]
    labels = ["good" if it.good else "bad" for it in items]
    said = ["good" if p else "bad" for p in passed]
    by_fault: dict[str, list[int]] = {}
    for it, p in zip(items, passed, strict=True):
        if not it.good and it.fault is not None:
            row = by_fault.setdefault(it.fault, [0, 0])
            row[0] += int(not p)
            row[1] += 1
    good = [p for it, p in zip(items, passed, strict=True) if it.good]
    bad = [p for it, p in zip(items, passed, strict=True) if not it.good]
    rates = [sum(good) / len(good)] if good else []
    rates += [sum(not p for p in bad) / len(bad)] if bad else []
    return CriticAgreement(
        critic=critic, n=len(items), passed=sum(passed), good_passed=sum(good), good=len(good),
        bad_rejected=sum(not p for p in bad), bad=len(bad), agreement=observed_agreement(labels, said),
        balanced_accuracy=sum(rates) / len(rates) if rates else None, kappa=cohen_kappa(labels, said),
        rejected_by_fault=dict(sorted(by_fault.items())), no_verdict=sum(v is None for v in verdicts))
