"""SPAN's whole loop on the tiny test model (SmolLM2-135M, the GGUF the llama.cpp tests use): gold
trajectories from `agents span-data`, `agents distill` of the grounding student with an interruption and a
resume, the loss log, the adapter reloaded by peft, its GGUF LoRA loaded by llama.cpp through the
``llamacpp/BASE+ADAPTER`` model string in a child process, and the student's greedy answer to a training
prompt moved toward the target, against the base and against the same adapter with its B matrices zeroed
(an adapter that does nothing must fail this test).

The test runs in a child pytest (``model``: a native crash fails it, not the suite), and llama.cpp runs in a
child of that (torch and llama.cpp never share a process: their thread pools have deadlocked together)."""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run

pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.timeout(900)]

TINY = "llamacpp/smollm2-135m"
EXAMPLES = 6
EPOCHS = 4  # half the targets are FINISH (4 one-step tasks): after 3 epochs the student answered the tool-step
# prompt with a FINISH ('Step 1: The task is answered.'); after 4 or 5 it wrote the tool step's target word for word
CHECKPOINT = 8
LAYERS = 8  # the top 8 of the 30 layers: the backward pass stops below them (a step costs about a third)

# llama.cpp in its own process: the greedy answers of three model strings to the same chat
_CHILD = r"""
import json, sys
from taskbench.llm import get_model
from taskbench.llm.base import GenerationConfig
from taskbench.records import run_sync

messages, models = json.loads(sys.stdin.read())
out = {}
for name in models:
    model = get_model(name, cache=False, n_threads=2, n_ctx=4096)
    answer = run_sync(model.generate(messages, config=GenerationConfig(temperature=0.0, max_tokens=48, seed=0)))
    out[name] = answer.text
    run_sync(model.aclose())
print(json.dumps(out))
"""


def _skip_reason() -> str | None:
    missing = [m for m in ("torch", "transformers", "peft", "gguf", "llama_cpp") if importlib.util.find_spec(m) is None]
    if missing:
        return f"needs the [distill] and [llamacpp] extras ({', '.join(missing)} missing)"
    from taskbench.envs.sandbox import sandbox_status
    from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file

    if locate_packaged_file(KNOWN_WEIGHTS["smollm2-135m"].chunks[0]) is None:
        return f"the tiny test model is not installed ({KNOWN_WEIGHTS['smollm2-135m'].pip_line})"
    status = sandbox_status()
    return None if status.available else f"no sandbox: {status.reason}"


def _zeroed(adapter: Path, where: Path) -> Path:
    """The adapter with every lora_B zero (the same shapes and names; it changes nothing), as GGUF."""
    from safetensors.torch import load_file, save_file

    from taskbench.distill.gguf_lora import write_gguf_lora

    where.mkdir()
    state = load_file(str(adapter / "adapter_model.safetensors"))
    save_file({k: (v * 0 if ".lora_B." in k else v).contiguous() for k, v in state.items()},
              str(where / "adapter_model.safetensors"))
    (where / "adapter_config.json").write_text((adapter / "adapter_config.json").read_text())
    meta = json.loads((adapter / "distill.json").read_text())
    from taskbench.distill.train import load_base

    cfg = load_base(meta["config"]["base"])[0].config
    write_gguf_lora(where, where / "adapter.gguf", model_type=cfg.model_type, n_head=cfg.num_attention_heads,
                    n_head_kv=cfg.num_key_value_heads)
    (where / "distill.json").write_text(json.dumps(meta))
    return where


def _target_loss(model, tok, messages) -> float:
    import torch

    from taskbench.distill.train import chat_format, encode

    encoded = encode(tok, chat_format(tok), {"messages": messages}, 4096)
    assert encoded is not None
    ids, labels = encoded
    with torch.no_grad():
        return float(model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels])).loss)


