"""`taskbench review DIR`: human verification of a generated dataset in the browser, and its export."""

from __future__ import annotations

import getpass
import ipaddress
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .console import make_console

if TYPE_CHECKING:  # pragma: no cover
    from ..report.review.session import ReviewSession

HELP = """Review the samples of a dataset directory in the browser: correct, discard or fix each one.

The page (served on 127.0.0.1) shows one sample at a time: the request, the steps, the tool invocation graph
drawn beside the sampled subgraph, the critics' verdicts and any duplicate flag. **C** marks it correct,
**D** discards it, **F** opens the editor, where the request, the steps and the invocation graph (tools,
arguments, links) are checked against the tool library by the rule critic as you type; **Ctrl+Enter** saves
the fix, **J**/**K** move, **N** jumps to the next sample you have not reviewed, **?** lists every key.

Decisions are appended to DIR/review_log.jsonl (reviewer, time, outcome, a JSON Patch of the fix).
Several reviewers can review the same samples (each with `--reviewer NAME`, or one server and the page's
reviewer field); the page shows their agreement (Cohen's kappa).

`--export` writes the verified dataset to `--output` (default DIR/verified): data.json and user_requests.json
with fixes applied and discards dropped, alignment_ids.json, and the human-verification table
(human_verification.json and .md). Conflicting reviewers: the adjudicator's decision if one is named, else
the majority, ties to the stricter outcome (discard > fix > correct). It loads in `taskbench predict` and
`taskbench evaluate` as any dataset does.

Any host other than loopback needs `--token` (or TASKBENCH_REVIEW_TOKEN); requests without it get 401.

Examples:

    taskbench review out/mm --reviewer ana

    taskbench review out/mm --reviewer bo --port 8766

    taskbench review out/mm --host 0.0.0.0 --token "$(openssl rand -hex 16)"

    taskbench review out/mm --export --output out/mm_verified --adjudicator ana
"""


def _is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _default_reviewer() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (some containers)
        return os.environ.get("USER", "reviewer")


def review(
    dataset: Path = typer.Argument(..., metavar="DIR", help="Dataset directory to review (what `taskbench generate` "
                                   "wrote: data.json, tool_desc.json, ...).", show_default=False),
    reviewer: str | None = typer.Option(None, "--reviewer", "-r", help="Your name in the review log "
                                        "(default: your login name)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to serve on; anything but loopback needs --token."),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="TCP port."),
    token: str | None = typer.Option(None, "--token", envvar="TASKBENCH_REVIEW_TOKEN",
                                     help="Require this token on every request (header, cookie or ?token=)."),
    include_rejected: bool = typer.Option(False, "--include-rejected",
                                          help="Also offer the samples the critics rejected (data_error.json)."),
    dependency: str | None = typer.Option(None, "--dependency", "-D",
                                          help="Override the library's dependency kind: resource or temporal."),
    export: bool = typer.Option(False, "--export", help="Write the verified dataset instead of serving the page."),
    output: Path | None = typer.Option(None, "--output", "-o", help="With --export: where (default DIR/verified)."),
    out_alias: Path | None = typer.Option(None, "--out", hidden=True, help="Old name of --output (one release)."),
    adjudicator: str | None = typer.Option(None, "--adjudicator",
                                           help="With --export: this reviewer's decision settles disagreements."),
    keep_unreviewed: bool = typer.Option(False, "--keep-unreviewed",
                                         help="With --export: keep samples nobody reviewed (default: leave them out)."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
    trajectories: Path | None = typer.Option(None, "--trajectories", metavar="RUN", help="Also rate the "
                                             "trajectories of this agent run (`agents eval -o RUN`) at /human: "
                                             "Executability and Utility, 1-3, blind; kappas at /api/human/summary, "
                                             "per-agent results after the session: taskbench agents ratings RUN."),
    sample: int | None = typer.Option(None, "--sample", min=1, help="With --trajectories: N random episodes per "
                                      "agent (the paper rates 30)."),
) -> None:
    from ..errors import ConfigError
    from ..graph.loaders import check_dependency
    from ..report.review.session import ReviewSession

    check_dependency(dependency)
    out = output or out_alias
    if not export and (out is not None or adjudicator is not None or keep_unreviewed):
        raise ConfigError("--output, --adjudicator and --keep-unreviewed go with --export")
    session = ReviewSession(dataset, include_rejected=include_rejected, dependency=dependency)
    if not session.items and not include_rejected:
        _nothing_kept(dataset)
    err = make_console(stderr=True, highlight=False, soft_wrap=True)
    for problem in session.problems[:20]:
        err.print(f"taskbench review: skipped {problem}", markup=False)
    if len(session.problems) > 20:
        err.print(f"taskbench review: ... {len(session.problems) - 20} more records skipped")
    for p in session.log.problems[:20]:
        err.print(f"taskbench review: {session.log.path}:{p.line}: {p.message} (line ignored)", markup=False)
    if export:
        _export(session, out, adjudicator, keep_unreviewed)
        return
    human = None
    if trajectories is not None:
        from ..report.review.human_eval import HumanEval

        human = HumanEval(trajectories, sample=sample)
    _serve(session, reviewer or _default_reviewer(), host, port, token, log_level, human)


