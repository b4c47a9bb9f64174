"""LoRA training of one ConAgents role's student (peft + transformers, torch's CPU build).

:func:`distill` reads ``DATA/ROLE.jsonl`` (:func:`~taskbench.distill.data.load_examples`), loads the base model
(:func:`load_base`: a ``llamacpp`` model string or a GGUF path, loaded by transformers from the GGUF file and
dequantised to float32, cached as safetensors after the first load so no hub is needed), and trains a LoRA
adapter on the assistant answers only (the prompt's tokens are masked out of the loss). One example is one
optimiser step (``grad_accum`` examples per step when > 1); example order is shuffled per epoch by ``seed``.

An example is trained on exactly what the embedded provider does at inference (:func:`encode`): the prompt is
rendered by the provider's own function (:func:`taskbench.llm.providers.llamacpp_tools.render_prompt`, with
the GGUF file's chat template, its tools and tool calls included), the answer is the text the provider's
grammar lets the model write (a tool call as ``<tool_call>`` JSON, :func:`~taskbench.llm.providers.llamacpp_tools.answer_text`)
and then the end-of-turn (EOS) token the provider stops at.

Output directory (``-o ADAPTER``):

- ``adapter_model.safetensors``, ``adapter_config.json``: the PEFT adapter;
- ``adapter.gguf``: the same adapter as a GGUF LoRA for llama.cpp (:mod:`.gguf_lora`);
- ``train_log.jsonl``: one line per example (epoch, step, loss, tokens, seconds): the loss curve;
- ``checkpoint/``: adapter, optimiser and position every ``checkpoint_every`` examples; a rerun with
  ``resume`` continues from there (the log is kept and continued);
- ``distill.json``: the configuration, the base, the data (and the tasks of its examples, ``ENV/TASK``, which
  ``distill-eval`` refuses), time and peak memory per example and in total.

Nothing here prints: progress goes to the ``progress(done, total, loss)`` callback the CLI renders.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..dataset.jsonio import write_json
from ..errors import ConfigError, InputError, MissingDependencyError
from ..llm.providers.llamacpp_tools import ChatFormat, answer_text, offered_tools, render_prompt
from .data import cap_repeats, load_examples

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


class DistillConfig(BaseModel):
    """What :func:`distill` trains."""

    role: str = Field(description="grounding | execution | review | react.")
    data: str = Field(description="Directory with ROLE.jsonl.")
    base: str = Field(description="llamacpp/ALIAS, an alias, or a .gguf path.")
    rank: int = Field(default=8, ge=1, le=256)
    alpha: float = Field(default=16.0, gt=0)
    lr: float = Field(default=2e-4, gt=0)
    epochs: int = Field(default=1, ge=1)
    max_length: int = Field(default=1024, ge=16, description="Longer examples are skipped (counted).")
    seed: int = 0
    grad_accum: int = Field(default=1, ge=1)
    limit: int | None = Field(default=None, ge=1, description="Only the first N examples.")
    max_same_target: int | None = Field(default=None, ge=1, description="At most N examples of any one "
                                        "answer (drawn by seed); None: every example.")
    targets: list[str] = Field(default_factory=lambda: list(DEFAULT_TARGETS))
    layers: int | None = Field(default=None, ge=1, description="Adapt only the top N transformer layers "
                               "(the backward pass stops below them); None: every layer.")
    checkpoint_every: int = Field(default=50, ge=1)
    threads: int | None = Field(default=None, ge=1)


class DistillResult(BaseModel):
    """What :func:`distill` did."""

    output: str
    examples: int
    skipped_too_long: int
    dropped_repeated: int = 0
    steps: int
    resumed_from: int = 0
    first_loss: float | None = None
    last_loss: float | None = None
    seconds: float = 0.0
    seconds_per_example: float | None = None
    peak_rss_mb: float = 0.0
    gguf: str | None = None


def _imports() -> tuple[Any, Any, Any]:
    try:
        import peft
        import torch
        import transformers
    except ImportError as exc:
        raise MissingDependencyError(getattr(exc, "name", None) or "peft", "distill", "training students") from exc
    return torch, transformers, peft


def base_gguf(base: str) -> Path:
    """The GGUF file of a base model string (``llamacpp/ALIAS``, an alias, or a path)."""
    from ..llm.weights import resolve_model_path

    name = base.split("/", 1)[1] if base.startswith("llamacpp/") else base
    return resolve_model_path(name.split("+", 1)[0])


def _cache_root() -> Path:
    root = os.environ.get("TASKBENCH_DISTILL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "taskbench", "distill")
    return Path(root)


def load_base(base: str) -> tuple[Any, Any, Path]:
    """(model in float32, tokenizer, GGUF path) for ``base``; the dequantised model is cached as safetensors
    (keyed by the file's size and mtime) so later loads skip the slow GGUF conversion."""
    torch, transformers, _ = _imports()
    path = base_gguf(base)
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
    cache = _cache_root() / f"base-{key}"
    if (cache / "config.json").is_file():
        tok = transformers.AutoTokenizer.from_pretrained(str(cache))
        model = transformers.AutoModelForCausalLM.from_pretrained(str(cache), dtype=torch.float32)
        return model, tok, path
    tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                              dtype=torch.float32)
    from safetensors.torch import save_model

    tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    # save_pretrained refuses a model loaded from GGUF (its config says "quantized"); the weights are plain
    # float32 now, so the config goes without that note and the tensors (tied ones once) as safetensors
    cfg = model.config.to_dict()
    cfg.pop("quantization_config", None)
    (tmp / "config.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    save_model(model, str(tmp / "model.safetensors"))
    tok.save_pretrained(str(tmp))
    cache.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, cache)
    except OSError:  # another process cached it first
        shutil.rmtree(tmp, ignore_errors=True)
    return model, tok, path


