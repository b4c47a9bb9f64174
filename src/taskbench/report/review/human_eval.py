"""Human evaluation of agent trajectories, as the ConAgents paper does it: Executability and Utility on a
three-point rubric (:data:`RUBRIC`), rated per trajectory, with Cohen's kappa per pair of raters and Fleiss'
kappa over all of them (:mod:`taskbench.eval.agreement`; the paper reports 0.75 and 0.71).

:class:`HumanEval` holds the trajectories of one agent run directory (``taskbench agents eval -o RUN``): every
finished episode, or ``sample`` drawn at random per agent with ``seed`` (the paper rates 30 per dataset). Raters
are blind:

- an item id is a keyed hash (HMAC-SHA256) of agent, task and seed under a random key kept in
  ``RUN/human_eval.key`` (made on first use, readable by its owner only): the same run gives the same ids, so
  ratings stay attached, but hashing guesses of agent/task/seed gives nothing without the key; the order the
  items are shown in is shuffled with the key too, so it cannot be rebuilt from a copy of the run;
- an item shows the task, the tools offered, what was done (model outputs, calls, code, results, checks) and
  the answer under neutral labels (``model``, ``tool call``, ``code run``, ``check``, ``final answer``), never
  a role name (``grounding``, ``planner``, ``reflect`` ... name the agent family), the agent's name or the
  checker's verdict;
- no per-agent figure reaches the page or the API: :meth:`HumanEval.summary` gives the counts and the kappas;
  the per-agent means, and which item was which agent, are written by :meth:`HumanEval.export`
  (``taskbench agents ratings RUN``, after the session) to ``RUN/human_eval.json``.

Ratings are appended to ``RUN/human_ratings.jsonl`` (one line each, flushed and fsynced; a later rating of the
same item by the same rater replaces the earlier one), so a killed server loses nothing.

:func:`human_eval_router` serves it inside the review app (``create_app(..., human_eval=...)``): the page
``GET /human`` and ``GET /api/human/items``, ``GET /api/human/item/{id}``, ``POST /api/human/rate``,
``GET /api/human/summary`` (counts and kappas, no agent). The app's guard (token, Host, JSON-only POSTs)
covers these routes too. The page builds every text with ``textContent``: a trajectory is untrusted text.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import time
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ...errors import InputError

RUBRIC: dict[str, dict[int, str]] = {
    "executability": {
        3: "The tools are called in a logical order that completes the whole task.",
        2: "Part of the task is done: some right calls, but a step is missing, wrong or out of order.",
        1: "The calls do not get the task done (wrong tools, failing calls, or no calls).",
    },
    "utility": {
        3: "The answer rests on the tool results: the values that matter were read from them and used.",
        2: "The answer uses the results only in part: some values are read, others are missing or made up.",
        1: "The answer ignores or contradicts the results, or there is no answer.",
    },
}
"""The three-point rubric of each dimension (our wording of the paper's levels)."""

DIMENSIONS = tuple(RUBRIC)
RATINGS_FILE = "human_ratings.jsonl"
KEY_FILE = "human_eval.key"
"""The run's secret key for item ids and the order (never served)."""
EXPORT_FILE = "human_eval.json"
"""What :meth:`HumanEval.export` writes: per-agent results and which item was which agent."""
MAX_NOTE = 2000
MAX_REVIEWER = 64
TEXT_LIMIT = 4000


class RateBody(BaseModel):
    id: str
    reviewer: str
    executability: int
    utility: int
    note: str = ""


class Item(BaseModel):
    """One trajectory to rate."""

    id: str = Field(description="Opaque id: HMAC-SHA256 of agent, task and seed under the run's secret key.")
    agent: str
    task: str
    seed: int
    path: str = Field(description="The trajectory file, relative to the run directory.")


def _short(text: Any, limit: int = TEXT_LIMIT) -> str:
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return value if len(value) <= limit else value[:limit] + f" ... [{len(value) - limit} more characters]"


def event_view(e: Any) -> dict[str, Any]:
    """One trajectory event as the rater sees it: what was done, under a neutral kind (``model``, ``tool``,
    ``program``, ``check``, ``final``), never the role that did it nor where a check sent its feedback (role
    names and routes tell the agent family); no prompts; texts bounded."""
    kind = e.kind
    if kind == "model_call":
        calls = [{"name": c.name, "arguments": c.arguments} for c in e.output.tool_calls or []]
        return {"kind": "model", "text": _short(e.output.content or ""), "calls": _short(calls) if calls else "",
                "error": e.error or ""}
    if kind == "tool_call":
        return {"kind": "tool", "name": e.call.name, "arguments": _short(e.call.arguments),
                "result": _short(e.result.error or e.result.content)}
    if kind == "code_run":
        error = f"{e.error.type}: {e.error.message}" if e.error else (e.limit or "")
        return {"kind": "program", "code": _short(e.code), "tools": ", ".join(e.tool_calls),
                "result": _short(e.result), "stdout": _short(e.stdout, 1000), "error": error}
    if kind == "review":
        return {"kind": "check", "verdict": e.verdict, "feedback": _short(e.feedback)}
    return {"kind": "final", "answer": _short(e.answer)}


def run_key(run: Path) -> bytes:
    """The run's secret key (:data:`KEY_FILE`), made on first use: 32 random bytes, hex, owner-only."""
    path = run / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        text = path.read_text(encoding="ascii").strip()
        try:
            key = bytes.fromhex(text)
        except ValueError:
            key = b""
        if len(key) < 16:
            raise InputError("not a key (delete it to make a new one; ratings made under it are then lost)",
                             path=path) from None
        return key
    key = os.urandom(32)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(key.hex() + "\n")
        f.flush()
        os.fsync(f.fileno())
    return key


def _keyed(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


class HumanEval:
    """The trajectories of one agent run to rate, and the ratings (see the module docstring)."""

    def __init__(self, run: str | Path, *, sample: int | None = None, seed: int = 0,
                 ratings: str | Path | None = None) -> None:
        from ...agents.eval import load_run
        from ...schema.episode import EpisodeRow

        self.run = Path(run)
        _, latest = load_run(self.run)
        key = run_key(self.run)
        by_agent: dict[str, list[Item]] = {}
        self._legacy: dict[str, str] = {}  # ids of ratings made before ids were keyed -> today's ids
        for rec in latest.values():
            if not isinstance(rec, EpisodeRow) or rec.trajectory is None:
                continue
            name = f"{rec.agent}/{rec.task}/s{rec.seed}"
            item = Item(id=_keyed(key, "item:" + name)[:16], agent=rec.agent, task=rec.task, seed=rec.seed,
                        path=rec.trajectory)
            self._legacy[hashlib.sha256(name.encode()).hexdigest()[:12]] = item.id
            by_agent.setdefault(item.agent, []).append(item)
        rng = random.Random(seed)  # which episodes: reproducible from the seed
        chosen: list[Item] = []
        for agent in sorted(by_agent):
            items = sorted(by_agent[agent], key=lambda i: (i.task, i.seed))
            chosen += rng.sample(items, sample) if sample is not None and sample < len(items) else items
        chosen.sort(key=lambda i: i.id)
        # blind: no agent's trajectories together, in an order only the key gives
        random.Random(_keyed(key, f"order:{seed}")).shuffle(chosen)
        self.items = {i.id: i for i in chosen}
        self.order = [i.id for i in chosen]
        self.ratings_path = Path(ratings) if ratings is not None else self.run / RATINGS_FILE

    # ------------------------------------------------------------------------------------------ reading

    def view(self, item_id: str) -> dict[str, Any]:
        """What the rater sees of one item (no agent name, no verdict)."""
        from ...dataset.trajectories import read_trajectory

        item = self.items[item_id]
        path = (self.run / item.path).resolve()
        if not path.is_relative_to(self.run.resolve()):
            raise InputError("the trajectory is outside the run directory", path=path)
        traj = read_trajectory(path)
        return {"id": item.id, "task": traj.task, "tools": [t.name for t in traj.tools],
                "events": [event_view(e) for e in traj.events], "answer": traj.answer,
                "position": self.order.index(item_id) + 1, "of": len(self.order)}

    def ratings(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The latest rating per item and rater: ``{item id: {rater: rating}}``."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        if not self.ratings_path.is_file():
            return out
        lines = self.ratings_path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if n == len(lines):
                    continue  # a last line cut by a crash
                raise InputError(f"line {n} is not JSON", path=self.ratings_path) from None
            if not isinstance(rec, dict):
                continue
            item_id = self._legacy.get(str(rec.get("id")), rec.get("id"))
            if item_id in self.items:
                out.setdefault(item_id, {})[str(rec.get("reviewer"))] = {**rec, "id": item_id}
        return out

    def index(self, reviewer: str | None = None) -> dict[str, Any]:
        """The items in rating order, with the given rater's ratings, and the rubric."""
        ratings = self.ratings()
        items = []
        for item_id in self.order:
            mine = ratings.get(item_id, {}).get(reviewer or "")
            items.append({"id": item_id, "rated": {d: mine[d] for d in DIMENSIONS} if mine else None})
        return {"items": items, "rubric": {d: {str(k): v for k, v in r.items()} for d, r in RUBRIC.items()}}

    # ------------------------------------------------------------------------------------------ rating

    def rate(self, item_id: str, reviewer: str, executability: int, utility: int, note: str = "") -> dict[str, Any]:
        """Log one rating (InputError for an unknown item, a score outside 1..3, a bad rater name)."""
        if item_id not in self.items:
            raise InputError(f"unknown item {item_id!r}")
        name = reviewer.strip()
        if not name or len(name) > MAX_REVIEWER or any(ord(ch) < 32 for ch in name):
            raise InputError(f"a rater name is 1..{MAX_REVIEWER} printable characters")
        for dim, value in (("executability", executability), ("utility", utility)):
            if isinstance(value, bool) or value not in (1, 2, 3):
                raise InputError(f"{dim} must be 1, 2 or 3, not {value!r}")
        if len(note) > MAX_NOTE:
            raise InputError(f"the note is longer than {MAX_NOTE} characters")
        rec = {"id": item_id, "reviewer": name, "executability": executability, "utility": utility, "note": note,
               "time": round(time.time(), 3)}
        self.ratings_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.ratings_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return rec

    def summary(self) -> dict[str, Any]:
        """What raters may see during the session: items, items rated, the raters, and per dimension Cohen's
        kappa for each pair of raters and Fleiss' kappa over the items rated by two raters or more. No
        per-agent figure (one rating would name its agent): those are in :meth:`export`."""
        from ...eval.agreement import fleiss_kappa, pairwise_agreement

        ratings = self.ratings()
        raters = sorted({r for by in ratings.values() for r in by})
        agreement: dict[str, Any] = {}
        for d in DIMENSIONS:
            table = {r: {i: str(by[r][d]) for i, by in ratings.items() if r in by} for r in raters}
            fleiss = fleiss_kappa([[str(rec[d]) for rec in by.values()] for by in ratings.values()])
            agreement[d] = {"fleiss_kappa": None if fleiss is None else round(fleiss, 4),
                            "items_with_two_or_more": sum(1 for by in ratings.values() if len(by) >= 2),
                            "pairs": [p.model_dump() for p in pairwise_agreement(table)]}
        return {"items": len(self.items), "rated_items": len(ratings), "raters": raters, "agreement": agreement,
                "per_agent": f"withheld until the ratings are exported (taskbench agents ratings RUN writes "
                             f"RUN/{EXPORT_FILE})"}

    def per_agent(self) -> dict[str, dict[str, Any]]:
        """Per agent: items rated, ratings, and the mean of each dimension over every rating."""
        per_agent: dict[str, dict[str, Any]] = {}
        for item_id, by in self.ratings().items():
            agent = self.items[item_id].agent
            entry = per_agent.setdefault(agent, {"items": 0, "ratings": 0, **{d: 0.0 for d in DIMENSIONS}})
            entry["items"] += 1
            for rec in by.values():
                entry["ratings"] += 1
                for d in DIMENSIONS:
                    entry[d] += rec[d]
        for entry in per_agent.values():
            for d in DIMENSIONS:
                entry[d] = round(entry[d] / entry["ratings"], 4) if entry["ratings"] else None
        return dict(sorted(per_agent.items()))

    def export(self, output: str | Path | None = None) -> dict[str, Any]:
        """The session's results, unblinded, written to ``output`` (default ``RUN/human_eval.json``): per agent
        the means (:meth:`per_agent`), the kappas and counts (:meth:`summary`), every latest rating, and which
        item was which agent (``items``: id -> agent, task, seed, trajectory). Returns the document."""
        from ...dataset.jsonio import write_json

        summary = self.summary()
        doc = {"run": str(self.run), "items_total": summary["items"], "rated_items": summary["rated_items"],
               "raters": summary["raters"], "per_agent": self.per_agent(), "agreement": summary["agreement"],
               "items": {i: {"agent": it.agent, "task": it.task, "seed": it.seed, "trajectory": it.path}
                         for i, it in sorted(self.items.items(), key=lambda kv: (kv[1].agent, kv[1].task,
                                                                                 kv[1].seed))},
               "ratings": [rec for by in self.ratings().values() for rec in by.values()]}
        write_json(Path(output) if output is not None else self.run / EXPORT_FILE, doc)
        return doc


def page_html() -> str:
    """The rating page (one self-contained document)."""
    folder = resources.files("taskbench.report") / "templates"
    return (folder / "human_eval.html").read_text(encoding="utf-8")


CSP = ("default-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "connect-src 'self'")


def human_eval_router(store: HumanEval, *, reviewer: str = "") -> Any:
    """The routes of the rating page, for the review app (``app.include_router``)."""
    from fastapi import APIRouter
    from fastapi.responses import HTMLResponse, JSONResponse

    router = APIRouter()
    page = page_html().replace("{{REVIEWER}}", json.dumps(reviewer).replace("<", "\\u003c")
                               .replace(">", "\\u003e").replace("&", "\\u0026"))

    def unknown(item_id: str) -> JSONResponse:
        return JSONResponse({"detail": f"unknown item {item_id!r}"}, status_code=404)

    @router.get("/human", response_class=HTMLResponse)
    async def human_page() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": CSP})

    @router.get("/api/human/items")
    async def human_items(reviewer: str | None = None) -> dict[str, Any]:
        return store.index(reviewer)

    @router.get("/api/human/item/{item_id}", response_model=None)
    async def human_item(item_id: str) -> dict[str, Any] | JSONResponse:
        if item_id not in store.items:
            return unknown(item_id)
        return store.view(item_id)

    @router.post("/api/human/rate", response_model=None)
    async def human_rate(body: RateBody) -> dict[str, Any] | JSONResponse:
        if body.id not in store.items:
            return unknown(body.id)
        try:
            return {"rating": store.rate(body.id, body.reviewer, body.executability, body.utility, body.note)}
        except InputError as exc:
            return JSONResponse({"detail": exc.message}, status_code=400)

    @router.get("/api/human/summary")
    async def human_summary() -> dict[str, Any]:
        return store.summary()

    return router


__all__ = ["DIMENSIONS", "EXPORT_FILE", "KEY_FILE", "RATINGS_FILE", "RUBRIC", "HumanEval", "event_view",
           "human_eval_router", "page_html", "run_key"]
