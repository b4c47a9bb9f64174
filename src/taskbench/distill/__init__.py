"""SPAN students: LoRA training of one model per ConAgents role (:mod:`.train`), on data from
:mod:`taskbench.agents.sft` and :mod:`taskbench.agents.span` (read by :mod:`.data`), and the adapter written
as a GGUF LoRA that llama.cpp loads (:mod:`.gguf_lora`). Needs the ``[distill]`` extra (torch's CPU build,
transformers, peft, gguf); see docs/distill.md."""
