"""Provider adapters (thin: one request in, one response out). Imported lazily through
:mod:`taskbench.llm.registry`; nothing here is imported by ``import taskbench.llm``."""
