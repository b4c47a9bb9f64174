"""Shared test fixtures.

- ``shared``: the ../shared directory (seeds, reference data, parity fixtures); tests that need it skip with a
  reason when it is absent (set TASKBENCH_SHARED to point elsewhere).
- Nothing here reaches the internet: tests use loopback servers and local files only, and a socket guard makes
  any connection from the test process to a non-loopback address fail (``NonLoopbackTraffic``).
"""

from __future__ import annotations

import ipaddress
import os
import socket
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
def _mock_scripts_are_used_up():
    """A scripted mock model with unused steps fails the test that made it (the script said more would happen)."""
    from taskbench.llm.providers.mock import forget_scripts, unfinished_scripts

    forget_scripts()
    yield
    left = unfinished_scripts()
    forget_scripts()
    if left:
        pytest.fail("unused mock script steps: " + "; ".join(left))
