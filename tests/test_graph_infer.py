"""Links inferred from the tools themselves (`graph build --infer schema`) on small hand-made OpenAPI, MCP and
OpenAI libraries, their reasons, the TaskBench rules left as they were, and messy schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskbench.cli.main import main
from taskbench.graph import build_graph, infer_graph, load_graph, load_tools, make_graph, validate_graph
from taskbench.graph.infer import infer_links
from taskbench.graph.shapes import Lexicon, tokens
from taskbench.schema import Tool, ToolLibrary

# ------------------------------------------------------------------------------------------ helpers


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def arr(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


INT, STR = {"type": "integer"}, {"type": "string"}


def op(params: list[dict[str, Any]] | None = None, response: dict[str, Any] | None = None,
       body: dict[str, Any] | None = None, summary: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"summary": summary, "parameters": params or []}
    if response is not None:
        out["responses"] = {"200": {"description": "ok", "content": {"application/json": {"schema": response}}}}
    else:
        out["responses"] = {"204": {"description": "no content"}}
    if body is not None:
        out["requestBody"] = {"content": {"application/json": {"schema": body}}}
    return out


def path_param(name: str, schema: dict[str, Any] | None = None, desc: str = "") -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema or INT, "description": desc}


def query(name: str, schema: dict[str, Any] | None = None, desc: str = "", required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema or STR, "description": desc}


def openapi(paths: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": paths}


def write(tmp_path: Path, doc: Any, name: str = "spec.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def links_of(library: ToolLibrary) -> dict[tuple[str, str], Any]:
    return {(lk.source, lk.target): lk for lk in infer_links(library)}


PERSON = obj(id=INT, name=STR, birthday=STR, profile_path=STR, known_for_department=STR, gender=INT)
MOVIE = obj(id=INT, title=STR, release_date=STR, overview=STR, poster_path=STR, budget=INT,
            production_companies=arr(obj(id=INT, name=STR, logo_path=STR)))
COMPANY = obj(id=INT, name=STR, logo_path=STR, headquarters=STR)


def movie_api() -> dict[str, Any]:
    """A TMDB-like API: search, details, credits whose cast is told apart by shape only."""
    page = lambda item: obj(page=INT, results=arr(item), total_pages=INT)  # noqa: E731
    return openapi({
        "/search/person": {"get": op([query("query", required=True)], page(obj(id=INT, name=STR, profile_path=STR)))},
        "/search/movie": {"get": op([query("query", required=True), query("page", INT)],
                                    page(obj(id=INT, title=STR, release_date=STR)))},
        "/person/{person_id}": {"get": op([path_param("person_id")], PERSON)},
        "/person/{person_id}/movie_credits": {"get": op([path_param("person_id")], obj(
            id=INT, cast=arr(obj(id=INT, title=STR, release_date=STR, character=STR, credit_id=STR))))},
        "/movie/{movie_id}": {"get": op([path_param("movie_id")], MOVIE)},
        "/movie/{movie_id}/credits": {"get": op([path_param("movie_id")], obj(
            id=INT, cast=arr(obj(id=INT, name=STR, profile_path=STR, known_for_department=STR, character=STR,
                                 cast_id=INT, order=INT))))},
        "/company/{company_id}": {"get": op([path_param("company_id")], COMPANY)},
        "/genre/movie/list": {"get": op([], obj(genres=arr(obj(id=INT, name=STR))))},
        "/trending/{media_type}": {"get": op(
            [path_param("media_type", {"type": "string", "enum": ["all", "movie", "person"]})],
            page(obj(id=INT, popularity={"type": "number"})))},
    })


# ------------------------------------------------------------------------------------------ words


def test_tokens_and_lemmas_follow_the_library_vocabulary() -> None:
    assert tokens("GET /person/{person_id}/movieCredits") == ["get", "person", "person", "id", "movie", "credits"]
    lex = Lexicon(["movie", "company", "box"])
    assert [lex.lemma(w) for w in ("movies", "companies", "categories", "boxes", "status", "people", "tv")] == [
        "movie", "company", "category", "box", "status", "person", "tv"]


# ------------------------------------------------------------------------------------------ OpenAPI


def test_openapi_returned_identifiers_feed_parameters(tmp_path: Path) -> None:
    library = load_tools(write(tmp_path, movie_api()), "openapi", openapi_ids="path")
    links = links_of(library)
    # the issue's example: results[].id of GET /search/person feeds person_id
    lk = links[("GET /search/person", "GET /person/{person_id}/movie_credits")]
    assert lk.type == "data"
    assert [(r.rule, r.output, r.parameter) for r in lk.reasons] == [("schema", "results[].id", "person_id")]
    assert "a person id" in lk.reasons[0].note and "GET /search/person" not in lk.reasons[0].note
    # a person's movie credits are movies (told by their shape), which feed the movie tools
    assert links[("GET /person/{person_id}/movie_credits", "GET /movie/{movie_id}")].reasons[0].output == "cast[].id"
    # a movie's cast are people: the shape of what GET /person/{person_id} returns (name, profile_path, ...)
    cast = links[("GET /movie/{movie_id}/credits", "GET /person/{person_id}")].reasons[0]
    assert cast.output == "cast[].id" and "GET /person/{person_id}" in cast.note
    # a nested key names the entity: production_companies[].id is a company id
    assert links[("GET /movie/{movie_id}", "GET /company/{company_id}")].reasons[0].output == \
        "production_companies[].id"
    # a selector parameter (an enum of entities) says what the results are
    assert ("GET /trending/{media_type}", "GET /movie/{movie_id}") in links
    assert ("GET /trending/{media_type}", "GET /person/{person_id}") in links
    # not links: genre ids are no movie ids; a call's own id echoed back feeds nothing new; no self links
    assert not any(s == "GET /genre/movie/list" for s, _ in links)
    assert ("GET /movie/{movie_id}/credits", "GET /movie/{movie_id}") not in links
    assert ("GET /movie/{movie_id}", "GET /movie/{movie_id}/credits") not in links
    assert all(s != t for s, t in links)
    # nothing feeds a search query (free text), and paging parameters are no data
    assert not any(t.startswith("GET /search/") for _, t in links)
    graph = infer_graph(library)
    assert graph.dependency == "temporal" and graph.inferred == "schema"
    validate_graph(graph)
    assert len(graph.links) / (len(graph.nodes) * (len(graph.nodes) - 1)) < 0.3


def test_openapi_type_fields_descriptions_and_state(tmp_path: Path) -> None:
    """A Spotify-like API: objects say what they are in a `type` field; a bare `ids` parameter takes the
    entities its selector names; a qualifier nothing returns reads the description; writes change state."""
    track = obj(id=STR, uri=STR, type={"type": "string", "enum": ["track"]},
                artists=arr(obj(id=STR, type={"type": "string", "enum": ["artist"]})))
    user = obj(id=STR, display_name=STR, type={"type": "string", "description": 'The object type: "user"'})
    spec = openapi({
        "/me": {"get": op([], user)},
        "/tracks/{id}": {"get": op([path_param("id", STR, "The ID of the track.")], track)},
        "/artists/{id}": {"get": op([path_param("id", STR)], obj(id=STR, name=STR))},
        "/me/following": {"put": op([query("type", {"type": "string", "enum": ["artist", "user"]}, required=True),
                                     query("ids", STR, "A comma-separated list of the artist or the user IDs.",
                                           required=True)])},
        "/users/{user_id}/playlists": {"post": op([path_param("user_id", STR)], obj(
            id=STR, snapshot_id=STR, type={"type": "string", "enum": ["playlist"]}), body=obj(name=STR))},
        "/playlists/{playlist_id}": {"get": op([path_param("playlist_id", STR)], obj(id=STR, name=STR)),
                                     "put": op([path_param("playlist_id", STR)], body=obj(name=STR))},
        "/playlists/{playlist_id}/tracks": {"post": op([path_param("playlist_id", STR)], obj(snapshot_id=STR),
                                                       body=obj(uris=arr(STR)))},
        "/me/player/play": {"put": op([], body=obj(context_uri={
            "type": "string", "description": "Spotify URI of the context to play: an album, artist or playlist."}))},
        "/me/player/pause": {"put": op([])},
        "/me/player/devices": {"get": op([], obj(devices=arr(obj(id=STR, name=STR))))},
    })
    library = load_tools(write(tmp_path, spec), "openapi", openapi_ids="path")
    links = links_of(library)
    me = links[("GET /me", "POST /users/{user_id}/playlists")].reasons[0]
    assert (me.output, me.parameter) == ("id", "user_id") and "type field" in me.note
    follow = links[("GET /tracks/{id}", "PUT /me/following")].reasons[0]
    assert (follow.output, follow.parameter) == ("artists[].id", "ids")
    assert ("GET /me", "PUT /me/following") in links  # ids may be user ids too
    assert links[("POST /users/{user_id}/playlists", "POST /playlists/{playlist_id}/tracks")].reasons[0].parameter \
        == "playlist_id"
    assert ("GET /tracks/{id}", "GET /artists/{id}") in links and ("GET /artists/{id}", "GET /tracks/{id}") not in links
    # context_uri: no tool returns a "context", so its description names what it takes (here: none returned)
    assert not any(t == "PUT /me/player/play" and lk.type == "data" for (_, t), lk in links.items())
    # state: a write changes its resource; a read of exactly that resource may precede a write
    state = links[("PUT /me/player/pause", "GET /me/player/devices")]
    assert state.type == "state" and state.reasons[0].rule == "state" and "/me/player" in state.reasons[0].note
    assert links[("PUT /me/player/pause", "PUT /me/player/play")].type == "state"
    assert links[("POST /playlists/{playlist_id}/tracks", "PUT /playlists/{playlist_id}")].type == "state"
    assert links[("GET /playlists/{playlist_id}", "PUT /playlists/{playlist_id}")].type == "state"
    assert ("GET /me/player/devices", "PUT /me/player/pause") not in links  # a read of another resource
    assert ("GET /me", "PUT /me/player/pause") not in links


def test_openapi_example_only_response_is_read(tmp_path: Path) -> None:
    spec = openapi({
        "/search/city": {"get": {"parameters": [query("q", required=True)], "responses": {"200": {
            "description": "ok", "content": {"application/json": {"example": {"results": [{"id": 7, "name": "Oslo"}]}}}}}}},
        "/city/{city_id}/weather": {"get": op([path_param("city_id")], obj(temp={"type": "number"}))},
    })
    links = links_of(load_tools(write(tmp_path, spec), "openapi", openapi_ids="path"))
    assert links[("GET /search/city", "GET /city/{city_id}/weather")].reasons[0].output == "results[].id"


# ------------------------------------------------------------------------------------------ MCP / OpenAI


def test_mcp_output_schema_to_input_schema(tmp_path: Path) -> None:
    def tool(name: str, props: dict[str, Any], required: list[str], out: dict[str, Any] | None = None,
             desc: str = "") -> dict[str, Any]:
        t: dict[str, Any] = {"name": name, "description": desc,
                             "inputSchema": {"type": "object", "properties": props, "required": required}}
        if out is not None:
            t["outputSchema"] = out
        return t

    tools = [
        tool("search_issues", {"query": STR}, ["query"], obj(items=arr(obj(number=INT, title=STR)))),
        tool("get_issue", {"owner": STR, "repo": STR, "issue_number": INT}, ["owner", "repo", "issue_number"],
             obj(title=STR, body=STR)),
        tool("list_pull_requests", {"owner": STR, "repo": STR}, ["owner", "repo"], obj(items=arr(obj(number=INT)))),
        tool("search_repositories", {"query": STR}, ["query"], obj(items=arr(obj(owner=STR, repo=STR, stars=INT)))),
        tool("geocode", {"address": STR}, ["address"], obj(city=STR, lat={"type": "number"})),
        tool("get_weather", {"city": STR, "units": {"type": "string", "enum": ["metric", "imperial"]}}, ["city"]),
    ]
    library = load_tools(write(tmp_path, {"tools": tools}), "mcp")
    links = links_of(library)
    issue = links[("search_issues", "get_issue")].reasons
    assert [(r.rule, r.output, r.parameter) for r in issue] == [("schema", "items[].number", "issue_number")]
    # a pull request number is no issue number
    assert ("list_pull_requests", "get_issue") not in links
    # same-name required parameters: owner and repo of the search results, the city of a geocode
    repo = {(r.rule, r.output, r.parameter) for r in links[("search_repositories", "get_issue")].reasons}
    assert repo == {("name", "items[].owner", "owner"), ("name", "items[].repo", "repo")}
    assert links[("geocode", "get_weather")].reasons[0].parameter == "city"
    # get_issue returns a title, but no tool takes a required 'title'; nothing feeds an enum
    assert not any(s == "get_issue" for s, _ in links)
    assert make_graph(library).inferred == "schema"  # auto: MCP tools get inferred links


def test_openai_tools_without_output_schema_use_names_and_descriptions(tmp_path: Path) -> None:
    def fn(name: str, desc: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
            "type": "object", "properties": props, "required": required}}}

    tools = [
        fn("search_flights", "Find flights between two airports on a date.", {"origin": STR, "destination": STR,
                                                                            "date": STR}, ["origin", "destination"]),
        fn("book_flight", "Book a seat on a flight. Returns the booking id.", {"flight_id": STR, "passenger": STR},
           ["flight_id", "passenger"]),
        fn("get_booking", "Get a booking by its booking id.", {"booking_id": STR}, ["booking_id"]),
        fn("cancel_booking", "Cancel a booking.", {"booking_id": STR}, ["booking_id"]),
        fn("get_time", "The current time.", {}, []),
    ]
    library = load_tools(write(tmp_path, tools), "openai")
    links = links_of(library)
    assert set(links) == {("search_flights", "book_flight"), ("book_flight", "get_booking"),
                          ("book_flight", "cancel_booking")}
    why = links[("search_flights", "book_flight")].reasons[0]
    assert (why.rule, why.output, why.parameter) == ("description", None, "flight_id") and "flights" in why.note
    assert "booking id" in links[("book_flight", "cancel_booking")].reasons[0].note


def _mcp(tmp_path: Path, *tools: tuple[Any, ...]) -> dict[tuple[str, str], Any]:
    """Links of an MCP library: (name, description, properties, required[, output schema]) per tool."""
    doc = [{"name": t[0], "description": t[1], "inputSchema": {"type": "object", "properties": t[2],
                                                              "required": t[3]},
            **({"outputSchema": t[4]} if len(t) > 4 else {})} for t in tools]
    return links_of(load_tools(write(tmp_path, {"tools": doc}), "mcp"))


def _params(links: dict[tuple[str, str], Any], a: str, b: str) -> set[str | None]:
    return {r.parameter for r in links[(a, b)].reasons}


def test_the_ends_of_an_operation_take_what_their_descriptions_name(tmp_path: Path) -> None:
    """from / to / source / destination / target name no concept: the parameter's description says what it
    takes, else the tool's description ("between ..." / "from ..." first, else what its verb acts on)."""
    links = _mcp(
        tmp_path,
        ("list_buckets", "List all buckets of the account.", {}, []),
        ("list_objects", "List the objects in a bucket.", {"bucket": STR}, ["bucket"]),
        ("copy_bucket", "Copy everything from one bucket to another.", {"source": STR, "destination": STR},
         ["source", "destination"]),
        ("list_people", "List the people in the address book.", {}, []),
        ("link_people", "Link two people.", {"from": {"type": "string", "description": "Name of the person the link "
                                                                                     "starts at"},
                                             "to": {"type": "string", "description": "Name of the person it ends at"}},
         ["from", "to"]),
        ("find_flights", "Find flights between two airports.", {"origin": STR, "destination": STR},
         ["origin", "destination"]),
    )
    assert _params(links, "list_buckets", "copy_bucket") == {"source", "destination"}
    assert _params(links, "list_people", "link_people") == {"from", "to"}
    # the ends of find_flights are airports, which nothing lists: no flight, bucket or person feeds them
    assert not any(b == "find_flights" for _, b in links)
    assert ("list_objects", "copy_bucket") not in links  # it lists objects, not buckets


