"""KIP-612's per-address connection rate quota on a real broker process:
``kavka configs --entity-type ips`` stores ``connection_creation_rate`` in
``/config/ips/<ip>`` (and ``<default>``) through AlterClientQuotas; the
broker applies it live, closing the new connections from that address over
the rate while other addresses and the connections already open (a real
producer's) keep working; removing it lifts the limit."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest
from kazoo.client import KazooClient

from kavka.protocol.messages import ApiVersionsRequest

from .cluster_helpers import RawConnection, consume, create_topic, wait_until

pytestmark = pytest.mark.cluster


def kavka_configs(cluster, *args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "kavka", "configs", "--bootstrap-server", cluster.bootstrap, *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stdout, r.stderr)
    return r.stdout


def znode(cluster, path: str) -> dict | None:
    client = KazooClient(hosts=cluster.zk_connect)
    client.start(15)
    try:
        if not client.exists(path):
            return None
        return json.loads(client.get(path)[0])["config"]
    finally:
        client.stop()
        client.close()


def served(cluster, source: str, attempts: int) -> int:
    """How many of ``attempts`` new connections from ``source``, opened at
    once, the broker serves (an ApiVersions answered) rather than closes."""
    conns = [RawConnection(cluster.brokers[0].address, source=source) for _ in range(attempts)]
    n = 0
    try:
        for conn in conns:
            with contextlib.suppress(ConnectionError, OSError):  # closed at accept: over the rate
                n += conn.request(ApiVersionsRequest(), 0).error_code == 0
    finally:
        for conn in conns:
            conn.close()
    return n


def test_an_ip_connection_rate_limits_that_address_only_and_lifts(make_cluster):
    """The tools and the producer connect from 127.0.0.1; the rated and the
    free addresses are 127.0.0.2 and 127.0.0.3 (all of 127.0.0.0/8 reaches
    the broker's loopback listener)."""
    from confluent_kafka import Producer

    # a burst of two seconds' worth: rate 1 lets at most a few of 20 in at once
    cluster = make_cluster(brokers=1, config={"quota.window.num": "2", "quota.window.size.seconds": "1"})
    create_topic(cluster, "rated")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    producer.produce("rated", b"before")
    assert producer.flush(20) == 0
    already_open = RawConnection(cluster.brokers[0].address, source="127.0.0.2")
    assert already_open.request(ApiVersionsRequest(), 0).error_code == 0

    assert kavka_configs(cluster, "--alter", "--entity-type", "ips", "--entity-name", "127.0.0.2",
                         "--add-config", "connection_creation_rate=1") == \
        "Completed updating config for ip 127.0.0.2.\n"
    assert znode(cluster, "/config/ips/127.0.0.2") == {"connection_creation_rate": "1"}
    assert kavka_configs(cluster, "--describe", "--ip", "127.0.0.2") == \
        "Quota configs for ip '127.0.0.2' are connection_creation_rate=1.0\n"

    wait_until(lambda: served(cluster, "127.0.0.2", 20) <= 4, 30, "the broker to apply the ip quota")
    assert served(cluster, "127.0.0.3", 20) == 20  # another address: no quota
    assert already_open.request(ApiVersionsRequest(), 0).error_code == 0  # open connections stay
    log = cluster.brokers[0].log_path.read_text()
    assert "refused a connection from 127.0.0.2 on listener PLAINTEXT: connection_creation_rate reached" in log

    # The default for every address without its own quota; 127.0.0.1's own
    # (the tools' and the producer's) beats it.
    kavka_configs(cluster, "--alter", "--ip", "127.0.0.1", "--add-config", "connection_creation_rate=1000")
    kavka_configs(cluster, "--alter", "--ip-defaults", "--add-config", "connection_creation_rate=1")
    wait_until(lambda: served(cluster, "127.0.0.3", 20) <= 4, 30, "the default ip quota to apply")
    assert kavka_configs(cluster, "--describe", "--entity-type", "ips").splitlines() == [
        "Quota configs for the default ip are connection_creation_rate=1.0",
        "Quota configs for ip '127.0.0.1' are connection_creation_rate=1000.0",
        "Quota configs for ip '127.0.0.2' are connection_creation_rate=1.0"]
    for i in range(20):
        producer.produce("rated", b"during-%d" % i)
    assert producer.flush(20) == 0

    kavka_configs(cluster, "--alter", "--ip-defaults", "--delete-config", "connection_creation_rate")
    kavka_configs(cluster, "--alter", "--ip", "127.0.0.2", "--delete-config", "connection_creation_rate")
    assert znode(cluster, "/config/ips/127.0.0.2") == {}
    wait_until(lambda: served(cluster, "127.0.0.2", 20) == 20, 30, "the limit lifted")
    assert served(cluster, "127.0.0.3", 20) == 20
    already_open.close()
    got = consume(cluster, "rated", [0], 21)
    assert got[0] == [b"before"] + [b"during-%d" % i for i in range(20)]
