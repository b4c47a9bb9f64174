"""The data engine's output directory: from ``data_raw.json`` (every attempt) to the reference layout.

:func:`assess` turns one raw record into a :class:`~taskbench.schema.Sample` with its critics' verdicts;
:func:`finalize_dataset` does it for every record and writes

- ``data.json`` and ``user_requests.json``: the samples that pass the chosen critics (``keep``: ``both``
  (default), ``rule``, ``llm`` or ``none``), in plan order; near duplicates flagged (``duplicate_of``) or, with
  ``dedup="drop"``, moved to the errors;
- ``data_error.json``: every other record, with ``reasons`` (critic issue codes and messages, ``truncated``,
  ``unparseable``, ``call_failed``, ``duplicate``);
- ``statistics.json``: the paper's critic table: counts and pass rates of the LLM critic, the rule critic and
  both, overall, by mode and by size, plus the averages of its dataset table (nodes, links, request length);
  with ``generate --env``, ``exec_critic``: the gold graphs that ran in the environment (``run``) and passed.

It is pure over the files: rerunning it (``taskbench generate`` with another ``--keep``, no model calls)
re-filters the same attempts. Judge scores already in ``data.json`` are kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..dataset.jsonio import iter_jsonl, write_json, write_jsonl
from ..dataset.layout import DATA_FILE, ERROR_FILE, RAW_FILE, REQUESTS_FILES
from ..errors import ConfigError
from ..records import read_records
from ..schema import CriticVerdict, Sample, ToolGraph, ToolLibrary
from ..schema.generation import FailedGenerationRecord, GenerationRecord, parse_generation_record
from .critics import rule_verdict
from .dedup import DEFAULT_THRESHOLD, near_duplicates
from .parse import build_sample, teacher_text, teacher_verdict

__all__ = [
    "DEDUP_MODES",
    "KEEP_MODES",
    "STATISTICS_FILE",
    "assess",
    "check_generation_record",
    "finalize_dataset",
    "keeps",
    "read_generation_records",
    "statistics",
]

STATISTICS_FILE = "statistics.json"
KEEP_MODES = ("both", "rule", "llm", "none")
"""Which critics a sample must pass to go to data.json."""
DEDUP_MODES = ("flag", "drop", "off")
"""What to do with near-duplicate requests: flag them (``duplicate_of``), move them to the errors, or nothing."""


def _code(reason: str) -> str:
    return reason.split(":", 1)[0].strip()


def read_generation_records(path: str | Path) -> tuple[dict[str, GenerationRecord | FailedGenerationRecord],
                                                      list[str]]:
    """``(last record by id, ids in order)`` of a ``data_raw.json``, each line read by
    :func:`~taskbench.schema.generation.parse_generation_record` (a malformed line raises InputError naming it)."""
    latest: dict[str, GenerationRecord | FailedGenerationRecord] = {}

    def read(where: Path, line: int, record: dict[str, Any]) -> None:
        latest[str(record["id"])] = parse_generation_record(record, path=where, line=line)

    _, order, _ = read_records(path, check=read)
    return latest, order


def check_generation_record(path: Path, line: int, record: dict[str, Any]) -> None:
    """Refuse a line of ``data_raw.json`` that is not a generation record (InputError naming path:line)."""
    parse_generation_record(record, path=path, line=line)


def _teacher(rec: GenerationRecord) -> Any:
    """The answer's own check (``check_by_teacher``), if it has one."""
    return rec.result.get("check_by_teacher") if rec.result else None


