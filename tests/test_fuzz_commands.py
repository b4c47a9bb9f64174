"""A seeded, time-bounded fuzz test per command and for `serve` (issue 24.9).

Per command: a few cases of benchmarks/fuzz_cli.py's mutations (a real bundled dataset, predictions and a
metrics file, one file mutated: hostile JSON values, deep nesting, huge integers, lone surrogates, truncation,
flipped bytes, BOMs, binary), run in-process. Every case must end accepted (exit 0), with failed calls counted
(exit 1 without a traceback), or with one clean error (exit 2, the last stderr line `taskbench: error: ...`);
never an exception out of the command, a traceback, a hang, a temporary file or an unreadable JSON output. The
seed is fixed, so a failure is reproducible: `python benchmarks/fuzz_cli.py --only CMD --seed S` explores more.

`serve`: the real `taskbench serve` on loopback with the mock model gets seeded malformed requests; every
answer must be an OpenAI-shaped error (4xx) or a 200 for a valid request, and the server keeps serving.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from taskbench import bundled

ROOT = Path(__file__).resolve().parent.parent
CASES = int(os.environ.get("TASKBENCH_FUZZ_CASES", "12"))
"""Cases per command (TASKBENCH_FUZZ_CASES to change it)."""
CASE_SECONDS = 60.0
"""A case over this long is a hang (in-process it cannot be killed; the module's timeout is the backstop)."""


def _driver() -> Any:
    spec = importlib.util.spec_from_file_location("fuzz_cli", ROOT / "benchmarks" / "fuzz_cli.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FUZZ = _driver()
COMMANDS = sorted(FUZZ._commands())


def _invoke(capsys: Any, argv: list[str]) -> tuple[str, int | None, str]:
    from taskbench.cli.main import main

    capsys.readouterr()
    try:
        main(list(argv))
        code: int | None = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - anything out of the command is the finding
        _, err = capsys.readouterr()
        return "exception", None, f"{err}{type(exc).__name__}: {exc}"
    _, err = capsys.readouterr()
    if "Traceback (most recent call last)" in err:
        return "traceback", code, err
    if code not in (0, 1, 2):
        return "bad-exit", code, err
    if code == 2:
        lines = [x for x in err.strip().splitlines() if x.strip()]
        if not lines or not lines[-1].startswith("taskbench: error: "):
            return "messy-error", code, err
    return "ok", code, err


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A predictions file and a metrics file made once with the mock model."""
    work = tmp_path_factory.mktemp("fuzz-seed")
    preds, metrics = work / "preds.jsonl", work / "metrics.json"
    src = str(bundled.path("multimedia"))
    mp = pytest.MonkeyPatch()
    mp.setenv("TASKBENCH_CACHE", str(work / "cache"))
    try:
        from taskbench.cli.main import main

        for argv in (["predict", "-d", src, "-m", "mock/echo", "--limit", "6", "-o", str(preds), "-q"],
                     ["evaluate", "-d", src, "-p", str(preds), "--bootstrap", "0", "-o", str(metrics)]):
            try:
                main(argv)
            except SystemExit as exc:
                assert exc.code in (0, None), argv
    finally:
        mp.undo()
    return {"predictions": preds, "metrics": metrics}


def _stamps(d: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in d.rglob("*") if p.is_file()}


def _written_badly(d: Path, before: dict[Path, tuple[int, int]]) -> list[str]:
    """Files the command wrote or rewrote inside the dataset directory (data judge writes there) that are
    temporary or do not parse; the mutated input itself, left as it was, is not the command's doing."""
    out = []
    for p, stamp in _stamps(d).items():
        if before.get(p) == stamp:
            continue
        if p.name.startswith(".") and p.name.endswith(".tmp"):
            out.append(f"temporary file left: {p}")
        elif p.suffix in (".json", ".jsonl") and stamp[1] and (why := FUZZ._unreadable(p)):
            out.append(f"unreadable output {p}: {why}")
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_mutated_input_is_accepted_or_one_clean_error(command: str, seeds: dict[str, Path],
                                                            tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "100")
    seed = zlib.crc32(command.encode())  # fixed per command, independent of which commands run
    rng = random.Random(seed)
    case_of = FUZZ._commands()[command]
    src = bundled.path(rng.choice(["multimedia", "huggingface"]))
    findings = []
    for n in range(CASES):
        case = tmp_path / f"case{n}"
        d, o = case / "ds", case / "out"
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("__pycache__", "*.py", "README*"))
        o.mkdir(parents=True)
        others = {k: case / v.name for k, v in seeds.items()}
        for k, v in seeds.items():
            shutil.copy(v, others[k])
        argv, target = case_of(d, o, others)
        if target is None:
            target = d / rng.choice([f for f in FUZZ.DATASET_FILES if (d / f).exists()])
        target.write_bytes(FUZZ.mutate_text(target.read_text(encoding="utf-8"), target.name, rng))
        before = _stamps(d)
        start = time.monotonic()
        outcome, code, err = _invoke(capsys, argv)
        took = time.monotonic() - start
        if outcome == "ok" and took > CASE_SECONDS:
            outcome = "hang"
        half = FUZZ.check_outputs(o) + _written_badly(d, before)
        if outcome == "ok" and half:
            outcome = "half-write"
        if outcome != "ok":
            findings.append(f"case {n} (seed {seed}, {target.name}): {outcome} exit {code}: "
                            f"{err.strip()[-600:]} {half[:2]}")
        shutil.rmtree(case, ignore_errors=True)
    assert not findings, "\n".join(findings)


# ------------------------------------------------------------------------------------------------------ serve


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


TOOL = {"type": "function", "function": {"name": "caption", "description": "Caption an image.",
                                         "parameters": {"type": "object", "properties": {"image": {"type": "string"}},
                                                        "required": ["image"]}}}
GOOD = {"model": "served", "messages": [{"role": "user", "content": "caption a.png"}], "max_tokens": 32}
HOSTILE: list[Any] = [None, True, -1, 0, 1e40, float("nan"), float("inf"), 2**70, "", "\ud800", "x" * 5000, [],
                      {}, [[]], {"": None}, "objekt", {"type": "objekt"}, [{"id": 1}], "required", "none",
                      {"type": "function"}, [None], [TOOL, TOOL], {"a": {"b": {"c": [1, {"d": None}]}}}]
KEYS = ["model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stream", "tools",
        "tool_choice", "response_format", "guided_json", "stop", "seed", "logprobs", "user"]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutated(rng: random.Random) -> tuple[str, bytes]:
    """(path, body) of one malformed request."""
    roll = rng.random()
    if roll < 0.08:
        return "/v1/chat/completions", rng.choice([b"", b"{", b"[]", b"null", b"\xff\xfe", b'{"messages": "x"}',
                                                   b"[" * 5000 + b"]" * 5000, b'{"max_tokens": ' + b"9" * 5000 + b"}"])
    if roll < 0.12:
        return rng.choice(["/v1/nope", "/v1/chat", "/../etc/passwd", "/v1/completions"]), json.dumps(GOOD).encode()
    doc: Any = copy.deepcopy(GOOD)
    if rng.random() < 0.4:
        doc["tools"] = [copy.deepcopy(TOOL)]
    if rng.random() < 0.3:
        doc["stream"] = True
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            doc[rng.choice(KEYS)] = rng.choice(HOSTILE)
        else:
            path = rng.choice(_paths(doc)[1:])
            parent = doc
            for part in path[:-1]:
                parent = parent[part]
            if isinstance(parent, dict) and rng.random() < 0.3:
                del parent[path[-1]]
            else:
                parent[path[-1]] = rng.choice(HOSTILE)
    if rng.random() < 0.05:
        deep: Any = {"type": "string"}
        for _ in range(300):
            deep = {"type": "object", "properties": {"a": deep}}
        doc["tools"] = [{"type": "function", "function": {"name": "deep", "parameters": deep}}]
    text = json.dumps(doc, allow_nan=True)
    return "/v1/chat/completions", text.encode("utf-8", "surrogatepass")


def _shaped_error(status: int, body: bytes) -> str | None:
    """Why an error answer is not OpenAI-shaped, or None."""
    try:
        err = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return f"{status} not an OpenAI error object: {body[:300]!r}"
    if not isinstance(err, dict) or not {"message", "type", "param", "code"} <= set(err) or not err["message"]:
        return f"{status} error without message/type/param/code: {body[:300]!r}"
    return None


def test_serve_answers_seeded_malformed_requests_openai_shaped_and_keeps_serving(tmp_path: Path) -> None:
    import http.client

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskbench", "serve", "--model", "mock/echo", "--served-name", "served",
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "TASKBENCH_CACHE": str(tmp_path / "c")},
    )

    def ask(path: str, body: bytes, method: str = "POST") -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            try:
                return resp.status, resp.read()
            except http.client.IncompleteRead as exc:  # a stream cut off mid-answer
                return -1, b"cut off after: " + exc.partial
        finally:
            conn.close()

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if ask("/health", b"", "GET")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"taskbench serve did not start: {proc.communicate()[1][-2000:]}")
            time.sleep(0.2)
        rng = random.Random(24)
        findings = []
        statuses: dict[int, int] = {}
        for n in range(120):
            path, body = _mutated(rng)
            status, answer = ask(path, body)
            statuses[status] = statuses.get(status, 0) + 1
            if status == 200:
                if b'"error"' in answer[:200] and b"data:" not in answer[:10]:
                    findings.append(f"#{n} 200 carrying an error: {answer[:300]!r} for {body[:300]!r}")
                continue
            if not 400 <= status < 500:
                findings.append(f"#{n} status {status}: {answer[:300]!r} for {body[:300]!r}")
                continue
            why = _shaped_error(status, answer)
            if why:
                findings.append(f"#{n} {why} for {body[:300]!r}")
            if n % 10 == 0:  # still serving
                ok, good = ask("/v1/chat/completions", json.dumps(GOOD).encode())
                if ok != 200:
                    findings.append(f"#{n} a good request after it got {ok}: {good[:300]!r}")
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert not findings, "\n".join(findings)
        assert statuses.get(200, 0) and sum(v for k, v in statuses.items() if 400 <= k < 500) > 40, statuses
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err[-3000:]
