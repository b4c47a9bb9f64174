"""The review page in a real headless Chromium (Playwright): accept one sample, discard one, fix one through
the editor (keyboard included, the rule critic's verdict shown while typing), then export and check the files.
Screenshots go to $TASKBENCH_SCREENSHOTS when set (to look at them), else to the test's tmp dir."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from browser_helpers import CHROMIUM, chromium
from review_fixture import LoopbackServer, make_review_dir, records
from taskbench.cli.main import main
from taskbench.report.review.app import create_app
from taskbench.report.review.session import ReviewSession

TOKEN = "browser-test-token"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture
def browser():
    with chromium() as b:
        yield b


def shots_dir(tmp_path: Path) -> Path:
    out = Path(os.environ.get("TASKBENCH_SCREENSHOTS") or tmp_path / "shots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def current(page) -> str:  # noqa: ANN001
    return page.get_attribute("body", "data-sample")


def wait_decisions(page, n: int) -> None:  # noqa: ANN001
    page.wait_for_selector(f"body[data-decisions='{n}']", timeout=20000)


def test_accept_discard_fix_and_export_in_chromium(browser, tmp_path: Path, capsys):
    root = make_review_dir(tmp_path / "mm")
    session = ReviewSession(root)
    shots = shots_dir(tmp_path)
    errors: list[str] = []
    with LoopbackServer(create_app(session, reviewer="ana", token=TOKEN)) as srv:
        page = browser.new_page(viewport={"width": 1440, "height": 950})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        # without the token: 401, and the page says how to get in
        r = page.goto(srv.url + "/")
        assert r is not None and r.status == 401 and "token" in page.inner_text("body")
        errors.clear()
        page.goto(f"{srv.url}/?token={TOKEN}")  # sets the cookie and drops the token from the address
        page.wait_for_selector("body[data-ready='1']", timeout=20000)
        assert page.url.split("#")[0] == srv.url + "/" and "token" not in page.url
        assert "28 of 28 shown" in page.inner_text("#count")
        assert "0 / 28 reviewed by ana" in page.inner_text("#progress-text")
        page.screenshot(path=str(shots / "review_view.png"))

        # filters: mode and critic verdict
        page.select_option("#f-mode", "dag")
        assert page.locator("#list li").count() == sum(i.sample.type == "dag" for i in session.items.values())
        page.select_option("#f-mode", "all")
        page.select_option("#f-verdict", "llm-failed")
        assert page.locator("#list li").count() == 4
        page.select_option("#f-verdict", "all")

        # accept one with the keyboard
        first = current(page)
        page.keyboard.press("c")
        wait_decisions(page, 1)
        page.wait_for_selector(f"body:not([data-sample='{first}'])")
        # discard the next one, with an error category (key 2: impractical instruction)
        second = current(page)
        page.keyboard.press("2")
        page.keyboard.press("d")
        wait_decisions(page, 2)

        # fix a chain: open it from the list, F opens the editor
        chain = next(i for i in session.items.values()
                     if i.sample.type == "chain" and i.sample.n_tools >= 3 and not i.issues and not i.sampled_issues)
        page.select_option("#f-mode", "chain")
        page.click(f"#list li[data-id='{chain.sample.id}']")
        page.wait_for_selector(f"body[data-sample='{chain.sample.id}']")
        page.keyboard.press("f")
        page.wait_for_selector("body[data-editing='1']")
        page.wait_for_selector("body[data-preview='clean']")
        tool0 = chain.sample.task_nodes[0].task
        page.fill("input[data-tool='0']", tool0 + "x")  # a typo: the rule critic says so at once
        page.wait_for_selector("body[data-preview='issues']")
        assert "unknown_tool" in page.inner_text("#e-issues")
        assert page.locator(".node-ed.bad").count() == 1
        page.screenshot(path=str(shots / "review_editor_issue.png"))
        page.click("a[data-fix-tool='0']")  # "did you mean ...?" puts the library's name back
        page.wait_for_selector("body[data-preview='clean']")
        assert page.input_value("input[data-tool='0']") == tool0
        new_arg = "https://example.com/articles/fixed.txt"
        page.fill("input[data-arg='0']", new_arg)
        page.click("#e-request")
        page.keyboard.press("End")
        page.keyboard.type(" Please keep it short.")
        page.wait_for_selector("#e-diff:has-text('Please keep it short')", state="attached")
        page.wait_for_selector("body[data-preview='clean']")
        kinds = page.eval_on_selector_all("#e-kinds input:checked", "els => els.map(e => e.value)")
        assert kinds == ["syntax", "graph"]
        page.screenshot(path=str(shots / "review_editor.png"))
        page.keyboard.press("Control+Enter")
        wait_decisions(page, 3)
        assert page.get_attribute("body", "data-editing") == "0"
        assert "3 / 28 reviewed by ana" in page.inner_text("#progress-text")
        page.select_option("#f-mode", "all")
        page.select_option("#f-status", "fix")
        assert page.locator("#list li").count() == 1
        page.wait_for_selector(f"body[data-sample='{chain.sample.id}'][data-showing='fixed']")
        assert page.inner_text("#request").endswith("Please keep it short.")
        assert new_arg in page.inner_text("#nodes")
        page.screenshot(path=str(shots / "review_after.png"))
        page.click("#toggle-fixed")
        page.wait_for_selector("body[data-showing='original']")
        assert page.inner_text("#request") == chain.sample.user_request
        # help and agreement dialogs open from the keyboard
        page.select_option("#f-status", "all")
        page.click("#request")
        page.keyboard.press("a")
        page.wait_for_selector("#agree[open]")
        assert "ana" in page.inner_text("#agree-body")
    assert errors == []

    log = records(root / "review_log.jsonl")
    assert [(d["id"], d["outcome"]) for d in log] == [(first, "correct"), (second, "discard"), (chain.sample.id, "fix")]
    assert log[1]["reasons"] == ["impractical_instruction"]
    paths = {op["path"] for op in log[2]["diff"]}
    assert {"/user_request", "/task_nodes/0/arguments/0"} <= paths
    assert log[2]["fixes"] == ["syntax", "graph"] and log[2]["issues"] == []

    out = tmp_path / "verified"
    with pytest.raises(SystemExit) as exc:
        main(["review", str(root), "--export", "--out", str(out)])
    assert exc.value.code in (0, None)
    capsys.readouterr()
    data = {r["id"]: r for r in records(out / "data.json")}
    assert set(data) == {first, chain.sample.id}
    assert data[chain.sample.id]["user_request"].endswith(" Please keep it short.")
    assert data[chain.sample.id]["task_nodes"][0]["arguments"] == [new_arg]
    doc = json.loads((out / "human_verification.json").read_text())["table"]["overall"]
    assert (doc["correct"]["n"], doc["discard"]["n"], doc["fixed"]["n"]) == (1, 1, 1)
    assert (doc["fixed_syntax"]["n"], doc["fixed_instruction"]["n"], doc["fixed_graph"]["n"]) == (1, 0, 1)
    assert (out / "alignment_ids.json").is_file() and (out / "human_verification.md").is_file()
    for name in ("review_view.png", "review_editor.png", "review_after.png"):
        assert (shots / name).stat().st_size > 20000


def test_temporal_fix_of_a_parameter_in_chromium(browser, tmp_path: Path):
    root = make_review_dir(tmp_path / "dl", "dailylifeapis")
    session = ReviewSession(root)
    item = next(i for i in session.items.values() if i.sample.type == "single" and not i.issues)
    with LoopbackServer(create_app(session, reviewer="bo")) as srv:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{srv.url}/#{item.sample.id}")
        page.wait_for_selector(f"body[data-sample='{item.sample.id}']", timeout=20000)
        page.keyboard.press("f")
        page.wait_for_selector("body[data-preview='clean']")
        page.fill("input[data-arg-name='0']", "nonexistent")
        page.wait_for_selector("body[data-preview='issues']")
        text = page.inner_text("#e-issues")
        assert "unknown_param" in text and "missing_param" in text
        page.keyboard.press("Escape")  # leaves the editor, nothing saved
        page.wait_for_selector("body[data-editing='0']")
        page.screenshot(path=str(shots_dir(tmp_path) / "review_temporal.png"))
    assert not (root / "review_log.jsonl").exists()