def chat_format(tok: Any) -> ChatFormat:
    """The chat template and special tokens of a tokenizer loaded from a GGUF file (transformers reads them from
    the file's ``tokenizer.chat_template``, BOS and EOS, the fields the provider renders with). ConfigError for a
    base without a template or an EOS token: the provider would then not render with a template a student
    could be trained on, and an answer would have no end."""
    template = getattr(tok, "chat_template", None)
    if not isinstance(template, str) or not template.strip() or tok.eos_token_id is None:
        raise ConfigError("the base has no chat template or no EOS token in its GGUF file; students are trained "
                          "on the template's prompts (choose an instruct model's GGUF)")
    return ChatFormat(template=template, bos_token=str(tok.bos_token or ""), eos_token=str(tok.eos_token or ""))


def encode(tok: Any, chat: ChatFormat, example: dict[str, Any], max_length: int
           ) -> tuple[list[int], list[int]] | None:
    """(input ids, labels) of one example (``{"messages", "tools"?, "tool_choice"?}``, the last message the
    answer): the prompt as the embedded provider renders it for the messages before the answer
    (:func:`~taskbench.llm.providers.llamacpp_tools.render_prompt` with the example's tools), then the answer's
    text as the provider's grammar writes it (:func:`~taskbench.llm.providers.llamacpp_tools.answer_text`) and
    the EOS token the provider stops at; labels -100 on the prompt. Both are tokenised with special tokens
    parsed and no BOS added, as the provider does. None when longer than ``max_length``; ValueError for an
    answer the provider's grammar cannot produce."""
    messages = example["messages"]
    tools = offered_tools(example.get("tools"), example.get("tool_choice"))
    p_ids = tok(render_prompt(chat, messages[:-1], tools), add_special_tokens=False)["input_ids"]
    answer = answer_text(messages[-1], tools, example.get("tool_choice"))
    a_ids = [*tok(answer, add_special_tokens=False)["input_ids"], int(tok.eos_token_id)]
    ids = [*p_ids, *a_ids]
    if len(ids) > max_length:
        return None
    return ids, [-100] * len(p_ids) + a_ids


