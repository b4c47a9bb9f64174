"""Fuzz the taskbench command line with mutated real files: no traceback, no hang, exit 0/1/2 only, nothing
half-written.

Seeds are real files: a bundled dataset (data.json, tool_desc.json, graph_desc.json, user_requests.json,
alignment_ids.json), the reference copies in ../shared/reference when present, and a predictions file, a
metrics file and a run log made at the start with the mock model. Each case copies the seed dataset, mutates
one file (a JSON value swapped for a hostile one: a huge integer, deep nesting, a lone surrogate, a wrong
type, a removed key; or bytes: truncation, a flipped byte, invalid UTF-8, a BOM, an empty or binary file),
runs one command on it in a subprocess with a timeout, and checks:

- the exit code is 0, 1 or 2 (never a crash code), and a 2 ends in one ``taskbench: error:`` line;
- stderr holds no ``Traceback``;
- the command ended before the timeout (a case over it runs once more with three times the timeout, so that
  a loaded machine's slow case is not called a hang);
- no temporary file (``.NAME.*.tmp``) is left, and every JSON file the command wrote parses.

Usage (bounded by time; seeded, so a run is reproducible up to timing)::

    flock /work/heavy.lock python benchmarks/fuzz_cli.py --seconds 300 --seed 1 --findings /tmp/fuzz

prints counts per command and one line per finding, and writes each finding's input and stderr under
``--findings``. Exit code 1 when anything was found.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATASET_FILES = ("data.json", "tool_desc.json", "graph_desc.json", "user_requests.json", "alignment_ids.json")


class Raw(str):
    """JSON text spliced in as it is (json.dumps cannot write these values)."""


HOSTILE: list[Any] = [
    Raw("9" * 4400), Raw("[" * 3000 + "]" * 3000), Raw("{\"a\":" * 900 + "1" + "}" * 900), "\ud800", "", " ",
    None, True, -1, 0, 2**70, 1e308, -1e308, [], {}, [[]], {"": None}, "<node-99>", "<node-1>", "[/x]",
    "[bold]x", "x" * 20000, "\x00", "\u2028", ["a", 1, None], {"id": {"x": 1}}, "../../etc/passwd",
]


def dump(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dump(v) for v in value) + "]"
    return json.dumps(value)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in list(value.items())[:50]:
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:20]):
            out += _paths(v, (*prefix, i))
    return out


def mutate_value(value: Any, rng: random.Random) -> Any:
    """One structural mutation of a parsed JSON value: a node replaced by a hostile value, or a key removed."""
    paths = _paths(value)
    path = rng.choice(paths)
    if not path:
        return rng.choice(HOSTILE)
    parent = value
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if isinstance(parent, dict) and rng.random() < 0.25:
        del parent[last]
    else:
        parent[last] = rng.choice(HOSTILE)
    return value


def mutate_text(text: str, name: str, rng: random.Random) -> bytes:
    """A mutated copy of a JSON or JSON Lines file's text."""
    roll = rng.random()
    raw = text.encode("utf-8")
    if roll < 0.08:
        return raw[: rng.randrange(max(1, len(raw)))]  # truncated
    if roll < 0.13 and raw:
        i = rng.randrange(len(raw))
        return raw[:i] + bytes([rng.randrange(256)]) + raw[i + 1:]  # a flipped byte
    if roll < 0.16:
        return b"\xef\xbb\xbf" + raw  # a BOM
    if roll < 0.18:
        return b"\xff\xfe\x00garbage" + raw[:100]  # not UTF-8
    if roll < 0.20:
        return b"" if rng.random() < 0.5 else os.urandom(64)
    lines = [line for line in text.splitlines() if line.strip()]
    jsonl = name == "data.json" or name.endswith(".jsonl") or (len(lines) > 1 and all(_is_json(x) for x in lines[:3]))
    if jsonl and lines:
        i = rng.randrange(len(lines))
        try:
            lines[i] = dump(mutate_value(json.loads(lines[i]), rng))
        except ValueError:
            lines[i] = "{not json"
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    try:
        doc = json.loads(text)
    except ValueError:
        return raw[::-1]
    return dump(mutate_value(doc, rng)).encode("utf-8", "surrogatepass")


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------------------------- the commands

Case = Callable[[Path, Path, dict[str, Path]], tuple[list[str], Path | None]]
"""(dataset dir, output dir, other seed files) -> (argv after `taskbench`, the file to mutate)."""


