"""How much prompt evaluation the llamacpp provider's context slots save on recorded runs, independent of load.

Replays the model calls of recorded trajectories (``agents eval`` writes one file per episode): each call's
messages are rendered and tokenized exactly as the embedded provider renders them (its own chat template and
tokenizer; nothing is decoded), and the provider's own slot choice (:func:`choose_slot`) is run over them for
each ``n_slots``. A context then holds the call's prompt and answer tokens; a call evaluates its prompt tokens
past the longest prefix its context holds. Calls are replayed in recorded order, one episode after another, as
one process with ``--concurrency 1`` runs them. A call whose prompt an earlier call already sent is left out,
since the response cache (on by default) answers it without the model; ``--no-cache`` keeps it. Reported: prompt tokens in all, tokens evaluated per
``n_slots``, and the share saved against one slot. Seconds follow from the machine's prompt rate (see
docs/embedded-model.md); tokens are what the slots change.

Usage::

    .venv/bin/python benchmarks/bench_slots.py RUN_DIR [RUN_DIR ...] [--model llamacpp/qwen2.5-coder-0.5b]
        [--slots 1,2,3,4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _calls(run_dirs: list[Path]) -> list[dict[str, Any]]:
    calls = []
    for run in run_dirs:
        for f in sorted((run / "trajectories").glob("*/*.jsonl")):
            for line in f.read_text(encoding="utf-8").splitlines():
                ev = json.loads(line)
                if ev.get("kind") == "model_call" and ev.get("messages"):
                    calls.append(ev)
    return calls


def replay(sequences: list[tuple[list[int], int]], n_slots: int) -> int:
    """Prompt tokens evaluated for (prompt tokens, answer length) calls in order with ``n_slots`` contexts."""
    from taskbench.llm.providers.llamacpp import choose_slot

    held: list[list[int]] = []
    used: list[int] = []
    evaluated = 0
    for i, (tokens, answer) in enumerate(sequences, 1):
        prefix = [_common(h, tokens) for h in held]
        slot = choose_slot(prefix, [not h for h in held], used, len(tokens), n_slots)
        if slot == len(held):
            held.append([])
            used.append(0)
        n = _common(held[slot], tokens)
        evaluated += len(tokens) - min(n, len(tokens) - 1)  # llama.cpp always evaluates the last prompt token
        held[slot] = tokens + [-1] * answer  # the answer's tokens follow; a new prompt never shares them here
        used[slot] = i
    return evaluated


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--model", default="llamacpp/qwen2.5-coder-0.5b")
    ap.add_argument("--slots", default="1,2,3,4")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-cache", action="store_true", help="replay repeated prompts too (runs made with --no-cache)")
    args = ap.parse_args(argv)
    from taskbench.llm.providers.llamacpp import LlamaCppProvider

    calls = _calls(args.runs)
    if not calls:
        print("no model calls in these runs' trajectories", file=sys.stderr)
        return 2
    provider = LlamaCppProvider(args.model.split("/", 1)[1], n_threads=1, n_slots=1)
    seqs = [(provider.prompt_tokens(c["messages"], c.get("tools")), int((c.get("usage") or {}).get(
        "completion_tokens", 0))) for c in calls]
    if not args.no_cache:
        seen: set[tuple[int, ...]] = set()
        kept = []
        for t, a in seqs:
            if tuple(t) not in seen:
                seen.add(tuple(t))
                kept.append((t, a))
        seqs = kept
    total = sum(len(t) for t, _ in seqs)
    rows = {int(n): replay(seqs, int(n)) for n in args.slots.split(",")}
    base = rows.get(1) or max(rows.values())
    print(f"{len(calls)} recorded model calls, {len(seqs)} replayed, {total} prompt tokens")
    print("| n_slots | prompt tokens evaluated | share of all prompt tokens | saved vs 1 slot |")
    print("| --- | --- | --- | --- |")
    for n, ev in rows.items():
        print(f"| {n} | {ev} | {ev / total:.1%} | {1 - ev / base:.1%} |")
    if args.json:
        args.json.write_text(json.dumps({"calls": len(calls), "replayed": len(seqs), "prompt_tokens": total,
                                         "evaluated": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
