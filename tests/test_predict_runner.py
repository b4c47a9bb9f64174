"""The prediction runner with the scripted mock provider: resume, ordering, failures, caching, display."""

from __future__ import annotations

import asyncio
import io
import json
import random
from pathlib import Path

import pytest

from taskbench.bundled import path as bundled_path
from taskbench.dataset.layout import load_dataset
from taskbench.errors import ConfigError, ModelError
from taskbench.llm import get_model
from taskbench.predict.runner import (
    PredictOptions,
    predict_dataset,
    select_samples,
)
from taskbench.records import exclusive

GOOD = '{"task_steps": ["do it"], "task_nodes": [{"task": "%s", "arguments": ["x"]}]}'


@pytest.fixture(scope="module")
def hf():
    return load_dataset(bundled_path("huggingface"))


def _model(tmp_path: Path, **kw):
    kw.setdefault("cache", tmp_path / "cache.sqlite")
    return get_model("mock/scripted", **kw)


def _run(model, ds, out, **opts):
    async def go():
        try:
            return await predict_dataset(model, ds.library, ds.samples, out, PredictOptions(**opts),
                                         requests=ds.requests, dataset_name="huggingface")
        finally:
            await model.aclose()

    return asyncio.run(go())


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_select_samples_is_stratified_and_keeps_dataset_order(hf) -> None:
    got = select_samples(hf.samples, 7)
    kinds = [s.type for s in got]
    assert kinds.count("single") == 3 and kinds.count("chain") == 2 and kinds.count("dag") == 2
    order = [s.id for s in hf.samples]
    assert [s.id for s in got] == sorted((s.id for s in got), key=order.index)
    assert select_samples(hf.samples, None) == list(hf.samples)


def test_records_are_reference_format_plus_our_keys(tmp_path, hf) -> None:
    out = tmp_path / "p.jsonl"
    summary = _run(_model(tmp_path, responses=lambda r: GOOD % "Image Classification"), hf, out, limit=4,
                   structured=False)
    recs = _lines(out)
    assert summary.written == 4 and len(recs) == 4
    for rec in recs:
        assert list(rec)[:3] == ["id", "user_request", "result"]
        assert rec["result"]["task_nodes"][0]["task"] == "Image Classification"
        assert rec["raw"] and rec["model"] == "mock/scripted" and rec["finish_reason"] == "stop"
        # usage: what producing the answer cost; no run-dependent cache/retry flags
        assert set(rec["usage"]) == {"prompt_tokens", "completion_tokens", "seconds"}
        assert rec["user_request"] == hf.request_for(rec["id"])


def test_resume_skips_done_ids_and_repairs_a_torn_tail(tmp_path, hf) -> None:
    full = tmp_path / "full.jsonl"
    _run(_model(tmp_path, responses=lambda r: GOOD % "Image Classification"), hf, full, limit=6)
    part = tmp_path / "part.jsonl"
    lines = full.read_bytes().splitlines(keepends=True)
    part.write_bytes(b"".join(lines[:2]) + lines[2][:25])  # two records and a torn third
    calls: list[str] = []

    def answer(req):
        calls.append(req.messages[-1]["content"])
        return GOOD % "Image Classification"

    summary = _run(_model(tmp_path, responses=answer), hf, part, limit=6)
    assert summary.skipped == 2 and summary.written == 4
    assert summary.cache_hits == 4 and calls == []  # the same cache answered, no request was sent
    assert part.read_bytes() == full.read_bytes()  # byte for byte, latency replayed from the cache
    again = _run(_model(tmp_path), hf, part, limit=6)
    assert again.written == 0 and again.skipped == 6


def test_concurrent_completions_are_written_in_dataset_order(tmp_path, hf) -> None:
    rng = random.Random(1)
    in_flight = {"now": 0, "max": 0}

    async def answer(req):
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        await asyncio.sleep(rng.uniform(0, 0.03))
        in_flight["now"] -= 1
        return GOOD % "Image Classification"

    out = tmp_path / "p.jsonl"
    _run(_model(tmp_path, responses=answer, cache=False), hf, out, concurrency=8)
    assert in_flight["max"] > 1
    assert [r["id"] for r in _lines(out)] == [s.id for s in hf.samples]


