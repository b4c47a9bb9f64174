"""Benchmark: `taskbench review` on a TaskBench-sized dataset (what a reviewer waits for).

Makes a dataset the size of the TaskBench multimedia release (8,904 samples) by repeating the bundled
multimedia samples under new ids (with critic verdicts), then times, in this process:

- loading the session (reading data.json and running the rule critic on every sample);
- the page's index (``/api/index``: every sample's entry) and its JSON size;
- one sample for the page (``detail``: record, critics, both drawings), median over 200 samples;
- one preview of an edit (rule critic + diff + drawings), median over 200;
- one decision (an fsynced, locked append to the log), median over 200;
- the export after 2,000 decisions (resolution, dataset, alignment ids, table);

and with ``--browser`` (Chromium present) the time from opening the page to the first sample shown, and from
a key press to the next sample, on a real loopback server. It prints the load average with the figures.

    .venv/bin/python benchmarks/bench_review.py
    .venv/bin/python benchmarks/bench_review.py -n 2000 --browser
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from taskbench import bundled  # noqa: E402
from taskbench.dataset.layout import load_dataset, save_dataset  # noqa: E402
from taskbench.schema import CriticVerdict  # noqa: E402


def make_dataset(root: Path, n: int) -> Path:
    ds = load_dataset(bundled.path("multimedia"))
    base = list(ds.samples)
    out = []
    for i in range(n):
        s = base[i % len(base)].model_copy(deep=True)
        s.id = f"{10_000_000 + i}"
        s.critics = {"rule": CriticVerdict(name="rule", passed=True),
                     "llm": CriticVerdict(name="llm", passed=i % 9 != 4, model="mock/critic")}
        out.append(s)
    ds.samples = out
    ds.requests = {}
    return save_dataset(ds, root)


def median_ms(times: list[float]) -> float:
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=8904, help="samples (default: 8,904, the multimedia release)")
    ap.add_argument("--browser", action="store_true", help="also time the page in headless Chromium")
    args = ap.parse_args()

    from taskbench.report.review.export import export_review
    from taskbench.report.review.session import ReviewSession

    with tempfile.TemporaryDirectory() as tmp:
        root = make_dataset(Path(tmp) / "mm", args.n)
        t = time.perf_counter()
        session = ReviewSession(root)
        load = time.perf_counter() - t
        t = time.perf_counter()
        index = session.index()
        index_s = time.perf_counter() - t
        size = len(json.dumps(index))
        ids = list(session.items)[:: max(1, len(session.items) // 200)][:200]
        detail, preview, decide = [], [], []
        for sid in ids:
            t = time.perf_counter()
            session.detail(sid, "ana")
            detail.append(time.perf_counter() - t)
            item = session.items[sid]
            edit = {"user_request": item.sample.user_request + " Thanks.",
                    "task_nodes": item.record["task_nodes"], "task_links": item.record["task_links"],
                    "task_steps": item.record["task_steps"]}
            t = time.perf_counter()
            session.preview(sid, edit)
            preview.append(time.perf_counter() - t)
            t = time.perf_counter()
            session.decide(sid, "ana", "correct")
            decide.append(time.perf_counter() - t)
        for sid in list(session.items)[200:2000]:
            session.decide(sid, "bo" if int(sid) % 2 else "ana", "discard" if int(sid) % 5 == 0 else "correct")
        t = time.perf_counter()
        report = export_review(session, Path(tmp) / "verified")
        export_s = time.perf_counter() - t
        print(f"samples: {len(session.items)}; load average {os.getloadavg()[0]:.2f} (2 cores)")
        print(f"  load the session (read + rule critic on every sample): {load:.2f} s")
        print(f"  index for the page: {index_s * 1000:.0f} ms, {size / 1e6:.2f} MB of JSON")
        print(f"  one sample (record, critics, drawings): median {median_ms(detail):.1f} ms")
        print(f"  preview of an edit (rule critic, diff, drawings): median {median_ms(preview):.1f} ms")
        print(f"  one decision (locked, fsynced append): median {median_ms(decide):.1f} ms")
        print(f"  export after {sum(v for k, v in report.counts.items() if k != 'unreviewed')} decisions: "
              f"{export_s:.2f} s ({report.exported} samples written)")
        if args.browser:
            browser_times(session)


def browser_times(session) -> None:  # noqa: ANN001
    sys.path.insert(0, str(ROOT / "tests"))
    from playwright.sync_api import sync_playwright

    from review_fixture import LoopbackServer
    from taskbench.report.review.app import create_app

    with LoopbackServer(create_app(session, reviewer="cy")) as srv, sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium",
                              args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = b.new_page(viewport={"width": 1440, "height": 950})
        t = time.perf_counter()
        page.goto(srv.url + "/")
        page.wait_for_selector("body[data-ready='1']", timeout=120000)
        first = time.perf_counter() - t
        steps = []
        for _ in range(20):
            cur = page.get_attribute("body", "data-sample")
            t = time.perf_counter()
            page.keyboard.press("j")
            page.wait_for_selector(f"body:not([data-sample='{cur}'])")
            steps.append(time.perf_counter() - t)
        b.close()
    print(f"  browser: page to first sample {first:.2f} s; next sample (J) median {median_ms(steps):.0f} ms")


if __name__ == "__main__":
    main()
