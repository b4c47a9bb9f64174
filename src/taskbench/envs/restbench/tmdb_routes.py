"""The handlers of the offline TMDB API, one per operation of RestBench's ``tmdb_oas.json`` (see :mod:`.tmdb`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from .ids import image_path, small_int
from .service import ApiError
from .tmdb import TMDB, _words_match

Handler = Any


def routes(db: TMDB) -> dict[str, Handler]:  # noqa: C901 - one table of small closures
    movies, tv, people = db.movies, db.tv, db.people

    def released(m: dict[str, Any]) -> date:
        return db._released(m) or date.min

    # ------------------------------------------------------------------------------------ movies

    def movie_details(m: dict[str, Any]) -> dict[str, Any]:
        coll = db.collections.get(m.get("collection")) if m.get("collection") else None
        vote = m.get("vote", [0, 0])
        return {
            "adult": False, "backdrop_path": db._backdrop("movie", m["id"]),
            "belongs_to_collection": None if coll is None else {
                "id": coll["id"], "name": coll["name"], "poster_path": db._poster("collection", coll["id"]),
                "backdrop_path": db._backdrop("collection", coll["id"])},
            "budget": m.get("budget", 0), "genres": db._genres("movie", m.get("genres", [])),
            "homepage": m.get("homepage", ""), "id": m["id"], "imdb_id": m.get("imdb_id"),
            "original_language": m.get("lang", "en"), "original_title": m.get("original_title", m["title"]),
            "overview": m.get("overview", ""), "popularity": m.get("pop", 1.0),
            "poster_path": db._poster("movie", m["id"]),
            "production_companies": [db._company_brief(c) for c in m.get("companies", [])],
            "production_countries": [{"iso_3166_1": c, "name": db.countries.get(c, c)} for c in m.get("countries", [])],
            "release_date": m.get("date", ""), "revenue": m.get("revenue", 0), "runtime": m.get("runtime", 0),
            "spoken_languages": [{"english_name": db.languages.get(x, x), "iso_639_1": x, "name": db.languages.get(x, x)}
                                 for x in m.get("spoken", [m.get("lang", "en")])],
            "status": m.get("status", "Released" if released(m) <= db.today else "Post Production"),
            "tagline": m.get("tagline", ""), "title": m["title"], "video": False,
            "vote_average": vote[0], "vote_count": vote[1],
        }

    def movie(args: dict[str, Any]) -> dict[str, Any]:
        return db._get(movies, args["movie_id"])

    def get_movie(args: dict[str, Any], _s: str) -> Any:
        m = movie(args)
        out = movie_details(m)
        extras = {"credits": movie_credits, "images": movie_images, "keywords": movie_keywords,
                  "release_dates": movie_release_dates, "reviews": movie_reviews, "similar": movie_similar,
                  "recommendations": movie_recommendations}
        for name in str(args.get("append_to_response") or "").split(","):
            name = name.strip()
            if name in extras:
                body = extras[name]({"movie_id": m["id"]}, _s)
                body.pop("id", None)
                out[name] = body
        return out

    def movie_credits(args: dict[str, Any], _s: str) -> Any:
        m = movie(args)
        return {"id": m["id"], "cast": db._cast("movie", m["id"], m.get("cast", [])),
                "crew": db._crew("movie", m["id"], m.get("crew", []))}

    def movie_images(args: dict[str, Any], _s: str) -> Any:
        m = movie(args)
        posters, backdrops = (m.get("images") or [2, 2])[:2]
        return {"id": m["id"], "backdrops": db._images("movie", m["id"], backdrops, "backdrop", 1.778, 1920),
                "logos": [], "posters": db._images("movie", m["id"], posters, "poster", 0.667, 1000)}

    def movie_keywords(args: dict[str, Any], _s: str) -> Any:
        m = movie(args)
        return {"id": m["id"], "keywords": [{"id": small_int("keyword", k), "name": k} for k in m.get("keywords", [])]}

    def movie_release_dates(args: dict[str, Any], _s: str) -> Any:
        m = movie(args)
        by_country: dict[str, list[dict[str, Any]]] = {}
        for country, when, kind, cert, *note in m.get("release", []) or [["US", m.get("date", ""), 3, ""]]:
            by_country.setdefault(country, []).append({
                "certification": cert, "descriptors": [], "iso_639_1": "", "note": note[0] if note else "",
                "release_date": f"{when}T00:00:00.000Z", "type": kind})
        return {"id": m["id"], "results": [{"iso_3166_1": c, "release_dates": d} for c, d in by_country.items()]}

    def movie_reviews(args: dict[str, Any], _s: str) -> Any:
        m = movie(args)
        return {"id": m["id"], **db._page(args, db._reviews("movie", m))}

    def movie_similar(args: dict[str, Any], _s: str) -> Any:
        m = movie(args)
        return db._page(args, [db.movie_brief(o) for o in db._neighbours(movies, m, "similar")])

    def movie_recommendations(args: dict[str, Any], _s: str) -> Any:
        m = movie(args)
        return db._page(args, [db.movie_brief(o) for o in db._neighbours(movies, m, "recommendations")])

    def by_popularity(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(items, key=lambda x: (-x.get("pop", 0), x["id"]))

    def top_rated(items: list[dict[str, Any]], min_votes: int) -> list[dict[str, Any]]:
        rated = [x for x in items if x.get("vote", [0, 0])[1] >= min_votes]
        return sorted(rated, key=lambda x: (-x["vote"][0], -x["vote"][1], x["id"]))

    def movie_popular(args: dict[str, Any], _s: str) -> Any:
        return db._page(args, [db.movie_brief(m) for m in by_popularity(list(movies.values()))])

    def movie_top_rated(args: dict[str, Any], _s: str) -> Any:
        return db._page(args, [db.movie_brief(m) for m in top_rated(list(movies.values()), 300)])

    def window(low: date, high: date) -> list[dict[str, Any]]:
        return by_popularity([m for m in movies.values() if low <= released(m) <= high])

    def movie_now_playing(args: dict[str, Any], _s: str) -> Any:
        low, high = db.today - timedelta(days=42), db.today
        return db._page(args, [db.movie_brief(m) for m in window(low, high)],
                        {"dates": {"maximum": high.isoformat(), "minimum": low.isoformat()}})

    def movie_upcoming(args: dict[str, Any], _s: str) -> Any:
        low, high = db.today + timedelta(days=1), db.today + timedelta(days=28)
        return db._page(args, [db.movie_brief(m) for m in window(low, high)],
                        {"dates": {"maximum": high.isoformat(), "minimum": low.isoformat()}})

    def latest(table: dict[int, dict[str, Any]]) -> dict[str, Any]:
        marked = [x for x in table.values() if x.get("latest")]
        return marked[0] if marked else table[max(table)]

    def movie_latest(_a: dict[str, Any], _s: str) -> Any:
        return movie_details(latest(movies))

    # ------------------------------------------------------------------------------------ search

    def search(items: list[dict[str, Any]], query: str, *fields: str) -> list[dict[str, Any]]:
        ranked = []
        for item in items:
            ok, rank = _words_match(query, *(item.get(f) or "" for f in fields), *item.get("aka", []))
            if ok:
                ranked.append((rank, -item.get("pop", 0), item["id"], item))
        return [r[-1] for r in sorted(ranked, key=lambda r: r[:3])]

    def year_of(value: str) -> int | None:
        return int(value[:4]) if value[:4].isdigit() else None

    def search_movie(args: dict[str, Any], _s: str) -> Any:
        found = search(list(movies.values()), args["query"], "title", "original_title")
        for key in ("year", "primary_release_year"):
            if args.get(key):
                found = [m for m in found if year_of(m.get("date", "")) == args[key]]
        return db._page(args, [db.movie_brief(m) for m in found])

    def search_tv(args: dict[str, Any], _s: str) -> Any:
        found = search(list(tv.values()), args["query"], "name", "original_name")
        if args.get("first_air_date_year"):
            found = [t for t in found if year_of(t.get("date", "")) == args["first_air_date_year"]]
        return db._page(args, [db.tv_brief(t) for t in found])

    def search_person(args: dict[str, Any], _s: str) -> Any:
        found = search(list(people.values()), args["query"], "name")
        return db._page(args, [db.person_brief(p, known_for=True) for p in found])

    def search_company(args: dict[str, Any], _s: str) -> Any:
        found = search(list(db.companies.values()), args["query"], "name")
        return db._page(args, [db._company_brief(c["id"]) for c in found])

    def collection_brief(c: dict[str, Any]) -> dict[str, Any]:
        return {"adult": False, "backdrop_path": db._backdrop("collection", c["id"]), "id": c["id"], "name": c["name"],
                "original_language": "en", "original_name": c["name"], "overview": c.get("overview", ""),
                "poster_path": db._poster("collection", c["id"])}

    def search_collection(args: dict[str, Any], _s: str) -> Any:
        found = search(list(db.collections.values()), args["query"], "name")
        return db._page(args, [collection_brief(c) for c in found])

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

    def discover_movie(args: dict[str, Any], _s: str) -> Any:
        out = []
        genres, genres_any = _ids(args.get("with_genres"))
        without, _ = _ids(args.get("without_genres"))
        cast, cast_any = _ids(args.get("with_cast"))
        crew, crew_any = _ids(args.get("with_crew"))
        anyone, anyone_any = _ids(args.get("with_people"))
        companies, companies_any = _ids(args.get("with_companies"))
        low = _date(args, "primary_release_date.gte") or _date(args, "release_date.gte")
        high = _date(args, "primary_release_date.lte") or _date(args, "release_date.lte")
        for m in movies.values():
            when = db._released(m)
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
        return db._page(args, [db.movie_brief(m) for m in _sort(out, args.get("sort_by", ""), "date", "title")])

    def discover_tv(args: dict[str, Any], _s: str) -> Any:
        out = []
        genres, genres_any = _ids(args.get("with_genres"))
        without, _ = _ids(args.get("without_genres"))
        networks, networks_any = _ids(args.get("with_networks"))
        companies, companies_any = _ids(args.get("with_companies"))
        low, high = _date(args, "first_air_date.gte"), _date(args, "first_air_date.lte")
        for t in tv.values():
            when = db._released(t)
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
        return db._page(args, [db.tv_brief(t) for t in _sort(out, args.get("sort_by", ""), "date", "name")])

    # ------------------------------------------------------------------------------------ people

    def person(args: dict[str, Any]) -> dict[str, Any]:
        return db.crowd.get(args["person_id"]) or db._get(people, args["person_id"])

    def get_person(args: dict[str, Any], _s: str) -> Any:
        p = person(args)
        return {"adult": False, "also_known_as": list(p.get("aka", [])), "biography": db.biography(p),
                "birthday": p.get("birthday"), "deathday": p.get("deathday"), "gender": p.get("gender", 0),
                "homepage": p.get("homepage"), "id": p["id"], "imdb_id": p.get("imdb_id"),
                "known_for_department": p.get("dept", "Acting"), "name": p["name"],
                "place_of_birth": p.get("place"), "popularity": p.get("pop", 1.0),
                "profile_path": image_path("person", p["id"], "profile", 0)}

    def person_movie_credits(args: dict[str, Any], _s: str) -> Any:
        p = person(args)
        cast, crew = [], []
        for kind, m, order, what in db.person_movies.get(p["id"], []):
            brief = db.movie_brief(m)
            cid = db._credit_id("movie", m["id"], p["id"], kind, what)
            if kind == "cast":
                cast.append({**brief, "character": what, "credit_id": cid, "order": order})
            else:
                crew.append({**brief, "credit_id": cid, "department": _dept(what), "job": what})
        return {"cast": cast, "crew": crew, "id": p["id"]}

    def person_tv_credits(args: dict[str, Any], _s: str) -> Any:
        p = person(args)
        cast, crew = [], []
        for kind, t, count, what in db.person_tv.get(p["id"], []):
            brief = db.tv_brief(t)
            cid = db._credit_id("tv", t["id"], p["id"], kind, what)
            if kind == "cast":
                cast.append({**brief, "character": what, "credit_id": cid, "episode_count": count})
            else:
                crew.append({**brief, "credit_id": cid, "department": _dept(what), "episode_count": count, "job": what})
        return {"cast": cast, "crew": crew, "id": p["id"]}

    def person_images(args: dict[str, Any], _s: str) -> Any:
        p = person(args)
        return {"id": p["id"], "profiles": db._images("person", p["id"], p.get("images", 2), "profile", 0.667, 800)}

    def person_popular(args: dict[str, Any], _s: str) -> Any:
        return db._page(args, [db.person_brief(p, known_for=True) for p in by_popularity(list(people.values()))])

    def get_credit(args: dict[str, Any], _s: str) -> Any:
        credit = db.credits.get(args["credit_id"])
        if credit is None:
            raise ApiError(404, "The resource you requested could not be found.", 34)
        media, p = credit["media"], people.get(credit["person"]) or db.crowd.get(credit["person"], {"id": credit["person"], "name": ""})
        if credit["kind"] == "movie":
            media_obj: dict[str, Any] = db.movie_brief(media)
        else:
            media_obj = {**db.tv_brief(media), "episodes": [], "seasons": []}
        if credit.get("character"):
            media_obj["character"] = credit["character"]
        return {"credit_type": credit["type"], "department": "Acting" if credit["type"] == "cast" else _dept(credit["job"]),
                "job": credit["job"], "media": media_obj, "media_type": credit["kind"], "id": args["credit_id"],
                "person": db.person_brief(p) if "gender" in p or "dept" in p else {"id": p["id"], "name": p["name"]}}

    # ------------------------------------------------------------------------------------ companies, collections

    def get_company(args: dict[str, Any], _s: str) -> Any:
        c = db._get(db.companies, args["company_id"])
        parent = db.companies.get(c.get("parent")) if c.get("parent") else None
        return {"description": c.get("description", ""), "headquarters": c.get("hq", ""),
                "homepage": c.get("homepage", ""), "id": c["id"],
                "logo_path": db._company_brief(c["id"])["logo_path"], "name": c["name"],
                "origin_country": c.get("country", ""),
                "parent_company": None if parent is None else {"id": parent["id"], "name": parent["name"],
                                                               "logo_path": db._company_brief(parent["id"])["logo_path"]}}

    def logos(kind: str, key: int) -> list[dict[str, Any]]:
        return [{"aspect_ratio": 2.98, "file_path": image_path(kind, key, "logo", 0, ext=".png"), "height": 99,
                 "id": image_path(kind, key, "logo-id", 0)[1:25], "file_type": ".svg", "vote_average": 5.3,
                 "vote_count": 3, "width": 295}]

    def company_images(args: dict[str, Any], _s: str) -> Any:
        c = db._get(db.companies, args["company_id"])
        return {"id": c["id"], "logos": logos("company", c["id"]) if c.get("logo", True) else []}

    def get_collection(args: dict[str, Any], _s: str) -> Any:
        c = db._get(db.collections, args["collection_id"])
        parts = sorted((movies[i] for i in c.get("parts", []) if i in movies), key=released)
        return {"id": c["id"], "name": c["name"], "overview": c.get("overview", ""),
                "poster_path": db._poster("collection", c["id"]), "backdrop_path": db._backdrop("collection", c["id"]),
                "parts": [db.movie_brief(m) for m in parts]}

    def collection_images(args: dict[str, Any], _s: str) -> Any:
        c = db._get(db.collections, args["collection_id"])
        return {"id": c["id"], "backdrops": db._images("collection", c["id"], 2, "backdrop", 1.778, 1920),
                "posters": db._images("collection", c["id"], 3, "poster", 0.667, 1000)}

    def get_review(args: dict[str, Any], _s: str) -> Any:
        entry = db.reviews.get(args["review_id"])
        if entry is None:
            raise ApiError(404, "The resource you requested could not be found.", 34)
        media = entry["media"]
        review = next(r for r in db._reviews(entry["kind"], media) if r["id"] == args["review_id"])
        return {"id": review["id"], "author": review["author"], "author_details": review["author_details"],
                "content": review["content"], "created_at": review["created_at"], "iso_639_1": "en",
                "media_id": media["id"], "media_title": media.get("title", media.get("name")),
                "media_type": "Movie" if entry["kind"] == "movie" else "TV", "updated_at": review["updated_at"],
                "url": review["url"]}

    # ------------------------------------------------------------------------------------ genres, trending

    def genre_list(kind: str) -> Handler:
        return lambda _a, _s: {"genres": [{"id": g, "name": n} for g, n in sorted(db.genre_names[kind].items(),
                                                                                   key=lambda x: x[1])]}

    def trending(args: dict[str, Any], _s: str) -> Any:
        kind, time_window = args["media_type"], args["time_window"]
        pool: list[tuple[float, int, dict[str, Any]]] = []
        if kind in ("all", "movie"):
            pool += [(db._trending_score(m, time_window), m["id"], db.movie_brief(m, True)) for m in movies.values()]
        if kind in ("all", "tv"):
            pool += [(db._trending_score(t, time_window), t["id"], db.tv_brief(t, True)) for t in tv.values()]
        if kind in ("all", "person"):
            pool += [(db._trending_score(p, time_window), p["id"], db.person_brief(p, True, True))
                     for p in people.values()]
        return db._page(args, [item for _s2, _i, item in sorted(pool, key=lambda x: (-x[0], x[1]))])

    from .tmdb_tv import tv_routes

    table: dict[str, Handler] = {
        "GET /movie/{movie_id}": get_movie,
        "GET /movie/{movie_id}/credits": movie_credits,
        "GET /movie/{movie_id}/images": movie_images,
        "GET /movie/{movie_id}/keywords": movie_keywords,
        "GET /movie/{movie_id}/release_dates": movie_release_dates,
        "GET /movie/{movie_id}/reviews": movie_reviews,
        "GET /movie/{movie_id}/similar": movie_similar,
        "GET /movie/{movie_id}/recommendations": movie_recommendations,
        "GET /movie/popular": movie_popular,
        "GET /movie/top_rated": movie_top_rated,
        "GET /movie/now_playing": movie_now_playing,
        "GET /movie/upcoming": movie_upcoming,
        "GET /movie/latest": movie_latest,
        "GET /search/movie": search_movie,
        "GET /search/tv": search_tv,
        "GET /search/person": search_person,
        "GET /search/company": search_company,
        "GET /search/collection": search_collection,
        "GET /discover/movie": discover_movie,
        "GET /discover/tv": discover_tv,
        "GET /person/{person_id}": get_person,
        "GET /person/{person_id}/movie_credits": person_movie_credits,
        "GET /person/{person_id}/tv_credits": person_tv_credits,
        "GET /person/{person_id}/images": person_images,
        "GET /person/popular": person_popular,
        "GET /credit/{credit_id}": get_credit,
        "GET /company/{company_id}": get_company,
        "GET /company/{company_id}/images": company_images,
        "GET /collection/{collection_id}": get_collection,
        "GET /collection/{collection_id}/images": collection_images,
        "GET /review/{review_id}": get_review,
        "GET /genre/movie/list": genre_list("movie"),
        "GET /genre/tv/list": genre_list("tv"),
        "GET /trending/{media_type}/{time_window}": trending,
    }
    table.update(tv_routes(db, by_popularity, top_rated, latest, search))
    return table


def _dept(job: str) -> str:
    from .tmdb import _DEPARTMENTS

    return _DEPARTMENTS.get(job, "Crew")


__all__ = ["routes"]