def test_trees_new_things_contents_echoes_and_whole_objects(tmp_path: Path) -> None:
    name = lambda d: {"type": "string", "description": d}  # noqa: E731
    link = obj(**{"from": name("The name of the note the link starts at"),
                  "to": name("The name of the note the link ends at")})
    link["required"] = ["from", "to"]
    note = obj(name=name("The name of the note"), text=name("The note text"))
    note["required"] = ["name", "text"]
    tag = obj(noteName=name("The name of the note to tag"), labels=name("The tag labels"))
    tag["required"] = ["noteName", "labels"]
    links = _mcp(
        tmp_path,
        ("folder_tree", "Get a tree of folders and files.", {"path": STR}, ["path"]),
        ("create_folder", "Create a new folder.", {"path": STR}, ["path"]),
        ("read_page", "Read the text of a file.", {"path": STR}, ["path"]),
        ("write_page", "Create or overwrite a file.", {"path": STR, "text": STR}, ["path", "text"]),
        ("create_notes", "Create new notes.", {"notes": arr(note)}, ["notes"], obj(notes=arr(note))),
        ("tag_notes", "Add tags to notes.", {"tags": arr(tag)}, ["tags"],
         obj(results=arr(obj(noteName=STR, addedTags=arr(STR))))),
        ("open_notes", "Open notes by name.", {"names": {"type": "array", "items": STR,
                                                         "description": "The note names"}}, ["names"],
         obj(notes=arr(note), links=arr(link))),
        ("create_links", "Create links between notes.", {"links": arr(link)}, ["links"], obj(links=arr(link))),
        ("delete_links", "Delete links.", {"links": arr(link)}, ["links"]),
        ("add_sketches", "Add sketches to notes.", {"sketches": {"type": "array", "items": STR, "description":
                                                                 "An array of sketch contents"}}, ["sketches"]),
        ("list_sketches", "List the sketches.", {}, []),
    )
    # a tool whose name says tree lists what it is given: its paths feed every tool that takes one
    assert {("folder_tree", t) for t in ("create_folder", "read_page", "write_page")} <= set(links)
    # a new folder goes inside an existing one, and holds nothing to read yet
    assert ("folder_tree", "create_folder") in links and ("create_folder", "write_page") in links
    assert ("create_folder", "read_page") not in links and ("create_folder", "folder_tree") not in links
    # "sketch contents" are values: nothing feeds them
    assert ("list_sketches", "add_sketches") not in links
    # tag_notes echoes the note names it was given: it gives no note
    assert not any(a == "tag_notes" for a, _ in links)
    # links to delete come whole from what returns links; new links take their ends from any note
    assert ("open_notes", "delete_links") in links and ("create_notes", "delete_links") not in links
    assert _params(links, "create_notes", "create_links") == {"links[].from", "links[].to"}


