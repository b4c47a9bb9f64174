"""Samples of one scored entry (a model on a dataset): an index built once, pages and one sample read on demand.

The index holds, per sample, a few fields (id, structure, tool count, gold tools, error labels, finish reason,
whether it failed or did not parse) and the byte offsets of its gold and predicted lines, never the records
themselves. A page is filtered and sliced on the server; a sample's detail reads its two lines by offset (each
at most :data:`MAX_LINE_BYTES`), draws gold and predicted graphs on one layout, and diffs the arguments.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...errors import InputError
from .cache import Memo
from .files import Outside, RunFile, confine
from .index import ScoredEntry

__all__ = ["MAX_LINE_BYTES", "MAX_PAGE", "MAX_TEXT", "SampleStore", "SampleTable", "arr", "bound", "clip", "counts", "obj"]

MAX_LINE_BYTES = 4 << 20
"""A gold or predictions line longer than this is not parsed (the detail says so)."""

MAX_PAGE = 200
"""Most rows in one page of samples."""

MAX_TEXT = 20_000
"""Longest text (raw output, request) sent for one field; longer is cut with a note of how much is left out."""

MAX_QUERY = 200
"""Longest search text accepted."""


def clip(text: Any, limit: int = MAX_TEXT) -> Any:
    """``text`` cut to ``limit`` characters with a note, when it is a longer string."""
    if isinstance(text, str) and len(text) > limit:
        return text[:limit] + f"\n... [{len(text) - limit:,} more characters not shown]"
    return text


def bound(value: Any, *, text: int = 2000, items: int = 100, depth: int = 6) -> Any:
    """A JSON value from a run made safe to send: strings cut to ``text`` characters, arrays and objects to
    ``items`` entries (keys to 200 characters), nesting to ``depth`` levels, a non-finite number or an integer
    beyond 2**53 as text (a JSON response cannot carry NaN, and a million-digit integer is not a number to
    show)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return clip(value, text)
    if isinstance(value, int):
        return value if -(1 << 53) <= value <= (1 << 53) else "(an integer too large to show)"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth <= 0:
        return "..."
    if isinstance(value, dict):
        out = {str(k)[:200]: bound(v, text=text, items=items, depth=depth - 1)
               for k, v in itertools.islice(value.items(), items)}
        if len(value) > items:
            out["..."] = f"{len(value) - items:,} more keys not shown"
        return out
    if isinstance(value, (list, tuple)):
        shown = [bound(v, text=text, items=items, depth=depth - 1) for v in value[:items]]
        if len(value) > items:
            shown.append(f"... {len(value) - items:,} more not shown")
        return shown
    return clip(str(value), text)


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else {}."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else []."""
    return value if isinstance(value, list) else []


def counts(value: Any, *, items: int = 1000) -> dict[str, int]:
    """The ``name -> count`` entries of a JSON object (a tally a run wrote: reasons by critic, an agent's
    failures) whose count is a positive integer, at most ``items`` of them, each name clipped."""
    return {clip(str(k), 600): v for k, v in list(obj(value).items())[:items]
            if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 53}


