"use strict";
// taskbench view. Every text from the server goes into the page through textContent or createTextNode, never
// as HTML; links are built here from fixed prefixes (safeHref); the only markup inserted is the server's graph
// SVG (every text in it escaped, no script: graph/render.py).
const main = document.getElementById("main");
const state = {glossary: null};

function safeHref(v) {
  v = String(v);
  return (v.startsWith("#/") || v.startsWith("/view/report/")) ? v : "#/";
}

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = String(v);
    else if (k === "text") el.textContent = String(v);
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "href") el.setAttribute("href", safeHref(v));
    else el.setAttribute(k, String(v));
  }
  for (const c of kids.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const enc = encodeURIComponent;
const pct = v => (v === null || v === undefined) ? "-" : (100 * v).toFixed(2);
const num = v => (v === null || v === undefined) ? "-" : Number(v).toLocaleString("en-US");
const secs = v => (v === null || v === undefined) ? "-" : Number(v).toFixed(2) + " s";
const badge = (text, cls) => h("span", {class: "badge " + (cls || "")}, text);
const status = s => badge(s, "st-" + s);

async function api(path, opts) {
  const r = await fetch(path, Object.assign({credentials: "same-origin"}, opts || {}));
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (!r.ok) throw new Error((body && body.detail) ? String(body.detail) : ("HTTP " + r.status));
  return body;
}

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?");
  const parts = path ? path.split("/").map(decodeURIComponent) : [];
  const params = new URLSearchParams(query || "");
  return {parts, params};
}

function setView(name, crumbs) {
  document.body.dataset.view = name;
  document.getElementById("crumbs").textContent = crumbs || "";
  for (const [id, v] of [["nav-runs", "runs"], ["nav-board", "board"], ["nav-compare", "compare"]])
    document.getElementById(id).classList.toggle("on", name === v);
}

function show(...nodes) {
  main.replaceChildren(...nodes.flat(Infinity).filter(Boolean));
  document.body.dataset.ready = "1";
}

function table(head, rows, opts) {
  const thead = h("tr", null, head.map(c => typeof c === "string" ? h("th", null, c) : c));
  return h("table", opts || null, h("thead", null, thead), h("tbody", null, rows));
}

function kv(obj, keys) {
  const dl = h("dl", {class: "kv"});
  for (const k of keys || Object.keys(obj || {})) {
    const v = (obj || {})[k];
    if (v === undefined || v === null || v === "") continue;
    dl.append(h("dt", null, k), h("dd", null, typeof v === "object" ? JSON.stringify(v) : String(v)));
  }
  return dl;
}

function pre(text) { return h("pre", null, text === null || text === undefined ? "" : String(text)); }

// one label per metric and group on every page (the server's legend: label, the key evaluate/compare write)
function metricLabel(legend, key) {
  const m = ((legend || {}).metrics || []).find(x => x.key === key);
  return m ? m.label : key;
}
function groupLabel(legend, key) {
  const g = ((legend || {}).groups || []).find(x => x.key === key);
  if (g) return g.label;
  const [split, n] = key.split(/_(.*)/s);
  return n === "overall" ? split : `${split}, ${n} tools`;
}
function labelled(label, key) {  // the label, and under it the key as evaluate and compare write it
  return [h("span", {class: "lbl"}, label), label !== key ? h("span", {class: "key"}, key) : null];
}
function legendBlock(legend, keys) {
  const shown = (legend.metrics || []).filter(m => !keys || keys.has(m.key));
  return h("div", {class: "legend-block", id: "legend"},
    h("h2", null, "What the names mean"),
    h("p", {class: "muted small"}, legend.note || ""),
    h("div", {class: "scroll"}, table(["label (here, report, evaluate's table)", "key (evaluate and compare JSON; compare's table)", "what it measures", "better"],
      shown.map(m => h("tr", null, h("td", null, h("b", null, m.label)), h("td", null, h("code", null, m.key)), h("td", null, m.meaning),
        h("td", null, badge(m.lower_is_better ? "lower" : "higher", m.lower_is_better ? "warnb" : "ok")))), {class: "legend-table"})),
    h("h3", null, "Groups"),
    h("div", {class: "scroll"}, table(["label", "key"], (legend.groups || []).map(g => h("tr", null, h("td", null, g.label), h("td", null, h("code", null, g.key)))),
      {class: "legend-table"})));
}

// ------------------------------------------------------------------------------------------------ runs

async function viewRuns() {
  setView("runs", "");
  const d = await api("/api/view/runs");
  const byId = Object.fromEntries(d.runs.map(r => [r.id, r]));
  const ordered = [];
  for (const r of d.runs) if (!r.parent || !byId[r.parent]) {
    ordered.push([r, 0]);
    for (const c of r.children) if (byId[c]) ordered.push([byId[c], 1]);
  }
  const rows = ordered.map(([r, depth]) => h("tr", {class: "click run-row", "data-run": r.id,
      onclick: () => { location.hash = "#/run/" + enc(r.id); }},
    h("td", null, status(r.status)),
    h("td", null, r.kind),
    h("td", null, depth ? "\u21b3 " : "", h("a", {href: "#/run/" + enc(r.id)}, r.title),
      h("div", {class: "muted small"}, r.path)),
    h("td", null, r.models.join(", ")),
    h("td", null, r.datasets.join(", ")),
    h("td", null, (r.date || "").replace("T", " ").slice(0, 19)),
    h("td", {class: "num"}, r.entries ? num(r.samples) + " \u00d7 " + r.entries : ""),
    h("td", null, r.headline ? `${r.headline.label} ${pct(r.headline.value)} (${r.headline.of})` : (r.extra || ""))));
  show(h("h1", null, `${d.runs.length} runs`, h("span", {class: "muted small"}, "  under " + d.paths.join(", "))),
    table(["status", "kind", "run", "models", "datasets", "date (UTC)", "samples \u00d7 entries", "headline"], rows,
      {id: "runs"}),
    d.problems.length ? h("div", {class: "card"}, h("h3", null, "Not read"), d.problems.map(p => h("div", {class: "warn small"}, p))) : null);
}

