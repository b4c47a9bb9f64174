"""The conftest socket guard: the test process reaches loopback and Unix sockets, nothing else."""

from __future__ import annotations

import asyncio
import socket

import pytest

from conftest import NonLoopbackTraffic


@pytest.mark.parametrize("address", [("10.255.255.1", 80), ("8.8.8.8", 53), ("2001:db8::1", 443), ("example.com", 80)])
def test_connecting_off_the_machine_is_refused(address):
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s, pytest.raises(NonLoopbackTraffic):
        s.connect(address)


def test_resolving_a_public_name_is_refused():
    with pytest.raises(NonLoopbackTraffic, match="resolve"):
        socket.create_connection(("api.openai.com", 443), timeout=1)


def test_udp_off_the_machine_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s, pytest.raises(NonLoopbackTraffic):
        s.sendto(b"x", ("1.1.1.1", 53))


def test_asyncio_clients_are_guarded_too():
    async def go():
        await asyncio.open_connection("192.0.2.1", 80)

    with pytest.raises(NonLoopbackTraffic):
        asyncio.run(go())


def test_loopback_and_unix_sockets_work(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    with socket.create_connection(server.getsockname(), timeout=2):
        pass
    server.close()
    path = str(tmp_path / "s.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(path)
    unix.listen()
    with socket.socket(socket.AF_UNIX) as c:
        c.connect(path)
    unix.close()