def _lines(path: RunFile) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of every non-blank line; a line over :data:`MAX_LINE_BYTES` is yielded as ``b""``
    (see :func:`_big_lines` for its head)."""
    for offset, line, big in _big_lines(path):
        yield offset, b"" if big else line


_ID = re.compile(rb'^\s*\{\s*"id"\s*:\s*"((?:[^"\\]|\\.){1,400})"')


def _big_lines(path: RunFile, limit: int | None = None) -> Iterator[tuple[int, bytes, bool]]:
    """(offset, line, too big) of every non-blank line; a line over ``limit`` (default :data:`MAX_LINE_BYTES`)
    comes as its first bytes only (to read its id), the rest skipped unread into memory."""
    limit = MAX_LINE_BYTES if limit is None else limit
    with path.open() as fh:
        offset = 0
        while True:
            line = fh.readline(limit + 1)
            if not line:
                return
            size = len(line)
            if size > limit and not line.endswith(b"\n"):
                rest = fh.readline(1 << 20)
                while rest:
                    size += len(rest)
                    if rest.endswith(b"\n"):
                        break
                    rest = fh.readline(1 << 20)
                yield offset, line[:4096], True
            elif line.strip():
                yield offset, line, False
            offset += size


def _read_at(path: RunFile, offset: int) -> dict[str, Any] | str:
    """The JSON object of the line at ``offset``, or why it cannot be read."""
    return _read_many(path, [offset])[0]


def _read_many(path: RunFile, offsets: list[int]) -> list[dict[str, Any] | str]:
    """The JSON objects of the lines at ``offsets`` (the file opened once), each or why it cannot be read."""
    try:
        with path.open() as fh:
            out = []
            for offset in offsets:
                fh.seek(offset)
                out.append(_parse_line(fh.readline(MAX_LINE_BYTES + 1)))
            return out
    except InputError as exc:
        return [str(exc)] * len(offsets)


def _parse_line(line: bytes) -> dict[str, Any] | str:
    if len(line) > MAX_LINE_BYTES:
        return f"the line is over {MAX_LINE_BYTES >> 20} MB and is not shown"
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return f"not JSON ({exc})"
    return rec if isinstance(rec, dict) else "not a JSON object"


def _names(nodes: Any) -> list[str]:
    out = []
    for n in nodes if isinstance(nodes, list) else []:
        name = n.get("task") if isinstance(n, dict) else n
        if isinstance(name, str):
            out.append(name)
    return out


@dataclass(slots=True)
class Row:
    id: str
    type: str | None = None
    n: int | None = None
    tools: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    finish: str | None = None
    failed: bool = False
    parse_error: bool = False
    request: str = ""
    gold_at: int | None = None
    pred_at: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "n": self.n, "tools": list(self.tools)[:12],
                "labels": list(self.labels), "finish": self.finish, "failed": self.failed,
                "parse_error": self.parse_error, "request": clip(self.request, 240),
                "predicted": self.pred_at is not None, "gold": self.gold_at is not None}


@dataclass
class SampleTable:
    """The sample index of one entry."""

    entry: ScoredEntry
    rows: list[Row] = field(default_factory=list)
    by_id: dict[str, int] = field(default_factory=dict)
    gold_file: RunFile | None = None
    problems: list[str] = field(default_factory=list)
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    executions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per sample: the execution result of `evaluate --execute` (success, exact, recall, reason)."""

    @classmethod
    def build(cls, entry: ScoredEntry) -> SampleTable:
        from ...dataset.layout import find_data_file

        table = cls(entry=entry)
        strict = (entry.metrics_doc or {}).get("strict") or {}
        if "errors" in strict and not strict["errors"] and entry.metrics_file is not None:
            strict = _strict_errors(entry.metrics_file, table.problems) or strict  # skipped in the run log header
        for ex in arr(obj((entry.metrics_doc or {}).get("execution")).get("samples")):
            if isinstance(ex, dict) and isinstance(ex.get("id"), str):
                table.executions[ex["id"]] = ex
        names: dict[str, str] = {}  # one string object per distinct tool name or label across the table
        for err in strict.get("errors") or []:
            if isinstance(err, dict) and isinstance(err.get("id"), str):
                table.errors[err["id"]] = _slim(err, names)
        strict = {}  # the parsed metrics file is not kept
        table.problems += entry.problems
        if entry.data_path is not None and entry.data_path.is_dir():
            found = find_data_file(entry.data_path)
            try:
                table.gold_file = confine(found, [entry.data_path], what="gold data") if found is not None else None
            except Outside as exc:
                table.problems.append(str(exc))
        if table.gold_file is not None and not table.gold_file.is_file():
            table.problems.append(f"{table.gold_file}: not a regular file of the gold directory, not read")
            table.gold_file = None
        if table.gold_file is not None and table.gold_file.suffix != ".parquet":
            for offset, line in _lines(table.gold_file):
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError):
                    table.problems.append(f"{table.gold_file}: a line at byte {offset} is not JSON")
                    continue
                if not isinstance(rec, dict) or "id" not in rec:
                    continue
                nodes = rec.get("task_nodes", rec.get("tool_nodes"))
                tools = tuple(names.setdefault(t, t) for t in _names(nodes))
                kind = rec.get("type")
                row = Row(id=str(rec["id"]), type=names.setdefault(kind, kind) if isinstance(kind, str) else None,
                          n=rec["n_tools"] if isinstance(rec.get("n_tools"), int) else len(tools),
                          tools=tools, gold_at=offset,
                          request=str(rec.get("user_request") or rec.get("instruction") or ""))
                table._add(row)
        if entry.predictions is not None and entry.predictions.is_file():
            for offset, line, big in _big_lines(entry.predictions):
                try:
                    if big:  # too big to parse here: found by its id, the detail says why it is not shown
                        head = _ID.match(line)
                        rec = {"id": json.loads(b'"' + head.group(1) + b'"')} if head else None
                    else:
                        rec = json.loads(line)
                except (ValueError, RecursionError):
                    rec = None
                if rec is None:
                    table.problems.append(f"{entry.predictions}: a line at byte {offset} is not JSON"
                                          + (f" (or is over {MAX_LINE_BYTES >> 20} MB)" if big else ""))
                    continue
                if not isinstance(rec, dict) or "id" not in rec:
                    continue
                sid = str(rec["id"])
                i = table.by_id.get(sid)
                if i is None:
                    if table.gold_file is not None:  # a prediction of a sample not in the gold (or not selected)
                        continue
                    table._add(Row(id=sid, request=str(rec.get("user_request") or "")))
                    i = table.by_id[sid]
                row = table.rows[i]
                row.pred_at = offset
                finish = rec.get("finish_reason")
                row.finish = names.setdefault(finish, finish) if isinstance(finish, str) else None
                row.failed = bool(rec.get("failed"))
                row.parse_error = bool(rec.get("error")) and not row.failed
                if isinstance(rec.get("user_request"), str):
                    row.request = rec["user_request"]
        selected = set(table.errors)
        if selected and table.gold_file is not None:  # only the samples the entry scored
            table.rows = [r for r in table.rows if r.id in selected or r.pred_at is not None]
            table.by_id = {r.id: i for i, r in enumerate(table.rows)}
        for r in table.rows:
            err = table.errors.get(r.id)
            if err is not None:
                r.labels = tuple(str(x) for x in err.get("labels") or [])
        return table

    def _add(self, row: Row) -> None:
        if row.id in self.by_id:
            self.problems.append(f"duplicate sample id {row.id!r}")
            return
        self.by_id[row.id] = len(self.rows)
        self.rows.append(row)

    # --------------------------------------------------------------------------------------- pages

    def facets(self) -> dict[str, Any]:
        """What the filters offer: structures, tool counts, error labels, tools (with counts)."""
        def count(values: Iterator[Any]) -> dict[str, int]:
            out: dict[str, int] = {}
            for v in values:
                if v is not None:
                    out[str(v)] = out.get(str(v), 0) + 1
            return dict(sorted(out.items()))

        tools = count(t for r in self.rows for t in set(r.tools))
        return {"type": count(r.type for r in self.rows), "n": count(r.n for r in self.rows),
                "label": count(lab for r in self.rows for lab in r.labels) | (
                    {"correct": sum(1 for r in self.rows if r.id in self.errors and not r.labels)} if self.errors else {}),
                "tool": dict(sorted(tools.items(), key=lambda kv: -kv[1])[:300]), "total": len(self.rows)}

    def page(self, *, offset: int = 0, limit: int = 50, type: str | None = None, n: int | None = None,
             label: str | None = None, tool: str | None = None, q: str | None = None,
             finish: str | None = None) -> dict[str, Any]:
        """One page of rows matching every given filter (``q``: in the id or the request, case-insensitive)."""
        limit = max(1, min(limit, MAX_PAGE))
        offset = max(0, offset)
        needle = (q or "").strip().lower()[:MAX_QUERY]

        def keep(r: Row) -> bool:
            if type and r.type != type:
                return False
            if n is not None and r.n != n:
                return False
            if label:
                if label == "correct":
                    if r.labels or r.id not in self.errors:
                        return False
                elif label not in r.labels:
                    return False
            if tool and tool not in r.tools:
                return False
            if finish and r.finish != finish:
                return False
            return not needle or needle in r.id.lower() or needle in r.request.lower()

        matched = [r for r in self.rows if keep(r)]
        return {"total": len(self.rows), "matched": len(matched), "offset": offset, "limit": limit,
                "rows": [r.to_json() for r in matched[offset:offset + limit]]}

    # --------------------------------------------------------------------------------------- one sample

    def detail(self, sample_id: str) -> dict[str, Any] | None:
        """One sample: request, gold and predicted graphs (drawn on one layout, differences marked), argument
        differences, raw output, finish reason, parse error, error labels. None for an unknown id."""
        i = self.by_id.get(sample_id)
        if i is None:
            return None
        row = self.rows[i]
        gold: dict[str, Any] | str | None = None
        pred: dict[str, Any] | str | None = None
        if row.gold_at is not None and self.gold_file is not None:
            gold = _read_at(self.gold_file, row.gold_at)
        if row.pred_at is not None and self.entry.predictions is not None:
            pred = _read_at(self.entry.predictions, row.pred_at)
        out: dict[str, Any] = {"id": row.id, "row": row.to_json(), "error_detail": self.errors.get(row.id),
                               "gold_problem": gold if isinstance(gold, str) else None,
                               "pred_problem": pred if isinstance(pred, str) else None}
        g_sample = _gold_sample(gold) if isinstance(gold, dict) else None
        p_graph = _pred_graph(pred) if isinstance(pred, dict) else None
        dep = self.entry.dependency or "resource"
        if isinstance(pred, dict):
            out["prediction"] = {
                "raw": clip(pred.get("raw")), "error": clip(pred.get("error"), 4000),
                "finish_reason": pred.get("finish_reason"), "failed": bool(pred.get("failed")),
                "usage": pred.get("usage") if isinstance(pred.get("usage"), dict) else None,
                "model": pred.get("model"), "reformat_raw": clip(pred.get("reformat_raw")),
                "result": _clip_json(pred.get("result")),
            }
        out["request"] = clip((g_sample.user_request if g_sample is not None else None) or row.request)
        if g_sample is not None:
            out["gold"] = _graph_json(g_sample, dep)
        if p_graph is not None:
            out["predicted"] = _graph_json(p_graph, dep)
        out["svg_pred"], out["svg_gold"] = _drawings(g_sample, p_graph, dep)
        out["hallucinated"] = list((self.errors.get(row.id) or {}).get("hallucinated_tools") or [])
        out["arguments"] = _argument_diff(g_sample, p_graph)
        ex = self.executions.get(row.id)
        out["execution"] = {k: clip(ex.get(k), 2000) for k in ("status", "success", "exact", "recall", "reason")} \
            if ex is not None else None
        return out


