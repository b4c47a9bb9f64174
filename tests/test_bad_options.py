"""Option values that used to end in a traceback (issue 24.9): each is one `taskbench: error:` line, exit 2,
and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import run


@pytest.mark.parametrize("argv", [
    ["predict", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--temperature", "-1"],
    ["predict", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--top-p", "-1"],
    ["predict", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--top-p", "2"],
    ["generate", "--tools", "multimedia", "-m", "mock/echo", "-n", "2", "--mode-weights", "inf,1,1"],
    ["generate", "--tools", "multimedia", "-m", "mock/echo", "-n", "2", "--size-weights", "2=inf"],
    ["generate", "--tools", "multimedia", "-m", "mock/echo", "-n", "2", "--temperature", "-1"],
    ["agents", "eval", "--env", "restbench-tmdb", "-m", "mock/echo", "--agent", ""],
    ["agents", "eval", "--env", "taskbench-multimedia", "--task-set", "own", "-m", "mock/echo", "--agent", "react"],
    ["agents", "eval", "--env", "restbench-tmdb", "-m", "mock/echo", "--agent", "conagents-auto-a9999b9999"],
])
def test_a_bad_option_value_is_one_line_and_exit_2(tmp_path: Path, capsys, argv: list[str]) -> None:
    out = tmp_path / "out"
    code, _, err = run(capsys, *argv, "-o", str(out))
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert code == 2, err
    assert "Traceback" not in err and lines and lines[-1].startswith("taskbench: error:"), err
    assert len(lines) == 1, err
    assert not out.exists() or not any(out.iterdir())


def test_sandbox_run_refuses_a_zero_timeout(capsys, monkeypatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("print(1)\n"))
    code, _, err = run(capsys, "sandbox", "run", "--timeout", "0", "-")
    assert code == 2 and err.strip().startswith("taskbench: error:") and len(err.strip().splitlines()) == 1, err


def test_user_text_that_looks_like_rich_markup_is_printed_as_text(tmp_path: Path, capsys) -> None:
    """Tool names such as `a[/x]b` crashed `graph stats` (rich MarkupError) or were silently restyled."""
    import json

    tools = [{"id": "a[/x]b", "desc": "first", "input-type": ["text"], "output-type": ["text"]},
             {"id": "[bold]B[/bold]", "desc": "second", "input-type": ["text"], "output-type": ["text"]}]
    (tmp_path / "tool_desc.json").write_text(json.dumps({"nodes": tools}))
    (tmp_path / "graph_desc.json").write_text(json.dumps(
        {"nodes": tools, "links": [{"source": "a[/x]b", "target": "[bold]B[/bold]", "type": "text"}]}))
    code, out, err = run(capsys, "graph", "stats", str(tmp_path))
    assert code == 0, err
    assert "a[/x]b" in out and "[bold]B[/bold]" in out
    code, _, err = run(capsys, "graph", "build", str(tmp_path / "tool_desc.json"), "-o", str(tmp_path / "g[/x]"))
    assert code == 0 and "g[/x]" in err, err


def test_an_episode_table_prints_markup_like_names_as_text() -> None:
    from rich.console import Console

    from taskbench.agents.show import run_table

    console = Console(width=200, record=True)
    console.print(run_table([{"agent": "re[/x]act", "task": "[bold]t[/bold]", "seed": 0, "failed": True,
                              "error": "boom [/red]"}]))
    text = console.export_text()
    assert "re[/x]act" in text and "[bold]t[/bold]" in text and "boom [/red]" in text


def test_a_broken_or_binary_template_fails_before_anything_is_written(tmp_path: Path, capsys) -> None:
    (tmp_path / "bin.j2").write_bytes(bytes(range(128, 256)) * 3)
    (tmp_path / "broken.j2").write_text("{% for x in %}\n")
    for name in ("bin.j2", "broken.j2"):
        out = tmp_path / "p.jsonl"
        code, _, err = run(capsys, "predict", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--template",
                           str(tmp_path / name), "-o", str(out))
        assert code == 2 and err.strip().startswith("taskbench: error:") and name in err, err
        assert not out.exists() and not list(tmp_path.glob("*p.jsonl.header.json"))


def test_an_output_that_is_a_directory_is_one_line(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "predict", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "-o", str(tmp_path))
    assert code == 2 and "is a directory" in err and "Traceback" not in err, err


@pytest.mark.parametrize(("data", "ok"), [
    (b"\xff\xfe bad", False),
    (b"\xef\xbb\xbfprint('bom')\n", True),
    (b"# -*- coding: latin-1 -*-\nprint('caf\xe9')\n", True),
])
def test_sandbox_run_reads_code_as_python_does(capsys, monkeypatch, data: bytes, ok: bool) -> None:
    import io

    class Stdin(io.TextIOWrapper):
        pass

    monkeypatch.setattr("sys.stdin", Stdin(io.BytesIO(data)))
    code, out, err = run(capsys, "sandbox", "run", "--unsafe-local", "-")
    if ok:
        assert code == 0, err
    else:
        assert code == 2 and "not text Python can read" in err, (code, err)
