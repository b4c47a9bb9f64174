"""Draw tool graphs: a static PNG (matplotlib, Agg) and one self-contained interactive HTML page.

Layout (:func:`layout`): dense graphs (density > 0.25, e.g. a complete temporal graph, or more than four
links per tool on average) go on a circle, with tools grouped by colour so same-coloured tools sit together;
sparser graphs use Kamada-Kawai. Colours: a tool is coloured by its first output type (resource graphs) or,
for HTTP operations, the first segment of its path; a link by its type.

The HTML page has no external resources (no CDN, no network): inline SVG plus a small inline script that
lets a person drag to pan, scroll to zoom, and hover a tool to see its description, types or parameters
while its neighbours are highlighted. Hovering a link shows why it exists (its reasons: the returned field,
the parameter it feeds, how that was told); clicking a tool opens a side panel listing its links with their
reasons. When the script has run it sets ``data-ready="1"`` on ``<body>``.

:func:`task_graph_svgs` draws one sample's small tool invocation graph (top to bottom, layered) beside the
sampled subgraph it came from, on one shared layout, marking what differs (the review page uses it).
"""

from __future__ import annotations

import html
import json
import math
import textwrap
from pathlib import Path
from typing import Any

from ..schema import Tool, ToolGraph

PALETTE = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#31a354", "#e6550d", "#756bb1", "#636363",
]
"""Colours assigned to types in order of frequency (then the default node colour)."""

NEUTRAL = "#4c72b0"
DENSE = 0.25


def _group(tool: Tool) -> str:
    if tool.output_types:
        return tool.output_types[0]
    if tool.is_typed:
        return "(no output)"
    if tool.http is not None:  # HTTP operations: the first segment of the path (/movie/..., /me/player/...)
        first = next((s for s in tool.http.path.split("/") if s and not s.startswith("{")), "")
        return f"/{first}"
    return "tool"


def _group_label(group: str, typed: bool) -> str:
    if not typed:
        return f"{group}/..." if group.startswith("/") and group != "/" else group
    return "no output" if group == "(no output)" else f"produces {group}"


def type_colors(graph: ToolGraph) -> dict[str, str]:
    """A colour per node group and link type, the most frequent first."""
    counts: dict[str, int] = {}
    for t in graph.nodes:
        counts[_group(t)] = counts.get(_group(t), 0) + 3
    for lk in graph.links:
        key = lk.type or "(none)"
        counts[key] = counts.get(key, 0) + 1
    names = sorted(counts, key=lambda k: (-counts[k], k))
    if names == ["tool", "complete"] or names == ["complete", "tool"]:
        return {"tool": NEUTRAL, "complete": "#9aa5b1"}
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def layout(graph: ToolGraph, kind: str = "auto") -> dict[str, tuple[float, float]]:
    """Node positions in [-1, 1]^2. ``kind``: auto | circular | kamada_kawai | spring."""

    n = len(graph.nodes)
    if n == 0:
        return {}
    if n == 1:
        return {graph.nodes[0].id: (0.0, 0.0)}
    if kind == "auto":
        kind = "circular" if _dense(graph) else "kamada_kawai"
    if kind == "circular":
        order = sorted(range(n), key=lambda i: (_group(graph.nodes[i]), i))
        pos = {}
        for k, i in enumerate(order):
            angle = math.pi / 2 - 2 * math.pi * k / n
            pos[graph.nodes[i].id] = (math.cos(angle), math.sin(angle))
        return pos
    if kind not in ("spring", "kamada_kawai"):
        raise ValueError(f"unknown layout {kind!r}")
    g = graph.to_networkx().to_undirected()
    raw = _packed_layout(g, kind)
    xs = [p[0] for p in raw.values()]
    ys = [p[1] for p in raw.values()]
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    scale = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9) / 2
    return {k: (float((p[0] - cx) / scale), float((p[1] - cy) / scale)) for k, p in raw.items()}


def _dense(graph: ToolGraph) -> bool:
    """Too many links for a force layout to read: density above DENSE or more than four links per tool."""
    n = len(graph.nodes)
    return n > 1 and (len(graph.links) / (n * (n - 1)) > DENSE or len(graph.links) > 4 * n)


