"""The TMDB fixture database the handlers read: the tables, the indexes derived from them, the answer objects
(briefs; credit, image and review objects) and the lookup and paging helpers, as :class:`TmdbDb`.

The handlers (:mod:`.tmdb_routes`, :mod:`.tmdb_tv`) take a :class:`TmdbDb` and import this module only;
:class:`~.tmdb.TMDB`, the backend the service serves, is this database with the handler table, the API's error
bodies and the spec's documented fields. So the imports go one way: tmdb -> tmdb_routes -> tmdb_tv -> tmdb_db.
"""

from __future__ import annotations

import math
import unicodedata
from datetime import date
from typing import Any, cast

from .dataset import load_fixtures
from .ids import hex_id, image_path
from .service import ApiError
from .tmdb_crowd import DEPARTMENTS as CROWD_DEPARTMENTS
from .tmdb_crowd import ID_BASE, crowd

PAGE = 20
DEPARTMENTS = {
    "Director": "Directing", "Co-Director": "Directing", "Screenplay": "Writing", "Writer": "Writing",
    "Novel": "Writing", "Story": "Writing", "Characters": "Writing", "Creator": "Writing", "Teleplay": "Writing",
    "Producer": "Production", "Executive Producer": "Production", "Co-Producer": "Production",
    "Original Music Composer": "Sound", "Music": "Sound", "Director of Photography": "Camera",
    "Editor": "Editing", "Casting": "Production", "Production Design": "Art", "Host": "Crew",
    **CROWD_DEPARTMENTS,
}


def department(job: str) -> str:
    """The department of a crew job ("Director" -> "Directing"; unknown jobs: "Crew")."""
    return DEPARTMENTS.get(job, "Crew")


