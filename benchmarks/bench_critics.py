"""How well the data engine's critics tell good samples from bad ones (issue 26, point 2).

The calibration set (taskbench.engine.calibration): the released gold samples of a domain that the rule critic
passes, as the good ones, and for each a copy whose request is broken the way the embedded 0.5B model's
requests were (a file name, a tool description, tool names, the first step only, another sample's request, a
file of the wrong kind), as the bad ones. Labels are known by construction. Each critic gives a verdict per
item; the script prints agreement, Cohen's kappa, good passed and bad rejected per fault:

- rule: the rule critic (no model);
- llm: the separate LLM critic of `generate --critic-model` (templates/critic.j2: "correct" true or false);
- checklist: the checklist critic (engine/checklist.py: the model copies the words of the request that ask for
  each step, the code checks them);
- rule+checklist: passed by both;
- copy (no model): the checklist's code on an answer that copies the whole request for every step, the
  baseline that says what the model's pointing adds.

    python benchmarks/bench_critics.py --data ../shared/reference/taskbench/multimedia \
        --model llamacpp/qwen2.5-coder-0.5b -o benchmarks/results/bench_critics_multimedia_0.5b.json

Model answers go through the response cache, so a rerun with the same model costs nothing. `--critics rule`
needs no model.

`--review DIR...` scores the critics on generated samples labelled by a person instead: every answered attempt
of each `taskbench generate` directory (kept or rejected) that REVIEWER decided in the review page
(`taskbench review DIR --include-rejected`; the latest decision in DIR/review_log.jsonl counts: correct is good,
discard and fix are bad, since a sample that needs fixing is not good as generated). The rule critic includes
the alignment check against the sampled subgraph (`engine.output.assess`), `self` is the generator's own check
recorded with the answer, and `llm` / `checklist` are asked again, with the sampled subgraph shown.

    python benchmarks/bench_critics.py --review gen/guided gen/free --reviewer lead \
        --model llamacpp/qwen2.5-coder-0.5b -o benchmarks/results/bench_critics_review.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from taskbench.dataset.layout import load_dataset
from taskbench.engine.calibration import calibration_set, critic_agreement
from taskbench.engine.checklist import checklist_messages, checklist_schema, checklist_verdict
from taskbench.engine.critics import rule_verdict
from taskbench.engine.prompts import critic_messages
from taskbench.engine.schemas import Limits, critic_schema
from taskbench.llm.base import GenerationConfig
from taskbench.llm.config import open_model
from taskbench.records import run_sync
from taskbench.schema import SampledSubgraph

CRITICS = ("rule", "llm", "checklist")


def _entry(sample: Any) -> SampledSubgraph:
    """The subgraph a gold sample was made from: its own nodes and links."""
    nodes = list(dict.fromkeys(sample.tool_names))
    return SampledSubgraph.model_validate({
        "index": 0, "seed": 0, "mode": sample.type if sample.type in ("single", "chain", "dag") else "dag",
        "size": len(nodes), "nodes": nodes,
        "links": [{"source": lk.source, "target": lk.target} for lk in sample.links_for("resource")]})


def reviewed_items(dirs: list[str], reviewer: str) -> tuple[list[Any], dict[str, Any]]:
    """The answered attempts of generate directories that ``reviewer`` decided, as calibration items (ids
    ``DIR#id``), with ``{item id: (library, graph, record)}`` to score them."""
    from taskbench.engine.calibration import CalibrationItem
    from taskbench.engine.parse import build_sample
    from taskbench.graph.build import graph_from_path
    from taskbench.report.review.log import LOG_FILE, ReviewLog
    from taskbench.schema.generation import parse_generation_record

    items, where = [], {}
    for d in dirs:
        graph = graph_from_path(d)
        latest = ReviewLog(Path(d) / LOG_FILE).latest()
        for line in (Path(d) / "data_raw.json").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            decision = latest.get(str(rec.get("id")), {}).get(reviewer)
            if decision is None or getattr(parse_generation_record(rec), "result", None) is None:
                continue
            sample = build_sample(rec, graph.library)
            key = f"{Path(d).name}#{sample.id}"
            items.append(CalibrationItem(sample=sample.model_copy(update={"id": key}), good=decision.outcome == "correct",
                                         source=key))
            where[key] = (graph.library, graph, rec)
    return items, where


def _sampled_entry(rec: dict[str, Any]) -> SampledSubgraph:
    """The subgraph a generated record was made from."""
    nodes = [n["task"] if isinstance(n, dict) else str(n) for n in rec.get("sampled_nodes") or []]
    return SampledSubgraph.model_validate({
        "index": 0, "seed": 0, "mode": rec.get("type") if rec.get("type") in ("single", "chain", "dag") else "dag",
        "size": len(nodes), "nodes": nodes,
        "links": [{"source": lk["source"], "target": lk["target"]} for lk in rec.get("sampled_links") or []]})


async def _ask(model: Any, items: list[Any], context: Any, which: str, progress: Any) -> list[dict[str, Any]]:
    """One critic call per item; ``context(item)`` is the item's ``(library, sampled subgraph)``."""
    out = []
    config = GenerationConfig(temperature=0.0, max_tokens=512, seed=0)
    for i, item in enumerate(items):
        s = item.sample
        library, entry = context(item)
        if which == "llm":
            messages = critic_messages(s, library, entry)
            schema = critic_schema()
        else:
            messages = checklist_messages(s, library)
            schema = checklist_schema(len(s.task_nodes))
        t0 = time.perf_counter()
        res = await model.generate(messages, schema=schema, config=config)
        out.append({"parsed": res.parsed, "raw": res.text, "finish_reason": res.finish_reason,
                    "seconds": round(time.perf_counter() - t0, 2)})
        progress(which, i + 1, len(items))
    return out


def ask_critics(args: argparse.Namespace, items: list[Any], context: Any,
                wanted: list[str]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, float]]:
    """The model critics' answers for every item, each critic in turn, and the seconds each took."""
    answers: dict[str, list[dict[str, Any]]] = {}
    timing: dict[str, float] = {}
    model = open_model(args.model, options=dict(kv.split("=", 1) for kv in args.option))

    def progress(which: str, done: int, total: int) -> None:
        print(f"\r{which} {done}/{total}", end="", file=sys.stderr, flush=True)

    async def go() -> None:
        try:
            for which in wanted:
                t0 = time.perf_counter()
                answers[which] = await _ask(model, items, context, which, progress)
                timing[which] = round(time.perf_counter() - t0, 1)
                print(file=sys.stderr)
        finally:
            await model.aclose()

    run_sync(go())
    return answers, timing