def test_the_span_loop_on_the_tiny_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    monkeypatch.setenv("TASKBENCH_DISTILL_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "span"
    # 1. data: gold trajectories of the multimedia domain (never RestBench), a few dozen examples
    code, out_text, err = run(capsys, "agents", "span-data", "--env", "taskbench-multimedia", "--min-doc-words", "20",
                              "--limit", "4", "--perturb", "0", "-o", str(data), "-q")
    assert code == 0, err
    rows = [json.loads(x) for x in (data / "grounding.jsonl").read_text().splitlines()]
    assert len(rows) >= EXAMPLES and all(r["meta"]["env"] == "taskbench-multimedia" for r in rows)

    # 2. distill, interrupted after the checkpoint at CHECKPOINT, then resumed from it
    from taskbench.distill import train

    out = tmp_path / "student"
    config = train.DistillConfig(role="grounding", data=str(data), base=TINY, rank=8, alpha=16, lr=3e-3,
                                 epochs=EPOCHS, limit=EXAMPLES, max_length=2048, checkpoint_every=CHECKPOINT,
                                 threads=2, seed=0, layers=LAYERS)

    class Stop(Exception):
        pass

    def stop_after_checkpoint(done: int, total: int, loss: float | None) -> None:
        if done == CHECKPOINT + 2:
            raise Stop

    with pytest.raises(Stop):
        train.distill(config, out, progress=stop_after_checkpoint)
    assert (out / "checkpoint" / "state.pt").is_file() and not (out / "adapter.gguf").exists()
    assert len(train.read_log(out)) == CHECKPOINT + 2
    # the same command with --resume continues from the checkpoint (a rerun without it is refused)
    args = ["agents", "distill", "--role", "grounding", "--data", str(data), "--base", TINY, "-o", str(out),
            "--rank", "8", "--alpha", "16", "--lr", "3e-3", "--epochs", str(EPOCHS), "--limit", str(EXAMPLES),
            "--max-length", "2048", "--checkpoint-every", str(CHECKPOINT), "--threads", "2", "--layers", str(LAYERS), "-q"]
    code, _, err = run(capsys, *args)
    assert code != 0 and "--resume" in err
    code, _, err = run(capsys, *args, "--resume")
    assert code == 0, err
    record = json.loads((out / "distill.json").read_text())["result"]
    total = EXAMPLES * EPOCHS
    assert record["resumed_from"] == CHECKPOINT and record["steps"] == total and record["examples"] == EXAMPLES
    assert record["peak_rss_mb"] > 0 and record["seconds_per_example"] > 0
    trained = json.loads((out / "distill.json").read_text())["trained_tasks"]
    assert trained == sorted({f"{r['meta']['env']}/{r['meta']['task']}" for r in rows[:EXAMPLES]})

    # 3. the loss log: every example once, in order, across the resume; the loss falls epoch over epoch
    log = train.read_log(out)
    assert [x["example"] for x in log] == list(range(1, total + 1))
    first = [x["loss"] for x in log if x["epoch"] == 0]
    last = [x["loss"] for x in log if x["epoch"] == EPOCHS - 1]
    assert sum(last) / len(last) < 0.6 * (sum(first) / len(first)), (first, last)

    # 4. the adapter reloads with peft and lowers the loss of a training target against the base
    base, tok, _ = train.load_base(TINY)
    target = rows[0]["messages"]
    base_loss = _target_loss(base, tok, target)
    student = train.load_student(base, out)
    student_loss = _target_loss(student, tok, target)
    assert student_loss < 0.6 * base_loss, (student_loss, base_loss)
    del student, base

    # 5. its GGUF LoRA: one lora_a and one lora_b per adapted weight of each of the top LAYERS layers
    import gguf

    names = [t.name for t in gguf.GGUFReader(str(out / "adapter.gguf")).tensors]
    layers = json.loads((tmp_path / "cache").glob("base-*/config.json").__next__().read_text())["num_hidden_layers"]
    assert len(names) == LAYERS * 4 * 2 and f"blk.{layers - 1}.attn_q.weight.lora_a" in names
    assert f"blk.{layers - LAYERS - 1}.attn_q.weight.lora_a" not in names

    # 6. held out: the student is refused on the tasks it was trained on
    from taskbench.distill.evaluate import score_role
    from taskbench.errors import ConfigError

    with pytest.raises(ConfigError, match="training data"):
        score_role(data, "grounding", f"{TINY}+{out}", limit=2)

    # 7. llama.cpp loads it through BASE+ADAPTER in a child process; its greedy answer moves toward the target
    zero = _zeroed(out, tmp_path / "zeroed")
    prompt = target[:-1]
    models = [TINY, f"{TINY}+{out}", f"{TINY}+{zero}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    child = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps([prompt, models]), capture_output=True,
                           text=True, env=env, timeout=300)
    assert child.returncode == 0, f"llama.cpp child exited {child.returncode}: {child.stderr[-2000:]}"
    answers = json.loads(child.stdout.strip().splitlines()[-1])
    want = target[-1]["content"]

    def closeness(text: str) -> float:
        n = len(text)
        return difflib.SequenceMatcher(None, text, want[:n] if n else want).ratio() if text else 0.0

    base_text, student_text, zero_text = answers[TINY], answers[models[1]], answers[models[2]]
    assert zero_text == base_text  # the zeroed adapter changes nothing: the comparison below is the training's
    assert student_text != base_text
    # measured with four epochs: the student wrote the target's first 48 tokens word for word ('{"thought": "Step 1:
    # Image Downloader.", "action": {"tool": "Image Downloader", ...') and the base wrote prose (closeness 0.50)
    assert closeness(student_text) > closeness(base_text) + 0.1, answers
    assert student_text[:20] == want[:20] != base_text[:20], answers  # the target's opening, as trained
