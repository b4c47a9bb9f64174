"""BERTScore P/R/F1 per sample: greedy cosine matching of contextual token embeddings.

The score of Zhang et al. (2020) without idf weighting and without baseline rescaling, which is what the
reference evaluator gets from ``load_metric("bertscore").compute(..., model_type="roberta-large")``:

- both texts are tokenised with the model's tokenizer, special tokens added (they can be a token's best
  match but are not averaged over, as bert-score's zero idf weight for them does);
- each token is embedded with the hidden state of one layer (``num_layers``; the layer ``bert-score`` uses
  for the known models, else the last layer) and L2-normalised;
- precision = mean over prediction tokens of the best cosine with any reference token; recall = the same the
  other way round; F1 = 2PR / (P + R). A side without tokens scores 0.

Needs the optional extra: ``pip install "taskbench[bertscore]"`` (torch + transformers). The model can be a
hub name or a local directory (set ``HF_HUB_OFFLINE=1`` to stay offline).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError, MissingDependencyError

DEFAULT_MODEL = "roberta-large"

# Layers bert-score uses for common models (its defaults, tuned on WMT16); other models use the last layer.
KNOWN_LAYERS: dict[str, int] = {
    "roberta-large": 17,
    "roberta-base": 10,
    "bert-base-uncased": 9,
    "bert-large-uncased": 18,
    "distilbert-base-uncased": 5,
    "microsoft/deberta-xlarge-mnli": 40,
    "microsoft/deberta-large-mnli": 18,
}


def _require() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError:
        raise MissingDependencyError("torch", extra="bertscore", purpose="BERTScore") from None
    return torch, transformers


class BertScorer:
    """Loads one model once and scores text pairs with BERTScore (see the module docstring).

    ``model``: hub name or local path (default roberta-large, as the paper). ``num_layers``: which hidden
    layer to use (default: bert-score's choice for known models, else the last one).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        num_layers: int | None = None,
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        torch, transformers = _require()
        self.model_name = model
        self._torch = torch
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(model)
            self.model = transformers.AutoModel.from_pretrained(model)
        except (OSError, ValueError, KeyError) as exc:  # not downloadable, not cached, not a model directory
            why = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            raise ConfigError(
                f"the BERTScore model {model!r} cannot be loaded ({why[:200]}); download it once where the hub is "
                "reachable (it is then cached), or pass --bertscore-model /path/to/a/local/model"
            ) from None
        self.model.eval()
        self.device = device or "cpu"
        self.model.to(self.device)
        n_hidden = int(self.model.config.num_hidden_layers)
        layer = num_layers if num_layers is not None else KNOWN_LAYERS.get(model, n_hidden)
        if not 0 <= layer <= n_hidden:
            raise ValueError(f"num_layers must be in 0..{n_hidden} for {model}, not {layer}")
        self.num_layers = layer
        self.batch_size = batch_size
        # byte-level BPE tokenizers (RoBERTa, GPT-2, BART) see a leading space, as bert-score's
        # add_prefix_space=True gives
        kind = type(self.tokenizer).__name__.lower()
        self._prefix_space = any(k in kind for k in ("roberta", "gpt2", "bart", "longformer"))

    def _encode(self, text: str) -> list[int]:
        kwargs: dict[str, Any] = {"add_special_tokens": True, "truncation": True}
        max_len = getattr(self.tokenizer, "model_max_length", 512)
        kwargs["max_length"] = min(int(max_len), 512)
        text = text.strip()
        if self._prefix_space and text:
            text = " " + text
        return list(self.tokenizer.encode(text, **kwargs))

    def _embed(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: L2-normalised embeddings of all its tokens, and a mask of the content tokens.

        Special tokens ([CLS]/[SEP], <s>/</s>) can be the best match of a token but are not averaged over
        (bert-score gives them idf weight 0)."""
        torch = self._torch
        special = set(self.tokenizer.all_special_ids)
        ids = [self._encode(t) for t in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros((0, 1)), np.zeros(0, dtype=bool))] * len(ids)
        pad = self.tokenizer.pad_token_id or 0
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(ids[i]) for i in batch)
            input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                input_ids[row, : len(ids[i])] = torch.tensor(ids[i], dtype=torch.long)
                mask[row, : len(ids[i])] = 1
            with torch.no_grad():
                result = self.model(
                    input_ids=input_ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    output_hidden_states=True,
                )
            hidden = result.hidden_states[self.num_layers].float().cpu().numpy()
            for row, i in enumerate(batch):
                emb = hidden[row, : len(ids[i]), :]
                norms = np.linalg.norm(emb, axis=1, keepdims=True)
                content = np.array([tok not in special for tok in ids[i]], dtype=bool)
                out[i] = (emb / np.where(norms > 0, norms, 1.0), content)
        return out

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> dict[str, np.ndarray]:
        """Per-pair ``precision``, ``recall`` and ``f1`` arrays."""
        if len(predictions) != len(references):
            raise ValueError("predictions and references must have the same length")
        distinct = list(dict.fromkeys([*predictions, *references]))
        emb = dict(zip(distinct, self._embed(distinct), strict=True))
        n = len(predictions)
        p, r, f = np.zeros(n), np.zeros(n), np.zeros(n)
        for i, (cand, ref) in enumerate(zip(predictions, references, strict=True)):
            (c, c_keep), (g, g_keep) = emb[cand], emb[ref]
            if not c_keep.any() or not g_keep.any():
                continue  # an empty text scores 0
            sim = c @ g.T
            p[i] = sim.max(axis=1)[c_keep].mean()
            r[i] = sim.max(axis=0)[g_keep].mean()
            f[i] = 2 * p[i] * r[i] / (p[i] + r[i]) if p[i] + r[i] > 0 else 0.0
        return {"precision": p, "recall": r, "f1": f}


def bertscore_per_sample(
    predictions: Sequence[str], references: Sequence[str], model: str = DEFAULT_MODEL, **kwargs: Any
) -> dict[str, np.ndarray]:
    """One-shot helper: load ``model`` and score the pairs (see :class:`BertScorer`)."""
    return BertScorer(model, **kwargs).score(predictions, references)


__all__ = ["BertScorer", "DEFAULT_MODEL", "KNOWN_LAYERS", "bertscore_per_sample"]
