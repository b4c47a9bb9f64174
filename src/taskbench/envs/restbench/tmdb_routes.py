"""The handlers of the offline TMDB API, one per operation of RestBench's ``tmdb_oas.json`` (see :mod:`.tmdb`);
the TV and network ones are in :mod:`.tmdb_tv`.

Each handler is a function ``(db, args, session) -> body`` registered in :data:`ROUTES` (:mod:`.routing`);
it reads the fixtures through the :class:`~.tmdb_db.TmdbDb` object's public helpers. :func:`routes` binds
both tables to one database.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from .ids import image_path, small_int
from .routing import Endpoint, Handler, Routes
from .service import ApiError
from .tmdb_db import TmdbDb, by_popularity, department, latest, top_rated, words_match
from .tmdb_tv import TV_ROUTES

ROUTES: Routes[TmdbDb] = Routes("tmdb")


def routes(db: TmdbDb) -> dict[str, Endpoint]:
    """Every TMDB handler (movies and the rest here, TV and networks from :mod:`.tmdb_tv`) bound to ``db``."""
    return {**ROUTES.bind(db), **TV_ROUTES.bind(db)}


def released(db: TmdbDb, m: dict[str, Any]) -> date:
    return db.released(m) or date.min


# ------------------------------------------------------------------------------------ movies

def movie_details(db: TmdbDb, m: dict[str, Any]) -> dict[str, Any]:
    coll = db.collections.get(m.get("collection")) if m.get("collection") else None
    vote = m.get("vote", [0, 0])
    return {
        "adult": False, "backdrop_path": db.backdrop("movie", m["id"]),
        "belongs_to_collection": None if coll is None else {
            "id": coll["id"], "name": coll["name"], "poster_path": db.poster("collection", coll["id"]),
            "backdrop_path": db.backdrop("collection", coll["id"])},
        "budget": m.get("budget", 0), "genres": db.genres("movie", m.get("genres", [])),
        "homepage": m.get("homepage", ""), "id": m["id"], "imdb_id": m.get("imdb_id"),
        "original_language": m.get("lang", "en"), "original_title": m.get("original_title", m["title"]),
        "overview": m.get("overview", ""), "popularity": m.get("pop", 1.0),
        "poster_path": db.poster("movie", m["id"]),
        "production_companies": [db.company_brief(c) for c in m.get("companies", [])],
        "production_countries": [{"iso_3166_1": c, "name": db.countries.get(c, c)} for c in m.get("countries", [])],
        "release_date": m.get("date", ""), "revenue": m.get("revenue", 0), "runtime": m.get("runtime", 0),
        "spoken_languages": [{"english_name": db.languages.get(x, x), "iso_639_1": x, "name": db.languages.get(x, x)}
                             for x in m.get("spoken", [m.get("lang", "en")])],
        "status": m.get("status", "Released" if released(db, m) <= db.today else "Post Production"),
        "tagline": m.get("tagline", ""), "title": m["title"], "video": False,
        "vote_average": vote[0], "vote_count": vote[1],
    }


def movie(db: TmdbDb, args: dict[str, Any]) -> dict[str, Any]:
    return db.get(db.movies, args["movie_id"])


@ROUTES.route("GET /movie/{movie_id}")
def get_movie(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    m = movie(db, args)
    out = movie_details(db, m)
    extras: dict[str, Handler[TmdbDb]] = {"credits": movie_credits, "images": movie_images, "keywords": movie_keywords,
              "release_dates": movie_release_dates, "reviews": movie_reviews, "similar": movie_similar,
              "recommendations": movie_recommendations}
    for name in str(args.get("append_to_response") or "").split(","):
        name = name.strip()
        if name in extras:
            body = extras[name](db, {"movie_id": m["id"]}, _s)
            body.pop("id", None)
            out[name] = body
    return out


@ROUTES.route("GET /movie/{movie_id}/credits")
def movie_credits(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    m = movie(db, args)
    return {"id": m["id"], "cast": db.cast_credits("movie", m["id"], m.get("cast", [])),
            "crew": db.crew_credits("movie", m["id"], m.get("crew", []))}


@ROUTES.route("GET /movie/{movie_id}/images")
def movie_images(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    m = movie(db, args)
    posters, backdrops = (m.get("images") or [2, 2])[:2]
    return {"id": m["id"], "backdrops": db.images("movie", m["id"], backdrops, "backdrop", 1.778, 1920),
            "logos": [], "posters": db.images("movie", m["id"], posters, "poster", 0.667, 1000)}


@ROUTES.route("GET /movie/{movie_id}/keywords")
def movie_keywords(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    m = movie(db, args)
    return {"id": m["id"], "keywords": [{"id": small_int("keyword", k), "name": k} for k in m.get("keywords", [])]}


@ROUTES.route("GET /movie/{movie_id}/release_dates")
def movie_release_dates(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    m = movie(db, args)
    by_country: dict[str, list[dict[str, Any]]] = {}
    for country, when, kind, cert, *note in m.get("release", []) or [["US", m.get("date", ""), 3, ""]]:
        by_country.setdefault(country, []).append({
            "certification": cert, "descriptors": [], "iso_639_1": "", "note": note[0] if note else "",
            "release_date": f"{when}T00:00:00.000Z", "type": kind})
    return {"id": m["id"], "results": [{"iso_3166_1": c, "release_dates": d} for c, d in by_country.items()]}


@ROUTES.route("GET /movie/{movie_id}/reviews")
def movie_reviews(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    m = movie(db, args)
    return {"id": m["id"], **db.page(args, db.media_reviews("movie", m))}


@ROUTES.route("GET /movie/{movie_id}/similar")
def movie_similar(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    m = movie(db, args)
    return db.page(args, [db.movie_brief(o) for o in db.neighbours(db.movies, m, "similar")])


@ROUTES.route("GET /movie/{movie_id}/recommendations")
def movie_recommendations(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    m = movie(db, args)
    return db.page(args, [db.movie_brief(o) for o in db.neighbours(db.movies, m, "recommendations")])


@ROUTES.route("GET /movie/popular")
def movie_popular(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    return db.page(args, [db.movie_brief(m) for m in by_popularity(list(db.movies.values()))])


@ROUTES.route("GET /movie/top_rated")
def movie_top_rated(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    return db.page(args, [db.movie_brief(m) for m in top_rated(list(db.movies.values()), 300)])


def window(db: TmdbDb, low: date, high: date) -> list[dict[str, Any]]:
    return by_popularity([m for m in db.movies.values() if low <= released(db, m) <= high])


@ROUTES.route("GET /movie/now_playing")
def movie_now_playing(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    low, high = db.today - timedelta(days=42), db.today
    return db.page(args, [db.movie_brief(m) for m in window(db, low, high)],
                    {"dates": {"maximum": high.isoformat(), "minimum": low.isoformat()}})


@ROUTES.route("GET /movie/upcoming")
def movie_upcoming(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    low, high = db.today + timedelta(days=1), db.today + timedelta(days=28)
    return db.page(args, [db.movie_brief(m) for m in window(db, low, high)],
                    {"dates": {"maximum": high.isoformat(), "minimum": low.isoformat()}})


@ROUTES.route("GET /movie/latest")
def movie_latest(db: TmdbDb, _a: dict[str, Any], _s: str) -> Any:
    return movie_details(db, latest(db.movies))


# ------------------------------------------------------------------------------------ search

def search(items: list[dict[str, Any]], query: str, *fields: str) -> list[dict[str, Any]]:
    ranked = []
    for item in items:
        ok, rank = words_match(query, *(item.get(f) or "" for f in fields), *item.get("aka", []))
        if ok:
            ranked.append((rank, -item.get("pop", 0), item["id"], item))
    return [r[-1] for r in sorted(ranked, key=lambda r: r[:3])]


def year_of(value: str) -> int | None:
    return int(value[:4]) if value[:4].isdigit() else None


@ROUTES.route("GET /search/movie")
def search_movie(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    found = search(list(db.movies.values()), args["query"], "title", "original_title")
    for key in ("year", "primary_release_year"):
        if args.get(key):
            found = [m for m in found if year_of(m.get("date", "")) == args[key]]
    return db.page(args, [db.movie_brief(m) for m in found])


@ROUTES.route("GET /search/tv")
def search_tv(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    found = search(list(db.tv.values()), args["query"], "name", "original_name")
    if args.get("first_air_date_year"):
        found = [t for t in found if year_of(t.get("date", "")) == args["first_air_date_year"]]
    return db.page(args, [db.tv_brief(t) for t in found])


@ROUTES.route("GET /search/person")
def search_person(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    found = search(list(db.people.values()), args["query"], "name")
    return db.page(args, [db.person_brief(p, known_for=True) for p in found])


@ROUTES.route("GET /search/company")
def search_company(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    found = search(list(db.companies.values()), args["query"], "name")
    return db.page(args, [db.company_brief(c["id"]) for c in found])


def collection_brief(db: TmdbDb, c: dict[str, Any]) -> dict[str, Any]:
    return {"adult": False, "backdrop_path": db.backdrop("collection", c["id"]), "id": c["id"], "name": c["name"],
            "original_language": "en", "original_name": c["name"], "overview": c.get("overview", ""),
            "poster_path": db.poster("collection", c["id"])}


@ROUTES.route("GET /search/collection")
def search_collection(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    found = search(list(db.collections.values()), args["query"], "name")
    return db.page(args, [collection_brief(db, c) for c in found])


# ------------------------------------------------------------------------------------ discover

def _ids(text: Any) -> tuple[list[int], bool]:
    raw = str(text or "")
    any_of = "|" in raw
    parts = [p for p in raw.replace("|", ",").split(",") if p.strip()]
    try:
        return [int(p) for p in parts], any_of
    except ValueError as exc:
        raise ApiError(400, f"Invalid parameters: Your request parameters are incorrect. ({raw!r} is not a list "
                            "of ids)", 5) from exc


def _matches(ids: list[int], have: set[int], any_of: bool) -> bool:
    return any(i in have for i in ids) if any_of else all(i in have for i in ids)


def _date(args: dict[str, Any], key: str) -> date | None:
    value = args.get(key)
    if not value:
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError as exc:
        raise ApiError(400, f"Invalid parameters: Your request parameters are incorrect. ({key}: expected "
                            "YYYY-MM-DD)", 5) from exc


def _sort(items: list[dict[str, Any]], sort_by: str, date_key: str, title_key: str) -> list[dict[str, Any]]:
    field, _, order = (sort_by or "popularity.desc").rpartition(".")
    keys: dict[str, Callable[[dict[str, Any]], Any]] = {"popularity": lambda x: x.get("pop", 0), "vote_average": lambda x: x.get("vote", [0, 0])[0],
            "vote_count": lambda x: x.get("vote", [0, 0])[1], "revenue": lambda x: x.get("revenue", 0),
            "release_date": lambda x: x.get(date_key, ""), "primary_release_date": lambda x: x.get(date_key, ""),
            "first_air_date": lambda x: x.get(date_key, ""), "original_title": lambda x: x.get(title_key, "")}
    key = keys.get(field, keys["popularity"])
    return sorted(items, key=lambda x: (key(x), -x["id"]), reverse=order != "asc")


def _vote_filters(x: dict[str, Any], args: dict[str, Any]) -> bool:
    avg, count = x.get("vote", [0, 0])
    checks = [("vote_average.gte", avg, 1), ("vote_average.lte", avg, -1),
              ("vote_count.gte", count, 1), ("vote_count.lte", count, -1)]
    for key, have, sign in checks:
        if args.get(key) is not None and (have - args[key]) * sign < 0:
            return False
    runtime = x.get("runtime", 0) if isinstance(x.get("runtime"), int) else (x.get("runtime") or [0])[0]
    if args.get("with_runtime.gte") is not None and runtime < args["with_runtime.gte"]:
        return False
    return not (args.get("with_runtime.lte") is not None and runtime > args["with_runtime.lte"])


@ROUTES.route("GET /discover/movie")
def discover_movie(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    out = []
    genres, genres_any = _ids(args.get("with_genres"))
    without, _ = _ids(args.get("without_genres"))
    cast, cast_any = _ids(args.get("with_cast"))
    crew, crew_any = _ids(args.get("with_crew"))
    anyone, anyone_any = _ids(args.get("with_people"))
    companies, companies_any = _ids(args.get("with_companies"))
    low = _date(args, "primary_release_date.gte") or _date(args, "release_date.gte")
    high = _date(args, "primary_release_date.lte") or _date(args, "release_date.lte")
    for m in db.movies.values():
        when = db.released(m)
        if args.get("with_original_language") and m.get("lang", "en") != args["with_original_language"]:
            continue
        year = args.get("primary_release_year") or args.get("year")
        if year and (when is None or when.year != year):
            continue
        if (low and (when is None or when < low)) or (high and (when is None or when > high)):
            continue
        if not _vote_filters(m, args):
            continue
        have_genres = set(m.get("genres", []))
        if (genres and not _matches(genres, have_genres, genres_any)) or have_genres & set(without):
            continue
        cast_ids = {p for p, _ in m.get("cast", [])}
        crew_ids = {p for p, _ in m.get("crew", [])}
        if (cast and not _matches(cast, cast_ids, cast_any)) or (crew and not _matches(crew, crew_ids, crew_any)):
            continue
        if anyone and not _matches(anyone, cast_ids | crew_ids, anyone_any):
            continue
        if companies and not _matches(companies, set(m.get("companies", [])), companies_any):
            continue
        out.append(m)
    return db.page(args, [db.movie_brief(m) for m in _sort(out, args.get("sort_by", ""), "date", "title")])


@ROUTES.route("GET /discover/tv")
def discover_tv(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    out = []
    genres, genres_any = _ids(args.get("with_genres"))
    without, _ = _ids(args.get("without_genres"))
    networks, networks_any = _ids(args.get("with_networks"))
    companies, companies_any = _ids(args.get("with_companies"))
    low, high = _date(args, "first_air_date.gte"), _date(args, "first_air_date.lte")
    for t in db.tv.values():
        when = db.released(t)
        if args.get("with_original_language") and t.get("lang", "en") != args["with_original_language"]:
            continue
        if args.get("first_air_date_year") and (when is None or when.year != args["first_air_date_year"]):
            continue
        if (low and (when is None or when < low)) or (high and (when is None or when > high)):
            continue
        if not _vote_filters(t, args):
            continue
        have = set(t.get("genres", []))
        if (genres and not _matches(genres, have, genres_any)) or have & set(without):
            continue
        if networks and not _matches(networks, set(t.get("networks", [])), networks_any):
            continue
        if companies and not _matches(companies, set(t.get("companies", [])), companies_any):
            continue
        out.append(t)
    return db.page(args, [db.tv_brief(t) for t in _sort(out, args.get("sort_by", ""), "date", "name")])


# ------------------------------------------------------------------------------------ people

def person(db: TmdbDb, args: dict[str, Any]) -> dict[str, Any]:
    return db.crowd.get(args["person_id"]) or db.get(db.people, args["person_id"])


@ROUTES.route("GET /person/{person_id}")
def get_person(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    p = person(db, args)
    return {"adult": False, "also_known_as": list(p.get("aka", [])), "biography": db.biography(p),
            "birthday": p.get("birthday"), "deathday": p.get("deathday"), "gender": p.get("gender", 0),
            "homepage": p.get("homepage"), "id": p["id"], "imdb_id": p.get("imdb_id"),
            "known_for_department": p.get("dept", "Acting"), "name": p["name"],
            "place_of_birth": p.get("place"), "popularity": p.get("pop", 1.0),
            "profile_path": image_path("person", p["id"], "profile", 0)}


@ROUTES.route("GET /person/{person_id}/movie_credits")
def person_movie_credits(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    p = person(db, args)
    cast, crew = [], []
    for kind, m, order, what in db.person_movies.get(p["id"], []):
        brief = db.movie_brief(m)
        cid = db.credit_id("movie", m["id"], p["id"], kind, what)
        if kind == "cast":
            cast.append({**brief, "character": what, "credit_id": cid, "order": order})
        else:
            crew.append({**brief, "credit_id": cid, "department": department(what), "job": what})
    return {"cast": cast, "crew": crew, "id": p["id"]}


@ROUTES.route("GET /person/{person_id}/tv_credits")
def person_tv_credits(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    p = person(db, args)
    cast, crew = [], []
    for kind, t, count, what in db.person_tv.get(p["id"], []):
        brief = db.tv_brief(t)
        cid = db.credit_id("tv", t["id"], p["id"], kind, what)
        if kind == "cast":
            cast.append({**brief, "character": what, "credit_id": cid, "episode_count": count})
        else:
            crew.append({**brief, "credit_id": cid, "department": department(what), "episode_count": count, "job": what})
    return {"cast": cast, "crew": crew, "id": p["id"]}


@ROUTES.route("GET /person/{person_id}/images")
def person_images(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    p = person(db, args)
    return {"id": p["id"], "profiles": db.images("person", p["id"], p.get("images", 2), "profile", 0.667, 800)}


@ROUTES.route("GET /person/popular")
def person_popular(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    return db.page(args, [db.person_brief(p, known_for=True) for p in by_popularity(list(db.people.values()))])


@ROUTES.route("GET /credit/{credit_id}")
def get_credit(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    credit = db.credits.get(args["credit_id"])
    if credit is None:
        raise ApiError(404, "The resource you requested could not be found.", 34)
    media, p = credit["media"], db.people.get(credit["person"]) or db.crowd.get(credit["person"], {"id": credit["person"], "name": ""})
    if credit["kind"] == "movie":
        media_obj: dict[str, Any] = db.movie_brief(media)
    else:
        media_obj = {**db.tv_brief(media), "episodes": [], "seasons": []}
    if credit.get("character"):
        media_obj["character"] = credit["character"]
    return {"credit_type": credit["type"], "department": "Acting" if credit["type"] == "cast" else department(credit["job"]),
            "job": credit["job"], "media": media_obj, "media_type": credit["kind"], "id": args["credit_id"],
            "person": db.person_brief(p) if "gender" in p or "dept" in p else {"id": p["id"], "name": p["name"]}}


# ------------------------------------------------------------------------------------ companies, collections

@ROUTES.route("GET /company/{company_id}")
def get_company(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    c = db.get(db.companies, args["company_id"])
    parent = db.companies.get(c.get("parent")) if c.get("parent") else None
    return {"description": c.get("description", ""), "headquarters": c.get("hq", ""),
            "homepage": c.get("homepage", ""), "id": c["id"],
            "logo_path": db.company_brief(c["id"])["logo_path"], "name": c["name"],
            "origin_country": c.get("country", ""),
            "parent_company": None if parent is None else {"id": parent["id"], "name": parent["name"],
                                                           "logo_path": db.company_brief(parent["id"])["logo_path"]}}


def logos(kind: str, key: int) -> list[dict[str, Any]]:
    return [{"aspect_ratio": 2.98, "file_path": image_path(kind, key, "logo", 0, ext=".png"), "height": 99,
             "id": image_path(kind, key, "logo-id", 0)[1:25], "file_type": ".svg", "vote_average": 5.3,
             "vote_count": 3, "width": 295}]


@ROUTES.route("GET /company/{company_id}/images")
def company_images(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    c = db.get(db.companies, args["company_id"])
    return {"id": c["id"], "logos": logos("company", c["id"]) if c.get("logo", True) else []}


@ROUTES.route("GET /collection/{collection_id}")
def get_collection(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    c = db.get(db.collections, args["collection_id"])
    parts = sorted((db.movies[i] for i in c.get("parts", []) if i in db.movies), key=lambda m: released(db, m))
    return {"id": c["id"], "name": c["name"], "overview": c.get("overview", ""),
            "poster_path": db.poster("collection", c["id"]), "backdrop_path": db.backdrop("collection", c["id"]),
            "parts": [db.movie_brief(m) for m in parts]}


@ROUTES.route("GET /collection/{collection_id}/images")
def collection_images(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    c = db.get(db.collections, args["collection_id"])
    return {"id": c["id"], "backdrops": db.images("collection", c["id"], 2, "backdrop", 1.778, 1920),
            "posters": db.images("collection", c["id"], 3, "poster", 0.667, 1000)}


@ROUTES.route("GET /review/{review_id}")
def get_review(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    entry = db.reviews.get(args["review_id"])
    if entry is None:
        raise ApiError(404, "The resource you requested could not be found.", 34)
    media = entry["media"]
    review = next(r for r in db.media_reviews(entry["kind"], media) if r["id"] == args["review_id"])
    return {"id": review["id"], "author": review["author"], "author_details": review["author_details"],
            "content": review["content"], "created_at": review["created_at"], "iso_639_1": "en",
            "media_id": media["id"], "media_title": media.get("title", media.get("name")),
            "media_type": "Movie" if entry["kind"] == "movie" else "TV", "updated_at": review["updated_at"],
            "url": review["url"]}


# ------------------------------------------------------------------------------------ genres, trending

def genre_list(db: TmdbDb, kind: str) -> dict[str, Any]:
    return {"genres": [{"id": g, "name": n} for g, n in sorted(db.genre_names[kind].items(), key=lambda x: x[1])]}


@ROUTES.route("GET /genre/movie/list")
def movie_genres(db: TmdbDb, _a: dict[str, Any], _s: str) -> Any:
    return genre_list(db, "movie")


@ROUTES.route("GET /genre/tv/list")
def tv_genres(db: TmdbDb, _a: dict[str, Any], _s: str) -> Any:
    return genre_list(db, "tv")


@ROUTES.route("GET /trending/{media_type}/{time_window}")
def trending(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    kind, time_window = args["media_type"], args["time_window"]
    pool: list[tuple[float, int, dict[str, Any]]] = []
    if kind in ("all", "movie"):
        pool += [(db.trending_score(m, time_window), m["id"], db.movie_brief(m, True)) for m in db.movies.values()]
    if kind in ("all", "tv"):
        pool += [(db.trending_score(t, time_window), t["id"], db.tv_brief(t, True)) for t in db.tv.values()]
    if kind in ("all", "person"):
        pool += [(db.trending_score(p, time_window), p["id"], db.person_brief(p, True, True))
                 for p in db.people.values()]
    return db.page(args, [item for _s2, _i, item in sorted(pool, key=lambda x: (-x[0], x[1]))])


__all__ = ["ROUTES", "routes"]
