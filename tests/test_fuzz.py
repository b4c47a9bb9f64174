"""Fuzzing the commands a user runs on malformed files: never a traceback, never a hang.

Hypothesis builds hostile JSON (deep nesting just under and far over what Python parses, integers of more
than 4,300 digits, lone surrogate escapes, every JSON type in every field, unhashable ids, broken syntax and
bytes that are not UTF-8) and puts it where users put files: a dataset's ``data.json``, ``user_requests.json``,
``graph_desc.json`` and ``alignment_ids.json``, a predictions file, a tool library. Each case runs the real
command in-process (``data check``, ``evaluate`` strict/compat/both, ``graph build``/``stats``, ``leaderboard``)
and must end with exit code 0, 1 or 2, and with 2 only as one ``taskbench: error:`` line.

Fast and reproducible by default (10 fixed examples per test, a few seconds);
``TASKBENCH_FUZZ_EXAMPLES=500 pytest tests/test_fuzz.py`` searches longer with fresh random examples.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskbench import bundled
from taskbench.cli.main import main

EXAMPLES = int(os.environ.get("TASKBENCH_FUZZ_EXAMPLES", "0")) or None
FUZZ = settings(max_examples=EXAMPLES or 10, deadline=None, derandomize=EXAMPLES is None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Raw(str):
    """JSON text spliced in as it is (json.dumps cannot write these values)."""


HUGE = Raw("9" * 4400)
NEAR_LIMIT = Raw("[" * 900 + "]" * 900)  # parses, then stresses every recursive step after parsing
OVER_LIMIT = Raw("[" * 5000 + "]" * 5000)  # json.loads itself gives up
LONE = "\ud800"

specials = st.sampled_from([HUGE, NEAR_LIMIT, OVER_LIMIT, LONE, f"<node-{'7' * 4400}>", "<node-99>", "<node-0>",
                            "", " ", "\x00", "\u2028", "a.jpg", "<node-1> and <node-0>"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=8))
values = st.recursive(st.one_of(scalars, specials),
                      lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                      max_leaves=6)


def dump(value: Any) -> str:
    """JSON text of ``value``, with :class:`Raw` parts spliced in."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dump(v) for v in value) + "]"
    return json.dumps(value)  # ensure_ascii: a lone surrogate is written as its escape


FIELDS = ["id", "type", "n_tools", "user_request", "instruction", "task_steps", "task_nodes", "task_links",
          "sampled_nodes", "sampled_links", "seed", "tool_nodes"]


@st.composite
def records(draw: st.DrawFn, base: list[dict]) -> dict:
    """A real record with a few fields (or nested parts) replaced by hostile values."""
    rec = json.loads(json.dumps(draw(st.sampled_from(base))))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["field", "drop", "node", "argument", "link", "index_link"]))
        nodes = rec.get("task_nodes") if isinstance(rec.get("task_nodes"), list) else []
        if where == "field":
            rec[draw(st.sampled_from(FIELDS))] = draw(values)
        elif where == "drop" and rec:
            rec.pop(draw(st.sampled_from(sorted(rec))), None)
        elif where == "node" and nodes:
            node = nodes[draw(st.integers(0, len(nodes) - 1))]
            if isinstance(node, dict):
                node[draw(st.sampled_from(["task", "arguments"]))] = draw(values)
        elif where == "argument" and nodes:
            node = nodes[draw(st.integers(0, len(nodes) - 1))]
            if isinstance(node, dict):
                node["arguments"] = [draw(values), *(node.get("arguments") or [])][:3]
        elif where in ("link", "index_link"):
            n = max(len(nodes), 1)
            end = draw(st.integers(-1, n)) if where == "index_link" else draw(values)
            rec["task_links"] = [{"source": end, "target": draw(st.integers(0, n - 1))}]
    return rec