# ------------------------------------------------------------------------------------------ TaskBench rules kept


@pytest.mark.parametrize("domain", ["huggingface", "multimedia", "dailylifeapis"])
def test_taskbench_libraries_keep_the_released_rules(reference_dir: Path, domain: str) -> None:
    library = load_tools(reference_dir / domain / "tool_desc.json")
    ref = load_graph(reference_dir / domain / "graph_desc.json")
    auto = make_graph(library)
    assert [(lk.source, lk.target, lk.type) for lk in auto.links] == [(lk.source, lk.target, lk.type) for lk in ref.links]
    assert auto.inferred is None and not any(lk.reasons for lk in auto.links)
    if library.dependency == "resource":  # --infer schema on typed tools: their types are the schema
        assert make_graph(library, "schema").links == build_graph(library).links
    else:  # daily-life APIs have no output schemas: names and descriptions, far sparser than 1,560 links
        inferred = make_graph(library, "schema")
        validate_graph(inferred)
        assert len(inferred.links) < len(ref.links) / 3 and inferred.inferred == "schema"


def test_restbench_specs_have_the_issue_links(shared: Path) -> None:
    tmdb = load_tools(shared / "reference" / "restbench" / "tmdb_oas.json", "openapi", openapi_ids="path")
    links = links_of(tmdb)
    lk = links[("GET /search/person", "GET /person/{person_id}/movie_credits")]
    assert (lk.reasons[0].output, lk.reasons[0].parameter) == ("results[].id", "person_id")
    assert len(links) / (54 * 53) <= 0.3
    spotify = load_tools(shared / "reference" / "restbench" / "spotify_oas.json", "openapi", openapi_ids="path")
    links = links_of(spotify)
    assert (links[("GET /me", "POST /users/{user_id}/playlists")].reasons[0].parameter) == "user_id"
    assert len(links) / (40 * 39) <= 0.3


