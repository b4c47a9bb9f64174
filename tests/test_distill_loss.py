"""The trainer's loss on a tiny randomly initialised Llama (no weights needed): the answer-only projection
gives the loss transformers computes from the labels, and ``layers`` adapts the top layers only."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from taskbench.distill.train import DistillConfig, adapt, answer_loss  # noqa: E402
from taskbench.errors import ConfigError  # noqa: E402


def _tiny() -> object:
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(cfg).eval()


def test_answer_loss_is_the_labels_loss() -> None:
    model = _tiny()
    ids = [int(x) for x in torch.randint(0, 97, (20,))]
    for n in (1, 5, 19):
        labels = [-100] * (20 - n) + ids[20 - n:]
        with torch.no_grad():
            want = float(model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels])).loss)
            got = float(answer_loss(model, ids, labels, torch))
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6)
    with pytest.raises(ValueError):
        answer_loss(model, ids, list(ids), torch)  # no prompt
    with pytest.raises(ValueError):
        answer_loss(model, ids, [-100] * 20, torch)  # no answer


def test_top_layers_only_get_gradients() -> None:
    config = DistillConfig(role="grounding", data="-", base="-", rank=2, targets=["q_proj", "v_proj"], layers=2)
    with pytest.raises(ConfigError, match="4 layers"):
        adapt(_tiny(), config.model_copy(update={"layers": 5}))
    model = adapt(_tiny(), config)
    ids = list(range(1, 13))
    answer_loss(model, ids, [-100] * 8 + ids[8:], torch).backward()
    with_grad = {n.split(".layers.")[1].split(".")[0] for n, p in model.named_parameters()
                 if p.requires_grad and p.grad is not None}
    assert with_grad == {"2", "3"}
    every = {n.split(".layers.")[1].split(".")[0] for n, p in adapt(_tiny(), config.model_copy(
        update={"layers": None})).named_parameters() if p.requires_grad}
    assert every == {"0", "1", "2", "3"}
