"""Repeated steps in a task plan (issue 26, point 4): the loop a small model falls into inside the bounded
plan (the same step again until max_steps) is dropped when the plan becomes a result, references follow."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from taskbench.bundled import path as bundled_path
from taskbench.dataset.layout import load_dataset
from taskbench.llm import get_model
from taskbench.llm.base import GenerationConfig, ProviderResponse, first_repeat
from taskbench.predict.parse import make_prediction
from taskbench.predict.plan import REPEATED_STEP, argument_keys, drop_repeated_steps, plan_to_result
from taskbench.predict.runner import PredictOptions, predict_dataset


@pytest.fixture(scope="module")
def hf():
    return load_dataset(bundled_path("huggingface"))


def _step(words, tool, **arguments):
    return {"step": words, "tool": tool, "arguments": arguments}


def test_a_looping_plan_keeps_each_step_once_and_its_references_follow() -> None:
    loop = {"steps": [
        _step("Denoise example.wav", "Audio Noise Reduction", audio="example.wav"),
        _step("Transcribe the audio", "Audio-to-Text", audio="<node-0>"),
        _step("Transcribe the audio", "Audio-to-Text", audio="<node-0>"),     # identical
        _step("Step 4: transcribe  THE audio", "Audio-to-Text", audio="<node-2>"),  # same text, ref to a copy
        _step("Summarise it", "Text Summarizer", text="<node-3>"),           # refers to a dropped copy
    ]}
    result = plan_to_result(loop)
    assert [n["task"] for n in result["task_nodes"]] == ["Audio Noise Reduction", "Audio-to-Text", "Text Summarizer"]
    assert result["task_nodes"][2]["arguments"] == ["<node-1>"]
    assert result["task_links"] == [{"source": "Audio Noise Reduction", "target": "Audio-to-Text"},
                                    {"source": "Audio-to-Text", "target": "Text Summarizer"}]
    assert result["task_steps"][2] == "Step 3: Summarise it"
    assert drop_repeated_steps(loop)[1] == 2


def test_the_same_tool_with_other_work_is_not_a_repeat() -> None:
    plan = {"steps": [_step("Translate the greeting to French", "Text Translator", text="hello"),
                      _step("Translate the farewell to French", "Text Translator", text="goodbye")]}
    assert drop_repeated_steps(plan)[1] == 0
    assert len(plan_to_result(plan)["task_nodes"]) == 2


def test_temporal_after_lists_are_renumbered_and_stay_backward() -> None:
    plan = {"steps": [
        {"step": "Find flights", "tool": "search_flights", "arguments": {"to": "Paris"}, "after": []},
        {"step": "Find flights", "tool": "search_flights", "arguments": {"to": "Paris"}, "after": ["<node-0>"]},
        {"step": "Book one", "tool": "book_flight", "arguments": {"id": "1"}, "after": ["<node-1>", "<node-0>"]},
    ]}
    result = plan_to_result(plan)
    assert [n["task"] for n in result["task_nodes"]] == ["search_flights", "book_flight"]
    assert result["task_links"] == [{"source": "search_flights", "target": "book_flight"}]


def test_a_prediction_from_a_looping_answer_has_no_repeated_node() -> None:
    looping = {"steps": [_step("Enhance example.jpg", "Image Enhancement", image="example.jpg")]
               + [_step("Enhance the image", "Image Enhancement", image=f"<node-{i}>") for i in range(9)]}
    pred = make_prediction("1", user_request="r", raw="{}", model="m", usage=None, parsed=looping)
    assert pred.result is not None
    names = [n["task"] for n in pred.result["task_nodes"]]
    assert names == ["Image Enhancement", "Image Enhancement"]  # the first call and one enhance-the-result


# ---- stopping the loop where it starts (GenerationConfig.stop_repeat): a loop costs one turn, not the budget


def _loop_text(turns: int) -> str:
    """A plan answer that loops on its second step and is cut off mid-step, as at the token limit."""
    first = json.dumps(_step("Denoise example.wav", "Audio Noise Reduction", audio="example.wav"))
    again = json.dumps(_step("Transcribe the audio", "Audio-to-Text", audio="<node-0>"))
    return '{"steps": [' + ", ".join([first] + [again] * turns) + ', {"step": "Transcribe the'


def test_first_repeat_finds_the_loops_first_turn_and_folds_case_spacing_and_the_step_prefix() -> None:
    text = _loop_text(4)
    cut = first_repeat(REPEATED_STEP, text)
    assert cut is not None
    assert text[:cut].count('"tool"') == 2  # both distinct steps kept, the loop's second turn cut
    folded = text.replace('"Transcribe the audio", "tool"', '"Step 3:  TRANSCRIBE the audio", "tool"', 2)
    assert folded[: first_repeat(REPEATED_STEP, folded)].count('"tool"') == 2
    # the same words under another tool, or another text for the same tool, are no repeat
    assert first_repeat(REPEATED_STEP, _loop_text(1)) is None
    other = _loop_text(2).replace('"Audio-to-Text"', '"Text-to-Audio"', 1)
    assert first_repeat(REPEATED_STEP, other) is None
    assert first_repeat(r'"(tick)"', '["tick", "tock"]') is None


def test_a_looping_answer_from_any_backend_is_cut_parsed_and_counted(hf, tmp_path: Path) -> None:
    """The Model wrapper cuts what a backend without the decoding stop returns (here a scripted loop that hit the
    token limit): the prediction keeps the steps before the loop instead of failing as truncated."""
    first = hf.library.tools[0]
    tool = first.id
    step = json.dumps(_step("Do it", tool, **{k: "x" for k, _ in argument_keys(first, "resource")}))
    looped = '{"steps": [' + ", ".join([step] * 6) + ", {"
    answer = ProviderResponse(looped, prompt_tokens=10, completion_tokens=64, finish_reason="length")
    model = get_model("mock/loop", responses=lambda request: answer, cache=None)
    sample = hf.samples[0]

    async def go():
        try:
            return await predict_dataset(model, hf.library, [sample], tmp_path / "p.jsonl",
                                         PredictOptions(max_tokens=64), dataset_name="huggingface")
        finally:
            await model.aclose()

    summary = asyncio.run(go())
    record = json.loads((tmp_path / "p.jsonl").read_text())
    assert record["finish_reason"] == "repeat" and record.get("error") is None, record
    assert [n["task"] for n in record["result"]["task_nodes"]] == [tool]
    assert summary.repeat_stops == 1 and summary.parse_failures == 0
    # without the plan (the reference graph shape) nothing is cut: the loop stays a token-limit failure
    model = get_model("mock/loop", responses=lambda request: answer, cache=None)

    async def graph():
        try:
            return await predict_dataset(model, hf.library, [sample], tmp_path / "g.jsonl",
                                         PredictOptions(max_tokens=64, plan=False), dataset_name="huggingface")
        finally:
            await model.aclose()

    assert asyncio.run(graph()).repeat_stops == 0
    assert json.loads((tmp_path / "g.jsonl").read_text())["finish_reason"] == "length"


def test_stop_repeat_is_in_the_cache_key_only_when_set() -> None:
    assert "stop_repeat" not in GenerationConfig().as_dict()
    assert GenerationConfig(stop_repeat=REPEATED_STEP).as_dict()["stop_repeat"] == REPEATED_STEP
