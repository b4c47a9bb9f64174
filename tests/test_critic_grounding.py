"""The rule critic's grounding check: a file an argument uses must be named in the user request (the
prompts' rule 1, "self-contained"). Guided generation fixes the structure, so this is what is left to catch a
sample such as the embedded 0.5B model's "Open a video file." with example.mp4 as the first argument."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskbench import bundled
from taskbench.dataset.layout import load_dataset
from taskbench.engine.critics import ISSUE_CODES, check_sample
from taskbench.schema import Sample, TaskNode

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "taskbench"


def _sample(request: str, *args: str) -> Sample:
    return Sample(id="1", user_request=request, type="single", n_tools=1,
                  task_steps=["Step 1: transcribe"], task_nodes=[TaskNode(task="Video-to-Text", arguments=list(args))])


def test_a_file_argument_missing_from_the_request_is_an_issue() -> None:
    library = load_dataset(bundled.path("multimedia")).library
    codes = [i.code for i in check_sample(_sample("Open a video file.", "example.mp4"), library, sampled=False)]
    assert codes == ["file_not_in_request"]
    assert "file_not_in_request" in ISSUE_CODES
    ok = _sample("Please transcribe what is said in 'Example.MP4'.", "example.mp4")
    assert check_sample(ok, library, sampled=False) == []
    free_text = _sample("Transcribe my clip example.mp4", "example.mp4")
    assert check_sample(free_text, library, sampled=False) == []


@pytest.mark.parametrize("domain", ["multimedia", "huggingface", "dailylifeapis"])
def test_no_released_gold_sample_or_bundled_sample_is_rejected_by_it(domain) -> None:
    dirs = [Path(bundled.path(domain))] + ([SHARED / domain] if (SHARED / domain).is_dir() else [])
    for d in dirs:
        ds = load_dataset(d)
        flagged = [s.id for s in ds.samples
                   if any(i.code in ("file_not_in_request", "request_is_tool_description")
                          for i in check_sample(s, ds.library, sampled=False))]
        assert flagged == [], (str(d), flagged[:5], json.dumps([s.user_request for s in ds.samples[:1]]))
