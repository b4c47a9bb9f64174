"""The offline Spotify Web API: every operation of RestBench's ``spotify_oas.json`` over our fixtures.

The fixtures (``data/spotify/*.json``, our own format) hold a catalogue (artists, albums, tracks, a few public
playlists) and one user's initial state: profile, own playlists, saved tracks and albums, followed artists,
top artists and tracks, recently played, devices and the player (current track, context, queue, volume,
repeat). The catalogue is read-only; the state is copied per session (the ``X-Taskbench-Session`` header), so
concurrent episodes never see each other's writes, and :meth:`Spotify.reset_session` restores it. A task may
patch the initial state (``setup``), e.g. to start with an artist followed.

Behaviour follows the live API where it matters to an agent: 20 items a page (``limit`` 1..50, ``offset``),
newest first for saved items and artist albums, playlists created at the top of the user's list, player
commands answering 204 (403 "Restriction violated" to pause a paused player, 404 "No active device" without a
device), ids checked as 22 base-62 characters (400 "Invalid base62 id") and looked up (404 "Non existing
id"), and errors as ``{"error": {"status": N, "message": ...}}``.

:meth:`Spotify.state` is the JSON view end-state checkers read: ``me``, ``playlists`` (the user's, in order,
tracks expanded to ``{id, uri, name, artists, album}``), ``saved_tracks``, ``saved_albums``, ``following``,
``player`` (``is_playing``, ``device``, ``repeat_state``, ``item``, ``context``, ``queue``).
"""

from __future__ import annotations

from typing import Any

from .routing import Endpoint
from .service import Backend
from .spotify_db import API, SpotifyDb
from .spotify_routes import routes
from .validate import Problems


class Spotify(SpotifyDb, Backend):
    """The Spotify backend: the fixture database and sessions (:class:`~.spotify_db.SpotifyDb`, which the handlers
    read) with the handler table (:mod:`.spotify_routes`) and Spotify's error bodies."""

    api = "spotify"

    # ------------------------------------------------------------------------------------- errors

    def error(self, status: int, message: str, code: int | None = None) -> Any:
        body: dict[str, Any] = {"status": status, "message": message}
        if message.startswith("Player command failed"):
            body["reason"] = "NO_ACTIVE_DEVICE" if "No active device" in message else "UNKNOWN"
        return {"error": body}

    def invalid(self, problems: Problems) -> tuple[int, Any]:
        name, loc, message, kind = problems[0]
        if kind == "missing":
            text = "No search query" if name == "q" else f"Missing required parameter: {name}"
        elif loc == "path":
            text = "Invalid base62 id" if name in ("id", "playlist_id") else f"Invalid {name}: {message}"
        else:
            text = f"Invalid {name}: {message}"
        if len(problems) > 1:
            text += "; " + "; ".join(f"{n}: {m}" for n, _l, m, _k in problems[1:])
        return 400, self.error(400, text)

    def records(self) -> dict[str, Any]:
        playlists = [*self.public_playlists.values(), *self.initial.get("playlists", [])]
        return {"artist": list(self.artists.values()), "album": list(self.albums.values()),
                "track": list(self.tracks.values()), "playlist": playlists, "user": list(self.users.values()),
                "me": self.initial.get("me", {}), "device": self.initial.get("devices", [])}

    def handlers(self) -> dict[str, Endpoint]:
        h: dict[str, Endpoint] | None = self.__dict__.get("_handlers")
        if h is None:
            h = self.__dict__["_handlers"] = routes(self)
        return h


__all__ = ["API", "Spotify"]
