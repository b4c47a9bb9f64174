"""Fuzz the options and arguments of taskbench's commands: hostile values in every option, not only in files.

``benchmarks/fuzz_cli.py`` mutates the *files* 13 commands read. This driver covers what it does not: the
commands added since (``agents compare``, ``agents show``, ``agents export-sft``, ``agents span-data``,
``agents distill`` / ``distill-eval``, ``agents plot``, ``sandbox run`` / ``status``, ``compare``, ``graph
edit`` / ``show``, ``review --export``) and the *options* of the older ones (``predict``, ``run``, ``generate``,
``evaluate``, ``sample``, ``leaderboard``, ``agents eval``, ``data judge``). Each case takes a working command line, replaces one to three of its
options or arguments (found by introspecting the command: their names and types) with hostile values of their
type, and runs it in a child process with a timeout and a memory limit:

- integers: -1, 0, 2**31, 2**63, 10**23, ``1e23``, ``nan``, ``''``; floats: 0, -1, 1e308, -1e308, 5e-324,
  ``nan``, ``inf``; paths: ``''``, ``.``, a directory, ``/dev/null``, ``/dev/full``, ``/dev/zero`` (an endless
  input), a FIFO (an input that never ends), a file that is not UTF-8, someone else's file, a 5,000-character
  name, a name with a newline; text: ``''``, 10,000 characters, ``@/dev/zero``, ``@`` a file that is not UTF-8,
  control and bidi characters, ``../../etc/passwd``, ``mcp:false``; flags switched on.

A case passes when the command exits 0, 1 or 2 (4 for ``sandbox run``: the sandbox broke), a 2 ends in one
``taskbench: error:`` line, stderr holds no traceback, it ends before the timeout (a slow case runs again with
three times the timeout before it counts as a hang), it stays under the memory limit, it leaves no temporary
file, someone else's file it was given is unchanged, and nothing new appears in ``/dev``.

Usage (bounded by time; seeded, so a run is reproducible up to timing)::

    python benchmarks/fuzz_options.py --seconds 600 --seed 1 --findings /tmp/fuzz-options

prints counts per command and one line per finding. Exit code 1 when anything was found.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import typing
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MEMORY_LIMIT = 3 * 1024**3
"""Address space a case may use (RLIMIT_AS); past it, an allocation fails (a MemoryError is a finding)."""

INTS = ["-1", "0", str(2**31), str(2**63), str(10**23), "1e23", "nan", "", "-9999999999999999999999"]
FLOATS = ["0", "-1", "1e308", "-1e308", "5e-324", "nan", "inf", "-inf", "", "1e400"]
TEXTS = ["", " ", "x" * 10000, "@/dev/zero", "@{nonutf8}", "../../etc/passwd", "\u202eevil\u202c", "\x1b]52;c;aGk=\x07",
         "mcp:false", "no-such-name", "{foreign}", "a,b,,c", "[/x]", "=", "A -> B -> C"]
PATHS = ["", ".", "{dir}", "/dev/null", "/dev/full", "/dev/zero", "{fifo}", "{nonutf8}", "{foreign}",
         "{case}/" + "n" * 5000, "{case}/a\nb", "{case}/missing/deeper/x.json", "/proc/self/status"]

# (argv template, the output a case writes under {case}); {placeholders} are filled per case
COMMANDS: dict[str, list[str]] = {
    "agents compare": ["agents", "compare", "{run_a}", "{run_b}", "--bootstrap", "10", "-o", "{case}/cmp.json"],
    "agents show": ["agents", "show", "{run_a}", "--task", "{task}"],
    "agents export-sft": ["agents", "export-sft", "{run_a}", "-o", "{case}/sft"],
    "agents span-data": ["agents", "span-data", "--env", "taskbench-multimedia", "-o", "{case}/span", "--limit", "2",
                         "-q", "--min-tools", "0", "--min-doc-words", "0"],
    "agents distill": ["agents", "distill", "--role", "grounding", "--data", "{empty}", "-o", "{case}/adapter",
                       "--limit", "1"],
    "agents distill-eval": ["agents", "distill-eval", "--role", "grounding", "--data", "{empty}", "-m", "mock/echo",
                            "-o", "{case}/scores.json", "-q"],
    "agents plot": ["agents", "plot", "{run_a}", "-o", "{case}/plot.png"],
    "sandbox run": ["sandbox", "run", "{code}", "--timeout", "5", "--json"],
    "sandbox status": ["sandbox", "status"],
    "compare": ["compare", "-d", "multimedia", "{preds}", "{preds}", "--bootstrap", "10", "--permutations", "10",
                "-o", "{case}/cmp.json"],
    "graph edit": ["graph", "edit", "{graph}", "--drop", "Image Downloader -> Image Editing", "-o", "{case}/g.json"],
    "graph show": ["graph", "show", "{graph}", "-o", "{case}/g.html"],
    "review --export": ["review", "{gen}", "--export", "-o", "{case}/verified"],
    "predict": ["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "2", "-q", "-o", "{case}/p.jsonl"],
    "run": ["run", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--generate", "0", "--agents", "",
            "--bootstrap", "0", "-q", "-o", "{case}/run"],
    "generate": ["generate", "--graph", "{graph}", "-m", "mock/echo", "--n", "2", "-q", "-o", "{case}/gen"],
    "evaluate": ["evaluate", "-d", "multimedia", "-p", "{preds}", "--bootstrap", "10", "-o", "{case}/m.json"],
    "sample": ["sample", "{graph}", "-n", "3", "-o", "{case}/s.jsonl"],
    "leaderboard": ["leaderboard", "{metrics}", "-o", "{case}/board.md"],
    "agents eval": ["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m", "mock/echo",
                    "--limit", "1", "-q", "--bootstrap", "10", "-o", "{case}/agents"],
    "data judge": ["data", "judge", "{gen}", "-m", "mock/echo", "--limit", "1", "-q", "-o", "{case}/judge.json"],
}


# --------------------------------------------------------------------------------------------- introspection


def _kind(annotation: Any) -> str:
    """int | float | path | text | flag | list-of-those, from a typer parameter's annotation."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is list:
        return "list-" + _kind(args[0]) if args else "list-text"
    if args and origin is not None and origin is not list:  # Optional[...] / X | None
        return _kind(args[0])
    if annotation is bool:
        return "flag"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    if annotation is Path:
        return "path"
    return "text"