// ------------------------------------------------------------------------------------------------ one run

async function viewRun(rid) {
  const r = await api("/api/view/run/" + enc(rid));
  setView("run", r.title);
  if (r.kind === "agents") return viewAgents(r);
  if (r.kind === "generate") return viewGeneration(r);
  const hd = r.header || {};
  const entries = r.entries_detail.map(e => h("tr", {class: "entry-row", "data-entry": e.key},
    h("td", null, e.dataset), h("td", null, e.model), h("td", null, status(e.status)),
    h("td", {class: "num"}, num(e.samples)),
    ...["node_micro_f1", "link_f1", "argument_value_f1", "edit_distance"].map(m =>
      h("td", {class: "num"}, pct(e.strict[m]), e.ci[m] ? h("span", {class: "ci"}, `[${pct(e.ci[m][0])}, ${pct(e.ci[m][1])}]`) : null)),
    h("td", {class: "num"}, pct(e.compat.node_micro_f1)),
    h("td", {class: "num"}, num(e.failures)), h("td", {class: "num"}, num(e.parse_failures)),
    h("td", {class: "num"}, secs(e.predict_seconds)),
    h("td", {class: "num"}, num((e.usage || {}).prompt_tokens) + " / " + num((e.usage || {}).completion_tokens)),
    h("td", null, e.has_predictions ? h("a", {href: `#/samples/${enc(r.id)}/${enc(e.key)}`, class: "samples-link"}, "samples") : "",
      " ", e.error ? h("div", {class: "error small"}, e.error) : null)));
  const stages = Object.fromEntries((hd.stages || []).map(st => [st.path, st]));
  const children = r.children.map(c => {
    const st = stages[c.split("-").pop()] || {};  // a stage's id ends with its folder (generated, agents)
    return h("li", null, h("a", {href: "#/run/" + enc(c)}, st.kind ? `${st.kind} stage (${st.path}/)` : c), " ",
      st.status ? status(st.status) : null, st.seconds ? ` ${secs(st.seconds)}` : null, st.error ? h("span", {class: "error small"}, " " + st.error) : null);
  });
  const passes = (hd.passes || []).map(p => h("tr", null, h("td", null, p.started), h("td", null, status(p.status)),
    h("td", {class: "num"}, secs(p.seconds)), h("td", null, p.stage || ""), h("td", {class: "error small"}, p.error || "")));
  const failures = r.entries_detail.filter(e => e.failures || e.error || e.warnings.length);
  show(h("h1", null, r.title, " ", status(r.status), " ", h("span", {class: "muted small"}, r.kind + " \u00b7 " + r.path)),
    r.death ? h("div", {class: "card error"}, r.death) : null,
    (r.problems || []).length ? h("div", {class: "card", id: "not-read"}, h("b", null, "Not read"),
      r.problems.map(p => h("div", {class: "warn small"}, p))) : null,
    (hd.reports || []).includes("report.html") ? h("p", null, h("a", {href: "/view/report/" + enc(r.id), target: "_blank", rel: "noopener", id: "report-link"}, "Open report.html")) : null,
    h("h2", null, "Models \u00d7 datasets (strict, all samples, %; compat n-F1) ",
      h("a", {href: "#/board", class: "small"}, "what the names mean")),
    table(["dataset", "model", "status", "n",
      ...[["n-F1", "node_micro_f1"], ["e-F1", "link_f1"], ["v-F1", "argument_value_f1"], ["NED", "edit_distance"],
        ["compat n-F1", "node_micro_f1_no_matching"]].map(([label, key]) => h("th", {class: "num", title: key}, labelled(label, key))),
      "failed calls", "parse fail", "predict", "tokens in / out", ""], entries, {id: "entries"}),
    children.length ? [h("h2", null, "Stages"), h("ul", null, children)] : null,
    failures.length ? [h("h2", null, "Failures and warnings"), failures.map(e => h("div", {class: "card"},
      h("b", null, e.key), e.error ? h("div", {class: "error"}, e.error) : null,
      e.failures ? h("div", null, `${e.failures} calls failed for good (rerun retries them)`) : null,
      e.warnings.map(w => h("div", {class: "warn small"}, w))))] : null,
    hd.config ? [h("h2", null, "Config"), h("div", {class: "card"}, kv(hd.config))] : null,
    hd.environment ? [h("h2", null, "Environment"), h("div", {class: "card"}, kv(hd.environment))] : null,
    hd.usage ? [h("h2", null, "Usage and timings"), h("div", {class: "card"}, kv(Object.assign({"wall seconds": hd.seconds,
      started: hd.started, finished: hd.finished}, hd.usage)))] : null,
    passes.length ? [h("h3", null, "Passes"), table(["started", "status", "seconds", "stage", "error"], passes)] : null);
}

// ------------------------------------------------------------------------------------------------ leaderboard

const GROUPS = ["overall_overall", "single_overall", "chain_overall", "dag_overall",
  ...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(n => "overall_" + n)];

