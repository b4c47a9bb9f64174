"""A review session: one dataset directory, its samples, the review log, and what the review page asks of them.

The flow: :class:`ReviewSession` loads the samples of a dataset directory (``data.json``: the samples that
passed the data engine's critics; with ``include_rejected`` also ``data_error.json``), each as a
:class:`ReviewItem` holding the canonical record (``Sample.to_record()``) and its hash. A record that does
not load is reported in :attr:`ReviewSession.problems` and left out; it never stops the session. The page
then asks for the index (:meth:`~ReviewSession.index`), one sample (:meth:`~ReviewSession.detail`), a
preview of an edit while the reviewer types (:meth:`~ReviewSession.preview`: the edited sample checked by
the rule critic, drawn, diffed) and records decisions (:meth:`~ReviewSession.decide`) in the append-only
:class:`~taskbench.report.review.log.ReviewLog`.

No web framework here: the HTTP layer (:mod:`.app`) is a thin shell over these methods.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...dataset.layout import ERROR_FILE, find_data_file, load_dataset
from ...engine.critics import Issue, check_against_sampled, check_sample
from ...errors import InputError
from ...eval.agreement import pairwise_agreement
from ...schema import Sample, TaskArgument, ToolGraph, ToolLibrary
from .log import FIX_KINDS, LOG_FILE, OUTCOMES, REASONS, Decision, ReviewLog, record_hash, utc_now

MAX_PAIRED_REVIEWERS = 50
"""Cohen's kappa is given for the pairs of the 50 most active reviewers at most (1,225 pairs)."""

__all__ = ["EDIT_FIELDS", "Preview", "ReviewItem", "ReviewSession", "infer_type", "suggest_fixes"]

EDIT_FIELDS = ("user_request", "task_steps", "task_nodes", "task_links", "type")
"""The parts of a sample a fix may change (``n_tools`` follows the nodes)."""

SYNTAX_SIMILARITY = 85.0
"""A text edit whose normalised similarity (rapidfuzz ratio, 0-100) to the original is at least this is
suggested as a syntax fix (spelling, grammar, punctuation); a bigger rewrite as an instruction fix."""


@dataclass
class ReviewItem:
    """One sample under review."""

    sample: Sample
    record: dict[str, Any]
    """The sample as a current-shape record (what diffs and hashes are taken of)."""
    base: str
    """record_hash of :attr:`record`."""
    origin: str
    """'data' (passed the critics: data.json) or 'rejected' (data_error.json)."""
    where: str
    """file:line the sample was read from."""
    issues: list[Issue] = field(default_factory=list)
    """Rule-critic issues now (against the tool library and graph), without the sampled-subgraph check."""
    sampled_issues: list[Issue] = field(default_factory=list)
    """Differences from the sampled subgraph (the paper's rule critic)."""


@dataclass
class Preview:
    """An edited sample as the server sees it."""

    error: str | None = None
    """Why the edit does not form a sample at all (then nothing else is set)."""
    record: dict[str, Any] | None = None
    sample: Sample | None = None
    issues: list[Issue] = field(default_factory=list)
    sampled_issues: list[Issue] = field(default_factory=list)
    diff: list[dict[str, Any]] = field(default_factory=list)
    suggested: list[str] = field(default_factory=list)
    svg: str | None = None
    sampled_svg: str | None = None


def _normal_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(text.split())


def _similar(a: str, b: str) -> bool:
    from rapidfuzz import fuzz

    na, nb = _normal_text(a), _normal_text(b)
    return na == nb or fuzz.ratio(na, nb) >= SYNTAX_SIMILARITY


