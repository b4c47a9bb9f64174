"""Benchmark: `taskbench evaluate` (strict and --compat) on a TaskBench-sized prediction file.

Makes a synthetic data set the size of the TaskBench multimedia release (8,904 samples; tool library from
../shared/reference/taskbench/multimedia/tool_desc.json when present, else a built-in one), gold graphs
with single / chain / DAG structure and 1..10 tools, and predictions with the perturbations real model
output has (dropped, swapped, replaced, duplicated and hallucinated tools, underscores in names, arguments as
dicts / bare strings / numbers / out-of-range ``<node-j>``, steps as dicts, reworded steps, empty results, a
missing ``result`` key, missing ids). It writes ``data.json``, ``tool_desc.json`` and ``predictions.jsonl``
to a temporary directory and times, each in a fresh Python process (best of ``--repeat``):

(a) merely reading the two JSON Lines files with ``json.loads``;
(b) ``python -m taskbench evaluate --data DIR --predictions PRED.jsonl -o OUT``: the default strict mode (all
    splits x all tool counts, mode add, ROUGE, bootstrap 95% CIs for every group);
(c) the same with ``--compat`` (the reference evaluator's numbers).

The commands take turns in every round (so all see the same machine load) after one untimed warm-up round;
the best wall and the best CPU time of each are kept. It prints both, the ratios to (a) (target: <= 5) and the
load average. Python bytecode is cached in the temporary directory (PYTHONPYCACHEPREFIX), as an installed
package has it compiled; ``--no-bytecode-cache`` keeps PYTHONDONTWRITEBYTECODE if the environment sets it. ``--via api``
times ``read_raw_records`` + ``evaluate()`` + ``write_metrics`` instead of the CLI.

    .venv/bin/python benchmarks/bench_evaluate.py            # 8,904 samples
    .venv/bin/python benchmarks/bench_evaluate.py -n 2000 --modes strict --keep /tmp/bench
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TASKBENCH_SHARED", ROOT.parent / "shared"))
MULTIMEDIA_TOOLS = SHARED / "reference" / "taskbench" / "multimedia" / "tool_desc.json"
N_SAMPLES = 8904  # the TaskBench multimedia release

# A small built-in library (used when ../shared is absent): (name, input types, output types).
_BUILTIN = [
    ("Image Downloader", ["url"], ["image"]),
    ("Video Downloader", ["url"], ["video"]),
    ("Audio Downloader", ["url"], ["audio"]),
    ("Text Downloader", ["url"], ["text"]),
    ("Text Search", ["text"], ["text"]),
    ("Image Search", ["text"], ["image"]),
    ("Video Search", ["text"], ["video"]),
    ("Text Summarizer", ["text"], ["text"]),
    ("Text Translator", ["text"], ["text"]),
    ("Text Sentiment Analysis", ["text"], ["text"]),
    ("Text-to-Image", ["text"], ["image"]),
    ("Text-to-Audio", ["text"], ["audio"]),
    ("Text-to-Video", ["text"], ["video"]),
    ("Image-to-Text", ["image"], ["text"]),
    ("Image Colorizer", ["image"], ["image"]),
    ("Image Stitcher", ["image", "image"], ["image"]),
    ("Image Style Transfer", ["image", "image"], ["image"]),
    ("Audio-to-Text", ["audio"], ["text"]),
    ("Audio Noise Reduction", ["audio"], ["audio"]),
    ("Audio Splicer", ["audio", "audio"], ["audio"]),
    ("Video-to-Audio", ["video"], ["audio"]),
    ("Video-to-Text", ["video"], ["text"]),
    ("Video Speed Changer", ["video"], ["video"]),
    ("Video Synchronization", ["video", "audio"], ["video"]),
    ("Voice Changer", ["audio"], ["audio"]),
    ("Text Grammar Checker", ["text"], ["text"]),
]
_WORDS = (
    "the a an image video audio text file url clip photo song speech report article summary caption "
    "translate extract generate convert enhance remove noise colorize stitch detect describe analyse "
    "download search combine split speed change voice style transfer sentiment grammar check into from "
    "with and of for to using result previous step output input new final high quality english french"
).split()
_SYNONYMS = {
    "generate": "create",
    "extract": "obtain",
    "convert": "transform",
    "image": "picture",
    "video": "clip",
    "audio": "sound",
    "download": "fetch",
    "analyse": "examine",
}
_FILES = ["example.jpg", "example.png", "example.mp4", "example.wav", "example.mp3", "example.txt"]


def load_library() -> list[dict[str, Any]]:
    """The multimedia tool library (or the built-in one), as TaskBench ``tool_desc.json`` nodes."""
    if MULTIMEDIA_TOOLS.is_file():
        return json.loads(MULTIMEDIA_TOOLS.read_text())["nodes"]
    return [{"id": n, "desc": f"{n}.", "input-type": i, "output-type": o} for n, i, o in _BUILTIN]


def _lexicon(size: int = 4000) -> tuple[list[str], list[float]]:
    """The core words plus made-up ones, with Zipf weights: real step texts use a few thousand words."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "da", "go", "zu", "re", "an", "ex"]
    extra = {a + b + c for a in syllables for b in syllables for c in syllables}
    words = list(_WORDS) + sorted(extra)[: max(0, size - len(_WORDS))]
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


