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


def _cycles(src: Path) -> tuple[list[tuple[str, str]], list[list[str]]]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "tools" / "import_cycles.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    edges, _ = tool.scan(src, "taskbench")
    pairs = sorted({tuple(sorted((a, b))) for a, bs in edges.items() for b in bs if a in edges.get(b, set())})
    return pairs, tool.cycles(edges)


def test_no_module_cycle_even_through_function_level_imports(tmp_path: Path) -> None:
    # the contracts see only package-to-package layers; a cycle between two modules (through an import inside a
    # function, which hides it at load time) is found by tools/import_cycles.py, on the source
    pairs, groups = _cycles(ROOT / "src")
    assert pairs == [] and groups == [], (pairs, groups)
    shutil.copytree(ROOT / "src" / "taskbench", tmp_path / "taskbench",
                    ignore=shutil.ignore_patterns("__pycache__", "bundled", "templates", "prompts", "data"))
    db = tmp_path / "taskbench" / "envs" / "restbench" / "tmdb_db.py"
    db.write_text(db.read_text() + "\n\ndef _back() -> None:\n    from .tmdb import TMDB  # noqa\n")
    pairs, _ = _cycles(tmp_path)
    assert ("taskbench.envs.restbench.tmdb", "taskbench.envs.restbench.tmdb_db") in pairs