async function viewBoard(params) {
  setView("board", "leaderboard");
  const dataset = params.get("dataset") || "";
  const d = await api("/api/view/board" + (dataset ? "?dataset=" + enc(dataset) : ""));
  state.glossary = d;
  const group = params.get("group") || "overall_overall";
  const source = params.get("source") || "both";
  const sortKey = params.get("sort") || "node_micro_f1";
  const metrics = d.metrics;
  const lower = Object.fromEntries(metrics.map(m => [m.key, m.lower_is_better]));
  const merged = new Map();
  for (const row of d.rows) {
    const k = row.run + "\u0000" + row.entry;
    if (!merged.has(k)) merged.set(k, {run: row.run, run_title: row.run_title, model: row.model, dataset: row.dataset,
      entry: row.entry, strict: null, compat: null});
    merged.get(k)[row.source] = row;
  }
  const sources = source === "both" ? ["strict", "compat"] : [source];
  let rows = [...merged.values()].filter(r => sources.some(s => r[s] && r[s].groups[group]));
  const val = (r, s, m) => (r[s] && r[s].groups[group] && r[s].groups[group][m]) ? r[s].groups[group][m][0] : null;
  const first = sources[0];
  rows.sort((a, b) => {
    const va = val(a, first, sortKey), vb = val(b, first, sortKey);
    if (va === null) return vb === null ? 0 : 1;
    if (vb === null) return -1;
    return lower[sortKey] ? va - vb : vb - va;
  });
  const nav = (changes) => {
    const p = new URLSearchParams({dataset, group, source, sort: sortKey});
    for (const [k, v] of Object.entries(changes)) p.set(k, v);
    location.hash = "#/board?" + p.toString();
  };
  const sel = (id, options, value, key) => h("select", {id, onchange: e => nav({[key]: e.target.value})},
    options.map(([v, label]) => h("option", {value: v, selected: v === value ? "selected" : null}, label)));
  const head = [h("th", null, "#"), h("th", null, "model"), h("th", null, "dataset"), h("th", null, "run"), h("th", {class: "num"}, "n")];
  const shown = metrics.filter(m => rows.some(r => sources.some(s => val(r, s, m.key) !== null)));
  for (const m of shown)
    head.push(h("th", {class: "sort num" + (m.key === sortKey ? " sorted" : ""), title: m.meaning + " (click to sort, best first)",
      "data-metric": m.key, onclick: () => nav({sort: m.key})}, m.label, m.lower_is_better ? h("span", {class: "dir"}, " lower better") : null,
      m.key === sortKey ? " \u25bc" : null));
  let smallN = 0;
  const body = rows.map((r, i) => {
    const n = ((r[first] || r.strict || r.compat).groups[group] || {}).n;
    const small = n !== null && n !== undefined && n < d.small_n;
    if (small) smallN += 1;
    return h("tr", {class: "board-row"}, h("td", null, i + 1), h("td", null, r.model), h("td", null, r.dataset),
      h("td", null, h("a", {href: "#/run/" + enc(r.run)}, r.run_title)),
      h("td", {class: "num"}, num(n), small ? h("span", {class: "badge warnb", title: `fewer than ${d.small_n} samples: the CIs are wide`}, "small n") : null),
      shown.map(m => h("td", {class: "num"}, sources.map((s, j) => {
        const cell = r[s] && r[s].groups[group] ? r[s].groups[group][m.key] : null;
        const value = cell ? pct(cell[0]) : "-";
        return j === 0 ? [h("span", {class: "v"}, value), cell && cell[1] ? h("span", {class: "ci"}, `[${pct(cell[1][0])}, ${pct(cell[1][1])}]`) : null]
          : h("span", {class: "ci compat"}, "compat " + value);
      }))));
  });
  const glossary = h("ul", {class: "glossary"}, metrics.map(m => h("li", null, h("b", null, m.label), " ", h("code", {class: "key"}, m.key), ": ",
    m.meaning || m.key, " ", badge(m.lower_is_better ? "lower is better" : "higher is better", m.lower_is_better ? "warnb" : "ok"))),
    h("li", null, h("b", null, "n"), `: the samples each value rests on (strict: gold samples; compat: gold samples with a prediction). Below ${d.small_n} the 95% CIs (bootstrap, strict only) are too wide to rank on.`),
    h("li", null, h("b", null, "strict / compat"), ": strict scores every gold sample (a missing or unparseable answer counts as wrong); compat follows the reference scripts, which drop what they cannot parse."));
  show(h("h1", null, "Leaderboard"),
    h("div", {class: "filters"},
      h("label", null, "dataset", sel("b-dataset", [["", "all"], ...d.datasets.map(x => [x, x])], dataset, "dataset")),
      h("label", null, "group", sel("b-group", GROUPS.map(g => [g, groupLabel(d.legend, g)]), group, "group")),
      h("label", null, "scores", sel("b-source", [["both", "strict and compat"], ["strict", "strict"], ["compat", "compat"]], source, "source")),
      h("span", {class: "muted small"}, "click a column to sort (best first); each cell: strict value, its 95% CI, the compat value")),
    smallN ? h("div", {class: "smalln", id: "smalln"}, `${smallN} row(s) rest on fewer than ${d.small_n} samples: their 95% CIs are very wide, so differences of tens of points can be chance.`) : null,
    h("div", {class: "scroll"}, table(head, body, {id: "board"})),
    rows.length ? null : h("p", {class: "muted"}, "No scored entry has this group."),
    h("h2", null, "What the numbers mean"), glossary,
    d.legend ? h("details", null, h("summary", {class: "small"}, "every metric and group name, with the key evaluate and compare use"),
      legendBlock(d.legend)) : null,
    d.problems.length ? d.problems.map(p => h("div", {class: "warn small"}, p)) : null);
}

// ------------------------------------------------------------------------------------------------ samples

