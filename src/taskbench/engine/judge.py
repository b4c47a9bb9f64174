"""``taskbench data judge``: an LLM judge scores generated samples on the paper's human-evaluation dimensions.

Each sample of ``data.json`` (or a stratified subset, ``limit``) gets one judge call over a JSON Schema
(:func:`taskbench.engine.schemas.judge_schema`): a short reason, then **naturalness**, **complexity** and
**alignment**, integers 1-5 (TaskBench paper, section 2.4 and Table 2). Calls go through the one runner into
``DIR/judge/<judge>.jsonl`` (resumable, crash-safe; a failed call is retried by the next run); the scores are
then written into each judged sample's ``scores`` in ``data.json`` (other fields untouched), and
``DIR/judge.json`` holds the table per generation method with the judge named. Several directories (one per
method) give the paper's Table 2 side by side.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..dataset.jsonio import iter_jsonl, write_json, write_jsonl
from ..dataset.layout import DATA_FILE, load_dataset, no_samples_error
from ..errors import ModelError
from ..llm.base import GenerationConfig
from ..records import NullDisplay, RecordDisplay, is_failed, run_records, run_sync
from .prompts import judge_messages
from .schemas import SCORE_NAMES, judge_schema, strict_backend

__all__ = ["JUDGE_FILE", "JudgeSummary", "ajudge", "judge", "judge_table"]

JUDGE_FILE = "judge.json"


class JudgeSummary(BaseModel):
    """What a judge run did, and the table."""

    judge: str = Field(description="'provider/model' of the judge.")
    directories: list[str] = Field(default_factory=list, description="The dataset directories judged.")
    selected: int = Field(default=0, description="Samples selected for judging.")
    written: int = Field(default=0, description="Judge records written by this run.")
    failed_calls: int = Field(default=0, description="Judge calls that failed for good (retried next run).")
    unusable: int = Field(default=0, description="Answers cut off or not JSON (no scores).")
    seconds: float = Field(default=0.0, description="Wall seconds.")
    errors: list[str] = Field(default_factory=list, description="First few failures.")
    table: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per method: n, naturalness, complexity, alignment, overall (means)."
    )


def judge_table(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Mean scores per method over judge records that have scores (overall: the mean of the three means)."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for rec in records:
        if isinstance(rec.get("scores"), dict):
            groups[str(rec.get("method") or "unknown")].append(rec["scores"])
    out: dict[str, dict[str, Any]] = {}
    for method, scores in groups.items():
        row: dict[str, Any] = {"n": len(scores)}
        for name in SCORE_NAMES:
            row[name] = round(sum(float(s[name]) for s in scores) / len(scores), 3)
        row["overall"] = round(sum(row[name] for name in SCORE_NAMES) / len(SCORE_NAMES), 3)
        out[method] = row
    return out


def _slug(name: str) -> str:
    from ..dataset.select import model_slug

    return model_slug(name)


async def ajudge(
    dirs: list[str | Path],
    model: Any,
    *,
    limit: int | None = None,
    concurrency: int = 1,
    max_tokens: int = 256,
    display: RecordDisplay | None = None,
    clock: Any = time.perf_counter,
) -> JudgeSummary:
    """Judge the samples of each dataset directory with ``model`` (a :class:`taskbench.llm.Model`)."""
    from ..dataset.select import select_samples

    summary = JudgeSummary(judge=model.name)
    shown = display or NullDisplay()
    all_records: list[dict[str, Any]] = []
    config = GenerationConfig(temperature=0.0, max_tokens=max_tokens, seed=0)
    schema = judge_schema(None if strict_backend(model) else 300)
    start = clock()
    loaded = []
    for d in dirs:  # every directory checked before the first model call
        root = Path(d)
        ds = load_dataset(root)
        if not ds.samples:
            raise no_samples_error(root, what="to judge")
        for _ in iter_jsonl(root / DATA_FILE):  # data.json is rewritten with the scores: a torn line stops here
            pass
        loaded.append((root, ds))
    for root, ds in loaded:
        chosen = select_samples(ds.samples, limit)
        summary.directories.append(str(root))
        summary.selected += len(chosen)
        method_of = _default_method(root)

        async def work(sample: Any, library: Any = ds.library, fallback: str | None = method_of) -> dict[str, Any]:
            out = await model.generate(judge_messages(sample, library), schema=schema, config=config)
            rec: dict[str, Any] = {"id": sample.id, "method": sample.method or fallback, "judge": model.name,
                                   "raw": out.text, "finish_reason": out.finish_reason}
            parsed = out.parsed if isinstance(out.parsed, dict) else None
            scores = _scores(parsed) if parsed is not None and not out.truncated else None
            if scores is None:
                rec["error"] = "cut off at the token limit" if out.truncated else (out.parse_error or "no scores")
            else:
                rec["scores"] = scores
                rec["reason"] = parsed.get("reason") if parsed else None
            return rec

        path = root / "judge" / f"{_slug(model.name)}.jsonl"
        ran = await run_records(chosen, work, path, key=lambda s: s.id, concurrency=concurrency,
                                label=f"judge {model.name} · {root.name}", display=shown, catch=(ModelError,))
        summary.written += ran.written
        summary.failed_calls += ran.failed
        summary.errors.extend(ran.errors[: max(0, 5 - len(summary.errors))])
        records = [rec for _, rec in iter_jsonl(path) if isinstance(rec, dict) and not is_failed(rec)]
        records = list({str(r.get("id")): _checked(r) for r in records}.values())
        summary.unusable += sum(1 for r in records if "scores" not in r)
        # both documents made before either is written: nothing can fail between data.json and judge.json
        table = {"judge": model.name, "table": judge_table(records)}
        _write_scores(root / DATA_FILE, {str(r["id"]): r["scores"] for r in records if "scores" in r})
        write_json(root / JUDGE_FILE, table)
        all_records.extend(records)
    summary.table = judge_table(all_records)
    summary.seconds = clock() - start
    return summary


def judge(dirs: list[str | Path], model: Any, *, close_model: bool = False, **kwargs: Any) -> JudgeSummary:
    """:func:`ajudge` for plain code. ``close_model`` closes the model at the end, on the event loop its
    clients were opened on (closed from another loop, an HTTP session would be left open)."""

    async def go() -> JudgeSummary:
        try:
            return await ajudge(dirs, model, **kwargs)
        finally:
            if close_model:
                await model.aclose()

    return run_sync(go())


def _default_method(root: Path) -> str | None:
    from .generate import read_manifest

    doc = read_manifest(root)
    return doc.method if doc else None


def _scores(parsed: dict[str, Any]) -> dict[str, float] | None:
    out: dict[str, float] = {}
    for name in SCORE_NAMES:
        value = parsed.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 5:
            return None
        out[name] = float(value)
    return out


def _checked(rec: dict[str, Any]) -> dict[str, Any]:
    """A judge record read back from its file (a resumed run: the file may have been edited), its scores held to
    the rule fresh answers meet (:func:`_scores`); scores that break it are dropped and the record is unusable."""
    scores = rec.get("scores")
    valid = _scores(scores) if isinstance(scores, dict) else None
    if valid is None:
        return {k: v for k, v in rec.items() if k != "scores"} | ({"error": "unusable scores in the judge file"}
                                                                    if "scores" in rec else {})
    return {**rec, "scores": valid}


def _write_scores(path: Path, scores: dict[str, dict[str, float]]) -> None:
    """Set ``scores`` of the judged records of a data.json, keeping every other field as it is."""
    records = [rec for _, rec in iter_jsonl(path)]
    for rec in records:
        if isinstance(rec, dict) and str(rec.get("id")) in scores:
            rec["scores"] = scores[str(rec["id"])]
    write_jsonl(path, records)
