"""Rendering: PNG picture and the self-contained interactive HTML page (checked in headless Chromium when present)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from browser_helpers import CHROMIUM
from taskbench.cli.main import main
from taskbench.graph import build_graph, render_html, render_png
from taskbench.graph.render import layout
from taskbench.schema import Tool, ToolLibrary, ToolParameter


def typed(tid: str, ins: list[str], outs: list[str], desc: str = "") -> Tool:
    return Tool.model_validate({"id": tid, "desc": desc or f"{tid} tool", "input-type": ins, "output-type": outs})


def small_resource():  # noqa: ANN201
    tools = [
        typed("Image Downloader", ["url"], ["image"], "Downloads an image <b>from</b> a URL & more."),
        typed("Image Captioner", ["image"], ["text"]),
        typed("Text-to-Image", ["text"], ["image"]),
        typed("Text-to-Speech", ["text"], ["audio"]),
        typed("Speech-to-Text", ["audio"], ["text"]),
        typed("Image Editing", ["text", "image"], ["image"]),
    ]
    return build_graph(ToolLibrary(tools=tools, dependency="resource"))


def small_temporal():  # noqa: ANN201
    tools = [Tool(id=f"api_{i}", desc=f"API {i}", parameters=[ToolParameter(name="q", type="string", desc="query")])
             for i in range(8)]
    return build_graph(ToolLibrary(tools=tools, dependency="temporal"))


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.parametrize("make", [small_resource, small_temporal])
def test_png_is_written(tmp_path: Path, make) -> None:  # noqa: ANN001
    out = render_png(make(), tmp_path / "sub" / "g.png", title="demo")
    w, h = png_size(out)
    assert w >= 900 and h >= 900


def test_layouts_are_normalised_and_distinct() -> None:
    graph = small_resource()
    for kind in ("auto", "circular", "kamada_kawai", "spring"):
        pos = layout(graph, kind)
        assert set(pos) == {t.id for t in graph.nodes}
        assert all(-1.0001 <= c <= 1.0001 for p in pos.values() for c in p)
        coords = {(round(x, 3), round(y, 3)) for x, y in pos.values()}
        assert len(coords) == len(pos), f"{kind}: overlapping nodes"


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    graph = small_resource()
    out = render_html(graph, tmp_path / "g.html", title="demo <graph>")
    page = out.read_text()
    # no external resources of any kind
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link " not in page and "@import" not in page and "cdn" not in page.lower()
    assert page.count("<svg") == 1 and 'class="node"' in page and page.count('class="edge"') == len(graph.links)
    # user text is escaped in markup and in the embedded JSON
    assert "demo &lt;graph&gt;" in page and "<b>from</b>" not in page.split('id="graph-data"')[0]
    data = page.split('<script id="graph-data" type="application/json">')[1].split("</script>")[0]
    doc = json.loads(data)
    first = doc["nodes"][0]
    assert first["desc"] == "Downloads an image <b>from</b> a URL & more."
    assert first["inputs"] == ["url"] and first["outputs"] == ["image"] and first["nout"] == 2


def test_html_handles_script_breaking_text(tmp_path: Path) -> None:
    tools = [Tool(id="a</script><script>alert(1)</script>", desc="<!-- x"), Tool(id="b", desc="")]
    graph = build_graph(ToolLibrary(tools=tools, dependency="temporal"))
    page = render_html(graph, tmp_path / "g.html").read_text()
    assert "<script>alert(1)" not in page
    assert page.count("</script>") == 2  # only the two real script elements


def run_chromium(args: list[str]) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-extensions", "--no-first-run", "--window-size=1200,1000", *args],
        capture_output=True, text=True, timeout=120,
    )


PROBE = """<script>
(function(){
  var svg = document.getElementById('graph');
  var node = svg.querySelector('.node[data-id="Image Captioner"]');
  var r = node.getBoundingClientRect();
  node.dispatchEvent(new PointerEvent('pointerenter', {clientX: r.left + 3, clientY: r.top + 3}));
  var tip = document.getElementById('tip');
  document.body.dataset.tip = tip.style.display + '|' + tip.textContent;
  document.body.dataset.hl = svg.querySelectorAll('.edge.hl').length + '/' + svg.querySelectorAll('.node.hl').length;
  document.body.dataset.focus = String(svg.classList.contains('focus'));
  node.dispatchEvent(new PointerEvent('pointerleave', {}));
  document.body.dataset.after = String(svg.classList.contains('focus')) + '|' + tip.style.display;
  svg.dispatchEvent(new WheelEvent('wheel', {deltaY: -400, clientX: 600, clientY: 500, bubbles: true, cancelable: true}));
  var vp = document.getElementById('viewport');
  document.body.dataset.zoom = vp.getAttribute('transform');
  svg.dispatchEvent(new PointerEvent('pointerdown', {clientX: 100, clientY: 100, pointerId: 1, bubbles: true}));
  svg.dispatchEvent(new PointerEvent('pointermove', {clientX: 300, clientY: 180, pointerId: 1, bubbles: true}));
  svg.dispatchEvent(new PointerEvent('pointerup', {clientX: 300, clientY: 180, pointerId: 1, bubbles: true}));
  document.body.dataset.pan = vp.getAttribute('transform');
})();
</script></body>"""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_runs_in_headless_chromium(tmp_path: Path) -> None:
    graph = small_resource()
    page = render_html(graph, tmp_path / "g.html").read_text()
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE))
    proc = run_chromium(["--dump-dom", probe.as_uri()])
    body = re.search(r"<body[^>]*>", proc.stdout)
    assert body, proc.stderr[-2000:]
    attrs = dict(re.findall(r'data-([a-z]+)="([^"]*)"', body.group(0)))
    assert attrs["ready"] == "1"
    assert attrs["nodes"] == str(len(graph.nodes)) and attrs["edges"] == str(len(graph.links))
    # hover: tooltip with the description and types; the tool's links and neighbours highlighted
    tip = attrs["tip"]
    assert tip.startswith("block|Image Captioner") and "input types: image" in tip and "output types: text" in tip
    captioner_links = [lk for lk in graph.links if "Image Captioner" in (lk.source, lk.target)]
    neighbours = {lk.source for lk in captioner_links} | {lk.target for lk in captioner_links}
    assert attrs["hl"] == f"{len(captioner_links)}/{len(neighbours)}" and attrs["focus"] == "true"
    assert attrs["after"] == "false|none"
    # wheel zooms in around the cursor; drag pans
    scale = float(re.search(r"scale\(([\d.]+)\)", attrs["zoom"]).group(1))  # type: ignore[union-attr]
    assert scale > 1.2
    assert attrs["pan"] != attrs["zoom"] and "translate(" in attrs["pan"]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_screenshot_is_not_blank(tmp_path: Path) -> None:
    page = render_html(small_temporal(), tmp_path / "g.html")
    shot = tmp_path / "shot.png"
    run_chromium([f"--screenshot={shot}", page.as_uri()])
    w, h = png_size(shot)
    assert (w, h) == (1200, 1000)
    assert shot.stat().st_size > 20_000  # a blank page compresses to a few kB


def test_cli_show_png_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = small_resource()
    path = tmp_path / "graph_desc.json"
    path.write_text(json.dumps(graph.to_taskbench()))
    for name in ("g.png", "g.html"):
        try:
            main(["graph", "show", str(path), "-o", str(tmp_path / name)])
        except SystemExit as exc:
            assert not exc.code
        assert (tmp_path / name).stat().st_size > 1000
    assert png_size(tmp_path / "g.png")[0] >= 900
    assert "data-ready" in (tmp_path / "g.html").read_text()
    assert "wrote" in capsys.readouterr().err
