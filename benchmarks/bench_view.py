"""Benchmark: `taskbench view` on a run of 28,271 samples x 17 models (the scale inspect view runs out of memory on).

``make`` writes the run directory in the real formats with the real writers: a gold dataset of N samples (the
bundled multimedia samples under new ids, ``save_dataset``), per model a predictions file of N lines
(``Prediction.to_record`` through ``jsonio.dumps_line``: each model drops, swaps or keeps tools in its own
pattern, with a raw output, usage and finish reason), the metrics of each prediction set scored by the real
evaluator (``evaluate(mode="both")``, as ``taskbench run`` scores), ``run_log.json`` with every prediction as a
record (the writer's format: indent 2), which on this run is hundreds of megabytes, and the run header
(``header.json``, ``dataset.header.write_header``).

``measure`` starts ``taskbench view`` on it in a child process (a real uvicorn server on loopback) and times,
from this process over HTTP: the server's start (index built) and its resident memory then, the run list, the
run page, the leaderboard, the first page of samples of one model (builds that model's sample index), the same
page again, a filtered page, a search, one sample, and the server's memory at the end (peak RSS), each with
the response size. Run it under the CPU lock; it prints the load average with the figures.

    flock /work/heavy.lock timeout 1800 .venv/bin/python benchmarks/bench_view.py make /tmp/bigrun
    flock /work/heavy.lock timeout 1800 .venv/bin/python benchmarks/bench_view.py measure /tmp/bigrun
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

N_SAMPLES = 28_271
N_MODELS = 17
PATTERNS = 3
"""Distinct prediction patterns (scored for real); model k uses pattern k % PATTERNS."""


def make(out: Path, n: int, models: int, bootstrap: int) -> None:
    from taskbench import bundled
    from taskbench.dataset import jsonio
    from taskbench.dataset.layout import load_dataset, read_raw_records, save_dataset
    from taskbench.eval.api import evaluate
    from taskbench.run.job import environment, model_slug
    from taskbench.schema import Prediction, RunConfig, RunEntry, RunLog, Usage

    t0 = time.perf_counter()
    ds = load_dataset(bundled.path("multimedia"))
    base = list(ds.samples)
    names = list(ds.library.names)
    samples = []
    for i in range(n):
        s = base[i % len(base)].model_copy(deep=True)
        s.id = f"{20_000_000 + i}"
        samples.append(s)
    ds.samples, ds.requests = samples, {}
    data = save_dataset(ds, out / "data" / "big")
    gold = load_dataset(data)
    raw_gold = read_raw_records(gold.data_path) if gold.data_path else None
    print(f"gold: {n} samples in {time.perf_counter() - t0:.1f} s", flush=True)
    run = out / "run"
    docs: dict[int, dict] = {}
    entries = []
    for k in range(models):
        model = f"mock/model-{k:02d}"
        pattern = k % PATTERNS
        rng = random.Random(pattern)
        preds = []
        for s in gold.samples:
            nodes = [{"task": nd.task, "arguments": [a if isinstance(a, str) else a.model_dump() for a in nd.arguments]}
                     for nd in s.task_nodes]
            roll = rng.random()
            if pattern >= 1 and roll < 0.3 and len(nodes) > 1:
                nodes = nodes[:-1]
            if pattern == 2 and roll > 0.8:
                nodes[0]["task"] = rng.choice(names)
            if pattern == 1 and roll > 0.95:
                nodes[0]["task"] = "Made-up Tool"
            result = {"task_steps": [f"Step {i + 1}: call {x['task']}" for i, x in enumerate(nodes)], "task_nodes": nodes,
                      "task_links": []}
            preds.append(Prediction(id=s.id, user_request=s.user_request, result=result, raw=json.dumps(result),
                                    model=model, finish_reason="stop",
                                    usage=Usage(prompt_tokens=900, completion_tokens=60, seconds=0.4)))
        rel = Path("predictions") / "big" / f"{model_slug(model)}.jsonl"
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        with (run / rel).open("w", encoding="utf-8") as fh:
            for p in preds:
                fh.write(jsonio.dumps_line(p.to_record()) + "\n")
        if pattern not in docs:
            t = time.perf_counter()
            result = evaluate(gold.samples, [p.to_record() for p in preds], gold.library, mode="both",
                              gold_records=raw_gold, bootstrap=bootstrap, seed=0)
            docs[pattern] = result.to_json()
            print(f"scored pattern {pattern}: {time.perf_counter() - t:.1f} s", flush=True)
        metrics = Path("metrics") / "big" / f"{model_slug(model)}.json"
        jsonio.write_json(run / metrics, docs[pattern])
        entry = RunEntry(model=model, dataset="big", data_path=str(data), dependency=gold.library.dependency,
                         predictions_path=str(rel), metrics_path=str(metrics), sample_ids=[s.id for s in gold.samples],
                         status="scored", strict=docs[pattern].get("strict"), compat=docs[pattern].get("compat"),
                         usage=Usage(prompt_tokens=900 * n, completion_tokens=60 * n, seconds=0.4 * n))
        entries.append(entry)
        del preds
        print(f"model {k + 1}/{models} written", flush=True)
    log = RunLog(run_id="bench-view", status="complete", started="2026-12-02T00:00:00.000+00:00",
                 finished="2026-12-02T01:00:00.000+00:00", seconds=3600.0,
                 config=RunConfig(models=[e.model for e in entries], datasets=[str(data)], limit=None),
                 environment=environment(["bench_view.py"]), entries=entries)
    head = log.model_dump(mode="json")
    # the writer's format (jsonio.write_json: indent 2), one entry's records at a time so this stays in memory
    text = json.dumps(head, ensure_ascii=False, indent=2)
    parts = text.split('"records": []')
    assert len(parts) == len(entries) + 1
    with (run / "run_log.json").open("w", encoding="utf-8") as fh:
        for i, entry in enumerate(entries):
            fh.write(parts[i])
            with (run / entry.predictions_path).open(encoding="utf-8") as pf:
                records = [Prediction.model_validate_json(line).model_dump(mode="json") for line in pf]
            block = json.dumps(records, ensure_ascii=False, indent=2)
            fh.write('"records": ' + block.replace("\n", "\n" + " " * 6))
        fh.write(parts[-1] + "\n")
    from taskbench.dataset.header import new_header, run_identity, write_header

    config = log.config.model_dump(mode="json")
    write_header(run, new_header("run", config=config, identity=run_identity(config), command=["bench_view.py"]))
    size = (run / "run_log.json").stat().st_size
    print(f"run_log.json: {size / 1e6:.0f} MB; made in {time.perf_counter() - t0:.0f} s", flush=True)


def _rss_kb(pid: int, key: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _get(url: str) -> tuple[float, int]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:  # noqa: S310 (loopback)
        body = r.read()
    return time.perf_counter() - t, len(body)


def measure(out: Path, repeats: int) -> dict:
    from taskbench.report.view.index import run_slug

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "taskbench", "view", str(out), "--port", str(port)], env=env,
                            stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                _get(base + "/api/view/runs")
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(proc.stderr.read() if proc.stderr else "view exited") from None
                time.sleep(0.05)
        figures: dict = {"start_s": time.perf_counter() - t0, "rss_after_index_mb": _rss_kb(proc.pid) / 1024}
        rid = run_slug(out / "run")
        key = "big/mock/model-01"
        q = urllib.parse.quote
        pages = {
            "runs": "/api/view/runs",
            "run": f"/api/view/run/{rid}",
            "board": "/api/view/board",
            "samples_first_open": f"/api/view/samples/{rid}?entry={q(key)}",
            "samples_page_2": f"/api/view/samples/{rid}?entry={q(key)}&offset=50",
            "samples_filter_dag_missing": f"/api/view/samples/{rid}?entry={q(key)}&type=dag&label=missing_tool",
            "samples_search": f"/api/view/samples/{rid}?entry={q(key)}&q=2001234",
            "sample": f"/api/view/sample/{rid}?entry={q(key)}&id=20000077",
            "page_html": "/view",
        }
        for name, path in pages.items():
            times, size = [], 0
            for _ in range(1 if name == "samples_first_open" else repeats):
                dt, size = _get(base + path)
                times.append(dt)
            figures[name] = {"median_s": statistics.median(times), "bytes": size}
        run = json.loads(urllib.request.urlopen(base + f"/api/view/run/{rid}", timeout=600).read())  # noqa: S310
        for e in run["entries_detail"][2:6]:  # open more models' samples: the store keeps the last 6 tables
            _get(base + f"/api/view/samples/{rid}?entry={q(e['key'])}")
        figures["rss_after_5_sample_indexes_mb"] = _rss_kb(proc.pid) / 1024
        figures["peak_rss_mb"] = _rss_kb(proc.pid, "VmHWM") / 1024
        figures["run_log_mb"] = (out / "run" / "run_log.json").stat().st_size / 1e6
        figures["load_average"] = os.getloadavg()
        return figures
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    import urllib.parse  # noqa: F401 (used in measure)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("make", "measure"))
    ap.add_argument("dir", type=Path)
    ap.add_argument("-n", type=int, default=N_SAMPLES)
    ap.add_argument("--models", type=int, default=N_MODELS)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.what == "make":
        make(args.dir, args.n, args.models, args.bootstrap)
    else:
        print(json.dumps(measure(args.dir, args.repeats), indent=2))


if __name__ == "__main__":
    main()
