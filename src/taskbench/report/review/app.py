"""The review web app: one FastAPI application over a :class:`~.session.ReviewSession`.

Routes (all JSON except the page):

- ``GET /``: the page (one self-contained HTML document: inline CSS and script, no external resource);
- ``GET /api/index``: the dataset, every sample's index entry (type, size, critics, decisions), the reviewers;
- ``GET /api/library``: the tools (names, types or parameters) for the editor;
- ``GET /api/sample/{id}?reviewer=R``: one sample with its critics, duplicate flag, rule-critic issues,
  drawings, every reviewer's latest decision and, when R's decision is a fix, the fixed version;
- ``POST /api/preview``: ``{id, edit}`` -> the edited sample checked by the rule critic, drawn and diffed;
- ``POST /api/decide``: ``{id, reviewer, outcome, fixes, edit, reasons, note, base}`` -> the logged decision;
- ``GET /api/agreement``: per-reviewer counts and pairwise Cohen's kappa.

With a :class:`~taskbench.report.view.index.ViewIndex` (``taskbench view``) the same app also serves the
viewer (:mod:`taskbench.report.view.routes`: ``/view`` and ``/api/view/...``); the review session may then be
absent until the viewer opens a generation run for review (``POST /api/view/review/{run}``), and ``/``
redirects to ``/view``.

Access: with a ``token`` every request must carry it, as ``Authorization: Bearer <token>``, an
``X-Taskbench-Token`` header, a ``taskbench_token`` cookie or a ``?token=`` query parameter; anything else gets
401. Opening ``/?token=...`` sets the cookie (HttpOnly, SameSite=Strict) and redirects to ``/``, so the
token leaves the address bar and the page's own requests carry it. With ``allowed_hosts`` (the CLI passes the
loopback names when it binds to loopback) a request whose ``Host`` header names another host gets 421, which
stops DNS-rebinding pages from reaching a token-less local server. A POST must be ``application/json`` (415
otherwise), which a cross-site form cannot send. A request body over :data:`MAX_BODY` bytes gets 413, a POST
without a length 411.
"""

from __future__ import annotations

import hmac
from importlib import resources
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from ...errors import InputError
from .session import ReviewSession

if TYPE_CHECKING:  # pragma: no cover
    from ..view.index import ViewIndex

__all__ = ["COOKIE", "LOOPBACK_HOSTS", "create_app", "page_html"]

