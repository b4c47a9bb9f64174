"""The TV and network handlers of the offline TMDB API (see :mod:`.tmdb`), registered in :data:`TV_ROUTES`
(:mod:`.tmdb_routes` serves them with the rest).

A show's seasons list every season with its episode count; only the episodes the fixtures spell out exist
(others answer 404). Season credits are the season's own cast and crew plus every listed episode's crew.
"""

from __future__ import annotations

from typing import Any

from .ids import image_path, small_int
from .routing import Routes
from .tmdb_db import TmdbDb, by_popularity, latest, top_rated

TV_ROUTES: Routes[TmdbDb] = Routes("tmdb")


def show(db: TmdbDb, args: dict[str, Any]) -> dict[str, Any]:
    return db.get(db.tv, args["tv_id"])


def season_of(db: TmdbDb, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    t = show(db, args)
    return t, db.season(t, args["season_number"])


def season_id(t: dict[str, Any], n: int) -> int:
    return small_int("season", t["id"], n, modulo=9_000_000)


def episode_id(t: dict[str, Any], s: int, e: int) -> int:
    return small_int("episode", t["id"], s, e, modulo=9_000_000)


def episode_obj(db: TmdbDb, t: dict[str, Any], s: dict[str, Any], ep: dict[str, Any], full: bool = True) -> dict[str, Any]:
    eid = episode_id(t, s["n"], ep["n"])
    out: dict[str, Any] = {
        "air_date": ep.get("date", ""), "episode_number": ep["n"], "id": eid, "name": ep.get("name", ""),
        "overview": ep.get("overview", ""), "production_code": ep.get("code", ""), "runtime": ep.get("runtime"),
        "season_number": s["n"], "show_id": t["id"], "still_path": image_path("episode", eid, "still", 0),
        "vote_average": ep.get("vote", 7.5), "vote_count": ep.get("votes", 20)}
    if full:
        out["crew"] = db.crew_credits("tv", t["id"], ep.get("crew", []))
        out["guest_stars"] = db.cast_credits("tv", t["id"], ep.get("guests", []), with_cast_id=False)
    return out


def details(db: TmdbDb, t: dict[str, Any]) -> dict[str, Any]:
    seasons = t.get("seasons", [])
    aired = [(s, ep) for s in seasons if s["n"] > 0 for ep in s.get("episodes", []) if ep.get("date")
             and ep["date"] <= db.today.isoformat()]
    last = max(aired, key=lambda x: x[1]["date"], default=None)
    upcoming = [(s, ep) for s in seasons for ep in s.get("episodes", []) if ep.get("date", "") > db.today.isoformat()]
    nxt = min(upcoming, key=lambda x: x[1]["date"], default=None)
    vote = t.get("vote", [0, 0])
    return {
        "adult": False, "backdrop_path": db.backdrop("tv", t["id"]),
        "created_by": [{"id": pid, "credit_id": db.credit_id("tv", t["id"], pid, "creator", ""),
                        "name": db.people.get(pid, {}).get("name", ""), "gender": db.people.get(pid, {}).get("gender", 0),
                        "profile_path": image_path("person", pid, "profile", 0)} for pid in t.get("created_by", [])],
        "episode_run_time": list(t.get("runtime", [])), "first_air_date": t.get("date", ""),
        "genres": db.genres("tv", t.get("genres", [])), "homepage": t.get("homepage", ""), "id": t["id"],
        "in_production": t.get("status", "Ended") in ("Returning Series", "In Production"),
        "languages": list(t.get("languages", [t.get("lang", "en")])), "last_air_date": t.get("last", ""),
        "last_episode_to_air": None if last is None else episode_obj(db, t, last[0], last[1], full=False),
        "name": t["name"],
        "next_episode_to_air": None if nxt is None else episode_obj(db, t, nxt[0], nxt[1], full=False),
        "networks": [network_brief(db, n) for n in t.get("networks", [])],
        "number_of_episodes": sum(s.get("count", len(s.get("episodes", []))) for s in seasons if s["n"] > 0),
        "number_of_seasons": sum(1 for s in seasons if s["n"] > 0),
        "origin_country": list(t.get("country", ["US"])), "original_language": t.get("lang", "en"),
        "original_name": t.get("original_name", t["name"]), "overview": t.get("overview", ""),
        "popularity": t.get("pop", 1.0), "poster_path": db.poster("tv", t["id"]),
        "production_companies": [db.company_brief(c) for c in t.get("companies", [])],
        "production_countries": [{"iso_3166_1": c, "name": db.countries.get(c, c)} for c in t.get("country", ["US"])],
        "seasons": [{"air_date": s.get("date", ""), "episode_count": s.get("count", len(s.get("episodes", []))),
                     "id": season_id(t, s["n"]), "name": s.get("name", f"Season {s['n']}"),
                     "overview": s.get("overview", ""), "poster_path": db.poster("season", season_id(t, s["n"])),
                     "season_number": s["n"], "vote_average": s.get("vote", 0)} for s in seasons],
        "spoken_languages": [{"english_name": db.languages.get(x, x), "iso_639_1": x, "name": db.languages.get(x, x)}
                             for x in t.get("languages", [t.get("lang", "en")])],
        "status": t.get("status", "Ended"), "tagline": t.get("tagline", ""), "type": t.get("type", "Scripted"),
        "vote_average": vote[0], "vote_count": vote[1],
    }


def network_brief(db: TmdbDb, nid: int) -> dict[str, Any]:
    n = db.networks.get(nid, {"id": nid, "name": f"network {nid}"})
    return {"id": nid, "logo_path": image_path("network", nid, "logo", 0, ext=".png"), "name": n["name"],
            "origin_country": n.get("country", "")}


@TV_ROUTES.route("GET /tv/{tv_id}")
def get_tv(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    return details(db, show(db, args))


@TV_ROUTES.route("GET /tv/{tv_id}/credits")
def tv_credits(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t = show(db, args)
    return {"cast": db.cast_credits("tv", t["id"], t.get("cast", []), with_cast_id=False),
            "crew": db.crew_credits("tv", t["id"], t.get("crew", [])), "id": t["id"]}


@TV_ROUTES.route("GET /tv/{tv_id}/images")
def tv_images(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t = show(db, args)
    posters, backdrops = (t.get("images") or [2, 2])[:2]
    return {"backdrops": db.images("tv", t["id"], backdrops, "backdrop", 1.778, 1920), "id": t["id"],
            "logos": [], "posters": db.images("tv", t["id"], posters, "poster", 0.667, 1000)}


@TV_ROUTES.route("GET /tv/{tv_id}/keywords")
def tv_keywords(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t = show(db, args)
    return {"id": t["id"], "results": [{"id": small_int("keyword", k), "name": k} for k in t.get("keywords", [])]}


@TV_ROUTES.route("GET /tv/{tv_id}/reviews")
def tv_reviews(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t = show(db, args)
    return {"id": t["id"], **db.page(args, db.media_reviews("tv", t))}


@TV_ROUTES.route("GET /tv/{tv_id}/similar")
def tv_similar(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t = show(db, args)
    return db.page(args, [db.tv_brief(o) for o in db.neighbours(db.tv, t, "similar")])


@TV_ROUTES.route("GET /tv/{tv_id}/recommendations")
def tv_recommendations(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t = show(db, args)
    return db.page(args, [db.tv_brief(o) for o in db.neighbours(db.tv, t, "recommendations")])


def listed(db: TmdbDb, name: str) -> list[dict[str, Any]]:
    return by_popularity([t for t in db.tv.values() if name in t.get("lists", [])])


@TV_ROUTES.route("GET /tv/popular")
def tv_popular(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    return db.page(args, [db.tv_brief(t) for t in by_popularity(list(db.tv.values()))])


@TV_ROUTES.route("GET /tv/top_rated")
def tv_top_rated(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    return db.page(args, [db.tv_brief(t) for t in top_rated(list(db.tv.values()), 200)])


@TV_ROUTES.route("GET /tv/on_the_air")
def tv_on_the_air(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    return db.page(args, [db.tv_brief(t) for t in listed(db, "on_the_air")])


@TV_ROUTES.route("GET /tv/airing_today")
def tv_airing_today(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    return db.page(args, [db.tv_brief(t) for t in listed(db, "airing_today")])


@TV_ROUTES.route("GET /tv/latest")
def tv_latest(db: TmdbDb, _a: dict[str, Any], _s: str) -> Any:
    return details(db, latest(db.tv))


@TV_ROUTES.route("GET /tv/{tv_id}/season/{season_number}")
def get_season(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t, s = season_of(db, args)
    sid = season_id(t, s["n"])
    return {"_id": str(sid), "air_date": s.get("date", ""),
            "episodes": [episode_obj(db, t, s, ep) for ep in s.get("episodes", [])],
            "name": s.get("name", f"Season {s['n']}"), "overview": s.get("overview", ""), "id": sid,
            "poster_path": db.poster("season", sid), "season_number": s["n"], "vote_average": s.get("vote", 0)}


@TV_ROUTES.route("GET /tv/{tv_id}/season/{season_number}/credits")
def season_credits(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t, s = season_of(db, args)
    crew = [list(c) for c in s.get("crew", [])]
    for ep in s.get("episodes", []):
        for c in ep.get("crew", []):
            if list(c) not in crew:
                crew.append(list(c))
    return {"cast": db.cast_credits("tv", t["id"], s.get("cast", t.get("cast", [])), with_cast_id=False),
            "crew": db.crew_credits("tv", t["id"], crew), "id": season_id(t, s["n"])}


@TV_ROUTES.route("GET /tv/{tv_id}/season/{season_number}/images")
def season_images(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t, s = season_of(db, args)
    sid = season_id(t, s["n"])
    return {"id": sid, "posters": db.images("season", sid, 2, "poster", 0.667, 1000)}


def episode_of(db: TmdbDb, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    t, s = season_of(db, args)
    return t, s, db.episode(s, args["episode_number"])


@TV_ROUTES.route("GET /tv/{tv_id}/season/{season_number}/episode/{episode_number}")
def get_episode(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t, s, ep = episode_of(db, args)
    return episode_obj(db, t, s, ep)


@TV_ROUTES.route("GET /tv/{tv_id}/season/{season_number}/episode/{episode_number}/credits")
def episode_credits(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t, s, ep = episode_of(db, args)
    return {"cast": db.cast_credits("tv", t["id"], ep.get("cast", s.get("cast", t.get("cast", []))), with_cast_id=False),
            "crew": db.crew_credits("tv", t["id"], ep.get("crew", [])),
            "guest_stars": db.cast_credits("tv", t["id"], ep.get("guests", []), with_cast_id=False),
            "id": episode_id(t, s["n"], ep["n"])}


@TV_ROUTES.route("GET /tv/{tv_id}/season/{season_number}/episode/{episode_number}/images")
def episode_images(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    t, s, ep = episode_of(db, args)
    eid = episode_id(t, s["n"], ep["n"])
    return {"id": eid, "stills": db.images("episode", eid, ep.get("images", 2), "still", 1.778, 1920)}


@TV_ROUTES.route("GET /network/{network_id}")
def get_network(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    n = db.get(db.networks, args["network_id"])
    return {"headquarters": n.get("hq", ""), "homepage": n.get("homepage", ""), "id": n["id"],
            "logo_path": image_path("network", n["id"], "logo", 0, ext=".png"), "name": n["name"],
            "origin_country": n.get("country", "")}


@TV_ROUTES.route("GET /network/{network_id}/images")
def network_images(db: TmdbDb, args: dict[str, Any], _s: str) -> Any:
    n = db.get(db.networks, args["network_id"])
    return {"id": n["id"], "logos": [{"aspect_ratio": 3.73, "file_path": image_path("network", n["id"], "logo", 0, ext=".png"),
                                      "height": 268, "id": image_path("network", n["id"], "logo-id", 0)[1:25],
                                      "file_type": ".svg", "vote_average": 5.3, "vote_count": 3, "width": 1000}]}


__all__ = ["TV_ROUTES"]