def line_of(rec: dict, broken: str) -> bytes:
    text = dump(rec)
    if broken == "truncated":
        text = text[: len(text) // 2]
    data = text.encode("utf-8", "surrogatepass") if broken != "latin1" else text.encode("utf-8") + b"\xff"
    return data


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> int:
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "Traceback" not in out.out, out.err[-2000:]
    assert code in (0, 1, 2), (code, out.err[-500:])
    if code == 2:
        lines = out.err.strip().splitlines()
        assert lines[-1].startswith("taskbench: error: ") and lines[-1].count("taskbench: error:") == 1, out.err
        assert not any(line.startswith("taskbench: error:") for line in lines[:-1]), out.err
    return code


BASE = [json.loads(line) for line in (bundled.path("huggingface") / "data.json").read_text().splitlines()]
TEMPORAL = [json.loads(line) for line in (bundled.path("dailylifeapis") / "data.json").read_text().splitlines()]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def dataset(scratch: Path, name: str, data: list[bytes]) -> Path:
    root = scratch / "ds"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(bundled.path(name), root)
    (root / "data.json").write_bytes(b"".join(line + b"\n" for line in data))
    return root


@FUZZ
@given(st.lists(st.tuples(st.sampled_from([True, False]), st.sampled_from(["", "", "", "truncated", "latin1"])),
                min_size=1, max_size=4), st.data())
def test_gold_and_predictions_files(scratch, capsys, rows, data) -> None:
    temporal = data.draw(st.booleans())
    base = TEMPORAL if temporal else BASE
    gold, preds = [json.dumps(r).encode() for r in base[:6]], []
    for hostile, broken in rows:
        rec = data.draw(records(base)) if hostile else base[len(gold) % len(base)]
        gold.append(line_of(rec, broken))
        pred = {"id": rec.get("id"), "result": {k: rec.get(k) for k in ("task_steps", "task_nodes", "task_links")}}
        preds.append(line_of(data.draw(st.sampled_from([pred, {"id": rec.get("id"), "result": data.draw(values)}])),
                             data.draw(st.sampled_from(["", "", "truncated"]))))
    root = dataset(scratch, "dailylifeapis" if temporal else "huggingface", gold)
    pfile = scratch / "preds.jsonl"
    pfile.write_bytes(b"".join(line + b"\n" for line in preds))
    assert run(capsys, "data", "check", str(root), "--show", "3") == 0
    for mode in ("--strict", "--compat", "--both"):
        code = run(capsys, "evaluate", "--data", str(root), "-p", str(pfile), mode, "--bootstrap", "20",
                   "-o", str(scratch / "m.json"), "--errors")
        assert code in (0, 2)
        if code == 0:
            assert run(capsys, "leaderboard", str(scratch / "m.json")) == 0


@FUZZ
@given(values, st.sampled_from(["user_requests.json", "graph_desc.json", "alignment_ids.json"]), st.data())
def test_side_files_of_a_dataset(scratch, capsys, value, name, data) -> None:
    root = dataset(scratch, "multimedia", [json.dumps(r).encode() for r in BASE[:3]])
    if name == "user_requests.json":
        text = dump({"id": data.draw(st.one_of(values, st.just(BASE[0]["id"]))), "user_request": value}) + "\n"
    elif name == "graph_desc.json":
        text = dump({"nodes": data.draw(st.one_of(values, st.just([]))), "links": value})
    else:
        text = dump({"node_alignment_id": {"single": value}})
    (root / name).write_bytes(text.encode("utf-8", "surrogatepass"))
    assert run(capsys, "data", "check", str(root)) == 0
    pfile = scratch / "preds.jsonl"
    pfile.write_text(json.dumps({"id": BASE[0]["id"], "result": {"task_nodes": []}}) + "\n")
    run(capsys, "evaluate", "--data", str(root), "-p", str(pfile), "--alignment", "node", "--bootstrap", "0")
    run(capsys, "graph", "stats", str(root))


@st.composite
def tool_documents(draw: st.DrawFn) -> Any:
    good = {"id": "Image Captioner", "desc": "d", "input-type": ["image"], "output-type": ["text"]}
    tools = [dict(good, id=f"T{i}") for i in range(draw(st.integers(0, 3)))]
    for _ in range(draw(st.integers(0, 2))):
        if tools and isinstance(tools[0], dict) and draw(st.booleans()):
            tools[0][draw(st.sampled_from(["id", "desc", "input-type", "output-type", "parameters", "name"]))] = draw(values)
        else:
            tools.append(draw(values))
    shape = draw(st.sampled_from(["nodes", "list", "tools", "openapi", "raw"]))
    if shape == "nodes":
        return {"nodes": tools, **({"dependency": draw(values)} if draw(st.booleans()) else {})}
    if shape == "list":
        return tools
    if shape == "tools":
        return {"tools": [{"name": draw(values), "inputSchema": draw(values)}]}
    if shape == "openapi":
        return {"openapi": "3.0.0", "paths": {"/x": {"get": draw(values)}, draw(st.text(max_size=4)): draw(values)}}
    return draw(values)


@FUZZ
@given(tool_documents(), st.sampled_from(["auto", "taskbench", "openai", "mcp", "openapi"]))
def test_tool_libraries(scratch, capsys, doc, fmt) -> None:
    path = scratch / "tools.json"
    path.write_bytes(dump(doc).encode("utf-8", "surrogatepass"))
    code = run(capsys, "graph", "build", str(path), "--format", fmt, "-o", str(scratch / "g.json"))
    if code == 0:
        assert run(capsys, "graph", "stats", str(scratch / "g.json")) == 0
        assert run(capsys, "sample", str(scratch / "g.json"), "--n", "2") in (0, 2)
