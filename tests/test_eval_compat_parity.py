"""Compat mode reproduces the reference evaluator's output on the parity fixtures in ../shared/parity.

For every domain and prediction file: every key of every group within 1e-9 (supports as exact ints, the
per-tool tables too), the same key order, and the same ignored ids (and exception texts) as the log.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from taskbench.eval.compat import evaluate_compat
from taskbench.graph.loaders import load_tool_library

CASES = [
    (domain, dep, k)
    for domain, dep in (
        ("huggingface", "resource"),
        ("multimedia", "resource"),
        ("dailylifeapis", "temporal"),
    )
    for k in (1, 2)
]
TOL = 1e-9


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _diff(got: Any, want: Any, path: str, out: list[str]) -> None:
    if isinstance(want, dict):
        if not isinstance(got, dict) or list(got) != list(want):
            out.append(f"{path}: keys {list(got) if isinstance(got, dict) else got!r} != {list(want)}")
            return
        for key in want:
            _diff(got[key], want[key], f"{path}/{key}", out)
    elif isinstance(want, int):
        if type(got) is not int or got != want:
            out.append(f"{path}: {got!r} != {want!r} (int)")
    elif not isinstance(got, float) or abs(got - want) > TOL:
        out.append(f"{path}: {got!r} != {want!r}")


def _max_abs_diff(got: Any, want: Any) -> float:
    if isinstance(want, dict):
        return max((_max_abs_diff(got[k], want[k]) for k in want), default=0.0)
    return abs(got - want)


@pytest.mark.parametrize(("domain", "dependency", "k"), CASES, ids=[f"{d}-{k}" for d, _, k in CASES])
def test_compat_reproduces_reference(parity_dir: Path, domain: str, dependency: str, k: int) -> None:
    root = parity_dir / domain
    library = load_tool_library(root / "tool_desc.json", dependency)
    gold = _read_jsonl(root / "data.json")
    preds = _read_jsonl(root / "predictions" / f"perturbed_{k}.json")
    want = json.loads((root / "metrics" / f"perturbed_{k}.json").read_text())

    result = evaluate_compat(
        gold,
        preds,
        library,
        splits=("all",),
        n_tools=("all",),
        mode="add",
        metrics=("f1", "ed", "link", "argument", "rouge"),
        dependency=dependency,
    )

    problems: list[str] = []
    _diff(result.metrics, want, "", problems)
    assert not problems, "\n".join(problems[:20])
    assert _max_abs_diff(result.metrics, want) <= TOL

    log_text = (root / "metrics" / f"perturbed_{k}.log").read_text()
    want_errors = {
        (m.group(2), m.group(1)) for m in re.finditer(r"Parsing Error: (.*), Ignore #id (\S+)", log_text)
    }
    got_errors = {
        (m.group(2), m.group(1))
        for line in result.log
        if (m := re.match(r"Parsing Error: (.*), Ignore #id (\S+)$", line))
    }
    assert {str(i) for i in result.ignored_ids} == {i for i, _ in want_errors}
    if sys.version_info < (3, 11):  # the fixtures were made on 3.11+, whose TypeError texts say a bit more
        want_errors = {(i, e.replace(", not 'str'", "")) for i, e in want_errors}
    assert got_errors == want_errors