def adapt(model: Any, config: DistillConfig) -> Any:
    """``model`` with fresh LoRA weights on ``config.targets`` of every layer, or of the top ``config.layers``."""
    peft = _imports()[2]
    n_layers = int(model.config.num_hidden_layers)
    if config.layers is not None and config.layers > n_layers:
        raise ConfigError(f"--layers {config.layers}: the base has {n_layers} layers")
    top = None if config.layers is None else list(range(n_layers - config.layers, n_layers))
    lora = peft.LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=0.0, bias="none",
                           target_modules=list(config.targets), task_type="CAUSAL_LM", layers_to_transform=top)
    import warnings

    with warnings.catch_warnings():  # peft reads transformers' deprecated is_gradient_checkpointing
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        return peft.get_peft_model(model, lora)


def answer_loss(model: Any, ids: list[int], labels: list[int], torch: Any) -> Any:
    """The mean cross-entropy of the answer tokens (the labels that are not -100, which :func:`encode` puts
    at the end). Only the answer's positions go through the output layer (``logits_to_keep``): the same loss
    as ``model(labels=...)``, without a vocabulary-wide projection of every prompt token."""
    n = sum(1 for x in labels if x != -100)
    if not 0 < n < len(ids):
        raise ValueError("an example needs a prompt and an answer")
    out = model(input_ids=torch.tensor([ids]), logits_to_keep=n + 1)
    logits = out.logits[0, :-1].float()
    return torch.nn.functional.cross_entropy(logits, torch.tensor(ids[len(ids) - n:]))


def _atomic_dir(tmp: Path, final: Path) -> None:
    old = final.with_name(final.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


def check(config: DistillConfig, output: str | Path, *, resume: bool = False) -> tuple[list[dict[str, Any]], int]:
    """(the examples :func:`distill` would train on, how many ``max_same_target`` dropped); raises what it would
    raise for bad data or an output directory that holds something else (the CLI calls it before drawing its
    progress bar)."""
    rows, dropped = cap_repeats(load_examples(config.data, config.role)[: config.limit], config.max_same_target,
                                config.seed)
    out = Path(output)
    if out.exists() and any(out.iterdir()) and not resume:
        raise ConfigError(f"{out} is not empty: pass --resume to continue its training, or choose another -o")
    return rows, dropped


def distill(config: DistillConfig, output: str | Path, *, resume: bool = False,
            progress: Callable[[int, int, float | None], None] | None = None) -> DistillResult:
    """Train the LoRA student of ``config.role`` into ``output`` (see the module docstring)."""
    torch, _, peft = _imports()
    out = Path(output)
    rows, dropped = check(config, out, resume=resume)
    state_file = out / "checkpoint" / "state.pt"
    if config.threads:
        torch.set_num_threads(config.threads)
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    model, tok, gguf_path = load_base(config.base)
    chat = chat_format(tok)
    encoded = [e for e in (encode(tok, chat, r, config.max_length) for r in rows) if e is not None]
    skipped = len(rows) - len(encoded)
    if not encoded:
        raise InputError(f"every {config.role} example is longer than --max-length {config.max_length} tokens",
                         path=Path(config.data) / f"{config.role}.jsonl")
    model = adapt(model, config)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=config.lr)
    out.mkdir(parents=True, exist_ok=True)
    total = len(encoded) * config.epochs
    done = 0
    if resume and state_file.is_file():
        state = torch.load(str(state_file), weights_only=False)
        if _with_defaults(state.get("config")) != config.model_dump(mode="json"):
            raise ConfigError(f"{out}: its checkpoint is of another configuration; choose another -o")
        weights = peft.load_peft_weights(str(out / "checkpoint"))
        peft.set_peft_model_state_dict(model, weights)
        opt.load_state_dict(state["optimizer"])
        done = int(state["done"])
    resumed = done
    log_path = out / "train_log.jsonl"
    if not resume or done == 0:
        log_path.write_text("", encoding="utf-8")
    elif log_path.is_file():  # examples past the checkpoint are trained again: their old lines go
        kept = [line for line in log_path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("example", 0) <= done]
        log_path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    start = time.perf_counter()
    losses: list[float] = []
    with log_path.open("a", encoding="utf-8") as log:
        for epoch in range(config.epochs):
            order = list(range(len(encoded)))
            random.Random(config.seed * 1000 + epoch).shuffle(order)
            for pos, i in enumerate(order):
                n = epoch * len(encoded) + pos
                if n < done:
                    continue
                t0 = time.perf_counter()
                ids, labels = encoded[i]
                result_loss = answer_loss(model, ids, labels, torch)
                (result_loss / config.grad_accum).backward()
                if (n + 1) % config.grad_accum == 0 or n + 1 == total:
                    opt.step()
                    opt.zero_grad()
                loss = float(result_loss.detach())
                losses.append(loss)
                done = n + 1
                log.write(json.dumps({"epoch": epoch, "example": done, "index": i, "loss": round(loss, 5),
                                      "tokens": len(ids), "seconds": round(time.perf_counter() - t0, 3)}) + "\n")
                log.flush()
                if done % config.checkpoint_every == 0 and done < total:
                    _checkpoint(model, opt, out, config, done, torch)
                if progress is not None:
                    progress(done, total, loss)
    seconds = time.perf_counter() - start
    tmp = out / f".adapter.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    # embeddings are never adapted; "auto" would look the base's config up on the Hugging Face hub (traffic
    # off the machine, and a warning when offline, since the base is a GGUF file)
    model.save_pretrained(str(tmp), save_embedding_layers=False)
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        os.replace(tmp / name, out / name)
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(out / "checkpoint", ignore_errors=True)
    from .gguf_lora import write_gguf_lora

    cfg = model.base_model.model.config
    gguf_out = write_gguf_lora(out, out / "adapter.gguf", model_type=cfg.model_type,
                               n_head=int(cfg.num_attention_heads),
                               n_head_kv=int(getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads))
    trained = done - resumed
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    result_doc = DistillResult(
        output=str(out), examples=len(encoded), skipped_too_long=skipped, dropped_repeated=dropped, steps=done, resumed_from=resumed,
        first_loss=losses[0] if losses else None, last_loss=losses[-1] if losses else None,
        seconds=round(seconds, 2), seconds_per_example=round(seconds / trained, 3) if trained else None,
        peak_rss_mb=round(peak, 1), gguf=str(gguf_out))
    # the tasks of every example read (before the repeat cap, as a held-out check should be strict), so that
    # distill-eval can refuse them even when the data directory has moved or is gone
    seen = sorted({f"{r['meta'].get('env')}/{r['meta'].get('task')}"
                   for r in load_examples(config.data, config.role)[: config.limit]})
    write_json(out / "distill.json", {"config": config.model_dump(mode="json"), "base_gguf": str(gguf_path),
                                      "model_type": cfg.model_type, "data_path": str(Path(config.data).resolve()),
                                      "trained_tasks": seen, "result": result_doc.model_dump(mode="json")})
    return result_doc