def _export(session: ReviewSession, out: Path | None, adjudicator: str | None, keep_unreviewed: bool) -> None:
    from ..report.review.export import export_review

    report = export_review(session, out, adjudicator=adjudicator, keep_unreviewed=keep_unreviewed)
    console = make_console(highlight=False, soft_wrap=True)
    c = report.counts
    console.print(f"{report.out}: {report.exported} of {report.samples} samples exported "
                  f"({c['correct']} correct, {c['fix']} fixed, {c['discard']} discarded, {c['unreviewed']} unreviewed"
                  f"{', kept' if keep_unreviewed and c['unreviewed'] else ''}); {report.conflicts} conflicts settled")
    console.print((Path(report.out) / "human_verification.md").read_text(encoding="utf-8"))
    err = make_console(stderr=True, highlight=False, soft_wrap=True)
    if report.stale:
        err.print(f"taskbench review: {report.stale} decisions were made on another version of their sample and "
                  "were not applied (listed in human_verification.json)")
    for failed in report.failed_fixes:
        err.print(f"taskbench review: fix not applied: {failed}")
    if report.failed_fixes:
        raise typer.Exit(1)


def check_serving(host: str, token: str | None, command: str) -> bool:
    """Before the app is served (by `taskbench review` or `view`): a host other than loopback needs a token, and
    the [review] extra must be installed. Returns whether ``host`` is loopback."""
    from ..errors import ConfigError, MissingDependencyError

    loopback = _is_loopback(host)
    if not loopback and not token:
        raise ConfigError(f"--host {host} is not a loopback address: pass --token (e.g. --token "
                          "\"$(openssl rand -hex 16)\") or set TASKBENCH_REVIEW_TOKEN")
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(exc.name or "fastapi", "review", command) from exc
    return loopback


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port`` for the app (taken before anything is printed, so a busy port is
    one line naming it and ``--port``, exit 2, never the address of the server that holds it)."""
    import errno

    from ..errors import ConfigError, InputError

    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a TCP port (0-65535)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: not an address of this machine ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            free = _free_port(host, port)
            raise InputError(f"port {port} on {host} is in use (another server holds it, perhaps another "
                             f"`taskbench view` or `review`): stop it, or pass --port {free or 'N'}") from None
        if exc.errno == errno.EACCES:
            raise InputError(f"not allowed to listen on port {port} (ports below 1024 need root): pass --port "
                             "with a higher one, e.g. --port 8766") from None
        raise InputError(f"cannot listen on {host}:{port} ({exc.strerror}): pass another --host or --port") from None
    sock.set_inheritable(True)
    return sock


def _free_port(host: str, port: int) -> int | None:
    """The first port after ``port`` that can be bound on ``host`` now (to suggest), if any of the next 20."""
    for cand in range(port + 1, min(port + 21, 65536)):
        try:
            with socket.create_server((host, cand)):
                return cand
        except OSError:
            continue
    return None


def serve_on(app: object, sock: socket.socket, log_level: str) -> None:
    """Serve ``app`` with uvicorn on a socket :func:`listen` took."""
    import uvicorn

    uvicorn.Server(uvicorn.Config(app, log_level=log_level)).run(sockets=[sock])  # type: ignore[arg-type]


def app_url(host: str, port: int, path: str, token: str | None) -> str:
    """The address a user opens (an IPv6 host in brackets, the token as a query parameter)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}" + (f"?token={token}" if token else "")


def _serve(session: ReviewSession, reviewer: str, host: str, port: int, token: str | None, log_level: str,
           human: object = None) -> None:
    loopback = check_serving(host, token, "taskbench review")
    sock = listen(host, port)
    from ..report.review.app import LOOPBACK_HOSTS, create_app

    app = create_app(session, reviewer=reviewer, token=token, allowed_hosts=LOOPBACK_HOSTS if loopback else None,
                     human_eval=human)
    url = app_url(host, port, "/", token)
    done = sum(1 for by in session.log.latest().values() if reviewer in by)
    typer.echo(f"taskbench review: {len(session.items)} samples in {session.root} ({done} reviewed by {reviewer}); "
               f"open {url} (Ctrl-C to stop)", err=True)
    serve_on(app, sock, log_level)


def _nothing_kept(dataset: Path) -> None:
    """No kept sample to review: say so, and point at the rejected ones when there are any (exit 2)."""
    from ..dataset.layout import ERROR_FILE
    from ..errors import InputError

    rejected = dataset / ERROR_FILE
    n = 0
    if rejected.is_file():
        with rejected.open("rb") as fh:
            n = sum(1 for line in fh if line.strip())
    if n:
        raise InputError(f"no kept samples to review; the critics rejected {n} (in {ERROR_FILE})", path=dataset,
                         hint="review those with --include-rejected")
    raise InputError("no samples to review (data.json is empty or missing)", path=dataset)


def register(app: typer.Typer) -> None:
    """Add the `review` command to the main app."""
    app.command("review", help=HELP)(review)
