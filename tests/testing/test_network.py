"""``kavka.testing.network``: hosts in their own namespaces reach one
another and the clients over the bridge; a cut drops one direction; heals
compose; nothing is left behind. Needs root (skips with the reason
otherwise)."""

from __future__ import annotations

import errno
import socket
import subprocess
import sys
import time

import pytest

from kavka.testing.network import CLIENTS, Network, unavailable

REASON = unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"network namespaces unavailable: {REASON}")

SERVER = "import socket,time\ns=socket.socket();s.bind(('0.0.0.0',7000));s.listen(16)\nwhile True:\n c,_=s.accept();c.sendall(b'hi');c.close()"


def reaches(address: str, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((address, 7000), timeout=timeout) as s:
            return s.recv(2) == b"hi"
    except OSError:
        return False


def eventually(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_cuts_heal_and_teardown():
    net = Network.create(["a", "b"])
    try:
        servers = [subprocess.Popen(net.argv(h, [sys.executable, "-c", SERVER])) for h in ("a", "b")]
        a, b = net.address("a"), net.address("b")
        assert eventually(lambda: reaches(a) and reaches(b))
        net.cut(CLIENTS, "a")  # the clients' packets to a are dropped
        assert not reaches(a) and reaches(b)
        net.cut(CLIENTS, "a")  # a second fault on the same pair ...
        net.uncut(CLIENTS, "a")
        assert not reaches(a)  # ... keeps the cut until it heals too
        net.uncut(CLIENTS, "a")
        assert eventually(lambda: reaches(a))
        net.cut("b", CLIENTS)  # one way: the request arrives, the answer does not
        assert not reaches(b) and reaches(a)
        net.heal_all()
        assert eventually(lambda: reaches(b))
        with pytest.raises(ValueError, match="no cut"):
            net.uncut("a", "b")
    finally:
        net.close()
    assert all(s.wait(10) is not None for s in servers)  # killed with their namespaces
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert net.bridge + "-" not in listed
    assert subprocess.run(["ip", "link", "show", net.bridge], capture_output=True).returncode != 0


def test_a_link_left_by_the_bridges_previous_owner_is_replaced():
    # A run killed with -9 leaves veths whose peers' namespaces are still
    # going away when the next run takes the same bridge name.
    net = Network.create(["a"])
    try:
        stale = f"{net.bridge}h1"
        # (an earlier test's host of that name may still be going away)
        assert eventually(lambda: stale not in _links())
        subprocess.run(["ip", "link", "add", stale, "type", "veth", "peer", "name", f"{net.bridge}x1"], check=True)
        net._add_host("b", 1)
        subprocess.Popen(net.argv("b", [sys.executable, "-c", SERVER]))
        assert eventually(lambda: reaches(net.address("b")))
    finally:
        net.close()
    # (the kernel takes a moment to delete it after its namespace: the very
    # delay a next owner can run into)
    assert eventually(lambda: stale not in _links())


def _links() -> str:
    return subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout


def test_the_subnet_never_leaves_the_machine_after_teardown():
    # A client still open after the run (librdkafka reconnects by itself)
    # must not reach out by the default route once the bridge is gone.
    net = Network.create(["a"])
    address = net.address("a")
    net.close()
    with pytest.raises(OSError) as refused, socket.create_connection((address, 7000), timeout=5):
        pass
    assert refused.value.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH)