# ------------------------------------------------------------------------------------------ messy data

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "id", "string", "object", "array", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "properties", "items", "allOf", "oneOf", "anyOf", "enum", "id", "uri", "title",
                         "name_id", "", "results", "description", "required", "$ref"]), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(out=json_values, inp=json_values)
def test_any_schema_gives_a_valid_graph_never_an_exception(out: Any, inp: Any) -> None:
    tools = [
        Tool(id="a", desc="a tool about things", output_schema=out if isinstance(out, dict) else None,
             input_schema=inp if isinstance(inp, dict) else None),
        Tool(id="b", desc="b", input_schema={"type": "object", "properties": {"thing_id": STR, "id": INT}},
             output_schema={"type": "object", "properties": {"thing_id": STR, "items": out if isinstance(out, dict) else {}}}),
    ]
    graph = infer_graph(ToolLibrary(tools=tools, dependency="temporal"))
    validate_graph(graph)


def test_odd_real_world_shapes(tmp_path: Path) -> None:
    """An empty property key holding the items (seen in TMDB's trending schema), allOf parts, type lists."""
    spec = openapi({
        "/trending/{media_type}": {"get": op([path_param("media_type", {"type": "string", "enum": ["movie"]})],
                                            obj(page=INT, **{"": obj(id=INT, title=STR)}))},
        "/movie/{movie_id}": {"get": op([path_param("movie_id", {"type": ["integer", "null"]})],
                                        {"allOf": [obj(id=INT), obj(title=STR)]})},
    })
    links = links_of(load_tools(write(tmp_path, spec), "openapi", openapi_ids="path"))
    assert links[("GET /trending/{media_type}", "GET /movie/{movie_id}")].reasons[0].output == "''.id"


