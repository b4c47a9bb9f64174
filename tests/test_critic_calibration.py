"""Critics scored on a calibration set (issue 26, point 2): human-verified samples and copies of them broken
the way the embedded 0.5B model's requests were; the checklist critic's computed verdict; the request checks
the calibration set showed missing (a file name alone, a description of several sentences copied whole)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from taskbench import bundled
from taskbench.dataset.layout import load_dataset
from taskbench.engine.calibration import FAULTS, break_request, calibration_set, critic_agreement
from taskbench.engine.checklist import checklist_messages, checklist_schema, checklist_verdict
from taskbench.engine.critics import check_request, rule_verdict
from taskbench.schema import Sample, TaskNode


@pytest.fixture(scope="module")
def mm():  # the bundled multimedia domain: 30 samples, every one passes the rule critic
    return load_dataset(bundled.path("multimedia"))


def _chain(ds):
    return next(s for s in ds.samples if s.id == "36814012")  # Video Downloader -> Video-to-Audio


def test_each_good_sample_is_followed_by_one_broken_copy_with_balanced_faults(mm) -> None:
    items = calibration_set(mm.samples, mm.library, seed=0)
    good = [it for it in items if it.good]
    bad = [it for it in items if not it.good]
    assert len(good) == 30 and len(bad) == 30
    assert [it.source for it in items] == [s.id for s in mm.samples for _ in (0, 1)]
    assert all(it.sample.id == f"{it.source}~{it.fault}" and it.fault in FAULTS for it in bad)
    assert all(it.sample.user_request != next(s for s in mm.samples if s.id == it.source).user_request for it in bad)
    counts = Counter(it.fault for it in bad)
    assert len(counts) >= 5
    # the fault dealt is the least used one that applies: no kind runs far ahead of another that applies as often
    assert max(counts.values()) - min(counts.values()) <= 6, counts
    assert calibration_set(mm.samples, mm.library, seed=0) == items  # seeded
    assert [it.fault for it in calibration_set(mm.samples, mm.library, seed=1)] != [it.fault for it in items]


def test_each_fault_breaks_the_request_as_named(mm) -> None:
    rng = random.Random(0)
    chain = _chain(mm)
    one = break_request(chain, "one_step", mm.library, mm.samples, rng)
    assert one is not None and one.user_request == "Download the video from https://example.com/videos/concert.mp4."
    assert one.task_nodes == chain.task_nodes  # the graph is left as it was
    names = break_request(chain, "tool_names", mm.library, mm.samples, rng)
    assert names is not None and names.user_request == "Video Downloader, Video-to-Audio."
    desc = break_request(chain, "tool_description", mm.library, mm.samples, rng)
    assert desc is not None and desc.user_request == mm.library.get("Video Downloader").desc
    other = break_request(chain, "other_request", mm.library, mm.samples, rng)
    source = next(s for s in mm.samples if s.user_request == other.user_request)
    assert not set(source.tool_names) & set(chain.tool_names)
    assert break_request(chain, "file_name", mm.library, mm.samples, rng) is None  # no example.* file here
    single = Sample(id="9", user_request="Please caption example.jpg for me.", type="single", n_tools=1,
                    task_steps=["Step 1: caption the image"],
                    task_nodes=[TaskNode(task="Image-to-Text", arguments=["example.jpg"])])
    assert break_request(single, "one_step", mm.library, mm.samples, rng) is None
    assert break_request(single, "file_name", mm.library, mm.samples, rng).user_request == "example.jpg"
    kind = break_request(single, "wrong_file_kind", mm.library, mm.samples, rng)
    assert kind.user_request == "Please caption example.wav for me." and kind.task_nodes[0].arguments == ["example.wav"]
    with pytest.raises(ValueError, match="unknown fault"):
        break_request(single, "typo", mm.library, mm.samples, rng)


def test_agreement_and_kappa_against_the_labels(mm) -> None:
    items = calibration_set(mm.samples[:10], mm.library)
    truth = [it.good for it in items]
    perfect = critic_agreement("oracle", items, truth)
    assert (perfect.agreement, perfect.kappa, perfect.good_passed, perfect.bad_rejected) == (1.0, 1.0, 10, 10)
    yes = critic_agreement("yes-man", items, [True] * len(items))
    assert yes.agreement == 0.5 and yes.kappa == 0.0 and yes.bad_rejected == 0  # passing everything is no critic
    flipped = critic_agreement("contrarian", items, [not t for t in truth])
    assert flipped.kappa == -1.0
    # no verdict is a rejection: a critic cannot raise its score by failing to answer on what it would get wrong
    silent = critic_agreement("silent", items, [None if not t else t for t in truth])
    assert silent.no_verdict == 10 and silent.n == 20 and silent.bad_rejected == 10 and silent.kappa == 1.0
    dodger = critic_agreement("dodger", items, [None if t else True for t in truth])
    assert dodger.good_passed == 0 and dodger.bad_rejected == 0 and dodger.agreement == 0.0
    assert yes.balanced_accuracy == 0.5 and perfect.balanced_accuracy == 1.0
    assert sum(n for _, n in perfect.rejected_by_fault.values()) == 10
    with pytest.raises(ValueError):
        critic_agreement("short", items, truth[:-1])


def _answer(*words: str) -> dict:
    return {"steps": [{"step": i + 1, "words": w} for i, w in enumerate(words)]}


def test_the_checklist_verdict_is_computed_from_what_the_model_pointed_at(mm) -> None:
    chain = _chain(mm)
    ok = _answer("Download the video at https://example.com/videos/concert.mp4", "extract its sound track")
    assert checklist_verdict(chain, ok, mm.library).passed
    # a step the request does not ask for
    v = checklist_verdict(chain, _answer("Download the video", ""), mm.library)
    assert not v.passed and v.reasons == ["step 2 (Video-to-Audio): no words of the request ask for it"]
    # words the request does not hold: invented
    v = checklist_verdict(chain, _answer("Download the video", "extract the audio"), mm.library)
    assert not v.passed and "is not in the request" in v.reasons[0]
    # a file name or one word asks for nothing
    assert not checklist_verdict(chain, _answer("Download the video", "track"), mm.library).passed
    # words of the request that are not about the step
    v = checklist_verdict(chain, _answer("Download the video", "Download the video"), mm.library)
    assert not v.passed and "is not about the step" in v.reasons[0]
    assert not checklist_verdict(chain, None, mm.library).passed
    assert not checklist_verdict(chain.model_copy(update={"task_nodes": []}), {"steps": []}, mm.library).passed
    # words of any script: a request in Chinese is folded, not emptied
    zh = chain.model_copy(update={"user_request": "请下载 https://example.com/videos/concert.mp4 的视频并提取音轨"})
    v = checklist_verdict(zh, _answer("请下载 https://example.com/videos/concert.mp4", "提取音轨"), mm.library)
    assert v.reasons[0].startswith("step 1 (Video Downloader): '请下载") and "not about the step" in v.reasons[0]
    assert not checklist_verdict(chain, {"steps": "yes"}, mm.library).passed


@pytest.mark.parametrize("domain", ["multimedia", "huggingface", "dailylifeapis"])
def test_copying_the_request_for_every_step_rarely_passes_a_request_that_does_not_ask_for_the_graph(domain) -> None:
    """The cheapest way for the critic's model to game the checklist, copying the whole request for every step,
    fails on at least 9 in 10 of the requests that ask for another graph (another sample's request, the first
    step only). What passes is a request on the same kind of thing ("photo" for a tool that fetches a picture):
    words alone cannot tell those apart. The same copying passes most good samples, so the checklist adds
    nothing against a model that copies: its value is in the model's pointing, measured in
    benchmarks/bench_critics.py."""
    ds = load_dataset(bundled.path(domain))
    items = calibration_set(ds.samples, ds.library, seed=0)
    semantic = [it for it in items if it.fault in ("other_request", "one_step")]
    passed = [it.sample.id for it in semantic
              if checklist_verdict(it.sample, _answer(*[it.sample.user_request] * len(it.sample.task_nodes)),
                                   ds.library).passed]
    assert len(semantic) >= 10 and len(passed) <= len(semantic) // 10, passed


def test_the_checklist_prompt_and_schema(mm) -> None:
    chain = _chain(mm)
    (msg,) = checklist_messages(chain, mm.library)
    text = msg["content"]
    assert chain.user_request in text and "\n1. Video Downloader\n2. Video-to-Audio\n" in text
    # only the request holds sentences: shown the task steps, the 0.5B model copied them instead of the request
    # (30 of 37 steps; docs/generate.md)
    assert "Step 2" not in text and mm.library.get("Video-to-Audio").desc not in text
    schema = checklist_schema(2)
    steps = schema["properties"]["steps"]
    assert (steps["minItems"], steps["maxItems"]) == (2, 2) and schema["additionalProperties"] is False


@pytest.mark.parametrize("request_text,flagged", [
    ("example.jpg", True),
    ("example.wav and example.jpg", True),
    ("  'example.mp4'  ", True),
    ("Please caption example.jpg", False),
    ("Transcribe example.wav.", False),
    ("...", False),  # no file, no word: not this check's (the MCP walkthrough's tiny model writes it)
    ("请为 example.jpg 生成描述", False),  # words of another script count
])
def test_a_request_that_is_only_a_file_name_is_refused(mm, request_text, flagged) -> None:
    codes = [i.code for i in check_request(request_text, mm.library)]
    assert ("request_is_file_name" in codes) is flagged, codes


def test_a_description_of_several_sentences_copied_whole_is_refused() -> None:
    hf = load_dataset(bundled.path("huggingface"))
    tool = next(t for t in hf.library.tools if t.desc.count(". ") >= 1 and len(t.desc) > 60)
    codes = [i.code for i in check_request(tool.desc, hf.library)]
    assert codes == ["request_is_tool_description"]


def test_no_bundled_sample_is_rejected_by_the_new_request_checks() -> None:
    for domain in ("multimedia", "huggingface", "dailylifeapis"):
        ds = load_dataset(bundled.path(domain))
        bad = [s.id for s in ds.samples if not rule_verdict(s, ds.library, ds.graph).passed]
        assert bad == [], (domain, bad)