async function viewSamples(rid, key, params) {
  setView("samples", rid + " \u00b7 " + key);
  const offset = Number(params.get("offset") || 0), limit = 50;
  const q = new URLSearchParams({entry: key, offset: String(offset), limit: String(limit)});
  for (const f of ["type", "n", "label", "tool", "finish", "q"]) if (params.get(f)) q.set(f, params.get(f));
  const d = await api(`/api/view/samples/${enc(rid)}?` + q.toString());
  const nav = (changes) => {
    const p = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) { if (v === "" || v === null) p.delete(k); else p.set(k, v); }
    if (!("offset" in changes)) p.delete("offset");
    location.hash = `#/samples/${enc(rid)}/${enc(key)}?` + p.toString();
  };
  const facet = (id, name, counts) => h("label", null, name, h("select", {id, onchange: e => nav({[name]: e.target.value})},
    h("option", {value: ""}, "all"), Object.entries(counts).map(([v, c]) =>
      h("option", {value: v, selected: params.get(name) === v ? "selected" : null}, `${v} (${c})`))));
  const search = h("input", {id: "f-q", type: "search", placeholder: "id or text", maxlength: "200", value: params.get("q") || ""});
  search.addEventListener("keydown", e => { if (e.key === "Enter") nav({q: search.value}); });
  const rows = d.rows.map(r => {
    const link = `#/sample/${enc(rid)}/${enc(key)}/${enc(r.id)}`;
    return h("tr", {class: "click sample-row", "data-id": r.id, onclick: () => { location.hash = link; }},
      h("td", null, h("a", {href: link}, r.id)), h("td", null, r.type || ""), h("td", {class: "num"}, r.n ?? ""),
      h("td", null, r.labels.length ? r.labels.map(l => badge(l, "bad")) : (r.predicted ? badge("correct", "ok") : "")),
      h("td", null, r.failed ? badge("call failed", "bad") : r.parse_error ? badge("parse error", "warnb") : (r.finish || "")),
      h("td", null, r.request));
  });
  const pages = h("div", {class: "pager"},
    h("button", {id: "prev", disabled: offset <= 0 ? "disabled" : null, onclick: () => nav({offset: String(Math.max(0, offset - limit))})}, "\u2190 prev"),
    h("span", {id: "count"}, `${num(d.matched ? offset + 1 : 0)}-${num(Math.min(offset + limit, d.matched))} of ${num(d.matched)} matching (${num(d.total)} samples)`),
    h("button", {id: "next", disabled: offset + limit >= d.matched ? "disabled" : null, onclick: () => nav({offset: String(offset + limit)})}, "next \u2192"));
  show(h("h1", null, "Samples ", h("span", {class: "muted small"}, key + " \u00b7 ", h("a", {href: "#/run/" + enc(rid)}, rid))),
    h("div", {class: "filters"}, facet("f-type", "type", d.facets.type), facet("f-n", "n", d.facets.n),
      facet("f-label", "label", d.facets.label), facet("f-tool", "tool", d.facets.tool), search,
      h("button", {onclick: () => nav({q: search.value})}, "Search")),
    pages, table(["id", "structure", "tools", "error type", "finish", "request"], rows, {id: "samples"}),
    d.problems.map(p => h("div", {class: "warn small"}, p)));
}

function graphBox(svg, hallucinated, id) {
  const box = h("div", {class: "graph", id});
  if (svg) {
    box.innerHTML = svg;  // server-rendered by graph/render.py: every text escaped, no script
    for (const g of box.querySelectorAll("g.tg-node")) if (hallucinated.includes(g.getAttribute("data-id"))) g.classList.add("tg-halluc");
  } else box.append(h("span", {class: "muted"}, "no usable graph"));
  return box;
}

async function viewSample(rid, key, sid) {
  setView("sample", `${rid} \u00b7 ${key} \u00b7 ${sid}`);
  const d = await api(`/api/view/sample/${enc(rid)}?entry=${enc(key)}&id=${enc(sid)}`);
  const p = d.prediction || {};
  const ed = d.error_detail || {};
  const legend = h("div", {class: "legend"}, h("span", null, h("span", {class: "swatch", style: "border-color:#c62828"}), "extra: predicted, not in the gold"),
    h("span", null, h("span", {class: "swatch", style: "border-color:#8a94a0"}), "missing: in the gold, not predicted"),
    h("span", null, h("span", {class: "swatch", style: "border-color:#7b1fa2"}), "hallucinated: not a tool of the library"));
  const args = d.arguments.filter(a => !a.same).map(a => a.diffs.map(x => h("tr", null, h("td", null, a.tool), h("td", null, x.name),
    h("td", {class: "diff-" + x.state}, x.state), h("td", null, x.gold ?? "-"), h("td", null, x.predicted ?? "-"))));
  const steps = (g) => g ? h("ol", null, g.steps.map(s => h("li", null, s))) : null;
  show(h("h1", null, "Sample ", h("code", null, d.id), " ", (d.row.labels || []).map(l => badge(l, "bad")),
      d.row.labels.length === 0 && d.row.predicted && d.error_detail ? badge("correct", "ok") : null),
    h("p", {class: "muted small"}, h("a", {href: `#/samples/${enc(rid)}/${enc(key)}`}, "\u2190 samples of " + key), " \u00b7 deep link: this address"),
    h("div", {class: "card"}, h("b", null, "Request"), h("div", {id: "request"}, d.request)),
    legend,
    h("div", {class: "two"},
      h("div", null, h("h3", null, "Predicted"), graphBox(d.svg_pred, d.hallucinated, "svg-pred"), steps(d.predicted)),
      h("div", null, h("h3", null, "Gold"), graphBox(d.svg_gold, [], "svg-gold"), steps(d.gold))),
    h("div", {class: "card"}, kv({"missing tools": (ed.missing_tools || []).join(", "), "extra tools": (ed.extra_tools || []).join(", "),
      "hallucinated tools": (ed.hallucinated_tools || []).join(", "),
      "wrong links": (ed.wrong_links || []).map(l => l.join(" \u2192 ")).join("; "),
      "missing links": (ed.missing_links || []).map(l => l.join(" \u2192 ")).join("; "),
      "parameter errors in": (ed.parameter_tools || []).join(", "), "detail": ed.detail,
      "finish_reason": p.finish_reason, "call failed": p.failed ? "yes" : null, "model": p.model,
      "tokens": p.usage ? `${p.usage.prompt_tokens} in / ${p.usage.completion_tokens} out, ${secs(p.usage.seconds)}` : null})),
    d.execution ? h("div", {class: "card", id: "execution"}, h("b", null, "Execution (evaluate --execute): "),
      d.execution.success ? badge("success", "ok") : badge("no success", "bad"), d.execution.exact ? badge("exact", "ok") : null,
      ` recall ${pct(d.execution.recall)}% \u00b7 ${d.execution.status || ""} \u00b7 `, d.execution.reason || "") : null,
    args.length ? [h("h3", null, "Argument differences"), table(["tool", "argument", "", "gold", "predicted"], args, {id: "args"})] : null,
    p.error ? [h("h3", null, "Parse error"), h("pre", {id: "parse-error", class: "error"}, p.error)] : null,
    h("h3", null, "Raw model output"), h("pre", {id: "raw"}, p.raw ?? "(none)"),
    p.reformat_raw ? [h("h3", null, "Reformat pass"), pre(p.reformat_raw)] : null,
    d.pred_problem ? h("div", {class: "warn"}, "prediction: " + d.pred_problem) : null,
    d.gold_problem ? h("div", {class: "warn"}, "gold: " + d.gold_problem) : null);
}