# ------------------------------------------------------------------------------------------ CLI


def test_cli_build_infer_writes_reasons_the_reference_can_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write(tmp_path, movie_api())
    out = tmp_path / "graph_desc.json"
    with pytest.raises(SystemExit) as exc:
        main(["graph", "build", str(spec), "--openapi-ids", "path", "--infer", "schema", "-o", str(out)])
    assert exc.value.code in (0, None)
    err = capsys.readouterr().err
    assert "links, density" in err and "schema" in err
    doc = json.loads(out.read_text())
    assert doc["inferred"] == "schema"
    # what the reference graph sampler reads: node desc/parameters, link source/target/type
    for node in doc["nodes"]:
        assert isinstance(node["desc"], str) and isinstance(node["parameters"], list)
    for link in doc["links"]:
        assert {"source", "target", "type"} <= set(link) and link["reasons"]
    assert load_graph(out).links == infer_graph(load_tools(spec, "openapi", openapi_ids="path")).links
    # the rules on request: every ordered pair
    with pytest.raises(SystemExit):
        main(["graph", "build", str(spec), "--openapi-ids", "path", "--infer", "rules", "-o", str(out)])
    assert len(json.loads(out.read_text())["links"]) == 9 * 8
    with pytest.raises(SystemExit) as exc:
        main(["graph", "build", str(spec), "--infer", "guess"])
    assert exc.value.code == 2
    assert "unknown inference method 'guess'" in capsys.readouterr().err
