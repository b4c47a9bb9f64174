"""Benchmark: `taskbench view` on a run of 28,271 samples x 17 models and on 200 MB files (issue 43 point 10).

``make`` writes, in a directory you choose (a temporary one: the files are large and never committed):

- ``run/``: a run of N samples x M models in the real formats with the real writers: a gold dataset of N samples
  (the bundled multimedia samples under new ids, ``save_dataset``, in ``data/big``), per model a predictions file
  of N lines (``Prediction.to_record`` through ``jsonio.dumps_line``: each model drops, swaps or keeps tools in
  its own pattern, with a raw output, usage and finish reason), the metrics of each prediction set scored by the
  real evaluator (``evaluate(mode="both")``, as ``taskbench run`` scores), ``run_log.json`` with every prediction
  as a record (the writer's format: indent 2; 970 MB at the released size) and the run header;
- ``agents/``: an agents run (the layout before run headers) whose ``episodes.jsonl`` is about 200 MB (episodes
  of the harness's shape) and whose one trajectory is about 200 MB (model calls carrying their whole message
  history, code runs, reviews);
- ``generated/``: a generation run whose ``data.json`` and ``data_error.json`` are about 200 MB each.

``measure`` starts ``taskbench view DIR`` in a child process (a real uvicorn server on loopback) and asks it, over
HTTP, for every page and API answer: per request its wall time, the server's CPU seconds, the response's size
and the server's peak resident memory during it (the peak is reset before each request through
``/proc/PID/clear_refs``). Compare is measured as a user meets it: a first comparison (two entries scored), the
same one again, one with an entry already scored, and three identical requests at once (one job shared), each
asked again while it answers 202 with its progress; every answer's time is recorded, the time until the
result, and the peak memory and CPU of the child process that computed it (reported in the result). It prints the load average before and after. Run each step at most once or twice on a shared machine:

    d=$(mktemp -d); python benchmarks/bench_view.py make $d && python benchmarks/bench_view.py measure $d
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
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

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


def make_large(out: Path, size_mb: int = 200) -> None:
    """``agents/`` and ``generated/`` with files of about ``size_mb`` MB each (see the module docstring)."""
    t0 = time.perf_counter()
    target = size_mb << 20
    rng = random.Random(0)
    words = ["movie", "director", "search", "id", "rating", "year", "title", "credits", "person", "popular"]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    agents = out / "agents"
    (agents / "trajectories").mkdir(parents=True, exist_ok=True)
    (agents / "config.json").write_text(json.dumps({"config": {"env": "tmdb", "model": "mock/echo"}}), encoding="utf-8")
    history = [{"role": "system", "content": text(600)}]
    with (agents / "trajectories" / "big.jsonl").open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"record": "header", "id": "tmdb-001", "task": text(30), "env": "tmdb", "agent": "conagents",
                             "models": {"grounding": "mock/echo"}, "tools": [{"name": f"tool_{i}"} for i in range(54)],
                             "gold_path": ["search_movie", "movie_credits"], "config": {"alpha": 3}}) + "\n")
        i = 0
        while fh.tell() < target:
            history = (history + [{"role": "user", "content": text(120)}, {"role": "assistant", "content": text(80)}])[-24:]
            if i % 3 == 0:
                ev = {"kind": "model_call", "role": "grounding", "model": "mock/echo", "messages": history,
                      "output": {"content": json.dumps({"tool": "search_movie", "arguments": {"query": text(3)}})},
                      "usage": {"prompt_tokens": 4000, "completion_tokens": 60}, "latency": 0.4}
            elif i % 3 == 1:
                ev = {"kind": "code_run", "role": "execution", "code": f"result = search_movie(query={text(3)!r})",
                      "stdout": text(200), "result": {"results": [{"id": k, "title": text(4)} for k in range(20)]}}
            else:
                ev = {"kind": "review", "role": "review", "target": "execution", "verdict": "revise",
                      "feedback": text(20), "route": "grounding", "problem": "wrong_tool", "action": "replan"}
            fh.write(json.dumps({"record": "event", "index": i, "t": i * 0.5, **ev}) + "\n")
            i += 1
        fh.write(json.dumps({"record": "end", "status": "complete", "answer": text(20),
                             "outcome": {"success": False, "reason": text(10)}}) + "\n")
    with (agents / "episodes.jsonl").open("w", encoding="utf-8") as fh:
        k = 0
        while fh.tell() < target:
            fh.write(json.dumps({"id": f"conagents/tmdb-{k:06d}/0", "agent": "conagents", "task": f"tmdb-{k:06d}",
                                 "seed": 0, "success": k % 3 == 0, "reason": text(40), "calls": ["search_movie"] * 4,
                                 "gold_path": ["search_movie", "movie_credits"], "cpr_f1": 0.5, "turns": 6,
                                 "model_calls": 9, "prompt_tokens": 30000, "completion_tokens": 900,
                                 "wall_seconds": 12.5, "trajectory": "trajectories/big.jsonl", "notes": text(60)}) + "\n")
            k += 1
    gen = out / "generated"
    gen.mkdir(parents=True, exist_ok=True)
    (gen / "generation.json").write_text(json.dumps({"model": "mock/echo", "n": 0}), encoding="utf-8")
    counts = {}
    for name, rejected in (("data.json", False), ("data_error.json", True)):
        with (gen / name).open("w", encoding="utf-8") as fh:
            n = 0
            while fh.tell() < target:
                rec = {"id": f"{'r' if rejected else 'k'}{n}", "type": rng.choice(["single", "chain", "dag"]),
                       "method": "back-instruct", "user_request": text(60), "task_steps": [text(12) for _ in range(3)],
                       "task_nodes": [{"task": f"tool_{rng.randrange(54)}", "arguments": [text(4)]} for _ in range(3)],
                       "task_links": [], "critics": {"rule": {"passed": not rejected, "reasons": [text(15)] if rejected else []},
                                                     "llm": {"passed": True, "reasons": []}},
                       "duplicate_of": (f"k{n - 7}" if not rejected and n % 50 == 49 else None)}
                if rejected:
                    rec["reasons"] = [text(15)]
                fh.write(json.dumps(rec) + "\n")
                n += 1
        counts[name] = n
    (gen / "statistics.json").write_text(json.dumps({"planned": counts["data.json"] + counts["data_error.json"],
                                                     "kept": counts["data.json"]}), encoding="utf-8")
    sizes = {str(p.relative_to(out)): round(p.stat().st_size / 1e6) for p in
             (agents / "episodes.jsonl", agents / "trajectories" / "big.jsonl", gen / "data.json", gen / "data_error.json")}
    print(f"large files (MB): {sizes}; made in {time.perf_counter() - t0:.0f} s", flush=True)


# ----------------------------------------------------------------------------------------------- measure


def _status(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        return True
    except OSError:
        return False


def _get(url: str) -> tuple[float, int, int, bytes]:
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=900) as r:  # noqa: S310 (loopback)
            body = r.read()
            code = r.status
    except urllib.error.HTTPError as exc:
        body, code = exc.read(), exc.code
    return time.perf_counter() - t, len(body), code, body


class Server:
    def __init__(self, out: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "taskbench", "view", str(out), "--port", str(self.port)],
                                     env=env, stderr=subprocess.PIPE, text=True)
        self.base = f"http://127.0.0.1:{self.port}"
        while True:
            try:
                _get(self.base + "/api/view/runs")
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(self.proc.stderr.read() if self.proc.stderr else "view exited") from None
                time.sleep(0.05)
        self.start_s = time.perf_counter() - self.t0

    def ask(self, path: str) -> dict[str, Any]:
        """One request: wall time, server CPU, response size and status, the server's peak RSS during it."""
        pid = self.proc.pid
        exact = _reset_peak(pid)
        cpu = _cpu(pid)
        dt, size, code, body = _get(self.base + path)
        return {"s": round(dt, 3), "cpu_s": round(_cpu(pid) - cpu, 2), "bytes": size, "status": code,
                "peak_rss_mb": round(_status(pid, "VmHWM") / 1024, 1), "peak_is_per_request": exact, "body": body}

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _compare(srv: Server, path: str) -> dict[str, Any]:
    """Ask for a comparison until it answers with the result: every answer's time and the time to the result."""
    t0 = time.perf_counter()
    answers = []
    peak = 0.0
    while True:
        r = srv.ask(path)
        peak = max(peak, r["peak_rss_mb"])
        answers.append({k: r[k] for k in ("s", "cpu_s", "bytes", "status", "peak_rss_mb")})
        if r["status"] != 202:
            break
        time.sleep(0.5)
    worker = json.loads(r["body"]).get("worker") if r["status"] == 200 else None
    return {"to_result_s": round(time.perf_counter() - t0, 2), "answers": len(answers),
            "slowest_answer_s": max(a["s"] for a in answers), "server_peak_rss_mb": peak,
            "server_cpu_s": round(sum(a["cpu_s"] for a in answers), 2), "worker": worker,
            "status": answers[-1]["status"], "result_bytes": answers[-1]["bytes"]}


