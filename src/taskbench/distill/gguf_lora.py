"""A PEFT LoRA adapter written as a GGUF LoRA that llama.cpp loads (``lora_path``).

The file is what llama.cpp's adapter loader reads: ``general.type = adapter``, ``adapter.type = lora``,
``adapter.lora.alpha``, ``general.architecture`` of the base (llama.cpp refuses a mismatch), and per adapted
weight two tensors ``blk.N.<name>.weight.lora_a`` (rank x in) and ``...lora_b`` (out x rank), the same layout
as PEFT's ``lora_A``/``lora_B``. llama.cpp scales the product by ``alpha / rank``, as PEFT does.

Tensor names follow GGUF's naming of the Llama and Qwen2 blocks (``q_proj`` -> ``attn_q`` ...). For the
``llama`` architecture GGUF stores the query and key weights with their rows permuted for its rotary
embedding (and transformers undoes that when it loads a GGUF base), so the rows of ``lora_b`` of
``q_proj``/``k_proj`` get the same permutation here; Qwen2 needs none.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError, MissingDependencyError

MODULES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
           "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
           "mlp.down_proj": "ffn_down"}
"""Hugging Face module (under ``model.layers.N.``) -> GGUF tensor name (under ``blk.N.``)."""

ARCHITECTURES = {"llama": "llama", "qwen2": "qwen2"}
"""transformers ``model_type`` -> GGUF ``general.architecture`` (the ones transformers loads from GGUF)."""

_KEY = re.compile(r"layers\.(\d+)\.(.+)\.lora_([AB])\.weight$")


def permute_rows(weights: Any, n_head: int) -> Any:
    """GGUF's rotary row order of a llama query/key projection's output rows (numpy array, rows first)."""
    shape = weights.shape
    return weights.reshape(n_head, 2, shape[0] // n_head // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def gguf_tensors(state: dict[str, Any], *, model_type: str, n_head: int, n_head_kv: int) -> dict[str, Any]:
    """GGUF tensor name -> float32 numpy array for a PEFT state dict (``...layers.N.MODULE.lora_A.weight``)."""
    import numpy as np

    out: dict[str, Any] = {}
    for key, tensor in state.items():
        m = _KEY.search(key)
        if m is None:
            raise ConfigError(f"adapter tensor {key!r}: not a LoRA weight of a decoder layer")
        layer, module, ab = m.groups()
        name = MODULES.get(module)
        if name is None:
            raise ConfigError(f"adapter tensor {key!r}: module {module!r} has no GGUF name (adaptable: "
                              f"{', '.join(m.split('.')[-1] for m in MODULES)})")
        array = np.ascontiguousarray(tensor.detach().to("cpu").float().numpy())
        if model_type == "llama" and ab == "B" and module in ("self_attn.q_proj", "self_attn.k_proj"):
            array = np.ascontiguousarray(permute_rows(array, n_head if module.endswith("q_proj") else n_head_kv))
        out[f"blk.{layer}.{name}.weight.lora_{ab.lower()}"] = array
    return out


def write_gguf_lora(adapter_dir: str | Path, output: str | Path, *, model_type: str, n_head: int,
                    n_head_kv: int) -> Path:
    """Write the adapter saved in ``adapter_dir`` (PEFT's ``adapter_model.safetensors`` and
    ``adapter_config.json``) as a GGUF LoRA at ``output`` (atomically); returns the path."""
    try:
        import gguf
        from safetensors.torch import load_file
    except ImportError as exc:
        raise MissingDependencyError("gguf", "distill", "writing a GGUF LoRA") from exc
    src = Path(adapter_dir)
    cfg_path = src / "adapter_config.json"
    if not cfg_path.is_file() or not (src / "adapter_model.safetensors").is_file():
        raise InputError("not a saved LoRA adapter (no adapter_config.json / adapter_model.safetensors)", path=src)
    arch = ARCHITECTURES.get(model_type)
    if arch is None:
        raise ConfigError(f"base architecture {model_type!r}: GGUF LoRA export knows {', '.join(ARCHITECTURES)}")
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    tensors = gguf_tensors(load_file(str(src / "adapter_model.safetensors")), model_type=model_type,
                           n_head=n_head, n_head_kv=n_head_kv)
    out = Path(output)
    tmp = out.with_name(out.name + ".tmp")
    writer = gguf.GGUFWriter(str(tmp), arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(cfg.get("lora_alpha") or cfg.get("r") or 1))
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    return out


__all__ = ["ARCHITECTURES", "MODULES", "gguf_tensors", "permute_rows", "write_gguf_lora"]