// ------------------------------------------------------------------------------------------------ compare

async function viewCompare(params) {
  setView("compare", "paired comparison");
  const d = await api("/api/view/board");
  const seen = new Map();
  for (const r of d.rows) seen.set(r.run + "|" + r.entry, r);
  const options = [...seen.values()];
  const a = params.get("a") || "", b = params.get("b") || "";
  const pick = (id, value) => h("select", {id}, h("option", {value: ""}, "choose"), options.map(r =>
    h("option", {value: r.run + "|" + r.entry, selected: value === r.run + "|" + r.entry ? "selected" : null}, `${r.model} on ${r.dataset} (${r.run_title})`)));
  const sa = pick("cmp-a", a), sb = pick("cmp-b", b);
  const go = h("button", {class: "primary", id: "cmp-go", onclick: () => {
    location.hash = "#/compare?" + new URLSearchParams({a: sa.value, b: sb.value}).toString(); }}, "Compare");
  const out = h("div", {id: "cmp-out"});
  show(h("h1", null, "Paired comparison"), h("p", {class: "muted small"},
    "A \u2212 B on the samples both predicted, with a paired bootstrap 95% CI and a randomization-test p-value (as `taskbench compare`)."),
    h("div", {class: "filters"}, h("label", null, "A", sa), h("label", null, "B", sb), go), out);
  if (!a || !b) return;
  const [ar, ae] = a.split("|"), [br, be] = b.split("|");
  const progress = h("p", {class: "muted", id: "cmp-status"}, "computing...");
  out.append(progress);
  const here = location.hash;
  let c;
  try {
    for (;;) {  // the server computes on a worker; it answers 202 with its progress until the result is ready
      c = await api("/api/view/compare?" + new URLSearchParams({a_run: ar, a_entry: ae, b_run: br, b_entry: be}).toString());
      if (!c || !("status" in c) || c.groups) break;
      progress.textContent = `computing: ${c.progress || c.status}` + (c.ahead ? ` (${c.ahead} comparison(s) ahead)` : "");
      document.body.dataset.ready = "1";
      await new Promise(res => setTimeout(res, 1000));
      if (location.hash !== here) return;  // the user went elsewhere
    }
  } catch (e) { out.replaceChildren(h("div", {class: "error"}, e.message)); return; }
  if (c.error) { out.replaceChildren(h("div", {class: "error"}, c.error)); return; }
  const legend = d.legend || {metrics: [], groups: []};
  const board = new Set(d.metrics.map(m => m.key).concat(["parse_failure_rate"]));
  const lower = new Set((legend.metrics || []).filter(m => m.lower_is_better).map(m => m.key));
  const line = r => h("tr", {"data-metric": r.metric}, h("td", {class: "metric"}, labelled(metricLabel(legend, r.metric), r.metric)),
    h("td", {class: "num"}, pct(r.a)), h("td", {class: "num"}, pct(r.b)),
    h("td", {class: "num"}, pct(r.diff), r.diff && lower.has(r.metric) ? h("span", {class: "key"}, "lower is better") : null),
    h("td", {class: "num"}, r.ci_low === null ? "-" : `[${pct(r.ci_low)}, ${pct(r.ci_high)}]`),
    h("td", {class: "num p"}, r.p_value === null ? "-" : Number(r.p_value).toFixed(3)));
  const heads = ["metric", "A", "B", "A \u2212 B", "95% CI of A \u2212 B", "p"];
  const groups = h("div", {class: "cmp-groups"}, Object.entries(c.groups).map(([g, gc]) => {
    return h("div", {class: "cmp-group card", "data-group": g},
      h("h3", null, `${groupLabel(legend, g)} (n = ${gc.n_samples}) `, h("span", {class: "key"}, g)),
      gc.n_samples < d.small_n ? h("div", {class: "smalln"}, `only ${gc.n_samples} samples: the CI is wide`) : null,
      h("div", {class: "scroll"}, table(heads, gc.results.filter(r => board.has(r.metric)).map(line), {class: "cmp-table"})),
      h("details", null, h("summary", {class: "small muted"}, "every metric"),
        h("div", {class: "scroll"}, table(heads, gc.results.filter(r => !board.has(r.metric)).map(line), {class: "cmp-table cmp-more"}))));
  }));
  out.replaceChildren(...[h("p", null, h("b", null, "A: "), c.a, h("br"), h("b", null, "B: "), c.b,
      h("br"), h("span", {class: "muted small"}, `${c.n_boot} bootstrap replicates, ${c.n_perm} permutations, seed ${c.seed}; values in %`)), groups,
    (c.warnings || []).map(w => h("div", {class: "warn small"}, w)), legendBlock(legend)].flat(Infinity).filter(Boolean));
}

// ------------------------------------------------------------------------------------------------ agents

