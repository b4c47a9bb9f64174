"""Shared test fixtures.

- ``shared``: the ../shared directory (seeds, reference data, parity fixtures); tests that need it skip with a
  reason when it is absent (set TASKBENCH_SHARED to point elsewhere).
- Nothing here reaches the internet: tests use loopback servers and local files only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TASKBENCH_SHARED", ROOT.parent / "shared"))
REFERENCE = SHARED / "reference" / "taskbench"
PARITY = SHARED / "parity"
DOMAINS = ("huggingface", "multimedia", "dailylifeapis")

# Never let a test reach a hosted model hub or API by accident.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.pop("OPENAI_API_KEY", None)


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"../shared is absent ({SHARED}); reference-data tests skipped")
    return SHARED


@pytest.fixture(scope="session")
def reference_dir(shared: Path) -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"{REFERENCE} is absent")
    return REFERENCE


@pytest.fixture(scope="session")
def parity_dir(shared: Path) -> Path:
    if not PARITY.is_dir():
        pytest.skip(f"{PARITY} is absent")
    return PARITY


@pytest.fixture(autouse=True)
def _mock_scripts_are_used_up():
    """A scripted mock model with unused steps fails the test that made it (the script said more would happen)."""
    from taskbench.llm.providers.mock import forget_scripts, unfinished_scripts

    forget_scripts()
    yield
    left = unfinished_scripts()
    forget_scripts()
    if left:
        pytest.fail("unused mock script steps: " + "; ".join(left))
