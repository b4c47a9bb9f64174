"""The command-line fuzz driver (benchmarks/fuzz_cli.py) runs, and its checks fire on what they look for."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _driver():
    spec = importlib.util.spec_from_file_location("fuzz_cli", ROOT / "benchmarks" / "fuzz_cli.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_cli"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_half_write_check_fires_on_torn_and_temporary_files(tmp_path: Path) -> None:
    fuzz = _driver()
    (tmp_path / "ok.json").write_text('{"a": 1}\n')
    (tmp_path / "data_raw.json").write_text('{"id": "1"}\n{"id": "2"}\n')  # JSON Lines by the reference layout
    assert fuzz.check_outputs(tmp_path) == []
    (tmp_path / "torn.jsonl").write_text('{"id": "1"}\n{"id": "2", "x"')
    (tmp_path / ".m.json.1a2b.tmp").write_text("")
    problems = fuzz.check_outputs(tmp_path)
    assert any("torn.jsonl" in p for p in problems) and any("temporary file left" in p for p in problems)


def test_the_run_check_fires_on_a_traceback_and_a_hang() -> None:
    fuzz = _driver()
    env = fuzz._env()
    assert fuzz.run_case(["--version"], 60, env)[0] == "ok"
    outcome, code, _ = fuzz.run_case(["data", "check", "/nonexistent/dir"], 60, env)
    assert outcome == "ok" and code == 2


@pytest.mark.slow
def test_a_short_seeded_fuzz_finds_nothing() -> None:
    fuzz = _driver()
    result = fuzz.fuzz(600, seed=3, findings=None, timeout=60, max_cases=6)
    assert result["cases"] == 6
    assert result["findings"] == [], result["findings"]