def measure(out: Path, repeats: int) -> dict[str, Any]:
    from taskbench.report.view.index import run_slug

    load_before = os.getloadavg()
    srv = Server(out)
    q = urllib.parse.quote
    try:
        figures: dict[str, Any] = {"start_s": round(srv.start_s, 2),
                                   "rss_after_index_mb": round(_status(srv.proc.pid, "VmRSS") / 1024, 1)}
        rid = run_slug(out / "run")
        keys = [e["key"] for e in json.loads(srv.ask(f"/api/view/run/{rid}")["body"])["entries_detail"]]
        key = keys[1]

        def once(name: str, path: str, n: int = repeats) -> None:
            runs = [srv.ask(path) for _ in range(n)]
            figures[name] = {"median_s": statistics.median(r["s"] for r in runs), "max_s": max(r["s"] for r in runs),
                             "cpu_s": max(r["cpu_s"] for r in runs), "bytes": runs[-1]["bytes"],
                             "status": runs[-1]["status"], "peak_rss_mb": max(r["peak_rss_mb"] for r in runs)}
            print(name, {k: v for k, v in figures[name].items()}, flush=True)

        once("page_html", "/view")
        once("runs", "/api/view/runs")
        once("run", f"/api/view/run/{rid}")
        once("board", "/api/view/board")
        once("samples_first_open", f"/api/view/samples/{rid}?entry={q(key)}", 1)
        once("samples_page_2", f"/api/view/samples/{rid}?entry={q(key)}&offset=50")
        once("samples_filter_dag_missing", f"/api/view/samples/{rid}?entry={q(key)}&type=dag&label=missing_tool")
        once("samples_search", f"/api/view/samples/{rid}?entry={q(key)}&q=2001234")
        once("sample", f"/api/view/sample/{rid}?entry={q(key)}&id=20000077")
        for k in keys[2:6]:  # more models' samples: the store keeps the last 6 indexes
            srv.ask(f"/api/view/samples/{rid}?entry={q(k)}")
        figures["rss_after_5_sample_indexes_mb"] = round(_status(srv.proc.pid, "VmRSS") / 1024, 1)

        def cmp_path(a: str, b: str) -> str:
            return f"/api/view/compare?a_run={rid}&a_entry={q(a)}&b_run={rid}&b_entry={q(b)}"

        figures["compare_first"] = _compare(srv, cmp_path(keys[0], keys[1]))
        print("compare_first", figures["compare_first"], flush=True)
        figures["compare_again"] = _compare(srv, cmp_path(keys[0], keys[1]))
        figures["compare_one_scored"] = _compare(srv, cmp_path(keys[0], keys[2]))
        print("compare_one_scored", figures["compare_one_scored"], flush=True)
        three: list[dict[str, Any]] = []
        cpu0 = _cpu(srv.proc.pid)
        _reset_peak(srv.proc.pid)
        t0 = time.perf_counter()
        threads = [threading.Thread(target=lambda: three.append(_compare(srv, cmp_path(keys[3], keys[4]))))
                   for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        figures["compare_three_identical_at_once"] = {
            "wall_s": round(time.perf_counter() - t0, 2), "each_to_result_s": [c["to_result_s"] for c in three],
            "slowest_answer_s": max(c["slowest_answer_s"] for c in three), "server_cpu_s": round(_cpu(srv.proc.pid) - cpu0, 1),
            "server_peak_rss_mb": round(_status(srv.proc.pid, "VmHWM") / 1024, 1),
            "workers": [c["worker"] for c in three]}
        print("compare_three", figures["compare_three_identical_at_once"], flush=True)

        agents = run_slug(out / "agents")
        once("episodes_first", f"/api/view/episodes/{agents}", 1)
        once("episodes_again", f"/api/view/episodes/{agents}")
        once("episodes_page_100", f"/api/view/episodes/{agents}?offset=50000")
        first = json.loads(srv.ask(f"/api/view/episodes/{agents}")["body"])["episodes"][0]["id"]
        once("trajectory_first", f"/api/view/trajectory/{agents}?id={q(first)}", 1)
        once("trajectory_again", f"/api/view/trajectory/{agents}?id={q(first)}")
        once("trajectory_late_page", f"/api/view/trajectory/{agents}?id={q(first)}&offset=9000")
        gen = run_slug(out / "generated")
        once("generation_first", f"/api/view/generation/{gen}", 1)
        once("generation_again", f"/api/view/generation/{gen}")
        figures["server_peak_rss_mb_whole_run"] = round(max(max(v.get("peak_rss_mb", 0), v.get("server_peak_rss_mb", 0))
                                                            for v in figures.values() if isinstance(v, dict)), 1)
        figures["run_log_mb"] = round((out / "run" / "run_log.json").stat().st_size / 1e6)
        figures["files_mb"] = {str(p.relative_to(out)): round(p.stat().st_size / 1e6) for p in
                               (out / "agents" / "episodes.jsonl", out / "agents" / "trajectories" / "big.jsonl",
                                out / "generated" / "data.json", out / "generated" / "data_error.json")}
        figures["load_average_before"] = load_before
        figures["load_average_after"] = os.getloadavg()
        figures["cpus"] = os.cpu_count()
        return figures
    finally:
        srv.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("make", "measure"))
    ap.add_argument("dir", type=Path)
    ap.add_argument("-n", type=int, default=N_SAMPLES)
    ap.add_argument("--models", type=int, default=N_MODELS)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--large-mb", type=int, default=200, help="size of each large agents and generation file")
    ap.add_argument("--out", type=Path, default=None, help="also write the figures to this JSON file")
    args = ap.parse_args()
    if args.what == "make":
        make(args.dir, args.n, args.models, args.bootstrap)
        make_large(args.dir, args.large_mb)
    else:
        figures = measure(args.dir, args.repeats)
        text = json.dumps(figures, indent=2)
        print(text)
        if args.out is not None:
            args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
