"""A pytest plugin: tests marked ``model`` (they run llama.cpp in-process) run in a child pytest process of their
own, so a native crash there (SIGILL from a llama.cpp build this CPU cannot run, SIGSEGV) fails that one test
with the signal named, and the rest of the suite still runs and prints its summary.

The child is a fresh interpreter (``python -m pytest NODEID``), not a fork: forking the suite's process after
torch or llama.cpp started their OpenMP thread pools deadlocked or crashed the child (seen here: a futex wait
forever, and a SIGSEGV in a test that passes on its own). The child sends its serialised reports back through a
file; the parent replays them. (pytest-forked, which forks, also cannot run a test under pytest 9.2: every test
exits with status 3.) A child still running when pytest-timeout fires in the parent is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

import pytest

_CHILD = "TASKBENCH_ISOLATED_REPORTS"


def _isolated(item: pytest.Item) -> bool:
    if os.environ.get(_CHILD):
        return False  # already the child
    return item.get_closest_marker("model") is not None or item.get_closest_marker("native_fork") is not None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "native_fork: run the test in a child process (a crash fails only it)")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    target = os.environ.get(_CHILD)
    if not target:
        return
    config = _CONFIG.get("config")
    if config is None:
        return
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    with open(target, "a", encoding="utf-8") as out:
        out.write(json.dumps(data) + "\n")


_CONFIG: dict[str, pytest.Config] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG["config"] = session.config


def _failed(item: pytest.Item, text: str) -> pytest.TestReport:
    path, line, _ = item.location
    return pytest.TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed",
                             f"{path}:{(line or 0) + 1}: {text}", "call", [], 0.0)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if not _isolated(item):
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    fd, reports_path = tempfile.mkstemp(prefix="taskbench-isolated-", suffix=".jsonl")
    os.close(fd)
    env = dict(os.environ, **{_CHILD: reports_path})
    root = str(item.config.rootpath)
    cmd = [sys.executable, "-m", "pytest", item.nodeid, "-q", "-p", "no:cacheprovider", "--no-header",
           "-o", "addopts=", "--strict-markers"]
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    stopped: str | None = None
    try:
        output, _ = proc.communicate()
    except BaseException as exc:  # pytest-timeout's alarm fires here, in the parent, or Ctrl-C: stop the child
        proc.kill()
        output, _ = proc.communicate()
        if isinstance(exc, KeyboardInterrupt):
            os.unlink(reports_path)
            raise
        stopped = f"{type(exc).__name__}: {exc}"
    reports: list[pytest.TestReport] = []
    with open(reports_path, encoding="utf-8") as inp:
        for line in inp:
            if line.strip():
                rep = item.config.hook.pytest_report_from_serializable(config=item.config, data=json.loads(line))
                if rep.nodeid == item.nodeid:
                    if rep.skipped and isinstance(rep.longrepr, list):
                        # JSON made the skip's (path, line, reason) tuple a list; the summary needs the tuple
                        rep.longrepr = tuple(rep.longrepr)
                    reports.append(rep)
    os.unlink(reports_path)
    tail = output.decode("utf-8", "replace").strip().splitlines()[-15:]
    if stopped is not None:
        reports.append(_failed(item, f"the isolated test was stopped ({stopped})"))
    elif proc.returncode < 0:
        num = -proc.returncode
        try:
            name = signal.Signals(num).name
        except ValueError:
            name = f"signal {num}"
        reports.append(_failed(item, f"running the test CRASHED with signal {num} ({name})\n" + "\n".join(tail)))
    elif not any(r.when == "call" for r in reports) and not any(r.outcome != "passed" for r in reports):
        reports.append(_failed(item, f"the isolated test reported nothing (exit {proc.returncode})\n"
                                     + "\n".join(tail)))
    for rep in reports:
        ihook.pytest_runtest_logreport(report=rep)
    # this process set up nothing for the item, but the previous item may have left its module on the setup
    # stack for this one: tear down what the next item does not need, as the normal protocol would
    item.session._setupstate.teardown_exact(nextitem)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