def suggest_fixes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Which kinds of fix an edit looks like (a suggestion; the reviewer decides):

    - ``graph``: task_nodes, task_links or type changed, the number of steps changed, or a step was rewritten;
    - ``instruction``: the request was rewritten (normalised similarity below :data:`SYNTAX_SIMILARITY`);
    - ``syntax``: only small wording changes to the request or the steps (spelling, grammar, punctuation).
    """
    kinds: set[str] = set()
    if any(before.get(k) != after.get(k) for k in ("task_nodes", "task_links", "type")):
        kinds.add("graph")
    b_steps, a_steps = list(before.get("task_steps") or []), list(after.get("task_steps") or [])
    if len(b_steps) != len(a_steps):
        kinds.add("graph")
    else:
        for x, y in zip(b_steps, a_steps, strict=True):
            if x != y:
                kinds.add("syntax" if _similar(str(x), str(y)) else "graph")
    b_req, a_req = str(before.get("user_request") or ""), str(after.get("user_request") or "")
    if b_req != a_req:
        kinds.add("syntax" if _similar(b_req, a_req) else "instruction")
    return [k for k in FIX_KINDS if k in kinds]


def infer_type(n_nodes: int, edges: set[tuple[str, str]]) -> str:
    """single (one node), chain (the links are one path through all nodes) or dag."""
    if n_nodes <= 1:
        return "single"
    ends = {x for e in edges for x in e}
    outs = [s for s, _ in edges]
    ins = [t for _, t in edges]
    if len(edges) == n_nodes - 1 and len(ends) == n_nodes and len(set(outs)) == len(outs) and len(set(ins)) == len(ins):
        starts = set(outs) - set(ins)
        if len(starts) == 1:
            succ = dict(edges)
            node, walked = next(iter(starts)), 1
            while node in succ and walked <= n_nodes:
                node, walked = succ[node], walked + 1
            if walked == n_nodes:
                return "chain"
    return "dag"


def _read_records(path: Path) -> list[tuple[int, Any, str | None]]:
    """(line, record, error) for every non-blank line of a JSON Lines file (parquet: rows); bad lines are
    returned with their error instead of raising."""
    if path.suffix == ".parquet":
        from ...dataset.hub import read_parquet_records

        return [(i, rec, None) for i, rec in enumerate(read_parquet_records(path), start=1)]
    out: list[tuple[int, Any, str | None]] = []
    data = path.read_bytes()
    for i, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            out.append((i, json.loads(raw.decode("utf-8")), None))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # deep nesting, huge integers too
            out.append((i, None, f"invalid JSON ({exc})"))
    return out


def _validation_text(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc}: {err.get('msg')}" if loc else str(err.get("msg"))


def _closest(name: str, choices: list[str]) -> str | None:
    from rapidfuzz import fuzz, process

    if not choices:
        return None
    found = process.extractOne(name, choices, scorer=fuzz.WRatio, score_cutoff=60)
    return found[0] if found else None


class ReviewSession:
    """The samples of a dataset directory under review, and their review log.

    ``include_rejected`` also offers the samples the critics rejected (``data_error.json``), so a reviewer can
    rescue one with a fix. ``dependency`` overrides the library's kind. The log defaults to
    ``DIR/review_log.jsonl``.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        include_rejected: bool = False,
        dependency: str | None = None,
        log_path: str | Path | None = None,
    ) -> None:
        self.root = Path(root)
        ds = load_dataset(self.root, dependency=dependency, samples=False)
        self.name = ds.name
        self.library: ToolLibrary = ds.library
        self.graph: ToolGraph | None = ds.graph
        self.dependency: str = dependency or ds.library.dependency
        self.requests = ds.requests
        self.problems: list[str] = []
        self.items: dict[str, ReviewItem] = {}
        data_path = find_data_file(self.root)
        if data_path is None:
            raise InputError("no data.json to review in the dataset directory", path=self.root,
                             hint="point at a directory that `taskbench generate` wrote")
        self.data_path = data_path
        self._load(data_path, "data")
        if include_rejected and (self.root / ERROR_FILE).is_file():
            self._load(self.root / ERROR_FILE, "rejected")
        self.log = ReviewLog(log_path if log_path is not None else self.root / LOG_FILE)

    # ------------------------------------------------------------------------------------------- loading

    def _load(self, path: Path, origin: str) -> None:
        for line, rec, error in _read_records(path):
            where = f"{path}:{line}"
            if error is not None:
                self.problems.append(f"{where}: {error}")
                continue
            if not isinstance(rec, dict) or "id" not in rec:
                self.problems.append(f"{where}: not a sample record (no 'id')")
                continue
            try:
                sample = Sample.model_validate(rec)
            except ValidationError as exc:
                self.problems.append(f"{where}: sample {rec.get('id')!r}: {_validation_text(exc)}")
                continue
            except ValueError as exc:
                self.problems.append(f"{where}: sample {rec.get('id')!r}: {exc}")
                continue
            if sample.id in self.items:
                self.problems.append(f"{where}: duplicate sample id {sample.id!r} (kept {self.items[sample.id].where})")
                continue
            if self.requests.get(sample.id, sample.user_request) != sample.user_request:
                # user_requests.json holds the request a model is shown (what predict reads): review that one
                sample = sample.model_copy(update={"user_request": self.requests[sample.id]})
            record = sample.to_record()
            item = ReviewItem(sample=sample, record=record, base=record_hash(record), origin=origin, where=where)
            item.issues, item.sampled_issues = self._check(sample)
            self.items[sample.id] = item

    def issue_json(self, issue: Issue, sample: Sample) -> dict[str, Any]:
        """An issue for the page, with a did-you-mean ``hint`` for an unknown tool or parameter name."""
        out: dict[str, Any] = {"code": issue.code, "message": issue.message, "node": issue.node}
        if issue.node is None or not 0 <= issue.node < len(sample.task_nodes):
            return out
        node = sample.task_nodes[issue.node]
        if issue.code == "unknown_tool":
            out["hint"] = _closest(node.task, list(self.library.names))
        elif issue.code == "unknown_param":
            tool = self.library.get(node.task)
            params = [p.name for p in (tool.parameters or [])] if tool is not None else []
            for arg in node.arguments:
                if isinstance(arg, TaskArgument) and arg.name not in params and f"{arg.name!r}" in issue.message:
                    out["hint"] = _closest(arg.name, params)
                    break
        return out

    def _check(self, sample: Sample) -> tuple[list[Issue], list[Issue]]:
        issues = check_sample(sample, self.library, self.graph, dependency=self.dependency, sampled=False)
        return issues, check_against_sampled(sample)

    def item(self, sample_id: str) -> ReviewItem:
        """The item of a sample id (KeyError when unknown)."""
        return self.items[sample_id]

    # ------------------------------------------------------------------------------------------- views

    @staticmethod
    def _verdict(sample: Sample, name: str) -> bool | None:
        verdict = sample.critics.get(name)
        return verdict.passed if verdict is not None else None

    def entry(self, item: ReviewItem, latest: dict[str, dict[str, Decision]] | None = None) -> dict[str, Any]:
        """The index entry of one item: what the list, the filters and the progress bar need."""
        s = item.sample
        mine = (latest if latest is not None else self.log.latest()).get(s.id, {})
        return {
            "id": s.id,
            "type": s.type,
            "n": s.n_tools,
            "origin": item.origin,
            "rule": self._verdict(s, "rule"),
            "llm": self._verdict(s, "llm"),
            "dup": s.duplicate_of,
            "issues": len(item.issues),
            "sampled": bool(item.sampled_issues),
            "dec": {r: d.outcome for r, d in mine.items() if d.base == item.base},
            "stale": sorted(r for r, d in mine.items() if d.base != item.base),
        }

    def index(self) -> dict[str, Any]:
        """Everything the page needs up front: the dataset, every item's index entry, the reviewers."""
        self.log.refresh()
        latest = self.log.latest()
        return {
            "dataset": {"name": self.name, "root": str(self.root), "dependency": self.dependency,
                        "tools": len(self.library), "log": str(self.log.path)},
            "items": [self.entry(item, latest) for item in self.items.values()],
            "reviewers": self.log.reviewers(),
            "problems": self.problems[:200],
            "n_problems": len(self.problems),
            "log_problems": [p.model_dump() for p in self.log.problems[:50]],
            "outcomes": list(OUTCOMES),
            "fix_kinds": list(FIX_KINDS),
            "reasons": REASONS,
        }

    def library_json(self) -> list[dict[str, Any]]:
        """The tools for the editor: names, descriptions, types or parameters."""
        out = []
        for t in self.library.tools:
            info: dict[str, Any] = {"id": t.id, "desc": t.desc}
            if t.input_types is not None:
                info["inputs"] = list(t.input_types)
            if t.output_types is not None:
                info["outputs"] = list(t.output_types)
            if t.parameters is not None:
                info["params"] = [{"name": p.name, "type": p.type, "required": p.required, "desc": p.desc}
                                  for p in t.parameters]
            out.append(info)
        return out

    def _svgs(self, sample: Sample) -> tuple[str, str | None]:
        from ...graph.render import task_graph_svgs

        links = [(lk.source, lk.target) for lk in sample.links_for(self.dependency)]
        sampled_nodes: list[str] | None = None
        if sample.sampled_nodes is not None:
            names = [n.get("task", n.get("id")) for n in sample.sampled_nodes]
            sampled_nodes = [n for n in names if isinstance(n, str)]
        sampled_links = [(lk.source, lk.target) for lk in sample.sampled_links or []]
        titles = {}
        for node in sample.task_nodes:
            args = [f"{a.name}={a.value!r}" if isinstance(a, TaskArgument) else json.dumps(a, ensure_ascii=False)
                    for a in node.arguments]
            titles[node.task] = f"{node.task}({', '.join(args)})"
        return task_graph_svgs(sample.tool_names, links, sampled_nodes,
                               sampled_links if sampled_nodes is not None else None, graph=self.graph, titles=titles)

    def fixed_sample(self, sample_id: str, decision: Decision) -> Sample | None:
        """The sample with a fix decision's patch applied (None when the patch does not apply)."""
        import jsonpatch

        try:
            return Sample.model_validate(jsonpatch.apply_patch(self.items[sample_id].record, decision.diff))
        except Exception:  # a hand-edited log line
            return None

    def detail(self, sample_id: str, reviewer: str | None = None) -> dict[str, Any]:
        """One sample for the page: record, critics, duplicate, live issues, drawings, everyone's decisions;
        when ``reviewer``'s current decision is a fix, also the fixed version (``fixed``)."""
        item = self.items[sample_id]
        s = item.sample
        self.log.refresh()
        svg, sampled_svg = self._svgs(s)
        dup = None
        if s.duplicate_of is not None:
            other = self.items.get(s.duplicate_of)
            dup = {"id": s.duplicate_of, "user_request": other.sample.user_request if other else None}
        decisions = self.log.latest().get(sample_id, {})
        fixed = None
        mine = decisions.get(reviewer or "")
        if mine is not None and mine.outcome == "fix" and mine.base == item.base:
            after = self.fixed_sample(sample_id, mine)
            if after is not None:
                issues, sampled_issues = self._check(after)
                f_svg, f_sampled = self._svgs(after)
                fixed = {"record": after.to_record(), "svg": f_svg, "sampled_svg": f_sampled,
                         "issues": [self.issue_json(i, after) for i in issues],
                         "sampled_issues": [self.issue_json(i, after) for i in sampled_issues]}
        return {
            "id": s.id,
            "record": item.record,
            "origin": item.origin,
            "where": item.where,
            "base": item.base,
            "critics": {k: v.model_dump(mode="json") for k, v in s.critics.items()},
            "duplicate": dup,
            "issues": [self.issue_json(i, s) for i in item.issues],
            "sampled_issues": [self.issue_json(i, s) for i in item.sampled_issues],
            "svg": svg,
            "sampled_svg": sampled_svg,
            "decisions": {r: {**d.to_line(), "stale": d.base != item.base} for r, d in sorted(decisions.items())},
            "entry": self.entry(item),
            "fixed": fixed,
        }

    # ------------------------------------------------------------------------------------------- edits

    def apply_edit(self, sample_id: str, edit: dict[str, Any]) -> tuple[Sample | None, str | None]:
        """The sample with an edit applied (``n_tools`` from the nodes; ``type: "auto"`` inferred from the
        links; ``links_from_refs`` derives resource links from ``<node-j>`` references), or an error."""
        item = self.items[sample_id]
        if not isinstance(edit, dict):
            return None, "the edit must be a JSON object"
        unknown = set(edit) - set(EDIT_FIELDS) - {"links_from_refs"}
        if unknown:
            return None, f"unknown fields in the edit: {sorted(unknown)} (editable: {list(EDIT_FIELDS)})"
        record = dict(item.record)
        for key in EDIT_FIELDS:
            if key in edit and key != "type":
                record[key] = edit[key]
        if isinstance(record.get("task_nodes"), list):
            record["n_tools"] = len(record["task_nodes"])
        try:
            sample = Sample.model_validate(record)
        except ValidationError as exc:
            return None, _validation_text(exc)
        except ValueError as exc:
            return None, str(exc)
        if edit.get("links_from_refs"):
            sample = sample.model_copy(update={"task_links": sample.reference_links()})
        kind = edit.get("type", item.sample.type)
        if kind == "auto":
            edges = {(lk.source, lk.target) for lk in sample.links_for(self.dependency)}
            kind = infer_type(len(sample.task_nodes), edges)
        if kind not in ("single", "chain", "dag"):
            return None, f"type must be single, chain, dag or auto, not {kind!r}"
        return sample.model_copy(update={"type": kind}), None

    def preview(self, sample_id: str, edit: dict[str, Any]) -> Preview:
        """Check an edit as the reviewer types: the rule critic's issues, the diff, the suggested fix kinds and
        the drawings of the edited graph."""
        import jsonpatch

        sample, error = self.apply_edit(sample_id, edit)
        if sample is None:
            return Preview(error=error)
        item = self.items[sample_id]
        record = sample.to_record()
        issues, sampled = self._check(sample)
        svg, sampled_svg = self._svgs(sample)
        return Preview(record=record, sample=sample, issues=issues, sampled_issues=sampled,
                       diff=jsonpatch.make_patch(item.record, record).patch,
                       suggested=suggest_fixes(item.record, record), svg=svg, sampled_svg=sampled_svg)

    # ------------------------------------------------------------------------------------------- decisions

    def decide(
        self,
        sample_id: str,
        reviewer: str,
        outcome: str,
        *,
        edit: dict[str, Any] | None = None,
        fixes: list[str] | None = None,
        reasons: list[str] | None = None,
        note: str = "",
        base: str | None = None,
    ) -> Decision:
        """Record a decision. A fix needs an ``edit`` that changes something; its ``fixes`` default to the
        suggested kinds. ``base`` (the hash the page showed) guards against deciding on a sample that changed
        since. Raises :class:`~taskbench.errors.InputError` on a bad decision."""
        if sample_id not in self.items:
            raise InputError(f"unknown sample id {sample_id!r}")
        reviewer = (reviewer or "").strip()
        if not reviewer:
            raise InputError("a decision needs a reviewer name")
        if outcome not in OUTCOMES:
            raise InputError(f"unknown outcome {outcome!r}", hint=f"one of {list(OUTCOMES)}")
        item = self.items[sample_id]
        if base is not None and base != item.base:
            raise InputError(f"sample {sample_id!r} changed since the page loaded it", hint="reload the page")
        bad = [r for r in reasons or [] if r not in REASONS]
        if bad:
            raise InputError(f"unknown reasons {bad}", hint=f"one of {sorted(REASONS)}")
        diff: list[dict[str, Any]] = []
        left: list[str] = []
        kinds: list[str] = []
        if outcome == "fix":
            preview = self.preview(sample_id, edit or {})
            if preview.error is not None:
                raise InputError(f"the fix is not a valid sample: {preview.error}")
            if not preview.diff:
                raise InputError("the fix changes nothing", hint="choose 'correct' instead")
            kinds = list(fixes) if fixes else preview.suggested
            unknown = [k for k in kinds if k not in FIX_KINDS]
            if unknown or not kinds:
                raise InputError(f"a fix needs its kinds, some of {list(FIX_KINDS)} (got {kinds})")
            diff = preview.diff
            left = [str(i) for i in preview.issues]
        elif edit:
            raise InputError(f"only a fix carries an edit, not {outcome!r}")
        decision = Decision(id=sample_id, reviewer=reviewer, time=utc_now(), outcome=outcome,  # type: ignore[arg-type]
                            fixes=[k for k in FIX_KINDS if k in kinds], reasons=list(reasons or []),  # type: ignore[misc]
                            note=note, base=item.base, diff=diff, issues=left)
        return self.log.append(decision)

    def agreement(self) -> dict[str, Any]:
        """Per reviewer: how many decisions by outcome; per pair: Cohen's kappa over outcomes (current
        decisions only: stale ones, made on another version of a sample, are left out)."""
        self.log.refresh()
        ratings: dict[str, dict[str, str]] = {}
        counts: dict[str, dict[str, int]] = {}
        for sid, by in self.log.latest().items():
            item = self.items.get(sid)
            if item is None:
                continue
            for reviewer, d in by.items():
                if d.base != item.base:
                    continue
                ratings.setdefault(reviewer, {})[sid] = d.outcome
                row = counts.setdefault(reviewer, dict.fromkeys(OUTCOMES, 0))
                row[d.outcome] += 1
        # kappa for every pair is O(R^2): with many reviewers (a crowd, or a hostile log) only the most active
        # MAX_PAIRED_REVIEWERS are paired; every reviewer is still counted
        active = sorted(ratings, key=lambda r: (-len(ratings[r]), r))[:MAX_PAIRED_REVIEWERS]
        pairs = pairwise_agreement({r: ratings[r] for r in active})
        left_out = len(ratings) * (len(ratings) - 1) // 2 - len(pairs)
        return {"reviewers": counts, "pairs": [p.model_dump() for p in pairs], "pairs_left_out": left_out,
                "total": len(self.items)}
