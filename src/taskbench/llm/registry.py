"""Providers by name, imported lazily.

The registry maps a provider name to a ``"module:Class"`` string; the module is imported only when the
provider is first used, so ``import taskbench`` never pulls in an SDK or llama.cpp. A provider whose optional
package is missing raises :class:`~taskbench.errors.MissingDependencyError` carrying the exact install line.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import ConfigError, MissingDependencyError, did_you_mean
from .base import Provider


@dataclass(frozen=True)
class ProviderSpec:
    """Where a provider lives and what it needs installed."""

    target: str
    """``"package.module:ClassName"``."""
    package: str | None = None
    """The PyPI package the provider needs (for the error message), if any."""
    extra: str | None = None
    """The taskbench extra that installs it (``pip install "taskbench[extra]"``), if any."""
    modules: tuple[str, ...] = ()
    """Import names that belong to ``package`` (a ModuleNotFoundError for one of them means it is missing)."""


_PROVIDERS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec("taskbench.llm.providers.openai:OpenAIProvider", "openai", None, ("openai", "httpx2")),
    "openai-compatible": ProviderSpec(
        "taskbench.llm.providers.openai:OpenAICompatibleProvider", "openai", None, ("openai", "httpx2")
    ),
    "llamacpp": ProviderSpec(
        "taskbench.llm.providers.llamacpp:LlamaCppProvider", "llama-cpp-python", "llamacpp", ("llama_cpp",)
    ),
    "mock": ProviderSpec("taskbench.llm.providers.mock:MockProvider"),
}


def register_provider(name: str, spec: ProviderSpec | str) -> None:
    """Add (or replace) a provider: ``register_provider("mine", "mypkg.mod:MyProvider")``."""
    _PROVIDERS[name] = ProviderSpec(spec) if isinstance(spec, str) else spec


def known_providers() -> list[str]:
    """Registered provider names, sorted."""
    return sorted(_PROVIDERS)


def parse_model_string(spec: str) -> tuple[str, str]:
    """Split ``"provider/model"`` on the first ``/`` only (model names may contain ``/``)."""
    if not isinstance(spec, str) or "/" not in spec:
        raise ConfigError(
            f"model {spec!r} must look like 'provider/model' (e.g. 'openai/gpt-4o-mini', "
            f"'llamacpp/qwen2.5-coder-0.5b'); known providers: {', '.join(known_providers())}"
        )
    provider, model = spec.split("/", 1)
    if not provider or not model:
        raise ConfigError(f"model {spec!r} must look like 'provider/model' with both parts non-empty")
    return provider, model


def provider_class(name: str) -> type[Provider]:
    """Import and return the provider class registered as ``name``."""
    spec = _PROVIDERS.get(name)
    if spec is None:
        raise ConfigError(f"unknown model provider {name!r} ({did_you_mean(name, known_providers())})")
    module_name, _, attr = spec.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if spec.package and missing in spec.modules:
            raise MissingDependencyError(spec.package, spec.extra, f"the '{name}' model provider") from exc
        if exc.name == module_name:
            raise ConfigError(f"model provider {name!r} is registered as {spec.target!r}, which does not exist") from exc
        raise
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Provider)):
        raise ConfigError(f"model provider {name!r}: {spec.target!r} is not a Provider subclass")
    return cls


__all__ = ["ProviderSpec", "known_providers", "parse_model_string", "provider_class", "register_provider"]
