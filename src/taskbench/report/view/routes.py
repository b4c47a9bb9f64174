"""The viewer's routes, added to the review app (:func:`taskbench.report.review.app.create_app` with ``view=``).

Pages: ``GET /view`` (one self-contained document; the script renders everything with ``textContent`` and
DOM nodes, never HTML from data, except the server's graph SVGs, whose every text is escaped), ``GET
/view/report/{run}`` (a run's report.html, sandboxed: no script runs in it).

JSON (``/api/view/...``): ``runs``, ``run/{run}``, ``board``, ``samples/{run}?entry=&offset=&limit=&type=&n=
&label=&tool=&finish=&q=``, ``sample/{run}?entry=&id=``, ``compare?a_run=&a_entry=&b_run=&b_entry=``,
``episodes/{run}`` (with ``failed``: why each agent's episodes failed), ``trajectory/{run}?id=&offset=``,
``generation/{run}`` (with ``not_kept``: the critics' top reasons), ``POST review/{run}`` (open a
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
from .boards import CompareJobs, Scored, ScoreTask, board, run_worker
from .files import Outside
from .generation import generation, not_kept
from .index import RunInfo, ViewIndex
from .samples import MAX_PAGE, SampleStore, SampleTable, bound, clip, entry_stamp, obj

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


def _json_safe(value: Any) -> Any:
    """A JSON value with every string clipped and containers bounded (for config and environment blocks)."""
    return bound(value, text=2000, items=200, depth=8)


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


def _review_files_refused(run: RunInfo) -> str | None:
    """Why the review page may not open a generation run: a file it reads or writes there (the samples, the
    tool library, the requests, the review log it appends to) that is a symbolic link or not a regular file
    (so a review never reads or writes outside the run directory); None when it may."""
    import os
    import stat

    from ...dataset.layout import DATA_FILES, ERROR_FILE, GRAPH_FILE, RAW_FILE, REQUESTS_FILES, TOOL_FILE
    from ..review.log import LOG_FILE

    for name in (*DATA_FILES, ERROR_FILE, RAW_FILE, TOOL_FILE, GRAPH_FILE, *REQUESTS_FILES, LOG_FILE):
        try:
            st = os.lstat(run.path / name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{run.path / name}: {exc.strerror}"
        if not stat.S_ISREG(st.st_mode):
            return (f"{run.path / name} is a symbolic link or not a regular file: the review page reads and writes "
                    "only regular files inside the run directory")
    return None


def view_router(index: ViewIndex, *, current: Callable[[], Any], open_review: Callable[[Any], None]) -> APIRouter:
    """The viewer's routes over ``index``; ``current`` returns the review session the app serves and
    ``open_review`` replaces it (a generation run opened for review)."""
    router = APIRouter()
    store = SampleStore()
    jobs = CompareJobs()
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
    def view_report(rid: str) -> Response:
        run = index.run(rid[:MAX_ID])
        if run is None or run.kind != "run":
            return _not_found("no report.html for this run")
        try:  # a regular file inside the run directory, whatever it is linked to
            text = run.file("report.html").read_bytes(MAX_REPORT_BYTES).decode("utf-8", errors="replace")
        except InputError as exc:
            return _not_found(f"report.html is not served: {exc.message if isinstance(exc, Outside) else exc}")
        return HTMLResponse(text, headers={"Content-Security-Policy": REPORT_CSP})

    @router.get("/api/view/runs")
    async def api_runs() -> dict[str, Any]:
        return {"runs": index.summaries(), "problems": [clip(p, 1000) for p in index.problems[:100]],
                "paths": [str(p) for p in index.paths],
                "review": getattr(current(), "name", None)}

    @router.post("/api/view/refresh")
    async def api_refresh() -> dict[str, Any]:
        index.refresh()
        store.clear()
        jobs.clear()
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
    def api_compare(a_run: str = Id(), a_entry: str = Id(), b_run: str = Id(), b_entry: str = Id(),
                    wait: float = Query(3.0, ge=0, le=4)) -> dict[str, Any] | JSONResponse:
        ea, eb = index.entry(a_run, a_entry), index.entry(b_run, b_entry)
        if ea is None or eb is None:
            return _not_found(f"unknown run or entry {a_run!r} {a_entry!r} / {b_run!r} {b_entry!r}")
        if ea.dataset != eb.dataset or ea.data_path is None or eb.data_path is None:
            return JSONResponse({"detail": clip(f"the two entries are on different datasets ({ea.dataset} and "
                                                f"{eb.dataset}) or their gold is not read: a paired comparison needs "
                                                "the same samples", 1000)}, status_code=400)
        if ea.predictions is None or eb.predictions is None:
            return JSONResponse({"detail": "a predictions file is missing"}, status_code=400)
        sides = [(a_run, ea, "A"), (b_run, eb, "B")]
        key = ("compare", *(x for rid, e, _ in sides for x in (rid, *entry_stamp(e))))

        def work(say: Callable[[str], None]) -> dict[str, Any]:
            tasks: list[ScoreTask | Scored] = []
            for rid, e, which in sides:
                done = jobs.scored.peek((rid, *entry_stamp(e)))
                if done is not None:
                    tasks.append(done)
                    continue
                say(f"reading the samples of {which} ({e.model})")
                t = store.get(rid, e)
                if t.gold_file is None or e.predictions is None:
                    raise InputError(f"{e.key}: its gold or its predictions cannot be read, so it cannot be scored"
                                     + (f" ({t.problems[0]})" if t.problems else ""))
                tasks.append(ScoreTask.of(t, f"{which} ({e.model})"))

            def keep(i: int, scored: Scored) -> None:
                rid, e, _ = sides[i]
                jobs.scored.put((rid, *entry_stamp(e)), scored)

            return run_worker(tasks, (f"{ea.model} ({a_run})", f"{eb.model} ({b_run})"), say, keep)

        job = jobs.submit(key, work)
        state = jobs.wait(key, job, wait)
        if state["state"] != "done":
            return JSONResponse({"status": state["state"], "progress": state.get("progress"),
                                 "ahead": state.get("ahead", 0)}, status_code=202)
        result = state["result"]
        if "error" in result:
            return JSONResponse({"detail": clip(result["error"], 1000)}, status_code=400)
        out: dict[str, Any] = _json_safe(result)
        return out

    def episodes_file(rid: str) -> Any:
        run = run_or_404(rid[:MAX_ID])
        if isinstance(run, JSONResponse):
            return run, None
        if run.kind != "agents":
            return _not_found("not an agents run"), None
        try:
            file = run.file("episodes.jsonl")
        except Outside as exc:
            return _not_found(str(exc)), None
        if not file.is_file():
            return _not_found("episodes.jsonl is not a regular file of the run directory"), None
        return run, file

    @router.get("/api/view/episodes/{rid}", response_model=None)
    def api_episodes(rid: str, offset: int = Query(0, ge=0, le=10_000_000),
                     limit: int = Query(agents_view.EPISODES_PAGE, ge=1, le=agents_view.EPISODES_PAGE)
                     ) -> dict[str, Any] | JSONResponse:
        run, file = episodes_file(rid)
        if file is None:
            return run  # type: ignore[no-any-return]
        out = agents_view.episodes(file, offset=offset, limit=limit)
        out["metrics"] = _json_safe(obj(run.header.get("metrics")).get("agents"))
        out["about"] = agents_view.about(list(out["metrics"] or {}) if isinstance(out["metrics"], dict) else [])
        out["failed"] = agents_view.failed(obj(run.header.get("metrics")).get("agents"))
        return out

    @router.get("/api/view/trajectory/{rid}", response_model=None)
    def api_trajectory(rid: str, id: str = Id(), offset: int = Query(0, ge=0, le=10_000_000)
                       ) -> dict[str, Any] | JSONResponse:
        run, file = episodes_file(rid)
        if file is None:
            return run  # type: ignore[no-any-return]
        ep = agents_view.episode(file, id)
        if ep is None:
            return _not_found(f"unknown episode {id!r}")
        return agents_view.trajectory(agents_view.trajectory_file(run.file, ep), ep, offset=offset)

    @router.get("/api/view/generation/{rid}", response_model=None)
    def api_generation(rid: str) -> dict[str, Any] | JSONResponse:
        run = run_or_404(rid[:MAX_ID])
        if isinstance(run, JSONResponse):
            return run
        if run.kind != "generate":
            return _not_found("not a generation run")
        stats = obj(run.header.get("statistics"))
        return generation(run, stats) | {"statistics": _json_safe(stats), "not_kept": not_kept(run, stats)}

    @router.post("/api/view/review/{rid}", response_model=None)
    def api_open_review(rid: str) -> dict[str, Any] | JSONResponse:
        from ..review.session import ReviewSession

        run = run_or_404(rid[:MAX_ID])
        if isinstance(run, JSONResponse):
            return run
        if run.kind != "generate":
            return _not_found("not a generation run")
        refused = _review_files_refused(run)
        if refused is not None:
            return JSONResponse({"detail": clip(refused, 1000)}, status_code=400)
        try:
            open_review(ReviewSession(Path(run.path), include_rejected=True))
        except InputError as exc:
            return JSONResponse({"detail": clip(str(exc), 1000)}, status_code=400)
        return {"review": "/", "dataset": str(run.path)}

    return router
