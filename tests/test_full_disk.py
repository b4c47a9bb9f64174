"""A full disk is one line, and leaves nothing half-written (issue 43, point 15).

Each command runs in a child process whose output directory is a small tmpfs, mounted in a private mount
namespace (``unshare --user --map-root-user --mount``: no privilege needed where user namespaces are allowed),
so writes fail with ENOSPC part-way; where no namespace can be made, a file-size limit (RLIMIT_FSIZE, writes
fail with EFBIG) stands in for the full disk. Every case must end with exit 2 and one ``taskbench: error:``
line, without a traceback; no temporary file may be left; a file written whole (JSON, HTML, PNG) is absent or
complete; a JSON Lines file of records holds only whole lines (the records before the full disk are kept).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from taskbench import bundled

ROOT = Path(__file__).resolve().parent.parent
GRAPH = str(bundled.path("multimedia") / "graph_desc.json")
TOOLS = str(bundled.path("multimedia") / "tool_desc.json")


def _namespaces() -> str | None:
    """Why a private tmpfs cannot be mounted here, or None when it can."""
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            "mount -t tmpfs -o size=8k tmpfs /mnt 2>/dev/null || mount -t tmpfs -o size=8k tmpfs "
                            "\"$TMPDIR\""], capture_output=True, text=True, env={**os.environ, "TMPDIR": "/tmp"})
    return None if probe.returncode == 0 else f"unshare cannot mount a tmpfs: {probe.stderr.strip()[:200]}"


NO_NAMESPACE = _namespaces()


def run_full(argv: list[str], work: Path, size_kb: int, *, cache: Path | None = None) -> tuple[int, str, Path]:
    """Run ``taskbench ARGV`` with ``work/full`` on a disk of ``size_kb`` KiB; returns (exit code, stderr, a copy
    of what the command left in ``work/full``)."""
    full = work / "full"
    full.mkdir(parents=True, exist_ok=True)
    kept = work / "kept"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "120",
           "TASKBENCH_CACHE": str(cache or work / "cache")}
    command = [sys.executable, "-m", "taskbench", *argv]
    if NO_NAMESPACE is None:
        script = ('mount -t tmpfs -o size="$1"k tmpfs "$2" || exit 97; shift 2; cd "$0";'
                  '"$@"; rc=$?; mkdir -p kept; cp -a full/. kept/; exit $rc')
        proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "bash", "-c", script, str(work),
                               str(size_kb), str(full), *command], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode != 97, proc.stderr
    else:
        def limit() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (size_kb * 1024, size_kb * 1024))

        proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300,
                              preexec_fn=limit)
        shutil.copytree(full, kept, dirs_exist_ok=True)
    return proc.returncode, proc.stderr, kept


def half_written(d: Path) -> list[str]:
    problems = []
    for p in d.rglob("*"):
        if not p.is_file():
            continue
        data = p.read_bytes()
        if p.name.endswith(".tmp"):
            problems.append(f"temporary file left: {p.name}")
        elif p.suffix == ".jsonl" or p.name == "data_raw.json":
            if data and not data.endswith(b"\n"):
                problems.append(f"{p.name}: a torn last line")
            for line in data.splitlines():
                try:
                    json.loads(line)
                except ValueError:
                    problems.append(f"{p.name}: a line that does not parse")
        elif p.suffix == ".json" and data:
            try:
                json.loads(data)
            except ValueError:
                problems.append(f"{p.name}: does not parse")
        elif p.suffix == ".html" and data and not data.rstrip().endswith(b"</html>"):
            problems.append(f"{p.name}: cut short")
        elif p.suffix == ".png" and data and not data.endswith(b"IEND\xaeB`\x82"):
            problems.append(f"{p.name}: cut short")
    return problems


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, Path]:
    """Predictions and metrics made once on a normal disk."""
    work = tmp_path_factory.mktemp("seeds")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TASKBENCH_CACHE": str(work / "cache")}
    preds, metrics = work / "p.jsonl", work / "m.json"
    for argv in (["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "4", "-q", "-o", str(preds)],
                 ["evaluate", "-d", "multimedia", "-p", str(preds), "--bootstrap", "0", "-o", str(metrics)]):
        subprocess.run([sys.executable, "-m", "taskbench", *argv], check=True, capture_output=True, env=env,
                       timeout=300)
    return {"preds": preds, "metrics": metrics}


CASES = {
    "predict": ["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "30", "-q", "--no-cache",
                "-o", "full/p.jsonl"],
    "evaluate": ["evaluate", "-d", "multimedia", "-p", "{preds}", "--bootstrap", "0", "-o", "full/m.json"],
    "graph build": ["graph", "build", TOOLS, "-o", "full/g.json"],
    "sample": ["sample", GRAPH, "-n", "300", "-o", "full/s.jsonl"],
    "graph show html": ["graph", "show", GRAPH, "-o", "full/g.html"],
    "graph show png": ["graph", "show", GRAPH, "-o", "full/g.png"],
    "leaderboard png": ["leaderboard", "{metrics}", "-o", "full/b.png"],
    "leaderboard html": ["leaderboard", "{metrics}", "-o", "full/b.html"],
    "generate": ["generate", "--graph", GRAPH, "-m", "mock/echo", "--n", "6", "-q", "--no-cache", "-o", "full/gen"],
    "run": ["run", "-m", "mock/echo", "-d", "multimedia", "--limit", "4", "--generate", "0", "--agents", "",
            "--bootstrap", "0", "-q", "--no-cache", "-o", "full/run"],
    "agents eval": ["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m", "mock/echo",
                    "--limit", "3", "-q", "--bootstrap", "0", "--no-cache", "-o", "full/agents"],
}


@pytest.mark.parametrize("size_kb", [4, 16])
@pytest.mark.parametrize("command", list(CASES))
def test_a_full_disk_is_one_line_and_leaves_nothing_half_written(command, size_kb, seeds, tmp_path):
    argv = [a.replace("{preds}", str(seeds["preds"])).replace("{metrics}", str(seeds["metrics"]))
            for a in CASES[command]]
    code, err, kept = run_full(argv, tmp_path, size_kb)
    assert "Traceback" not in err, err[-3000:]
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert code == 2 and lines and lines[-1].startswith("taskbench: error: "), (code, err[-2000:])
    assert half_written(kept) == []


def test_the_response_cache_on_a_full_disk_is_one_line(tmp_path):
    code, err, _ = run_full(["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "3", "-q",
                             "-o", "p.jsonl"], tmp_path, 4, cache=tmp_path / "full" / "cache")
    assert "Traceback" not in err, err[-3000:]
    assert code == 2 and "response cache" in err.strip().splitlines()[-1], err[-2000:]


def test_records_written_before_the_disk_filled_are_kept_and_the_run_resumes(tmp_path):
    """The predictions file on a full disk holds whole records only; on a disk with room the same command
    finishes the file, and it equals a run that never hit the full disk."""
    argv = ["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "30", "-q", "--no-cache", "-o", "full/p.jsonl"]
    code, err, kept = run_full(argv, tmp_path, 12)
    assert code == 2, err
    partial = (kept / "p.jsonl").read_bytes()
    assert partial and partial.endswith(b"\n") and half_written(kept) == []
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TASKBENCH_CACHE": str(tmp_path / "cache")}
    resumed, fresh = tmp_path / "resume", tmp_path / "fresh"
    resumed.mkdir()
    fresh.mkdir()
    shutil.copytree(kept, resumed / "full")
    for where in (resumed, fresh):
        (where / "full").mkdir(exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "taskbench", *argv], cwd=where, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    got = (resumed / "full" / "p.jsonl").read_bytes()
    assert got.startswith(partial)

    def without_seconds(data: bytes) -> list[dict]:
        rows = [json.loads(x) for x in data.splitlines()]
        for r in rows:
            r.get("usage", {}).pop("seconds", None)
        return rows

    assert without_seconds(got) == without_seconds((fresh / "full" / "p.jsonl").read_bytes())
