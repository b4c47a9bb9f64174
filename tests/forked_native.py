"""A pytest plugin: tests marked ``model`` (they run llama.cpp in-process) run in a forked child process, so a
native crash there (SIGILL from a llama.cpp build this CPU cannot run, SIGSEGV) fails that one test with the
signal named, and the rest of the suite still runs and prints its summary.

(pytest-forked does the same for a ``forked`` marker, but its 1.7 release cannot run a test under pytest 9:
every forked test exits with status 3. This is the same idea in the public hooks: run the test protocol in a
child, send the serialised reports back through a pipe, and turn a death by signal into a failed report.)
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from _pytest.runner import runtestprotocol


def _forked(item: pytest.Item) -> bool:
    return hasattr(os, "fork") and (item.get_closest_marker("model") is not None
                                    or item.get_closest_marker("native_fork") is not None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "native_fork: run the test in a forked child process (a crash fails only it)")


def _crash_report(item: pytest.Item, status: int) -> pytest.TestReport:
    if os.WIFSIGNALED(status):
        num = os.WTERMSIG(status)
        try:
            name = signal.Signals(num).name
        except ValueError:
            name = f"signal {num}"
        text = f"running the test CRASHED with signal {num} ({name})"
    else:
        text = f"running the test EXITED with status {os.WEXITSTATUS(status)} before reporting"
    path, line, _ = item.location
    return pytest.TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed",
                             f"{path}:{(line or 0) + 1}: {text}", "call", [], 0.0)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if not _forked(item):
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run setup/call/teardown, send the reports, leave without any cleanup of the parent's
        code = 0
        try:
            os.close(read_fd)
            reports = runtestprotocol(item, log=False, nextitem=nextitem)
            data = [item.config.hook.pytest_report_to_serializable(config=item.config, report=r) for r in reports]
            payload = json.dumps(data).encode()
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001 - whatever happened, the parent reports it
            code = 3
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks = []
    stopped: str | None = None
    try:
        with os.fdopen(read_fd, "rb") as inp:
            while chunk := inp.read(1 << 16):
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    except BaseException as exc:  # pytest-timeout's alarm fires here (in the parent), or Ctrl-C: stop the child
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        if isinstance(exc, KeyboardInterrupt):
            raise
        stopped = f"{type(exc).__name__}: {exc}"
    reports: list[pytest.TestReport] = []
    if stopped is not None:
        path, line, _ = item.location
        reports.append(pytest.TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed",
                                         f"{path}:{(line or 0) + 1}: the forked test was stopped ({stopped})",
                                         "call", [], 0.0))
    elif os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and chunks:
        for doc in json.loads(b"".join(chunks)):
            rep = item.config.hook.pytest_report_from_serializable(config=item.config, data=doc)
            reports.append(rep)
    else:
        reports.append(_crash_report(item, status))
    for rep in reports:
        ihook.pytest_runtest_logreport(report=rep)
    # the child tore down its copy of what this process had set up (module fixtures of earlier tests); do the
    # same here, or the next test would find this module still on the setup stack
    item.session._setupstate.teardown_exact(nextitem)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
