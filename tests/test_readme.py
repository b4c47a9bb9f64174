"""Every code block of the README, run (issue 45, point 3): a command the README shows must work as written.

The tour runs in order in a scratch directory, with what a test machine can give it:

- every model (``--model``/``-m``, also ``...``) becomes a scripted ``mock/`` model, and ``--base-url`` goes with
  it (the mock needs no server); ``--limit 20`` of the agents becomes ``--limit 2`` (the same command, 6
  episodes instead of 60);
- the files the README assumes (``tools.json``, ``api.json``, ``path/to/dataset``, ``preds/a.jsonl`` ...) are
  made from the bundled data first, and the placeholders of ``graph edit`` (``"A -> B"``) become real links;
- commands that start a server or a browser (``review`` without ``--export``, ``view``, ``serve``), reach the
  internet (``data fetch taskbench``), need a running Ray cluster (``--ray-address auto``) or an MCP server that
  may not be installed are parsed by the real command line (every option must exist and every value convert)
  but not run; ``data fetch restbench`` runs against a loopback copy of RestGPT's raw files.

The other blocks: ``make`` targets must exist in the Makefile, the scripts and test files named must exist and
know the flags given to them.
"""

from __future__ import annotations

import glob
import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run
from conftest import SHARED

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

PARSE_ONLY = {
    ("review",): "opens the review app in a browser (without --export)",
    ("view",): "serves the viewer until stopped",
    ("serve",): "serves a model until stopped",
    ("data", "fetch", "taskbench"): "downloads from the Hugging Face hub",
}
"""Commands checked by parsing only, and why (see the module docstring)."""

MODEL_FLAGS = ("--model", "-m", "--model-grounding", "--model-execution", "--model-review", "--model-react")
PROVIDERS = ("llamacpp/", "openai/", "openai-compatible/")


def code_blocks(text: str) -> list[list[str]]:
    """The README's ```bash blocks, each as its command lines (continuations joined, comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    out = []
    for block in blocks:
        lines: list[str] = []
        pending = ""
        for raw in block.splitlines():
            line = pending + raw.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            words = shlex.split(line, comments=True)
            if words:
                lines.append(shlex.join(words))
        out.append(lines)
    return out


def test_the_readme_has_the_blocks_this_test_knows() -> None:
    blocks = code_blocks(README.read_text())
    assert len(blocks) == 4
    assert sum(1 for b in blocks for line in b if line.startswith("taskbench ")) >= 30


# ------------------------------------------------------------------ the make / development blocks


def _make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9_.-]+):", (ROOT / "Makefile").read_text(), flags=re.M))


def test_make_lines_and_development_commands_exist() -> None:
    blocks = code_blocks(README.read_text())
    targets = _make_targets()
    checked = 0
    for line in [*blocks[0], *blocks[3]]:
        words = shlex.split(line)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value prefixes
            words = words[1:]
        if words[0] == "make":
            assert words[1] in targets, f"README: `{line}`: no make target {words[1]!r}"
        elif words[0] == ".venv/bin/pytest":
            for w in words[1:]:
                if w.endswith(".py"):
                    assert (ROOT / w).is_file(), f"README: `{line}`: no {w}"
        elif words[0] == ".venv/bin/python":
            script = ROOT / words[1]
            assert script.is_file(), f"README: `{line}`: no {words[1]}"
            source = script.read_text()
            for w in words[2:]:
                if w.startswith("--"):
                    assert f'"{w}"' in source, f"README: `{line}`: {words[1]} has no option {w}"
                elif not w[0].isdigit() and "/" not in w and w not in ("DIR", "&&", "PATH/inference.py"):
                    assert f'"{w}"' in source, f"README: `{line}`: {words[1]} has no subcommand or choice {w!r}"
        elif words[0].endswith(".sh"):
            assert (ROOT / words[0]).is_file(), f"README: `{line}`: no {words[0]}"
        else:
            raise AssertionError(f"README: `{line}`: this test does not know how to check it")
        checked += 1
    assert checked >= 15


# ------------------------------------------------------------------ the taskbench commands


def parse_only(args: list[str]) -> None:
    """Parse ``taskbench ARGS`` through the real command tree without running it (options must exist, values
    convert, ``-o -`` be allowed)."""
    import typer.main

    from taskbench.cli.main import _guard_stdout, app

    command: Any = typer.main.get_command(app)
    _guard_stdout(command)
    ctx = command.make_context("taskbench", list(args))
    while hasattr(command, "resolve_command"):
        protected = getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])
        name, command, rest = command.resolve_command(ctx, [*protected, *ctx.args])
        ctx = command.make_context(name, rest, parent=ctx)


def _mocked(words: list[str], counter: list[int]) -> list[str]:
    """``words`` with every model a mock model (``--base-url`` dropped with it) and the agents' limit small."""
    out: list[str] = []
    skip = False
    for i, w in enumerate(words):
        if skip:
            skip = False
            continue
        prev = words[i - 1] if i else ""
        if prev in MODEL_FLAGS and (w.startswith(PROVIDERS) or w == "..."):
            counter[0] += 1
            out.append(f"mock/readme-{counter[0]}")
            continue
        if w == "--base-url":
            skip = True
            continue
        if prev == "--limit" and words[:3] == ["taskbench", "agents", "eval"] and w == "20":
            out.append("2")
            continue
        out.append(w)
    return out


