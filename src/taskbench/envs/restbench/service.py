"""The loopback service: one FastAPI app per API that implements every operation of the spec it is given.

The flow of one request::

    HTTP request -> route of the spec's operation -> validate_request (types, required, enums, bounds)
        -> Backend.handle(operation, args, session) -> JSON response
        (a problem or an ApiError -> the API's own error body and status)

A :class:`Backend` holds the fixture database and the handlers of one API (TMDB, Spotify); it never speaks
HTTP. :class:`Service` mounts a backend under the spec's server path (``/3`` for TMDB, ``/v1`` for Spotify)
on an ephemeral port of 127.0.0.1, served by uvicorn in a daemon thread. Services are shared: every
environment of the same API and spec uses one (:func:`acquire` / :func:`release`, reference-counted; the
last release stops the server).

Episodes are isolated by the ``X-Taskbench-Session`` header: a stateful backend keeps one copy of its
mutable state per session, created from the fixtures on :meth:`Backend.reset_session`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from typing import Any, cast
from urllib.parse import urlparse

from ...errors import ConfigError, MissingDependencyError, TaskbenchError
from ...schema import HttpOperation, ToolSpec
from .routing import Endpoint
from .validate import Problems, validate_request

SESSION_HEADER = "X-Taskbench-Session"
DEFAULT_SESSION = "default"


class ApiError(TaskbenchError):
    """An error a handler answers with: HTTP status, message, and an API-specific code (TMDB status_code); the
    service answers it as the API's own error body, so it never reaches a caller of a command."""

    def __init__(self, status: int, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


class Backend:
    """The handlers and fixture data of one API (subclasses: TMDB, Spotify)."""

    api: str = ""

    def handlers(self) -> dict[str, Endpoint]:
        """Handler per operation name ("GET /movie/{movie_id}" -> callable(args, session) -> JSON), the
        backend's :class:`~.routing.Routes` bound to it."""
        raise NotImplementedError

    def handle(self, op: str, args: dict[str, Any], session: str) -> tuple[int, Any]:
        """(status, JSON body) for one validated request."""
        handler = self.handlers().get(op)
        if handler is None:
            raise ApiError(501, f"{op} is not implemented by the {self.api} service")
        result = handler(args, session)
        if isinstance(result, tuple):
            return result
        return 200, result

    def invalid(self, problems: Problems) -> tuple[int, Any]:
        """The response to a request whose parameters failed validation."""
        raise NotImplementedError

    def error(self, status: int, message: str, code: int | None = None) -> Any:
        """The API's error body."""
        raise NotImplementedError

    def reset_session(self, session: str, setup: dict[str, Any] | None = None) -> None:  # noqa: B027
        """Give ``session`` a fresh copy of the initial state, patched with a task's ``setup`` (stateless
        backends need nothing)."""

    def drop_session(self, session: str) -> None:  # noqa: B027
        """Forget ``session``'s state."""

    def state(self, session: str) -> Any:
        """A JSON view of ``session``'s state (what end-state checkers read); None when stateless."""
        return None

    def records(self) -> dict[str, Any]:
        """The data an answer can draw names from, by kind ({"person": [...], "movie": [...]}): the checker
        reads every short string in it as a name of kind ``<kind>.<key path>`` (a list of every value of one
        kind is then no answer). Empty by default."""
        return {}

    def document(self, tools: list[ToolSpec]) -> None:  # noqa: B027
        """Learn the spec being served (a backend that answers in the spec's documented fields reads them)."""

    def missing(self, ops: Iterable[str]) -> list[str]:
        """Operations of ``ops`` this backend has no handler for."""
        known = self.handlers()
        return [op for op in ops if op not in known]


# ----------------------------------------------------------------------------------------- documented fields

# The keys a response schema (with its example) documents: {"keys": {key: tree} or None (any key), "item": tree}
Documented = dict[str, Any]


def documented(schema: Any, example: Any = None) -> Documented:
    """The key tree of a response as its spec documents it: the schema's properties (allOf / anyOf / oneOf
    united, list items) together with the example's keys. An object neither gives keys for is open (any key)."""
    tree = _from_schema(schema, 0) if isinstance(schema, dict) and schema else {"keys": None, "item": None}
    return (_unite(tree, _from_example(example)) or tree) if example is not None else tree


def _from_schema(schema: Any, level: int) -> Documented:
    if not isinstance(schema, dict) or level > 40:
        return {"keys": None, "item": None}
    props, items = schema.get("properties"), schema.get("items")
    tree: Documented = {"keys": {str(k): _from_schema(v, level + 1) for k, v in props.items()}
                        if isinstance(props, dict) and props else None,
                        "item": _from_schema(items, level + 1) if isinstance(items, dict) else None}
    for key in ("allOf", "anyOf", "oneOf"):
        parts = schema.get(key)
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, dict):
                    tree = _unite(tree, _from_schema(part, level + 1)) or tree
    return tree


def _from_example(value: Any) -> Documented:
    if isinstance(value, dict):
        return {"keys": {str(k): _from_example(v) for k, v in value.items()}, "item": None}
    tree: Documented = {"keys": None, "item": None}
    if isinstance(value, list):
        for v in value:
            tree["item"] = _from_example(v) if tree["item"] is None else _unite(tree["item"], _from_example(v))
    return tree


def _unite(a: Documented | None, b: Documented | None) -> Documented | None:
    """Both trees' keys; a side that gives no keys adds none (the other side's keys stand)."""
    if a is None or b is None:
        return a if b is None else b
    ka, kb = a["keys"], b["keys"]
    if ka is None or kb is None:
        keys = ka if kb is None else kb
    else:
        keys = dict(ka)
        for k, v in kb.items():
            keys[k] = _unite(keys[k], v) if k in keys else v
    return {"keys": keys, "item": _unite(a["item"], b["item"])}


