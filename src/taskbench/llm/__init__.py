"""The model layer: ``get_model("provider/model")`` returns a :class:`Model` that owns retries, caching,
concurrency, usage accounting and structured output over thin provider adapters (see ``base.py``).

Providers (imported lazily): ``openai``, ``openai-compatible``, ``llamacpp``, ``mock``. See docs/models.md.
"""

from .base import GenerationConfig, Provider, ProviderRequest, ProviderResponse, TransientProviderError
from .cache import ResponseCache, cache_key, default_cache_path
from .model import Messages, Model, ModelOutput, get_model
from .registry import ProviderSpec, known_providers, parse_model_string, provider_class, register_provider
from .retry import RetryPolicy
from .schemas import JSONExtractionError, extract_json, repair_json, resolve_schema, task_graph_schema

__all__ = [
    "GenerationConfig",
    "JSONExtractionError",
    "Messages",
    "Model",
    "ModelOutput",
    "Provider",
    "ProviderRequest",
    "ProviderResponse",
    "ProviderSpec",
    "ResponseCache",
    "RetryPolicy",
    "TransientProviderError",
    "cache_key",
    "default_cache_path",
    "extract_json",
    "get_model",
    "known_providers",
    "parse_model_string",
    "provider_class",
    "register_provider",
    "repair_json",
    "resolve_schema",
    "task_graph_schema",
]
