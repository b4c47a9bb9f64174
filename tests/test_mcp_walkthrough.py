"""docs/mcp.md's walkthrough, for real: from `pip install mcp-server-sqlite` to a generated, executed, reviewed
benchmark and an `agents eval` on it, running exactly the commands of the page's code block.

How the commands are run: the block under ``<!-- walkthrough -->`` is read from docs/mcp.md and each line runs
in ``bash -c`` in a fresh directory, as a user would type it, with ``taskbench`` on PATH being this checkout
(``python -m taskbench`` with src/ first) and the real ``mcp-server-sqlite`` that the test set-up installed
(``make mcp-servers``, .venv-mcp/sqlite, found by tests/mcp_servers.py). Three lines are not run as they are:

- ``pip install ...``: the test set-up installed these packages already; the test checks the line names
  exactly mcp-server-sqlite and taskbench's [mcp] extra, and that both are importable / on PATH;
- ``taskbench review DIR`` (the page): it is started as written, and the test plays the reviewer through the
  page's own route (POST /api/decide, what the C and D keys send): the first sample discarded, every other
  marked correct; then it is stopped with Ctrl-C (SIGINT), as the page's line says.

The model is the tiny test model, SmolLM2-135M through llama.cpp (``TASKBENCH_MODEL=llamacpp/smollm2-135m``,
the variable every command's --model defaults to, so the commands stay as written): a real model, because the
walkthrough's point is that generation reads the real server's state and the real server executes what the
model wrote; a scripted model could only replay what the test put in. It is too small to write good tasks, so
nothing is asserted about their quality: what must hold is that every stage ran on the previous one's output,
the gold graphs were executed in the server (each sample has an exec verdict, the failures are rejected with
the server's error), the review export holds exactly the reviewed samples, and agents eval played one episode
per exported sample and scored it with the generated checkers. Heavy (model decodes): run it under the CPU lock.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from mcp_servers import server_or_skip
from tiny_model import TINY, tiny_model_missing

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "mcp.md"
pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.timeout(1500)]


def walkthrough_commands() -> list[str]:
    """The command lines of the code block under ``<!-- walkthrough -->`` in docs/mcp.md."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- walkthrough -->\s*```bash\n(.*?)```", text, re.S)
    assert m is not None, "docs/mcp.md has no walkthrough block"
    return [ln for ln in m.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def test_the_walkthrough_block_is_the_path_the_issue_asks_for() -> None:
    """Cheap check (no model): the block goes from the pip line through graph build, generate --env, review,
    its export and agents eval --tasks on the export, in that order."""
    cmds = walkthrough_commands()
    firsts = [" ".join(c.split()[:2]) for c in cmds]
    assert firsts[0] == "pip install" and "mcp-server-sqlite" in cmds[0]
    order = ["taskbench graph", "taskbench generate", "taskbench review", "taskbench review", "taskbench agents"]
    assert [f for f in firsts if f.startswith("taskbench")] == order
    gen = next(c for c in cmds if c.startswith("taskbench generate"))
    assert "--env \"mcp:mcp-server-sqlite" in gen
    review = [c for c in cmds if c.startswith("taskbench review")]
    assert "--export" not in review[0] and "--export" in review[1]
    export_dir = review[1].split("-o ")[1].split()[0]
    agents = cmds[-1]
    assert f"--tasks {export_dir}" in agents and "--env \"mcp:mcp-server-sqlite" in agents


@pytest.fixture(scope="module")
def tiny_model() -> str:
    reason = tiny_model_missing()
    if reason:
        pytest.skip(reason)
    return TINY


def _shell_env(tmp: Path, model: str) -> dict[str, str]:
    server = Path(server_or_skip("mcp-server-sqlite"))
    pytest.importorskip("mcp", reason='the MCP SDK is not installed (pip install "taskbench[mcp]")')
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "taskbench"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT / "src"}${{PYTHONPATH:+:$PYTHONPATH}}" '
                       f'exec "{sys.executable}" -m taskbench "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    python = bin_dir / "python"
    python.symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKBENCH_")}
    env.update(PATH=os.pathsep.join([str(bin_dir), str(server.parent), env.get("PATH", "")]),
               TASKBENCH_MODEL=model, TASKBENCH_CACHE=str(tmp / "cache"), COLUMNS="120")
    return env


