"""The TV and network handlers of the offline TMDB API (see :mod:`.tmdb`).

A show's seasons list every season with its episode count; only the episodes the fixtures spell out exist
(others answer 404). Season credits are the season's own cast and crew plus every listed episode's crew.
"""

from __future__ import annotations

from typing import Any, cast

from .ids import image_path, small_int
from .tmdb import TMDB

Handler = Any


def tv_routes(db: TMDB, by_popularity: Any, top_rated: Any, latest: Any, search: Any) -> dict[str, Handler]:
    tv = db.tv

    def show(args: dict[str, Any]) -> dict[str, Any]:
        return db._get(tv, args["tv_id"])

    def season_of(args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        t = show(args)
        return t, db._season(t, args["season_number"])

    def season_id(t: dict[str, Any], n: int) -> int:
        return small_int("season", t["id"], n, modulo=9_000_000)

    def episode_id(t: dict[str, Any], s: int, e: int) -> int:
        return small_int("episode", t["id"], s, e, modulo=9_000_000)

    def episode_obj(t: dict[str, Any], s: dict[str, Any], ep: dict[str, Any], full: bool = True) -> dict[str, Any]:
        eid = episode_id(t, s["n"], ep["n"])
        out: dict[str, Any] = {
            "air_date": ep.get("date", ""), "episode_number": ep["n"], "id": eid, "name": ep.get("name", ""),
            "overview": ep.get("overview", ""), "production_code": ep.get("code", ""), "runtime": ep.get("runtime"),
            "season_number": s["n"], "show_id": t["id"], "still_path": image_path("episode", eid, "still", 0),
            "vote_average": ep.get("vote", 7.5), "vote_count": ep.get("votes", 20)}
        if full:
            out["crew"] = db._crew("tv", t["id"], ep.get("crew", []))
            out["guest_stars"] = db._cast("tv", t["id"], ep.get("guests", []), with_cast_id=False)
        return out

    def details(t: dict[str, Any]) -> dict[str, Any]:
        seasons = t.get("seasons", [])
        aired = [(s, ep) for s in seasons if s["n"] > 0 for ep in s.get("episodes", []) if ep.get("date")
                 and ep["date"] <= db.today.isoformat()]
        last = max(aired, key=lambda x: x[1]["date"], default=None)
        upcoming = [(s, ep) for s in seasons for ep in s.get("episodes", []) if ep.get("date", "") > db.today.isoformat()]
        nxt = min(upcoming, key=lambda x: x[1]["date"], default=None)
        vote = t.get("vote", [0, 0])
        return {
            "adult": False, "backdrop_path": db._backdrop("tv", t["id"]),
            "created_by": [{"id": pid, "credit_id": db._credit_id("tv", t["id"], pid, "creator", ""),
                            "name": db.people.get(pid, {}).get("name", ""), "gender": db.people.get(pid, {}).get("gender", 0),
                            "profile_path": image_path("person", pid, "profile", 0)} for pid in t.get("created_by", [])],
            "episode_run_time": list(t.get("runtime", [])), "first_air_date": t.get("date", ""),
            "genres": db._genres("tv", t.get("genres", [])), "homepage": t.get("homepage", ""), "id": t["id"],
            "in_production": t.get("status", "Ended") in ("Returning Series", "In Production"),
            "languages": list(t.get("languages", [t.get("lang", "en")])), "last_air_date": t.get("last", ""),
            "last_episode_to_air": None if last is None else episode_obj(t, last[0], last[1], full=False),
            "name": t["name"],
            "next_episode_to_air": None if nxt is None else episode_obj(t, nxt[0], nxt[1], full=False),
            "networks": [network_brief(n) for n in t.get("networks", [])],
            "number_of_episodes": sum(s.get("count", len(s.get("episodes", []))) for s in seasons if s["n"] > 0),
            "number_of_seasons": sum(1 for s in seasons if s["n"] > 0),
            "origin_country": list(t.get("country", ["US"])), "original_language": t.get("lang", "en"),
            "original_name": t.get("original_name", t["name"]), "overview": t.get("overview", ""),
            "popularity": t.get("pop", 1.0), "poster_path": db._poster("tv", t["id"]),
            "production_companies": [db._company_brief(c) for c in t.get("companies", [])],
            "production_countries": [{"iso_3166_1": c, "name": db.countries.get(c, c)} for c in t.get("country", ["US"])],
            "seasons": [{"air_date": s.get("date", ""), "episode_count": s.get("count", len(s.get("episodes", []))),
                         "id": season_id(t, s["n"]), "name": s.get("name", f"Season {s['n']}"),
                         "overview": s.get("overview", ""), "poster_path": db._poster("season", season_id(t, s["n"])),
                         "season_number": s["n"], "vote_average": s.get("vote", 0)} for s in seasons],
            "spoken_languages": [{"english_name": db.languages.get(x, x), "iso_639_1": x, "name": db.languages.get(x, x)}
                                 for x in t.get("languages", [t.get("lang", "en")])],
            "status": t.get("status", "Ended"), "tagline": t.get("tagline", ""), "type": t.get("type", "Scripted"),
            "vote_average": vote[0], "vote_count": vote[1],
        }

    def network_brief(nid: int) -> dict[str, Any]:
        n = db.networks.get(nid, {"id": nid, "name": f"network {nid}"})
        return {"id": nid, "logo_path": image_path("network", nid, "logo", 0, ext=".png"), "name": n["name"],
                "origin_country": n.get("country", "")}

    def get_tv(args: dict[str, Any], _s: str) -> Any:
        return details(show(args))

    def tv_credits(args: dict[str, Any], _s: str) -> Any:
        t = show(args)
        return {"cast": db._cast("tv", t["id"], t.get("cast", []), with_cast_id=False),
                "crew": db._crew("tv", t["id"], t.get("crew", [])), "id": t["id"]}

    def tv_images(args: dict[str, Any], _s: str) -> Any:
        t = show(args)
        posters, backdrops = (t.get("images") or [2, 2])[:2]
        return {"backdrops": db._images("tv", t["id"], backdrops, "backdrop", 1.778, 1920), "id": t["id"],
                "logos": [], "posters": db._images("tv", t["id"], posters, "poster", 0.667, 1000)}

    def tv_keywords(args: dict[str, Any], _s: str) -> Any:
        t = show(args)
        return {"id": t["id"], "results": [{"id": small_int("keyword", k), "name": k} for k in t.get("keywords", [])]}

    def tv_reviews(args: dict[str, Any], _s: str) -> Any:
        t = show(args)
        return {"id": t["id"], **db._page(args, db._reviews("tv", t))}

    def tv_similar(args: dict[str, Any], _s: str) -> Any:
        t = show(args)
        return db._page(args, [db.tv_brief(o) for o in db._neighbours(tv, t, "similar")])

    def tv_recommendations(args: dict[str, Any], _s: str) -> Any:
        t = show(args)
        return db._page(args, [db.tv_brief(o) for o in db._neighbours(tv, t, "recommendations")])

    def listed(name: str) -> list[dict[str, Any]]:
        return cast("list[dict[str, Any]]", by_popularity([t for t in tv.values() if name in t.get("lists", [])]))

    def tv_popular(args: dict[str, Any], _s: str) -> Any:
        return db._page(args, [db.tv_brief(t) for t in by_popularity(list(tv.values()))])

    def tv_top_rated(args: dict[str, Any], _s: str) -> Any:
        return db._page(args, [db.tv_brief(t) for t in top_rated(list(tv.values()), 200)])

    def tv_on_the_air(args: dict[str, Any], _s: str) -> Any:
        return db._page(args, [db.tv_brief(t) for t in listed("on_the_air")])

    def tv_airing_today(args: dict[str, Any], _s: str) -> Any:
        return db._page(args, [db.tv_brief(t) for t in listed("airing_today")])

    def tv_latest(_a: dict[str, Any], _s: str) -> Any:
        return details(latest(tv))

    def get_season(args: dict[str, Any], _s: str) -> Any:
        t, s = season_of(args)
        sid = season_id(t, s["n"])
        return {"_id": str(sid), "air_date": s.get("date", ""),
                "episodes": [episode_obj(t, s, ep) for ep in s.get("episodes", [])],
                "name": s.get("name", f"Season {s['n']}"), "overview": s.get("overview", ""), "id": sid,
                "poster_path": db._poster("season", sid), "season_number": s["n"], "vote_average": s.get("vote", 0)}

    def season_credits(args: dict[str, Any], _s: str) -> Any:
        t, s = season_of(args)
        crew = [list(c) for c in s.get("crew", [])]
        for ep in s.get("episodes", []):
            for c in ep.get("crew", []):
                if list(c) not in crew:
                    crew.append(list(c))
        return {"cast": db._cast("tv", t["id"], s.get("cast", t.get("cast", [])), with_cast_id=False),
                "crew": db._crew("tv", t["id"], crew), "id": season_id(t, s["n"])}

    def season_images(args: dict[str, Any], _s: str) -> Any:
        t, s = season_of(args)
        sid = season_id(t, s["n"])
        return {"id": sid, "posters": db._images("season", sid, 2, "poster", 0.667, 1000)}

    def episode_of(args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        t, s = season_of(args)
        return t, s, db._episode(s, args["episode_number"])

    def get_episode(args: dict[str, Any], _s: str) -> Any:
        t, s, ep = episode_of(args)
        return episode_obj(t, s, ep)

    def episode_credits(args: dict[str, Any], _s: str) -> Any:
        t, s, ep = episode_of(args)
        return {"cast": db._cast("tv", t["id"], ep.get("cast", s.get("cast", t.get("cast", []))), with_cast_id=False),
                "crew": db._crew("tv", t["id"], ep.get("crew", [])),
                "guest_stars": db._cast("tv", t["id"], ep.get("guests", []), with_cast_id=False),
                "id": episode_id(t, s["n"], ep["n"])}

    def episode_images(args: dict[str, Any], _s: str) -> Any:
        t, s, ep = episode_of(args)
        eid = episode_id(t, s["n"], ep["n"])
        return {"id": eid, "stills": db._images("episode", eid, ep.get("images", 2), "still", 1.778, 1920)}

    def get_network(args: dict[str, Any], _s: str) -> Any:
        n = db._get(db.networks, args["network_id"])
        return {"headquarters": n.get("hq", ""), "homepage": n.get("homepage", ""), "id": n["id"],
                "logo_path": image_path("network", n["id"], "logo", 0, ext=".png"), "name": n["name"],
                "origin_country": n.get("country", "")}

    def network_images(args: dict[str, Any], _s: str) -> Any:
        n = db._get(db.networks, args["network_id"])
        return {"id": n["id"], "logos": [{"aspect_ratio": 3.73, "file_path": image_path("network", n["id"], "logo", 0, ext=".png"),
                                          "height": 268, "id": image_path("network", n["id"], "logo-id", 0)[1:25],
                                          "file_type": ".svg", "vote_average": 5.3, "vote_count": 3, "width": 1000}]}

    return {
        "GET /tv/{tv_id}": get_tv,
        "GET /tv/{tv_id}/credits": tv_credits,
        "GET /tv/{tv_id}/images": tv_images,
        "GET /tv/{tv_id}/keywords": tv_keywords,
        "GET /tv/{tv_id}/reviews": tv_reviews,
        "GET /tv/{tv_id}/similar": tv_similar,
        "GET /tv/{tv_id}/recommendations": tv_recommendations,
        "GET /tv/popular": tv_popular,
        "GET /tv/top_rated": tv_top_rated,
        "GET /tv/on_the_air": tv_on_the_air,
        "GET /tv/airing_today": tv_airing_today,
        "GET /tv/latest": tv_latest,
        "GET /tv/{tv_id}/season/{season_number}": get_season,
        "GET /tv/{tv_id}/season/{season_number}/credits": season_credits,
        "GET /tv/{tv_id}/season/{season_number}/images": season_images,
        "GET /tv/{tv_id}/season/{season_number}/episode/{episode_number}": get_episode,
        "GET /tv/{tv_id}/season/{season_number}/episode/{episode_number}/credits": episode_credits,
        "GET /tv/{tv_id}/season/{season_number}/episode/{episode_number}/images": episode_images,
        "GET /network/{network_id}": get_network,
        "GET /network/{network_id}/images": network_images,
    }


__all__ = ["tv_routes"]
