"""`taskbench serve`: an OpenAI-compatible HTTP server over any configured taskbench model."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command(
        "serve",
        help=(
            "Serve a model over an OpenAI-compatible API: POST /v1/chat/completions and GET /v1/models.\n\n"
            "response_format json_object and json_schema are honoured with constrained decoding (the embedded "
            "llama.cpp model decodes under a grammar); tools and tool_choice are honoured; stream=true answers with "
            "server-sent events. A bad request gets an OpenAI-shaped 4xx, checked before any answer starts.\n\n"
            "Example: taskbench serve --model llamacpp/qwen2.5-coder-0.5b --port 8000\n\n"
            "then: taskbench predict --model openai-compatible/qwen2.5-coder-0.5b "
            "--base-url http://127.0.0.1:8000/v1 ..."
        ),
    )(serve)


def serve(
    model: str = typer.Option(
        "llamacpp/qwen2.5-coder-0.5b", "--model", "-m", help="provider/model to serve, e.g. llamacpp/smollm2-135m."
    ),
    host: str = typer.Option("127.0.0.1", help="Interface to bind (keep 127.0.0.1 unless you mean to expose it)."),
    port: int = typer.Option(8000, min=0, max=65535, help="TCP port."),
    base_url: str | None = typer.Option(None, help="Upstream base URL (openai-compatible models)."),
    api_key_env: str | None = typer.Option(
        None, help="Name of the environment variable holding the upstream API key (never the key itself)."
    ),
    concurrency: int | None = typer.Option(None, "--concurrency", "-c", help="Simultaneous requests to the model (default: provider's)."),
    timeout: float = typer.Option(600.0, help="Seconds per model attempt."),
    cache: Path | None = typer.Option(None, help="Response cache file (SQLite); default: no cache."),
    served_name: str | None = typer.Option(None, help="Model id reported to clients (default: the part of --model after the first '/')."),
    log_level: str = typer.Option("warning", help="uvicorn log level."),
    max_request_mb: float = typer.Option(16.0, "--max-request-mb", min=0.001, max=1024.0,
                                         help="Largest request body read, in MB (a larger one gets a 413)."),
    request_timeout: float = typer.Option(30.0, "--request-timeout", min=0.1, max=3600.0,
                                          help="Seconds a client may take to send a request (then a 408)."),
    max_connections: int = typer.Option(256, "--max-connections", min=1, max=65536,
                                        help="Connections held at once (more get a 503)."),
) -> None:
    from ..errors import MissingDependencyError
    from ..llm import get_model

    try:
        import uvicorn  # noqa: F401 - checked before the model loads
    except ModuleNotFoundError as exc:
        raise MissingDependencyError("uvicorn", "serve", "taskbench serve") from exc
    from ..llm.server import serve as run_server

    options: dict[str, object] = {"timeout": timeout, "cache": cache if cache is not None else False}
    if base_url:
        options["base_url"] = base_url
    if api_key_env:
        options["api_key_env"] = api_key_env
    if concurrency:
        options["concurrency"] = concurrency
    llm = get_model(model, **options)
    typer.echo(f"taskbench serve: {llm.name} on http://{host}:{port}/v1 (Ctrl-C to stop)", err=True)
    run_server(llm, host=host, port=port, served_name=served_name or model.split("/", 1)[1],
               max_bytes=int(max_request_mb * 1024 * 1024), timeout=request_timeout,
               max_connections=max_connections, log_level=log_level)
