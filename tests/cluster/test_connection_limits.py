"""Connection limits on a real broker, changed while it runs as Kafka lets
them change (dynamic broker configs through confluent-kafka's
AdminClient.incremental_alter_configs): ``max.connections.per.ip`` with
``max.connections.per.ip.overrides`` for one address, then the override
raised and lowered, and a listener's own ``max.connections``. A
connection over a limit is closed at once; those already open keep
working when a limit is lowered below them."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from kavka.protocol.framing import frame
from kavka.protocol.headers import RequestHeader, encode_request
from kavka.protocol.messages import ApiVersionsRequest

from .cluster_helpers import wait_until

pytestmark = pytest.mark.cluster


def _connect(address: str, source: str) -> socket.socket:
    host, _, port = address.rpartition(":")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.bind((source, 0))
    s.settimeout(10)
    s.connect((host, int(port)))
    return s


def _served(s: socket.socket, correlation_id: int = 1) -> bool:
    """An ApiVersions request answered on ``s`` (False: closed by the broker)."""
    try:
        s.sendall(frame(encode_request(RequestHeader(18, 3, correlation_id, "limits"), ApiVersionsRequest())))
        head = s.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return False
        body = s.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
        return struct.unpack_from(">i", body)[0] == correlation_id
    except (ConnectionResetError, BrokenPipeError):
        return False


def _attempt(address: str, source: str) -> socket.socket | None:
    """A new connection, or None when the broker closes it at once."""
    s = _connect(address, source)
    if _served(s):
        return s
    s.close()
    return None


def _alter(cluster, **configs: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    (future,) = admin.incremental_alter_configs([resource], request_timeout=15).values()
    assert future.result() is None


def test_per_address_limits_and_their_overrides_change_live(make_cluster):
    cluster = make_cluster(brokers=1, config={"max.connections.per.ip": "2",
                                              "max.connections.per.ip.overrides": "127.0.0.1:1000"})
    address = cluster.brokers[0].address
    held = [_attempt(address, "127.0.0.2") for _ in range(3)]
    assert [s is not None for s in held] == [True, True, False]
    held = [s for s in held if s is not None]

    # An override for 127.0.0.2 raises its limit to 4, for new connections.
    _alter(cluster, **{"max.connections.per.ip.overrides": "127.0.0.1:1000,127.0.0.2:4"})

    def one_more() -> bool:
        s = _attempt(address, "127.0.0.2")
        if s is not None:
            held.append(s)
        return len(held) == 4

    wait_until(one_more, 20, "the raised limit of 127.0.0.2 to apply")
    assert _attempt(address, "127.0.0.2") is None

    # Lowered below what is open: those stay, new ones are refused.
    _alter(cluster, **{"max.connections.per.ip.overrides": "127.0.0.1:1000,127.0.0.2:1"})
    time.sleep(1)
    assert all(_served(s, 10 + i) for i, s in enumerate(held))
    assert _attempt(address, "127.0.0.2") is None
    assert _attempt(address, "127.0.0.3") is not None  # another address has its own count (2)
    for s in held:
        s.close()
    log = cluster.brokers[0].log_path.read_text()
    assert "refused a connection from 127.0.0.2 on listener PLAINTEXT" in log


def test_a_listener_limit_applies_live(make_cluster):
    cluster = make_cluster(brokers=1)
    address = cluster.brokers[0].address
    first = _attempt(address, "127.0.0.4")
    assert first is not None
    # The admin client's own connection counts too: leave it room.
    _alter(cluster, **{"listener.name.plaintext.max.connections": "4"})

    opened: list[socket.socket] = []

    def full() -> bool:
        s = _attempt(address, "127.0.0.4")
        if s is None:
            return True
        opened.append(s)
        assert len(opened) < 10, "the listener limit never applied"
        return False

    wait_until(full, 20, "the listener's max.connections to refuse a connection")
    assert _served(first, 5)  # open ones keep working
    first.close()
    for s in opened:
        s.close()
    wait_until(lambda: _attempt(address, "127.0.0.4") is not None, 20, "room once connections closed")