_NO_ERRORS: dict[str, Any] = {}
"""The error detail of a correct prediction (shared, never changed)."""


def _slim(err: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A per-sample error record without its empty fields and with its repeated names shared: most are empty,
    and an index of 28,271 samples keeps one per sample."""
    out = {}
    for k, v in err.items():
        if k == "id" or not v:
            continue
        if isinstance(v, list):
            v = [names.setdefault(x, x) if isinstance(x, str) else x for x in v]
        out[names.setdefault(k, k)] = v
    return out or _NO_ERRORS


MAX_METRICS_BYTES = 64 << 20
"""Largest metrics file read for its per-sample error labels (28,271 samples: about 12 MB; parsing one costs
about ten times its size in memory)."""


def _strict_errors(path: RunFile, problems: list[str]) -> dict[str, Any] | None:
    """The strict block of a metrics file (for its per-sample ``errors``), or None."""
    try:
        doc = json.loads(path.read_bytes(MAX_METRICS_BYTES))
    except (OSError, InputError, ValueError, RecursionError) as exc:
        problems.append(f"{path}: error labels not read ({exc})")
        return None
    if not isinstance(doc, dict):
        return None
    block = obj(doc.get("strict")) or doc
    return block if isinstance(block.get("errors"), list) else None


def _clip_json(value: Any) -> Any:
    text = json.dumps(value, ensure_ascii=False)
    return value if len(text) <= MAX_TEXT else clip(text)


def _gold_sample(rec: dict[str, Any]) -> Any:
    from ...schema import Sample

    try:
        return Sample.model_validate(rec)
    except Exception:  # a malformed gold record: shown raw by the caller
        return None


def _pred_graph(rec: dict[str, Any]) -> Any:
    from ...schema import Prediction

    try:
        return Prediction.model_validate(rec).graph()
    except Exception:
        return None


def _node_args(node: Any) -> dict[str, Any]:
    """A node's arguments by name; positional ones (the resource domains' strings) as 'arg 1', 'arg 2' ..."""
    from ...schema import TaskArgument

    out: dict[str, Any] = {}
    for i, a in enumerate(node.arguments):
        if isinstance(a, TaskArgument):
            out[a.name] = a.value
        else:
            out[f"arg {i + 1}"] = a
    return out


def _graph_json(g: Any, dep: str) -> dict[str, Any]:
    return {"steps": [clip(s, 2000) for s in g.task_steps[:60]],
            "nodes": [{"task": n.task, "arguments": _clip_json(_node_args(n))} for n in g.task_nodes[:60]],
            "links": [[lk.source, lk.target] for lk in g.links_for(dep)[:200]]}


def _drawings(gold: Any, pred: Any, dep: str) -> tuple[str | None, str | None]:
    """(predicted svg, gold svg): predicted tools and links the gold lacks are 'tg-extra', gold ones the
    prediction lacks 'tg-missing'; both on one layout."""
    from ...graph.render import task_graph_svgs

    if pred is None and gold is None:
        return None, None
    p_nodes = pred.tool_names[:60] if pred is not None else []
    p_links = [(lk.source, lk.target) for lk in pred.links_for(dep)] if pred is not None else []
    if gold is None:
        return task_graph_svgs(p_nodes, p_links)[0], None
    g_links = [(lk.source, lk.target) for lk in gold.links_for(dep)]
    titles = {n.task: f"{n.task}({json.dumps(_node_args(n), ensure_ascii=False)[:300]})"
              for n in (pred.task_nodes if pred is not None else [])}
    return task_graph_svgs(p_nodes, p_links, gold.tool_names[:60], g_links, titles=titles)


def _argument_diff(gold: Any, pred: Any) -> list[dict[str, Any]]:
    """Per tool both graphs call: the arguments that differ (gold value, predicted value)."""
    if gold is None or pred is None:
        return []
    p_args: dict[str, dict[str, Any]] = {}
    for n in pred.task_nodes:
        p_args.setdefault(n.task, _node_args(n))
    out = []
    for n in gold.task_nodes[:60]:
        if n.task not in p_args:
            continue
        g, p = _node_args(n), p_args[n.task]
        diffs = [{"name": k, "gold": clip(_show(g.get(k)), 500), "predicted": clip(_show(p.get(k)), 500),
                  "state": "missing" if k not in p else "extra" if k not in g else "different"}
                 for k in list(dict.fromkeys([*g, *p])) if g.get(k) != p.get(k) or (k in g) != (k in p)]
        out.append({"tool": n.task, "same": not diffs, "diffs": diffs[:50]})
    return out


def _show(v: Any) -> str | None:
    return None if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _stamp(file: RunFile | None) -> tuple[int, int] | None:
    try:
        return file.stamp() if file is not None else None
    except InputError:
        return None


def entry_stamp(entry: ScoredEntry) -> tuple[Any, ...]:
    """What an entry's sample index is built from, by size and mtime (its predictions, metrics and gold)."""
    gold = None
    if entry.data_path is not None:
        try:
            st = entry.data_path.stat()
            gold = (str(entry.data_path), st.st_mtime_ns)
        except OSError:
            gold = None
    return (entry.key, _stamp(entry.predictions), _stamp(entry.metrics_file), gold)


class SampleStore:
    """Sample tables built on first use, the most recently used :data:`KEEP` kept; a table is built once however
    many requests ask for it at the same time, and again when a file it was built from changed."""

    KEEP = 4
    """Sample indexes kept (about 21 MB each at 28,271 samples)."""

    def __init__(self) -> None:
        self._tables: Memo[SampleTable] = Memo(keep=self.KEEP)

    def get(self, rid: str, entry: ScoredEntry) -> SampleTable:
        return self._tables.get((rid, *entry_stamp(entry)), lambda: SampleTable.build(entry))

    def clear(self) -> None:
        self._tables.clear()
