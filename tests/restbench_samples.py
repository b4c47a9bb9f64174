"""Requests that succeed, for every operation of the offline TMDB and Spotify services, and what they answer.

:func:`sample_requests` gives one or more (operation, arguments) per operation of the spec, with ids taken from
the fixtures; :func:`responses` sends them through a :class:`RestBenchEnv` (real HTTP on loopback, as an agent
would) and returns every answer. ``python tests/restbench_samples.py [restbench_dir]`` prints the response
sizes (median, p90 per endpoint family) that docs/environments.md reports.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from taskbench.envs.restbench import RestBenchEnv
from taskbench.schema import ToolCall


def _tmdb_samples(env: RestBenchEnv) -> list[tuple[str, dict[str, Any]]]:
    db: Any = env.backend
    show, season, episode = next((t["id"], s["n"], s["episodes"][0]["n"]) for t in db.tv.values()
                                 for s in t.get("seasons", []) if s.get("episodes"))
    review = next(iter(db.reviews))
    tv_review = next(k for k, v in db.reviews.items() if v["kind"] == "tv")
    credit = next(iter(db.credits))
    tv_credit = next(k for k, v in db.credits.items() if v["kind"] == "tv")
    values: dict[str, list[Any]] = {
        "movie_id": [155, 11], "person_id": [525, 287], "tv_id": [show, 1396], "season_number": [season],
        "episode_number": [episode], "collection_id": [10, 263], "company_id": [1, 174], "network_id": [49],
        "credit_id": [credit, tv_credit], "review_id": [review, tv_review], "query": ["the", "star"],
    }
    out: list[tuple[str, dict[str, Any]]] = []
    for tool in env.tools():
        assert tool.http is not None
        if tool.name == "GET /trending/{media_type}/{time_window}":
            out += [(tool.name, {"media_type": kind, "time_window": window})
                    for kind in ("all", "movie", "tv", "person") for window in ("day", "week")]
            continue
        needed = [p.name for p in tool.http.parameters if p.required]
        if tool.name.startswith("GET /tv/{tv_id}/season"):
            values_here = {**values, "tv_id": [show]}
        else:
            values_here = values
        for i in range(max([len(values_here[n]) for n in needed] or [1])):
            out.append((tool.name, {n: values_here[n][min(i, len(values_here[n]) - 1)] for n in needed}))
    return out


def _spotify_samples(env: RestBenchEnv) -> list[tuple[str, dict[str, Any]]]:
    artist, album, track = _spotify_ids(env)
    playlist, user = _spotify_playlist(env)
    fixed: dict[str, list[dict[str, Any]]] = {
        "GET /albums/{id}": [{"id": album}], "GET /albums/{id}/tracks": [{"id": album}],
        "GET /artists/{id}": [{"id": artist}], "GET /artists/{id}/albums": [{"id": artist}],
        "GET /artists/{id}/related-artists": [{"id": artist}], "GET /artists/{id}/top-tracks": [{"id": artist, "market": "US"}],
        "GET /browse/new-releases": [{}], "GET /me": [{}], "GET /me/albums": [{}],
        "PUT /me/albums": [{"ids": album}], "DELETE /me/albums": [{"ids": album}],
        "GET /me/following": [{"type": "artist"}], "PUT /me/following": [{"type": "artist", "ids": artist}],
        "DELETE /me/following": [{"type": "artist", "ids": artist}],
        "GET /me/player": [{}], "GET /me/player/currently-playing": [{}], "GET /me/player/devices": [{}],
        "POST /me/player/next": [{}], "PUT /me/player/pause": [{}], "PUT /me/player/play": [{}],
        "POST /me/player/previous": [{}], "GET /me/player/queue": [{}],
        "POST /me/player/queue": [{"uri": f"spotify:track:{track}"}], "GET /me/player/recently-played": [{}],
        "PUT /me/player/repeat": [{"state": "context"}], "PUT /me/player/volume": [{"volume_percent": 40}],
        "GET /me/playlists": [{}], "GET /me/top/{type}": [{"type": "artists"}, {"type": "tracks"}],
        "GET /me/tracks": [{}], "PUT /me/tracks": [{"ids": track}], "DELETE /me/tracks": [{"ids": track}],
        "GET /playlists/{playlist_id}": [{"playlist_id": playlist}],
        "PUT /playlists/{playlist_id}": [{"playlist_id": playlist, "description": "Calm."}],
        "GET /playlists/{playlist_id}/tracks": [{"playlist_id": playlist}],
        "POST /playlists/{playlist_id}/tracks": [{"playlist_id": playlist, "uris": f"spotify:track:{track}"}],
        "DELETE /playlists/{playlist_id}/tracks": [{"playlist_id": playlist, "tracks": [{"uri": f"spotify:track:{track}"}]}],
        "GET /recommendations": [{"seed_artists": artist, "seed_genres": "pop", "seed_tracks": track}],
        "GET /search": [{"q": "love", "type": "album,artist,playlist,track"}, {"q": "a", "type": "track", "limit": 50}],
        "GET /tracks/{id}": [{"id": track}],
        "POST /users/{user_id}/playlists": [{"user_id": user, "name": "New list", "description": "made by a test"}],
    }
    out: list[tuple[str, dict[str, Any]]] = []
    for tool in env.tools():
        out += [(tool.name, args) for args in fixed[tool.name]]
    return out


def _spotify_ids(env: RestBenchEnv) -> tuple[str, str, str]:
    from taskbench.envs.restbench.dataset import load_fixtures

    cat = load_fixtures("spotify")["catalogue"]
    return cat["artists"][0]["id"], cat["albums"][0]["id"], cat["tracks"][0]["id"]


def _spotify_playlist(env: RestBenchEnv) -> tuple[str, str]:
    from taskbench.envs.restbench.dataset import load_fixtures

    state = load_fixtures("spotify")["state"]
    return state["playlists"][0]["id"], state["me"]["id"]


def sample_requests(env: RestBenchEnv) -> list[tuple[str, dict[str, Any]]]:
    """(operation, arguments) pairs, at least one per operation of ``env``'s spec."""
    return _tmdb_samples(env) if env.api == "tmdb" else _spotify_samples(env)


