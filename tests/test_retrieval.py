"""Demo retrieval (never the sample itself or a near duplicate), tool shortlists and their recall."""

from __future__ import annotations

import pytest

from taskbench import bundled
from taskbench.dataset.layout import load_dataset
from taskbench.predict.context import RequestContext
from taskbench.predict.retrieval import DemoRetriever, ToolShortlist, shortlist_recall, tokens
from taskbench.predict.runner import PredictOptions
from taskbench.schema import Sample


@pytest.fixture(scope="module")
def mm():
    return load_dataset(bundled.path("multimedia"))


def _sample(sid: str, request: str, tools=("Audio Noise Reduction",)) -> Sample:
    return Sample(id=sid, user_request=request, task_nodes=[{"task": t, "arguments": []} for t in tools])


def test_tokens_split_file_names_and_drop_stop_words() -> None:
    assert tokens("Please clean up example.wav and get_weather for me") == [
        "clean", "example", "wav", "get", "weather"
    ]


def test_retrieval_never_returns_the_sample_itself_or_a_near_duplicate() -> None:
    pool = [
        _sample("1", "Remove the background hum from my podcast recording example.wav"),
        _sample("2", "Remove the background hum from my podcast recording example.wav!"),  # near duplicate
        _sample("3", "Please remove the background hum from my podcast recording, example.wav"),
        _sample("4", "Translate this French sentence into English", ("Text Translator",)),
        _sample("5", "Remove background noise from the interview audio example.wav"),
    ]
    retriever = DemoRetriever(pool)
    got = retriever.retrieve("1", pool[0].user_request, 3)
    ids = [s.id for s in got]
    assert "1" not in ids and "2" not in ids and "3" not in ids  # itself and two near duplicates
    assert ids[0] == "5" and len(ids) == 2  # the similar one first; only 2 others are left
    # an unseen request (no id in the pool) still skips pool entries that duplicate it
    assert [s.id for s in retriever.retrieve(None, pool[3].user_request, 1)] != ["4"]
    assert retriever.retrieve("1", "anything", 0) == []


def test_retrieval_on_a_real_dataset_is_deterministic_and_excludes_self(mm) -> None:
    retriever = DemoRetriever(mm.samples)
    for s in mm.samples:
        demos = retriever.retrieve(s.id, s.user_request, 3)
        assert len(demos) == 3 and all(d.id != s.id for d in demos)
        assert all(not retriever.is_near_duplicate(d.user_request, s.user_request) for d in demos)
        assert [d.id for d in demos] == [d.id for d in retriever.retrieve(s.id, s.user_request, 3)]


def test_shortlist_ranks_the_obvious_tool_first_and_adds_demo_tools(mm) -> None:
    sl = ToolShortlist(mm.library)
    assert sl.rank("Reduce the noise in my recording example.wav")[0] == "Audio Noise Reduction"
    short = sl.shortlist("Reduce the noise in my recording example.wav", 3, also=["Image Stitcher", "nope"])
    assert "Audio Noise Reduction" in short and "Image Stitcher" in short and "nope" not in short
    assert len(short) == 4 and short == [n for n in mm.library.names if n in short]  # library order


def test_shortlist_recall_counts_distinct_gold_tools() -> None:
    rec = shortlist_recall([
        (["A", "B", "A"], ["A", "C"]),  # A kept (once), B lost
        (["C"], ["C", "D"]),  # complete
        ([], ["A"]),  # nothing to keep: complete
    ])
    assert (rec.kept, rec.gold, rec.samples_complete, rec.samples) == (2, 3, 2, 3)
    assert rec.recall == pytest.approx(2 / 3) and rec.complete_rate == pytest.approx(2 / 3)
    assert shortlist_recall([]).recall == 1.0


def test_request_context_combines_demos_and_shortlist(mm) -> None:
    options = PredictOptions(shots=2, demo_selection="retrieved", shortlist=5)
    ctx = RequestContext(mm.library, mm.samples, options, dataset_name="multimedia")
    s = mm.samples[3]
    demos, schema = ctx.for_sample(s.id, s.user_request)
    assert len(demos) == 2 and s.id not in {d.id for d in demos}
    tools = {a["properties"]["tool"]["const"] for a in schema["properties"]["steps"]["prefixItems"][0]["anyOf"]}
    assert {t for d in demos for t in d.tool_names} <= tools and len(tools) <= 5 + 2 * 6
    fixed = RequestContext(mm.library, mm.samples, PredictOptions(shots=2, demo_selection="fixed"),
                           dataset_name="multimedia")
    from taskbench.predict.demos import demo_candidates

    first = [d.id for d in demo_candidates(mm.samples, mm.library, name="multimedia")]
    assert [d.id for d in fixed.demos("x", "y")] == first[:2]  # the fixed choice
    assert [d.id for d in fixed.demos(first[0], "y")] == first[1:3]  # never the sample itself
    assert fixed.schema() is fixed.schema()  # built once
