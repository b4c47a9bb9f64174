"""`taskbench doctor`: what this machine has and what taskbench can use (see :mod:`taskbench.run.doctor`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "info": "-   "}


def doctor_command(
    runs: list[Path] = typer.Argument(None, help="Run directories (or folders of them) to check; default: ./runs.",
                                      show_default=False),
    decode: bool = typer.Option(False, "--decode", help="Also load a model and decode a token with llama.cpp, in "
                                "a child process (a build this CPU cannot run is reported, not crashed on)."),
    model: str = typer.Option(None, "--model", "-m", help="GGUF alias or path for --decode (default: the "
                              "embedded default model if installed, else the tiny test model).",
                              show_default=False),
    as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only warnings and failures."),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="Skip the sandbox check."),
) -> None:
    """Check the machine: CPU features, the llama.cpp build (compiled-in features, a scan of its library for
    instructions beyond the x86-64-v3 baseline, and with --decode one real decode in a child process), the code
    sandbox, optional extras, outside tools, and earlier runs (one that died says how and where).

    Exit code 0 when nothing fails, 1 when a check fails (e.g. llama.cpp would die of SIGILL here).

    Examples:

        taskbench doctor --decode
        taskbench doctor runs/default
    """
    from ..run.doctor import diagnose, failed

    checks = diagnose(decode=decode, model=model, runs=[str(p) for p in runs] if runs else ["runs"],
                      sandbox=not no_sandbox)
    bad = failed(checks)
    if as_json:
        typer.echo(json.dumps([{"section": c.section, "name": c.name, "level": c.level, "text": c.text,
                                "data": c.data} for c in checks], indent=2, default=str))
    else:
        section = None
        for c in checks:
            if quiet and c.level not in ("warn", "fail"):
                continue
            if c.section != section and not quiet:
                typer.echo(f"{c.section}:")
                section = c.section
            typer.echo(f"  {_MARK[c.level]} {c.name}: {c.text}" if not quiet else f"taskbench doctor: "
                       f"{c.level}: {c.name}: {c.text}", err=quiet)
    if bad:
        if not as_json:
            typer.echo(f"taskbench doctor: {len(bad)} check(s) failed: " + "; ".join(c.text for c in bad)[:2000],
                       err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `doctor` to the CLI."""
    app.command("doctor")(doctor_command)
