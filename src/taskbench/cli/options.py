"""The model options every model-using command shares, declared once (help panel "Model options").

Each ``*_option()`` returns a fresh ``typer.Option`` with the same name, short flag, help and panel in every
command; :func:`call_options` turns the parsed values into the model's options. The default model comes from
``TASKBENCH_MODEL`` (or a ``.env`` file in the working directory, loaded by the entry point).
"""

from __future__ import annotations

import json
from typing import Any

import typer

PANEL = "Model options"
"""The help panel the shared model options are listed under."""

MODEL_HELP = "Model as provider/model, e.g. llamacpp/qwen2.5-coder-0.5b, openai/gpt-4o-mini, openai-compatible/NAME."
OPTION_HELP = "Provider option KEY=VALUE (VALUE parsed as JSON when it can be), repeatable, e.g. -O n_ctx=4096."
TIMEOUT_HELP = ("Seconds one attempt may take before it is retried (default: 120; 900 for embedded models). A whole "
                "call, retries included, is bounded by 600 s or timeout x attempts + 60 s, whichever is longer "
                "(-O max_total_seconds=N sets it).")
RETRIES_HELP = "Retries of a failed call (429, 5xx, timeouts, resets) before it fails for good (default: 5; 0 embedded)."
BASE_URL_HELP = (
    "Server URL for openai-compatible models, e.g. http://127.0.0.1:8000/v1. Repeat it (or give @FILE, one URL "
    "a line) for replicas of one model: requests are load-balanced, a failing replica is taken out and put back."
)
SINGLE_BASE_URL_HELP = "Server URL for openai-compatible models, e.g. http://127.0.0.1:8000/v1."
API_KEY_HELP = ("Name of the environment variable holding the API key (openai and openai-compatible models); the "
                "key itself is never written anywhere.")
ENDPOINT_HELP = "With several --base-url: requests in flight per replica at most (default: --concurrency)."
MODEL_ENV = "TASKBENCH_MODEL"
MAX_SEED = 2**32 - 1
"""The largest seed a ``--seed`` takes: llama.cpp keeps seeds in 32 bits (a larger one wrapped silently, and -1
meant a random seed), so every command takes the same 0..2**32-1."""
MAX_REPLICATES = 10_000
"""The most ``--bootstrap`` / ``--permutations`` replicates (:data:`taskbench.eval.stats.MAX_REPLICATES`)."""
MAX_CONCURRENCY = 1024
"""The most requests or episodes a ``--concurrency`` puts in flight (:data:`taskbench.llm.model.MAX_CONCURRENCY`)."""


def model_option(required: bool = True, help: str = MODEL_HELP, env: bool = True) -> Any:
    """``--model/-m``, defaulting to ``$TASKBENCH_MODEL`` (shown in --help) unless ``env`` is False (a command
    whose model is optional and changes what it does)."""
    return typer.Option(... if required else None, "--model", "-m", help=help, envvar=MODEL_ENV if env else None,
                        show_envvar=env, rich_help_panel=PANEL)


def base_url_option(replicas: bool = False) -> Any:
    return typer.Option(None, "--base-url", help=BASE_URL_HELP if replicas else SINGLE_BASE_URL_HELP,
                        rich_help_panel=PANEL)


def api_key_env_option() -> Any:
    return typer.Option(None, "--api-key-env", help=API_KEY_HELP, rich_help_panel=PANEL)


MAX_TIMEOUT = 7 * 24 * 3600.0
"""The longest ``--timeout`` (a week): an attempt's bound, and with the retries the call's, must stay finite."""
MAX_RETRIES = 100
"""The most ``--max-retries`` (:data:`taskbench.llm.retry.MAX_RETRIES`)."""


def timeout_option() -> Any:
    return typer.Option(None, "--timeout", min=0.1, max=MAX_TIMEOUT, help=TIMEOUT_HELP, rich_help_panel=PANEL)


def max_retries_option() -> Any:
    return typer.Option(None, "--max-retries", min=0, max=MAX_RETRIES, help=RETRIES_HELP, rich_help_panel=PANEL)


def provider_option() -> Any:
    return typer.Option(None, "--option", "-O", help=OPTION_HELP, rich_help_panel=PANEL)


def no_cache_option() -> Any:
    return typer.Option(False, "--no-cache", help="Do not read or write the response cache.", rich_help_panel=PANEL)


def endpoint_concurrency_option() -> Any:
    return typer.Option(None, "--endpoint-concurrency", min=1, help=ENDPOINT_HELP, rich_help_panel=PANEL)


def parse_model_options(items: list[str] | None) -> dict[str, Any]:
    """``["k=v", ...]`` -> ``{k: json-or-string}``."""
    from ..errors import ConfigError

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--option expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def call_options(option: list[str] | None, timeout: float | None, max_retries: int | None,
                 endpoint_concurrency: int | None = None) -> dict[str, Any]:
    """Model options from ``-O KEY=VALUE`` plus ``--timeout``, ``--max-retries`` and ``--endpoint-concurrency``."""
    out = parse_model_options(option)
    if timeout is not None:
        out["timeout"] = timeout
    if max_retries is not None:
        out["max_retries"] = max_retries
    if endpoint_concurrency is not None:
        out["endpoint_concurrency"] = endpoint_concurrency
    return out