function reasonsTable(reasons, unit) {  // the top reasons of a zero with their counts, as the terminal names them
  return table(["reason", unit], reasons.map(x => h("tr", null, h("td", null, x.reason), h("td", {class: "num"}, num(x.count)))),
    {class: "reasons"});
}

async function viewAgents(r) {
  const d = await api("/api/view/episodes/" + enc(r.id));
  const chosen = [];
  const openTwo = h("button", {id: "open-two", disabled: "disabled", onclick: () => {
    location.hash = `#/traj/${enc(r.id)}/${enc(chosen[0])}/${enc(chosen[1])}`; }}, "Side by side");
  const episodeRow = e => h("tr", {class: "episode-row", "data-id": e.id},
    h("td", null, h("input", {type: "checkbox", onchange: ev => {
      if (ev.target.checked) chosen.push(e.id); else chosen.splice(chosen.indexOf(e.id), 1);
      if (chosen.length > 2) chosen.shift();
      openTwo.disabled = chosen.length !== 2; }})),
    h("td", null, h("a", {href: `#/traj/${enc(r.id)}/${enc(e.id)}`}, e.agent ?? "?")), h("td", null, e.task ?? ""),
    h("td", null, e.success ? badge("success", "ok") : badge("fail", "bad")),
    h("td", {class: "num"}, pct(e.cpr_f1)), h("td", {class: "num"}, num(e.turns)), h("td", {class: "num"}, num(e.model_calls)),
    h("td", {class: "num"}, num((Number(e.prompt_tokens) || 0) + (Number(e.completion_tokens) || 0))), h("td", {class: "num"}, secs(e.wall_seconds)),
    h("td", {class: "small"}, e.reason || ""));
  const episodes = table(["", "agent", "task", "checker", "path F1 %", "turns", "model calls", "tokens", "time", "checker's reason"],
    d.episodes.map(episodeRow), {id: "episodes"});
  let next = d.offset + d.episodes.length;
  const shown = h("span", {class: "muted small", id: "episodes-shown"}, `${num(next)} of ${num(d.total)} episodes shown`);
  const more = h("button", {class: "more-episodes", onclick: async () => {  // the server sends a page at a time
    const page = await api(`/api/view/episodes/${enc(r.id)}?offset=${next}`);
    episodes.tBodies[0].append(...page.episodes.map(episodeRow));
    next += page.episodes.length;
    shown.textContent = `${num(next)} of ${num(page.total)} episodes shown`;
    if (next >= page.total || !page.episodes.length) more.remove();
  }}, "more episodes");
  const m = d.metrics || {};
  const agg = Object.entries(m).map(([a, v]) => h("tr", null, h("td", null, a), h("td", {class: "num"}, num(v.episodes)),
    h("td", {class: "num"}, pct(v.success_rate)), h("td", {class: "num"}, pct(v.correct_path_f1)),
    h("td", {class: "num"}, pct(v.correct_path_lcs)), h("td", {class: "num"}, num(v.tokens)),
    h("td", {class: "small"}, ((d.about || {})[a] || {}).description || "")));
  show(h("h1", null, r.title, " ", status(r.status), " ", h("span", {class: "muted small"}, "agents \u00b7 " + r.path)),
    r.parent ? h("p", null, "stage of ", h("a", {href: "#/run/" + enc(r.parent)}, r.parent)) : null,
    h("h2", null, "Agents"), table(["agent", "episodes", "success %", "path F1 %", "path LCS %", "tokens", "what it is"], agg),
    (d.failed || []).length ? [h("h2", null, "Why episodes failed"), h("div", {id: "why-failed"}, d.failed.map(f => h("div", {class: "card"},
      h("b", null, `${f.agent}: ${num(f.failed)} of ${num(f.episodes)} episodes failed`), reasonsTable(f.reasons, "episodes"))))] : null,
    h("h2", null, "Episodes"), h("p", {class: "muted small"}, "tick two episodes (e.g. two agents on one task) for ", openTwo),
    episodes, h("p", null, shown, " ", next < d.total ? more : null),
    d.problems.map(p => h("div", {class: "warn small"}, p)));
}

function firstLine(text, n) {
  const t = String(text ?? "").replace(/\s+/g, " ").trim();
  return t.length > n ? t.slice(0, n) + "\u2026" : t;
}

function reviewBody(ev) {
  // the review model's own words, and what the harness decided from them (a named problem is a revision)
  const said = ev.model_said;
  const decided = [badge(ev.verdict || "?", ev.verdict === "accept" ? "ok" : "warnb"), " on ", ev.target || "",
    ev.route ? [" \u2192 route to ", h("b", null, ev.route)] : null, ev.action && ev.action !== "none" ? [" \u00b7 action: ", ev.action] : null];
  const rows = [h("div", {class: "decided"}, h("span", {class: "who"}, "harness decided: "), decided)];
  if (said && said.verdict !== undefined) {
    rows.unshift(h("div", {class: "said"}, h("span", {class: "who"}, "review model wrote: "),
      badge(String(said.verdict), said.verdict === "accept" ? "ok" : "warnb"),
      said.problem !== undefined ? [" \u00b7 problem: ", String(said.problem)] : null,
      said.route !== undefined ? [" \u00b7 route: ", String(said.route)] : null));
    if (String(said.verdict) !== String(ev.verdict) || (said.route !== undefined && ev.route && String(said.route) !== String(ev.route)))
      rows.push(h("div", {class: "muted small override"}, said.verdict === "accept" && ev.verdict === "revise"
        ? "the model accepted but named a problem, and a named problem is a revision: the harness sent it back"
        : "the harness's decision differs from the model's words (the route follows the fault, not the reviewer alone)"));
  } else if (said && said.raw) rows.unshift(h("div", {class: "said"}, h("span", {class: "who"}, "review model wrote: "), pre(said.raw)));
  else if (ev.problem && ev.problem !== "none") rows.push(h("div", {class: "small"}, "problem: ", ev.problem));
  if (said && said.problem === undefined && ev.problem && ev.problem !== "none") rows.push(h("div", {class: "small"}, "problem: ", ev.problem));
  if (ev.feedback) rows.push(pre(ev.feedback));
  return rows;
}

