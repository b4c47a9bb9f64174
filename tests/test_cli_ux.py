"""Issue 22's errors that must send the user the right way, and flags and help that agree across commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import run


def test_misspelled_local_model_is_one_did_you_mean_line_before_any_output(tmp_path: Path, capsys) -> None:
    out = tmp_path / "preds.jsonl"
    code, stdout, err = run(capsys, "predict", "-m", "llamacpp/qwen2.5-coder-05b", "-d", "multimedia",
                            "--limit", "2", "-o", str(out))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("taskbench: error: ")
    assert "did you mean 'qwen2.5-coder-0.5b'?" in err
    assert "0/2" not in stdout + err  # no progress bar was drawn
    assert not out.exists()  # and no empty predictions file left behind


def test_misspelled_local_model_in_run_leaves_no_run_directory_content(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code, _, err = run(capsys, "run", "-m", "llamacpp/qwen2.5-coder-05b", "-d", "multimedia", "--limit", "1",
                       "--generate", "0", "--agents", "", "-o", str(out))
    assert code == 2 and "did you mean 'qwen2.5-coder-0.5b'?" in err
    assert not (out / "predictions").exists() or not any((out / "predictions").iterdir())


def _closed_port() -> int:
    import socket

    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("transport", ["native", "aiohttp", "httpx"])
def test_dead_base_url_says_nothing_is_listening_after_the_first_refusal(tmp_path: Path, capsys, transport) -> None:
    import time

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    start = time.monotonic()
    code, _, err = run(capsys, "predict", "-m", "openai-compatible/x", "--base-url", url, "-O",
                       f"transport={transport}", "-d", "multimedia", "--limit", "3", "-o", str(tmp_path / "p.jsonl"))
    assert time.monotonic() - start < 5
    assert code == 2, err
    assert "attempt 2" not in err and "retrying" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("taskbench: error: ") and "nothing is listening" in last and "--base-url" in last
    assert url in last


def _commands() -> dict[str, object]:
    import typer.main

    from taskbench.cli.main import app

    out: dict[str, object] = {}

    def walk(cmd: object, path: str) -> None:
        if getattr(cmd, "params", None) is not None and not getattr(cmd, "commands", None):
            out[path] = cmd
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    return out


def test_one_meaning_per_flag_across_commands() -> None:
    """Issue 22: -s is the seed, -t the task, -p the predictions, -c the concurrency wherever they exist;
    --seed is a seed (agents eval's count of seeds was --seeds), --output always a path (sandbox run's byte
    count was --output)."""
    shorts: dict[str, set[str]] = {}
    for path, cmd in _commands().items():
        visible = [p for p in cmd.params if not getattr(p, "hidden", False)]  # type: ignore[attr-defined]
        longs = {o for p in visible for o in p.opts if o.startswith("--")}
        for p in visible:
            for opt in p.opts:
                if opt.startswith("-") and not opt.startswith("--"):
                    shorts.setdefault(opt, set()).add(next(o for o in p.opts if o.startswith("--")))
            if "--concurrency" in p.opts:
                assert "-c" in p.opts, f"{path}: --concurrency without -c"
            if "--seed" in p.opts:
                assert "-s" in p.opts, f"{path}: --seed without -s"
        assert "--seeds" not in longs, path
        if "--output" in longs:
            out = next(p for p in visible if "--output" in p.opts)
            kind = out.bare_type()  # type: ignore[attr-defined]
            assert kind in ("Path", "str"), f"{path}: --output is a {kind}"
    for flag, names in shorts.items():
        assert len(names) == 1, f"{flag} means {sorted(names)}"
    assert shorts["-s"] == {"--seed"} and shorts["-t"] == {"--task"} and shorts["-p"] == {"--predictions"}


@pytest.mark.parametrize("argv", [
    ["sandbox", "run", "-", "--output", "1000", "--help"],
    ["agents", "eval", "--seeds", "2", "--help"],
])
def test_old_spellings_still_parse(capsys, argv) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 0, err


@pytest.mark.parametrize("columns", [80, 100])
def test_help_has_no_type_column_waste_and_run_help_is_short_at_80_columns(capsys, monkeypatch, columns) -> None:
    """Issue 22: `--version <bool>` and `<list[str]>` type columns wasted the width, and `run --help` was 291
    lines at 80 columns."""
    monkeypatch.setenv("COLUMNS", str(columns))
    for argv in (["--help"], ["run", "--help"], ["predict", "--help"], ["evaluate", "--help"],
                 ["agents", "eval", "--help"], ["leaderboard", "--help"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0
        assert "<bool>" not in out and "<list[" not in out and "<str>" not in out, argv
        assert max(len(line) for line in out.splitlines()) <= columns
        if argv == ["run", "--help"] and columns == 80:
            assert len(out.splitlines()) < 200, len(out.splitlines())


def test_progress_eta_is_time_per_item_so_far_and_grows_while_stuck() -> None:
    """Issue 22: the agents bar said 0:00:03 left while stuck at 4/8 (rich's estimate keeps the speed of the
    last burst until the next update). The time left is the time per item of this run so far times the items
    left, so it grows while nothing finishes, and items done by an earlier run do not count as speed."""
    import io

    from rich.console import Console

    from taskbench.predict.progress import RichPredictDisplay

    now = [0.0]
    disp = RichPredictDisplay(console=Console(file=io.StringIO(), get_time=lambda: now[0], width=200))
    disp.start("agents", 10, 2)  # 2 episodes done by an earlier run
    for i in range(4):
        now[0] = float(i + 1)
        disp.advance({"id": str(i)}, failed=False)
    task = disp._progress.tasks[0]
    eta = disp._progress.columns[4]

    def left() -> str:
        return eta.render(task).plain  # type: ignore[union-attr]

    assert left() == "0:00:04"  # 4 s for 4 episodes, 4 left
    now[0] = 60.0
    assert left() == "0:01:00"  # stuck: 15 s an episode so far, 4 left
    disp.close()
