"""The option fuzzer (benchmarks/fuzz_options.py) and what it found (issue 43: the commands added since the
last fuzzer, and the options of the older ones).

Found by the fuzzer (seeds 1 and 2, 478 cases) and fixed, each a regression case here: a path with a newline
made a two-line error; an endless input (``/dev/zero``, ``/dev/full``) ran out of memory and a FIFO hung
``generate``; a 5,000-character name was an ``OSError`` traceback in ``leaderboard``, ``graph edit`` and
``agents export-sft``; ``agents export-sft -o FILE`` a ``FileExistsError``; ``agents distill --lr 0`` and
``sandbox run --cpu -1e308`` pydantic tracebacks. Then a few seeded cases per command, each in a child
process with a memory limit: exit 0/1/2 only, one ``taskbench: error:`` line, no traceback, no hang, no
temporary file, nothing changed in someone else's file or in ``/dev``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = int(os.environ.get("TASKBENCH_FUZZ_OPTION_CASES", "40"))
"""Seeded cases in all (TASKBENCH_FUZZ_OPTION_CASES to change it)."""


def _driver() -> Any:
    spec = importlib.util.spec_from_file_location("fuzz_options", ROOT / "benchmarks" / "fuzz_options.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FUZZ = _driver()


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    return FUZZ._env(tmp_path)


def _check(argv: list[str], env: dict[str, str], cwd: Path, says: str) -> None:
    outcome, code, err = FUZZ.run_case(argv, env, cwd, 120.0)
    assert outcome == "ok" and code == 2, (outcome, code, err[-2000:])
    last = err.strip().splitlines()[-1]
    assert says in last, err[-2000:]


def test_an_error_about_a_name_with_a_newline_is_one_line(tmp_path, env):
    _check(["sandbox", "run", "a\nb", "--json"], env, tmp_path, "a\\nb")
    _check(["agents", "plot", "x\x1b]52;c;aGk=\x07y", "-o", "p.png"], env, tmp_path, "\\x1b")


@pytest.mark.parametrize("argv", [
    ["compare", "-d", "multimedia", "/dev/full", "/dev/zero"],
    ["evaluate", "-d", "multimedia", "-p", "/dev/zero"],
    ["graph", "build", "/dev/zero", "-o", "g.json"],
    ["sandbox", "run", "/dev/zero"],
    ["generate", "--graph", "{fifo}", "-m", "mock/echo", "--n", "1", "-o", "gen"],
    ["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m", "mock/echo", "--tasks", "{fifo}",
     "-o", "a"],
    ["predict", "-d", "multimedia", "-m", "mock/echo", "--template", "{fifo}", "-o", "p.jsonl"],
], ids=["compare-dev", "evaluate-dev-zero", "graph-build-dev-zero", "sandbox-dev-zero", "generate-fifo",
        "agents-tasks-fifo", "predict-template-fifo"])
def test_an_endless_input_is_refused_not_read(argv, tmp_path, env):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _check([a.replace("{fifo}", str(fifo)) for a in argv], env, tmp_path, "not a regular file")


@pytest.mark.parametrize("argv", [
    ["leaderboard", "{long}", "-o", "b.md"],
    ["graph", "edit", "{long}", "--drop", "A -> B"],
    ["agents", "export-sft", "{long}", "-o", "sft"],
], ids=["leaderboard", "graph-edit", "export-sft"])
def test_a_name_too_long_is_one_line(argv, tmp_path, env):
    _check([a.replace("{long}", "n" * 5000) for a in argv], env, tmp_path, "File name too long")


def test_options_the_flags_let_through_are_one_line(tmp_path, env):
    (tmp_path / "code.py").write_text("result = 1\n")
    (tmp_path / "settings.json").write_text("{}\n")
    _check(["agents", "distill", "--role", "grounding", "--data", str(tmp_path), "-o", "ad", "--lr", "0"], env,
           tmp_path, "--lr")
    _check(["sandbox", "run", "code.py", "--cpu", "-1e308"], env, tmp_path, "--cpu")
    _check(["agents", "export-sft", str(tmp_path), "-o", "settings.json"], env, tmp_path, "must be a directory")
    assert (tmp_path / "settings.json").read_text() == "{}\n"


def test_seeded_cases_over_every_command(tmp_path):
    """CASES seeded cases over the commands (deterministic for the seed up to timing)."""
    result = FUZZ.fuzz(seconds=3600, seed=43, timeout=120.0, max_cases=CASES)
    assert result["cases"] == CASES
    assert result["findings"] == [], "\n".join(
        f"{f['command']}: {f['outcome']} (exit {f['exit']}) {f['argv']}: {f['stderr'][-800:]} {f['problems']}"
        for f in result["findings"])


def test_the_fuzzer_sees_every_option_of_a_command():
    words, params = FUZZ.parameters(["agents", "compare", "a", "b"])
    names = {n for n, _ in params}
    assert words == 2 and {"--agent-a", "--agent-b", "--output", "--bootstrap"} <= names
    assert [k for n, k in params if n is None] == ["path", "path"]
    assert dict(p for p in FUZZ.parameters(["predict"])[1] if p[0])["--concurrency"] == "int"
    assert sys.executable  # the cases run with this interpreter