def test_failed_call_is_written_in_place_and_the_next_run_retries_it(tmp_path, hf) -> None:
    first = hf.samples[0].id

    def answer(req):
        if req.messages[-1]["content"].endswith(hf.request_for(first) + "\nNow give your result as one strict "
                                                 "JSON object.\n# RESULT #:"):
            raise ModelError("mock: permanent failure")
        return GOOD % "Image Classification"

    out = tmp_path / "p.jsonl"
    summary = _run(_model(tmp_path, responses=answer, cache=False), hf, out, limit=5)
    assert summary.failures == 1 and summary.written == 5 and not summary.complete
    assert first in summary.errors[0]
    lines = _lines(out)
    assert lines[0]["id"] == first and lines[0]["failed"] is True and "permanent failure" in lines[0]["error"]
    assert lines[0]["result"] is None
    summary = _run(_model(tmp_path, responses=lambda r: GOOD % "Image Classification", cache=False), hf, out,
                   limit=5)
    assert summary.written == 1 and summary.retried == 1 and summary.complete
    again = _lines(out)
    assert [r["id"] for r in again] == [r["id"] for r in lines]  # rewritten in dataset order, one record per id
    assert "failed" not in again[0] and again[1:] == lines[1:]


def test_unparseable_answers_are_written_with_error_and_raw(tmp_path, hf) -> None:
    out = tmp_path / "p.jsonl"
    summary = _run(_model(tmp_path, responses=lambda r: "I am not sure.", cache=False), hf, out, limit=3,
                   structured=False)
    assert summary.parse_failures == 3
    for rec in _lines(out):
        assert rec["result"] is None and rec["raw"] == "I am not sure." and "no JSON object" in rec["error"]


def test_free_mode_reformat_repairs_with_a_second_call(tmp_path, hf) -> None:
    def answer(req):
        content = req.messages[-1]["content"]
        if "# STRICT JSON FORMAT #" in content:
            return GOOD % "Text-to-Speech"
        return "task_nodes: Text-to-Speech (sorry, no JSON)"

    out = tmp_path / "p.jsonl"
    summary = _run(_model(tmp_path, responses=answer, cache=False), hf, out, limit=2, structured=False,
                   reformat=True)
    assert summary.reformatted == 2 and summary.parse_failures == 0
    for rec in _lines(out):
        assert rec["result"]["task_nodes"][0]["task"] == "Text-to-Speech"
        assert rec["raw"].startswith("task_nodes:") and rec["reformat_raw"].startswith("{")


def test_structured_mode_sends_the_library_schema(tmp_path, hf) -> None:
    seen = []

    def answer(req):
        seen.append(req.json_schema)
        return GOOD % hf.library.names[0]

    _run(_model(tmp_path, responses=answer, cache=False), hf, tmp_path / "p.jsonl", limit=1, plan=False)
    enum = seen[0]["properties"]["task_nodes"]["items"]["properties"]["task"]["enum"]
    assert enum == hf.library.names


def test_structured_mode_sends_the_plan_schema_by_default(tmp_path, hf) -> None:
    seen = []

    def answer(req):
        seen.append(req)
        return json.dumps({"steps": [{"step": "Speak it", "tool": "Text-to-Speech", "arguments": {"text": "hi"}}]})

    out = tmp_path / "p.jsonl"
    _run(_model(tmp_path, responses=answer, cache=False), hf, out, limit=1)
    first = seen[0].json_schema["properties"]["steps"]["prefixItems"][0]["anyOf"]
    assert [alt["properties"]["tool"]["const"] for alt in first] == hf.library.names
    assert '"steps"' in seen[0].messages[-1]["content"]  # the plan prompt, not the reference shape
    (rec,) = _lines(out)
    assert rec["result"] == {
        "task_steps": ["Step 1: Speak it"],
        "task_nodes": [{"task": "Text-to-Speech", "arguments": ["hi"]}],
        "task_links": [],
    }


def test_a_truncated_answer_is_recorded_as_a_failure_not_repaired(tmp_path, hf) -> None:
    from taskbench.llm.base import ProviderResponse

    # distinct steps cut off mid-document, as max_tokens leaves them (a loop of one step is cut where it starts
    # instead: tests/test_plan_repeats.py)
    looping = '{"steps": [' + ", ".join(
        [f'{{"step": "Speak part {i}", "tool": "Text-to-Speech", "arguments": {{"text": "hi"}}}}' for i in range(30)]
    )
    out = tmp_path / "p.jsonl"
    summary = _run(_model(tmp_path, responses=lambda req: ProviderResponse(looping, 10, 400, "length"),
                          cache=False), hf, out, limit=1)
    (rec,) = _lines(out)
    assert rec["finish_reason"] == "length" and rec["result"] is None
    assert "token limit" in rec["error"] and rec["raw"] == looping
    assert summary.parse_failures == 1