def responses(env: RestBenchEnv) -> list[tuple[str, dict[str, Any], int | None, Any]]:
    """(operation, arguments, status, JSON body) of every sample request, sent over HTTP in a fresh episode."""

    async def main() -> list[tuple[str, dict[str, Any], int | None, Any]]:
        await env.reset(0)
        out = []
        for i, (op, args) in enumerate(sample_requests(env)):
            result = await env.call(ToolCall(id=f"s{i}", name=op, arguments=args))
            out.append((op, args, result.status, result.content))
        await env.aclose()
        return out

    return asyncio.run(main())


def family(op: str) -> str:
    """The endpoint family of an operation: "movie details", "movie credits", "movie lists" (popular,
    top_rated, ...), "tv season", "search", ..."""
    path = op.split(" ", 1)[1].strip("/").split("/")
    literals = [s for s in path if not s.startswith("{")]
    if path[0] in ("search", "discover", "trending", "genre", "recommendations"):
        return path[0]
    if len(literals) == 1:
        return f"{path[0]} details"
    if len(path) > 1 and not path[1].startswith("{"):
        return f"{path[0]} lists"
    return f"{path[0]} {literals[-1]}"


def gold_path_responses(env: RestBenchEnv) -> list[tuple[str, dict[str, Any], int | None, Any]]:
    """What the service answered to every call of every task's solution script (the gold paths)."""
    from taskbench.envs.restbench import solve

    seen: list[tuple[str, dict[str, Any], int | None, Any]] = []
    real = env.call

    async def call(tool_call: ToolCall) -> Any:
        result = await real(tool_call)
        seen.append((tool_call.name, dict(tool_call.arguments), result.status, result.content))
        return result

    async def main() -> None:
        for task in env.tasks():
            await env.reset(0, task)
            await solve(env, task)
        await env.aclose()

    env.call = call  # type: ignore[method-assign]
    try:
        asyncio.run(main())
    finally:
        del env.call
    return seen


def size_table(env: RestBenchEnv, gold: bool = False) -> list[tuple[str, int, int, int]]:
    """(family, calls, median bytes, p90 bytes) of the sample responses (``gold``: of the calls along the
    tasks' solution scripts), plus an "all" row."""
    groups: dict[str, list[int]] = {}
    for op, _args, status, body in (gold_path_responses(env) if gold else responses(env)):
        if status is not None and status < 300 and body is not None:
            n = len(json.dumps(body, ensure_ascii=False).encode())
            groups.setdefault(family(op), []).append(n)
            groups.setdefault("all", []).append(n)

    def p90(xs: list[int]) -> int:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]

    return [(k, len(v), int(statistics.median(v)), p90(v)) for k, v in sorted(groups.items())]


if __name__ == "__main__":  # pragma: no cover - a measuring script
    where = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/reference/restbench")
    for api in sys.argv[2:] or ["tmdb", "spotify"]:
        for gold in (False, True):
            print(f"{api} ({'gold paths' if gold else 'one request per operation'}): family | calls | median | p90 bytes")
            for row in size_table(RestBenchEnv(api, restbench_dir=where, task_set="restbench"), gold):
                print(" | ".join(str(x) for x in row))