COOKIE = "taskbench_token"
MAX_BODY = 2 << 20
"""Largest request body accepted (a review edit is a few kilobytes)."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


class PreviewBody(BaseModel):
    id: str
    edit: dict[str, Any] = Field(default_factory=dict)


class DecideBody(BaseModel):
    id: str
    outcome: str
    reviewer: str | None = None
    fixes: list[str] | None = None
    edit: dict[str, Any] | None = None
    reasons: list[str] = Field(default_factory=list)
    note: str = ""
    base: str | None = None


def page_html(*, reviewer: str, title: str) -> str:
    """The page with its stylesheet and script inlined (package data under ``report/templates``)."""
    folder = resources.files("taskbench.report") / "templates"
    page = (folder / "review.html").read_text(encoding="utf-8")
    css = (folder / "review.css").read_text(encoding="utf-8")
    js = (folder / "review.js").read_text(encoding="utf-8")
    import html
    import json

    boot = json.dumps({"reviewer": reviewer}).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (page.replace("/*CSS*/", css).replace("/*JS*/", js).replace("{{BOOT}}", boot)
            .replace("{{TITLE}}", html.escape(title)))


def _host_of(header: str) -> str:
    header = header.strip().lower()
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class SessionSlot:
    """The review session the app serves now (the viewer may open another one)."""

    def __init__(self, session: ReviewSession | None) -> None:
        self.session = session
        self.page: str | None = None


def create_app(
    session: ReviewSession | None,
    *,
    reviewer: str,
    token: str | None = None,
    allowed_hosts: tuple[str, ...] | None = None,
    human_eval: Any = None,
    view: ViewIndex | None = None,
) -> FastAPI:
    """The review app for ``session``; ``reviewer`` is the default name decisions are logged under (a
    request may name another, as the page does when the reviewer changes it). ``human_eval``: a
    :class:`~.human_eval.HumanEval` whose trajectory-rating routes (``/human``) the app serves too. With
    ``view`` the viewer's routes are added (then ``session`` may be None)."""
    app = FastAPI(title="taskbench review", docs_url=None, redoc_url=None, openapi_url=None)
    slot = SessionSlot(session)

    def page() -> str:
        if slot.page is None and slot.session is not None:
            slot.page = page_html(reviewer=reviewer, title=f"review · {slot.session.name}")
        return slot.page or ""

    def current() -> ReviewSession | None:
        return slot.session

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        if allowed_hosts is not None and _host_of(request.headers.get("host", "")) not in allowed_hosts:
            return JSONResponse({"detail": "unexpected Host header"}, status_code=421)
        if token is not None:
            auth = request.headers.get("authorization", "")
            supplied = [
                auth[7:].strip() if auth.lower().startswith("bearer ") else "",
                request.headers.get("x-taskbench-token", ""),
                request.cookies.get(COOKIE, ""),
            ]
            query = request.query_params.get("token", "")
            expected = token.encode()

            def good(value: str) -> bool:
                return bool(value) and hmac.compare_digest(value.encode(), expected)

            if good(query) and request.method == "GET" and not request.url.path.startswith("/api/"):
                redirect = RedirectResponse(request.url.path, status_code=303)
                redirect.set_cookie(COOKIE, token, httponly=True, samesite="strict")
                return redirect
            if not (good(query) or any(good(v) for v in supplied)):
                if request.url.path.startswith("/api/"):
                    return JSONResponse({"detail": "missing or wrong token"}, status_code=401,
                                        headers={"WWW-Authenticate": "Bearer"})
                return HTMLResponse("<!DOCTYPE html><title>401</title><h1>401: token required</h1>"
                                    "<p>Open this page with <code>?token=...</code> (the token the server was "
                                    "started with).</p>", status_code=401, headers={"WWW-Authenticate": "Bearer"})
        if request.method == "POST" and not request.headers.get("content-type", "").startswith("application/json"):
            return JSONResponse({"detail": "POST bodies must be application/json"}, status_code=415)
        length = request.headers.get("content-length")
        if request.method in ("POST", "PUT", "PATCH") and length is None:
            return JSONResponse({"detail": "a request body needs a Content-Length"}, status_code=411)
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return JSONResponse({"detail": f"request body over {MAX_BODY} bytes"}, status_code=413)
        response: Response = await call_next(request)
        response.headers.setdefault("Cache-Control", "no-store")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    def _unknown(sample_id: str) -> JSONResponse:
        return JSONResponse({"detail": f"unknown sample id {sample_id!r}"}, status_code=404)

    def _no_session() -> JSONResponse:
        return JSONResponse({"detail": "no dataset is open for review (open a generation run in /view)"},
                            status_code=404)

    @app.get("/", response_class=HTMLResponse, response_model=None)
    async def index_page() -> Response:
        if current() is None:
            return RedirectResponse("/view", status_code=303)
        return HTMLResponse(page(), headers={"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                                           "style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'"})

    @app.get("/api/index", response_model=None)
    async def api_index() -> dict[str, Any] | JSONResponse:
        if (session := current()) is None:
            return _no_session()
        return session.index()

    @app.get("/api/library", response_model=None)
    async def api_library() -> dict[str, Any] | JSONResponse:
        if (session := current()) is None:
            return _no_session()
        return {"dependency": session.dependency, "tools": session.library_json()}

    @app.get("/api/sample/{sample_id}", response_model=None)
    async def api_sample(sample_id: str, reviewer: str | None = None) -> dict[str, Any] | JSONResponse:
        if (session := current()) is None:
            return _no_session()
        if sample_id not in session.items:
            return _unknown(sample_id)
        return session.detail(sample_id, reviewer)

    @app.post("/api/preview", response_model=None)
    async def api_preview(body: PreviewBody) -> dict[str, Any] | JSONResponse:
        if (session := current()) is None:
            return _no_session()
        if body.id not in session.items:
            return _unknown(body.id)
        p = session.preview(body.id, body.edit)
        if p.error is not None:
            return {"error": p.error}
        return {
            "record": p.record,
            "issues": [session.issue_json(i, p.sample) for i in p.issues] if p.sample else [],
            "sampled_issues": [session.issue_json(i, p.sample) for i in p.sampled_issues] if p.sample else [],
            "diff": p.diff,
            "suggested": p.suggested,
            "svg": p.svg,
            "sampled_svg": p.sampled_svg,
        }

    @app.post("/api/decide", response_model=None)
    async def api_decide(body: DecideBody) -> dict[str, Any] | JSONResponse:
        if (session := current()) is None:
            return _no_session()
        if body.id not in session.items:
            return _unknown(body.id)
        try:
            decision = session.decide(body.id, body.reviewer or reviewer, body.outcome, edit=body.edit,
                                      fixes=body.fixes, reasons=body.reasons, note=body.note, base=body.base)
        except InputError as exc:
            return JSONResponse({"detail": exc.message + (f" ({exc.hint})" if exc.hint else "")}, status_code=400)
        return {"decision": decision.to_line(), "entry": session.entry(session.items[body.id])}

    @app.get("/api/agreement", response_model=None)
    async def api_agreement() -> dict[str, Any] | JSONResponse:
        if (session := current()) is None:
            return _no_session()
        return session.agreement()

    if human_eval is not None:  # human evaluation of agent trajectories (human_eval.py)
        from .human_eval import human_eval_router

        app.include_router(human_eval_router(human_eval, reviewer=reviewer))
    if view is not None:
        from ..view.routes import view_router

        def open_review(new: ReviewSession) -> None:
            slot.session, slot.page = new, None

        app.include_router(view_router(view, current=current, open_review=open_review))
    return app
