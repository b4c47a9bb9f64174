"""Human evaluation of agent trajectories (issue 20, point 8): the three-point Executability and Utility
rubric, blind items, ratings logged, Cohen's and Fleiss' kappa; the routes inside the review app, attacked
(bad scores, unknown items, HTML in trajectories); and the page in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from browser_helpers import CHROMIUM, chromium
from review_fixture import LoopbackServer, make_review_dir
from taskbench.dataset.trajectories import TrajectoryWriter
from taskbench.errors import InputError
from taskbench.eval.agreement import cohen_kappa, fleiss_kappa
from taskbench.report.review.human_eval import RUBRIC, HumanEval
from taskbench.schema import (
    AssistantMessage,
    CheckResult,
    FinalAnswerEvent,
    ModelCallEvent,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    Trajectory,
)

ATTACK = "<img src=x onerror=\"window.__pwned=1\"></script><script>window.__pwned=2</script>"


def make_run(root: Path, agents: tuple[str, ...] = ("react", "conagents-auto"), tasks: int = 3) -> Path:
    """A run directory with one trajectory per (agent, task), texts carrying an HTML attack."""
    root.mkdir(parents=True)
    lines = []
    for agent in agents:
        for t in range(tasks):
            rel = f"trajectories/{agent}/t{t}__s0.jsonl"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            traj = Trajectory(id=f"t{t}", task=f"Task {t}: who played the Joker? {ATTACK}", agent=agent, seed=0)
            w = TrajectoryWriter(root / rel, traj)
            w.add(ModelCallEvent(role="react", output=AssistantMessage(content=f"thinking {ATTACK}")))
            w.add(ToolCallEvent(call=ToolCall(id="c1", name="GET /search/movie", arguments={"query": ATTACK}),
                                result=ToolResult(call_id="c1", name="GET /search/movie", content={"x": ATTACK})))
            w.add(FinalAnswerEvent(role="react", answer=f"Heath Ledger {ATTACK}"))
            traj.answer = f"Heath Ledger {ATTACK}"
            traj.outcome = CheckResult(success=agent == "react")
            w.finish("complete")
            lines.append({"id": f"{agent}/t{t}/s0", "agent": agent, "task": f"t{t}", "seed": 0, "trajectory": rel,
                          "success": agent == "react"})
    lines.append({"id": "react/t9/s0", "agent": "react", "task": "t9", "seed": 0, "failed": True, "error": "x"})
    (root / "episodes.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def test_fleiss_kappa() -> None:
    # Fleiss (1971) as Wikipedia works it: 10 items, 14 raters, 5 categories -> 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1], [7, 7, 0, 0, 0],
             [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    items = [[str(j) for j, n in enumerate(row) for _ in range(n)] for row in table]
    assert fleiss_kappa(items) == pytest.approx(0.2099, abs=1e-3)
    assert fleiss_kappa([["3", "3"], ["1", "1"], ["2", "2"]]) == pytest.approx(1.0)
    assert fleiss_kappa([["3", "3"], ["3", "3"]]) is None  # chance agreement certain
    assert fleiss_kappa([["3"], []]) is None  # no item with two ratings
    # two raters, balanced marginals: Fleiss equals Cohen
    a, b = ["1", "2", "3", "1", "2", "3"], ["1", "2", "3", "2", "1", "3"]
    assert fleiss_kappa(list(zip(a, b, strict=True))) == pytest.approx(cohen_kappa(a, b))


def test_items_are_blind_sampled_and_ratings_give_kappas(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    store = HumanEval(run)
    assert len(store.items) == 6  # the failed episode is not rated
    view = store.view(store.order[0])
    assert "agent" not in view and "success" not in json.dumps(view) and "outcome" not in view
    assert ATTACK in view["task"] and [e["kind"] for e in view["events"]] == ["model", "tool", "final"]
    assert len(HumanEval(run, sample=2, seed=1).items) == 4  # 2 per agent
    assert HumanEval(run, seed=3).order == HumanEval(run, seed=3).order
    for i, item_id in enumerate(store.order):
        agent = store.items[item_id].agent
        score = 3 if agent == "react" else 1
        store.rate(item_id, "ana", score, score)
        store.rate(item_id, "ben", score, score if i else 2)
        store.rate(item_id, "cy", score, score)
    store.rate(store.order[0], "cy", 3 if store.items[store.order[0]].agent == "react" else 1, 2)  # replaces
    summary = store.summary()
    assert summary["raters"] == ["ana", "ben", "cy"] and summary["rated_items"] == 6
    assert "react" not in json.dumps(summary)  # per-agent results only in the export (test_human_eval_blind.py)
    assert store.per_agent()["react"]["executability"] == 3.0
    assert store.per_agent()["conagents-auto"]["executability"] == 1.0
    assert summary["agreement"]["executability"]["fleiss_kappa"] == 1.0
    assert summary["agreement"]["utility"]["fleiss_kappa"] < 1.0
    pairs = {(p["a"], p["b"]): p for p in summary["agreement"]["utility"]["pairs"]}
    assert pairs[("ana", "ben")]["n"] == 6 and pairs[("ana", "ben")]["kappa"] < 1.0
    assert set(RUBRIC) == {"executability", "utility"} and all(set(r) == {1, 2, 3} for r in RUBRIC.values())


def test_bad_ratings_are_refused(tmp_path: Path) -> None:
    store = HumanEval(make_run(tmp_path / "run"))
    item = store.order[0]
    for args in ((item, "ana", 0, 2), (item, "ana", 4, 2), (item, "ana", 2, True), (item, "", 2, 2),
                 (item, "a\nb", 2, 2), (item, "x" * 65, 2, 2), ("nope", "ana", 2, 2)):
        with pytest.raises(InputError):
            store.rate(*args)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        store.rate(item, "ana", 2, 2, note="n" * 3000)
    assert not store.ratings_path.exists()


def test_routes_in_the_review_app_and_their_guard(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from taskbench.report.review.app import create_app
    from taskbench.report.review.session import ReviewSession

    store = HumanEval(make_run(tmp_path / "run"))
    app = create_app(ReviewSession(make_review_dir(tmp_path / "mm")), reviewer="ana", token="tok", human_eval=store)
    client = TestClient(app)
    assert client.get("/api/human/items").status_code == 401  # the app's token guard covers the routes
    h = {"Authorization": "Bearer tok"}
    page = client.get("/human", headers=h)
    assert page.status_code == 200 and "script-src 'unsafe-inline'" in page.headers["content-security-policy"]
    assert "Human evaluation" in page.text and '"ana"' in page.text
    items = client.get("/api/human/items?reviewer=ana", headers=h).json()
    first = items["items"][0]["id"]
    assert items["items"][0]["rated"] is None and items["rubric"]["utility"]["3"]
    assert client.get("/api/human/item/nope", headers=h).status_code == 404
    bad = client.post("/api/human/rate", headers=h, json={"id": first, "reviewer": "ana", "executability": 5,
                                                        "utility": 1})
    assert bad.status_code == 400 and "executability must be 1, 2 or 3" in bad.json()["detail"]
    form = client.post("/api/human/rate", headers={**h, "Content-Type": "application/x-www-form-urlencoded"},
                       content=b"id=x")
    assert form.status_code == 415
    ok = client.post("/api/human/rate", headers=h, json={"id": first, "reviewer": "ana", "executability": 3,
                                                       "utility": 2, "note": ATTACK})
    assert ok.status_code == 200
    assert client.get("/api/human/items?reviewer=ana", headers=h).json()["items"][0]["rated"] == \
        {"executability": 3, "utility": 2}
    assert client.get("/api/human/summary", headers=h).json()["rated_items"] == 1
    evil = create_app(ReviewSession(make_review_dir(tmp_path / "mm2")), reviewer="</script><script>x()</script>",
                      human_eval=store)
    text = TestClient(evil).get("/human").text
    assert "</script><script>x()" not in text and "\\u003c/script\\u003e" in text




@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_rating_page_in_chromium_shows_untrusted_text_as_text(tmp_path: Path) -> None:
    from taskbench.report.review.app import create_app
    from taskbench.report.review.session import ReviewSession

    store = HumanEval(make_run(tmp_path / "run", tasks=2))
    app = create_app(ReviewSession(make_review_dir(tmp_path / "mm")), reviewer="ana", token="tok", human_eval=store)
    errors: list[str] = []
    with LoopbackServer(app) as srv, chromium() as browser:
        page = browser.new_page()
        page.set_default_timeout(60000)  # the cores are shared: be patient, never flaky
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{srv.url}/human?token=tok")
        page.wait_for_selector("#events .event")
        assert page.evaluate("window.__pwned") is None  # no injected handler or script ran
        assert ATTACK in page.inner_text("#task") and ATTACK in page.inner_text("#answer")
        assert page.locator("#events img").count() == 0 and page.locator("#events script").count() == 0
        assert page.input_value("#reviewer") == "ana"
        first = page.get_attribute("body", "data-item")
        page.click("#save")
        # selectors, not wait_for_function(string): the page's CSP forbids eval, and Playwright evals a string predicate
        page.wait_for_selector("#status:has-text('rate both')")
        page.check("#executability-3")
        page.check("#utility-2")
        page.fill("#note", ATTACK)
        page.click("#save")
        page.wait_for_selector("body[data-rated='1']")
        page.wait_for_selector(f"body:not([data-item='{first}'])")
        page.click("#prev")
        page.wait_for_selector(f"body[data-item='{first}']")
        assert page.is_checked("#executability-3") and page.is_checked("#utility-2")
        page.screenshot(path=str(tmp_path / "human.png"))
    assert errors == []
    rated = store.ratings()[first]["ana"]
    assert (rated["executability"], rated["utility"], rated["note"]) == (3, 2, ATTACK)
