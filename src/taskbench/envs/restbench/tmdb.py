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

from .tmdb_db import PAGE as PAGE
from .tmdb_db import PARTLY_DOCUMENTED as PARTLY_DOCUMENTED
from .tmdb_db import TmdbDb
from .tmdb_routes import routes


class TMDB(TmdbDb):
    """The offline API: the fixture data (:class:`.tmdb_db.TmdbDb`) and its handler per operation."""

    def handlers(self) -> dict[str, Any]:
        h = self.__dict__.get("_handlers")
        if h is None:
            h = self.__dict__["_handlers"] = routes(self)
        return h


__all__ = ["PAGE", "PARTLY_DOCUMENTED", "TMDB"]