def _why_not_run(words: list[str]) -> str | None:
    args = words[1:]
    for key, why in PARSE_ONLY.items():
        if tuple(args[: len(key)]) == key and not (key == ("review",) and "--export" in args):
            return why
    if "--ray-address" in args:
        return "joins a running Ray cluster"
    if any(w.startswith("mcp:") for w in args) and shutil.which(args[args.index("--env") + 1][4:].split()[0]) is None:
        return "the MCP server it names is not installed"
    if args[:2] == ["sandbox", "run"] and shutil.which("bwrap") is None:
        return "no bwrap here"
    if args[:3] == ["data", "fetch", "restbench"] and not (SHARED / "reference" / "restbench").is_dir():
        return "no ../shared copy of RestBench to serve on loopback"
    return None


def _fixtures(tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The files the README's commands assume, made from the bundled data."""
    from taskbench import bundled

    shutil.copy(bundled.path("multimedia") / "tool_desc.json", tmp / "tools.json")
    shutil.copy(ROOT / "src/taskbench/envs/restbench/data/openapi/tmdb.json", tmp / "api.json")
    (tmp / "path" / "to").mkdir(parents=True)
    shutil.copytree(bundled.path("multimedia"), tmp / "path" / "to" / "dataset")
    shutil.copytree(bundled.path("multimedia"), tmp / "path" / "to" / "data_multimedia")
    # what `taskbench review path/to/dataset --reviewer ana` records in the browser (the part not run here)
    from taskbench.report.review.log import Decision, ReviewLog, record_hash, utc_now

    log = ReviewLog(tmp / "path" / "to" / "dataset" / "review_log.jsonl")
    data = tmp / "path" / "to" / "dataset" / "data.json"
    for line in data.read_text().splitlines()[:5]:
        record = json.loads(line)
        log.append(Decision(id=record["id"], reviewer="ana", time=utc_now(), outcome="correct",
                            base=record_hash(record)))
    for name in ("a", "b"):
        code, _, err = run(capsys, "predict", "-d", "multimedia", "-m", f"mock/{name}", "-o", f"preds/{name}.jsonl",
                           "-q")
        assert code == 0, err
    shutil.copy(tmp / "preds" / "a.jsonl", tmp / "preds" / "gpt-4.json")
    (tmp / "agent.py").write_text("print('hello from the sandbox')\n")
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdb", "--task-set", "own", "--agent",
                       "conagents-auto", "-m", "mock/student", "--limit", "2", "-o", "runs/students", "-q",
                       "--bootstrap", "0")
    assert code == 0, err


