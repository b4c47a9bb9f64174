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
from view_fixture import XSS_REASON, XSS_SCRIPT, make_runs

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
        why = page.inner_text("#why-failed")  # every agent solved 0: why, as text (the reason is attacked)
        assert "react: 1 of 1 episodes failed" in why and f"answer rejected: {XSS_REASON}" in why
        assert "step cap reached" in why
        not_pwned(page)
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
        # the click changes the hash; the router runs on hashchange, after the click returns, so the old page's
        # ready flag can still be up: wait for the two trajectories themselves (a race seen under load). A locator,
        # not wait_for_function(string): the page's CSP forbids eval, and Playwright evals a string predicate
        page.locator(".traj").nth(1).wait_for(timeout=30000)
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
        why = page.inner_text("#why-not-kept")  # 0 kept: the critics' top reasons, as text
        assert "Not kept: 2 of 2" in why and "rule critic: request_empty" in why and XSS_REASON in why
        assert "--keep none" in why
        not_pwned(page)
        page.screenshot(path=str(shots / "view_generation.png"), full_page=True)
        page.click("#open-review")
        page.wait_for_url(srv.url + "/", timeout=20000)
        page.wait_for_selector("body[data-ready='1']", timeout=20000)
        not_pwned(page)
        page.screenshot(path=str(shots / "view_review.png"))
    assert not errors, errors


FITS = """() => {
  // every comparison group apart from the others, and every p-value cell (a table's last column) fully inside
  // its group, not cut off and not covered
  const groups = [...document.querySelectorAll('.cmp-groups > div')];
  const cards = groups.map(c => c.getBoundingClientRect());
  const problems = [];
  if (!groups.length) problems.push('no comparison groups');
  for (let i = 0; i < cards.length; i++) for (let j = i + 1; j < cards.length; j++) {
    const a = cards[i], b = cards[j];
    if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
      problems.push(`groups ${i} and ${j} overlap`);
  }
  for (const td of document.querySelectorAll('.cmp-groups table td:last-child')) {
    if (td.closest('details') && !td.closest('details').open) continue;
    td.scrollIntoView({block: 'center', inline: 'center'});
    const r = td.getBoundingClientRect();
    const card = td.closest('.cmp-groups > div').getBoundingClientRect();
    const box = (td.closest('.scroll') || td.closest('.cmp-groups > div')).getBoundingClientRect();
    if (r.right > card.right + 1 || r.left < card.left - 1) problems.push(`p cell outside its group: ${td.textContent}`);
    if (r.right > box.right + 1) problems.push(`p cell cut off: ${td.textContent}`);
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!hit || !td.contains(hit)) problems.push(`p cell covered by ${hit && hit.tagName}: ${td.textContent}`);
  }
  window.scrollTo(0, 0);
  return problems;
}"""


def test_compare_tables_fit_at_1400_and_1920_px_with_a_legend(browser, tmp_path):
    from taskbench.report.review.app import create_app
    from taskbench.report.view.index import ViewIndex, run_slug

    made = make_runs(tmp_path)
    index = ViewIndex([made["root"]], data={"": made["data"]})
    rid = run_slug(made["run"])
    shots = shots_dir(tmp_path)
    errors: list[str] = []
    with LoopbackServer(create_app(None, reviewer="ana", view=index)) as srv:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        a, b = f"{rid}|mm/mock/echo", f"{rid}|mm/mock/other"
        from urllib.parse import urlencode

        page.goto(f"{srv.url}/view#/compare?{urlencode({'a': a, 'b': b})}")
        page.wait_for_selector(".cmp-table", timeout=120000)
        for width in (1400, 1920):
            page.set_viewport_size({"width": width, "height": 900})
            assert page.evaluate(FITS) == [], width
            for d in page.locator(".cmp-group details").all():
                d.evaluate("d => d.open = true")
            assert page.evaluate(FITS) == [], width
            page.screenshot(path=str(shots / f"view_compare_{width}.png"), full_page=True)
        # one name per metric and group, with the key evaluate and compare write, and a legend of them all
        overall = page.locator(".cmp-group[data-group='overall_overall']")
        assert "all samples" in overall.locator("h3").inner_text() and "overall_overall" in overall.locator("h3").inner_text()
        row = overall.locator("tr[data-metric='node_micro_f1'] td.metric").inner_text()
        assert "n-F1" in row and "node_micro_f1" in row
        legend = page.inner_text("#legend")
        assert "node_micro_f1" in legend and "v-F1" in legend and "argument_value_f1" in legend
        assert "NED on chains" in legend or "NED (chains)" in legend
    assert not errors, errors


def test_trajectory_calls_fold_and_a_review_shows_both_words(browser, tmp_path):
    from taskbench.report.review.app import create_app
    from taskbench.report.view.index import ViewIndex, run_slug
    from test_view_limits import agents_run

    answer = "\n".join(f"line {i} of a long answer" for i in range(40))
    events: list[dict] = []
    for i in range(30):
        events.append({"kind": "model_call", "role": "grounding", "index": len(events), "model": "m",
                       "messages": [{"role": "user", "content": "plan"}], "output": {"content": answer}})
        events.append({"kind": "code_run", "role": "execution", "index": len(events), "code": f"result = {i}",
                       "stdout": "ok"})
    events.append({"kind": "model_call", "role": "review", "index": len(events), "model": "m",
                   "output": {"content": '{"verdict": "accept", "problem": "wrong_tool", "route": "execution", '
                                         '"feedback": "call the search tool first"}'}})
    events.append({"kind": "review", "role": "review", "index": len(events), "target": "execution",
                   "verdict": "revise", "feedback": "call the search tool first", "route": "grounding",
                   "problem": "wrong_tool", "action": "replan"})
    run = agents_run(tmp_path, events, end={"record": "end", "status": "complete"})
    shots = shots_dir(tmp_path)
    errors: list[str] = []
    with LoopbackServer(create_app(None, reviewer="ana", view=ViewIndex([tmp_path / "runs"]))) as srv:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{srv.url}/view#/traj/{run_slug(run)}/ep1")
        ready(page)
        height = lambda: page.evaluate("document.documentElement.scrollHeight")  # noqa: E731
        calls = page.locator("details.ev[data-kind='model_call']")
        assert calls.count() == 31 and calls.evaluate_all("ds => ds.filter(d => d.open).length") == 0
        assert "line 0 of a long answer" in calls.first.locator("summary.head").inner_text()  # what came back, folded
        folded = height()
        page.screenshot(path=str(shots / "view_trajectory_folded.png"), full_page=True)
        page.click("button.unfold-all")
        unfolded = height()
        assert unfolded > 3 * folded, (folded, unfolded)
        page.click("button.fold-calls")
        assert height() < unfolded / 2 and calls.evaluate_all("ds => ds.filter(d => d.open).length") == 0
        calls.nth(3).locator("summary.head").click()
        assert calls.evaluate_all("ds => ds.filter(d => d.open).length") == 1
        review = page.locator("details.ev[data-kind='review']")
        text = review.inner_text()
        assert "review model wrote: accept" in text and "harness decided: revise" in text
        assert "route: execution" in text and "grounding" in text
        page.screenshot(path=str(shots / "view_trajectory_review.png"), full_page=True)
    assert not errors, errors