def _with_defaults(saved: Any) -> Any:
    """A checkpoint's configuration with the default of every option it lacks (one written before the option
    existed trained with its default)."""
    if not isinstance(saved, dict):
        return saved
    defaults = {name: field.get_default(call_default_factory=True)
                for name, field in DistillConfig.model_fields.items() if not field.is_required()}
    return {**defaults, **saved}


def _checkpoint(model: Any, opt: Any, out: Path, config: DistillConfig, done: int, torch: Any) -> None:
    tmp = out / f".checkpoint.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp), save_embedding_layers=False)
    torch.save({"optimizer": opt.state_dict(), "done": done, "config": config.model_dump(mode="json")},
               str(tmp / "state.pt"))
    _atomic_dir(tmp, out / "checkpoint")


def load_student(base: Any, adapter: str | Path) -> Any:
    """The base model (from :func:`load_base`) with the saved adapter at ``adapter`` applied (peft), for scoring
    a student in Python; llama.cpp loads the GGUF LoRA instead (``llamacpp/BASE+ADAPTER``)."""
    import warnings

    peft = _imports()[2]
    with warnings.catch_warnings():  # peft reads transformers' deprecated is_gradient_checkpointing
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        return peft.PeftModel.from_pretrained(base, str(adapter))


def read_log(output: str | Path) -> list[dict[str, Any]]:
    """The loss curve of a training run (``train_log.jsonl``)."""
    path = Path(output) / "train_log.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


__all__ = ["DEFAULT_TARGETS", "DistillConfig", "DistillResult", "adapt", "answer_loss", "base_gguf", "chat_format",
           "check", "distill", "encode", "load_base", "read_log"]
