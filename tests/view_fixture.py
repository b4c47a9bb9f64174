"""Run directories for the viewer tests, made by the real writers: `taskbench run` (mock models, with its
generation and agents stages) on a copy of a bundled dataset, then attacked.

The attack: one gold request, a predicted tool name, the raw model output, a finish reason, an agent's answer
and code, a rejected generated sample, a critic's reason (``statistics.json``) and an agent's failure reason
(``metrics.json``) carry HTML/script payloads (a <script> element, quotes that break
out of an attribute, an <img onerror>, javascript: URLs); the run directory's own name is one too. The
predictions are rescored by resuming the run, so the metrics (error labels, hallucinated tools) are the real
evaluator's answer to the attacked predictions.
"""

from __future__ import annotations

import json
from pathlib import Path

from taskbench import bundled
from taskbench.dataset.layout import load_dataset, save_dataset
from taskbench.run.job import run_benchmark

XSS_SCRIPT = "<script>window.__pwned='script'</script>"
XSS_ATTR = "\"'><img src=x onerror=\"window.__pwned='img'\">"
XSS_URL = "javascript:window.__pwned='url'"
EVIL_TOOL = "Evil\"><svg onload=\"window.__pwned='svg'\"></svg><script>window.__pwned='tool'</script>"
RUN_NAME = "run\"><img src=x onerror=alert(1)>"
XSS_REASON = f"the answer does not mention <img src=x onerror=alert(1)> {XSS_ATTR} {XSS_SCRIPT}"
"""A reason as a model's words reach it (a checker quotes the answer): in the critics' and the agents' tallies."""


def payload(tag: str) -> str:
    return f"{tag} {XSS_SCRIPT} {XSS_ATTR} <a href=\"{XSS_URL}\">click</a> {XSS_URL}"


def _rewrite_jsonl(path: Path, change) -> None:  # noqa: ANN001
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    lines = [change(i, rec) for i, rec in enumerate(lines)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), encoding="utf-8")


def make_runs(root: Path) -> dict[str, Path]:
    """``root/runs/<RUN_NAME>`` (a taskbench run with stages, attacked) and ``root/data/mm`` (its dataset)."""
    ds = load_dataset(bundled.path("multimedia"))
    ds.samples[0].user_request = payload("request")
    ds.requests[ds.samples[0].id] = payload("request")  # user_requests.json: what the model is shown
    data = save_dataset(ds, root / "data" / "mm")
    run_dir = root / "runs" / RUN_NAME
    kw = dict(models=["mock/echo", "mock/other"], datasets=[str(data)], bootstrap=50, plots=False, generate=2,
              generate_tools="multimedia", agents=["react", "conagents-auto"], agent_tasks=["tmdb-own-02"])
    from taskbench.predict.runner import PredictOptions

    opts = PredictOptions(limit=8)
    run_benchmark(run_dir, options=opts, **{**kw, "generate": 0, "agents": []})
    first_id = ds.samples[0].id

    def attack(i: int, rec: dict) -> dict:
        if i == 0 or rec.get("id") == first_id:
            rec["raw"] = payload("raw")
            rec["finish_reason"] = "<b onmouseover=alert(1)>stop</b>"
            rec["result"] = {"task_steps": [payload("step")],
                             "task_nodes": [{"task": EVIL_TOOL, "arguments": [{"name": "x\"><i>", "value": XSS_URL}]}],
                             "task_links": []}
            rec["error"] = payload("parse error")
        return rec

    _rewrite_jsonl(run_dir / "predictions" / "mm" / "mock_echo.jsonl", attack)
    run_benchmark(run_dir, options=opts, **kw)  # resumes: rescored from the attacked predictions
    traj = next((run_dir / "agents" / "trajectories" / "react").glob("*.jsonl"))

    def traj_attack(i: int, rec: dict) -> dict:
        if rec.get("record") == "end":
            rec["answer"] = payload("answer")
        if rec.get("kind") == "model_call" and isinstance(rec.get("output"), dict):
            rec["output"]["content"] = payload("model said")
        return rec

    _rewrite_jsonl(traj, traj_attack)
    gen = run_dir / "generated" / "data_error.json"
    if gen.is_file() and gen.read_text(encoding="utf-8").strip():
        _rewrite_jsonl(gen, lambda i, rec: {**rec, "user_request": payload("rejected")} if i == 0 else rec)
    stats = json.loads((run_dir / "generated" / "statistics.json").read_text(encoding="utf-8"))
    stats["reasons_by_critic"].setdefault("llm", {})[XSS_REASON] = 1
    (run_dir / "generated" / "statistics.json").write_text(json.dumps(stats), encoding="utf-8")
    metrics = json.loads((run_dir / "agents" / "metrics.json").read_text(encoding="utf-8"))
    react = metrics["agents"]["react"]  # its one failed episode, failed for the attacked reason
    react["failures"] = {f"checker:{XSS_REASON}": sum(react["failures"].values())}
    (run_dir / "agents" / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return {"run": run_dir, "data": data, "root": root / "runs"}