def _commands() -> dict[str, Case]:
    return {
        "data check": lambda d, o, s: (["data", "check", str(d)], None),
        "evaluate": lambda d, o, s: (["evaluate", "-d", str(d), "-p", str(s["predictions"]), "--bootstrap", "0",
                                      "-o", str(o / "m.json")], None),
        "evaluate --compat": lambda d, o, s: (["evaluate", "-d", str(d), "-p", str(s["predictions"]), "--compat",
                                               "-o", str(o / "c.json")], None),
        "evaluate (predictions)": lambda d, o, s: (["evaluate", "-d", str(d), "-p", str(s["predictions"]),
                                                    "--bootstrap", "0", "-o", str(o / "m.json")], s["predictions"]),
        "graph build": lambda d, o, s: (["graph", "build", str(d / "tool_desc.json"), "-o", str(o / "g.json")],
                                        d / "tool_desc.json"),
        "graph stats": lambda d, o, s: (["graph", "stats", str(d / "graph_desc.json")], d / "graph_desc.json"),
        "sample": lambda d, o, s: (["sample", str(d / "graph_desc.json"), "-n", "5", "-o", str(o / "plan.jsonl")],
                                   d / "graph_desc.json"),
        "predict": lambda d, o, s: (["predict", "-d", str(d), "-m", "mock/echo", "--limit", "3", "-o",
                                     str(o / "p.jsonl"), "-q"], None),
        "generate": lambda d, o, s: (["generate", "--graph", str(d / "graph_desc.json"), "-m", "mock/echo", "--n",
                                      "2", "-o", str(o / "gen"), "-q"], d / "graph_desc.json"),
        "generate --tools": lambda d, o, s: (["generate", "--tools", str(d / "tool_desc.json"), "-m", "mock/echo",
                                              "--n", "2", "-o", str(o / "gen"), "-q"], d / "tool_desc.json"),
        "data judge": lambda d, o, s: (["data", "judge", str(d), "-m", "mock/echo", "--limit", "2", "-q"],
                                       d / "data.json"),
        "run": lambda d, o, s: (["run", "-m", "mock/echo", "-d", str(d), "--limit", "2", "--generate", "0",
                                 "--agents", "", "--bootstrap", "0", "-o", str(o / "run"), "-q"], None),
        "leaderboard": lambda d, o, s: (["leaderboard", str(s["metrics"]), "-o", str(o / "board.json")],
                                        s["metrics"]),
    }


def _prepare(work: Path, seed_dataset: Path) -> dict[str, Path]:
    """The seed files made once with the mock model: predictions and a metrics file."""
    env = _env()
    preds = work / "seed" / "preds.jsonl"
    metrics = work / "seed" / "metrics.json"
    preds.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "taskbench", "predict", "-d", str(seed_dataset), "-m", "mock/echo",
                    "--limit", "6", "-o", str(preds), "-q"], check=True, capture_output=True, env=env, timeout=300)
    subprocess.run([sys.executable, "-m", "taskbench", "evaluate", "-d", str(seed_dataset), "-p", str(preds),
                    "--bootstrap", "0", "-o", str(metrics)], check=False, capture_output=True, env=env, timeout=300)
    return {"predictions": preds, "metrics": metrics}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["COLUMNS"] = "100"
    env.setdefault("TASKBENCH_CACHE", tempfile.mkdtemp(prefix="taskbench-fuzz-cache-"))
    return env


def check_outputs(*dirs: Path) -> list[str]:
    """Half-writes: temporary files left behind, or JSON files that do not parse."""
    problems = []
    for d in dirs:
        if not d.exists():
            continue
        for p in d.rglob("*"):
            if not p.is_file():
                continue
            if p.name.startswith(".") and p.name.endswith(".tmp"):
                problems.append(f"temporary file left: {p}")
            elif p.suffix in (".json", ".jsonl") and p.stat().st_size:
                why = _unreadable(p)
                if why:
                    problems.append(f"unreadable output {p}: {why}")
    return problems