_LEXICON, _LEXICON_WEIGHTS = _lexicon()


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    k = rng.randint(lo, hi)
    return " ".join(rng.choices(_LEXICON, weights=_LEXICON_WEIGHTS, k=k))


def make_gold(rng: random.Random, tools: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Gold records in the current TaskBench shape (plus the v1 sampled_* strings, for realistic size)."""
    out: list[dict[str, Any]] = []
    for k in range(n):
        kind = rng.choices(["single", "chain", "dag"], weights=[2117, 3145, 3642])[0]  # the release mix
        size = 1 if kind == "single" else rng.choices(range(2, 11), weights=[8, 8, 6, 5, 4, 3, 2, 2, 1])[0]
        if kind == "dag" and size < 3:
            size = 3
        picked = rng.sample(tools, size)
        nodes, links, steps = [], [], []
        for j, tool in enumerate(picked):
            args: list[Any] = []
            for _t in tool.get("input-type", [])[:2]:
                if j > 0 and (kind == "chain" or rng.random() < 0.6):
                    src = j - 1 if kind == "chain" else rng.randrange(j)
                    args.append(f"<node-{src}>")
                    links.append({"source": picked[src]["id"], "target": tool["id"]})
                else:
                    args.append(rng.choice(_FILES) if rng.random() < 0.5 else _sentence(rng, 2, 8))
            if rng.random() < 0.01:
                args.append(rng.choice([2, 1.25]))  # real gold data has numbers as arguments
            nodes.append({"task": tool["id"], "arguments": args})
            steps.append(f"Step {j + 1}: {_sentence(rng, 6, 16)}")
        sampled = [
            {"task": t["id"], "input-type": t.get("input-type"), "output-type": t.get("output-type")}
            for t in picked
        ]
        out.append(
            {
                "id": str(10_000_000 + k * 7919 % 90_000_000 + k),
                "seed": rng.randrange(1_000_000),
                "n_tools": size,
                "type": kind,
                "sampled_nodes": json.dumps(sampled),
                "sampled_links": json.dumps(links),
                "instruction": _sentence(rng, 25, 55),
                "task_nodes": nodes,
                "task_links": links,
                "task_steps": steps,
            }
        )
    return out


def _reword(rng: random.Random, step: str) -> str:
    words = step.split()
    r = rng.random()
    if r < 0.3:
        return step
    words = [_SYNONYMS.get(w, w) if rng.random() < 0.5 else w for w in words]
    if r < 0.6 and len(words) > 3:
        del words[rng.randrange(2, len(words))]
    if r > 0.85:
        words.insert(rng.randrange(len(words) + 1), rng.choice(_WORDS))
    return " ".join(words)


def make_prediction(
    rng: random.Random, g: dict[str, Any], tools: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """One prediction made from gold with a random perturbation (None = the prediction is missing)."""
    nodes = json.loads(json.dumps(g["task_nodes"]))
    steps: Any = [_reword(rng, s) for s in g["task_steps"]]
    links = [dict(x) for x in g["task_links"]]
    op = rng.choices(
        [
            "keep",
            "drop",
            "swap",
            "replace",
            "duplicate",
            "hallucinate",
            "underscore",
            "dict_args",
            "bare_string_args",
            "number_arg",
            "bad_ref",
            "dict_steps",
            "empty",
            "no_result",
            "missing",
        ],
        weights=[30, 8, 6, 8, 4, 4, 6, 6, 2, 2, 2, 6, 2, 1, 1],
    )[0]
    if op == "missing":
        return None
    if op == "no_result":
        return {"id": g["id"], "answer": "I cannot help with that."}
    if op == "empty":
        return {"id": g["id"], "result": {"task_steps": [], "task_nodes": [], "task_links": []}}
    if op == "drop" and len(nodes) > 1:
        del nodes[rng.randrange(len(nodes))]
    elif op == "swap" and len(nodes) > 1:
        i, j = rng.sample(range(len(nodes)), 2)
        nodes[i], nodes[j] = nodes[j], nodes[i]
    elif op == "replace":
        nodes[rng.randrange(len(nodes))]["task"] = rng.choice(tools)["id"]
    elif op == "duplicate":
        nodes.append(json.loads(json.dumps(rng.choice(nodes))))
    elif op == "hallucinate":
        nodes.append({"task": "Magic " + rng.choice(_WORDS).title() + " Tool", "arguments": ["example.jpg"]})
    elif op == "underscore":
        for node in nodes:
            node["task"] = node["task"].replace(" ", "_")
    elif op == "dict_args":
        for node in nodes:
            node["arguments"] = [{"value": a} for a in node["arguments"]]
    elif op == "bare_string_args":
        nodes[0]["arguments"] = _sentence(rng, 2, 5)
    elif op == "number_arg":
        nodes[-1]["arguments"].append(3)
    elif op == "bad_ref":
        nodes[-1]["arguments"] = [f"<node-{len(nodes) + 3}>"]
    elif op == "dict_steps":
        steps = [{"step": s, "description": s} for s in steps]
    return {"id": g["id"], "result": {"task_steps": steps, "task_nodes": nodes, "task_links": links}}


def write_dataset(directory: Path, n: int, seed: int) -> tuple[Path, Path]:
    """Write tool_desc.json, data.json and predictions.jsonl; return (data dir, predictions path)."""
    rng = random.Random(seed)
    tools = load_library()
    gold = make_gold(rng, tools, n)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tool_desc.json").write_text(json.dumps({"nodes": tools}, indent=2))
    with open(directory / "data.json", "w") as f:
        for g in gold:
            f.write(json.dumps(g) + "\n")
    pred_path = directory / "predictions.jsonl"
    with open(pred_path, "w") as f:
        for g in gold:
            p = make_prediction(rng, g, tools)
            if p is not None:
                f.write(json.dumps(p) + "\n")
    return directory, pred_path


_ENV: dict[str, str] = dict(os.environ)


def _run(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=_ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def time_commands(cmds: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, float]]:
    """Best wall and best CPU seconds of each command; the commands take turns in every round, so all of them
    see the same machine load."""
    best = {name: (float("inf"), float("inf")) for name in cmds}
    for cmd in cmds.values():  # warm-up, not timed: file cache and bytecode cache
        _run(cmd)
    for _ in range(repeat):
        for name, cmd in cmds.items():
            wall, cpu = _run(cmd)
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


_READ = "import json,sys\nfor p in sys.argv[1:]:\n    [json.loads(line) for line in open(p)]\n"
_API = """import json, sys
from taskbench.dataset.layout import read_raw_records
from taskbench.eval.api import evaluate, write_metrics
from taskbench.graph.loaders import load_tool_library

def main(data_dir, pred_path, out, mode):
    gold = read_raw_records(data_dir + "/data.json")
    preds = read_raw_records(pred_path)
    lib = load_tool_library(data_dir + "/tool_desc.json")
    write_metrics(evaluate(gold, preds, lib, mode=mode, gold_path=data_dir + "/data.json"), out)

main(*sys.argv[1:5])
"""


def compare_rouge(data_dir: Path, pred_path: Path, limit: int) -> None:
    """In this process: taskbench's rouge_per_sample vs rouge-score on the step texts of the benchmark."""
    from rouge_score import rouge_scorer

    from taskbench.eval.compat import score_samples_compat
    from taskbench.eval.rouge import ROUGE_KEYS, rouge_per_sample
    from taskbench.graph.loaders import load_tool_library

    gold = [json.loads(line) for line in open(data_dir / "data.json")]
    preds = [json.loads(line) for line in open(pred_path)]
    lib = load_tool_library(data_dir / "tool_desc.json")
    scored = [s for s in score_samples_compat(gold, preds, lib, metrics=("rouge",)) if s.step_ok]
    p_all = [s.pred_steps for s in scored]
    r_all = [s.gold_steps for s in scored]
    t0 = time.perf_counter()
    fast = rouge_per_sample(p_all, r_all)
    t_fast = time.perf_counter() - t0
    scorer = rouge_scorer.RougeScorer(list(ROUGE_KEYS), use_stemmer=False)
    k = min(limit, len(p_all))
    t0 = time.perf_counter()
    ref = [scorer.score(r, p) for p, r in zip(p_all[:k], r_all[:k], strict=True)]
    t_ref = time.perf_counter() - t0
    worst = max(abs(ref[i][key].fmeasure - float(fast[key][i])) for i in range(k) for key in ROUGE_KEYS)
    print(
        f"ROUGE-1/2/L/Lsum per sample: taskbench {len(p_all) / t_fast:,.0f} samples/s ({len(p_all)} in "
        f"{t_fast:.2f} s); rouge-score {k / t_ref:,.0f} samples/s ({k} in {t_ref:.2f} s); "
        f"speed-up {(len(p_all) / t_fast) / (k / t_ref):.1f}x; max |diff| {worst:.1e}"
    )


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--samples", type=int, default=N_SAMPLES, help="number of gold samples")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per command (the best is kept)")
    ap.add_argument("--via", choices=["cli", "api"], default="cli",
                    help="cli: `python -m taskbench evaluate`; api: read_raw_records + evaluate() + write_metrics")
    ap.add_argument("--modes", default="strict,compat", help="comma list of strict, compat (default both)")
    ap.add_argument("--keep", type=Path, help="write the data here and keep it (default: a temp dir)")
    ap.add_argument(
        "--rouge",
        type=int,
        default=0,
        metavar="N",
        help="also compare ROUGE speed with rouge-score on the first N step pairs (in this process)",
    )
    ap.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE as set (every run then recompiles taskbench from source)",
    )
    args = ap.parse_args(argv)
    python = sys.executable
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in ("strict", "compat") for m in modes):
        ap.error("--modes takes strict and/or compat")

    with tempfile.TemporaryDirectory() as tmp:
        directory = args.keep or Path(tmp)
        if not args.no_bytecode_cache:
            # an installed package has its bytecode compiled; a source checkout with PYTHONDONTWRITEBYTECODE set
            # would recompile every module in every run. Cache it outside the work tree instead.
            _ENV.pop("PYTHONDONTWRITEBYTECODE", None)
            _ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        data_dir, pred_path = write_dataset(directory, args.samples, args.seed)
        n_preds = sum(1 for _ in open(pred_path))
        cmds = {"read": [python, "-c", _READ, str(data_dir / "data.json"), str(pred_path)]}
        outputs = {}
        for mode in modes:
            out = outputs[mode] = directory / f"metrics-{mode}.json"
            if args.via == "cli":
                cmd = [python, "-m", "taskbench", "evaluate", "--data", str(data_dir), "--predictions", str(pred_path),
                       "-o", str(out)]
                cmds[mode] = cmd + (["--compat"] if mode == "compat" else [])
            else:
                cmds[mode] = [python, "-c", _API, str(data_dir), str(pred_path), str(out), mode]
        load_before = _load()
        best = time_commands(cmds, args.repeat)
        load_after = _load()
        size_mb = ((data_dir / "data.json").stat().st_size + pred_path.stat().st_size) / 1e6
        t_read, c_read = best["read"]
        print(f"samples: {args.samples} gold, {n_preds} predictions ({size_mb:.1f} MB of JSON Lines); "
              f"best of {args.repeat} fresh processes, run in turns; load average {load_before} -> {load_after} "
              f"on {os.cpu_count()} CPUs")
        how = {
            "strict": "taskbench evaluate (strict, defaults)" if args.via == "cli" else "evaluate(mode='strict')",
            "compat": "taskbench evaluate --compat" if args.via == "cli" else "evaluate(mode='compat')",
        }
        print(f"{'':42s} {'wall s':>7s} {'CPU s':>7s} {'wall x':>7s} {'CPU x':>7s} {'samples/s':>10s}")
        print(f"{'(a) bare json.loads read of both files':42s} {t_read:7.3f} {c_read:7.3f} {1:7.2f} {1:7.2f}")
        for k, mode in enumerate(modes):
            wall, cpu = best[mode]
            print(f"{f'({chr(98 + k)}) ' + how[mode]:42s} {wall:7.3f} {cpu:7.3f} {wall / t_read:7.2f} "
                  f"{cpu / c_read:7.2f} {args.samples / wall:10,.0f}")
        print("target: each ratio to (a) <= 5 (all splits x tool counts, mode add, ROUGE; strict with bootstrap CIs)")
        if "strict" in outputs:
            doc = json.loads(outputs["strict"].read_text())
            g = doc["groups"]["overall_overall"]
            ci = g["ci"].get("node_micro_f1")
            print(f"strict overall: node micro F1 {g['metrics']['node_micro_f1']:.4f} (95% CI "
                  f"{ci[0]:.4f}-{ci[1]:.4f}, {doc['bootstrap']} replicates), {len(doc['groups'])} groups, "
                  f"parse failures {g['metrics']['parse_failure_rate']:.3f}")
        if "compat" in outputs:
            c = json.loads(outputs["compat"].read_text())["overall_overall"]
            print(f"compat overall: rouge1 {c['step_rouge1']:.4f}, node micro F1 "
                  f"{c['node_micro_f1_no_matching']:.4f}, supports {c['node_supports']}/{c['all_samples']}")
        if args.rouge:
            compare_rouge(data_dir, pred_path, args.rouge)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
