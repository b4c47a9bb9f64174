"""The registered handlers of the offline RestBench services (envs/restbench/routing.py): the registry's
checks, and handlers that reach the database only through its public members."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from taskbench.envs.restbench import spotify_routes, tmdb_routes, tmdb_tv
from taskbench.envs.restbench.routing import Routes


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
