"""The offline TMDB API (v3): every operation of RestBench's ``tmdb_oas.json`` over our fixture database.

The fixtures (``data/tmdb/*.json``, our own format) hold movies, people, TV shows with seasons and episodes,
collections, companies and networks; everything the API derives is derived here, the way TMDB does it:

- credits both ways (a movie's cast and crew; a person's movie and TV credits), cast ``order`` from the
  fixture order, departments from jobs, credit ids and image paths as stable hashes (:mod:`.ids`);
- lists: ``popular`` (by popularity), ``top_rated`` (by rating, among titles with at least 300 votes, TV 200),
  ``now_playing`` (released in the six weeks up to the snapshot date), ``upcoming`` (the four weeks after),
  ``trending`` (a fixture score per day and week, else popularity), ``latest`` (the entry marked latest, else
  the highest id); TV ``on_the_air`` / ``airing_today`` from each show's list marks;
- search: every word of the query in the title (accents and case ignored), exact titles first, then by
  popularity; ``similar`` / ``recommendations`` from the fixture's list, else titles sharing the most genres;
- paging: 20 per page, ``page`` 1..500 (outside: TMDB's status 22), an empty page past the end;
- errors: TMDB's body ``{"success": false, "status_code": N, "status_message": ...}`` (34: not found, 22: bad
  page, 5: bad parameters).

Stateless: every session sees the same data. The snapshot date is ``meta.json``'s ``today``.
"""

from __future__ import annotations

from typing import Any

from .routing import Endpoint
from .service import Backend, Documented, documented, prune
from .tmdb_db import PAGE, TmdbDb
from .tmdb_routes import routes
from .validate import Problems

# RestBench's TMDB spec documents these only in part: trending's schema and example are movies (the API also
# trends shows and people), /credit's are a TV credit (the API also has movie credits)
PARTLY_DOCUMENTED = ("GET /trending/{media_type}/{time_window}", "GET /credit/{credit_id}")


class TMDB(TmdbDb, Backend):
    """The TMDB backend: the fixture database (:class:`~.tmdb_db.TmdbDb`, which the handlers read) with the
    handler table (:mod:`.tmdb_routes`), TMDB's error bodies and the fields the served spec documents."""

    api = "tmdb"

    # ------------------------------------------------------------------------------------- errors

    def error(self, status: int, message: str, code: int | None = None) -> Any:
        if code is None:
            code = {401: 7, 404: 34, 405: 3, 400: 5, 422: 5, 501: 34}.get(status, 5)
        return {"success": False, "status_code": code, "status_message": message}

    def invalid(self, problems: Problems) -> tuple[int, Any]:
        if any(loc == "path" for _n, loc, _m, _k in problems):
            return 404, self.error(404, "The resource you requested could not be found.", 34)
        if any(name == "page" for name, _l, _m, _k in problems):
            return 400, self.error(400, "Invalid page: Pages start at 1 and max at 500. They are expected to be an integer.", 22)
        return 400, self.error(400, f"Invalid parameters: Your request parameters are incorrect. ({problems.text()})", 5)

    # ------------------------------------------------------------------------------------- the spec's fields

    def document(self, tools: list[Any]) -> None:
        """Answer in the fields the served spec documents (its schema and example response), as the API did
        when the spec was written; operations whose spec describes only part of what they return keep
        everything (:data:`PARTLY_DOCUMENTED`)."""
        self.fields: dict[str, Documented] = {}
        for tool in tools:
            http = tool.http
            if http is None or tool.name in PARTLY_DOCUMENTED or not (http.response_schema or http.response_example):
                continue
            self.fields[tool.name] = documented(http.response_schema, http.response_example)

    def handle(self, op: str, args: dict[str, Any], session: str) -> tuple[int, Any]:
        status, body = super().handle(op, args, session)
        tree = self.__dict__.get("fields", {}).get(op)
        return (status, prune(body, tree)) if tree is not None and status < 300 else (status, body)

    def records(self) -> dict[str, Any]:
        people = [*self.people.values(), *self.crowd.values()]  # made-up people are people too
        return {"person": people, "movie": list(self.movies.values()), "tv": list(self.tv.values()),
                "collection": list(self.collections.values()), "company": list(self.companies.values()),
                "network": list(self.networks.values()),
                "genre": [*self.genre_names["movie"].values(), *self.genre_names["tv"].values()],
                "language": list(self.languages.values()), "country": list(self.countries.values())}

    # ------------------------------------------------------------------------------------- handlers

    def handlers(self) -> dict[str, Endpoint]:
        h: dict[str, Endpoint] | None = self.__dict__.get("_handlers")
        if h is None:
            h = self.__dict__["_handlers"] = routes(self)
        return h


__all__ = ["PAGE", "PARTLY_DOCUMENTED", "TMDB"]