def test_retrieved_demos_and_a_shortlist_reach_the_request(tmp_path, hf) -> None:
    seen = []

    def answer(req):
        seen.append(req)
        return json.dumps({"steps": [{"step": "x", "tool": "Text-to-Speech", "arguments": {"text": "hi"}}]})

    _run(_model(tmp_path, responses=answer, cache=False), hf, tmp_path / "p.jsonl", limit=3, shots=2,
         demo_selection="retrieved", shortlist=3)
    by_request = {s.user_request: s for s in hf.samples}
    for req in seen:
        prompt = req.messages[-1]["content"]
        own = prompt.rsplit("# USER REQUEST #: ", 1)[1].split("\n", 1)[0]
        sample = by_request[own]
        shown = [line.split(": ", 1)[1] for line in prompt.splitlines() if line.startswith("# USER REQUEST #: ")]
        assert len(shown) == 3 and own not in shown[:2]  # two demos, neither the sample itself
        tools = {alt["properties"]["tool"]["const"]
                 for alt in req.json_schema["properties"]["steps"]["prefixItems"][0]["anyOf"]}
        demo_tools = {t for s in hf.samples if s.user_request in shown[:2] for t in s.tool_names}
        assert 3 <= len(tools) <= 3 + len(demo_tools) and demo_tools <= tools
        assert sample.id  # the sample was found by its request


def test_demos_exclude_the_sample_itself(tmp_path, hf) -> None:
    from taskbench.predict.demos import demo_candidates

    cands = demo_candidates(hf.samples, hf.library, name="huggingface")
    prompts: dict[str, str] = {}

    def answer(req):
        return GOOD % "Image Classification"

    model = _model(tmp_path, responses=answer, cache=False)
    _run(model, hf, tmp_path / "p.jsonl", shots=2, demo_selection="fixed")
    for req in model.provider.requests:
        text = req.messages[-1]["content"]
        request = text.rsplit("# USER REQUEST #: ", 1)[1].split("\n")[0]
        prompts[request] = text
    demo = cands[0]
    own = prompts[hf.request_for(demo.id)]
    assert own.count("# EXAMPLE #:") == 2
    assert f"# USER REQUEST #: {demo.user_request}\n# RESULT #: {{" not in own  # not its own example
    other = prompts[hf.request_for(cands[3].id)]
    assert f"# USER REQUEST #: {demo.user_request}\n# RESULT #:" in other


def test_another_model_in_the_file_is_refused(tmp_path, hf) -> None:
    out = tmp_path / "p.jsonl"
    out.write_text(json.dumps({"id": hf.samples[0].id, "result": None, "model": "other/model"}) + "\n")
    with pytest.raises(ConfigError, match="other/model"):
        _run(_model(tmp_path, cache=False), hf, out, limit=2)


def test_a_second_writer_is_refused(tmp_path, hf) -> None:
    out = tmp_path / "p.jsonl"
    with exclusive(out), pytest.raises(ConfigError, match="another taskbench process"):
        _run(_model(tmp_path, cache=False), hf, out, limit=1)


def test_rich_display_shows_progress_and_summary(tmp_path, hf) -> None:
    from rich.console import Console

    from taskbench.predict.progress import RichPredictDisplay, summary_table

    buf = io.StringIO()
    console = Console(file=buf, width=160, force_terminal=False)
    display = RichPredictDisplay(console)
    model = _model(tmp_path, responses=lambda r: "nope", cache=False)

    async def go():
        try:
            return await predict_dataset(model, hf.library, hf.samples, tmp_path / "p.jsonl",
                                         PredictOptions(limit=3, structured=False), dataset_name="hf",
                                         display=display)
        finally:
            await model.aclose()

    with display:
        summary = asyncio.run(go())
    console.print(summary_table(display.summaries))
    text = buf.getvalue()
    assert "mock/scripted · hf" in text and "3/3" in text and "3 failed" in text
    assert display.summaries == [summary]
