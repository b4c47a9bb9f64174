"""Registered handlers: the operations a backend answers, one module-level function each.

A handler takes the backend (its fixture database), the validated arguments and the session, and returns
the JSON body (status 200) or ``(status, body)``; it raises :class:`~.service.ApiError` for the API's own
errors. Handlers register with a :class:`Routes` table under the operation's name, as the spec's tools are
named (``"GET /movie/{movie_id}"``)::

    ROUTES: Routes[TMDB] = Routes("tmdb")

    @ROUTES.route("GET /movie/{movie_id}")
    def get_movie(db: TMDB, args: dict[str, Any], session: str) -> Any: ...

:meth:`Routes.bind` gives the table a backend serves (:meth:`~.service.Backend.handlers`): each handler
with the backend bound, as an :data:`Endpoint`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

DB = TypeVar("DB")

Handler = Callable[[DB, dict[str, Any], str], Any]
"""``handler(db, args, session) -> body or (status, body)``."""

Endpoint = Callable[[dict[str, Any], str], Any]
"""A handler bound to its backend: ``endpoint(args, session) -> body or (status, body)``."""

_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class Routes(Generic[DB]):
    """The handlers of one API (or one part of it), by operation name, in registration order."""

    def __init__(self, api: str) -> None:
        self.api = api
        self._table: dict[str, Handler[DB]] = {}

    def route(self, op: str) -> Callable[[Handler[DB]], Handler[DB]]:
        """Decorator: register the function as the handler of ``op`` ("METHOD /path", as the spec's
        operation is named); an operation has one handler."""
        method, _, path = op.partition(" ")
        if method not in _METHODS or not path.startswith("/"):
            raise ValueError(f"{op!r} is not an operation name ('GET /path')")
        if op in self._table:
            raise ValueError(f"{self.api}: {op} has a handler already")

        def register(handler: Handler[DB]) -> Handler[DB]:
            self._table[op] = handler
            return handler

        return register

    def operations(self) -> list[str]:
        return list(self._table)

    def bind(self, db: DB) -> dict[str, Endpoint]:
        """The table with ``db`` bound to every handler."""
        return {op: functools.partial(handler, db) for op, handler in self._table.items()}


__all__ = ["Endpoint", "Handler", "Routes"]