def by_popularity(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most popular first (ties: lower id first)."""
    return sorted(items, key=lambda x: (-x.get("pop", 0), x["id"]))


def top_rated(items: list[dict[str, Any]], min_votes: int) -> list[dict[str, Any]]:
    """Best rated first, among the items with at least ``min_votes`` votes."""
    rated = [x for x in items if x.get("vote", [0, 0])[1] >= min_votes]
    return sorted(rated, key=lambda x: (-x["vote"][0], -x["vote"][1], x["id"]))


def latest(table: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The entry marked latest, else the one with the highest id."""
    marked = [x for x in table.values() if x.get("latest")]
    return marked[0] if marked else table[max(table)]


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return " ".join("".join(c if c.isalnum() else " " for c in plain).split())


def words_match(query: str, *titles: str) -> tuple[bool, int]:
    """(matches, rank): every query word is in a title; rank 0 exact, 1 prefix, 2 contains."""
    q = _fold(query)
    if not q:
        return False, 3
    best = 3
    for title in titles:
        t = _fold(title or "")
        if not t:
            continue
        if t == q:
            return True, 0
        words = t.split()
        if all(any(w.startswith(qw) for w in words) for qw in q.split()) or q in t:
            best = min(best, 1 if t.startswith(q) else 2)
    return best < 3, best




class TmdbDb:
    """The fixture database and its derived indexes. The handlers (:mod:`.tmdb_routes`, :mod:`.tmdb_tv`) read it
    through its public attributes and methods: the tables (``movies``, ``tv``, ``people``, ``crowd``, ...),
    the briefs and credit, image and review objects, and the lookup and paging helpers (``get``, ``page``)."""

    def __init__(self, fixtures: dict[str, Any] | None = None) -> None:
        db = fixtures if fixtures is not None else load_fixtures("tmdb")
        meta = db.get("meta", {})
        self.today = date.fromisoformat(meta.get("today", "2023-08-15"))
        self.genre_names = {"movie": dict(map(tuple, meta.get("genres", {}).get("movie", []))),
                            "tv": dict(map(tuple, meta.get("genres", {}).get("tv", [])))}
        self.languages: dict[str, str] = meta.get("languages", {})
        self.countries: dict[str, str] = meta.get("countries", {})
        self.movies = {m["id"]: m for m in db.get("movies", [])}
        self.people = {p["id"]: p for p in db.get("people", [])}
        self.tv = {t["id"]: t for t in db.get("tv", [])}
        self.collections = {c["id"]: c for c in db.get("collections", [])}
        self.companies = {c["id"]: c for c in db.get("companies", [])}
        self.networks = {n["id"]: n for n in db.get("networks", [])}
        self.reviews: dict[str, dict[str, Any]] = {}
        self.credits: dict[str, dict[str, Any]] = {}
        self.crowd: dict[int, dict[str, Any]] = {}  # made-up supporting cast and crew (see tmdb_crowd)
        if meta.get("crowd", True):
            self._add_crowd()
        self._index()

    # ------------------------------------------------------------------------------------- indexes

    def _add_crowd(self) -> None:
        """Complete every movie's and show's credits the way the live API lists them (:mod:`.tmdb_crowd`)."""
        taken = {p["name"] for p in self.people.values()}
        next_id = ID_BASE
        for kind, table in (("movie", self.movies), ("tv", self.tv)):
            for key in sorted(table):
                media = table[key] = dict(table[key])
                cast, crew, people = crowd(kind, media, taken, next_id)
                next_id += len(people)
                media["cast"] = [*media.get("cast", []), *cast]
                media["crew"] = [*media.get("crew", []), *crew]
                self.crowd.update((p["id"], p) for p in people)

    def _index(self) -> None:
        self.person_movies: dict[int, list[tuple[str, dict[str, Any], int, str]]] = {}
        self.person_tv: dict[int, list[tuple[str, dict[str, Any], int, str]]] = {}
        for m in self.movies.values():
            for i, (pid, character) in enumerate(m.get("cast", [])):
                self.person_movies.setdefault(pid, []).append(("cast", m, i, character))
                self.credits[self.credit_id("movie", m["id"], pid, "cast", character)] = {
                    "kind": "movie", "media": m, "person": pid, "type": "cast", "job": "Actor", "character": character}
            for pid, job in m.get("crew", []):
                self.person_movies.setdefault(pid, []).append(("crew", m, 0, job))
                self.credits[self.credit_id("movie", m["id"], pid, "crew", job)] = {
                    "kind": "movie", "media": m, "person": pid, "type": "crew", "job": job}
            for j, review in enumerate(m.get("reviews", [])):
                self.reviews[self._review_id("movie", m["id"], j)] = {"media": m, "kind": "movie", "review": review}
        for t in self.tv.values():
            people: dict[tuple[int, str, str], int] = {}
            for pid, character in t.get("cast", []):
                people[(pid, "cast", character)] = self._episode_count(t, pid, "cast")
            for pid, job in t.get("crew", []):
                people[(pid, "crew", job)] = self._episode_count(t, pid, job)
            for season in t.get("seasons", []):
                for ep in season.get("episodes", []):
                    for pid, job in ep.get("crew", []):
                        people.setdefault((pid, "crew", job), self._episode_count(t, pid, job))
                    for pid, character in ep.get("guests", []):
                        people.setdefault((pid, "cast", character), self._episode_count(t, pid, "guest"))
            for (pid, kind, what), count in people.items():
                self.person_tv.setdefault(pid, []).append((kind, t, count, what))
                self.credits[self.credit_id("tv", t["id"], pid, kind, what)] = {
                    "kind": "tv", "media": t, "person": pid, "type": kind, "job": what if kind == "crew" else "Actor",
                    "character": what if kind == "cast" else None}
            for j, review in enumerate(t.get("reviews", [])):
                self.reviews[self._review_id("tv", t["id"], j)] = {"media": t, "kind": "tv", "review": review}

    @staticmethod
    def _episode_count(show: dict[str, Any], pid: int, role: str) -> int:
        n = 0
        for season in show.get("seasons", []):
            for ep in season.get("episodes", []):
                if role == "cast" or role == "guest":
                    n += any(p == pid for p, _ in ep.get("guests", []))
                else:
                    n += any(p == pid and j == role for p, j in ep.get("crew", []))
        if role == "cast" and n == 0:
            return sum(s.get("count", 0) for s in show.get("seasons", []) if s.get("n", 1) > 0) or 1
        return max(n, 1)

    @staticmethod
    def credit_id(kind: str, media: int, pid: int, role: str, what: str) -> str:
        """The stable credit id of a person's role in a movie or show."""
        return hex_id("credit", kind, media, pid, role, what)

    @staticmethod
    def _review_id(kind: str, media: int, j: int) -> str:
        return hex_id("review", kind, media, j)

    # ------------------------------------------------------------------------------------- objects

    def images(self, kind: str, key: Any, count: int, label: str, ratio: float, width: int) -> list[dict[str, Any]]:
        """``count`` image objects of one kind and label (poster, backdrop, profile, still)."""
        out = []
        for n in range(count):
            out.append({"aspect_ratio": ratio, "height": round(width / ratio), "iso_639_1": "en" if label != "backdrop" else None,
                        "file_path": image_path(kind, key, label, n), "vote_average": round(5.5 - 0.1 * n, 3),
                        "vote_count": max(1, 12 - n), "width": width})
        return out

    def poster(self, kind: str, key: Any) -> str:
        """The first poster's path."""
        return image_path(kind, key, "poster", 0)

    def backdrop(self, kind: str, key: Any) -> str:
        """The first backdrop's path."""
        return image_path(kind, key, "backdrop", 0)

    def movie_brief(self, m: dict[str, Any], media_type: bool = False) -> dict[str, Any]:
        vote = m.get("vote", [0, 0])
        out = {"adult": False, "backdrop_path": self.backdrop("movie", m["id"]), "genre_ids": list(m.get("genres", [])),
               "id": m["id"], "original_language": m.get("lang", "en"), "original_title": m.get("original_title", m["title"]),
               "overview": m.get("overview", ""), "popularity": m.get("pop", 1.0),
               "poster_path": self.poster("movie", m["id"]), "release_date": m.get("date", ""), "title": m["title"],
               "video": False, "vote_average": vote[0], "vote_count": vote[1]}
        if media_type:
            out["media_type"] = "movie"
        return out

    def tv_brief(self, t: dict[str, Any], media_type: bool = False) -> dict[str, Any]:
        vote = t.get("vote", [0, 0])
        out = {"backdrop_path": self.backdrop("tv", t["id"]), "first_air_date": t.get("date", ""),
               "genre_ids": list(t.get("genres", [])), "id": t["id"], "name": t["name"],
               "origin_country": list(t.get("country", ["US"])), "original_language": t.get("lang", "en"),
               "original_name": t.get("original_name", t["name"]), "overview": t.get("overview", ""),
               "popularity": t.get("pop", 1.0), "poster_path": self.poster("tv", t["id"]),
               "vote_average": vote[0], "vote_count": vote[1]}
        if media_type:
            out["media_type"] = "tv"
        return out

    def person_brief(self, p: dict[str, Any], known_for: bool = False, media_type: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"adult": False, "gender": p.get("gender", 0), "id": p["id"],
                               "known_for_department": p.get("dept", "Acting"), "name": p["name"],
                               "original_name": p.get("original_name", p["name"]), "popularity": p.get("pop", 1.0),
                               "profile_path": image_path("person", p["id"], "profile", 0)}
        if known_for:
            works = [(c[1], "movie") for c in self.person_movies.get(p["id"], [])] + \
                    [(c[1], "tv") for c in self.person_tv.get(p["id"], [])]
            seen: set[tuple[str, int]] = set()
            ranked = []
            for work, kind in sorted(works, key=lambda w: -w[0].get("pop", 0)):
                if (kind, work["id"]) not in seen:
                    seen.add((kind, work["id"]))
                    ranked.append(self.movie_brief(work, True) if kind == "movie" else self.tv_brief(work, True))
            out["known_for"] = ranked[:3]
        if media_type:
            out["media_type"] = "person"
        return out

    def biography(self, p: dict[str, Any]) -> str:
        """A biography of the live API's length (TMDB's run to a few paragraphs): the fixture's own, then
        what the database knows (birth, department, the best-known titles with year and role), same every run."""
        name, parts = p["name"], [p.get("bio") or ""]
        born = p.get("birthday")
        if born:
            where = f" in {p['place']}" if p.get("place") else ""
            died = f" and died on {p['deathday']}" if p.get("deathday") else ""
            parts.append(f"{name} was born on {born}{where}{died}.")
        works = [(w.get("pop", 0), str(w.get("title") or w.get("name")), (w.get("date") or "")[:4], what, kind)
                 for kind, w, _n, what in self.person_movies.get(p["id"], []) + self.person_tv.get(p["id"], [])]
        works.sort(key=lambda w: (-w[0], w[1]))
        seen: list[str] = []
        for _pop, title, year, what, kind in works:
            if title in seen or len(seen) >= 10:
                continue
            seen.append(title)
            role = f"as {what}" if kind == "cast" and what else f"({what})" if what else ""
            parts.append(f"{title} ({year or 'unreleased'}) {role}".strip() + ";")
        if seen:
            parts.insert(len(parts) - len(seen), f"Working mainly in {p.get('dept', 'Acting').lower()}, {name} is "
                         f"best known for the following titles:")
            parts[-1] = parts[-1].rstrip(";") + "."
        parts.append(f"{name}'s filmography, images and credits are listed on the person's pages; the "
                     "biography is written by the community and may be incomplete.")
        return "\n\n".join(x for x in [parts[0], " ".join(parts[1:])] if x)

    def _credit_person(self, pid: int) -> dict[str, Any]:
        p = self.people.get(pid) or self.crowd.get(pid) or {"id": pid, "name": f"person {pid}"}
        return {"adult": False, "gender": p.get("gender", 0), "id": pid, "known_for_department": p.get("dept", "Acting"),
                "name": p["name"], "original_name": p.get("original_name", p["name"]), "popularity": p.get("pop", 1.0),
                "profile_path": image_path("person", pid, "profile", 0)}

    def cast_credits(self, kind: str, media: int, cast: list[list[Any]], with_cast_id: bool = True) -> list[dict[str, Any]]:
        """Cast entries (person, character, credit id, order) of ``[person id, character]`` pairs."""
        out = []
        for i, (pid, character) in enumerate(cast):
            item = {**self._credit_person(pid), "character": character,
                    "credit_id": self.credit_id(kind, media, pid, "cast", character), "order": i}
            if with_cast_id:
                item["cast_id"] = i + 1
            out.append(item)
        return out

    def crew_credits(self, kind: str, media: int, crew: list[list[Any]]) -> list[dict[str, Any]]:
        """Crew entries (person, credit id, department, job) of ``[person id, job]`` pairs."""
        return [{**self._credit_person(pid), "credit_id": self.credit_id(kind, media, pid, "crew", job),
                 "department": department(job), "job": job} for pid, job in crew]

    def company_brief(self, cid: int) -> dict[str, Any]:
        """A company as lists show it: id, logo, name, country."""
        c = self.companies.get(cid, {"id": cid, "name": f"company {cid}"})
        return {"id": cid, "logo_path": image_path("company", cid, "logo", 0, ext=".png") if c.get("logo", True) else None,
                "name": c["name"], "origin_country": c.get("country", "")}

    def genres(self, kind: str, ids: list[int]) -> list[dict[str, Any]]:
        """Genre objects (id, name) of genre ids."""
        return [{"id": g, "name": self.genre_names[kind].get(g, str(g))} for g in ids]

    def media_reviews(self, kind: str, media: dict[str, Any]) -> list[dict[str, Any]]:
        """The review objects of a movie or show, in fixture order."""
        out = []
        for j, review in enumerate(media.get("reviews", [])):
            author, created, content = review[0], review[1], review[2]
            rating = review[3] if len(review) > 3 else None
            rid = self._review_id(kind, media["id"], j)
            out.append({"author": author, "author_details": {"name": "", "username": author, "avatar_path": None,
                                                             "rating": rating},
                        "content": content, "created_at": f"{created}T12:00:00.000Z", "id": rid,
                        "updated_at": f"{created}T12:00:00.000Z", "url": f"https://www.themoviedb.org/review/{rid}"})
        return out

    # ------------------------------------------------------------------------------------- helpers

    @staticmethod
    def page(args: dict[str, Any], items: list[Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Page ``args['page']`` of ``items`` (20 a page; outside 1..500: TMDB's error 22), ``extra`` keys added."""
        page = args.get("page")
        page = 1 if page is None else page
        if not 1 <= page <= 500:
            raise ApiError(400, "Invalid page: Pages start at 1 and max at 500. They are expected to be an integer.", 22)
        out: dict[str, Any] = {"page": page, "results": items[(page - 1) * PAGE: page * PAGE]}
        if extra:
            out.update(extra)
        out["total_pages"] = max(1, math.ceil(len(items) / PAGE)) if items else 1
        out["total_results"] = len(items)
        return out

    def get(self, table: dict[int, dict[str, Any]], key: Any) -> dict[str, Any]:
        """``table[key]``, else TMDB's 404 (status 34)."""
        item = table.get(key)
        if item is None:
            raise ApiError(404, "The resource you requested could not be found.", 34)
        return item

    def season(self, t: dict[str, Any], n: int) -> dict[str, Any]:
        """Season ``n`` of show ``t``, else 404."""
        for season in t.get("seasons", []):
            if season.get("n") == n:
                return cast("dict[str, Any]", season)
        raise ApiError(404, "The resource you requested could not be found.", 34)

    def episode(self, season: dict[str, Any], n: int) -> dict[str, Any]:
        """Episode ``n`` of a season, else 404."""
        for ep in season.get("episodes", []):
            if ep.get("n") == n:
                return cast("dict[str, Any]", ep)
        raise ApiError(404, "The resource you requested could not be found.", 34)

    def neighbours(self, table: dict[int, dict[str, Any]], item: dict[str, Any], key: str) -> list[dict[str, Any]]:
        """Similar titles or recommendations: the fixture's list, else the titles sharing most genres."""
        listed = item.get(key)
        if listed is None and key == "recommendations":
            listed = item.get("similar")
        if listed is not None:
            return [table[i] for i in listed if i in table]
        genres = set(item.get("genres", []))
        scored = [(len(genres & set(o.get("genres", []))), o.get("pop", 0), -o["id"], o) for o in table.values()
                  if o["id"] != item["id"]]
        return [o for overlap, _p, _i, o in sorted(scored, key=lambda s: (-s[0], -s[1], s[2])) if overlap > 0]

    def released(self, m: dict[str, Any]) -> date | None:
        """The release (or first air) date, None when absent or malformed."""
        try:
            return date.fromisoformat(m.get("date", ""))
        except ValueError:
            return None

    def trending_score(self, item: dict[str, Any], window: str) -> float:
        """The fixture's trending score for the window ('day', 'week'), else popularity / 100."""
        return float((item.get("trending") or {}).get(window, item.get("pop", 0) / 100))


__all__ = ["DEPARTMENTS", "PAGE", "TmdbDb", "by_popularity", "department", "latest", "top_rated", "words_match"]
