"""The viewer's routes, added to the review app (:func:`taskbench.report.review.app.create_app` with ``view=``).

Pages: ``GET /view`` (one self-contained document; the script renders everything with ``textContent`` and
DOM nodes, never HTML from data, except the server's graph SVGs, whose every text is escaped), ``GET
/view/report/{run}`` (a run's report.html, sandboxed: no script runs in it).

JSON (``/api/view/...``): ``runs``, ``run/{run}``, ``board``, ``samples/{run}?entry=&offset=&limit=&type=&n=
&label=&tool=&finish=&q=``, ``sample/{run}?entry=&id=``, ``compare?a_run=&a_entry=&b_run=&b_entry=``,
``episodes/{run}``, ``trajectory/{run}?id=&offset=``, ``generation/{run}``, ``POST review/{run}`` (open a
generation run in the review page of the same app) and ``refresh`` (``POST``: read the runs again).

Every input is bounded (ids and keys up to :data:`MAX_ID` characters, pages up to
:data:`~.samples.MAX_PAGE` rows), every text in a response is clipped (:func:`~.samples.clip`), and access is
the review app's (loopback Host check, token, JSON-only POSTs).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, JSONResponse, Response

from ...errors import InputError
from . import agents as agents_view
from .boards import board, compare
from .generation import generation
from .index import RunInfo, ViewIndex
from .samples import MAX_PAGE, SampleStore, SampleTable, clip, obj

__all__ = ["MAX_ID", "PAGE_CSP", "view_page", "view_router"]

MAX_ID = 400
"""Longest run id, entry key, sample id or episode id accepted."""

MAX_REPORT_BYTES = 64 << 20
"""Largest report.html served."""

PAGE_CSP = ("default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
            "connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'")
REPORT_CSP = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def view_page(title: str = "taskbench view") -> str:
    """The viewer page with its stylesheet and script inlined (package data under ``report/templates``)."""
    folder = resources.files("taskbench.report") / "templates"
    page = (folder / "view.html").read_text(encoding="utf-8")
    css = (folder / "view.css").read_text(encoding="utf-8")
    graph_css = (folder / "review.css").read_text(encoding="utf-8")
    graph_css = "\n".join(line for line in graph_css.splitlines() if line.startswith(".tg-"))
    js = (folder / "view.js").read_text(encoding="utf-8")
    return (page.replace("/*CSS*/", css + "\n" + graph_css).replace("/*JS*/", js)
            .replace("{{TITLE}}", html.escape(title)))


def _not_found(what: str) -> JSONResponse:
    return JSONResponse({"detail": clip(what, 300)}, status_code=404)


def _json_safe(value: Any, depth: int = 0) -> Any:
    """A JSON value with every string clipped and containers bounded (for config and environment blocks)."""
    if depth > 8:
        return "..."
    if isinstance(value, str):
        return clip(value, 2000)
    if isinstance(value, dict):
        return {str(k)[:200]: _json_safe(v, depth + 1) for k, v in list(value.items())[:200]}
    if isinstance(value, list):
        return [_json_safe(v, depth + 1) for v in value[:200]]
    return value


def _entry_json(e: Any) -> dict[str, Any]:
    strict = (e.metrics_doc or {}).get("strict") or {}
    compat = (e.metrics_doc or {}).get("compat") or {}
    metrics = (((strict.get("groups") or {}).get("overall_overall")) or {}).get("metrics") or {}
    ci = (((strict.get("groups") or {}).get("overall_overall")) or {}).get("ci") or {}
    cm = obj(compat.get("overall_overall"))
    keep = ("node_micro_f1", "link_f1", "argument_value_f1", "edit_distance", "graph_accuracy",
            "parse_failure_rate", "call_failure_rate")
    return {"key": e.key, "model": e.model, "dataset": e.dataset, "status": e.status, "error": clip(e.error, 2000),
            "failures": e.failures, "parse_failures": e.parse_failures, "samples": e.n_selected,
            "usage": _json_safe(e.usage), "predict_seconds": e.predict_seconds,
            "evaluate_seconds": e.evaluate_seconds, "has_predictions": e.predictions is not None,
            "has_gold": e.data_path is not None,
            "strict": {k: metrics.get(k) for k in keep}, "ci": {k: ci.get(k) for k in keep},
            "compat": {k: cm.get(c) for k, c in (("node_micro_f1", "node_micro_f1_no_matching"),
                                                 ("argument_value_f1",
                                                  "argument_task_argname_value_binary_f1_no_matching"))},
            "taxonomy": _json_safe(strict.get("taxonomy")), "execution": _json_safe(obj(obj((e.metrics_doc or {}).get("execution")).get("groups")).get("overall_overall")),
            "warnings": [clip(w, 1000) for w in (strict.get("warnings") or [])[:20] if isinstance(w, str)]}


def _run_json(run: RunInfo) -> dict[str, Any]:
    out = run.summary()
    out["header"] = _json_safe({k: v for k, v in run.header.items() if k != "headline_extra"})
    out["death"] = run.death
    out["problems"] = run.problems[:50]
    out["entries_detail"] = [_entry_json(e) for e in run.entries]
    out["review_command"] = f"taskbench review {run.path} --include-rejected" if run.kind == "generate" else None
    return out


def view_router(index: ViewIndex, *, current: Callable[[], Any], open_review: Callable[[Any], None]) -> APIRouter:
    """The viewer's routes over ``index``; ``current`` returns the review session the app serves and
    ``open_review`` replaces it (a generation run opened for review)."""
    router = APIRouter()
    store = SampleStore()
    page = view_page()

    def Id() -> Any:  # one Query object per parameter (FastAPI names a shared one after its first use)
        return Query(..., max_length=MAX_ID)

    def run_or_404(rid: str) -> RunInfo | JSONResponse:
        run = index.run(rid)
        return run if run is not None else _not_found(f"unknown run {rid!r}")

    @router.get("/view", response_class=HTMLResponse)
    async def view_index() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_CSP})

    @router.get("/view/report/{rid}", response_model=None)
    async def view_report(rid: str) -> Response:
        run = index.run(rid[:MAX_ID])
        path = run.path / "report.html" if run is not None else None
        if path is None or not path.is_file():
            return _not_found("no report.html for this run")
        if path.stat().st_size > MAX_REPORT_BYTES:
            return _not_found(f"report.html is over {MAX_REPORT_BYTES >> 20} MB")
        return HTMLResponse(path.read_text(encoding="utf-8", errors="replace"),
                            headers={"Content-Security-Policy": REPORT_CSP})

    @router.get("/api/view/runs")
    async def api_runs() -> dict[str, Any]:
        return {"runs": index.summaries(), "problems": [clip(p, 1000) for p in index.problems[:100]],
                "paths": [str(p) for p in index.paths],
                "review": getattr(current(), "name", None)}

    @router.post("/api/view/refresh")
    async def api_refresh() -> dict[str, Any]:
        index.refresh()
        store.clear()
        return {"runs": len(index.runs)}

    @router.get("/api/view/run/{rid}", response_model=None)
    async def api_run(rid: str) -> dict[str, Any] | JSONResponse:
        run = run_or_404(rid[:MAX_ID])
        return run if isinstance(run, JSONResponse) else _run_json(run)

    @router.get("/api/view/board")
    async def api_board(dataset: str | None = Query(None, max_length=MAX_ID)) -> dict[str, Any]:
        return board(index, dataset=dataset)

    def table(rid: str, entry: str) -> SampleTable | JSONResponse:
        run = index.run(rid)
        e = index.entry(rid, entry)
        if run is None or e is None:
            return _not_found(f"unknown run or entry {rid!r} {entry!r}")
        return store.get(rid, e)

    @router.get("/api/view/samples/{rid}", response_model=None)
    def api_samples(rid: str, entry: str = Id(), offset: int = Query(0, ge=0, le=10_000_000),
                    limit: int = Query(50, ge=1, le=MAX_PAGE), type: str | None = Query(None, max_length=20),
                    n: int | None = Query(None, ge=0, le=1000), label: str | None = Query(None, max_length=60),
                    tool: str | None = Query(None, max_length=MAX_ID),
                    finish: str | None = Query(None, max_length=60),
                    q: str | None = Query(None, max_length=200)) -> dict[str, Any] | JSONResponse:
        t = table(rid[:MAX_ID], entry)
        if isinstance(t, JSONResponse):
            return t
        out = t.page(offset=offset, limit=limit, type=type, n=n, label=label, tool=tool, q=q, finish=finish)
        out["facets"] = t.facets()
        out["problems"] = [clip(p, 500) for p in t.problems[:20]]
        return out

    @router.get("/api/view/sample/{rid}", response_model=None)
    def api_sample(rid: str, entry: str = Id(), id: str = Id()) -> dict[str, Any] | JSONResponse:
        t = table(rid[:MAX_ID], entry)
        if isinstance(t, JSONResponse):
            return t
        d = t.detail(id)
        return d if d is not None else _not_found(f"unknown sample id {id!r}")

    @router.get("/api/view/compare", response_model=None)
    def api_compare(a_run: str = Id(), a_entry: str = Id(), b_run: str = Id(), b_entry: str = Id()
                    ) -> dict[str, Any] | JSONResponse:
        ta, tb = table(a_run, a_entry), table(b_run, b_entry)
        if isinstance(ta, JSONResponse):
            return ta
        if isinstance(tb, JSONResponse):
            return tb
        both = {r.id for r in ta.rows if r.pred_at is not None} & {r.id for r in tb.rows if r.pred_at is not None}
        if not both:
            return JSONResponse({"detail": "the two entries have no predicted sample in common"}, status_code=400)
        result: dict[str, Any] = _json_safe(compare(index, (a_run, a_entry), (b_run, b_entry), selected=both))
        return result

    @router.get("/api/view/episodes/{rid}", response_model=None)
    def api_episodes(rid: str) -> dict[str, Any] | JSONResponse:
        run = run_or_404(rid[:MAX_ID])
        if isinstance(run, JSONResponse):
            return run
        if run.kind != "agents":
            return _not_found("not an agents run")
        eps, problems = agents_view.episodes(run.path)
        return {"episodes": eps, "problems": problems[:20],
                "metrics": _json_safe(run.header.get("metrics", {}).get("agents"))}

    @router.get("/api/view/trajectory/{rid}", response_model=None)
    def api_trajectory(rid: str, id: str = Id(), offset: int = Query(0, ge=0, le=1_000_000)
                       ) -> dict[str, Any] | JSONResponse:
        run = run_or_404(rid[:MAX_ID])
        if isinstance(run, JSONResponse):
            return run
        eps, _ = agents_view.episodes(run.path) if run.kind == "agents" else ([], [])
        ep = next((e for e in eps if e.get("id") == id), None)
        if ep is None:
            return _not_found(f"unknown episode {id!r}")
        return agents_view.trajectory(run.path, ep, offset=offset)

    @router.get("/api/view/generation/{rid}", response_model=None)
    def api_generation(rid: str) -> dict[str, Any] | JSONResponse:
        run = run_or_404(rid[:MAX_ID])
        if isinstance(run, JSONResponse):
            return run
        if run.kind != "generate":
            return _not_found("not a generation run")
        stats = run.header.get("statistics") or {}
        result: dict[str, Any] = _json_safe(generation(run.path, stats) | {"statistics": stats})
        return result

    @router.post("/api/view/review/{rid}", response_model=None)
    def api_open_review(rid: str) -> dict[str, Any] | JSONResponse:
        from ..review.session import ReviewSession

        run = run_or_404(rid[:MAX_ID])
        if isinstance(run, JSONResponse):
            return run
        if run.kind != "generate":
            return _not_found("not a generation run")
        try:
            open_review(ReviewSession(Path(run.path), include_rejected=True))
        except InputError as exc:
            return JSONResponse({"detail": clip(str(exc), 1000)}, status_code=400)
        return {"review": "/", "dataset": str(run.path)}

    return router
