"""Without torch, BERTScore raises MissingDependencyError with the exact pip line (runs everywhere)."""

from __future__ import annotations

import pytest


def test_missing_dependency_message(monkeypatch):
    import builtins

    from taskbench.errors import MissingDependencyError
    from taskbench.eval import bertscore

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "torch":
            raise ImportError("no torch")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(MissingDependencyError, match=r'pip install "taskbench\[bertscore\]"'):
        bertscore.BertScorer("whatever")
