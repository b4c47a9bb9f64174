"""The Spotify fixture database the handlers read, as :class:`SpotifyDb`: the read-only catalogue, the user's
state copied per session (created from the fixtures, patched with a task's ``setup``), the lookups that check
ids, the answer objects (simplified and full artists, albums, tracks, playlists) and paging, and the JSON view
of a session's state that end-state checkers read.

The handlers (:mod:`.spotify_routes`) take a :class:`SpotifyDb` and import this module only;
:class:`~.spotify.Spotify`, the backend the service serves, is this database with the handler table and
Spotify's error bodies. So the imports go one way: spotify -> spotify_routes -> spotify_db.
"""

from __future__ import annotations

import copy
import re
import threading
from typing import Any, cast

from .dataset import load_fixtures
from .ids import base62
from .service import ApiError

API = "https://api.spotify.com/v1"
_B62 = re.compile(r"^[0-9A-Za-z]{22}$")


class SpotifyDb:
    """The catalogue and the per-session state. The handlers (:mod:`.spotify_routes`) read them through the
    public attributes and methods: the tables (``artists``, ``albums``, ``tracks``, ...), :meth:`session_state`,
    the id checks and lookups (``check_id``, ``get``, ``ids``, ``playlist``), the objects and ``page``."""

    def __init__(self, fixtures: dict[str, Any] | None = None) -> None:
        db = fixtures if fixtures is not None else load_fixtures("spotify")
        catalogue = db.get("catalogue", {})
        self.artists = {a["id"]: a for a in catalogue.get("artists", [])}
        self.albums = {a["id"]: a for a in catalogue.get("albums", [])}
        self.tracks = {t["id"]: t for t in catalogue.get("tracks", [])}
        self.public_playlists = {p["id"]: p for p in catalogue.get("playlists", [])}
        self.users = {u["id"]: u for u in catalogue.get("users", [])}
        self.initial = db.get("state", {})
        self.now = self.initial.get("now", "2023-08-15T12:00:00Z")
        self._sessions: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._album_tracks: dict[str, list[dict[str, Any]]] = {}
        for t in sorted(self.tracks.values(), key=lambda t: (t.get("disc", 1), t.get("number", 1))):
            self._album_tracks.setdefault(t["album"], []).append(t)

    # ------------------------------------------------------------------------------------- sessions

    def reset_session(self, session: str, setup: dict[str, Any] | None = None) -> None:
        state = copy.deepcopy(self.initial)
        for key, value in (setup or {}).items():
            state[key] = copy.deepcopy(value)
        state.setdefault("serial", 0)
        with self._lock:
            self._sessions[session] = state

    def drop_session(self, session: str) -> None:
        with self._lock:
            self._sessions.pop(session, None)

    def session_state(self, session: str) -> dict[str, Any]:
        with self._lock:
            state = self._sessions.get(session)
        if state is None:
            self.reset_session(session)
            with self._lock:
                state = self._sessions[session]
        return state

    # ------------------------------------------------------------------------------------- lookups

    def check_id(self, value: Any, kind: str) -> str:
        text = str(value).strip()
        if text.startswith(f"spotify:{kind}:"):
            text = text.split(":")[-1]
        if not _B62.match(text):
            raise ApiError(400, "Invalid base62 id")
        return text

    def get(self, table: dict[str, Any], value: Any, kind: str) -> dict[str, Any]:
        key = self.check_id(value, kind)
        item = table.get(key)
        if item is None:
            raise ApiError(404, "Non existing id")
        return cast("dict[str, Any]", item)

    def ids(self, value: Any, kind: str, limit: int = 50) -> list[str]:
        parts = value if isinstance(value, list) else str(value or "").split(",")
        out = [self.check_id(p, kind) for p in (str(x).strip() for x in parts) if p]
        if not out:
            raise ApiError(400, "Missing required parameter: ids")
        if len(out) > limit:
            raise ApiError(400, f"Too many ids requested (at most {limit})")
        return out

    def tracks_of_album(self, alid: str) -> list[dict[str, Any]]:
        """The album's tracks in disc and track order (none for an unknown album)."""
        return self._album_tracks.get(alid, [])

    def playlist(self, state: dict[str, Any], value: Any) -> dict[str, Any]:
        key = self.check_id(value, "playlist")
        for p in state.get("playlists", []):
            if p["id"] == key:
                return cast("dict[str, Any]", p)
        if key in self.public_playlists:
            return cast("dict[str, Any]", self.public_playlists[key])
        raise ApiError(404, "Not found.")

    # ------------------------------------------------------------------------------------- objects

    @staticmethod
    def _link(kind: str, key: str) -> dict[str, Any]:
        return {"external_urls": {"spotify": f"https://open.spotify.com/{kind}/{key}"}, "href": f"{API}/{kind}s/{key}",
                "id": key, "type": kind, "uri": f"spotify:{kind}:{key}"}

    def _images(self, kind: str, key: str) -> list[dict[str, Any]]:
        return [{"url": f"https://i.scdn.co/image/{base62('img', kind, key, size, length=40)}", "height": size, "width": size}
                for size in (640, 300, 64)]

    def artist_simple(self, aid: str) -> dict[str, Any]:
        a = self.artists.get(aid, {"id": aid, "name": ""})
        return {**self._link("artist", aid), "name": a["name"]}

    def artist_full(self, aid: str) -> dict[str, Any]:
        a = self.artists[aid]
        return {**self.artist_simple(aid), "followers": {"href": None, "total": a.get("followers", 0)},
                "genres": list(a.get("genres", [])), "images": self._images("artist", aid), "popularity": a.get("popularity", 50)}

    def album_simple(self, alid: str, group: bool = False) -> dict[str, Any]:
        al = self.albums[alid]
        out = {"album_type": al.get("type", "album"), "total_tracks": len(self._album_tracks.get(alid, [])) or al.get("total", 1),
               "available_markets": ["US"], **self._link("album", alid), "images": self._images("album", alid),
               "name": al["name"], "release_date": al["date"], "release_date_precision": "day",
               "artists": [self.artist_simple(a) for a in al["artists"]]}
        if group:
            out["album_group"] = al.get("type", "album")
        return out

    def track_simple(self, tid: str) -> dict[str, Any]:
        t = self.tracks[tid]
        return {"artists": [self.artist_simple(a) for a in t["artists"]], "available_markets": ["US"],
                "disc_number": t.get("disc", 1), "duration_ms": t.get("ms", 200000), "explicit": t.get("explicit", False),
                **self._link("track", tid), "is_playable": True, "is_local": False, "name": t["name"], "preview_url": None,
                "track_number": t.get("number", 1)}

    def track_full(self, tid: str) -> dict[str, Any]:
        t = self.tracks[tid]
        return {**self.track_simple(tid), "album": self.album_simple(t["album"]),
                "external_ids": {"isrc": "US" + base62("isrc", tid, length=10).upper()}, "popularity": t.get("popularity", 50)}

    def album_full(self, alid: str) -> dict[str, Any]:
        al = self.albums[alid]
        items = [self.track_simple(t["id"]) for t in self._album_tracks.get(alid, [])]
        return {**self.album_simple(alid), "tracks": self.page(items, 50, 0, f"{API}/albums/{alid}/tracks"),
                "copyrights": [{"text": f"{al['date'][:4]} {al.get('label', '')}".strip(), "type": "P"}],
                "external_ids": {"upc": base62("upc", alid, length=12)}, "genres": [], "label": al.get("label", ""),
                "popularity": al.get("popularity", 50)}

    def user_public(self, uid: str, state: dict[str, Any]) -> dict[str, Any]:
        me = state.get("me", {})
        user = me if uid == me.get("id") else self.users.get(uid, {"id": uid, "display_name": uid})
        return {"display_name": user.get("display_name"), "external_urls": {"spotify": f"https://open.spotify.com/user/{uid}"},
                "href": f"{API}/users/{uid}", "id": uid, "type": "user", "uri": f"spotify:user:{uid}"}

    def playlist_obj(self, p: dict[str, Any], state: dict[str, Any], full: bool = True) -> dict[str, Any]:
        link = self._link("playlist", p["id"])
        out = {"collaborative": p.get("collaborative", False), "description": p.get("description", ""), **link,
               "images": self._images("playlist", p["id"]), "name": p["name"], "owner": self.user_public(p["owner"], state),
               "public": p.get("public", True), "snapshot_id": p.get("snapshot", base62("snap", p["id"], length=32))}
        if full:
            out["followers"] = {"href": None, "total": p.get("followers", 0)}
            out["tracks"] = self.page(self.playlist_items(p, state), 100, 0, f"{API}/playlists/{p['id']}/tracks")
        else:
            out["tracks"] = {"href": f"{API}/playlists/{p['id']}/tracks", "total": len(p.get("tracks", []))}
        return out

    def playlist_items(self, p: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any]]:
        added_by = {k: v for k, v in self.user_public(p["owner"], state).items() if k != "display_name"}  # PlaylistUserObject
        return [{"added_at": item.get("added_at", self.now), "added_by": added_by,
                 "is_local": False, "track": self.track_full(item["id"])} for item in p.get("tracks", [])]

    @staticmethod
    def page(items: list[Any], limit: int, offset: int, href: str) -> dict[str, Any]:
        chunk = items[offset: offset + limit]
        nxt = f"{href}?offset={offset + limit}&limit={limit}" if offset + limit < len(items) else None
        prev = f"{href}?offset={max(0, offset - limit)}&limit={limit}" if offset > 0 else None
        return {"href": f"{href}?offset={offset}&limit={limit}", "items": chunk, "limit": limit, "next": nxt,
                "offset": offset, "previous": prev, "total": len(items)}

    @staticmethod
    def limits(args: dict[str, Any], default: int = 20, most: int = 50) -> tuple[int, int]:
        limit = args.get("limit", default)
        offset = args.get("offset", 0)
        limit = default if limit is None else int(limit)
        offset = 0 if offset is None else int(offset)
        if not 0 < limit <= most:
            raise ApiError(400, "Invalid limit")
        if offset < 0:
            raise ApiError(400, "Invalid offset")
        return limit, offset

    # ------------------------------------------------------------------------------------- the state view

    def _track_view(self, tid: str | None) -> dict[str, Any] | None:
        if tid is None or tid not in self.tracks:
            return None
        t = self.tracks[tid]
        return {"id": tid, "uri": f"spotify:track:{tid}", "name": t["name"],
                "artists": [self.artists[a]["name"] for a in t["artists"] if a in self.artists],
                "artist_ids": list(t["artists"]), "album": self.albums[t["album"]]["name"], "album_id": t["album"]}

    def state(self, session: str) -> Any:
        s = self.session_state(session)
        player = s.get("player", {})
        devices = s.get("devices", [])
        device = next((d for d in devices if d.get("is_active")), None)
        return {
            "me": copy.deepcopy(s.get("me", {})),
            "playlists": [{"id": p["id"], "uri": f"spotify:playlist:{p['id']}", "name": p["name"], "public": p.get("public", True),
                           "collaborative": p.get("collaborative", False), "description": p.get("description", ""),
                           "owner": p["owner"], "tracks": [self._track_view(i["id"]) for i in p.get("tracks", [])]}
                          for p in s.get("playlists", [])],
            "saved_tracks": [self._track_view(i["id"]) for i in s.get("saved_tracks", [])],
            "saved_albums": [{"id": i["id"], "uri": f"spotify:album:{i['id']}", "name": self.albums[i["id"]]["name"],
                              "artists": [self.artists[a]["name"] for a in self.albums[i["id"]]["artists"]]}
                             for i in s.get("saved_albums", []) if i["id"] in self.albums],
            "following": [{"id": a, "uri": f"spotify:artist:{a}", "name": self.artists[a]["name"]}
                          for a in s.get("following", []) if a in self.artists],
            "player": {"is_playing": bool(player.get("is_playing")), "device": copy.deepcopy(device),
                       "repeat_state": player.get("repeat", "off"), "shuffle_state": bool(player.get("shuffle")),
                       "item": self._track_view(player.get("item")), "context": copy.deepcopy(player.get("context")),
                       "queue": [self._track_view(t) for t in player.get("queue", [])],
                       "up_next": [self._track_view(t) for t in self.up_next(s)[:20]],
                       "progress_ms": player.get("progress_ms", 0)},
        }

    def up_next(self, s: dict[str, Any]) -> list[str]:
        """What plays after the current track: the user's queue, then the rest of the context."""
        player = s.get("player", {})
        return list(player.get("queue", [])) + self.context_rest(s)

    def context_tracks(self, s: dict[str, Any]) -> list[str]:
        context = s.get("player", {}).get("context") or {}
        uri = str(context.get("uri", ""))
        kind, _, key = uri.replace("spotify:", "", 1).partition(":")
        if kind == "album":
            return [t["id"] for t in self._album_tracks.get(key, [])]
        if kind == "playlist":
            try:
                return [i["id"] for i in self.playlist(s, key).get("tracks", [])]
            except ApiError:
                return []
        if kind == "artist":
            return [t["id"] for t in sorted(self.tracks.values(), key=lambda t: -t.get("popularity", 0))
                    if key in t["artists"]][:10]
        if kind == "uris":
            return list(context.get("tracks", []))
        return []

    def context_rest(self, s: dict[str, Any]) -> list[str]:
        tracks = self.context_tracks(s)
        item = s.get("player", {}).get("item")
        if item in tracks:
            return tracks[tracks.index(item) + 1:]
        return tracks


__all__ = ["API", "SpotifyDb"]