function eventNode(ev) {
  // every event folds (a <details>); model calls and code runs start folded, their summary line says what came back
  const head = h("summary", {class: "head"}, h("b", null, ev.role || ev.kind), h("span", {class: "muted"}, ev.kind),
    h("span", {class: "muted small"}, `#${ev.index} \u00b7 t=${secs(ev.t)}`));
  const body = [];
  if (ev.kind === "model_call") {
    head.append(h("span", {class: "muted small"}, `${num(ev.prompt_tokens)} in / ${num(ev.completion_tokens)} out \u00b7 ${secs(ev.seconds)}`),
      h("span", {class: "peek small"}, firstLine(ev.error || ev.answer, 140)));
    body.push(h("details", null, h("summary", {class: "small muted"}, `last of ${ev.n_messages} messages`), pre(ev.prompt)), pre(ev.answer));
    if (ev.tool_calls.length) body.push(h("div", {class: "small"}, "tool calls: ", ev.tool_calls.map(c => h("code", null, c, " "))));
    if (ev.error) body.push(h("div", {class: "error small"}, ev.error));
  } else if (ev.kind === "code_run") {
    head.append(h("span", {class: "muted small"}, secs(ev.seconds)),
      h("span", {class: "peek small" + (ev.error ? " error" : "")}, ev.error ? "error: " + firstLine(ev.error, 120)
        : firstLine(ev.code, 70) + " \u2192 " + firstLine(ev.stdout || ev.result, 60)));
    body.push(h("div", {class: "small muted"}, "code"), pre(ev.code));
    if (ev.stdout) body.push(h("div", {class: "small muted"}, "sandbox stdout"), pre(ev.stdout));
    if (ev.error) body.push(h("div", {class: "small error"}, "error"), pre(ev.error));
    else body.push(h("div", {class: "small muted"}, "result"), pre(ev.result));
    if (ev.tool_calls.length) body.push(h("div", {class: "small"}, "tool calls: ", ev.tool_calls.join(", ")));
  } else if (ev.kind === "review") {
    const said = ev.model_said && ev.model_said.verdict !== undefined ? `model: ${ev.model_said.verdict} \u00b7 ` : "";
    head.append(h("span", {class: "peek small"}, `${said}decided: ${ev.verdict || "?"}${ev.route ? " \u2192 " + ev.route : ""}`));
    body.push(...reviewBody(ev));
  } else body.push(pre(ev.detail));
  const folded = ev.kind === "model_call" || ev.kind === "code_run";  // long bodies; reviews and the rest stay open
  return h("details", {class: "ev " + (ev.role || ""), "data-kind": ev.kind, open: folded ? null : "open"}, head, body);
}

function foldButtons(root) {
  const set = (kind, open) => { for (const d of root.querySelectorAll(`details.ev${kind ? `[data-kind='${kind}']` : ""}`)) d.open = open; };
  return h("div", {class: "fold"},
    h("button", {class: "fold-calls", onclick: () => set("model_call", false)}, "fold model calls"),
    h("button", {class: "unfold-all", onclick: () => set("", true)}, "unfold all"),
    h("button", {class: "fold-all", onclick: () => set("", false)}, "fold all"));
}

async function trajColumn(rid, id) {
  const t = await api(`/api/view/trajectory/${enc(rid)}?id=${enc(id)}`);
  const e = t.episode, end = t.end || {}, hd = t.header || {};
  const outcome = end.outcome || {};
  return h("div", {class: "traj", "data-id": id},
    h("h2", null, e.agent, " \u00b7 ", e.task, " ", e.success ? badge("success", "ok") : badge("fail", "bad")),
    h("div", {class: "card"}, h("b", null, "Task: "), hd.task || "", kv({models: hd.models, seed: hd.seed, stop: e.stop,
      "tokens": `${num(e.prompt_tokens)} in / ${num(e.completion_tokens)} out`, time: secs(e.wall_seconds)})),
    h("div", {class: "card path"}, h("b", null, "Tool calls vs gold path: "),
      t.path.length ? t.path.map(p => badge(p.call, p.on_gold ? "ok" : "bad")) : h("span", {class: "muted"}, "no tool call"),
      t.gold_missed.length ? [h("br"), h("span", {class: "muted small"}, "gold, never called: "), t.gold_missed.map(g => badge(g, "warnb"))] : null,
      h("br"), h("span", {class: "muted small"}, "gold path: " + (hd.gold_path || e.gold_path || []).join(" \u2192 "))),
    h("div", {class: "card", id: "verdict-" + id.replace(/[^A-Za-z0-9]/g, "_")}, h("b", null, "Checker: "),
      outcome.success === true || outcome.success === "true" ? badge("success", "ok") : badge("fail", "bad"), " ",
      outcome.reason || e.reason || "", end.answer ? [h("div", {class: "small muted"}, "answer"), pre(end.answer)] : null,
      end.error ? h("div", {class: "muted small"}, end.error) : null),
    h("h3", null, `Timeline (${t.n_events} events${t.n_events > t.events.length ? ", first " + t.events.length + " shown" : ""})`),
    (() => {  // a page of events at a time (the server sends at most 300, and at most about 2 MB)
      const line = h("div", {class: "timeline"}, t.events.map(eventNode));
      let next = t.offset + t.events.length;
      const more = h("button", {class: "more-events", onclick: async () => {
        const page = await api(`/api/view/trajectory/${enc(rid)}?id=${enc(id)}&offset=${next}`);
        line.append(...page.events.map(eventNode));
        next += page.events.length;
        if (next >= page.n_events || !page.events.length) more.remove();
      }}, "more events");
      return [foldButtons(line), line, next < t.n_events ? more : null];
    })(),
    (t.skipped || []).length ? h("details", null, h("summary", {class: "small warn"}, `${t.skipped.length} record(s) not shown`),
      t.skipped.map(x => h("div", {class: "small warn"}, x))) : null,
    t.problem ? h("div", {class: "error"}, t.problem) : null);
}