def assess(
    record: GenerationRecord | FailedGenerationRecord | Mapping[str, Any], library: ToolLibrary,
    graph: ToolGraph | None = None,
) -> tuple[Sample, dict[str, CriticVerdict]]:
    """The sample of one raw record and its verdicts: ``rule`` always; ``llm`` from the separate critic call
    when the record has one, else from the answer's ``check_by_teacher``; ``self`` (the answer's own check)
    too when a separate critic ran; ``exec`` when the gold graph was run in an environment (``generate --env``:
    the record's ``execution``)."""
    rec = parse_generation_record(record)
    sample = build_sample(rec, library)
    verdicts: dict[str, CriticVerdict] = {}
    if isinstance(rec, FailedGenerationRecord):
        reason = f"call_failed: {rec.error or 'the model call failed'}"
        verdicts["rule"] = CriticVerdict(name="rule", passed=None, reasons=[reason])
        verdicts["llm"] = CriticVerdict(name="llm", passed=None, reasons=[reason])
        return sample, verdicts
    if rec.error:
        reason = f"{rec.error_code or 'unparseable'}: {rec.error}"
        verdicts["rule"] = CriticVerdict(name="rule", passed=False, reasons=[reason])
        verdicts["llm"] = CriticVerdict(name="llm", passed=None, reasons=[reason])
        return sample, verdicts
    verdicts["rule"] = rule_verdict(sample, library, graph)
    execution = rec.execution
    if execution is not None:  # the gold graph run in the environment (generate --env)
        verdicts["exec"] = CriticVerdict(name="exec", passed=execution.passed, reasons=list(execution.reasons),
                                         raw=[c.to_record() for c in execution.calls])
    teacher = _teacher(rec)
    critic = rec.critic
    if critic is not None:
        if critic.error:
            verdicts["llm"] = CriticVerdict(name="llm", passed=None, model=critic.model,
                                            reasons=[f"critic_failed: {critic.error}"], raw=critic.raw)
        else:
            verdicts["llm"] = teacher_verdict(critic.result, model=critic.model)
        if teacher is not None:
            verdicts["self"] = teacher_verdict(teacher, name="self", model=rec.model)
    elif rec.check:
        verdicts["llm"] = teacher_verdict(teacher, model=rec.model)
    else:
        verdicts["llm"] = CriticVerdict(name="llm", passed=None, reasons=["not_run: no LLM critic was asked for"])
    return sample, verdicts


def keeps(verdicts: dict[str, CriticVerdict], keep: str, answered: bool) -> bool:
    """Whether a sample with these verdicts goes to data.json under ``keep``. A gold graph that failed to run
    in the environment (the ``exec`` critic) is kept only under ``none``."""
    if not answered:
        return False
    if keep != "none" and "exec" in verdicts and verdicts["exec"].passed is not True:
        return False
    rule = verdicts["rule"].passed is True
    llm = verdicts["llm"].passed is True
    return {"both": rule and llm, "rule": rule, "llm": llm, "none": True}[keep]


def _rate(passed: int, total: int) -> dict[str, Any]:
    return {"passed": passed, "rate": round(passed / total, 4) if total else None}


def _group(rows: list[dict[str, Any]]) -> dict[str, Any]:
    attempts = [r for r in rows if not r["call_failed"]]
    kept = [r for r in rows if r["kept"]]
    out: dict[str, Any] = {
        "planned": len(rows),
        "attempts": len(attempts),
        "answered": sum(1 for r in attempts if r["answered"]),
        "failed_calls": len(rows) - len(attempts),
        "llm_critic": _rate(sum(1 for r in attempts if r["llm"]), len(attempts)),
        "rule_critic": _rate(sum(1 for r in attempts if r["rule"]), len(attempts)),
        "both_critics": _rate(sum(1 for r in attempts if r["rule"] and r["llm"]), len(attempts)),
        "kept": len(kept),
        "duplicates": sum(1 for r in rows if r["duplicate"]),
    }
    executed = [r for r in attempts if r.get("exec") is not None]
    if executed:  # generate --env: gold graphs run in the environment
        out["exec_critic"] = {**_rate(sum(1 for r in executed if r["exec"]), len(executed)), "run": len(executed)}
    if kept:
        out["avg_nodes"] = round(sum(r["nodes"] for r in kept) / len(kept), 3)
        out["avg_links"] = round(sum(r["links"] for r in kept) / len(kept), 3)
        out["avg_request_words"] = round(sum(r["words"] for r in kept) / len(kept), 2)
    return out