def _packed_layout(g: Any, kind: str) -> dict[str, tuple[float, float]]:
    """Lay out each connected component on its own, then pack them in rows (biggest first) with the
    isolated tools in a grid, so components neither overlap nor get squashed together."""
    import networkx as nx

    order = {name: i for i, name in enumerate(g.nodes)}
    comps = sorted((sorted(c, key=order.__getitem__) for c in nx.connected_components(g)),
                   key=lambda c: (-len(c), order[c[0]]))
    blocks: list[tuple[float, dict[str, tuple[float, float]]]] = []  # (side, positions in [0, side]^2)
    isolated = [c[0] for c in comps if len(c) == 1]
    for comp in (c for c in comps if len(c) > 1):
        sub = g.subgraph(comp)
        raw = nx.spring_layout(sub, seed=0) if kind == "spring" else nx.kamada_kawai_layout(sub)
        side = math.sqrt(len(comp)) * 1.6
        xs = [p[0] for p in raw.values()]
        ys = [p[1] for p in raw.values()]
        w = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
        pad = 0.12 * side
        blocks.append((side, {k: (pad + (p[0] - min(xs)) / w * (side - 2 * pad),
                                  pad + (p[1] - min(ys)) / w * (side - 2 * pad)) for k, p in raw.items()}))
    if isolated:
        cols = math.ceil(math.sqrt(len(isolated)))
        side = cols * 1.2
        blocks.append((side, {name: ((i % cols + 0.5) * 1.2, side - (i // cols + 0.5) * 1.2)
                              for i, name in enumerate(isolated)}))
    total = sum(b[0] ** 2 for b in blocks)
    row_width = max(max(b[0] for b in blocks), math.sqrt(total) * 1.15)
    out: dict[str, tuple[float, float]] = {}
    x = y = row_h = 0.0
    for side, pos in blocks:
        if x > 0 and x + side > row_width:
            x, y, row_h = 0.0, y + row_h, 0.0
        for k, (px, py) in pos.items():
            out[k] = (x + px, -(y + side - py))
        x += side
        row_h = max(row_h, side)
    return out


LABEL_CHAR_PX = 7.6
"""Width of one character of a tool's name on the page, at its 13 px font (system-ui averages about 0.55 em;
taken a little wider, so an estimate errs towards room to spare)."""
LABEL_LINE_PX = 17.0
"""Height of a name's line, its stroke outline included."""
MAX_SPREAD = 8.0
"""At most this many times the default span: past it, a graph is read by zooming in."""
MAX_SPREAD_TOOLS = 600
"""Graphs with more tools are not spread (the pairwise check grows with the square of the tools)."""


def label_spread(pos: dict[str, tuple[float, float]], labels: dict[str, str], radius: float,
                 span: float = 600.0) -> float:
    """The factor (1 to :data:`MAX_SPREAD`) by which the page's ``span`` (pixels for layout coordinates
    -1..1) must grow so that no two tools' names, drawn centred under their circles, overlap each other or
    another tool's circle."""
    items = [(pos[k][0] * span / 2, -pos[k][1] * span / 2, len(labels.get(k, k)) * LABEL_CHAR_PX) for k in pos]
    if len(items) > MAX_SPREAD_TOOLS:  # pairwise checks would take seconds: such a graph is left as laid out
        return 1.0
    need = 1.0
    bottom = radius + 2.0 + LABEL_LINE_PX
    for i, (x1, y1, w1) in enumerate(items):
        for x2, y2, w2 in items[i + 1:]:
            dx, dy = abs(x1 - x2), abs(y1 - y2)
            # two names overlap unless their centres are this far apart horizontally or vertically
            wide, tall = (w1 + w2) / 2 + 4.0, LABEL_LINE_PX + 2.0
            # a name (below one circle) and the other circle (and the other way round)
            circle_wide, circle_tall = max(w1, w2) / 2 + radius + 2.0, bottom + radius
            for w_need, h_need in ((wide, tall), (circle_wide, circle_tall)):
                if dx * need >= w_need or dy * need >= h_need:
                    continue
                grow = min(w_need / dx if dx else math.inf, h_need / dy if dy else math.inf)
                need = max(need, grow)
    return min(need, MAX_SPREAD)


def _wrap(name: str, width: int = 16) -> str:
    return "\n".join(textwrap.wrap(name, width=width, break_long_words=True, break_on_hyphens=False)) or name


# ------------------------------------------------------------------------------------------------- PNG


def render_png(graph: ToolGraph, path: str | Path, *, title: str | None = None, kind: str = "auto", dpi: int = 110) -> Path:
    """Write a PNG picture of the graph to ``path`` and return the path."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    path = Path(path)
    n = len(graph.nodes)
    pos = layout(graph, kind)
    colors = type_colors(graph)
    circular = kind == "circular" or (kind == "auto" and _dense(graph))
    side = min(22.0, max(9.0, 2.2 * math.sqrt(max(n, 1))))
    fig, ax = plt.subplots(figsize=(side, side), dpi=dpi)
    try:
        ax.set_axis_off()
        ax.set_aspect("equal")
        lim = 1.45 if circular else 1.2
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        m = max(len(graph.links), 1)
        alpha = max(0.08, min(0.7, 30.0 / math.sqrt(m) / 2.2))
        width = 0.6 if m > 400 else 1.0
        node_r = 0.035 if n > 30 else 0.045
        for lk in graph.links:
            (x1, y1), (x2, y2) = pos[lk.source], pos[lk.target]
            arrow = FancyArrowPatch(
                (x1, y1),
                (x2, y2),
                arrowstyle="-|>",
                mutation_scale=9 if m > 400 else 12,
                connectionstyle="arc3,rad=0.12",
                color=colors.get(lk.type or "(none)", "#888888"),
                alpha=alpha,
                lw=width,
                shrinkA=node_r * 0.0 + 7,
                shrinkB=9,
                zorder=1,
            )
            ax.add_patch(arrow)
        for t in graph.nodes:
            x, y = pos[t.id]
            ax.scatter([x], [y], s=170 if n > 30 else 260, color=colors.get(_group(t), NEUTRAL), edgecolors="white",
                       linewidths=1.5, zorder=3)
        fontsize = 9 if n <= 30 else 8
        for t in graph.nodes:
            x, y = pos[t.id]
            if circular:
                angle = math.atan2(y, x)
                lx, ly = 1.06 * math.cos(angle), 1.06 * math.sin(angle)
                ha = "left" if math.cos(angle) >= -1e-9 else "right"
                rot = math.degrees(angle) if math.cos(angle) >= 0 else math.degrees(angle) - 180
                ax.text(lx, ly, t.id, fontsize=fontsize, ha=ha, va="center", rotation=rot, rotation_mode="anchor",
                        zorder=4)
            else:
                ax.text(x, y - 0.055, _wrap(t.id), fontsize=fontsize, ha="center", va="top", zorder=4,
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})
        node_groups = list(dict.fromkeys(_group(t) for t in graph.nodes))
        link_types = list(dict.fromkeys(lk.type or "(none)" for lk in graph.links))
        handles = [
            Line2D([], [], marker="o", ls="", color=colors.get(g, NEUTRAL), markersize=9,
                   label=_group_label(g, any(t.is_typed for t in graph.nodes)))
            for g in node_groups
        ] + [Line2D([], [], color=colors.get(ty, "#888"), lw=2, label=f"link: {ty}") for ty in link_types]
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(handles)),
                  fontsize=10, frameon=False,
                  title="tool colour = first output type; link colour = type" if any(t.is_typed for t in graph.nodes)
                  else None)
        heading = title or "tool graph"
        ax.set_title(f"{heading}: {n} tools, {len(graph.links)} links ({graph.dependency_kind})",
                     fontsize=13)
        fig.tight_layout()
        from ..dataset.jsonio import atomic_writer

        with atomic_writer(path) as fh:  # a full disk leaves no half picture
            fig.savefig(fh, dpi=dpi, facecolor="white", format=path.suffix.lstrip(".").lower() or "png")
    finally:
        plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------------- HTML


def _tool_info(tool: Tool) -> dict[str, Any]:
    info: dict[str, Any] = {"id": tool.id, "desc": tool.desc}
    if tool.input_types is not None:
        info["inputs"] = list(tool.input_types)
    if tool.output_types is not None:
        info["outputs"] = list(tool.output_types)
    if tool.parameters is not None:
        info["params"] = [
            {"name": p.name, "type": p.type, "required": p.required, "desc": p.desc} for p in tool.parameters
        ]
    return info


_CSS = """
html,body{margin:0;height:100%;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#fafbfc}
#head{position:absolute;top:0;left:0;padding:8px 12px;background:rgba(250,251,252,.9);border-bottom-right-radius:6px;pointer-events:none}
#head h1{font-size:17px;margin:0 0 2px 0;color:#222}
#head p{font-size:12px;margin:0;color:#555}
#legend{position:absolute;bottom:10px;left:12px;background:rgba(255,255,255,.92);border:1px solid #ddd;
 border-radius:6px;padding:6px 10px;font-size:12px}
#legend span.sw{display:inline-block;width:11px;height:11px;border-radius:50%;margin-right:5px;vertical-align:-1px}
#legend span.ln{display:inline-block;width:18px;height:3px;margin-right:5px;vertical-align:3px}
svg{width:100%;height:100%;cursor:grab;display:block}
svg.dragging{cursor:grabbing}
.edge{fill:none;stroke-opacity:var(--eo)}
.node circle{stroke:#fff;stroke-width:2}
.node text{font-size:13px;fill:#222;paint-order:stroke;stroke:#fafbfc;stroke-width:4px;stroke-linejoin:round}
.node{cursor:pointer}
svg.focus .edge{stroke-opacity:.03;marker-end:none}
svg.focus .edge.hl{stroke-opacity:.95;stroke-width:2.4;marker-end:var(--m)}
svg.focus .node{opacity:.18}
svg.focus .node.hl{opacity:1}
svg.focus .node.me circle{stroke:#111;stroke-width:3}
#tip{position:absolute;display:none;max-width:380px;background:#fff;border:1px solid #bbb;border-radius:6px;
 box-shadow:0 2px 10px rgba(0,0,0,.15);padding:8px 10px;font-size:12.5px;line-height:1.35;pointer-events:none}
#tip b{font-size:13.5px}
#tip .k{color:#666}
#tip ul{margin:3px 0 0 0;padding-left:16px}
.hit{fill:none;stroke:transparent;stroke-width:9;pointer-events:stroke;cursor:help}
#panel{position:absolute;top:0;right:0;bottom:0;width:min(430px,42vw);overflow:auto;background:#fff;
 border-left:1px solid #ccc;box-shadow:-2px 0 10px rgba(0,0,0,.1);padding:10px 14px;font-size:12.5px;line-height:1.4}
#panel[hidden]{display:none}
#panel h2{font-size:15px;margin:0 26px 6px 0;word-break:break-word}
#panel h3{font-size:13px;margin:12px 0 4px 0;color:#444}
#panel ul{margin:0;padding-left:16px}
#panel li{margin:3px 0;overflow-wrap:anywhere}
#panel li ul{color:#555}
#panel .far{font-weight:600;cursor:pointer;color:#1f4e9c}
#panel-close{position:absolute;top:6px;right:8px;border:none;background:none;font-size:20px;cursor:pointer;color:#666}
"""

_JS = """
(function(){
  var data = JSON.parse(document.getElementById('graph-data').textContent);
  var svg = document.getElementById('graph'), vp = document.getElementById('viewport');
  var tip = document.getElementById('tip');
  var view = {x: 0, y: 0, k: 1}, drag = null;
  function apply(){ vp.setAttribute('transform', 'translate(' + view.x + ',' + view.y + ') scale(' + view.k + ')'); }
  function toSvg(evt){
    var pt = svg.createSVGPoint(); pt.x = evt.clientX; pt.y = evt.clientY;
    return pt.matrixTransform(svg.getScreenCTM().inverse());
  }
  svg.addEventListener('wheel', function(evt){
    evt.preventDefault();
    var p = toSvg(evt), f = Math.exp(-evt.deltaY * 0.0015);
    var k = Math.min(12, Math.max(0.2, view.k * f)); f = k / view.k;
    view.x = p.x - (p.x - view.x) * f; view.y = p.y - (p.y - view.y) * f; view.k = k; apply();
  }, {passive: false});
  svg.addEventListener('pointerdown', function(evt){
    var g = evt.target.closest ? evt.target.closest('.node') : null;
    down = {id: g ? g.dataset.id : null, x: evt.clientX, y: evt.clientY};
    drag = {p: toSvg(evt), x: view.x, y: view.y}; svg.classList.add('dragging'); svg.setPointerCapture(evt.pointerId);
  });
  svg.addEventListener('pointermove', function(evt){
    if(!drag) return; var p = toSvg(evt);
    view.x = drag.x + (p.x - drag.p.x); view.y = drag.y + (p.y - drag.p.y); apply();
  });
  function end(){ drag = null; svg.classList.remove('dragging'); }
  svg.addEventListener('pointerup', function(evt){
    end();
    // a press and release in (nearly) the same place on a tool is a click: open its panel
    if(down && down.id && Math.abs(evt.clientX - down.x) + Math.abs(evt.clientY - down.y) < 5) openPanel(down.id);
    down = null;
  });
  svg.addEventListener('pointercancel', end);
  svg.addEventListener('dblclick', function(){ view = {x: 0, y: 0, k: 1}; apply(); });
  var nodes = svg.querySelectorAll('.node'), edges = svg.querySelectorAll('.edge'), hits = svg.querySelectorAll('.hit');
  var byId = {}; data.nodes.forEach(function(n){ byId[n.id] = n; });
  var panel = document.getElementById('panel'), down = null;
  function el(tag, text, cls){ var e = document.createElement(tag); if(text !== undefined) e.textContent = text; if(cls) e.className = cls; return e; }
  function line(label, value){ var d = el('div'); d.appendChild(el('span', label + ': ', 'k')); d.appendChild(document.createTextNode(value)); return d; }
  function show(id, evt){
    var n = byId[id]; if(!n) return;
    tip.textContent = '';
    tip.appendChild(el('b', n.id));
    if(n.desc) tip.appendChild(el('div', n.desc));
    if(n.inputs) tip.appendChild(line('input types', n.inputs.join(', ') || '(none)'));
    if(n.outputs) tip.appendChild(line('output types', n.outputs.join(', ') || '(none)'));
    if(n.params){
      tip.appendChild(line('parameters', n.params.length ? '' : '(none)'));
      if(n.params.length){
        var ul = el('ul');
        n.params.forEach(function(p){ ul.appendChild(el('li', p.name + ' (' + p.type + (p.required ? '' : ', optional') + ')' + (p.desc ? ': ' + p.desc : ''))); });
        tip.appendChild(ul);
      }
    }
    tip.appendChild(line('links', n.nin + ' in, ' + n.nout + ' out (click for the list and the reasons)'));
    tip.style.display = 'block'; move(evt);
    var near = {}; near[id] = true;
    edges.forEach(function(e){
      var on = e.dataset.s === id || e.dataset.t === id;
      e.classList.toggle('hl', on); if(on){ near[e.dataset.s] = true; near[e.dataset.t] = true; }
    });
    nodes.forEach(function(g){ g.classList.toggle('hl', !!near[g.dataset.id]); g.classList.toggle('me', g.dataset.id === id); });
    svg.classList.add('focus');
  }
  function move(evt){
    var x = evt.clientX + 14, y = evt.clientY + 14, w = tip.offsetWidth, h = tip.offsetHeight;
    if(x + w > window.innerWidth - 4) x = evt.clientX - w - 14;
    if(y + h > window.innerHeight - 4) y = Math.max(4, window.innerHeight - h - 4);
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  function hide(){ tip.style.display = 'none'; svg.classList.remove('focus'); }
  function reasonList(lk){
    var ul = el('ul');
    (lk.reasons.length ? lk.reasons : ['(no recorded reason)']).forEach(function(r){ ul.appendChild(el('li', r)); });
    return ul;
  }
  function showEdge(i, evt){
    var lk = data.links[i]; if(!lk) return;
    tip.textContent = '';
    tip.appendChild(el('b', lk.s + ' \u2192 ' + lk.t));
    tip.appendChild(line('type', lk.type || '(none)'));
    if(lk.reasons.length){ tip.appendChild(line('why', '')); }
    tip.appendChild(reasonList(lk));
    tip.style.display = 'block'; move(evt);
    edges.forEach(function(e){ e.classList.toggle('hl', e.dataset.i === String(i)); });
    nodes.forEach(function(g){ var on = g.dataset.id === lk.s || g.dataset.id === lk.t; g.classList.toggle('hl', on); g.classList.remove('me'); });
    svg.classList.add('focus');
  }
  function openPanel(id){
    var n = byId[id]; if(!n) return;
    var body = document.getElementById('panel-body'); body.textContent = '';
    body.appendChild(el('h2', n.id));
    if(n.desc) body.appendChild(el('div', n.desc));
    [['feeds', 's', 't'], ['fed by', 't', 's']].forEach(function(side){
      var mine = data.links.filter(function(lk){ return lk[side[1]] === id; });
      body.appendChild(el('h3', side[0] + ' (' + mine.length + ')'));
      var ul = el('ul');
      mine.forEach(function(lk){
        var li = el('li'); var far = el('span', lk[side[2]], 'far');
        far.addEventListener('click', function(){ openPanel(lk[side[2]]); });
        li.appendChild(far); li.appendChild(document.createTextNode(' (' + (lk.type || 'link') + ')'));
        li.appendChild(reasonList(lk)); ul.appendChild(li);
      });
      if(!mine.length) ul.appendChild(el('li', '(none)'));
      body.appendChild(ul);
    });
    panel.hidden = false; panel.dataset.tool = id;
  }
  document.getElementById('panel-close').addEventListener('click', function(){ panel.hidden = true; });
  hits.forEach(function(h){
    h.addEventListener('pointerenter', function(evt){ if(!drag) showEdge(Number(h.dataset.i), evt); });
    h.addEventListener('pointermove', function(evt){ if(!drag) move(evt); });
    h.addEventListener('pointerleave', hide);
  });
  nodes.forEach(function(g){
    g.addEventListener('pointerenter', function(evt){ if(!drag) show(g.dataset.id, evt); });
    g.addEventListener('pointermove', function(evt){ if(!drag) move(evt); });
    g.addEventListener('pointerleave', hide);
  });
  document.body.dataset.nodes = String(nodes.length);
  document.body.dataset.edges = String(edges.length);
  document.body.dataset.ready = '1';
})();
"""


def render_html(graph: ToolGraph, path: str | Path, *, title: str | None = None, kind: str = "auto") -> Path:
    """Write one self-contained interactive HTML page of the graph to ``path`` and return the path."""
    path = Path(path)
    n = len(graph.nodes)
    pos = layout(graph, kind)
    colors = type_colors(graph)
    size, margin = 1000.0, 200.0
    circular = kind == "circular" or (kind == "auto" and _dense(graph))
    radius = 9.0 if n > 30 else 11.0
    if not circular:  # spread the layout until no two names under their tools overlap (the grid of isolated tools)
        size = margin * 2 + (size - 2 * margin) * label_spread(pos, {t.id: t.id for t in graph.nodes}, radius)

    def xy(name: str) -> tuple[float, float]:
        x, y = pos[name]
        return margin + (x + 1) / 2 * (size - 2 * margin), margin + (1 - y) / 2 * (size - 2 * margin)

    indeg = dict.fromkeys((t.id for t in graph.nodes), 0)
    outdeg = dict(indeg)
    for lk in graph.links:
        outdeg[lk.source] = outdeg.get(lk.source, 0) + 1
        indeg[lk.target] = indeg.get(lk.target, 0) + 1
    m = len(graph.links)
    edge_opacity = max(0.06, min(0.6, 14.0 / math.sqrt(max(m, 1))))
    link_types = list(dict.fromkeys(lk.type or "(none)" for lk in graph.links))
    markers = []
    for i, ty in enumerate(link_types):
        markers.append(
            f'<marker id="arrow{i}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" markerHeight="9" '
            f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colors.get(ty, "#888")}"/></marker>'
        )
    marker_of = {ty: i for i, ty in enumerate(link_types)}
    parts: list[str] = []
    hits: list[str] = []
    for i, lk in enumerate(graph.links):
        (x1, y1), (x2, y2) = xy(lk.source), xy(lk.target)
        dx, dy = x2 - x1, y2 - y1
        dist = math.hypot(dx, dy) or 1.0
        ux, uy = dx / dist, dy / dist
        sx, sy = x1 + ux * radius, y1 + uy * radius
        tx, ty_ = x2 - ux * (radius + 2), y2 - uy * (radius + 2)
        bend = 0.12 * dist  # a slight bend keeps a->b and b->a apart
        cx, cy = (sx + tx) / 2 - uy * bend, (sy + ty_) / 2 + ux * bend
        key = lk.type or "(none)"
        curve = f"M{sx:.1f},{sy:.1f} Q{cx:.1f},{cy:.1f} {tx:.1f},{ty_:.1f}"
        parts.append(
            f'<path class="edge" data-i="{i}" data-s="{html.escape(lk.source)}" data-t="{html.escape(lk.target)}" '
            f'd="{curve}" stroke="{colors.get(key, "#888")}" '
            f'stroke-width="1.2" marker-end="url(#arrow{marker_of[key]})" style="--m:url(#arrow{marker_of[key]})"><title>{html.escape(lk.source)} &#8594; '
            f"{html.escape(lk.target)} ({html.escape(key)})</title></path>"
        )
        hits.append(f'<path class="hit" data-i="{i}" d="{curve}"/>')
    parts += hits  # wide invisible strokes to hover thin links, under the tools
    for t in graph.nodes:
        x, y = xy(t.id)
        if circular:
            angle = math.atan2(pos[t.id][1], pos[t.id][0])
            lx, ly = math.cos(angle) * (radius + 6), -math.sin(angle) * (radius + 6)
            deg = -math.degrees(angle)
            anchor = "start"
            if math.cos(angle) < 0:
                deg += 180
                anchor = "end"
                lx, ly = lx, ly
            label = (
                f'<text x="0" y="0" text-anchor="{anchor}" dominant-baseline="middle" '
                f'transform="translate({lx:.1f},{ly:.1f}) rotate({deg:.1f})">{html.escape(t.id)}</text>'
            )
        else:
            label = f'<text x="0" y="{radius + 14:.0f}" text-anchor="middle">{html.escape(t.id)}</text>'
        parts.append(
            f'<g class="node" data-id="{html.escape(t.id)}" transform="translate({x:.1f},{y:.1f})">'
            f'<circle r="{radius}" fill="{colors.get(_group(t), NEUTRAL)}"/>{label}</g>'
        )
    nodes_json = []
    for t in graph.nodes:
        info = _tool_info(t)
        info["nin"], info["nout"] = indeg.get(t.id, 0), outdeg.get(t.id, 0)
        nodes_json.append(info)
    # no '<', '>' or '&' inside the script element, so no text can close it or open a comment
    links_json = [{"s": lk.source, "t": lk.target, "type": lk.type, "reasons": [r.text() for r in lk.reasons]}
                  for lk in graph.links]
    data = (
        json.dumps({"nodes": nodes_json, "links": links_json}, ensure_ascii=False)
        .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    typed = any(t.is_typed for t in graph.nodes)
    legend = []
    for g in dict.fromkeys(_group(t) for t in graph.nodes):
        label = _group_label(g, typed)
        legend.append(f'<div><span class="sw" style="background:{colors.get(g, NEUTRAL)}"></span>{html.escape(label)}</div>')
    for ty in link_types:
        legend.append(f'<div><span class="ln" style="background:{colors.get(ty, "#888")}"></span>link: {html.escape(ty)}</div>')
    dep = graph.dependency_kind
    how = f", links inferred: {graph.inferred}" if graph.inferred else ""
    if graph.edits:
        how += f", {len(graph.edits)} hand edits"
    heading = html.escape(title or "tool graph")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{heading}</title><style>{_CSS}</style></head>
<body data-ready="0">
<div id="head"><h1>{heading}</h1><p>{n} tools, {m} links ({html.escape(dep)}{html.escape(how)}). Drag to pan, scroll to zoom,
double-click to reset, hover a tool or a link for details, click a tool for its links.</p></div>
<svg id="graph" viewBox="0 0 {size:.0f} {size:.0f}" preserveAspectRatio="xMidYMid meet" style="--eo:{edge_opacity:.3f}"
 xmlns="http://www.w3.org/2000/svg"><defs>{''.join(markers)}</defs><g id="viewport">{''.join(parts)}</g></svg>
<div id="legend">{''.join(legend)}</div>
<div id="panel" hidden><button id="panel-close" title="close" aria-label="close">&#215;</button><div id="panel-body"></div></div>
<div id="tip"></div>
<script id="graph-data" type="application/json">{data}</script>
<script>{_JS}</script>
</body></html>
"""
    from ..dataset.jsonio import write_text

    write_text(path, page)  # atomic (no half page on a full disk); a lone surrogate is written as its escape
    return path


def render(graph: ToolGraph, path: str | Path, *, title: str | None = None, kind: str = "auto") -> Path:
    """Render by file suffix: ``.png`` (also .svg/.pdf via matplotlib) or ``.html``."""
    suffix = Path(path).suffix.lower()
    if suffix in (".html", ".htm"):
        return render_html(graph, path, title=title, kind=kind)
    return render_png(graph, path, title=title, kind=kind)


# ------------------------------------------------------------------------------------- task graph SVG


def _layers(names: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layer of each node (sources on layer 0); edges that would close a cycle are ignored."""
    succ: dict[str, list[str]] = {n: [] for n in names}
    for s, t in edges:
        if s in succ and t in succ and s != t:
            succ[s].append(t)
    state: dict[str, int] = {}
    order: list[str] = []
    back: set[tuple[str, str]] = set()

    def visit(n: str) -> None:
        state[n] = 1
        for m in succ[n]:
            if state.get(m) == 1:
                back.add((n, m))
            elif m not in state:
                visit(m)
        state[n] = 2
        order.append(n)

    for n in names:
        if n not in state:
            visit(n)
    layer = dict.fromkeys(names, 0)
    for n in reversed(order):  # topological order of the acyclic part
        for m in succ[n]:
            if (n, m) not in back:
                layer[m] = max(layer[m], layer[n] + 1)
    return layer


def _task_positions(names: list[str], edges: list[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """Top-down layered positions in pixels: one row per layer, nodes ordered by one barycentre pass."""
    layer = _layers(names, edges)
    rows: dict[int, list[str]] = {}
    for n in names:
        rows.setdefault(layer[n], []).append(n)
    index = {n: i for i, n in enumerate(names)}
    placed: dict[str, float] = {}
    for depth in sorted(rows):
        row = rows[depth]
        if depth:
            def bary(n: str) -> float:
                ups = [placed[s] for s, t in edges if t == n and s in placed]
                return sum(ups) / len(ups) if ups else float(index[n])
            row.sort(key=lambda n: (bary(n), index[n]))
        for i, n in enumerate(row):
            placed[n] = i - (len(row) - 1) / 2
    return {n: (placed[n] * _TASK_DX, layer[n] * _TASK_DY) for n in names}


_TASK_W, _TASK_H, _TASK_DX, _TASK_DY = 168.0, 42.0, 186.0, 74.0


def _task_svg(
    keys: list[str], labels: dict[str, str], edges: list[tuple[str, str]], pos: dict[str, tuple[float, float]],
    colors: dict[str, str], box: tuple[float, float, float, float], *, odd_nodes: set[str], odd_edges: set[tuple[str, str]],
    odd_class: str, titles: dict[str, str], caption: str,
) -> str:
    x0, y0, w, h = box
    parts = [
        f'<svg class="taskgraph" xmlns="http://www.w3.org/2000/svg" viewBox="{x0:.0f} {y0:.0f} {w:.0f} {h:.0f}" '
        f'width="{w:.0f}" height="{h:.0f}" role="img" aria-label="{html.escape(caption)}">'
        '<defs><marker id="tg-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#5b6675"/></marker>'
        '<marker id="tg-arrow-odd" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="currentColor"/></marker></defs>'
    ]
    for s, t in edges:
        if s not in pos or t not in pos:
            continue
        (x1, y1), (x2, y2) = pos[s], pos[t]
        if y2 > y1:
            sy, ty = y1 + _TASK_H / 2, y2 - _TASK_H / 2 - 2
            mid = (sy + ty) / 2
            d = f"M{x1:.1f},{sy:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{ty:.1f}"
        else:  # same row or upwards (a cycle or a link against the layering): arc around the side
            sx, tx = x1 + _TASK_W / 2, x2 + _TASK_W / 2 + 2
            bulge = max(x1, x2) + _TASK_W / 2 + 40
            d = f"M{sx:.1f},{y1:.1f} C{bulge:.1f},{y1:.1f} {bulge:.1f},{y2:.1f} {tx:.1f},{y2:.1f}"
        odd = (s, t) in odd_edges
        cls = f"tg-edge {odd_class}" if odd else "tg-edge"
        marker = "tg-arrow-odd" if odd else "tg-arrow"
        parts.append(
            f'<path class="{cls}" data-s="{html.escape(s)}" data-t="{html.escape(t)}" d="{d}" fill="none" '
            f'marker-end="url(#{marker})"><title>{html.escape(labels.get(s, s))} &#8594; '
            f'{html.escape(labels.get(t, t))}</title></path>'
        )
    for k in keys:
        x, y = pos[k]
        label = labels.get(k, k)
        lines = textwrap.wrap(label, width=22, break_long_words=True) or [label]
        lines = lines[:2] if len(lines) <= 2 else [lines[0], lines[1][:19] + "..."]
        cls = f"tg-node {odd_class}" if k in odd_nodes else "tg-node"
        text_y = -5.0 if len(lines) == 2 else 4.5
        spans = "".join(
            f'<tspan x="0" y="{text_y + 14 * i:.1f}">{html.escape(line)}</tspan>' for i, line in enumerate(lines)
        )
        parts.append(
            f'<g class="{cls}" data-id="{html.escape(label)}" transform="translate({x:.1f},{y:.1f})">'
            f'<title>{html.escape(titles.get(k, label))}</title>'
            f'<rect x="{-_TASK_W / 2:.0f}" y="{-_TASK_H / 2:.0f}" width="{_TASK_W:.0f}" height="{_TASK_H:.0f}" '
            f'rx="9" style="--c:{colors.get(k, NEUTRAL)}"/><text text-anchor="middle">{spans}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def task_graph_svgs(
    nodes: list[str],
    links: list[tuple[str, str]],
    sampled_nodes: list[str] | None = None,
    sampled_links: list[tuple[str, str]] | None = None,
    *,
    graph: ToolGraph | None = None,
    titles: dict[str, str] | None = None,
) -> tuple[str, str | None]:
    """Two small SVG drawings for a sample: its tool invocation graph and, when given, the sampled subgraph it
    was generated from, laid out together (same place for the same tool) so they compare at a glance.

    Tools are boxes coloured as in :func:`render_html` (by first output type, from ``graph``); links are arrows,
    top to bottom. What the invocation graph has beyond the sampled subgraph carries the class ``tg-extra``,
    what it lacks is drawn in the sampled panel with ``tg-missing`` (the page styles both). ``titles`` maps a
    tool name to hover text (e.g. its arguments). Returns ``(invocation svg, sampled svg or None)``; plain
    markup, every text escaped, no script.
    """
    titles = titles or {}
    keys: list[str] = []
    labels: dict[str, str] = {}
    seen: dict[str, int] = {}
    for name in nodes:  # a tool used twice (bad data) still gets two boxes
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name}\u0000{seen[name]}"
        keys.append(key)
        labels[key] = name
    edges = list(dict.fromkeys(links))
    s_nodes = list(dict.fromkeys(sampled_nodes or []))
    s_edges = list(dict.fromkeys(sampled_links or []))
    union = keys + [n for n in s_nodes if n not in labels]
    for n in union:
        labels.setdefault(n, n)
    union_edges = list(dict.fromkeys(edges + s_edges))
    pos = _task_positions(union, union_edges)
    group_of: dict[str, str] = {}
    if graph is not None:
        by_id = {t.id: t for t in graph.nodes}
        palette = type_colors(ToolGraph(nodes=graph.nodes, links=[], dependency=graph.dependency))
        for k in union:
            tool = by_id.get(labels[k])
            group_of[k] = palette.get(_group(tool), NEUTRAL) if tool is not None else "#b0b7c0"
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    right_arc = 60.0 if any(pos[t][1] <= pos[s][1] for s, t in union_edges if s in pos and t in pos) else 0.0
    box = (min(xs) - _TASK_W / 2 - 12, min(ys) - _TASK_H / 2 - 12,
           max(xs) - min(xs) + _TASK_W + 24 + right_arc, max(ys) - min(ys) + _TASK_H + 24)
    node_set, s_set = set(nodes), set(s_nodes)
    compare = sampled_nodes is not None
    extra_nodes = {k for k in keys if labels[k] not in s_set} if compare else set()
    extra_edges = {e for e in edges if e not in set(s_edges)} if compare else set()
    main = _task_svg(keys, labels, edges, pos, group_of, box, odd_nodes=extra_nodes, odd_edges=extra_edges,
                     odd_class="tg-extra", titles=titles, caption="tool invocation graph")
    if not compare:
        return main, None
    missing_nodes = {n for n in s_nodes if n not in node_set}
    missing_edges = {e for e in s_edges if e not in set(edges)}
    sampled = _task_svg(s_nodes, labels, s_edges, pos, group_of, box, odd_nodes=missing_nodes,
                        odd_edges=missing_edges, odd_class="tg-missing", titles={}, caption="sampled subgraph")
    return main, sampled
