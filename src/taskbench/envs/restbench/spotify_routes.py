"""The handlers of the offline Spotify API, one per operation of RestBench's ``spotify_oas.json`` (see
:mod:`.spotify`).

Each handler is a function ``(db, args, session) -> body or (status, body)`` registered in :data:`ROUTES`
(:mod:`.routing`); it reads the catalogue and the session's state through the :class:`~.spotify_db.SpotifyDb`
object's public methods. :func:`routes` binds the table to one database.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, cast

from .ids import base62
from .routing import Endpoint, Routes
from .service import ApiError
from .spotify_db import API, SpotifyDb

ROUTES: Routes[SpotifyDb] = Routes("spotify")
_SEARCH_TYPES = ("album", "artist", "playlist", "track", "show", "episode", "audiobook")
_FILTER = re.compile(r'(artist|album|track|genre|year):("([^"]*)"|(\S+))', re.IGNORECASE)


def _fold(text: str) -> str:
    plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()
    return " ".join("".join(c if c.isalnum() else " " for c in plain).split())


def routes(db: SpotifyDb) -> dict[str, Endpoint]:
    """Every Spotify handler bound to ``db``."""
    return ROUTES.bind(db)


def st(db: SpotifyDb, session: str) -> dict[str, Any]:
    return db.session_state(session)


def stamp(s: dict[str, Any]) -> str:
    s["serial"] = s.get("serial", 0) + 1
    return f"2023-08-15T12:{s['serial'] // 60 % 60:02d}:{s['serial'] % 60:02d}Z"


# ------------------------------------------------------------------------------------ catalogue

@ROUTES.route("GET /albums/{id}")
def get_album(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    return db.album_full(db.get(db.albums, args["id"], "album")["id"])


@ROUTES.route("GET /albums/{id}/tracks")
def album_tracks(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    al = db.get(db.albums, args["id"], "album")
    limit, offset = db.limits(args)
    items = [db.track_simple(t["id"]) for t in db.tracks_of_album(al["id"])]
    return db.page(items, limit, offset, f"{API}/albums/{al['id']}/tracks")


@ROUTES.route("GET /artists/{id}")
def get_artist(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    return db.artist_full(db.get(db.artists, args["id"], "artist")["id"])


@ROUTES.route("GET /artists/{id}/albums")
def artist_albums(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    a = db.get(db.artists, args["id"], "artist")
    groups = [g.strip() for g in str(args.get("include_groups") or "").split(",") if g.strip()]
    bad = [g for g in groups if g not in ("album", "single", "appears_on", "compilation")]
    if bad:
        raise ApiError(400, f"Invalid include_groups: {', '.join(bad)}")
    mine = [al for al in db.albums.values() if a["id"] in al["artists"] and (not groups or al.get("type", "album") in groups)]
    mine.sort(key=lambda al: (al["date"], al["name"]), reverse=True)
    limit, offset = db.limits(args)
    return db.page([db.album_simple(al["id"], group=True) for al in mine], limit, offset, f"{API}/artists/{a['id']}/albums")


@ROUTES.route("GET /artists/{id}/related-artists")
def related_artists(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    a = db.get(db.artists, args["id"], "artist")
    related = a.get("related")
    if related is None:
        genres = set(a.get("genres", []))
        scored = [(len(genres & set(o.get("genres", []))), o.get("popularity", 0), o["id"]) for o in db.artists.values()
                  if o["id"] != a["id"]]
        related = [i for overlap, _p, i in sorted(scored, key=lambda x: (-x[0], -x[1], x[2])) if overlap][:20]
    return {"artists": [db.artist_full(i) for i in related if i in db.artists]}


@ROUTES.route("GET /artists/{id}/top-tracks")
def top_tracks(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    a = db.get(db.artists, args["id"], "artist")
    listed = a.get("top_tracks")
    if listed is None:
        listed = [t["id"] for t in sorted(db.tracks.values(), key=lambda t: (-t.get("popularity", 0), t["id"]))
                  if a["id"] in t["artists"]]
    return {"tracks": [db.track_full(t) for t in listed[:10] if t in db.tracks]}


@ROUTES.route("GET /browse/new-releases")
def new_releases(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    limit, offset = db.limits(args)
    newest = sorted(db.albums.values(), key=lambda al: (al["date"], al["name"]), reverse=True)
    return {"albums": db.page([db.album_simple(al["id"]) for al in newest], limit, offset, f"{API}/browse/new-releases")}


@ROUTES.route("GET /tracks/{id}")
def get_track(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    return db.track_full(db.get(db.tracks, args["id"], "track")["id"])


@ROUTES.route("GET /recommendations")
def recommendations(db: SpotifyDb, args: dict[str, Any], _s: str) -> Any:
    seed_artists = [db.check_id(x, "artist") for x in str(args.get("seed_artists") or "").split(",") if x.strip()]
    seed_tracks = [db.check_id(x, "track") for x in str(args.get("seed_tracks") or "").split(",") if x.strip()]
    seed_genres = [g.strip() for g in str(args.get("seed_genres") or "").split(",") if g.strip()]
    if len(seed_artists) + len(seed_tracks) + len(seed_genres) > 5:
        raise ApiError(400, "Invalid request: at most 5 seeds")
    genres = set(seed_genres)
    for aid in seed_artists:
        genres |= set(db.artists.get(aid, {}).get("genres", []))
    for tid in seed_tracks:
        for aid in db.tracks.get(tid, {}).get("artists", []):
            genres |= set(db.artists.get(aid, {}).get("genres", []))
    pool = [t for t in db.tracks.values() if t["id"] not in seed_tracks and
            any(genres & set(db.artists.get(a, {}).get("genres", [])) for a in t["artists"])]
    pool.sort(key=lambda t: (-t.get("popularity", 0), t["id"]))
    limit = int(args.get("limit") or 20)
    if not 1 <= limit <= 100:
        raise ApiError(400, "Invalid limit")
    seeds = [{"afterFilteringSize": len(pool), "afterRelinkingSize": len(pool), "href": f"{API}/{kind}s/{key}", "id": key,
              "initialPoolSize": len(pool), "type": kind.upper()} for kind, keys in (("artist", seed_artists),
                                                                                      ("track", seed_tracks)) for key in keys]
    seeds += [{"afterFilteringSize": len(pool), "afterRelinkingSize": len(pool), "href": None, "id": g,
               "initialPoolSize": len(pool), "type": "GENRE"} for g in seed_genres]
    return {"seeds": seeds, "tracks": [db.track_full(t["id"]) for t in pool[:limit]]}


# ------------------------------------------------------------------------------------ search

@ROUTES.route("GET /search")
def search(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    raw = args["type"]
    kinds = [str(k).strip() for k in (raw if isinstance(raw, list) else str(raw).split(",")) if str(k).strip()]
    if not kinds or any(k not in _SEARCH_TYPES for k in kinds):
        raise ApiError(400, "Bad search type field")
    limit, offset = db.limits(args)
    query = str(args["q"])
    filters: dict[str, str] = {}
    for m in _FILTER.finditer(query):
        filters[m.group(1).lower()] = m.group(3) if m.group(3) is not None else m.group(4)
    words = _fold(_FILTER.sub(" ", query)).split()
    if not words and not filters:
        raise ApiError(400, "No search query")

    def names(ids: list[str], table: dict[str, Any]) -> str:
        return " ".join(table[i]["name"] for i in ids if i in table)

    def ok(fields: dict[str, str], genres: list[str], year: str) -> bool:
        for key, want in filters.items():
            if key == "genre":
                if _fold(want) not in [_fold(g) for g in genres]:
                    return False
            elif key == "year":
                low, _, high = want.partition("-")
                if not (low <= year <= (high or low)):
                    return False
            elif _fold(want) not in _fold(fields.get(key, "")):
                return False
        text = _fold(" ".join(fields.values()))
        return all(w in text.split() or any(t.startswith(w) for t in text.split()) for w in words)

    def rank(name: str, popularity: int) -> tuple[int, int]:
        return (0 if _fold(name) == " ".join(words) else 1, -popularity)

    out: dict[str, Any] = {}
    s = st(db, session)
    if "track" in kinds:
        found = []
        for t in db.tracks.values():
            al = db.albums[t["album"]]
            genres = [g for a in t["artists"] for g in db.artists.get(a, {}).get("genres", [])]
            if ok({"track": t["name"], "artist": names(t["artists"], db.artists), "album": al["name"]}, genres, al["date"][:4]):
                found.append((rank(t["name"], t.get("popularity", 0)), t["id"]))
        out["tracks"] = db.page([db.track_full(i) for _r, i in sorted(found)], limit, offset, f"{API}/search")
    if "artist" in kinds:
        found = [(rank(a["name"], a.get("popularity", 0)), a["id"]) for a in db.artists.values()
                 if ok({"artist": a["name"]}, a.get("genres", []), "")]
        out["artists"] = db.page([db.artist_full(i) for _r, i in sorted(found)], limit, offset, f"{API}/search")
    if "album" in kinds:
        found = [(rank(al["name"], al.get("popularity", 0)), al["id"]) for al in db.albums.values()
                 if ok({"album": al["name"], "artist": names(al["artists"], db.artists)},
                       [g for a in al["artists"] for g in db.artists.get(a, {}).get("genres", [])], al["date"][:4])]
        out["albums"] = db.page([db.album_simple(i) for _r, i in sorted(found)], limit, offset, f"{API}/search")
    if "playlist" in kinds:
        pool = list(db.public_playlists.values()) + [p for p in s.get("playlists", []) if p.get("public", True)]
        found = [(rank(p["name"], p.get("followers", 0)), p["id"]) for p in pool
                 if ok({"playlist": p["name"] + " " + p.get("description", "")}, [], "")]
        by_id = {p["id"]: p for p in pool}
        out["playlists"] = db.page([db.playlist_obj(by_id[i], s, full=False) for _r, i in sorted(found)], limit, offset,
                                   f"{API}/search")
    for kind in ("show", "episode", "audiobook"):
        if kind in kinds:
            out[kind + "s"] = db.page([], limit, offset, f"{API}/search")
    return out


# ------------------------------------------------------------------------------------ the user

@ROUTES.route("GET /me")
def me(db: SpotifyDb, _a: dict[str, Any], session: str) -> Any:
    user = st(db, session)["me"]
    return {**db.user_public(user["id"], st(db, session)), "country": user.get("country", "US"), "email": user.get("email"),
            "explicit_content": {"filter_enabled": False, "filter_locked": False},
            "followers": {"href": None, "total": user.get("followers", 0)}, "images": [], "product": user.get("product", "premium")}


def _saved(db: SpotifyDb, kind: str) -> tuple[str, dict[str, Any]]:
    return ("saved_albums", db.albums) if kind == "album" else ("saved_tracks", db.tracks)


def get_saved(db: SpotifyDb, kind: str, args: dict[str, Any], session: str) -> Any:
    key, table = _saved(db, kind)
    limit, offset = db.limits(args)
    items = [{"added_at": i.get("added_at", db.now),
              kind: db.album_full(i["id"]) if kind == "album" else db.track_full(i["id"])}
             for i in st(db, session).get(key, []) if i["id"] in table]
    return db.page(items, limit, offset, f"{API}/me/{kind}s")


def put_saved(db: SpotifyDb, kind: str, args: dict[str, Any], session: str) -> Any:
    key, table = _saved(db, kind)
    ids = db.ids(args.get("ids"), kind, limit=20 if kind == "album" else 50)
    for i in ids:
        db.get(table, i, kind)
    s = st(db, session)
    have = {i["id"] for i in s.get(key, [])}
    added = [{"id": i, "added_at": stamp(s)} for i in dict.fromkeys(ids) if i not in have]
    s[key] = list(reversed(added)) + s.get(key, [])
    return 200, None


def delete_saved(db: SpotifyDb, kind: str, args: dict[str, Any], session: str) -> Any:
    key, _table = _saved(db, kind)
    ids = set(db.ids(args.get("ids"), kind, limit=20 if kind == "album" else 50))
    s = st(db, session)
    s[key] = [i for i in s.get(key, []) if i["id"] not in ids]
    return 200, None


@ROUTES.route("GET /me/albums")
def get_saved_albums(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    return get_saved(db, "album", args, session)


@ROUTES.route("PUT /me/albums")
def put_saved_albums(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    return put_saved(db, "album", args, session)


@ROUTES.route("DELETE /me/albums")
def delete_saved_albums(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    return delete_saved(db, "album", args, session)


@ROUTES.route("GET /me/tracks")
def get_saved_tracks(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    return get_saved(db, "track", args, session)


@ROUTES.route("PUT /me/tracks")
def put_saved_tracks(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    return put_saved(db, "track", args, session)


@ROUTES.route("DELETE /me/tracks")
def delete_saved_tracks(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    return delete_saved(db, "track", args, session)


@ROUTES.route("GET /me/following")
def following(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    if args.get("type") != "artist":
        raise ApiError(400, "Only valid type is artist")
    limit = int(args.get("limit") or 20)
    if not 0 < limit <= 50:
        raise ApiError(400, "Invalid limit")
    ids = [a for a in st(db, session).get("following", []) if a in db.artists]
    if args.get("after"):
        after = db.check_id(args["after"], "artist")
        ids = ids[ids.index(after) + 1:] if after in ids else []
    chunk = ids[:limit]
    return {"artists": {"href": f"{API}/me/following?type=artist&limit={limit}", "items": [db.artist_full(a) for a in chunk],
                        "limit": limit, "next": None if len(ids) <= limit else f"{API}/me/following?type=artist&after={chunk[-1]}",
                        "cursors": {"after": chunk[-1] if len(ids) > limit else None, "before": None}, "total": len(ids)}}


def change_following(db: SpotifyDb, add: bool, args: dict[str, Any], session: str) -> Any:
    kind = args.get("type")
    if kind not in ("artist", "user"):
        raise ApiError(400, "Invalid type: must be artist or user")
    s = st(db, session)
    if kind == "user":
        ids = [str(x).strip() for x in str(args.get("ids") or "").split(",") if str(x).strip()] \
            if not isinstance(args.get("ids"), list) else [str(x) for x in args["ids"]]
        key = "following_users"
    else:
        ids = db.ids(args.get("ids"), "artist")
        for a in ids:
            db.get(db.artists, a, "artist")
        key = "following"
    current = list(s.get(key, []))
    if add:
        current = [i for i in reversed(list(dict.fromkeys(ids))) if i not in current] + current
    else:
        current = [i for i in current if i not in set(ids)]
    s[key] = current
    return 204, None


@ROUTES.route("PUT /me/following")
def follow(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    return change_following(db, True, args, session)


@ROUTES.route("DELETE /me/following")
def unfollow(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    return change_following(db, False, args, session)


@ROUTES.route("GET /me/top/{type}")
def top(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    kind = args["type"]
    limit, offset = db.limits(args)
    if args.get("time_range") not in (None, "long_term", "medium_term", "short_term"):
        raise ApiError(400, "Invalid time range")
    ids = st(db, session).get("top_" + kind, [])
    items = [db.artist_full(i) if kind == "artists" else db.track_full(i) for i in ids]
    return db.page(items, limit, offset, f"{API}/me/top/{kind}")


# ------------------------------------------------------------------------------------ playlists

@ROUTES.route("GET /me/playlists")
def my_playlists(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    limit, offset = db.limits(args)
    s = st(db, session)
    return db.page([db.playlist_obj(p, s, full=False) for p in s.get("playlists", [])], limit, offset, f"{API}/me/playlists")


@ROUTES.route("GET /playlists/{playlist_id}")
def get_playlist(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    return db.playlist_obj(db.playlist(s, args["playlist_id"]), s)


def own(db: SpotifyDb, s: dict[str, Any], playlist_id: Any) -> dict[str, Any]:
    p = db.playlist(s, playlist_id)
    if p.get("owner") != s["me"]["id"] and not p.get("collaborative"):
        raise ApiError(403, "You cannot modify a playlist you don't own.")
    return p


@ROUTES.route("PUT /playlists/{playlist_id}")
def change_playlist(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    p = own(db, s, args["playlist_id"])
    for key in ("name", "description", "public", "collaborative"):
        if args.get(key) is not None:
            p[key] = args[key]
    p["snapshot"] = base62("snap", p["id"], stamp(s), length=32)
    return 200, None


@ROUTES.route("GET /playlists/{playlist_id}/tracks")
def playlist_tracks(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    p = db.playlist(s, args["playlist_id"])
    limit, offset = db.limits(args, default=100, most=100)
    return db.page(db.playlist_items(p, s), limit, offset, f"{API}/playlists/{p['id']}/tracks")


def uris_of(db: SpotifyDb, value: Any) -> list[str]:
    items = value if isinstance(value, list) else [u for u in str(value or "").split(",") if u.strip()]
    out = []
    for uri in items:
        uri = str(uri).strip()
        if not uri.startswith("spotify:track:"):
            raise ApiError(400, f"Invalid track uri: {uri}")
        out.append(db.get(db.tracks, uri, "track")["id"])
    return out


@ROUTES.route("POST /playlists/{playlist_id}/tracks")
def add_tracks(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    p = own(db, s, args["playlist_id"])
    ids = uris_of(db, args.get("uris"))
    if not ids:
        raise ApiError(400, "No uris provided")
    if len(ids) > 100:
        raise ApiError(400, "Too many tracks: at most 100")
    position = args.get("position")
    items = list(p.get("tracks", []))
    at = len(items) if position is None else int(position)
    if not 0 <= at <= len(items):
        raise ApiError(400, "Index out of bounds")
    when = stamp(s)
    items[at:at] = [{"id": i, "added_at": when} for i in ids]
    p["tracks"] = items
    p["snapshot"] = base62("snap", p["id"], when, length=32)
    return 201, {"snapshot_id": p["snapshot"]}


@ROUTES.route("DELETE /playlists/{playlist_id}/tracks")
def remove_tracks(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    p = own(db, s, args["playlist_id"])
    raw = args.get("tracks")
    if not isinstance(raw, list) or not raw:
        raise ApiError(400, "Missing required field: tracks")
    gone = set()
    for item in raw:
        uri = item.get("uri") if isinstance(item, dict) else item
        gone.update(uris_of(db, [uri]))
    p["tracks"] = [i for i in p.get("tracks", []) if i["id"] not in gone]
    p["snapshot"] = base62("snap", p["id"], stamp(s), length=32)
    return 200, {"snapshot_id": p["snapshot"]}


@ROUTES.route("POST /users/{user_id}/playlists")
def create_playlist(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    if args["user_id"] != s["me"]["id"]:
        raise ApiError(403, "You cannot create a playlist for another user")
    if not args.get("name"):
        raise ApiError(400, "Missing required field: name")
    when = stamp(s)
    p = {"id": base62("playlist", session, when, args["name"]), "name": args["name"], "owner": s["me"]["id"],
         "public": True if args.get("public") is None else bool(args["public"]),
         "collaborative": bool(args.get("collaborative") or False), "description": args.get("description") or "",
         "tracks": [], "followers": 0}
    s.setdefault("playlists", []).insert(0, p)
    return 201, db.playlist_obj(p, s)


# ------------------------------------------------------------------------------------ player

def active(s: dict[str, Any]) -> dict[str, Any]:
    device = next((d for d in s.get("devices", []) if d.get("is_active")), None)
    if device is None:
        raise ApiError(404, "Player command failed: No active device found")
    return cast("dict[str, Any]", device)


def context_obj(s: dict[str, Any]) -> Any:
    context = s.get("player", {}).get("context")
    if not context or context.get("type") == "uris":
        return None
    kind, key = context["uri"].split(":")[1:3]
    return {"type": kind, "href": f"{API}/{kind}s/{key}", "external_urls": {"spotify": f"https://open.spotify.com/{kind}/{key}"},
            "uri": context["uri"]}


def playing(db: SpotifyDb, s: dict[str, Any], with_device: bool) -> Any:
    player = s.get("player", {})
    if not player.get("item"):
        return 204, None
    out: dict[str, Any] = {"timestamp": 1692100800000, "context": context_obj(s), "progress_ms": player.get("progress_ms", 0),
                           "is_playing": bool(player.get("is_playing")), "item": db.track_full(player["item"]),
                           "currently_playing_type": "track",
                           # the spec's DisallowsObject itself (the live API wraps it in "disallows")
                           "actions": {"resuming": bool(player.get("is_playing"))}}
    if with_device:
        device = next((d for d in s.get("devices", []) if d.get("is_active")), None)
        out = {"device": device, "repeat_state": player.get("repeat", "off"), "shuffle_state": bool(player.get("shuffle")), **out}
    return out


@ROUTES.route("GET /me/player")
def get_player(db: SpotifyDb, _a: dict[str, Any], session: str) -> Any:
    return playing(db, st(db, session), True)


@ROUTES.route("GET /me/player/currently-playing")
def currently_playing(db: SpotifyDb, _a: dict[str, Any], session: str) -> Any:
    return playing(db, st(db, session), False)


@ROUTES.route("GET /me/player/devices")
def devices(db: SpotifyDb, _a: dict[str, Any], session: str) -> Any:
    return {"devices": st(db, session).get("devices", [])}


def skip(db: SpotifyDb, forward: bool, session: str) -> Any:
    s = st(db, session)
    active(s)
    player = s.setdefault("player", {})
    if forward:
        queue = player.get("queue", [])
        if queue:
            nxt = queue.pop(0)
        else:
            rest = db.context_rest(s)
            if not rest:
                raise ApiError(403, "Player command failed: Restriction violated")
            nxt = rest[0]
        player.setdefault("history", []).append(player.get("item"))
        player["item"] = nxt
    else:
        history = player.get("history", [])
        if history:
            player["item"] = history.pop()
    player["progress_ms"] = 0
    player["is_playing"] = True
    return 204, None


@ROUTES.route("POST /me/player/next")
def next_track(db: SpotifyDb, _a: dict[str, Any], session: str) -> Any:
    return skip(db, True, session)


@ROUTES.route("POST /me/player/previous")
def previous_track(db: SpotifyDb, _a: dict[str, Any], session: str) -> Any:
    return skip(db, False, session)


@ROUTES.route("PUT /me/player/pause")
def pause(db: SpotifyDb, _a: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    active(s)
    if not s.get("player", {}).get("is_playing"):
        raise ApiError(403, "Player command failed: Restriction violated")
    s["player"]["is_playing"] = False
    return 204, None


@ROUTES.route("PUT /me/player/play")
def play(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    active(s)
    player = s.setdefault("player", {})
    uris, context_uri = args.get("uris"), args.get("context_uri")
    if uris is not None and context_uri is not None:
        raise ApiError(400, "Only one of context_uri and uris may be given")
    if context_uri is not None:
        kind = str(context_uri).split(":")[1] if str(context_uri).count(":") == 2 else ""
        if kind not in ("album", "artist", "playlist"):
            raise ApiError(400, "Invalid context uri")
        if kind == "album":
            db.get(db.albums, context_uri, "album")
        elif kind == "artist":
            db.get(db.artists, context_uri, "artist")
        else:
            db.playlist(s, context_uri)
        player["context"] = {"type": kind, "uri": str(context_uri)}
        tracks_of = db.context_tracks(s)
        start = 0
        offset = args.get("offset")
        if isinstance(offset, dict) and isinstance(offset.get("position"), int):
            start = offset["position"]
        elif isinstance(offset, dict) and offset.get("uri"):
            wanted = db.get(db.tracks, offset["uri"], "track")["id"]
            start = tracks_of.index(wanted) if wanted in tracks_of else 0
        if not tracks_of or not 0 <= start < len(tracks_of):
            raise ApiError(400, "Invalid offset")
        player["item"] = tracks_of[start]
        player["progress_ms"] = 0
    elif uris is not None:
        ids = uris_of(db, uris)
        if not ids:
            raise ApiError(400, "No uris provided")
        player["context"] = {"type": "uris", "uri": "", "tracks": ids}
        player["item"] = ids[0]
        player["progress_ms"] = 0
    elif not player.get("item"):
        raise ApiError(404, "Player command failed: Nothing to play")
    if args.get("position_ms") is not None:
        player["progress_ms"] = max(0, int(args["position_ms"]))
    player["is_playing"] = True
    return 204, None


@ROUTES.route("GET /me/player/queue")
def get_queue(db: SpotifyDb, _a: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    item = s.get("player", {}).get("item")
    return {"currently_playing": db.track_full(item) if item else None,
            "queue": [db.track_full(t) for t in db.up_next(s)[:20]]}


@ROUTES.route("POST /me/player/queue")
def add_queue(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    active(s)
    uri = str(args["uri"])
    if not uri.startswith("spotify:track:"):
        raise ApiError(400, "Invalid uri: only track uris can be queued here")
    s["player"].setdefault("queue", []).append(db.get(db.tracks, uri, "track")["id"])
    return 204, None


@ROUTES.route("GET /me/player/recently-played")
def recently_played(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    limit = int(args.get("limit") or 20)
    if not 0 < limit <= 50:
        raise ApiError(400, "Invalid limit")
    items = [{"track": db.track_full(i["id"]), "played_at": i["played_at"], "context": None}
             for i in st(db, session).get("recently_played", [])][:limit]
    return {"href": f"{API}/me/player/recently-played?limit={limit}", "items": items, "limit": limit, "next": None,
            "cursors": {"after": items[0]["played_at"] if items else None, "before": items[-1]["played_at"] if items else None}}


@ROUTES.route("PUT /me/player/repeat")
def repeat(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    active(s)
    if args["state"] not in ("track", "context", "off"):
        raise ApiError(400, "Invalid state: must be track, context or off")
    s["player"]["repeat"] = args["state"]
    return 204, None


@ROUTES.route("PUT /me/player/volume")
def volume(db: SpotifyDb, args: dict[str, Any], session: str) -> Any:
    s = st(db, session)
    device = active(s)
    if not 0 <= args["volume_percent"] <= 100:
        raise ApiError(400, "Invalid volume_percent: must be 0 to 100")
    device["volume_percent"] = args["volume_percent"]
    return 204, None


__all__ = ["ROUTES", "routes"]
