"""From review decisions to the verified dataset and the paper's human-verification table.

Resolution (one outcome per sample, :func:`resolve`):

1. Each reviewer's latest decision about a sample counts. A decision made on another version of the sample
   (its ``base`` hash differs from the record now in the dataset: the data was regenerated or edited) is
   *stale*: it is set aside and reported, never applied.
2. A sample with no current decision is *unreviewed*: left out of the export (``keep_unreviewed`` keeps it
   unchanged) and counted.
3. If an adjudicator is named and has decided, the adjudicator's decision wins.
4. Otherwise the outcome most reviewers chose wins; a tie goes to the stricter outcome,
   discard > fix > correct (a sample someone found wrong is not shipped as it was).
5. When the outcome is a fix, the most recent fix among the winning side's is applied (its JSON Patch on the
   record). Every sample on which reviewers disagreed is listed as a conflict, with the rule that settled it.

The export writes the dataset (``tool_desc.json``, ``graph_desc.json``, ``data.json``, ``user_requests.json``:
fixes applied, discards dropped), ``alignment_ids.json`` over the verified samples, the human-verification
table as ``human_verification.json`` and ``.md``, and ``review_resolution.jsonl`` (one line per sample: its
outcome, who decided what, how it was settled).

The table: over the samples reviewed, the share judged correct, discarded and fixed, and of the fixes by
kind (syntax, instruction, graph). A fix can be of several kinds, so the three fix columns may add up to more
than "fixed" (as in the paper's table, whose rows add up to more than 100%).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ...dataset.jsonio import read_jsonl, write_json, write_jsonl, write_text
from ...dataset.layout import RAW_FILE, Dataset, save_dataset
from ...engine.critics import check_against_sampled
from ...errors import InputError
from ...schema import Sample
from .log import FIX_KINDS, OUTCOMES, REASONS, Decision
from .session import ReviewSession

__all__ = ["ExportReport", "Resolution", "alignment_ids", "export_review", "resolve", "verification_table"]

STRICTNESS = {"discard": 2, "fix": 1, "correct": 0}
"""Tie-break order of outcomes: the stricter wins."""

RESOLUTION_FILE = "review_resolution.jsonl"
TABLE_FILES = ("human_verification.json", "human_verification.md")


class Resolution(BaseModel):
    """How one sample was settled."""

    id: str = Field(description="Sample id.")
    type: str = Field(description="single | chain | dag (of the sample as reviewed).")
    n_tools: int = Field(description="Tools of the sample as reviewed.")
    outcome: str = Field(description="correct | discard | fix | unreviewed.")
    fixes: list[str] = Field(default_factory=list, description="Kinds of the applied fix.")
    reasons: list[str] = Field(default_factory=list, description="Error categories given by the deciding side.")
    decided_by: str | None = Field(default=None, description="Reviewer whose decision was applied.")
    votes: dict[str, str] = Field(default_factory=dict, description="Each reviewer's current outcome.")
    conflict: bool = Field(default=False, description="True when reviewers' outcomes (or fixes) differ.")
    rule: str = Field(default="", description="How it was settled: single | unanimous | adjudicator | majority "
                      "| tie -> stricter.")
    stale: list[str] = Field(default_factory=list, description="Reviewers whose decision was on another version.")


def resolve(session: ReviewSession, *, adjudicator: str | None = None) -> dict[str, Resolution]:
    """One :class:`Resolution` per sample of the session, in dataset order (rules in the module docstring)."""
    session.log.refresh()
    latest = session.log.latest()
    out: dict[str, Resolution] = {}
    for sid, item in session.items.items():
        by = latest.get(sid, {})
        current = {r: d for r, d in by.items() if d.base == item.base}
        stale = sorted(r for r, d in by.items() if d.base != item.base)
        res = Resolution(id=sid, type=item.sample.type, n_tools=item.sample.n_tools, outcome="unreviewed",
                         votes={r: d.outcome for r, d in sorted(current.items())}, stale=stale)
        if current:
            chosen, rule = _settle(current, adjudicator)
            res.outcome = chosen.outcome
            res.fixes = list(chosen.fixes)
            res.reasons = list(chosen.reasons)
            res.decided_by = chosen.reviewer
            res.rule = rule
            outcomes = {d.outcome for d in current.values()}
            fixes = {json.dumps(d.diff, sort_keys=True) for d in current.values() if d.outcome == "fix"}
            res.conflict = len(outcomes) > 1 or len(fixes) > 1
        out[sid] = res
    return out


def _settle(current: dict[str, Decision], adjudicator: str | None) -> tuple[Decision, str]:
    if len(current) == 1:
        return next(iter(current.values())), "single"
    if adjudicator is not None and adjudicator in current:
        return current[adjudicator], "adjudicator"
    votes: Counter[str] = Counter(str(d.outcome) for d in current.values())
    top = max(votes.values())
    leaders = [o for o in OUTCOMES if votes.get(o) == top]
    outcome = max(leaders, key=STRICTNESS.__getitem__)
    side = sorted((d for d in current.values() if d.outcome == outcome), key=lambda d: (d.time, d.reviewer))
    rule = "unanimous" if len(votes) == 1 else ("majority" if len(leaders) == 1 else "tie -> stricter")
    return side[-1], rule


def _apply(record: dict[str, Any], decision: Decision) -> Sample:
    import jsonpatch

    fixed = jsonpatch.apply_patch(record, decision.diff)
    return Sample.model_validate(fixed)


def alignment_ids(samples: list[Sample]) -> dict[str, dict[str, list[str]]]:
    """The reference's ``alignment_ids.json`` over verified samples, by structure:

    - ``node``: the invocation graph's tools equal the sampled subgraph's; ``link``: its links do; ``both_node_link``:
      both; ``self-check``: the LLM critic passed it; ``all``: both_node_link and self-check;
    - ``human``: every verified sample (what ``--alignment human`` scores).

    A sample without a recorded sampled subgraph (or LLM verdict) cannot be checked and is in none of the
    sets that need it.
    """
    modes = ("node", "link", "both_node_link", "self-check", "all", "human")
    out: dict[str, dict[str, list[str]]] = {f"{m}_alignment_id": {"single": [], "chain": [], "dag": []} for m in modes}
    for s in samples:
        codes = {i.code for i in check_against_sampled(s)}
        has_sampled = s.sampled_nodes is not None
        node = has_sampled and "sampled_nodes_mismatch" not in codes
        link = has_sampled and "sampled_links_mismatch" not in codes
        llm = s.critics.get("llm")
        check = llm is not None and llm.passed is True
        flags = {"node": node, "link": link, "both_node_link": node and link, "self-check": check,
                 "all": node and link and check, "human": True}
        for mode, ok in flags.items():
            if ok:
                out[f"{mode}_alignment_id"][s.type].append(s.id)
    return out


def _pct(n: int, total: int) -> float | None:
    return round(100.0 * n / total, 2) if total else None


def _row(resolutions: list[Resolution]) -> dict[str, Any]:
    reviewed = [r for r in resolutions if r.outcome != "unreviewed"]
    n = len(reviewed)
    counts = {o: sum(r.outcome == o for r in reviewed) for o in OUTCOMES}
    kinds = {k: sum(r.outcome == "fix" and k in r.fixes for r in reviewed) for k in FIX_KINDS}
    row: dict[str, Any] = {"samples": len(resolutions), "reviewed": n, "unreviewed": len(resolutions) - n}
    for o in OUTCOMES:
        key = "fixed" if o == "fix" else o
        row[key] = {"n": counts[o], "pct": _pct(counts[o], n)}
    for k in FIX_KINDS:
        row[f"fixed_{k}"] = {"n": kinds[k], "pct": _pct(kinds[k], n)}
    row["kept"] = {"n": counts["correct"] + counts["fix"], "pct": _pct(counts["correct"] + counts["fix"], n)}
    return row


def verification_table(resolutions: dict[str, Resolution], *, generated: int | None = None) -> dict[str, Any]:
    """The human-verification table: overall and per structure (single, chain, dag), counts and % of the
    reviewed samples; the error categories given; with ``generated`` (attempts in data_raw.json) the share of
    all generated samples that survived review (the paper's "Human Verification" statistic)."""
    rows = list(resolutions.values())
    table: dict[str, Any] = {"overall": _row(rows)}
    for kind in ("single", "chain", "dag"):
        table[kind] = _row([r for r in rows if r.type == kind])
    reasons = Counter(x for r in rows if r.outcome in ("discard", "fix") for x in r.reasons)
    out: dict[str, Any] = {"table": table, "reasons": {k: reasons.get(k, 0) for k in REASONS}}
    if generated is not None:
        kept = table["overall"]["kept"]["n"]
        out["generated"] = {"n": generated, "kept": kept, "kept_pct": _pct(kept, generated)}
    return out


def _cell(cell: dict[str, Any]) -> str:
    return f"{cell['n']} ({cell['pct']:.2f}%)" if cell["pct"] is not None else f"{cell['n']} (-)"


def table_markdown(name: str, doc: dict[str, Any]) -> str:
    """The human-verification document as markdown."""
    lines = [f"# Human verification: {name}", "",
             "| structure | reviewed | correct | discard | fixed | fixed syntax | fixed instruction | fixed graph |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, row in doc["table"].items():
        lines.append(f"| {key} | {row['reviewed']} | " + " | ".join(
            _cell(row[c]) for c in ("correct", "discard", "fixed", "fixed_syntax", "fixed_instruction", "fixed_graph")
        ) + " |")
    lines += ["", "Percentages are of the samples reviewed. A fix may be of several kinds, so the three fix columns "
              "can add up to more than 'fixed'."]
    overall = doc["table"]["overall"]
    if overall["unreviewed"]:
        lines.append(f"{overall['unreviewed']} of {overall['samples']} samples were not reviewed and are not in the "
                     "verified dataset." if not doc.get("kept_unreviewed") else
                     f"{overall['unreviewed']} of {overall['samples']} samples were not reviewed and were kept as they were.")
    gen = doc.get("generated")
    if gen:
        lines += ["", f"Human verification kept {gen['kept']} of {gen['n']} generated samples"
                  + (f" ({gen['kept_pct']:.2f}%)." if gen["kept_pct"] is not None else ".")]
    if any(doc["reasons"].values()):
        lines += ["", "| error category | samples |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in doc["reasons"].items() if v]
    agreement = doc.get("agreement") or {}
    if agreement.get("pairs"):
        lines += ["", "## Agreement between reviewers (Cohen's kappa over outcomes)", "",
                  "| reviewer | reviewer | shared samples | observed agreement | kappa |", "|---|---|---:|---:|---:|"]
        for p in agreement["pairs"]:
            obs = f"{p['agreement']:.3f}" if p["agreement"] is not None else "-"
            kap = f"{p['kappa']:.3f}" if p["kappa"] is not None else "undefined"
            lines.append(f"| {p['a']} | {p['b']} | {p['n']} | {obs} | {kap} |")
        if agreement.get("pairs_left_out"):
            lines += ["", f"Pairs of the {len(agreement['reviewers'])} reviewers beyond the most active are left "
                      f"out ({agreement['pairs_left_out']} pairs)."]
    conflicts = doc.get("conflicts") or []
    if conflicts:
        lines += ["", f"## Conflicts ({len(conflicts)})", "", "| sample | votes | outcome | rule |", "|---|---|---|---|"]
        for c in conflicts[:200]:
            votes = ", ".join(f"{r}: {o}" for r, o in c["votes"].items())
            lines.append(f"| {c['id']} | {votes} | {c['outcome']} | {c['rule']} |")
        if len(conflicts) > 200:
            lines.append(f"| ... {len(conflicts) - 200} more in human_verification.json | | | |")
    stale = doc.get("stale") or []
    if stale:
        lines += ["", f"{len(stale)} decisions were made on another version of their sample and were not applied "
                  "(see human_verification.json)."]
    return "\n".join(lines) + "\n"


class ExportReport(BaseModel):
    """What an export wrote and found."""

    out: str = Field(description="The verified dataset's directory.")
    samples: int = Field(description="Samples in the reviewed dataset.")
    exported: int = Field(description="Samples written to the verified data.json.")
    counts: dict[str, int] = Field(description="Samples by resolved outcome (correct, discard, fix, unreviewed).")
    conflicts: int = Field(description="Samples on which reviewers disagreed.")
    stale: int = Field(description="Decisions set aside because the sample changed since.")
    failed_fixes: list[str] = Field(default_factory=list, description="Fixes that could not be applied (id: why).")
    files: list[str] = Field(default_factory=list, description="Files written.")


def _write_together(out: Path, write: Callable[[Path], None]) -> None:
    """Everything is computed before this is called; ``write(stage)`` writes the export into a staging
    directory next to ``out``, then the files are moved into ``out`` (renames only, the tables last), so a crash
    or a kill while writing leaves the previous export (or none), never data without its table."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        write(stage)
        out.mkdir(exist_ok=True)
        names = sorted((p.name for p in stage.iterdir()), key=lambda n: (n in TABLE_FILES, n))
        for name in names:
            os.replace(stage / name, out / name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def export_review(
    session: ReviewSession,
    out: str | Path | None = None,
    *,
    adjudicator: str | None = None,
    keep_unreviewed: bool = False,
) -> ExportReport:
    """Write the verified dataset of a review (see the module docstring); ``out`` defaults to
    ``DIR/verified``. Raises :class:`~taskbench.errors.InputError` when nothing has been reviewed or when
    ``out`` is the reviewed directory itself."""
    out = Path(out) if out is not None else session.root / "verified"
    if out.resolve() == session.root.resolve():
        raise InputError("the export would overwrite the dataset under review", path=out,
                         hint="pass another directory with --out")
    resolutions = resolve(session, adjudicator=adjudicator)
    if not any(r.outcome != "unreviewed" for r in resolutions.values()):
        raise InputError(f"no decisions for these samples in {session.log.path.name}", path=session.log.path,
                         hint="review some samples first: taskbench review DIR")
    verified: list[Sample] = []
    failed: list[str] = []
    for sid, res in resolutions.items():
        item = session.items[sid]
        if res.outcome == "discard" or (res.outcome == "unreviewed" and not keep_unreviewed):
            continue
        if res.outcome == "fix":
            decision = session.log.latest()[sid][res.decided_by or ""]
            try:
                verified.append(_apply(item.record, decision))
            except Exception as exc:  # a hand-edited log line: report, keep going
                failed.append(f"{sid}: {exc}")
            continue
        verified.append(item.sample)
    ds = Dataset(root=out, library=session.library, samples=verified, graph=session.graph,
                 alignment_ids=alignment_ids(verified))
    generated = None
    raw = session.root / RAW_FILE
    if raw.is_file():
        try:
            generated = len(read_jsonl(raw, allow_torn_tail=True))
        except InputError:
            generated = None
    doc = verification_table(resolutions, generated=generated)
    doc["dataset"] = str(session.root)
    doc["kept_unreviewed"] = keep_unreviewed
    doc["adjudicator"] = adjudicator
    doc["rule"] = ("latest decision per reviewer; stale decisions set aside; adjudicator first when named; "
                   "then majority, ties to the stricter outcome (discard > fix > correct); the latest fix of "
                   "the winning side is applied")
    doc["agreement"] = session.agreement()
    doc["conflicts"] = [r.model_dump(include={"id", "votes", "outcome", "rule", "decided_by"})
                        for r in resolutions.values() if r.conflict]
    doc["stale"] = [{"id": r.id, "reviewers": r.stale} for r in resolutions.values() if r.stale]
    doc["failed_fixes"] = failed
    markdown = table_markdown(session.name, doc)

    def write(stage: Path) -> None:
        save_dataset(ds, stage)
        write_jsonl(stage / RESOLUTION_FILE, [r.model_dump() for r in resolutions.values()])
        write_json(stage / TABLE_FILES[0], doc)
        write_text(stage / TABLE_FILES[1], markdown)

    _write_together(out, write)
    counts = Counter(r.outcome for r in resolutions.values())
    return ExportReport(
        out=str(out), samples=len(resolutions), exported=len(verified),
        counts={k: counts.get(k, 0) for k in (*OUTCOMES, "unreviewed")},
        conflicts=len(doc["conflicts"]), stale=sum(len(s["reviewers"]) for s in doc["stale"]),
        failed_fixes=failed,
        files=sorted(p.name for p in out.iterdir() if p.is_file()),
    )
