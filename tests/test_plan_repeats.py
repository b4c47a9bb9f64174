"""Repeated steps in a task plan (issue 26, point 4): the loop a small model falls into inside the bounded
plan (the same step again until max_steps) is dropped when the plan becomes a result, references follow."""

from __future__ import annotations

from taskbench.predict.parse import make_prediction
from taskbench.predict.plan import drop_repeated_steps, plan_to_result


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