def parameters(argv: list[str]) -> tuple[int, list[tuple[str | None, str]]]:
    """(how many words of ``argv`` name the command, [(option name or None for a positional argument, kind)])."""
    sys.path.insert(0, str(ROOT / "src"))
    from typer.main import get_command

    from taskbench.cli.main import app

    cmd: Any = get_command(app)
    i = 0
    while i < len(argv) and argv[i] in getattr(cmd, "commands", {}):
        cmd = cmd.commands[argv[i]]
        i += 1
    out: list[tuple[str | None, str]] = []
    for p in getattr(cmd, "params", []):
        if getattr(p, "hidden", False) or p.name == "help":
            continue
        kind = _kind(getattr(getattr(p, "type_descriptor", None), "annotation", str))
        opts = [o for o in getattr(p, "opts", ()) if o.startswith("--")] or list(getattr(p, "opts", ()))
        if getattr(p, "param_type_name", "") == "argument":
            out.append((None, kind))
        elif opts:
            out.append((opts[0], kind))
    return i, out


# --------------------------------------------------------------------------------------------- the cases


def hostile(kind: str, rng: random.Random) -> str:
    base = kind.removeprefix("list-")
    pool = {"int": INTS, "float": FLOATS, "path": PATHS}.get(base, TEXTS)
    return rng.choice(pool)


