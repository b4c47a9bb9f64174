"""SPAN data: the selection rules and their counts, the held-out rule (RestBench is never training data), the
gold teacher's trajectories in the TaskBench multimedia environment, the GGUF LoRA writer and the
``BASE+ADAPTER`` model string."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from taskbench.agents.span import Candidate, build_gold, doc_words, select
from taskbench.errors import ConfigError, InputError
from taskbench.schema import ToolSpec


def _tool(name: str, words: int) -> ToolSpec:
    return ToolSpec(name=name, description=" ".join(["word"] * words), parameters={"type": "object"})


def test_each_selection_rule_removes_and_counts() -> None:
    many = [_tool(f"t{i}", 120) for i in range(10)]
    cands = [
        Candidate("a", "find the weather in Paris tomorrow", "taskbench-x", many, ["t0"]),
        Candidate("b", "something from restbench", "restbench-tmdb", many, ["t0"]),
        Candidate("c", "too few tools offered", "taskbench-x", many[:5], ["t0"]),
        Candidate("d", "a tool that is not there", "taskbench-x", many, ["gone"]),
        Candidate("e", "short docs here", "taskbench-x", [*many[1:], _tool("t0", 5)], ["t0"]),
        Candidate("f", "Find the weather in Paris tomorrow!", "taskbench-x", many, ["t1"]),
        Candidate("g", "book a table for two at noon", "taskbench-x", many, ["t2"]),
    ]
    kept, removed = select(cands)
    assert [c.key for c in kept] == ["a", "g"]
    assert removed == {"held_out_restbench": 1, "fewer_candidate_tools": 1, "unavailable_tool": 1,
                       "short_documentation": 1, "near_duplicate": 1}
    # the documentation counts the tool's name, description, HTTP route and argument schema
    assert doc_words(_tool("x", 3)) == 1 + 3 + 2


def test_restbench_is_refused_as_gold_data(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="held-out"):
        build_gold("restbench-tmdb", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_trainer_refuses_a_restbench_example(tmp_path: Path) -> None:
    from taskbench.distill.data import load_examples

    row = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
           "meta": {"env": "taskbench-multimedia"}}
    held = {**row, "meta": {"env": "restbench-tmdb", "task": "tmdb-001"}}
    (tmp_path / "grounding.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(held) + "\n")
    with pytest.raises(InputError) as err:
        load_examples(tmp_path, "grounding")
    assert str(err.value).startswith(f"{tmp_path / 'grounding.jsonl'}:2: ") and "held-out" in str(err.value)
    (tmp_path / "grounding.jsonl").write_text(json.dumps(row) + "\n")
    assert len(load_examples(tmp_path, "grounding")) == 1


def _sandbox() -> str | None:
    from taskbench.envs.sandbox import sandbox_status

    status = sandbox_status()
    return None if status.available else status.reason


@pytest.mark.skipif(_sandbox() is not None, reason=f"no sandbox: {_sandbox()}")
def test_gold_trajectories_give_executed_steps_checked_code_and_routed_reviews(tmp_path: Path) -> None:
    from taskbench.envs import open_environment

    summary = build_gold("taskbench-multimedia", tmp_path, limit=10, min_doc_words=20, perturb=1.0, seed=3)
    assert summary["played"] == summary["solved"] == 10 and summary["failed"] == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["span"]["removed"]["held_out_restbench"] == 0
    env = open_environment("taskbench-multimedia")
    gold = {t.query: t.gold_path for t in env.tasks()}

    def rows(role: str) -> list[dict]:
        return [json.loads(x) for x in (tmp_path / f"{role}.jsonl").read_text().splitlines()]

    # grounding targets: every kept plan is the next executed gold step (never a perturbed one), or FINISH;
    # FINISH names the plan and the last result, so (in this split) no two targets are the same answer (one
    # fixed FINISH answer was a third of the targets, and a student learnt it); the thought names the step
    targets = []
    for r in rows("grounding"):
        answer = json.loads(r["messages"][-1]["content"])
        action = answer["action"]
        user = r["messages"][-1 - 1]["content"]
        query = user.split("\n", 1)[0].removeprefix("Task: ")
        done = user.split("Steps so far:", 1)[1].count("\n   result: ") if "Steps so far:" in user else 0
        path = gold[query]
        assert action["tool"] == (path[done] if done < len(path) else "FINISH")
        assert answer["thought"] == (f"Step {done + 1}: {path[done]}." if done < len(path)
                                     else f"Steps done: {len(path)}. The task is answered.")
        if done < len(path):
            assert "Feedback on your last plan" in user or all(a["value"] != "unknown" for a in action["arguments"])
        else:
            last = user.rsplit("\n   result: ", 1)[1].split("\n", 1)[0]
            assert action["answer"].endswith(f"The result: {last[:200]}")
        targets.append(r["messages"][-1]["content"])
    assert len(set(targets)) == len(targets)
    # execution targets ran in the sandbox without error (export-sft keeps only those)
    assert rows("execution") and all("```python" in r["messages"][-1]["content"] for r in rows("execution"))
    # review targets: calibrations of perturbed actions, routed to who must fix them
    verdicts = [json.loads(r["messages"][-1]["content"]) for r in rows("review")]
    routes = {(v["verdict"], v["route"]) for v in verdicts if v["verdict"] == "revise"}
    assert routes == {("revise", "grounding"), ("revise", "execution")}
    assert {v["problem"] for v in verdicts} >= {"none", "missing_arguments", "faulty_code"}


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("torch", "gguf", "safetensors")),
                    reason="needs the [distill] extra (torch, gguf)")
def test_gguf_lora_names_layout_and_llama_permutation(tmp_path: Path) -> None:
    import gguf
    import numpy as np
    import torch
    from safetensors.torch import save_file

    from taskbench.distill.gguf_lora import gguf_tensors, permute_rows, write_gguf_lora

    a = torch.arange(2 * 8, dtype=torch.float32).reshape(2, 8)
    b = torch.arange(8 * 2, dtype=torch.float32).reshape(8, 2)
    state = {"base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight": a,
             "base_model.model.model.layers.3.self_attn.q_proj.lora_B.weight": b,
             "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight": b}
    qwen = gguf_tensors(state, model_type="qwen2", n_head=2, n_head_kv=1)
    assert set(qwen) == {"blk.3.attn_q.weight.lora_a", "blk.3.attn_q.weight.lora_b", "blk.0.ffn_down.weight.lora_b"}
    assert np.array_equal(qwen["blk.3.attn_q.weight.lora_b"], b.numpy())
    llama = gguf_tensors(state, model_type="llama", n_head=2, n_head_kv=1)
    assert not np.array_equal(llama["blk.3.attn_q.weight.lora_b"], b.numpy())
    assert np.array_equal(llama["blk.3.attn_q.weight.lora_b"], permute_rows(b.numpy(), 2))
    assert np.array_equal(llama["blk.0.ffn_down.weight.lora_b"], b.numpy())  # only q/k are permuted
    with pytest.raises(ConfigError, match="no GGUF name"):
        gguf_tensors({"base_model.model.model.layers.0.mlp.weird.lora_A.weight": a}, model_type="llama",
                     n_head=2, n_head_kv=2)

    save_file({k: v.contiguous() for k, v in list(state.items())[:2]}, str(tmp_path / "adapter_model.safetensors"))
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": 4}))
    path = write_gguf_lora(tmp_path, tmp_path / "adapter.gguf", model_type="qwen2", n_head=2, n_head_kv=1)
    reader = gguf.GGUFReader(str(path))
    fields = {k: reader.fields[k] for k in ("general.type", "adapter.type", "adapter.lora.alpha", "general.architecture")}
    text = {k: bytes(f.parts[f.data[0]]).decode() for k, f in fields.items() if k != "adapter.lora.alpha"}
    assert text == {"general.type": "adapter", "adapter.type": "lora", "general.architecture": "qwen2"}
    assert float(fields["adapter.lora.alpha"].parts[-1][0]) == 4.0
    assert sorted(t.name for t in reader.tensors) == ["blk.3.attn_q.weight.lora_a", "blk.3.attn_q.weight.lora_b"]


def test_base_plus_adapter_model_string(tmp_path: Path) -> None:
    from taskbench.llm.providers.llamacpp import split_adapter

    assert split_adapter("qwen2.5-coder-0.5b") == ("qwen2.5-coder-0.5b", None)
    with pytest.raises(InputError, match="no GGUF LoRA adapter"):
        split_adapter(f"qwen2.5-coder-0.5b+{tmp_path}")
    (tmp_path / "adapter.gguf").write_bytes(b"NOPE")
    with pytest.raises(InputError, match="not a GGUF file"):
        split_adapter(f"qwen2.5-coder-0.5b+{tmp_path}")
    (tmp_path / "adapter.gguf").write_bytes(b"GGUF" + b"\0" * 8)
    assert split_adapter(f"smollm2-135m+{tmp_path}") == ("smollm2-135m", str(tmp_path / "adapter.gguf"))
    if importlib.util.find_spec("llama_cpp") is not None:  # the provider takes it (the model-name check saw
        from taskbench.llm.providers.llamacpp import LlamaCppProvider  # BASE+ADAPTER as one unknown name)

        p = LlamaCppProvider(f"smollm2-135m+{tmp_path}")
        assert (p.base, p.lora_path) == ("smollm2-135m", str(tmp_path / "adapter.gguf"))
        with pytest.raises(InputError, match="did you mean 'smollm2-135m'"):
            LlamaCppProvider(f"smollm2-13m+{tmp_path}")


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("torch", "peft", "transformers")),
                    reason="needs the [distill] extra")
def test_distill_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_runner import run

    code, _, err = run(capsys, "agents", "distill", "--role", "planner", "--data", str(tmp_path), "-o",
                       str(tmp_path / "a"))
    assert code == 2 and "--role 'planner'" in err
    code, _, err = run(capsys, "agents", "distill", "--role", "review", "--data", str(tmp_path), "-o",
                       str(tmp_path / "a"))
    assert code == 2 and "no review.jsonl" in err and len(err.strip().splitlines()) == 1
    held = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
            "meta": {"env": "restbench-spotify"}}
    (tmp_path / "review.jsonl").write_text(json.dumps(held) + "\n")
    code, _, err = run(capsys, "agents", "distill", "--role", "review", "--data", str(tmp_path), "-o",
                       str(tmp_path / "a"))
    assert code == 2 and "review.jsonl:1:" in err and "held-out" in err
    assert not (tmp_path / "a").exists()
    code, _, err = run(capsys, "agents", "span-data", "--env", "restbench-tmdb", "-o", str(tmp_path / "g"))
    assert code == 2 and "held-out" in err


@pytest.mark.skipif(_sandbox() is not None, reason=f"no sandbox: {_sandbox()}")
def test_held_out_scores_per_role_count_right_and_wrong_answers(tmp_path: Path) -> None:
    """distill-eval's scoring: a model that answers every target scores 1 in every role (the execution
    targets rerun in the sandbox where the teacher ran them, earlier code replayed first); one that answers
    wrongly scores 0; and a student is refused on the tasks its adapter was trained on."""
    from taskbench.distill.evaluate import score_role

    build_gold("taskbench-multimedia", tmp_path, limit=4, min_doc_words=20, perturb=1.0, seed=3)
    targets: dict[str, str] = {}
    for role in ("grounding", "execution", "review"):
        for line in (tmp_path / f"{role}.jsonl").read_text().splitlines():
            msgs = json.loads(line)["messages"]
            targets[json.dumps(msgs[:-1])] = msgs[-1]["content"]

    def right(request) -> str:
        return targets[json.dumps([{"role": m["role"], "content": m["content"]} for m in request.messages])]

    wrong_answers = {"grounding": json.dumps({"thought": "", "action": {"tool": "No_Such_Tool", "arguments": []}}),
                     "execution": "```python\nresult = undefined_name\n```",
                     "review": json.dumps({"problem": "vague", "feedback": "x", "route": "execution",
                                           "verdict": "revise"})}
    for role in ("grounding", "execution", "review"):
        good = score_role(tmp_path, role, "mock/right", options={"responses": right})["scores"]
        bad = score_role(tmp_path, role, "mock/wrong", options={"responses": lambda _r, a=wrong_answers[role]: a})
        if role == "grounding":
            assert good["next_tool_accuracy"] == good["argument_match"] == 1.0 and good["n"] > 4
            assert bad["scores"]["next_tool_accuracy"] == 0.0
            assert good["step_tool_accuracy"] == 1.0 and 0 < good["finish_answers"] < 1
            # always FINISH (what a 0.5B student trained on 24 examples did): right on every last step, and
            # nothing on the tool steps
            done = json.dumps({"thought": "Every step is done.", "action": {"tool": "FINISH", "answer": "Done."}})
            lazy = score_role(tmp_path, role, "mock/finish", options={"responses": lambda _r, d=done: d})["scores"]
            assert lazy["next_tool_accuracy"] > 0 and lazy["finish_answers"] == 1.0
            assert lazy["step_tool_accuracy"] == lazy["step_argument_match"] == 0.0
            assert lazy["tool_steps"] == good["tool_steps"] == good["n"] - 4  # one FINISH per task
        elif role == "execution":
            assert good["execution_success"] == good["result_match"] == 1.0 and good["gold_failed"] == 0
            assert good["n"] >= 4
            assert bad["scores"]["execution_success"] == bad["scores"]["result_match"] == 0.0
            assert "NameError" in bad["examples"][0]["observation"]
            # a program that runs and returns something, but not what the target asks: it succeeds as the
            # protocol counts it, and it does not match
            const = score_role(tmp_path, role, "mock/const",
                               options={"responses": lambda _r: "```python\nresult = 'Inception'\n```"})["scores"]
            assert const["execution_success"] == 1.0 and const["result_match"] == 0.0
            # the target's result with its last character changed: as long as the target's, the same in every
            # character the prompt shows (cut at 8 here), and not the target's result
            import taskbench.distill.evaluate as evaluate
            from taskbench.agents.config import Budgets
            from taskbench.agents.prompts import extract_code

            last = "\nresult = result if isinstance(result, str) else json.dumps(result)\n" \
                   "result = result[:-1] + ('#' if result[-1:] != '#' else '@')\n"

            def off_by_one(request: object, last: str = last) -> str:
                return "```python\nimport json\n" + (extract_code(right(request)) or "") + last + "```"

            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(evaluate, "Budgets", lambda: Budgets.model_construct(result_chars=8))
                near = score_role(tmp_path, role, "mock/near", options={"responses": off_by_one})
            longer = [r for r in near["examples"] if len(r["gold_observation"]) > 8]
            assert longer and not any(r["result_match"] for r in near["examples"])
        else:
            assert good["verdict_accuracy"] == good["route_accuracy"] == 1.0 and good["revise_targets"] > 0
            # every accept target is missed, and the revise targets routed to grounding are misrouted
            assert bad["scores"]["verdict_accuracy"] < 1.0 and bad["scores"]["route_accuracy"] < 1.0

    adapter = tmp_path / "student"
    adapter.mkdir()
    (adapter / "distill.json").write_text(json.dumps({"config": {"data": str(tmp_path), "role": "grounding",
                                                                 "limit": None}}))
    with pytest.raises(ConfigError, match="training data"):
        score_role(tmp_path, "grounding", f"llamacpp/smollm2-135m+{adapter}", limit=2)
    # the record distill writes now names the tasks themselves: the check holds with the data gone
    first = json.loads((tmp_path / "grounding.jsonl").read_text().splitlines()[0])["meta"]
    (adapter / "distill.json").write_text(json.dumps({"config": {"data": str(tmp_path / "moved"), "role": "grounding",
                                                                 "limit": None},
                                                      "trained_tasks": [f"{first['env']}/{first['task']}"]}))
    with pytest.raises(ConfigError, match="1 task"):
        score_role(tmp_path, "grounding", f"llamacpp/smollm2-135m+{adapter}", limit=2)


def test_max_same_target_caps_one_answer_and_keeps_the_rest_in_order() -> None:
    from taskbench.distill.data import cap_repeats

    def row(i: int, answer: str) -> dict:
        return {"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": answer}],
                "meta": {}}

    accept = '{"verdict": "accept"}'
    rows = [row(i, accept if i % 5 else f"revise {i}") for i in range(20)]  # 16 accepts, 4 distinct revises
    kept, dropped = cap_repeats(rows, 3, seed=1)
    assert dropped == 13 and len(kept) == 7
    assert sum(r["messages"][-1]["content"] == accept for r in kept) == 3
    assert [r["messages"][0]["content"] for r in kept] == sorted((r["messages"][0]["content"] for r in kept),
                                                                 key=lambda q: int(q[1:]))
    assert cap_repeats(rows, 3, seed=1) == (kept, dropped) and cap_repeats(rows, 3, seed=2)[0] != kept
    assert cap_repeats(rows, None) == (rows, 0)


def test_a_checkpoint_without_a_newer_option_resumes_with_its_default() -> None:
    from taskbench.distill.train import DistillConfig, _with_defaults

    config = DistillConfig(role="grounding", data="d", base="b")
    saved = config.model_dump(mode="json")
    saved.pop("max_same_target")  # a checkpoint written before --max-same-target existed
    assert _with_defaults(saved) == config.model_dump(mode="json")
    assert _with_defaults({**saved, "lr": 1.0}) != config.model_dump(mode="json")
    assert _with_defaults(saved) != DistillConfig(role="grounding", data="d", base="b",
                                                  max_same_target=3).model_dump(mode="json")
