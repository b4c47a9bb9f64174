"""`taskbench generate` control flow with scripted mock models: methods, critics, output layout, resume without
over-generation, refusals, failed calls, truncation, the progress display, and that the result loads in
`predict` and `evaluate` unchanged."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from cli_runner import run
from engine_oracle import Oracle, edge_pairs, prompt_of
from taskbench import bundled
from taskbench.dataset import load_dataset, read_jsonl
from taskbench.engine.generate import GenerateOptions, entry_seed, generate, sample_id
from taskbench.engine.progress import RichGenerateDisplay
from taskbench.errors import ConfigError
from taskbench.graph.build import graph_from_path
from taskbench.llm import get_model
from taskbench.llm.base import ProviderResponse


@pytest.fixture(scope="module")
def mm():
    return graph_from_path(bundled.path("multimedia"))


@pytest.fixture(scope="module")
def daily():
    return graph_from_path(bundled.path("dailylifeapis"))


def _model(responses, **kw):
    return get_model("mock/oracle", responses=responses, cache=False, max_retries=0, **kw)


def test_back_instruct_perfect_answers_pass_both_critics_and_fill_the_layout(tmp_path, mm):
    oracle = Oracle()
    out = tmp_path / "gen"
    summary = generate(mm, _model(oracle), out, GenerateOptions(n=12, seed=3))
    assert summary.complete and summary.written == 12 and len(oracle.calls) == 12
    for name in ("data_raw.json", "data.json", "user_requests.json", "data_error.json", "tool_desc.json",
                 "graph_desc.json", "statistics.json", "header.json"):
        assert (out / name).is_file(), name
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["rule_critic"] == {"passed": 12, "rate": 1.0}
    assert stats["llm_critic"]["passed"] == 12 and stats["both_critics"]["passed"] == 12 and stats["kept"] == 12
    assert sum(g["planned"] for g in stats["by_mode"].values()) == 12
    assert sum(g["planned"] for g in stats["by_size"].values()) == 12
    data = read_jsonl(out / "data.json")
    assert [r["id"] for r in data] == [sample_id(i) for i in range(12)]
    first = data[0]
    assert first["method"] == "back-instruct" and first["critics"]["rule"]["passed"] is True
    assert first["critics"]["llm"]["passed"] is True and first["seed"] == entry_seed(3, 0)
    assert first["check_by_teacher"].endswith("Conclusion: Executable: yes, Correct: yes")
    # resource samples: links follow from the <node-j> arguments and equal the sampled links
    for rec in data:
        assert {(lk["source"], lk["target"]) for lk in rec["task_links"]} == \
            {(lk["source"], lk["target"]) for lk in rec["sampled_links"]}
    requests = read_jsonl(out / "user_requests.json")
    assert [r["id"] for r in requests] == [r["id"] for r in data]
    assert read_jsonl(out / "data_error.json") == []


def test_the_result_loads_in_predict_and_evaluate_unchanged(tmp_path, capsys, mm):
    out = tmp_path / "gen"
    generate(mm, _model(Oracle()), out, GenerateOptions(n=6, seed=1))
    code, _, err = run(capsys, "data", "check", str(out), "--strict")
    assert code == 0, err
    preds = tmp_path / "preds.jsonl"
    code, _, err = run(capsys, "predict", "--data", str(out), "--model", "mock/echo", "-o", str(preds), "-q")
    assert code == 0, err
    assert len(read_jsonl(preds)) == 6
    metrics = tmp_path / "m.json"
    code, out_text, err = run(capsys, "evaluate", "--data", str(out), "--predictions", str(preds), "-o", str(metrics))
    assert code == 0, err
    assert metrics.is_file()


def test_rule_critic_catches_a_wrong_edge_and_the_sample_goes_to_errors(tmp_path, daily):
    out = tmp_path / "gen"
    opts = GenerateOptions(n=10, seed=2, mode_weights={"chain": 1})
    generate(daily, _model(Oracle(break_edges=True)), out, opts)
    errors = read_jsonl(out / "data_error.json")
    assert len(errors) == 10 and read_jsonl(out / "data.json") == []
    assert all(any(r.startswith("sampled_links_mismatch") for r in e["reasons"]) for e in errors)
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["rule_critic"]["passed"] == 0 and stats["llm_critic"]["passed"] == 10
    assert stats["reasons"]["sampled_links_mismatch"] == 10
    # --keep llm re-filters the same attempts without a model call
    generate(daily, _model([]), out, opts.model_copy(update={"keep": "llm"}))
    assert len(read_jsonl(out / "data.json")) == 10


def test_teacher_saying_not_correct_fails_the_llm_critic(tmp_path, mm):
    out = tmp_path / "gen"
    generate(mm, _model(Oracle(teacher=False)), out, GenerateOptions(n=4))
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["rule_critic"]["passed"] == 4 and stats["llm_critic"]["passed"] == 0 and stats["kept"] == 0
    errors = read_jsonl(out / "data_error.json")
    assert all(any(r.startswith("not_correct") for r in e["reasons"]) for e in errors)


def test_schema_constrains_tools_arguments_and_lengths(tmp_path, mm):
    seen = []

    def answer(request):
        seen.append(request)
        return Oracle()(request)

    generate(mm, _model(answer), tmp_path / "g", GenerateOptions(n=6, seed=5, mode_weights={"dag": 1}))
    raw = read_jsonl(tmp_path / "g" / "data_raw.json")
    for req, rec in zip(seen, raw, strict=True):
        schema = req.json_schema
        nodes = schema["properties"]["invoking_graph"]["properties"]["nodes"]
        k = rec["n_tools"]
        assert nodes["minItems"] == nodes["maxItems"] == k
        steps = schema["properties"]["task_steps"]
        assert steps["minItems"] == steps["maxItems"] == k
        branches = nodes["items"]["anyOf"]
        assert sorted(b["properties"]["task"]["enum"][0] for b in branches) == sorted(rec["plan"]["nodes"])
        lib = {t.id: t for t in mm.nodes}
        for b in branches:
            tool = lib[b["properties"]["task"]["enum"][0]]
            assert list(b["properties"]["arguments"]["properties"]) == tool.argument_names()
            assert b["properties"]["arguments"]["additionalProperties"] is False
        assert req.config.seed == rec["seed"] and req.config.max_tokens == 2048


def test_strings_are_unbounded_for_openai_strict_schemas(tmp_path, mm):
    seen = []

    def answer(request):
        seen.append(json.dumps(request.json_schema))
        return Oracle()(request)

    model = _model(answer)
    generate(mm, model, tmp_path / "a", GenerateOptions(n=1))
    assert '"maxLength"' in seen[-1]
    # what the openai provider says about itself: its strict mode rejects maxLength
    model.provider.guided_decoding = "response_format"
    model.provider.strict = True
    generate(mm, model, tmp_path / "b", GenerateOptions(n=1))
    assert '"maxLength"' not in seen[-1] and '"maxItems"' in seen[-1]


def test_no_edges_withholds_the_edges_and_self_instruct_offers_the_whole_library(tmp_path, mm):
    prompts = {}

    def answer(request):
        prompts.setdefault("p", prompt_of(request))
        prompts.setdefault("schema", request.json_schema)
        return Oracle()(request)

    generate(mm, _model(answer), tmp_path / "ne", GenerateOptions(n=1, seed=0, method="no-edges",
                                                                   mode_weights={"chain": 1}))
    assert "EDGES" not in prompts["p"] and edge_pairs(prompts["p"]) == []
    links = prompts["schema"]["properties"]["invoking_graph"]
    assert "links" not in links["properties"]  # resource: links come from <node-j> arguments
    prompts.clear()
    out = tmp_path / "si"
    generate(mm, _model(answer), out, GenerateOptions(n=3, seed=0, method="self-instruct",
                                                       mode_weights={"single": 1}))
    branches = prompts["schema"]["properties"]["invoking_graph"]["properties"]["nodes"]["items"]["anyOf"]
    assert len(branches) == len(mm.nodes)
    data = read_jsonl(out / "data.json")
    assert len(data) == 3 and all("sampled_nodes" not in r for r in data)
    assert all(r["critics"]["rule"]["passed"] for r in data)


def test_two_stage_asks_for_the_request_first_then_the_graph(tmp_path, daily):
    oracle = Oracle()
    out = tmp_path / "gen"
    generate(daily, _model(oracle), out, GenerateOptions(n=3, seed=4, method="two-stage"))
    assert oracle.calls == ["UserRequest", "InvocationGraph"] * 3
    raw = read_jsonl(out / "data_raw.json")
    assert all(len(r["stages"]) == 2 for r in raw)
    assert raw[0]["usage"]["completion_tokens"] == sum(s["usage"]["completion_tokens"] for s in raw[0]["stages"])
    data = read_jsonl(out / "data.json")
    assert len(data) == 3 and data[0]["method"] == "two-stage"
    assert data[0]["user_request"].startswith("Please help me with case")


def test_a_separate_critic_model_gives_the_llm_verdict(tmp_path, mm):
    gen_oracle, critic_oracle = Oracle(), Oracle(teacher=False)
    out = tmp_path / "gen"
    generate(mm, _model(gen_oracle), out, GenerateOptions(n=3), critic_model=_model(critic_oracle))
    assert critic_oracle.calls == ["Critic"] * 3
    errors = read_jsonl(out / "data_error.json")
    assert len(errors) == 3
    assert errors[0]["critics"]["llm"]["model"] == "mock/oracle" and errors[0]["critics"]["llm"]["passed"] is False
    assert errors[0]["critics"]["self"]["passed"] is True  # the generator's own check said yes


def test_rerun_generates_only_what_is_missing_and_a_larger_n_extends_the_plan(tmp_path, mm):
    out = tmp_path / "gen"
    first = Oracle()
    generate(mm, _model(first), out, GenerateOptions(n=5, seed=9))
    before = (out / "data_raw.json").read_bytes()
    again = Oracle()
    s = generate(mm, _model(again), out, GenerateOptions(n=5, seed=9))
    assert again.calls == [] and s.skipped == 5 and s.written == 0
    assert (out / "data_raw.json").read_bytes() == before
    more = Oracle()
    s = generate(mm, _model(more), out, GenerateOptions(n=8, seed=9))
    assert len(more.calls) == 3 and s.extended_from == 5
    assert [r["id"] for r in read_jsonl(out / "data_raw.json")] == [sample_id(i) for i in range(8)]
    assert (out / "data_raw.json").read_bytes().startswith(before)
    fresh = tmp_path / "fresh"
    generate(mm, _model(Oracle()), fresh, GenerateOptions(n=8, seed=9))
    strip = [{k: v for k, v in r.items() if k != "usage"} for r in read_jsonl(fresh / "data_raw.json")]
    assert strip == [{k: v for k, v in r.items() if k != "usage"} for r in read_jsonl(out / "data_raw.json")]


@pytest.mark.parametrize("change, word", [({"seed": 10}, "seed"), ({"method": "two-stage"}, "method"),
                                          ({"n": 3}, "would drop"), ({"temperature": 0.1}, "temperature"),
                                          ({"mode_weights": {"chain": 1}}, "mode-weights")])
def test_a_rerun_with_other_arguments_is_refused(tmp_path, mm, change, word):
    out = tmp_path / "gen"
    generate(mm, _model(Oracle()), out, GenerateOptions(n=5, seed=9))
    with pytest.raises(ConfigError, match=word):
        generate(mm, _model([]), out, GenerateOptions(**{"n": 5, "seed": 9, **change}))


def test_another_graph_or_model_is_refused(tmp_path, mm, daily):
    out = tmp_path / "gen"
    generate(mm, _model(Oracle()), out, GenerateOptions(n=2))
    with pytest.raises(ConfigError, match="tool graph"):
        generate(daily, _model([]), out, GenerateOptions(n=2))
    with pytest.raises(ConfigError, match="model"):
        generate(mm, get_model("mock/other", responses=[], cache=False), out, GenerateOptions(n=2))


def test_failed_calls_are_written_in_place_and_retried_by_the_next_run(tmp_path, mm):
    out = tmp_path / "gen"
    failing = get_model("mock/oracle", responses=Oracle(), failures=[500, 500], cache=False, max_retries=0)
    s = generate(mm, failing, out, GenerateOptions(n=5))
    assert s.failed_calls == 2 and not s.complete
    raw = read_jsonl(out / "data_raw.json")
    assert sum(1 for r in raw if r.get("failed")) == 2 and len(raw) == 5
    errors = read_jsonl(out / "data_error.json")
    assert sum(1 for e in errors if e.get("failed")) == 2
    assert all(r.startswith("call_failed") for e in errors if e.get("failed") for r in e["reasons"])
    retry = Oracle()
    s = generate(mm, _model(retry), out, GenerateOptions(n=5))
    assert len(retry.calls) == 2 and s.complete and s.retried == 2
    raw = read_jsonl(out / "data_raw.json")
    assert [r["id"] for r in raw] == [sample_id(i) for i in range(5)] and not any(r.get("failed") for r in raw)
    assert len(read_jsonl(out / "data.json")) == 5


def test_an_answer_cut_at_the_token_limit_is_a_failed_attempt_not_a_sample(tmp_path, mm):
    def cut(request):
        return ProviderResponse('{"task_steps": ["Step 1: a", "Step 1: a", "Step 1: a', 10, 2048, "length")

    out = tmp_path / "gen"
    s = generate(mm, _model(cut), out, GenerateOptions(n=3))
    assert s.complete and s.failed_calls == 0  # the call worked; the answer is unusable
    errors = read_jsonl(out / "data_error.json")
    assert len(errors) == 3 and all(e["error_code"] == "truncated" for e in errors)
    assert all(e["reasons"][0].startswith("truncated:") and e["task_nodes"] == [] for e in errors)
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["attempts"] == 3 and stats["answered"] == 0 and stats["reasons"]["truncated"] == 3


def test_near_duplicate_requests_are_flagged_or_dropped(tmp_path, mm):
    out = tmp_path / "gen"
    same = Oracle(request="Please colour my photo example.jpg and describe it for me.")
    generate(mm, _model(same), out, GenerateOptions(n=4, mode_weights={"single": 1}))
    data = read_jsonl(out / "data.json")
    assert [r.get("duplicate_of") for r in data] == [None, "00000", "00000", "00000"]
    assert data[1]["critics"]["dedup"]["passed"] is False
    generate(mm, _model([]), out, GenerateOptions(n=4, mode_weights={"single": 1}, dedup="drop"))
    assert len(read_jsonl(out / "data.json")) == 1
    errors = read_jsonl(out / "data_error.json")
    assert len(errors) == 3 and all(any(r.startswith("duplicate") for r in e["reasons"]) for e in errors)


def test_keep_both_without_an_llm_critic_is_refused(tmp_path, mm):
    with pytest.raises(ConfigError, match="needs an LLM critic"):
        generate(mm, _model([]), tmp_path / "g", GenerateOptions(n=1, check=False))
    oracle = Oracle()
    generate(mm, _model(oracle), tmp_path / "g", GenerateOptions(n=2, check=False, keep="rule"))
    assert len(read_jsonl(tmp_path / "g" / "data.json")) == 2


def test_progress_shows_pass_rates_on_an_injected_console(tmp_path, mm):
    buf = io.StringIO()
    console = Console(file=buf, width=160, force_terminal=False, get_time=lambda: 0.0)
    display = RichGenerateDisplay(console)
    with display:
        generate(mm, _model(Oracle(break_edges=True)), tmp_path / "g", GenerateOptions(n=4, mode_weights={"chain": 1}),
                 display=display)
    text = buf.getvalue()
    assert "4/4" in text and "rule 0%" in text and "llm 100%" in text and "both 0%" in text


def test_cli_generate_resume_refusal_and_exit_codes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "gen"
    base = ["generate", "--tools", "multimedia", "--out", str(out), "--model", "mock/echo", "-q"]
    code, text, err = run(capsys, *base, "--n", "4", "--max-retries", "0", "-O", "failures=[500]")
    assert code == 1
    assert err.strip().splitlines()[-1].startswith("taskbench: 1 of 4 model calls failed for good")
    assert "rerun the same command" in err
    code, text, err = run(capsys, "generate", "--out", str(out), "-q")  # the directory knows its arguments
    assert code == 0, err
    assert "4 planned: 3 done before, 1 written now" in " ".join(text.split())
    code, _, err = run(capsys, *base, "--n", "4", "--seed", "5")
    assert code == 2 and err.count("\n") == 1 and "seed: was 0, this run 5" in err
    code, text, err = run(capsys, "generate", "--out", str(out), "--n", "6", "-q")
    assert code == 0 and "plan extended from 4" in " ".join(text.split())
    code, _, err = run(capsys, "generate", "--out", str(tmp_path / "new"), "--n", "1", "-q")
    assert code == 2 and "--tools" in err


def test_generate_help_has_an_example(capsys):
    code, out, _ = run(capsys, "generate", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "Example:" in text and "--method" in text and "--critic-model" in text and "--keep" in text


def test_loaded_dataset_sees_raw_and_error_records(tmp_path, mm):
    out = tmp_path / "gen"
    generate(mm, _model(Oracle(break_edges=True)), out, GenerateOptions(n=3, mode_weights={"chain": 1}))
    ds = load_dataset(out)
    assert ds.samples == [] and len(ds.raw_records or []) == 3 and len(ds.error_records or []) == 3
    assert Path(out / "header.json").is_file()


def test_generate_on_an_openapi_spec_then_predict_and_evaluate(tmp_path, capsys, shared):
    graph = graph_from_path(shared / "reference" / "restbench" / "tmdb_oas.json")
    out = tmp_path / "tmdb"
    s = generate(graph, _model(Oracle()), out, GenerateOptions(n=8, seed=1))
    assert s.complete and s.statistics["both_critics"]["passed"] == 8
    data = read_jsonl(out / "data.json")
    tools = {t.id: t for t in graph.nodes}
    for rec in data:  # named arguments of the operation's own parameters, required ones present
        for node in rec["task_nodes"]:
            names = {a["name"] for a in node["arguments"]}
            params = tools[node["task"]].parameters
            assert names <= {p.name for p in params} and {p.name for p in params if p.required} <= names
    preds = tmp_path / "p.jsonl"
    code, _, err = run(capsys, "predict", "--data", str(out), "--model", "mock/echo", "-o", str(preds), "-q")
    assert code == 0, err
    code, _, err = run(capsys, "evaluate", "--data", str(out), "--predictions", str(preds), "-o", str(tmp_path / "m.json"))
    assert code == 0, err