def mutate(argv: list[str], words: int, params: list[tuple[str | None, str]], rng: random.Random) -> list[str]:
    """``argv`` with one to three options or positional arguments given hostile values."""
    argv = list(argv)
    flags = {n for n, k in params if n is not None and k == "flag"}
    positional, i = [], words
    while i < len(argv):
        if argv[i].startswith("-"):
            i += 1 if argv[i] in flags else 2
            continue
        positional.append(i)
        i += 1
    for _ in range(rng.randint(1, 3)):
        name, kind = rng.choice(params)
        if name is None:
            if positional:
                argv[rng.choice(positional)] = hostile(kind, rng)
            continue
        if kind == "flag":
            if name not in argv:
                argv.append(name)
            continue
        value = hostile(kind, rng)
        if name in argv and argv.index(name) + 1 < len(argv):
            argv[argv.index(name) + 1] = value
        else:
            argv += [name, value]
    return argv


def fill(argv: list[str], values: dict[str, str]) -> list[str]:
    out = []
    for a in argv:
        for k, v in values.items():
            a = a.replace("{" + k + "}", v)
        out.append(a)
    return out


# --------------------------------------------------------------------------------------------- seeds


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["COLUMNS"] = "100"
    env["TASKBENCH_CACHE"] = str(work / "cache")
    env.pop("TASKBENCH_MODEL", None)
    return env


def _taskbench(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "taskbench", *argv], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"seed command failed: taskbench {' '.join(argv)}: {proc.stderr[-2000:]}")