async function viewTrajectory(rid, ids) {
  setView("trajectory", rid + " \u00b7 " + ids.join(" | "));
  const cols = await Promise.all(ids.map(id => trajColumn(rid, id)));
  show(h("p", {class: "muted small"}, h("a", {href: "#/run/" + enc(rid)}, "\u2190 episodes of " + rid)),
    cols.length > 1 ? h("div", {class: "two"}, cols) : cols[0]);
}

// ------------------------------------------------------------------------------------------------ generation

async function viewGeneration(r) {
  const d = await api("/api/view/generation/" + enc(r.id));
  const methods = Object.entries(d.per_method).flatMap(([m, v]) => Object.entries(v.critics).map(([c, x]) => h("tr", null,
    h("td", null, m), h("td", null, c), h("td", {class: "num"}, num(v.attempts)), h("td", {class: "num"}, num(x.passed)),
    h("td", {class: "num"}, num(x.failed)), h("td", {class: "num"}, pct(x.rate)))));
  const modes = Object.entries(d.by_mode || {}).map(([m, v]) => h("tr", null, h("td", null, m), h("td", {class: "num"}, num(v.planned)),
    h("td", {class: "num"}, pct((v.rule_critic || {}).rate)), h("td", {class: "num"}, pct((v.llm_critic || {}).rate)),
    h("td", {class: "num"}, pct((v.both_critics || {}).rate)), h("td", {class: "num"}, num(v.kept))));
  const rejected = d.rejected.map(x => h("div", {class: "card rejected", "data-id": x.id}, h("b", null, x.id), " ", badge(x.type || "?"),
    " ", x.tools.join(" \u2192 "), h("div", null, x.request || h("span", {class: "muted"}, "(empty request)")),
    Object.entries(x.critics).map(([c, v]) => h("div", {class: "small"}, h("b", null, c + ": "),
      v.passed === true ? badge("passed", "ok") : v.passed === false ? badge("failed", "bad") : badge("not run"),
      v.reasons.map(reason => h("div", {class: "muted"}, reason))))));
  const dups = d.duplicates.map(x => h("tr", null, h("td", null, x.id), h("td", null, x.request), h("td", null, x.of), h("td", null, x.of_request || "")));
  const review = h("button", {class: "primary", id: "open-review", onclick: async () => {
    try { await api("/api/view/review/" + enc(r.id), {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"}); location.href = "/"; }
    catch (e) { review.after(h("span", {class: "error"}, " " + e.message)); } }}, "Review these samples");
  show(h("h1", null, r.title, " ", status(r.status), " ", h("span", {class: "muted small"}, "generation \u00b7 " + r.path)),
    r.parent ? h("p", null, "stage of ", h("a", {href: "#/run/" + enc(r.parent)}, r.parent)) : null,
    h("p", null, review, " ", h("span", {class: "muted small"}, "(opens the review page of this server on this dataset; or run " + r.review_command + ")")),
    h("p", null, `${num(d.counts.kept)} kept, ${num(d.counts.rejected)} rejected, ${num(d.counts.duplicates)} near-duplicates`),
    (d.notes || []).map(n => h("div", {class: "warn small"}, n)),
    d.not_kept ? h("div", {class: "card", id: "why-not-kept"},
      h("b", null, `Not kept: ${num(d.not_kept.not_kept)} of ${num(d.not_kept.answered)}; by critic`),
      " ", h("span", {class: "muted small"}, "(each sample's reasons: Rejected samples below)"), reasonsTable(d.not_kept.reasons, "samples"),
      d.not_kept.keep_none ? h("div", {class: "small"}, "To keep them anyway (no model call): ", h("code", null, d.not_kept.keep_none)) : null) : null,
    h("h2", null, "Critic pass rates per method"), table(["method", "critic", "attempts", "passed", "failed", "pass rate %"], methods, {id: "methods"}),
    modes.length ? [h("h2", null, "Per structure"), table(["structure", "planned", "rule %", "LLM %", "both %", "kept"], modes)] : null,
    h("h2", null, `Rejected samples (${num(d.counts.rejected)})`), rejected.length ? rejected : h("p", {class: "muted"}, "none"),
    d.counts.rejected > d.rejected.length ? h("p", {class: "muted"}, `first ${d.rejected.length} shown`) : null,
    h("h2", null, `Near-duplicates (${num(d.counts.duplicates)})`), dups.length ? table(["id", "request", "duplicate of", "its request"], dups) : h("p", {class: "muted"}, "none"));
}

// ------------------------------------------------------------------------------------------------ router

async function route() {
  document.body.dataset.ready = "0";
  const {parts, params} = parseHash();
  try {
    if (!parts.length) await viewRuns();
    else if (parts[0] === "run") await viewRun(parts[1]);
    else if (parts[0] === "board") await viewBoard(params);
    else if (parts[0] === "samples") await viewSamples(parts[1], parts[2], params);
    else if (parts[0] === "sample") await viewSample(parts[1], parts[2], parts[3]);
    else if (parts[0] === "compare") await viewCompare(params);
    else if (parts[0] === "traj") await viewTrajectory(parts[1], parts.slice(2, 4));
    else await viewRuns();
  } catch (e) {
    show(h("div", {class: "card error", id: "error"}, e.message));
  }
  window.scrollTo(0, 0);
}

document.getElementById("btn-refresh").addEventListener("click", async () => {
  await api("/api/view/refresh", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"});
  route();
});
window.addEventListener("hashchange", route);
route();
