"""The registered handlers of the offline RestBench services (envs/restbench/routing.py): the registry's
checks, handlers that reach the database only through its public members, and every answer of the services
as recorded (tests/data/restbench_answers.json)."""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from restbench_samples import sample_requests
from taskbench.envs.restbench import RestBenchEnv, spotify_routes, tmdb_routes, tmdb_tv
from taskbench.envs.restbench.routing import Routes
from taskbench.schema import ToolCall


def test_routes_registers_binds_and_refuses_bad_names_and_duplicates() -> None:
    table: Routes[dict[str, int]] = Routes("demo")

    @table.route("GET /thing/{id}")
    def get_thing(db: dict[str, int], args: dict[str, Any], session: str) -> Any:
        return {"id": args["id"], "n": db["n"], "session": session}

    assert table.operations() == ["GET /thing/{id}"]
    bound = table.bind({"n": 3})
    assert bound["GET /thing/{id}"]({"id": 7}, "s1") == {"id": 7, "n": 3, "session": "s1"}
    with pytest.raises(ValueError, match="has a handler already"):
        table.route("GET /thing/{id}")
    for bad in ("/thing", "get /thing", "GET thing", "FETCH /thing"):
        with pytest.raises(ValueError, match="not an operation name"):
            table.route(bad)


def test_tmdb_and_spotify_tables_hold_every_operation_once() -> None:
    movies, tv = tmdb_routes.ROUTES.operations(), tmdb_tv.TV_ROUTES.operations()
    assert not set(movies) & set(tv)
    assert len(movies) + len(tv) == 54 and len(spotify_routes.ROUTES.operations()) == 40


@pytest.mark.parametrize("module", [tmdb_routes, tmdb_tv, spotify_routes])
def test_handlers_use_no_private_member_of_the_database(module: Any) -> None:
    tree = ast.parse(Path(module.__file__).read_text())
    private = sorted({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                      and isinstance(node.value, ast.Name) and node.value.id == "db" and node.attr.startswith("_")})
    assert private == []


# the handler and database modules, and the restbench modules each must not import (nor env): the imports go
# one way, tmdb -> tmdb_routes -> tmdb_tv -> tmdb_db and spotify -> spotify_routes -> spotify_db (no cycle)
ABOVE = {"tmdb_db": {"tmdb", "tmdb_routes", "tmdb_tv"}, "tmdb_tv": {"tmdb", "tmdb_routes"}, "tmdb_routes": {"tmdb"},
         "spotify_db": {"spotify", "spotify_routes"}, "spotify_routes": {"spotify"}}


@pytest.mark.parametrize("module", sorted(ABOVE))
def test_handlers_and_databases_import_no_module_above_them(module: str) -> None:
    tree = ast.parse((Path(tmdb_routes.__file__).parent / f"{module}.py").read_text())
    imported = set()
    for node in ast.walk(tree):  # inside functions too
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            imported |= {node.module} if node.module else {a.name for a in node.names}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            imported |= {n.rsplit(".", 1)[1] for n in names if n.startswith("taskbench.envs.restbench.")}
    assert imported, module
    assert not imported & (ABOVE[module] | {"env"}), imported

RECORDED = Path(__file__).parent / "data" / "restbench_answers.json"
# requests the APIs refuse, each answered with the API's own error body
BAD_REQUESTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "tmdb": [("GET /movie/{movie_id}", {"movie_id": 999999999}), ("GET /movie/popular", {"page": 0}),
             ("GET /search/movie", {"query": "star", "page": 600}), ("GET /search/person", {}),
             ("GET /tv/{tv_id}/season/{season_number}", {"tv_id": 1396, "season_number": 99})],
    "spotify": [("GET /albums/{id}", {"id": "nope"}), ("GET /albums/{id}", {"id": "0" * 22}),
                ("GET /search", {"type": "track"}), ("GET /me/albums", {"limit": 99}),
                ("PUT /me/player/pause", {}), ("PUT /me/player/pause", {})],
}


def answers(api: str, where: Path) -> dict[str, str]:
    """Request -> digest of the exact answer (status, error, JSON body in its key order) of every sample request
    (:mod:`restbench_samples`), then every bad request, in order in one episode (Spotify's writes change what
    later requests see), and of Spotify's state view after them; over HTTP, with RestBench's spec (all 54 and 40
    operations). The session is named, as what Spotify creates has ids made from it."""
    env = RestBenchEnv(api, restbench_dir=where, task_set="own")
    env.session = f"{api}-recorded"
    seen: list[tuple[str, dict[str, Any], Any]] = []

    async def episode() -> None:
        await env.reset(0)
        for i, (op, args) in enumerate(sample_requests(env) + BAD_REQUESTS[api]):
            result = await env.call(ToolCall(id=f"c{i}", name=op, arguments=args))
            seen.append((op, args, [result.status, result.error, result.content]))
        seen.append(("state", {}, env.backend.state(env.session)))
        await env.aclose()

    asyncio.run(episode())
    return {f"{n:03d} {op} {json.dumps(args, sort_keys=True)}":
            hashlib.sha256(json.dumps(answer, ensure_ascii=False).encode()).hexdigest()[:16]
            for n, (op, args, answer) in enumerate(seen)}


@pytest.mark.parametrize("api", ["tmdb", "spotify"])
def test_the_services_answer_as_recorded(api: str, shared: Path) -> None:
    """Every answer is the one recorded (``python tests/test_restbench_routing.py`` rewrites the record, for a
    change meant to alter answers): a refactoring of the handlers or databases changes no byte."""
    where = shared / "reference" / "restbench"
    if not (where / f"{api}_oas.json").is_file():
        pytest.skip(f"RestBench's spec is absent ({where})")
    recorded = json.loads(RECORDED.read_text())[api]
    now = answers(api, where)
    assert list(now) == list(recorded)
    changed = [request for request in now if now[request] != recorded[request]]
    assert not changed, f"{len(changed)} of {len(now)} answers changed: {changed[:5]}"


if __name__ == "__main__":  # pragma: no cover - rewrites the record
    import sys

    # RestBench's files: the argument, else where the tests look (../shared next to the checkout)
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared/reference/restbench"
    RECORDED.write_text(json.dumps({api: answers(api, where) for api in ("tmdb", "spotify")}, indent=1) + "\n")
    print(f"wrote {RECORDED}")