def prepare(work: Path) -> dict[str, str]:
    """The inputs every case may use, made once with the mock model."""
    from taskbench import bundled

    env = _env(work)
    seeds = work / "seeds"
    seeds.mkdir(parents=True)
    graph = bundled.path("multimedia") / "graph_desc.json"
    _taskbench(["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "4", "-q", "-o", str(seeds / "p.jsonl")],
               env, seeds)
    _taskbench(["evaluate", "-d", "multimedia", "-p", str(seeds / "p.jsonl"), "--bootstrap", "0", "-o",
                str(seeds / "m.json")], env, seeds)
    _taskbench(["generate", "--graph", str(graph), "-m", "mock/echo", "--n", "3", "-q", "-o", str(seeds / "gen")],
               env, seeds)
    for name in ("run_a", "run_b"):
        _taskbench(["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m", "mock/echo",
                    "--limit", "2", "-q", "--bootstrap", "0", "-o", str(seeds / name)], env, seeds)
    task = json.loads((seeds / "run_a" / "episodes.jsonl").read_text().splitlines()[0]).get("task", "x")
    (seeds / "empty").mkdir()
    (seeds / "code.py").write_text("result = sum(range(10))\nprint('hello')\n")
    (seeds / "nonutf8.txt").write_bytes(b"\xff\xfe\x00not text\n")
    (seeds / "dir").mkdir()
    return {"preds": str(seeds / "p.jsonl"), "metrics": str(seeds / "m.json"), "gen": str(seeds / "gen"),
            "run_a": str(seeds / "run_a"), "run_b": str(seeds / "run_b"), "task": str(task),
            "graph": str(graph), "empty": str(seeds / "empty"), "code": str(seeds / "code.py"),
            "nonutf8": str(seeds / "nonutf8.txt"), "dir": str(seeds / "dir")}


# --------------------------------------------------------------------------------------------- one case


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.setsid()


def run_case(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[str, int | None, str]:
    """(outcome, exit code, stderr); outcome: ok, hang, traceback, memory, bad-exit or messy-error."""
    proc = subprocess.Popen([sys.executable, "-m", "taskbench", *argv], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_limits)
    try:
        _, err_b = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err_b = proc.communicate()
        return "hang", None, err_b.decode("utf-8", "replace")
    err = err_b.decode("utf-8", "replace")
    code = proc.returncode
    if "MemoryError" in err or "Cannot allocate memory" in err:
        return "memory", code, err
    if "Traceback (most recent call last)" in err:
        return "traceback", code, err
    allowed = (0, 1, 2, 4) if argv[:2] == ["sandbox", "run"] else (0, 1, 2)
    if code not in allowed:
        return "bad-exit", code, err
    if code == 2:
        lines = [x for x in err.strip().splitlines() if x.strip()]
        if not lines or not lines[-1].startswith("taskbench: error: "):
            return "messy-error", code, err
    return "ok", code, err


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def leftovers(case: Path) -> list[str]:
    return [f"temporary file left: {p.relative_to(case)}" for p in case.rglob("*")
            if p.is_file() and p.name.endswith(".tmp") and p.name.startswith(".")]


def fuzz(seconds: float, seed: int, findings: Path | None = None, timeout: float = 60.0,
         only: list[str] | None = None, max_cases: int | None = None) -> dict[str, Any]:
    """Run cases until ``seconds`` have passed (or ``max_cases``); returns counts and findings."""
    rng = random.Random(seed)
    names = sorted(n for n in COMMANDS if not only or n in only)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    found: list[dict[str, Any]] = []
    start = time.monotonic()
    dev_before = sorted(os.listdir("/dev")) if os.path.isdir("/dev") else []
    with tempfile.TemporaryDirectory(prefix="taskbench-fuzz-options-") as tmp:
        work = Path(tmp)
        values = prepare(work)
        env = _env(work)
        params = {n: parameters(COMMANDS[n]) for n in names}
        n = 0
        while time.monotonic() - start < seconds and (max_cases is None or n < max_cases):
            n += 1
            name = rng.choice(names)
            case = work / f"case{n}"
            case.mkdir()
            foreign = case / "settings.json"
            foreign.write_bytes(b'{"mine": true,\n "keep": "this"}')
            fifo = case / "fifo"
            os.mkfifo(fifo)
            filled = {**values, "case": str(case), "foreign": str(foreign), "fifo": str(fifo)}
            words, kinds = params[name]
            argv = fill(mutate(COMMANDS[name], words, kinds, rng), filled)
            before = _digest(foreign)
            outcome, code, err = run_case(argv, env, case, timeout)
            if outcome == "hang":  # a loaded machine's slow case is not a hang: once more, 3x the time
                outcome, code, err = run_case(argv, env, case, 3 * timeout)
                counts[name]["slow (re-run)"] += 1
            problems = leftovers(case)
            if code == 2 and _digest(foreign) != before:
                problems.append("someone else's file was changed by a command that refused")
            if dev_before and sorted(os.listdir("/dev")) != dev_before:
                problems.append(f"/dev changed: {sorted(set(os.listdir('/dev')) ^ set(dev_before))}")
                dev_before = sorted(os.listdir("/dev"))
            if outcome == "ok" and problems:
                outcome = "half-write"
            counts[name][outcome if outcome != "ok" else f"exit {code}"] += 1
            if outcome != "ok":
                item = {"case": n, "command": name, "outcome": outcome, "exit": code, "argv": argv,
                        "stderr": err[-3000:], "problems": problems}
                found.append(item)
                if findings is not None:
                    findings.mkdir(parents=True, exist_ok=True)
                    (findings / f"case{n}.json").write_text(json.dumps(item, indent=2), encoding="utf-8")
            shutil.rmtree(case, ignore_errors=True)
    return {"cases": n, "seconds": round(time.monotonic() - start, 1), "seed": seed,
            "counts": {k: dict(v) for k, v in sorted(counts.items())}, "findings": found}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=300.0, help="Stop starting cases after this long.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="Seconds a case may take before it is a hang.")
    ap.add_argument("--findings", type=Path, default=None, help="Write each finding here as JSON.")
    ap.add_argument("--only", action="append", help="Only this command (repeatable), e.g. 'agents compare'.")
    ap.add_argument("--max-cases", type=int, default=None)
    args = ap.parse_args()
    result = fuzz(args.seconds, args.seed, args.findings, args.timeout, args.only, args.max_cases)
    print(f"{result['cases']} cases in {result['seconds']} s (seed {result['seed']})")
    for name, c in result["counts"].items():
        print(f"  {name:22} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    for f in result["findings"]:
        last = f["stderr"].strip().splitlines()[-1:] if f["stderr"].strip() else [""]
        shown = " ".join(repr(a) if (not a or " " in a or len(a) > 60) else a for a in f["argv"])[:400]
        print(f"FINDING case {f['case']} {f['command']}: {f['outcome']} (exit {f['exit']}): {shown}\n"
              f"    {last[0][:300]} {f['problems'][:2]}")
    return 1 if result["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
