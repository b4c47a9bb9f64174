"""The graph page in a real headless Chromium (Playwright): hovering a link shows its reasons, clicking a tool
opens a side panel with its links and their reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from browser_helpers import chromium
from taskbench.graph import infer_graph, render_html
from taskbench.schema import Tool, ToolLibrary
from taskbench.schema.chat import HttpOperation, HttpParameter


def operation(method: str, path: str, params: list[str], response: dict | None) -> Tool:
    http = HttpOperation(method=method, path=path, response_schema=response,
                         parameters=[HttpParameter(name=p, location="path", required=True, schema={"type": "integer"})
                                     for p in params])
    return Tool(id=f"{method} {path}", desc=f"{method} {path}", http=http, output_schema=response, source="openapi",
                input_schema={"type": "object", "properties": {p: {"type": "integer"} for p in params}})


def small_graph():  # noqa: ANN201
    integer = {"type": "integer"}
    results = {"type": "object", "properties": {"results": {"type": "array", "items": {
        "type": "object", "properties": {"id": integer, "name": {"type": "string"}}}}}}
    tools = [
        operation("GET", "/search/person", [], results),
        operation("GET", "/person/{person_id}", ["person_id"], {"type": "object", "properties": {
            "id": integer, "name": {"type": "string"}, "birthday": {"type": "string"}}}),
        operation("GET", "/person/{person_id}/images", ["person_id"], None),
        operation("GET", "/person/{person_id}/movie_credits", ["person_id"], {"type": "object", "properties": {
            "cast": {"type": "array", "items": {"type": "object", "properties": {"movie_id": integer}}}}}),
        operation("GET", "/movie/{movie_id}", ["movie_id"], None),
        operation("DELETE", "/person/{person_id}", ["person_id"], None),
    ]
    return infer_graph(ToolLibrary(tools=tools, dependency="temporal"))


@pytest.fixture(scope="module")
def browser():  # noqa: ANN201
    with chromium() as b:
        yield b


@pytest.mark.slow
def test_link_reasons_on_hover_and_in_the_side_panel(browser, tmp_path: Path) -> None:  # noqa: ANN001
    graph = small_graph()
    pairs = {(lk.source, lk.target): lk for lk in graph.links}
    assert ("GET /search/person", "GET /person/{person_id}/movie_credits") in pairs
    assert pairs[("DELETE /person/{person_id}", "GET /person/{person_id}")].type == "state"
    page_file = render_html(graph, tmp_path / "g.html", title="people")
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    try:
        page.goto(page_file.as_uri())
        page.wait_for_selector("body[data-ready='1']")
        assert page.locator(".hit").count() == len(graph.links)
        # hover a link where its stroke is on top (not under a tool): the tooltip gives the reasons
        spot = page.evaluate("""(i) => {
            const h = document.querySelector('.hit[data-i="' + i + '"]');
            for (const f of [0.5, 0.4, 0.6, 0.3, 0.7]) {
                const p = h.getPointAtLength(h.getTotalLength() * f), m = h.getScreenCTM();
                const x = p.x * m.a + m.e, y = p.y * m.d + m.f;
                if (document.elementFromPoint(x, y) === h) return {x: x, y: y};
            }
            return null; }""", graph.links.index(pairs[("GET /search/person", "GET /person/{person_id}/movie_credits")]))
        assert spot is not None
        page.mouse.move(spot["x"], spot["y"])
        tip = page.locator("#tip")
        tip.wait_for(state="visible")
        text = tip.inner_text()
        assert "GET /search/person \u2192 GET /person/{person_id}/movie_credits" in text
        assert "results[].id -> person_id (a person id" in text and "type: data" in text
        assert page.locator(".edge.hl").count() == 1
        page.mouse.move(5, 890)
        tip.wait_for(state="hidden")
        # click a tool: the panel lists what it feeds and what feeds it, with reasons
        page.locator('.node[data-id="GET /person/{person_id}"] circle').click()
        panel = page.locator("#panel")
        panel.wait_for(state="visible")
        body = panel.inner_text()
        fed_by = sum(1 for lk in graph.links if lk.target == "GET /person/{person_id}")
        assert f"fed by ({fed_by})" in body and "results[].id -> person_id" in body
        assert "changes /person/{person_id}" in body  # the state link from DELETE
        page.screenshot(path=str(tmp_path / "panel.png"))
        assert (tmp_path / "panel.png").stat().st_size > 20_000
        # a tool named in the panel opens its own panel; the close button hides it
        panel.locator(".far", has_text="GET /search/person").first.click()
        assert page.locator("#panel h2").inner_text() == "GET /search/person"
        page.locator("#panel-close").click()
        panel.wait_for(state="hidden")
        # dragging from a tool pans the view and opens no panel
        box = page.locator('.node[data-id="GET /movie/{movie_id}"] circle').bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + 4, box["y"] + 4)
        page.mouse.down()
        page.mouse.move(box["x"] + 120, box["y"] + 60, steps=4)
        page.mouse.up()
        assert panel.is_hidden()
        assert "translate(" in (page.locator("#viewport").get_attribute("transform") or "")
    finally:
        page.close()


OVERLAPS = """() => {
    const boxes = [...document.querySelectorAll('.node')].map(g => ({
        id: g.dataset.id, text: g.querySelector('text').getBoundingClientRect(),
        circle: g.querySelector('circle').getBoundingClientRect()}));
    const cross = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    const out = [];
    for (const a of boxes) for (const b of boxes) {
        if (a.id >= b.id) continue;
        if (cross(a.text, b.text)) out.push(a.id + ' / ' + b.id);
        if (cross(a.text, b.circle) || cross(b.text, a.circle)) out.push(a.id + ' on ' + b.id);
    }
    return {overlaps: out, n: boxes.length}; }"""


@pytest.mark.slow
@pytest.mark.parametrize("n", [6, 14, 40])
def test_names_in_the_grid_of_unlinked_tools_do_not_overlap(browser, tmp_path: Path, n: int) -> None:  # noqa: ANN001
    """Tools without links are laid out in a grid; long names (MCP tools are named like this) ran into each
    other there. Measured in the browser: the rendered text boxes of any two tools' names, and a name against
    another tool's circle, do not intersect (40 tools: 23 overlapping pairs before graph/render.label_spread)."""
    stems = ["list_directory_with_sizes", "read_multiple_files", "get_file_info", "search_files", "move_file",
             "list_allowed_directories", "create_directory", "directory_tree", "edit_file", "write_file"]
    tools = [Tool(id=f"{stems[i % len(stems)]}_{i}", desc="a tool", input_schema={"type": "object"}, source="mcp")
             for i in range(n)]
    graph = infer_graph(ToolLibrary(tools=tools, dependency="temporal"))
    assert not graph.links  # every tool isolated: the grid
    page_file = render_html(graph, tmp_path / "grid.html", title="grid")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(page_file.as_uri())
        page.wait_for_selector("body[data-ready='1']")
        found = page.evaluate(OVERLAPS)
        assert found["n"] == n
        assert found["overlaps"] == []
    finally:
        page.close()
