"""A dataset directory as `taskbench generate` writes it, made from a bundled dataset, for the review tests.

Every sample gets critic verdicts (the LLM critic fails every 7th), the method, one duplicate flag; one sample's
invocation graph departs from its sampled subgraph; data.json gets one line that is not JSON and one record
that is not a sample (real data is messy: both must be reported, not fatal); data_error.json holds two
rejected samples (one of them malformed) and data_raw.json every attempt.
"""

from __future__ import annotations

import json
from pathlib import Path

from taskbench import bundled
from taskbench.dataset.layout import load_dataset, save_dataset
from taskbench.schema import CriticVerdict


def make_review_dir(root: Path, domain: str = "multimedia") -> Path:
    ds = load_dataset(bundled.path(domain))
    for i, s in enumerate(ds.samples):
        llm_ok = i % 7 != 3
        s.critics = {
            "rule": CriticVerdict(name="rule", passed=True),
            "llm": CriticVerdict(name="llm", passed=llm_ok, model="mock/critic",
                                 reasons=[] if llm_ok else ["Correct: no, a step is missing"]),
        }
        s.method = "back-instruct"
    ds.samples[5].duplicate_of = ds.samples[4].id
    # one sample whose generated graph lost a sampled tool (the rule critic would have flagged it)
    chain = next(s for s in ds.samples if s.type == "chain" and s.n_tools >= 3)
    lost = next(t.id for t in ds.library.tools if t.id not in chain.tool_names)
    chain.sampled_nodes = list(chain.sampled_nodes or []) + [{"task": lost}]
    rejected = ds.samples[-2:]
    ds.samples = ds.samples[:-2]
    for s in rejected:
        s.critics["rule"] = CriticVerdict(name="rule", passed=False, reasons=["sampled_links_mismatch: ..."])
    ds.error_records = [s.to_record() for s in rejected] + [{"id": "bad-1", "task_nodes": "oops"}]
    ds.raw_records = [s.to_record() for s in ds.samples] + ds.error_records
    out = save_dataset(ds, root)
    with (out / "data.json").open("a", encoding="utf-8") as fh:
        fh.write("{this is not json\n")
        fh.write(json.dumps({"id": "broken-2", "task_nodes": 7}) + "\n")
    return out


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class LoopbackServer:
    """A real uvicorn server for an ASGI app on 127.0.0.1 (a free port), in a thread; a context manager."""

    def __init__(self, app) -> None:  # noqa: ANN001
        import socket

        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="off"))
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        import threading
        import time

        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the review server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