def _run(line: str, cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _review(line: str, cwd: Path, env: dict[str, str], out: dict[str, object]) -> None:
    """Start the page as written, review through its own route, stop it with Ctrl-C."""
    port = int(m.group(1)) if (m := re.search(r"--port (\d+)", line)) else 8765
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            pytest.fail(f"port {port} is taken: the walkthrough's review page needs it")
    proc = subprocess.Popen(["bash", "-c", f"exec {line.split('#')[0]}"], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(base + "/api/index", timeout=5) as r:
                    index = json.load(r)
                break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the review page did not come up: {proc.communicate()[1][-2000:]}") from exc
                time.sleep(0.5)
        ids = [item["id"] for item in index["items"]]
        assert ids, "the review page offers no samples"
        for i, sid in enumerate(ids):
            body = json.dumps({"id": sid, "outcome": "discard" if i == 0 and len(ids) > 1 else "correct"}).encode()
            req = urllib.request.Request(base + "/api/decide", data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                assert r.status == 200
        out["reviewed"] = ids
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_the_walkthrough_runs_for_real(tiny_model: str, tmp_path: Path) -> None:
    work = tmp_path / "walk"
    work.mkdir()
    env = _shell_env(tmp_path, tiny_model)
    cmds = walkthrough_commands()
    seen: dict[str, object] = {}
    report = os.environ.get("TASKBENCH_WALKTHROUGH_SUMMARY")
    try:
        for line in cmds:
            seen["at"] = line
            if line.startswith("pip install"):
                assert re.fullmatch(r'pip install "taskbench\[mcp\]" mcp-server-sqlite', line.strip())
                continue  # installed by the test set-up (make mcp-servers), checked in _shell_env
            if line.startswith("taskbench review") and "--export" not in line:
                _review(line, work, env, seen)
                continue
            _run(line, work, env)
        seen["at"] = None
    finally:  # for a report, whatever happened: how far it got and the generation's statistics
        stats_file = work / "gen" / "shop" / "statistics.json"
        if report and (seen.get("at") is not None) and stats_file.is_file():
            Path(report).write_text(json.dumps({"stopped_at": seen["at"], "statistics": json.loads(
                stats_file.read_text())}, indent=1), encoding="utf-8")
    gen = work / "gen" / "shop"
    stats = json.loads((gen / "statistics.json").read_text())
    state = (gen / "env_state.txt").read_text()
    assert "table customers" in state and "table orders" in state  # the real server's tables, read through it
    raw = [json.loads(ln) for ln in (gen / "data_raw.json").read_text().splitlines() if ln.strip()]
    answered = [r for r in raw if not r.get("failed") and not r.get("error")]
    assert len(raw) == 6
    assert all("execution" in r for r in answered)  # every answered gold graph ran in the server
    executed = stats["exec_critic"]
    assert executed["run"] == len(answered)
    failures = [r for r in answered if not r["execution"]["passed"]]
    assert executed["passed"] == len(answered) - len(failures)
    errors = {json.loads(ln)["id"]: json.loads(ln) for ln in (gen / "data_error.json").read_text().splitlines()}
    for r in failures:  # rejected, with the server's own error as the reason
        assert any(x.startswith(("exec_failed", "exec_unrunnable")) for x in errors[r["id"]]["reasons"])
    kept = [json.loads(ln) for ln in (gen / "data.json").read_text().splitlines() if ln.strip()]
    assert kept and all(s["critics"]["exec"]["passed"] for s in kept)
    reviewed = seen["reviewed"]
    assert isinstance(reviewed, list) and sorted(reviewed) == sorted(s["id"] for s in kept)
    verified = [json.loads(ln) for ln in (work / "gen" / "shop-verified" / "data.json").read_text().splitlines()
                if ln.strip()]
    assert sorted(s["id"] for s in verified) == sorted(reviewed[1:] if len(reviewed) > 1 else reviewed)
    metrics = json.loads((work / "runs" / "shop" / "metrics.json").read_text())
    react = metrics["agents"]["react"]
    assert react["episodes"] == len(verified) and react["failed"] == 0
    episodes = [json.loads(ln) for ln in (work / "runs" / "shop" / "episodes.jsonl").read_text().splitlines()]
    assert sorted(e["task"] for e in episodes) == sorted(s["id"] for s in verified)
    summary = {"planned": len(raw), "answered": len(answered), "gold_executed": executed["run"],
               "gold_passed": executed["passed"], "kept": len(kept), "verified": len(verified),
               "react_success_rate": react["success_rate"], "exec_reasons": [errors[r["id"]]["reasons"][:1]
                                                                           for r in failures]}
    print("WALKTHROUGH", json.dumps(summary))
    if os.environ.get("TASKBENCH_WALKTHROUGH_SUMMARY"):  # for a report: the suite may run this in a child process
        Path(os.environ["TASKBENCH_WALKTHROUGH_SUMMARY"]).write_text(json.dumps(summary, indent=1), encoding="utf-8")
