"""The model layer: ``get_model("provider/model")`` returns a :class:`Model` that owns retries, caching,
concurrency, usage accounting and structured output over thin provider adapters (see ``base.py``)."""
