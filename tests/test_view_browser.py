"""`taskbench view` in a real headless Chromium (Playwright): navigate the runs, sort and read the leaderboard,
filter the samples, open a sample (gold and predicted graphs), open a trajectory and two side by side, compare
two runs, open a generation run in review; and on every page, attacked data (script elements, attribute-breaking
quotes, javascript: URLs in requests, tool names, model output, trajectories, a directory name) must show as
text and never run. Screenshots go to $TASKBENCH_SCREENSHOTS when set, else to the test's tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from browser_helpers import CHROMIUM, chromium
from review_fixture import LoopbackServer
from test_review_browser import shots_dir
from view_fixture import XSS_SCRIPT, make_runs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]
TOKEN = "view-browser-token"


@pytest.fixture
def browser():
    with chromium() as b:
        yield b


def not_pwned(page) -> None:  # noqa: ANN001
    """No payload ran, and none became an element or a link."""
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('img[src=x], svg[onload], b[onmouseover], i').length") == 0
    hrefs = page.evaluate("[...document.querySelectorAll('a')].map(a => a.getAttribute('href'))")
    assert not [h for h in hrefs if h and not (h.startswith("#/") or h.startswith("/view/report/"))], hrefs


def ready(page) -> None:  # noqa: ANN001
    page.wait_for_selector("body[data-ready='1']", timeout=30000)


def test_view_in_chromium(browser, tmp_path: Path):
    from taskbench.report.review.app import create_app
    from taskbench.report.view.index import ViewIndex, run_slug

    made = make_runs(tmp_path)
    index = ViewIndex([made["root"]], data={"": made["data"]})  # the gold is outside the runs: named, as --data
    rid = run_slug(made["run"])
    shots = shots_dir(tmp_path)
    errors: list[str] = []
    with LoopbackServer(create_app(None, reviewer="ana", token=TOKEN, view=index)) as srv:
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
        assert page.goto(srv.url + "/view").status == 401
        page.goto(f"{srv.url}/view?token={TOKEN}")
        ready(page)
        assert "token" not in page.url
        assert page.locator("#runs tr.run-row").count() == 3  # the run and its two stages
        assert '<img src=x onerror=alert(1)>' in page.inner_text("#runs")  # the attacked directory name, as text
        not_pwned(page)
        page.screenshot(path=str(shots / "view_runs.png"), full_page=True)

        # one run: entries, config, report link
        page.click(f"tr.run-row[data-run='{rid}'] a")
        ready(page)
        assert page.locator("#entries tr.entry-row").count() == 2 and page.locator("#report-link").count() == 1
        assert "mock/echo" in page.inner_text("#entries")
        not_pwned(page)
        page.screenshot(path=str(shots / "view_run.png"), full_page=True)

        # the leaderboard: glossary, small-n warning, sort by NED (lower is better: smallest first)
        page.click("#nav-board")
        ready(page)
        assert page.locator("#board tr.board-row").count() == 2
        assert "LOWER is better" in page.inner_text(".glossary") and page.locator("#smalln").count() == 1
        page.click("#board th[data-metric='edit_distance']")
        ready(page)
        assert "sort=edit_distance" in page.url
        page.select_option("#b-group", "chain_overall")
        ready(page)
        assert "group=chain_overall" in page.url and page.locator("#board tr.board-row").count() == 2
        page.screenshot(path=str(shots / "view_board.png"), full_page=True)

        # samples: filter by structure and error type, search, page, open one (deep link)
        page.goto(f"{srv.url}/view#/run/{rid}")
        ready(page)
        page.click("a.samples-link >> nth=0")
        ready(page)
        assert page.locator("#samples tr.sample-row").count() == 8
        page.select_option("#f-type", "dag")
        ready(page)
        assert "type=dag" in page.url and page.locator("#samples tr.sample-row").count() >= 1
        assert all(t == "dag" for t in page.locator("#samples tr.sample-row td:nth-child(2)").all_inner_texts())
        page.select_option("#f-type", "")
        ready(page)
        page.select_option("#f-label", "hallucinated_tool")
        ready(page)
        assert page.locator("#samples tr.sample-row").count() == 1
        assert XSS_SCRIPT in page.inner_text("#samples")  # the attacked request, shown as text
        not_pwned(page)
        page.screenshot(path=str(shots / "view_samples.png"), full_page=True)
        page.click("#samples tr.sample-row a")
        ready(page)
        deep = page.url
        assert page.locator("#svg-pred g.tg-node").count() >= 1 and page.locator("#svg-gold g.tg-node").count() >= 1
        assert page.locator("#svg-pred g.tg-halluc").count() == 1 and page.locator("#svg-gold g.tg-missing").count() >= 1
        assert XSS_SCRIPT in page.inner_text("#raw") and XSS_SCRIPT in page.inner_text("#request")
        assert page.locator("#parse-error").count() == 1
        not_pwned(page)
        page.screenshot(path=str(shots / "view_sample.png"), full_page=True)
        page.goto("about:blank")
        page.goto(deep)  # the deep link opens the same sample
        ready(page)
        assert XSS_SCRIPT in page.inner_text("#raw")
        not_pwned(page)

        # two runs compared (here: the two models of the run, paired)
        page.click("#nav-compare")
        ready(page)
        values = page.eval_on_selector_all("#cmp-a option", "o => o.map(x => x.value).filter(Boolean)")
        page.select_option("#cmp-a", values[0])
        page.select_option("#cmp-b", values[1])
        page.click("#cmp-go")
        page.wait_for_selector(".cmp-table", timeout=60000)
        assert "n-F1" in page.inner_text("#cmp-out") and "p" in page.inner_text("#cmp-out")
        page.screenshot(path=str(shots / "view_compare.png"), full_page=True)

        # agents: a trajectory, then two agents on one task side by side
        agents = next(r for r in index.summaries() if r["kind"] == "agents")["id"]
        page.goto(f"{srv.url}/view#/run/{agents}")
        ready(page)
        assert page.locator("#episodes tr.episode-row").count() == 2
        page.click("#episodes tr.episode-row[data-id^='conagents'] a")
        ready(page)
        assert page.locator(".ev[data-kind='code_run']").count() >= 1 and page.locator(".ev[data-kind='review']").count() >= 1
        assert "gold path" in page.inner_text(".traj")
        page.screenshot(path=str(shots / "view_trajectory.png"), full_page=True)
        page.go_back()
        ready(page)
        for box in page.locator("#episodes input[type=checkbox]").all():
            box.check()
        page.click("#open-two")
        ready(page)
        assert page.locator(".traj").count() == 2
        assert XSS_SCRIPT in page.inner_text(".traj[data-id^='react']")
        not_pwned(page)
        page.screenshot(path=str(shots / "view_two_agents.png"), full_page=True)

        # generation: pass rates, rejected samples, then one click into review
        gen = next(r for r in index.summaries() if r["kind"] == "generate")["id"]
        page.goto(f"{srv.url}/view#/run/{gen}")
        ready(page)
        assert page.locator("#methods tr").count() >= 2
        not_pwned(page)
        page.screenshot(path=str(shots / "view_generation.png"), full_page=True)
        page.click("#open-review")
        page.wait_for_url(srv.url + "/", timeout=20000)
        page.wait_for_selector("body[data-ready='1']", timeout=20000)
        not_pwned(page)
        page.screenshot(path=str(shots / "view_review.png"))
    assert not errors, errors
