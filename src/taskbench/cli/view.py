"""`taskbench view [DIR ...]`: every run under the given directories in one local web app."""

from __future__ import annotations

from pathlib import Path

import typer

HELP = """Browse runs in the browser: the run list, each run's config, environment, usage, timings, failures and
report; a leaderboard across runs (strict and compat, CIs, per structure and tool count, sortable, with a
glossary); a paired comparison of two runs; every sample with its gold and predicted graphs side by side
(missing, extra and hallucinated tools and links coloured), argument differences, raw output, finish reason,
parse error and error type, filtered and searched on the server; agent trajectories as a timeline, two side by
side; generation runs with critic pass rates, rejected samples and near-duplicates, one click into review.

DIR (default: runs) is searched for run directories of every kind: `taskbench run` outputs, `taskbench
evaluate` metrics (with their predictions), `taskbench generate` outputs and `taskbench agents eval` outputs.
Nothing is written to them (a review opened from the viewer writes its review log, as `taskbench review`).
What a run's own files name is not trusted: only regular files inside each run directory are read (a path with
../, an absolute path elsewhere or a link out is not followed, and the run page says so), and gold only from a
bundled dataset, a --data directory or the directories given here.

It is the review app with more routes: served on 127.0.0.1; any other host needs `--token` (or
TASKBENCH_REVIEW_TOKEN), and requests without it get 401.

Examples:

    taskbench view runs/

    taskbench view runs/mm runs/cmp --port 8800

    taskbench view metrics/ --data multimedia      # evaluate outputs: where their gold is
"""


def view(
    dirs: list[Path] | None = typer.Argument(None, metavar="[DIR ...]", show_default=False,
                                            help="Directories to search for runs (default: runs)."),
    data: list[str] | None = typer.Option(None, "--data", "-d",
                                          help="Gold dataset (bundled name or directory) of `evaluate` outputs, "
                                          "which do not record it, and a place a run's gold may be read from when "
                                          "it is outside the run and DIR; NAME=DIR for one dataset name. "
                                          "Repeatable."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to serve on; anything but loopback needs --token."),
    port: int = typer.Option(8766, "--port", min=0, max=65535, help="TCP port."),
    token: str | None = typer.Option(None, "--token", envvar="TASKBENCH_REVIEW_TOKEN",
                                     help="Require this token on every request (header, cookie or ?token=)."),
    reviewer: str | None = typer.Option(None, "--reviewer", "-r", help="Your name in a review opened from the viewer."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
) -> None:
    from ..bundled import resolve_dir
    from ..errors import InputError
    from .review import _default_reviewer, app_url, check_serving, listen, serve_on

    paths = list(dirs or [Path("runs")])
    for p in paths:
        if not p.is_dir():
            raise InputError("not a directory", path=p, hint="pass directories that hold run outputs")
    gold: dict[str, Path] = {}
    for spec in data or []:
        name, sep, where = spec.partition("=")
        gold[name if sep else ""] = resolve_dir(where if sep else spec)
        if not sep:
            gold.setdefault(resolve_dir(spec).name, gold[""])
    loopback = check_serving(host, token, "taskbench view")
    sock = listen(host, port)  # first: a busy port is one line, before anything else is printed
    from ..report.review.app import LOOPBACK_HOSTS, create_app
    from ..report.view.index import ViewIndex

    index = ViewIndex(paths, data=gold)
    for problem in index.problems[:20]:
        typer.echo(f"taskbench view: skipped {problem}", err=True)
    for problem in index.gold_not_read()[:5]:
        typer.echo(f"taskbench view: {problem}", err=True)
    app = create_app(None, reviewer=reviewer or _default_reviewer(), token=token,
                     allowed_hosts=LOOPBACK_HOSTS if loopback else None, view=index)
    url = app_url(host, sock.getsockname()[1], "/view", token)
    typer.echo(f"taskbench view: {len(index.runs)} runs under {', '.join(map(str, paths))}; open {url} "
               "(Ctrl-C to stop)", err=True)
    serve_on(app, sock, log_level)


def register(app: typer.Typer) -> None:
    """Add the `view` command to the main app."""
    app.command("view", help=HELP)(view)
