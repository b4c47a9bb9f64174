"""The layer order of the package (pyproject's [tool.importlinter] contracts) holds: `lint-imports` keeps every
contract, and a wrong-direction import added to a copy of the tree breaks it (so the check can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e '.[dev]')")


def _lint(root: Path, src: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_import_contracts_are_kept() -> None:
    proc = _lint(ROOT, ROOT / "src")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_a_wrong_direction_import_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "src" / "taskbench", tmp_path / "src" / "taskbench",
                    ignore=shutil.ignore_patterns("__pycache__", "bundled", "templates", "prompts", "data"))
    judge = tmp_path / "src" / "taskbench" / "engine" / "judge.py"
    judge.write_text(judge.read_text() + "\n\ndef _slug() -> None:\n    from ..run.job import model_slug  # noqa\n")
    proc = _lint(tmp_path, tmp_path / "src")
    assert proc.returncode != 0 and "taskbench.engine.judge -> taskbench.run.job" in proc.stdout, proc.stdout
