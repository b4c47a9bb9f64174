"""Human evaluation that is blind (issue 42, point 7), attacked from outside, over the API and in a real
browser: an item id must not be reversible by hashing guesses of agent/task/seed, nor its place in the order
reproducible from a copy of the run; what the page shows of an event beyond its content (role names, labels)
must not tell the agent family; and no per-agent figure may reach a rater before the ratings are exported
(``taskbench agents ratings RUN`` then writes them, with which item was which agent)."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from pathlib import Path

import pytest

from browser_helpers import chromium, needs_chromium
from review_fixture import LoopbackServer, make_review_dir
from taskbench.agents.baselines import ROLES_OF
from taskbench.agents.config import ROLES
from taskbench.dataset.trajectories import TrajectoryWriter
from taskbench.report.review.human_eval import HumanEval
from taskbench.schema import (
    AssistantMessage,
    CheckResult,
    CodeRunEvent,
    FinalAnswerEvent,
    ModelCallEvent,
    ReviewEvent,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    Trajectory,
)

# the role names each family writes into its trajectories (ConAgents', and the baselines')
FAMILY_ROLES: dict[str, tuple[str, ...]] = {"conagents-auto": ROLES, "conagents-adaptive": ROLES,
                                            **{f"{k}": v for k, v in ROLES_OF.items()}}
AGENTS = tuple(FAMILY_ROLES)
TASKS = tuple(f"t{i}" for i in range(4))
EVERY_ROLE = sorted({r for roles in FAMILY_ROLES.values() for r in roles})
CONTENT = {"text", "calls", "arguments", "code", "tools", "result", "stdout", "feedback", "answer", "error",
           "name"}
"""Fields of an event view that are what the agent did (the rater needs them); everything else is a label."""


def make_run(root: Path, agents: tuple[str, ...] = AGENTS, tasks: tuple[str, ...] = TASKS) -> Path:
    """One trajectory per (agent, task) that differ only in their role names: three model calls with the
    family's roles in turn, a tool call, a code run, a review and the answer, the same texts for all."""
    root.mkdir(parents=True)
    lines = []
    for agent in agents:
        roles = FAMILY_ROLES[agent]
        for task in tasks:
            rel = f"trajectories/{agent}/{task}__s0.jsonl"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            traj = Trajectory(id=task, task=f"Task {task}: who directed Heat?", agent=agent, seed=0)
            w = TrajectoryWriter(root / rel, traj)
            for k in range(3):
                w.add(ModelCallEvent(role=roles[k % len(roles)], output=AssistantMessage(content=f"step {k}")))
            w.add(ToolCallEvent(role=roles[0], call=ToolCall(id="c1", name="search", arguments={"q": "Heat"}),
                                result=ToolResult(call_id="c1", name="search", content={"director": "Michael Mann"})))
            w.add(CodeRunEvent(role=roles[-1], code="result = 1", result=1, tool_calls=["search"]))
            w.add(ReviewEvent(role=roles[-1], target="execution", verdict="revise", feedback="look again",
                              route="grounding", problem="wrong_result", action="replan"))
            w.add(FinalAnswerEvent(role=roles[-1], answer="Michael Mann"))
            traj.answer = "Michael Mann"
            traj.outcome = CheckResult(success=True)
            w.finish("complete")
            lines.append({"id": f"{agent}/{task}/s0", "agent": agent, "task": task, "seed": 0, "trajectory": rel,
                          "success": True})
    (root / "episodes.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


# ------------------------------------------------------------------------------------------------ the attacks


KEY_FORMATS = ("{a}/{t}/s{s}", "{a}/{t}/{s}", "{a}:{t}:{s}", "{a}|{t}|{s}", "{t}/{a}/s{s}", "{a}{t}{s}",
               "{a}/{t}", "{a}__{t}__s{s}", "trajectories/{a}/{t}__s{s}.jsonl")
HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s", "sha3_256")


def reverse_ids(ids: list[str], agents=AGENTS, tasks=TASKS, seeds=(0, 1, 2)) -> dict[str, str]:  # noqa: ANN001
    """Item id -> the guess whose hash it is (a prefix or substring of any common hash of any common key)."""
    found: dict[str, str] = {}
    wanted = [i.lower() for i in ids]
    for a, t, s, fmt, h in itertools.product(agents, tasks, seeds, KEY_FORMATS, HASHES):
        key = fmt.format(a=a, t=t, s=s)
        digest = hashlib.new(h, key.encode()).hexdigest()
        for i in wanted:
            if len(i) >= 6 and i in digest:
                found[i] = key
    return found


def label_signature(view: dict) -> tuple:
    """What an item's view shows beyond content: every event field that is not what the agent did."""
    return tuple(tuple(sorted((k, str(v)) for k, v in e.items() if k not in CONTENT)) for e in view["events"])


def identified(views: dict[str, dict], agent_of: dict[str, str]) -> dict[str, set[str]]:
    """Label signature -> the agents it was seen with; a signature seen with one agent names it."""
    seen: dict[tuple, set[str]] = {}
    for item_id, view in views.items():
        seen.setdefault(label_signature(view), set()).add(agent_of[item_id])
    return {str(sig)[:80]: agents for sig, agents in seen.items() if len(agents) == 1}


def agents_named(text: str) -> list[str]:
    """The agent names in ``text`` (``code`` aside: the word labels every program the page shows)."""
    return [a for a in AGENTS if a != "code" and a in text]


# ------------------------------------------------------------------------------------------------ API


def test_ids_cannot_be_reversed_and_are_stable_for_the_run(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    store = HumanEval(run)
    assert len(store.order) == len(AGENTS) * len(TASKS)
    assert reverse_ids(store.order) == {}  # no id is a hash of agent/task/seed
    assert HumanEval(run).order == store.order  # the same run: the same ids (ratings stay attached)
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("human_eval*"))
    other = HumanEval(copy)
    assert set(other.order).isdisjoint(store.order)  # a copy without the run's key: other ids


def test_order_cannot_be_reproduced_from_a_copy_of_the_run(tmp_path: Path) -> None:
    """An attacker who knows the agents, the tasks and the seed of the shuffle builds the same run and reads
    which agent sits at each position."""
    mine = HumanEval(make_run(tmp_path / "run"))
    theirs = HumanEval(make_run(tmp_path / "theirs"))  # the same episodes, built again
    by_pos = [mine.items[i].agent for i in mine.order]
    guess = [theirs.items[i].agent for i in theirs.order]
    assert by_pos != guess
    hits = sum(a == b for a, b in zip(by_pos, guess, strict=True))
    assert hits < len(by_pos) // 2  # chance is 1 in 9 per position


def test_views_show_no_role_that_names_the_family(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    store = HumanEval(run)
    views = {i: store.view(i) for i in store.order}
    agent_of = {i: store.items[i].agent for i in store.order}
    assert identified(views, agent_of) == {}
    for view in views.values():
        labels = [str(v) for e in view["events"] for k, v in e.items() if k not in CONTENT]
        assert not set(labels) & set(EVERY_ROLE), labels
        assert agents_named(json.dumps(view)) == []


def test_summary_names_no_agent_until_the_ratings_are_exported(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from taskbench.report.review.app import create_app
    from taskbench.report.review.session import ReviewSession

    run = make_run(tmp_path / "run")
    store = HumanEval(run)
    app = create_app(ReviewSession(make_review_dir(tmp_path / "mm")), reviewer="ana", token="tok", human_eval=store)
    client = TestClient(app)
    h = {"Authorization": "Bearer tok"}
    first = client.get("/api/human/items?reviewer=ana", headers=h).json()["items"][0]["id"]
    assert client.post("/api/human/rate", headers=h, json={"id": first, "reviewer": "ana", "executability": 3,
                                                           "utility": 2}).status_code == 200
    summary = client.get("/api/human/summary", headers=h)
    assert summary.status_code == 200 and summary.json()["rated_items"] == 1
    assert agents_named(summary.text) == []  # one rating: the summary must not say whose it was
    for path in ("/api/human/items?reviewer=ana", f"/api/human/item/{first}"):
        assert agents_named(client.get(path, headers=h).text) == []
    # after the session: the export has the per-agent means and which item was which agent
    doc = store.export()
    assert (run / "human_eval.json").is_file()
    agent = store.items[first].agent
    assert doc["per_agent"][agent]["executability"] == 3.0 and doc["per_agent"][agent]["items"] == 1
    assert doc["items"][first] == {"agent": agent, "task": store.items[first].task, "seed": 0,
                                   "trajectory": store.items[first].path}
    assert json.loads((run / "human_eval.json").read_text())["per_agent"] == doc["per_agent"]


def test_ratings_command_exports_per_agent_results(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from taskbench.cli.main import main

    run = make_run(tmp_path / "run", agents=("react", "dfsdt"), tasks=("t0", "t1"))
    store = HumanEval(run)
    for item_id in store.order:
        score = 3 if store.items[item_id].agent == "react" else 1
        store.rate(item_id, "ana", score, score)
        store.rate(item_id, "ben", score, score)
    with pytest.raises(SystemExit) as exc:
        main(["agents", "ratings", str(run)])
    assert exc.value.code in (0, None)
    out = capsys.readouterr().out
    assert "react" in out and "dfsdt" in out and "human_eval.json" in out
    doc = json.loads((run / "human_eval.json").read_text())
    assert doc["per_agent"]["react"]["utility"] == 3.0 and doc["per_agent"]["dfsdt"]["utility"] == 1.0
    assert doc["agreement"]["executability"]["fleiss_kappa"] == 1.0


# ------------------------------------------------------------------------------------------------ browser


@pytest.mark.slow
@needs_chromium
def test_blind_in_chromium(tmp_path: Path) -> None:
    """The three attacks through the page a rater has: ids read from the page and hashed, the agent read from
    what the page says of each event, the summary read after one rating made on the page."""
    from taskbench.report.review.app import create_app
    from taskbench.report.review.session import ReviewSession

    run = make_run(tmp_path / "run", agents=("react", "conagents-auto", "restgpt", "alpha-umi"), tasks=("t0", "t1"))
    store = HumanEval(run)
    app = create_app(ReviewSession(make_review_dir(tmp_path / "mm")), reviewer="ana", token="tok", human_eval=store)
    errors: list[str] = []
    with LoopbackServer(app) as srv, chromium() as browser:
        page = browser.new_page()
        page.set_default_timeout(60000)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{srv.url}/human?token=tok")
        seen_ids: list[str] = []
        heads: dict[str, tuple[str, ...]] = {}
        for _ in range(len(store.order)):
            page.wait_for_selector("#events .event")
            item = page.get_attribute("body", "data-item")
            assert item is not None and item not in seen_ids
            page.wait_for_selector(f"body[data-item='{item}'] #events .event")
            seen_ids.append(item)
            heads[item] = tuple(page.locator("#events .event .head").all_inner_texts())
            text = page.inner_text("body")
            for role in EVERY_ROLE:
                assert role not in heads[item], (role, heads[item])
            assert agents_named(text) == []
            page.click("#next")
            page.wait_for_selector(f"body:not([data-item='{item}'])")
        assert sorted(seen_ids) == sorted(store.order)
        assert reverse_ids(seen_ids) == {}
        by_heads: dict[tuple[str, ...], set[str]] = {}
        for item, h in heads.items():
            by_heads.setdefault(h, set()).add(store.items[item].agent)
        assert all(len(agents) > 1 for agents in by_heads.values()), by_heads
        # one rating on the page, then the summary as the rater's browser gets it
        page.check("#executability-3")
        page.check("#utility-2")
        page.click("#save")
        page.wait_for_selector("body[data-rated='1']")
        response = page.goto(f"{srv.url}/api/human/summary")
        assert response is not None and response.status == 200
        body = page.inner_text("body")
        assert '"rated_items": 1' in body.replace('":1', '": 1') and agents_named(body) == []
    assert errors == []
