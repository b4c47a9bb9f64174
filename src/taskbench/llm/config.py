"""A model as plain data: what a worker needs to rebuild a :class:`~taskbench.llm.Model` (never a live one).

Sharded runs ship a :class:`ModelConfig` to every worker (a Ray task on another node, a thread here), which
calls :meth:`ModelConfig.open`. It holds the ``provider/model`` string and the keyword options of
:func:`~taskbench.llm.get_model` (``base_url`` one URL or several, ``api_key_env`` - the *name* of the variable
holding the key, never the key -, ``timeout``, ``max_retries``, ``concurrency``, ``cache``, provider options).
"""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError


class ModelConfig(BaseModel):
    """``get_model(spec, **options)`` as data."""

    model_config = ConfigDict(extra="forbid")

    spec: str = Field(description="'provider/model'.")
    options: dict[str, Any] = Field(default_factory=dict, description="Keyword options of get_model (JSON-able).")

    @field_validator("options")
    @classmethod
    def _plain(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "api_key" in value:
            raise ValueError("pass api_key_env (the name of the environment variable holding the key), not the key")
        try:
            json.dumps(value)
        except TypeError as exc:
            raise ValueError(f"model options must be plain data (JSON-able): {exc}") from None
        return value

    @classmethod
    def build(
        cls,
        spec: str,
        *,
        concurrency: int = 1,
        cache: bool | str = True,
        base_url: str | list[str] | None = None,
        api_key_env: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> ModelConfig:
        """The config :func:`open_model` would open with the same arguments."""
        return cls(spec=spec, options=model_options(concurrency=concurrency, cache=cache, base_url=base_url,
                                                    api_key_env=api_key_env, options=options))

    @property
    def name(self) -> str:
        """'provider/model' as :attr:`taskbench.llm.Model.name` says it."""
        from .registry import parse_model_string

        provider, model = parse_model_string(self.spec)
        return f"{provider}/{model}"

    def with_shared_cache(self) -> ModelConfig:
        """This config with ``cache=True`` (the default) resolved to one concrete cache (``$TASKBENCH_CACHE_URL``,
        else the driver's SQLite path), so every worker uses the same one rather than its own default."""
        from .cache import CACHE_URL_ENV, default_cache_path

        cache = self.options.get("cache", True)
        if cache is not True:
            return self
        resolved = os.environ.get(CACHE_URL_ENV) or str(default_cache_path())
        return self.model_copy(update={"options": {**self.options, "cache": resolved}})

    def open(self) -> Any:
        """A fresh :class:`~taskbench.llm.Model`."""
        from .model import get_model

        try:
            return get_model(self.spec, **dict(self.options))
        except TypeError as exc:  # pragma: no cover - get_model maps provider keywords itself
            raise ConfigError(f"bad model options for {self.spec}: {exc}") from exc


def model_options(
    *,
    concurrency: int = 1,
    cache: bool | str | os.PathLike[str] = True,
    base_url: str | list[str] | None = None,
    api_key_env: str | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword options of :func:`~taskbench.llm.get_model` for the CLI's model options: the one place that
    turns them into a model's options (:func:`open_model` and :meth:`ModelConfig.build` both use it). An empty
    ``base_url`` or ``api_key_env`` is the same as none given; ``concurrency`` does not override ``-O``'s."""
    config: dict[str, Any] = dict(options or {})
    config["cache"] = cache
    config.setdefault("concurrency", concurrency)
    if base_url:
        config["base_url"] = base_url
    if api_key_env:
        config["api_key_env"] = api_key_env
    return config


def open_model(
    spec: str,
    *,
    concurrency: int = 1,
    cache: bool | str | os.PathLike[str] = True,
    base_url: str | list[str] | None = None,
    api_key_env: str | None = None,
    options: dict[str, Any] | None = None,
) -> Any:
    """A :class:`taskbench.llm.Model` for a ``provider/model`` string with the CLI's options (the backend's
    own defaults, e.g. the embedded model's long timeout, come from its provider class)."""
    from .model import get_model

    return get_model(spec, **model_options(concurrency=concurrency, cache=cache, base_url=base_url,
                                           api_key_env=api_key_env, options=options))


__all__ = ["ModelConfig", "model_options", "open_model"]