def _placeholders(words: list[str], tmp: Path) -> list[str]:
    """``graph edit``'s ``"A -> B"`` / ``"C -> D"``: a link the graph has and one it has not."""
    if words[1:3] != ["graph", "edit"]:
        return words
    graph = json.loads((tmp / words[3]).read_text())
    links = {(link["source"], link["target"]) for link in graph["links"]}
    names = [n["id"] for n in graph["nodes"]]
    have = sorted(links)[0]
    lack = next((a, b) for a in names for b in names if a != b and (a, b) not in links)
    swap = {"A -> B": f"{have[0]} -> {have[1]}", "C -> D": f"{lack[0]} -> {lack[1]}"}
    return [swap.get(w, w) for w in words]


def _globbed(words: list[str]) -> list[str]:
    """What a shell gives the command: a glob expanded (sorted, as bash does)."""
    out: list[str] = []
    for w in words:
        if any(c in w for c in "*?[") and not w.startswith(("mcp:", "-")):
            matched = sorted(glob.glob(w))
            out += matched or [w]
        else:
            out.append(w)
    return out


@pytest.mark.slow
def test_every_taskbench_command_of_the_readme_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TASKBENCH_MODEL", raising=False)
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "80")
    _fixtures(tmp_path, capsys)
    blocks = code_blocks(README.read_text())
    lines = [line for block in blocks[1:3] for line in block if line.startswith("taskbench ")]
    counter = [0]
    ran, parsed = [], []
    host = None
    try:
        for line in lines:
            words = shlex.split(line)
            why = _why_not_run(words)
            if why is not None:
                parse_only(words[1:])
                parsed.append((line, why))
                continue
            words = _globbed(_placeholders(_mocked(words, counter), tmp_path))
            if words[1:3] == ["data", "fetch"] and words[3] == "restbench" and host is None:
                from test_restbench_fetch import RawHost

                host = RawHost().__enter__()
                monkeypatch.setenv("TASKBENCH_RESTBENCH_URL", host.url)
            if words[1:] == ["run"]:  # the default run's embedded model: a mock model in its place
                monkeypatch.setenv("TASKBENCH_MODEL", "mock/readme-run")
            code, out, err = run(capsys, *words[1:])
            monkeypatch.delenv("TASKBENCH_MODEL", raising=False)
            assert code == 0, f"README: `{line}`\n(as run: {shlex.join(words)})\nexit {code}: {err.strip()[-600:]}"
            if words[1:3] == ["generate", "--tools"]:  # the mock model's samples fail the critics: keep them
                code, _, err = run(capsys, "generate", "-o", words[words.index("--output") + 1], "--keep", "none",
                                   "-q")
                assert code == 0, err
            ran.append(line)
    finally:
        if host is not None:
            host.__exit__(None, None, None)
    assert len(ran) >= 20, ran
    assert {why for _, why in parsed} <= set(PARSE_ONLY.values()) | {
        "joins a running Ray cluster", "the MCP server it names is not installed", "no bwrap here",
        "no ../shared copy of RestBench to serve on loopback"}
    # what the tour left behind is what the README says it makes
    assert Path("board.png").is_file() and Path("metrics/qwen.json").is_file() and Path("ref.json").is_file()
    assert not Path("-").exists()


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readme_links_reach_their_pages_and_headings() -> None:
    """A figure lives in one place and the README points there: each link must land."""
    links = re.findall(r"\]\((docs/[\w.-]+\.md)(?:#([\w-]+))?\)", README.read_text())
    assert len(links) >= 15
    for page, anchor in links:
        path = ROOT / page
        assert path.is_file(), f"README links to {page}, which does not exist"
        if anchor:
            headings = {_anchor(h) for h in re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)}
            assert anchor in headings, f"README links to {page}#{anchor}: no such heading"
    assert "docs/predict-and-run.md#how-long-the-main-job-takes" in README.read_text()
    for stale in ("16 minutes", "949 s", "249.8 s", "tmdb-003"):  # the figures and the id of issue 45
        assert stale not in README.read_text(), stale