def _unreadable(path: Path) -> str | None:
    """Why a written JSON or JSON Lines file does not parse (the reference layout's data.json, data_raw.json and
    data_error.json are JSON Lines), or None."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return str(exc)
    try:
        json.loads(text)
        return None
    except ValueError:
        pass
    for i, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 inside a string is no line end
        if line.strip():
            try:
                json.loads(line)
            except ValueError as exc:
                return f"line {i}: {exc}"
    return None if text.endswith("\n") else "no newline at the end (a torn last line)"


def run_case(argv: list[str], timeout: float, env: dict[str, str]) -> tuple[str, int | None, str]:
    """(outcome, exit code, stderr): outcome is ok, hang, traceback, bad-exit or messy-error."""
    try:
        proc = subprocess.run([sys.executable, "-m", "taskbench", *argv], capture_output=True, timeout=timeout,
                              env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        return "hang", None, (exc.stderr or b"").decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if "Traceback (most recent call last)" in err:
        return "traceback", proc.returncode, err
    if proc.returncode not in (0, 1, 2):
        return "bad-exit", proc.returncode, err
    if proc.returncode == 2:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        if not last.startswith("taskbench: error: "):
            return "messy-error", 2, err
    return "ok", proc.returncode, err


def fuzz(seconds: float, seed: int, findings: Path | None, timeout: float = 30.0,
         only: list[str] | None = None, max_cases: int | None = None) -> dict[str, Any]:
    """Run cases until ``seconds`` have passed (or ``max_cases``); returns the counts and the findings."""
    from taskbench import bundled

    rng = random.Random(seed)
    env = _env()
    commands = _commands()
    if only:
        commands = {k: v for k, v in commands.items() if k in only}
    sources = [bundled.path("multimedia"), bundled.path("huggingface")]
    ref = ROOT.parent / "shared" / "reference" / "taskbench"
    sources += [p for p in (ref / "dailylifeapis", ref / "huggingface") if (p / "tool_desc.json").is_file()]
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    found: list[dict[str, Any]] = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="taskbench-fuzz-") as tmp:
        work = Path(tmp)
        seeds = _prepare(work, bundled.path("multimedia"))
        n = 0
        while time.monotonic() - start < seconds and (max_cases is None or n < max_cases):
            n += 1
            name = rng.choice(sorted(commands))
            case = work / f"case{n}"
            d, o = case / "ds", case / "out"
            src = rng.choice(sources)
            shutil.copytree(src, d, ignore=shutil.ignore_patterns("__pycache__", "*.py", "README*"))
            if not (d / "data.json").exists() and (d / "gold_sample.jsonl").exists():
                (d / "gold_sample.jsonl").rename(d / "data.json")
            o.mkdir(parents=True)
            others = {k: case / v.name for k, v in seeds.items()}
            for k, v in seeds.items():
                shutil.copy(v, others[k])
            argv, target = commands[name](d, o, others)
            if target is None:
                target = d / rng.choice([f for f in DATASET_FILES if (d / f).exists()])
            target.write_bytes(mutate_text(target.read_text(encoding="utf-8"), target.name, rng))
            outcome, code, err = run_case(argv, timeout, env)
            if outcome == "hang":  # on a loaded machine a slow case is not a hang: once more, 3x the time
                outcome, code, err = run_case(argv, 3 * timeout, env)
                counts[name]["slow (re-run)"] += 1
            half = check_outputs(o) if outcome == "ok" else []
            if half:
                outcome = "half-write"
            counts[name][outcome if outcome != "ok" else f"exit {code}"] += 1
            if outcome != "ok":
                item = {"case": n, "command": name, "outcome": outcome, "exit": code, "argv": argv,
                        "mutated": str(target), "stderr": err[-3000:], "half": half}
                found.append(item)
                if findings is not None:
                    dest = findings / f"case{n}"
                    dest.mkdir(parents=True, exist_ok=True)
                    shutil.copy(target, dest / target.name)
                    (dest / "finding.json").write_text(json.dumps(item, indent=2), encoding="utf-8")
            shutil.rmtree(case, ignore_errors=True)
    return {"cases": n, "seconds": round(time.monotonic() - start, 1), "seed": seed,
            "counts": {k: dict(v) for k, v in sorted(counts.items())}, "findings": found}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="Stop starting cases after this long.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30.0, help="Seconds a case may take before it is a hang.")
    ap.add_argument("--findings", type=Path, default=None, help="Write each finding's input and stderr here.")
    ap.add_argument("--only", action="append", help="Only this command (repeatable), e.g. 'graph build'.")
    args = ap.parse_args()
    result = fuzz(args.seconds, args.seed, args.findings, args.timeout, args.only)
    print(f"{result['cases']} cases in {result['seconds']} s (seed {result['seed']})")
    for name, c in result["counts"].items():
        print(f"  {name:24} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    for f in result["findings"]:
        last = f["stderr"].strip().splitlines()[-1:] if f["stderr"].strip() else [""]
        print(f"FINDING case {f['case']} {f['command']}: {f['outcome']} (exit {f['exit']}) {f['mutated']}: "
              f"{last[0][:200]} {f['half'][:2]}")
    return 1 if result["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
