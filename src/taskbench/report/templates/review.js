(function(){
'use strict';
var BOOT = JSON.parse(document.getElementById('boot').textContent);
var $ = function(id){ return document.getElementById(id); };
var S = {index: null, items: [], byId: {}, tools: {}, toolNames: [], dependency: 'resource', shown: [], cur: null,
         detail: null, reasons: {}, editing: false, edit: null, kindsTouched: false, previewSeq: 0, lastPreview: null};
var REASON_KEYS = [];
var SHORT = {incomplete_instruction: 'incomplete', impractical_instruction: 'impractical', parameter_type: 'param type',
             parameter_value: 'param value', incorrect_dependency: 'dependency'};

function el(tag, attrs, kids){
  var e = document.createElement(tag);
  if(attrs){ for(var k in attrs){ if(attrs[k] === null || attrs[k] === undefined) continue; if(k === 'text') e.textContent = attrs[k]; else if(k === 'cls') e.className = attrs[k];
    else if(k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]); else e.setAttribute(k, attrs[k]); } }
  (kids || []).forEach(function(c){ if(c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
  return e;
}
function clear(e){ while(e.firstChild) e.removeChild(e.firstChild); return e; }
function api(path, body){
  var opt = body === undefined ? {} : {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)};
  opt.credentials = 'same-origin';
  return fetch(path, opt).then(function(r){
    return r.json().catch(function(){ return {}; }).then(function(doc){
      if(!r.ok) throw new Error(doc.detail || ('HTTP ' + r.status));
      return doc;
    });
  });
}
var toastTimer = null;
function toast(text, err){
  var t = $('toast'); t.textContent = text; t.className = 'show' + (err ? ' err' : '');
  clearTimeout(toastTimer); toastTimer = setTimeout(function(){ t.className = ''; }, err ? 4200 : 1800);
}
function me(){ return ($('reviewer').value || '').trim(); }
function mine(it){ return it.dec[me()]; }
function fmtArg(a){
  if(a !== null && typeof a === 'object' && !Array.isArray(a) && 'name' in a){
    var v = typeof a.value === 'string' ? a.value : JSON.stringify(a.value);
    return el('span', {cls: 'arg'}, [el('span', {cls: 'n', text: a.name + '='}), v]);
  }
  var text = typeof a === 'string' ? a : JSON.stringify(a);
  return el('span', {cls: 'arg' + (/<node-\d+>/.test(text) ? ' ref' : ''), text: text});
}

// ----------------------------------------------------------------------------------------------- index

function loadIndex(){
  return api('/api/index').then(function(doc){
    S.index = doc; S.items = doc.items; S.byId = {};
    S.items.forEach(function(it){ S.byId[it.id] = it; });
    $('dsname').textContent = doc.dataset.name + ' \u00b7 ' + doc.items.length + ' samples \u00b7 ' + doc.dataset.dependency;
    REASON_KEYS = Object.keys(doc.reasons);
    var rs = clear($('reasons'));
    REASON_KEYS.forEach(function(k, i){
      rs.appendChild(el('button', {type: 'button', 'data-reason': k, title: doc.reasons[k] + ' (key ' + (i + 1) + ')',
        text: (i + 1) + ' ' + (SHORT[k] || k.replace(/_/g, ' ')), onclick: function(){ toggleReason(k); }}));
    });
    var sizes = {}; S.items.forEach(function(it){ sizes[it.n] = true; });
    var fs = $('f-size'); Object.keys(sizes).map(Number).sort(function(a, b){ return a - b; }).forEach(function(n){
      fs.appendChild(el('option', {value: String(n), text: n + (n === 1 ? ' tool' : ' tools')}));
    });
    var probs = (doc.problems || []).concat((doc.log_problems || []).map(function(p){ return 'review log line ' + p.line + ': ' + p.message; }));
    if(probs.length){
      var box = clear($('problems')); box.hidden = false;
      var ul = el('ul'); probs.forEach(function(p){ ul.appendChild(el('li', {text: p})); });
      box.appendChild(el('details', null, [el('summary', {text: (doc.n_problems + (doc.log_problems || []).length) +
        ' records could not be read and are not offered for review (details)'}), ul]));
    }
  });
}
function loadLibrary(){
  return api('/api/library').then(function(doc){
    S.dependency = doc.dependency; S.tools = {}; S.toolNames = [];
    doc.tools.forEach(function(t){ S.tools[t.id] = t; S.toolNames.push(t.id); });
    var dl = el('datalist', {id: 'tool-names'});
    S.toolNames.forEach(function(n){ dl.appendChild(el('option', {value: n})); });
    document.body.appendChild(dl);
  });
}

function passes(it){
  var v = $('f-verdict').value, st = $('f-status').value, mode = $('f-mode').value, size = $('f-size').value;
  if(mode !== 'all' && it.type !== mode) return false;
  if(size !== 'all' && String(it.n) !== size) return false;
  if(v === 'passed' && !(it.rule !== false && it.llm !== false)) return false;
  if(v === 'rule-failed' && it.rule !== false) return false;
  if(v === 'llm-failed' && it.llm !== false) return false;
  if(v === 'issues' && !it.issues) return false;
  if(v === 'sampled' && !it.sampled) return false;
  if(v === 'dup' && !it.dup) return false;
  if(v === 'rejected' && it.origin !== 'rejected') return false;
  var m = mine(it), others = Object.keys(it.dec).filter(function(r){ return r !== me(); });
  if(st === 'todo' && m) return false;
  if((st === 'correct' || st === 'discard' || st === 'fix') && m !== st) return false;
  if(st === 'others' && (m || !others.length)) return false;
  if(st === 'conflict'){
    var seen = {}; Object.keys(it.dec).forEach(function(r){ seen[it.dec[r]] = true; });
    if(Object.keys(seen).length < 2) return false;
  }
  return true;
}

function applyFilters(keep){
  S.shown = S.items.filter(passes);
  renderList();
  $('count').textContent = S.shown.length + ' of ' + S.items.length + ' shown';
  if(!S.shown.length){ if(!S.editing){ $('view').hidden = true; } return; }
  if(!keep || !S.cur || S.shown.indexOf(S.byId[S.cur]) < 0) open(S.shown[0].id);
  else markCurrent();
}

function renderList(){
  var ol = clear($('list'));
  S.shown.forEach(function(it){
    var m = mine(it);
    var warn = (it.rule === false || it.llm === false) ? el('span', {cls: 'warn', title: 'a critic failed', text: '!'}) : null;
    ol.appendChild(el('li', {'data-id': it.id, onclick: function(){ if(!S.editing) open(it.id); }}, [
      el('span', {cls: 'dot' + (m ? ' ' + m : ''), title: m ? 'you: ' + m : 'not reviewed by you'}),
      el('span', {text: it.id}), warn,
      el('span', {cls: 'meta', text: it.type + ' \u00b7 ' + it.n})
    ]));
  });
  markCurrent();
}
function markCurrent(){
  var lis = $('list').children;
  for(var i = 0; i < lis.length; i++){
    var on = lis[i].getAttribute('data-id') === S.cur;
    lis[i].classList.toggle('cur', on);
    if(on && lis[i].scrollIntoView) lis[i].scrollIntoView({block: 'nearest'});
  }
  var pos = S.shown.indexOf(S.byId[S.cur]);
  $('position').textContent = pos >= 0 ? (pos + 1) + ' / ' + S.shown.length + ' in the filter' : 'not in the filter';
}

function renderProgress(){
  var total = S.items.length, c = {correct: 0, fix: 0, discard: 0};
  S.items.forEach(function(it){ var m = mine(it); if(m) c[m]++; });
  var done = c.correct + c.fix + c.discard;
  ['correct', 'fix', 'discard'].forEach(function(k){
    document.querySelector('#progress .seg.' + k).style.width = (total ? 100 * c[k] / total : 0) + '%';
  });
  $('progress-text').textContent = done + ' / ' + total + ' reviewed by ' + (me() || '?') +
    ' (' + (total ? Math.round(100 * done / total) : 0) + '%) \u00b7 ' + c.correct + ' correct, ' + c.fix + ' fixed, ' + c.discard + ' discarded';
  $('progress').setAttribute('data-done', String(done));
}

// ----------------------------------------------------------------------------------------------- one sample

function open(id){
  S.cur = id; markCurrent();
  try { history.replaceState(null, '', '#' + encodeURIComponent(id)); } catch(e) {}
  return api('/api/sample/' + encodeURIComponent(id) + '?reviewer=' + encodeURIComponent(me())).then(function(d){
    if(S.cur !== id) return;
    S.detail = d; S.reasons = {}; S.showOriginal = false;
    var m = d.decisions[me()];
    if(m && !m.stale) m.reasons.forEach(function(r){ S.reasons[r] = true; });
    $('note').value = m && !m.stale ? (m.note || '') : '';
    renderReasons(); renderSample(d);
    document.body.setAttribute('data-sample', id);
    document.body.setAttribute('data-ready', '1');
  }).catch(function(e){ toast(e.message, true); });
}

function badge(text, cls){ return el('span', {cls: 'badge ' + (cls || ''), text: text}); }
function verdictBadge(passed){ return passed === true ? badge('passed', 'pass') : passed === false ? badge('failed', 'fail') : badge('not run', 'unk'); }

function shownView(d){ return d.fixed && !S.showOriginal ? d.fixed : d; }
function renderSample(d){
  var v = shownView(d), r = v.record;
  $('view').hidden = false; $('editor').hidden = true;
  $('sid').textContent = d.id;
  var b = clear($('badges'));
  b.appendChild(badge(r.type, r.type)); b.appendChild(badge(r.n_tools + (r.n_tools === 1 ? ' tool' : ' tools')));
  if(r.method) b.appendChild(badge(r.method));
  if(d.origin === 'rejected') b.appendChild(badge('rejected by the critics', 'fail'));
  var f = clear($('flags'));
  if(d.duplicate){
    f.appendChild(el('div', {cls: 'flag dup'}, [el('b', {text: 'Near-duplicate'}), ' of ',
      el('a', {text: d.duplicate.id, onclick: function(){ open(d.duplicate.id); }}),
      d.duplicate.user_request ? ': \u201c' + d.duplicate.user_request + '\u201d' : ' (not in this dataset)']));
  }
  var mineD = d.decisions[me()];
  if(mineD) f.appendChild(el('div', {cls: 'flag ' + (mineD.stale ? 'stale' : 'mine')}, [
    mineD.stale ? 'Your decision was made on an earlier version of this sample and no longer counts: ' : 'Your decision: ',
    el('b', {text: mineD.outcome + (mineD.fixes.length ? ' (' + mineD.fixes.join(', ') + ')' : '')}),
    ' \u00b7 ' + mineD.time.replace('T', ' ').slice(0, 16) + ' UTC. Deciding again replaces it. ',
    d.fixed ? el('span', null, [S.showOriginal ? 'Showing the original. ' : 'Showing your fixed version. ',
      el('a', {id: 'toggle-fixed', text: S.showOriginal ? 'show your fix' : 'show the original',
        onclick: function(){ S.showOriginal = !S.showOriginal; renderSample(d); }})]) : null]));
  $('request').textContent = r.user_request || '(no request)';
  var st = clear($('steps'));
  (r.task_steps || []).forEach(function(s){ st.appendChild(el('li', {text: s})); });
  var tb = clear(document.querySelector('#nodes tbody'));
  (r.task_nodes || []).forEach(function(n, i){
    var args = el('td'); (n.arguments || []).forEach(function(a){ args.appendChild(fmtArg(a)); });
    tb.appendChild(el('tr', null, [el('td', {text: String(i)}), el('td', {text: n.task}), args]));
  });
  var cr = clear($('critics')), names = Object.keys(d.critics);
  if(!names.length) cr.appendChild(el('div', {cls: 'critic'}, [el('span', {cls: 'k', text: 'critics'}), 'no verdicts recorded']));
  names.forEach(function(k){
    var v = d.critics[k], box = el('div', {cls: 'critic'}, [el('b', {text: k + ' critic '}), verdictBadge(v.passed),
      v.model ? el('span', {cls: 'model', text: v.model}) : null]);
    if(v.reasons && v.reasons.length){ var ul = el('ul', {cls: 'reasons'}); v.reasons.forEach(function(x){ ul.appendChild(el('li', {text: x})); }); box.appendChild(ul); }
    cr.appendChild(box);
  });
  renderIssues($('issues'), v.issues, 'no issues');
  renderIssues($('sampled-issues'), v.sampled_issues, r.sampled_nodes ? 'same tools and links as sampled' : 'no sampled subgraph recorded');
  setSvg($('g-main'), v.svg, 'no tools');
  setSvg($('g-sampled'), v.sampled_svg, 'no sampled subgraph recorded');
  document.body.setAttribute('data-showing', v === d ? 'original' : 'fixed');
  var dc = clear($('decisions'));
  Object.keys(d.decisions).forEach(function(rv){
    var x = d.decisions[rv];
    dc.appendChild(el('span', {cls: 'chip ' + x.outcome + (x.stale ? ' stale' : ''), title: x.time + (x.note ? ' \u2014 ' + x.note : ''),
      text: rv + ': ' + x.outcome + (x.fixes.length ? ' (' + x.fixes.join('+') + ')' : '')}));
  });
  if(!Object.keys(d.decisions).length) dc.appendChild(el('span', {cls: 'chip', text: 'no decisions yet'}));
}
function renderIssues(ul, list, okText){
  clear(ul);
  if(!list.length){ ul.appendChild(el('li', {cls: 'ok', text: '\u2713 ' + okText})); return; }
  list.forEach(function(i){
    var hint = null;
    if(i.hint){
      hint = el('span', {cls: 'hint-dym'}, [' \u2014 did you mean ', i.code === 'unknown_tool' && S.editing ?
        el('a', {text: i.hint, 'data-fix-tool': String(i.node), title: 'use this tool', onclick: function(){
          var n = S.edit && S.edit.task_nodes[i.node]; if(!n) return;
          n.task = i.hint; renderEditor(); changed(); }}) : el('b', {text: i.hint}), '?']);
    }
    ul.appendChild(el('li', null, [el('code', {text: i.code}), ' ' + i.message, hint]));
  });
}
function setSvg(box, svg, none){
  clear(box);
  if(svg) box.innerHTML = svg;  // server-rendered, every text escaped, no script
  else box.appendChild(el('span', {cls: 'none', text: none}));
}

// ----------------------------------------------------------------------------------------------- decisions

function toggleReason(k){ if(S.reasons[k]) delete S.reasons[k]; else S.reasons[k] = true; renderReasons(); }
function renderReasons(){
  var bs = $('reasons').querySelectorAll('button');
  for(var i = 0; i < bs.length; i++) bs[i].classList.toggle('on', !!S.reasons[bs[i].getAttribute('data-reason')]);
}
function decide(outcome, extra){
  if(!S.detail) return Promise.resolve();
  if(!me()){ toast('Enter your reviewer name first', true); $('reviewer').focus(); return Promise.resolve(); }
  var body = {id: S.detail.id, reviewer: me(), outcome: outcome, base: S.detail.base, note: $('note').value,
              reasons: outcome === 'correct' ? [] : Object.keys(S.reasons)};
  if(extra){ for(var k in extra) body[k] = extra[k]; }
  return api('/api/decide', body).then(function(doc){
    S.byId[doc.entry.id].dec = doc.entry.dec; S.byId[doc.entry.id].stale = doc.entry.stale;
    toast((outcome === 'fix' ? 'Fixed' : outcome === 'correct' ? 'Correct' : 'Discarded') + ' \u00b7 ' + doc.entry.id);
    renderProgress(); S.shown = S.items.filter(passes); renderList();
    $('count').textContent = S.shown.length + ' of ' + S.items.length + ' shown';
    closeEditor(true);
    advance(doc.entry.id);
    document.body.setAttribute('data-decisions', String((+document.body.getAttribute('data-decisions') || 0) + 1));
  }).catch(function(e){ toast(e.message, true); });
}
function advance(fromId){
  // the next sample in the filter (after the one just decided) that I have not reviewed, else the next one
  var all = S.items.filter(function(it){ return passes(it) || it.id === fromId; });
  var at = all.indexOf(S.byId[fromId]);
  for(var i = 1; i <= all.length; i++){
    var it = all[(at + i) % all.length];
    if(it && !mine(it) && passes(it)) return open(it.id);
  }
  if(S.shown.length){ var j = Math.min(at, S.shown.length - 1); return open(S.shown[Math.max(j, 0)].id); }
  open(fromId);
}
function step(delta){
  if(!S.shown.length) return;
  var pos = S.shown.indexOf(S.byId[S.cur]);
  pos = pos < 0 ? 0 : Math.max(0, Math.min(S.shown.length - 1, pos + delta));
  open(S.shown[pos].id);
}
function nextTodo(){
  var pos = S.shown.indexOf(S.byId[S.cur]);
  for(var i = 1; i <= S.shown.length; i++){
    var it = S.shown[(pos + i + S.shown.length) % S.shown.length];
    if(!mine(it)) return open(it.id);
  }
  toast('Everything in this filter has your decision');
}

// ----------------------------------------------------------------------------------------------- the editor

function clone(x){ return JSON.parse(JSON.stringify(x)); }
function openEditor(){
  if(!S.detail) return;
  var r = shownView(S.detail).record;
  S.edit = {user_request: r.user_request || '', task_steps: clone(r.task_steps || []), task_nodes: clone(r.task_nodes || []),
            task_links: clone(r.task_links || []), type: 'auto', links_from_refs: S.dependency === 'resource'};
  S.editing = true; S.kindsTouched = false; S.lastPreview = null;
  $('view').hidden = true; $('editor').hidden = false;
  $('e-id').textContent = S.detail.id;
  $('e-request').value = S.edit.user_request;
  $('e-refs').checked = S.edit.links_from_refs;
  $('e-type').value = 'auto';
  var boxes = $('e-kinds').querySelectorAll('input');
  for(var i = 0; i < boxes.length; i++) boxes[i].checked = false;
  renderEditor(); preview();
  $('e-request').focus();
  document.body.setAttribute('data-editing', '1');
}
function closeEditor(saved){
  if(!S.editing) return;
  S.editing = false; S.edit = null;
  $('editor').hidden = true; $('view').hidden = false;
  document.body.setAttribute('data-editing', '0');
  if(!saved && document.activeElement) document.activeElement.blur();
}
function argText(a){ return typeof a === 'string' ? a : JSON.stringify(a); }
function parseLoose(text, wasString){
  if(wasString) return text;
  try { return JSON.parse(text); } catch(e) { return text; }
}
function changed(){ preview(); }
function renderEditor(){
  var steps = clear($('e-steps'));
  S.edit.task_steps.forEach(function(s, i){
    steps.appendChild(el('div', {cls: 'row'}, [el('span', {cls: 'idx', text: String(i + 1)}),
      el('input', {cls: 'grow', value: s, 'data-step': String(i), oninput: function(ev){ S.edit.task_steps[i] = ev.target.value; changed(); }}),
      el('button', {type: 'button', title: 'remove this step', text: '\u2715', onclick: function(){ S.edit.task_steps.splice(i, 1); renderEditor(); changed(); }})]));
  });
  var nodes = clear($('e-nodes'));
  S.edit.task_nodes.forEach(function(n, i){ nodes.appendChild(nodeEditor(n, i)); });
  renderLinks();
  markBadNodes();
}
function toolSig(name){
  var t = S.tools[name];
  if(!t) return name ? 'not a tool of the library' : 'choose a tool';
  if(t.params) return 'parameters: ' + (t.params.map(function(p){ return p.name + (p.required ? '' : '?') + ': ' + p.type; }).join(', ') || 'none');
  return 'inputs: ' + ((t.inputs || []).join(', ') || 'none') + ' \u2192 outputs: ' + ((t.outputs || []).join(', ') || 'none');
}
function nodeEditor(n, i){
  var box = el('div', {cls: 'node-ed', 'data-node': String(i)});
  var sig = el('div', {cls: 'sig', text: toolSig(n.task)});
  var tool = el('input', {cls: 'tool', list: 'tool-names', value: n.task, 'data-tool': String(i), spellcheck: 'false',
    oninput: function(ev){ n.task = ev.target.value; sig.textContent = toolSig(n.task); renderLinks(); changed(); }});
  box.appendChild(el('div', {cls: 'row'}, [el('span', {cls: 'idx', text: '#' + i}), tool,
    el('button', {type: 'button', title: 'move up', text: '\u2191', onclick: function(){ move(i, -1); }}),
    el('button', {type: 'button', title: 'move down', text: '\u2193', onclick: function(){ move(i, 1); }}),
    el('button', {type: 'button', title: 'remove this tool', text: '\u2715', onclick: function(){ removeNode(i); }})]));
  box.appendChild(sig);
  var args = el('div', {cls: 'args'});
  (n.arguments || []).forEach(function(a, j){ args.appendChild(argEditor(n, a, j)); });
  args.appendChild(el('button', {type: 'button', cls: 'small', text: '+ argument', onclick: function(){
    var t = S.tools[n.task];
    n.arguments.push(t && t.params ? {name: '', value: ''} : ''); renderEditor(); changed();
  }}));
  box.appendChild(args);
  return box;
}
function argEditor(n, a, j){
  var remove = el('button', {type: 'button', title: 'remove this argument', text: '\u2715', onclick: function(){ n.arguments.splice(j, 1); renderEditor(); changed(); }});
  if(a !== null && typeof a === 'object' && !Array.isArray(a) && 'name' in a){
    var wasString = typeof a.value === 'string';
    var t = S.tools[n.task], listId = 'params-' + Math.random().toString(36).slice(2);
    var dl = el('datalist', {id: listId});
    ((t && t.params) || []).forEach(function(p){ dl.appendChild(el('option', {value: p.name})); });
    return el('div', {cls: 'row'}, [dl,
      el('input', {value: a.name, list: listId, size: '14', placeholder: 'parameter', 'data-arg-name': j,
        oninput: function(ev){ a.name = ev.target.value; changed(); }}),
      el('input', {cls: 'grow', value: argText(a.value), placeholder: 'value', 'data-arg-value': j,
        oninput: function(ev){ a.value = parseLoose(ev.target.value, wasString); changed(); }}), remove]);
  }
  var wasStr = typeof a === 'string';
  return el('div', {cls: 'row'}, [el('input', {cls: 'grow', value: argText(a), placeholder: 'text, file name or <node-j>', 'data-arg': j,
    oninput: function(ev){ n.arguments[j] = parseLoose(ev.target.value, wasStr); changed(); }}), remove]);
}
function move(i, d){
  var j = i + d, ns = S.edit.task_nodes;
  if(j < 0 || j >= ns.length) return;
  var x = ns[i]; ns[i] = ns[j]; ns[j] = x;
  renderEditor(); changed();
}
function removeNode(i){
  var name = S.edit.task_nodes[i].task;
  S.edit.task_nodes.splice(i, 1);
  S.edit.task_links = S.edit.task_links.filter(function(l){ return l.source !== name && l.target !== name; });
  renderEditor(); changed();
}
function renderLinks(){
  var box = clear($('e-links')), names = S.edit.task_nodes.map(function(n){ return n.task; });
  var derived = $('e-refs').checked;
  $('e-add-link').disabled = derived;
  var links = derived && S.lastPreview && S.lastPreview.record ? S.lastPreview.record.task_links : S.edit.task_links;
  links.forEach(function(l, i){
    function sel(value, key){
      var s = el('select', {disabled: derived ? 'disabled' : null, 'data-link': i + ':' + key,
        onchange: function(ev){ S.edit.task_links[i][key] = ev.target.value; changed(); }});
      var opts = names.indexOf(value) < 0 ? names.concat([value]) : names;
      opts.forEach(function(nm){ var o = el('option', {value: nm, text: nm}); if(nm === value) o.selected = true; s.appendChild(o); });
      return s;
    }
    box.appendChild(el('div', {cls: 'row'}, [sel(l.source, 'source'), el('span', {text: '\u2192'}), sel(l.target, 'target'),
      derived ? null : el('button', {type: 'button', title: 'remove this link', text: '\u2715', onclick: function(){ S.edit.task_links.splice(i, 1); renderLinks(); changed(); }})]));
  });
  if(!links.length) box.appendChild(el('div', {cls: 'sig', text: 'no links'}));
}
function markBadNodes(){
  var bad = {};
  ((S.lastPreview && S.lastPreview.issues) || []).forEach(function(i){ if(i.node !== null && i.node !== undefined) bad[i.node] = true; });
  var eds = $('e-nodes').querySelectorAll('.node-ed');
  for(var i = 0; i < eds.length; i++) eds[i].classList.toggle('bad', !!bad[i]);
}
var previewTimer = null;
function preview(){
  clearTimeout(previewTimer);
  $('e-status').textContent = 'checking\u2026'; $('e-status').className = '';
  document.body.setAttribute('data-preview', 'pending');
  previewTimer = setTimeout(runPreview, 180);
}
function runPreview(){
  var seq = ++S.previewSeq, edit = clone(S.edit);
  edit.type = $('e-type').value; edit.links_from_refs = $('e-refs').checked;
  api('/api/preview', {id: S.detail.id, edit: edit}).then(function(p){
    if(seq !== S.previewSeq || !S.editing) return;
    S.lastPreview = p;
    var status = $('e-status');
    if(p.error){
      status.textContent = 'not a valid sample'; status.className = 'err';
      clear($('e-issues')).appendChild(el('li', null, [el('code', {text: 'invalid'}), ' ' + p.error]));
      document.body.setAttribute('data-preview', 'error');
      return;
    }
    var n = p.issues.length;
    status.textContent = n ? n + (n === 1 ? ' issue' : ' issues') : 'clean'; status.className = n ? 'bad' : 'ok';
    renderIssues($('e-issues'), p.issues, 'no issues');
    renderIssues($('e-sampled'), p.sampled_issues, p.record.sampled_nodes ? 'same tools and links as sampled' : 'no sampled subgraph recorded');
    setSvg($('e-g-main'), p.svg, 'no tools');
    setSvg($('e-g-sampled'), p.sampled_svg, 'no sampled subgraph recorded');
    $('e-diff').textContent = p.diff.length ? p.diff.map(function(op){ return JSON.stringify(op); }).join('\n') : '(no change yet)';
    if(document.activeElement !== $('e-json')) $('e-json').value = JSON.stringify(editable(p.record), null, 2);
    if(!S.kindsTouched){
      var boxes = $('e-kinds').querySelectorAll('input');
      for(var i = 0; i < boxes.length; i++) boxes[i].checked = p.suggested.indexOf(boxes[i].value) >= 0;
    }
    if($('e-refs').checked) renderLinks();
    markBadNodes();
    document.body.setAttribute('data-preview', n ? 'issues' : 'clean');
  }).catch(function(e){ if(seq === S.previewSeq){ $('e-status').textContent = e.message; $('e-status').className = 'err'; } });
}
function editable(r){
  return {user_request: r.user_request, task_steps: r.task_steps, task_nodes: r.task_nodes, task_links: r.task_links, type: r.type};
}
function applyJson(){
  var doc;
  try { doc = JSON.parse($('e-json').value); } catch(e) { toast('Not JSON: ' + e.message, true); return; }
  if(!doc || typeof doc !== 'object'){ toast('Expected a JSON object', true); return; }
  ['user_request', 'task_steps', 'task_nodes', 'task_links'].forEach(function(k){ if(k in doc) S.edit[k] = doc[k]; });
  if(doc.type) $('e-type').value = doc.type;
  if('task_links' in doc) $('e-refs').checked = false;
  if(!Array.isArray(S.edit.task_steps)) S.edit.task_steps = [];
  if(!Array.isArray(S.edit.task_nodes)) S.edit.task_nodes = [];
  if(!Array.isArray(S.edit.task_links)) S.edit.task_links = [];
  S.edit.task_nodes.forEach(function(n){ if(!Array.isArray(n.arguments)) n.arguments = n.arguments === undefined ? [] : [n.arguments]; });
  $('e-request').value = S.edit.user_request || '';
  renderEditor(); changed();
}
function saveFix(){
  if(!S.editing) return;
  var kinds = [], boxes = $('e-kinds').querySelectorAll('input');
  for(var i = 0; i < boxes.length; i++) if(boxes[i].checked) kinds.push(boxes[i].value);
  var p = S.lastPreview;
  if(p && !p.error && !p.diff.length){ toast('Nothing changed: press C if the sample is correct', true); return; }
  if(p && p.issues && p.issues.length && !window.confirm('The fixed sample still has ' + p.issues.length + ' rule-critic issue(s). Save anyway?')) return;
  var edit = clone(S.edit); edit.type = $('e-type').value; edit.links_from_refs = $('e-refs').checked;
  decide('fix', {edit: edit, fixes: kinds.length ? kinds : null});
}

// ----------------------------------------------------------------------------------------------- agreement

function showAgreement(){
  api('/api/agreement').then(function(doc){
    var body = clear($('agree-body'));
    var names = Object.keys(doc.reviewers);
    if(!names.length){ body.appendChild(el('p', {text: 'No decisions yet.'})); }
    else {
      var t = el('table', null, [el('tr', null, [el('th', {text: 'reviewer'}), el('th', {cls: 'num', text: 'correct'}),
        el('th', {cls: 'num', text: 'discard'}), el('th', {cls: 'num', text: 'fix'}), el('th', {cls: 'num', text: 'of ' + doc.total})])]);
      names.forEach(function(n){ var c = doc.reviewers[n]; t.appendChild(el('tr', null, [el('td', {text: n}),
        el('td', {cls: 'num', text: String(c.correct)}), el('td', {cls: 'num', text: String(c.discard)}), el('td', {cls: 'num', text: String(c.fix)}),
        el('td', {cls: 'num', text: String(c.correct + c.discard + c.fix)})])); });
      body.appendChild(t);
    }
    if(doc.pairs.length){
      body.appendChild(el('h3', {text: "Cohen's kappa over outcomes, per pair"}));
      var p = el('table', {id: 'kappa'}, [el('tr', null, [el('th', {text: 'reviewers'}), el('th', {cls: 'num', text: 'shared'}),
        el('th', {cls: 'num', text: 'agreement'}), el('th', {cls: 'num', text: 'kappa'})])]);
      doc.pairs.forEach(function(x){ p.appendChild(el('tr', null, [el('td', {text: x.a + ' \u00b7 ' + x.b}), el('td', {cls: 'num', text: String(x.n)}),
        el('td', {cls: 'num', text: x.agreement === null ? '-' : (100 * x.agreement).toFixed(1) + '%'}),
        el('td', {cls: 'num', text: x.kappa === null ? 'undefined' : x.kappa.toFixed(3)})])); });
      body.appendChild(p);
      body.appendChild(el('p', {cls: 'sig', text: 'Over the samples both reviewed (current decisions). Kappa is undefined when chance agreement is certain (both gave one label to everything).'}));
    } else body.appendChild(el('p', {text: 'Kappa needs two reviewers with samples in common.'}));
    $('agree').showModal();
  }).catch(function(e){ toast(e.message, true); });
}

// ----------------------------------------------------------------------------------------------- wiring

function typing(){
  var a = document.activeElement;
  return a && (a.tagName === 'INPUT' || a.tagName === 'TEXTAREA' || a.tagName === 'SELECT' || a.isContentEditable);
}
document.addEventListener('keydown', function(ev){
  if($('help').open || $('agree').open) return;
  if(S.editing){
    if(ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)){ ev.preventDefault(); saveFix(); }
    else if(ev.key === 'Escape'){ ev.preventDefault(); closeEditor(false); }
    return;
  }
  if(typing()){ if(ev.key === 'Escape') document.activeElement.blur(); return; }
  if(ev.ctrlKey || ev.metaKey || ev.altKey) return;
  var k = ev.key;
  if(k === 'c' || k === 'C'){ ev.preventDefault(); decide('correct'); }
  else if(k === 'd' || k === 'D'){ ev.preventDefault(); decide('discard'); }
  else if(k === 'f' || k === 'F'){ ev.preventDefault(); openEditor(); }
  else if(k === 'j' || k === 'ArrowRight'){ ev.preventDefault(); step(1); }
  else if(k === 'k' || k === 'ArrowLeft'){ ev.preventDefault(); step(-1); }
  else if(k === 'n' || k === 'N'){ ev.preventDefault(); nextTodo(); }
  else if(k === 'a' || k === 'A'){ ev.preventDefault(); showAgreement(); }
  else if(k === '?'){ ev.preventDefault(); $('help').showModal(); }
  else if(/^[1-9]$/.test(k) && REASON_KEYS[+k - 1]){ ev.preventDefault(); toggleReason(REASON_KEYS[+k - 1]); }
});
var acts = document.querySelectorAll('#bar [data-act]');
for(var i = 0; i < acts.length; i++) acts[i].addEventListener('click', function(ev){
  var a = ev.currentTarget.getAttribute('data-act');
  if(a === 'correct' || a === 'discard'){ if(!S.editing) decide(a); }
  else if(a === 'fix'){ if(!S.editing) openEditor(); }
  else if(a === 'prev'){ if(!S.editing) step(-1); }
  else if(a === 'next'){ if(!S.editing) step(1); }
  else if(a === 'todo'){ if(!S.editing) nextTodo(); }
});
$('e-request').addEventListener('input', function(ev){ S.edit.user_request = ev.target.value; changed(); });
$('e-refs').addEventListener('change', function(){
  if(!$('e-refs').checked && S.lastPreview && S.lastPreview.record) S.edit.task_links = clone(S.lastPreview.record.task_links);
  renderLinks(); changed();
});
$('e-type').addEventListener('change', changed);
$('e-add-step').addEventListener('click', function(){ S.edit.task_steps.push(''); renderEditor(); changed(); });
$('e-add-node').addEventListener('click', function(){ S.edit.task_nodes.push({task: '', arguments: []}); renderEditor(); changed(); });
$('e-add-link').addEventListener('click', function(){
  var names = S.edit.task_nodes.map(function(n){ return n.task; });
  if(names.length < 2){ toast('A link needs two tools', true); return; }
  S.edit.task_links.push({source: names[0], target: names[1]}); renderLinks(); changed();
});
$('e-kinds').addEventListener('change', function(){ S.kindsTouched = true; });
$('e-json-apply').addEventListener('click', applyJson);
$('e-save').addEventListener('click', saveFix);
$('e-cancel').addEventListener('click', function(){ closeEditor(false); });
$('btn-help').addEventListener('click', function(){ $('help').showModal(); });
$('btn-agree').addEventListener('click', showAgreement);
['f-verdict', 'f-status', 'f-mode', 'f-size'].forEach(function(id){ $(id).addEventListener('change', function(){ applyFilters(true); $(id).blur(); }); });
var stored = null;
try { stored = window.localStorage.getItem('taskbench.reviewer'); } catch(e) {}
$('reviewer').value = stored || BOOT.reviewer || '';
$('reviewer').addEventListener('change', function(){
  try { window.localStorage.setItem('taskbench.reviewer', me()); } catch(e) {}
  renderProgress(); applyFilters(true); if(S.cur) open(S.cur);
});

// other reviewers' decisions arrive in the shared log: pick them up now and then (the open sample is kept)
function refreshIndex(){
  if(document.hidden) return;
  api('/api/index').then(function(doc){
    doc.items.forEach(function(e){ var it = S.byId[e.id]; if(it){ it.dec = e.dec; it.stale = e.stale; } });
    renderProgress(); S.shown = S.items.filter(passes); renderList();
    $('count').textContent = S.shown.length + ' of ' + S.items.length + ' shown';
  }).catch(function(){});
}
setInterval(refreshIndex, 20000);

Promise.all([loadIndex(), loadLibrary()]).then(function(){
  renderProgress();
  S.shown = S.items.filter(passes);
  var want = decodeURIComponent((location.hash || '').slice(1));
  applyFilters(false);
  if(want && S.byId[want]) open(want);
  else {
    var todo = S.shown.filter(function(it){ return !mine(it); })[0];
    if(todo) open(todo.id);
  }
  if(!S.items.length){ document.body.setAttribute('data-ready', '1'); toast('No samples to review', true); }
}).catch(function(e){ toast(e.message, true); document.body.setAttribute('data-ready', 'error'); });
})();