def statistics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The critic table over per-record rows (``mode``, ``size``, ``call_failed``, ``answered``, ``rule``,
    ``llm``, ``kept``, ``duplicate``, ``nodes``, ``links``, ``words``, ``reasons``, ``reasons_by_critic``):
    overall, by mode, by size. Pass rates are over attempts (plan entries the model answered, cut off or not;
    failed calls excluded). Over the samples not kept: ``reasons`` (issue code -> samples) and
    ``reasons_by_critic`` (critic -> issue code -> samples), most frequent first: why a zero is a zero."""
    out = _group(rows)
    out["by_mode"] = {m: _group([r for r in rows if r["mode"] == m])
                      for m in ("single", "chain", "dag") if any(r["mode"] == m for r in rows)}
    sizes = sorted({r["size"] for r in rows})
    out["by_size"] = {str(s): _group([r for r in rows if r["size"] == s]) for s in sizes}
    reasons: Counter[str] = Counter()
    by_critic: dict[str, Counter[str]] = {}
    for r in rows:
        if not r["kept"]:
            reasons.update(set(r["reasons"]))
            for critic, codes in (r.get("reasons_by_critic") or {}).items():
                by_critic.setdefault(critic, Counter()).update(set(codes))
    out["reasons"] = dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    out["reasons_by_critic"] = {critic: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
                                for critic, c in by_critic.items()}
    return out


def _existing_scores(path: Path) -> dict[str, Any]:
    scores: dict[str, Any] = {}
    if path.is_file():
        try:
            for _, rec in iter_jsonl(path):
                if isinstance(rec, dict) and rec.get("scores"):
                    scores[str(rec.get("id"))] = rec["scores"]
        except Exception:  # a damaged old data.json is rewritten anyway
            return {}
    return scores


def finalize_dataset(
    out_dir: str | Path,
    library: ToolLibrary,
    graph: ToolGraph | None = None,
    *,
    ids: list[str] | None = None,
    keep: str = "both",
    dedup: str = "flag",
    dedup_threshold: float = DEFAULT_THRESHOLD,
    info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write data.json, user_requests.json, data_error.json and statistics.json from data_raw.json (see the
    module docstring); ``ids`` restricts and orders the records (the plan's ids). Returns the statistics."""
    if keep not in KEEP_MODES:
        raise ConfigError(f"--keep must be one of {', '.join(KEEP_MODES)}, not {keep!r}")
    if dedup not in DEDUP_MODES:
        raise ConfigError(f"--dedup must be one of {', '.join(DEDUP_MODES)}, not {dedup!r}")
    out = Path(out_dir)
    latest, order = read_generation_records(out / RAW_FILE)
    wanted = ids if ids is not None else order
    scores = _existing_scores(out / DATA_FILE)
    items: list[dict[str, Any]] = []
    for rid in wanted:
        rec = latest.get(rid)
        if rec is None:
            continue
        sample, verdicts = assess(rec, library, graph)
        answered = isinstance(rec, GenerationRecord) and not rec.error
        items.append({"record": rec, "sample": sample, "verdicts": verdicts,
                      "kept": keeps(verdicts, keep, answered), "answered": answered, "duplicate": False})
    if dedup != "off":
        pool = [it for it in items if it["kept"]]
        found = near_duplicates([it["sample"].user_request for it in pool], threshold=dedup_threshold)
        for it, j in zip(pool, found, strict=True):
            if j is None:
                it["verdicts"]["dedup"] = CriticVerdict(name="dedup", passed=True)
                continue
            other = pool[j]["sample"].id
            it["duplicate"] = True
            it["sample"].duplicate_of = other
            it["verdicts"]["dedup"] = CriticVerdict(
                name="dedup", passed=False, reasons=[f"duplicate: the request nearly repeats sample {other}'s"]
            )
            if dedup == "drop":
                it["kept"] = False
    data, errors, rows = [], [], []
    for it in items:
        rec, sample, verdicts = it["record"], it["sample"], it["verdicts"]
        failed = isinstance(rec, FailedGenerationRecord)
        sample.critics = verdicts
        if sample.id in scores:
            sample.scores = scores[sample.id]
        row = sample.to_record()
        teacher = None if failed else _teacher(rec)
        if teacher is not None:
            row["check_by_teacher"] = teacher_text(teacher)
        reasons = [r for v in verdicts.values() if v.passed is not True for r in v.reasons]
        if it["kept"]:
            data.append(row)
        else:
            row["reasons"] = reasons or ["not_kept: it passes the critics but not the chosen --keep"]
            for key in ("error", "error_code", "raw", "finish_reason"):
                if key in rec.model_fields_set and getattr(rec, key) is not None:
                    row[key] = getattr(rec, key)
            if failed:
                row["failed"] = True
            errors.append(row)
        plan = rec.plan
        rows.append({
            "mode": plan.mode if plan else sample.type, "size": plan.size if plan else sample.n_tools,
            "call_failed": failed, "answered": it["answered"],
            "rule": verdicts["rule"].passed is True, "llm": verdicts["llm"].passed is True,
            "exec": verdicts["exec"].passed is True if "exec" in verdicts else None,
            "kept": it["kept"], "duplicate": it["duplicate"], "nodes": len(sample.task_nodes),
            "links": len(sample.task_links), "words": len(sample.user_request.split()),
            "reasons": [_code(r) for r in reasons],
            "reasons_by_critic": {name: [_code(r) for r in v.reasons] for name, v in verdicts.items()
                                  if v.passed is not True and v.reasons},
        })
    write_jsonl(out / DATA_FILE, data)
    write_jsonl(out / REQUESTS_FILES[0], [{"id": r["id"], "user_request": r["user_request"]} for r in data])
    write_jsonl(out / ERROR_FILE, errors)
    stats = {**(info or {}), "keep": keep, "dedup": dedup, "dedup_threshold": dedup_threshold, **statistics(rows)}
    write_json(out / STATISTICS_FILE, stats)
    return stats