def add_model_verdicts(verdicts: dict[str, list[bool | None]], items: list[Any],
                       answers: dict[str, list[dict[str, Any]]], library_of: Any) -> None:
    """The llm and checklist verdicts from their answers (no parsed answer is no verdict, which the scores count
    as a rejection, as the data engine does), and rule+checklist when the rule verdicts are there."""
    if "llm" in answers:
        verdicts["llm"] = [a["parsed"].get("correct") is True if isinstance(a["parsed"], dict) else None
                           for a in answers["llm"]]
    if "checklist" in answers:
        verdicts["checklist"] = [checklist_verdict(it.sample, a["parsed"], library_of(it)).passed
                                 for it, a in zip(items, answers["checklist"], strict=True)]
        if "rule" in verdicts:
            verdicts["rule+checklist"] = [bool(r and c) for r, c in zip(verdicts["rule"], verdicts["checklist"],
                                                                         strict=True)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/reference/taskbench/multimedia"))
    ap.add_argument("--model", default=None, help="provider/model of the llm and checklist critics")
    ap.add_argument("--critics", default=",".join(CRITICS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="only the first N good samples (0: all)")
    ap.add_argument("-O", "--option", action="append", default=[], help="provider option KEY=VALUE")
    ap.add_argument("-o", "--output", default=None)
    ap.add_argument("--review", nargs="+", default=None, metavar="DIR",
                    help="score on these generate directories' samples as REVIEWER labelled them (not --data)")
    ap.add_argument("--reviewer", default=None, help="with --review: whose decisions are the labels")
    ap.add_argument("--rule-passed", action="store_true",
                    help="with --review: only the samples the rule critic passes (what a second critic would see "
                    "under --keep both)")
    args = ap.parse_args(argv)
    critics = [c for c in args.critics.split(",") if c]
    if any(c not in CRITICS for c in critics):
        ap.error(f"--critics: one of {', '.join(CRITICS)}")
    if set(critics) - {"rule"} and not args.model:
        ap.error("--model is needed for the llm and checklist critics")
    if any("=" not in kv for kv in args.option):
        ap.error("-O takes KEY=VALUE")
    if args.review is not None:
        if not args.reviewer:
            ap.error("--review needs --reviewer")
        return _review_main(args, critics)

    ds = load_dataset(args.data)
    good = [s for s in ds.samples if rule_verdict(s, ds.library, ds.graph).passed]
    if args.limit:
        good = good[: args.limit]
    items = calibration_set(good, ds.library, seed=args.seed)
    print(f"{args.data}: {len(ds.samples)} samples, {len(good)} pass the rule critic (the good ones); "
          f"{len(items) - len(good)} broken copies", file=sys.stderr)

    verdicts: dict[str, list[bool | None]] = {}
    answers: dict[str, list[dict[str, Any]]] = {}
    timing: dict[str, float] = {}
    if "rule" in critics:
        verdicts["rule"] = [rule_verdict(it.sample, ds.library, ds.graph).passed for it in items]
        # the copy is cut to what the checklist schema lets a model write for a step
        cut = Limits().step or 200
        verdicts["copy"] = [checklist_verdict(it.sample, {"steps": [{"step": i + 1, "words": it.sample.user_request[:cut]}
                                                                    for i in range(len(it.sample.task_nodes))]},
                                              ds.library).passed for it in items]
        verdicts["rule+copy"] = [bool(r and c) for r, c in zip(verdicts["rule"], verdicts["copy"], strict=True)]
    wanted = [c for c in critics if c != "rule"]
    if wanted:
        answers, timing = ask_critics(args, items, lambda it: (ds.library, _entry(it.sample)), wanted)
    add_model_verdicts(verdicts, items, answers, lambda it: ds.library)
    scores = [critic_agreement(name, items, v) for name, v in verdicts.items()]
    faults = sorted({it.fault for it in items if it.fault})
    head = ["critic", "passed", "good passed", "bad rejected", "balanced accuracy", "kappa", *faults]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for s in scores:
        cells = [s.critic, f"{s.passed} / {s.n}", f"{s.good_passed} / {s.good}", f"{s.bad_rejected} / {s.bad}",
                 f"{s.balanced_accuracy:.2f}" if s.balanced_accuracy is not None else "-",
                 f"{s.kappa:.2f}" if s.kappa is not None else "-"]
        cells += [f"{s.rejected_by_fault.get(f, [0, 0])[0]} / {s.rejected_by_fault.get(f, [0, 0])[1]}" for f in faults]
        print("| " + " | ".join(cells) + " |")
    if args.output:
        doc = {"data": args.data, "model": args.model, "seed": args.seed, "seconds": timing,
               "scores": [s.model_dump() for s in scores],
               "items": [{"id": it.sample.id, "good": it.good, "fault": it.fault, "request": it.sample.user_request,
                          **{k: v[i] for k, v in verdicts.items()},
                          **{f"{k}_answer": a[i]["parsed"] for k, a in answers.items()}}
                         for i, it in enumerate(items)]}
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return 0


def _review_main(args: argparse.Namespace, critics: list[str]) -> int:
    from taskbench.engine.output import assess

    items, where = reviewed_items(args.review, args.reviewer)
    if not items:
        print(f"no sample of {', '.join(args.review)} was decided by {args.reviewer!r}", file=sys.stderr)
        return 2
    assessed = [assess(where[it.sample.id][2], *where[it.sample.id][:2])[1] for it in items]
    if args.rule_passed:
        kept = [(it, v) for it, v in zip(items, assessed, strict=True) if v["rule"].passed]
        items, assessed = [it for it, _ in kept], [v for _, v in kept]
    good = sum(it.good for it in items)
    print(f"{len(items)} reviewed samples: {good} correct, {len(items) - good} discarded or fixed", file=sys.stderr)
    verdicts: dict[str, list[bool | None]] = {
        "rule": [v["rule"].passed for v in assessed],
        "self": [(v.get("self") or v["llm"]).passed for v in assessed],
    }
    verdicts["rule+self"] = [bool(r and s) for r, s in zip(verdicts["rule"], verdicts["self"], strict=True)]
    answers: dict[str, list[dict[str, Any]]] = {}
    timing: dict[str, float] = {}
    wanted = [c for c in critics if c in ("llm", "checklist")]
    if wanted:
        answers, timing = ask_critics(args, items, lambda it: (where[it.sample.id][0],
                                                               _sampled_entry(where[it.sample.id][2])), wanted)
    add_model_verdicts(verdicts, items, answers, lambda it: where[it.sample.id][0])
    scores = [critic_agreement(name, items, v) for name, v in verdicts.items()]
    head = ["critic", "passed", "correct passed", "bad rejected", "agreement", "balanced accuracy", "kappa"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for sc in scores:
        print("| " + " | ".join([
            sc.critic, f"{sc.passed} / {sc.n}", f"{sc.good_passed} / {sc.good}", f"{sc.bad_rejected} / {sc.bad}",
            f"{sc.agreement:.2f}" if sc.agreement is not None else "-", f"{sc.balanced_accuracy:.2f}" if sc.balanced_accuracy is not None else "-",
            f"{sc.kappa:.2f}" if sc.kappa is not None else "-"]) + " |")
    if args.output:
        doc = {"review": args.review, "reviewer": args.reviewer, "model": args.model, "seconds": timing,
               "scores": [sc.model_dump() for sc in scores],
               "items": [{"id": it.sample.id, "good": it.good, "request": it.sample.user_request,
                          **{k: v[i] for k, v in verdicts.items()},
                          **{f"{k}_answer": a[i]["parsed"] for k, a in answers.items()}}
                         for i, it in enumerate(items)]}
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