def prune(value: Any, tree: Documented | None) -> Any:
    """``value`` without the keys ``tree`` does not document (open objects are kept whole)."""
    if tree is None:
        return value
    if isinstance(value, dict):
        keys = tree["keys"]
        if keys is None:
            return value
        return {k: prune(v, keys[k]) for k, v in value.items() if k in keys}
    if isinstance(value, list):
        return [prune(v, tree["item"]) for v in value]
    return value


def _route_order(spec: ToolSpec) -> tuple[int, int, str]:
    assert spec.http is not None
    # literal routes before templated ones of the same shape (/movie/latest before /movie/{movie_id})
    return (spec.http.path.count("{"), -len(spec.http.path), spec.http.path)


def build_app(backend: Backend, tools: list[ToolSpec], prefix: str) -> Any:
    """A FastAPI app serving ``tools`` (OpenAPI operations) under ``prefix`` with ``backend``."""
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse
        from starlette.exceptions import HTTPException as StarletteHTTPException
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError("fastapi", "restbench", "the offline RestBench services") from exc

    operations = [t for t in tools if t.http is not None]
    missing = backend.missing(t.name for t in operations)
    if missing:
        raise ConfigError(
            f"the {backend.api} service has no handler for {len(missing)} operation(s) of the spec: "
            + ", ".join(missing[:8])
        )
    backend.document(operations)
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    def respond(status: int, body: Any) -> Any:
        if status == 204 or body is None and status < 300:
            from starlette.responses import Response

            return Response(status_code=204 if body is None else status)
        return JSONResponse(body, status_code=status)

    def endpoint_for(name: str, op: HttpOperation) -> Any:
        async def endpoint(request: Request) -> Any:
            session = request.headers.get(SESSION_HEADER, DEFAULT_SESSION)
            body: Any = None
            raw = await request.body()
            if raw.strip():
                try:
                    body = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    return respond(400, backend.error(400, "Error parsing JSON."))
            args, problems = validate_request(op, request.path_params, request.query_params, request.headers, body)
            if problems:
                return respond(*backend.invalid(problems))
            try:
                status, result = backend.handle(name, args, session)
            except ApiError as err:
                return respond(err.status, backend.error(err.status, err.message, err.code))
            return respond(status, result)

        endpoint.__annotations__ = {"request": Request, "return": Any}  # resolvable despite postponed annotations
        return endpoint

    for spec in sorted(operations, key=_route_order):
        assert spec.http is not None
        app.add_api_route(prefix + spec.http.path, endpoint_for(spec.name, spec.http), methods=[spec.http.method])

    async def not_found(request: Any, exc: Any) -> Any:
        if exc.status_code == 405:
            return respond(405, backend.error(405, "Method not allowed for this resource."))
        return respond(exc.status_code, backend.error(exc.status_code, "The resource you requested could not be found."))

    app.add_exception_handler(StarletteHTTPException, not_found)

    return app


def server_prefix(tools: list[ToolSpec]) -> str:
    """The path of the spec's first server URL ('https://api.themoviedb.org/3' -> '/3'), or ''."""
    for spec in tools:
        if spec.http is not None and spec.http.server:
            return urlparse(spec.http.server).path.rstrip("/")
    return ""


class Service:
    """One backend served on 127.0.0.1 (an ephemeral port) by uvicorn in a daemon thread."""

    def __init__(self, backend: Backend, tools: list[ToolSpec]) -> None:
        self.backend = backend
        self.tools = tools
        self.prefix = server_prefix(tools)
        self._app = build_app(backend, tools, self.prefix)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """Where the API lives, e.g. 'http://127.0.0.1:41234/3'."""
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def start(self, timeout: float = 15.0) -> None:
        try:
            import uvicorn
        except ImportError as exc:  # pragma: no cover
            raise MissingDependencyError("uvicorn", "restbench", "the offline RestBench services") from exc
        config = uvicorn.Config(self._app, host="127.0.0.1", port=0, log_level="warning", access_log=False,
                                lifespan="off")
        server = uvicorn.Server(config)  # off the main thread uvicorn installs no signal handlers
        thread = threading.Thread(target=server.run, name=f"restbench-{self.backend.api}", daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                raise RuntimeError(f"the {self.backend.api} service did not start on 127.0.0.1")
            time.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        self._server, self._thread = server, thread

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


_LOCK = threading.Lock()
_SHARED: dict[tuple[str, str], tuple[Service, int]] = {}


def acquire(key: tuple[str, str], make: Any) -> Service:
    """The running service under ``key``, started with ``make()`` (-> Service) on first use."""
    with _LOCK:
        entry = _SHARED.get(key)
        if entry is not None and entry[0].running:
            _SHARED[key] = (entry[0], entry[1] + 1)
            return entry[0]
        service = make()
        service.start()
        _SHARED[key] = (service, 1)
        return cast("Service", service)


def release(key: tuple[str, str]) -> None:
    """Drop one reference to the service under ``key``; the last one stops it."""
    with _LOCK:
        entry = _SHARED.get(key)
        if entry is None:
            return
        service, count = entry
        if count > 1:
            _SHARED[key] = (service, count - 1)
            return
        del _SHARED[key]
    service.stop()


def running_services() -> list[str]:
    """Keys of the services running now (for tests and diagnostics)."""
    with _LOCK:
        return [f"{api}:{digest}" for api, digest in _SHARED]


__all__ = [
    "DEFAULT_SESSION",
    "SESSION_HEADER",
    "ApiError",
    "Backend",
    "Service",
    "acquire",
    "build_app",
    "documented",
    "prune",
    "release",
    "running_services",
    "server_prefix",
]
