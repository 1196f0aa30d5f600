"""SCRAM users made with ``kavka configs`` log in (a real broker with a
SASL_PLAINTEXT listener, confluent-kafka as the client):

- ``--add-config 'SCRAM-SHA-512=[password=...],SCRAM-SHA-256=[iterations=8192,password=...]'``
  through AlterUserScramCredentials: both mechanisms log in, produce and
  consume; a wrong password is refused;
- changed live (the broker's credential cache follows /config/changes):
  a new password logs in and the old one no longer does; a deleted
  credential no longer logs in;
- ``kavka configs`` itself works over the SASL listener (``--command-config``);
- the SASL user is the quota's user: a producer_byte_rate on user alice
  throttles alice's SCRAM connection and not an anonymous one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kavka.tools.cluster import LocalCluster
from kavka.tools.ports import free_port

from .cluster_helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TOPIC = "scram-topic"


@pytest.fixture(scope="module")
def broker(zookeeper, tmp_path_factory):
    cluster = LocalCluster(1, tmp_path_factory.mktemp("scram-users"),
                           zookeeper=f"{zookeeper}/kavka-scram-{uuid.uuid4().hex[:8]}")
    ports = {"PLAINTEXT": cluster.brokers[0].port, "SASL_PLAINTEXT": free_port()}
    cluster.config.update({
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
        "quota.window.num": "3",
    })
    cluster.start()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        f.result(30)
    yield cluster, f"127.0.0.1:{ports['SASL_PLAINTEXT']}"
    cluster.stop()


def configs(cluster, *args: str, bootstrap: str | None = None) -> str:
    r = subprocess.run([sys.executable, "-m", "kavka", "configs", "--bootstrap-server", bootstrap or cluster.bootstrap,
                        *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def sasl(address: str, mechanism: str, user: str, password: str, **extra) -> dict:
    return {"bootstrap.servers": address, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password, **extra}


def logs_in(address: str, mechanism: str, user: str, password: str) -> bool:
    """Whether a client with these credentials gets Metadata; a refusal
    must be the broker's SCRAM answer (librdkafka passes it to error_cb)."""
    errors: list[str] = []
    admin = AdminClient({**sasl(address, mechanism, user, password), "error_cb": lambda e: errors.append(str(e)),
                         "log_level": 0})
    try:
        admin.list_topics(timeout=3)
        return True
    except KafkaException:
        admin.poll(1)  # serves error_cb
        assert any("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                   f"{mechanism}" in e for e in errors), errors
        return False


def produce_and_consume(address: str, mechanism: str, user: str, password: str) -> None:
    value = f"{mechanism}-{uuid.uuid4().hex}".encode()
    p = Producer(sasl(address, mechanism, user, password, acks="all"))
    p.produce(TOPIC, value)
    assert p.flush(20) == 0
    c = Consumer(sasl(address, mechanism, user, password, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                              "enable.auto.commit": False}))
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 20
        while value not in seen and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
        assert value in seen
    finally:
        c.close()


def test_users_made_with_kavka_configs_log_in(broker, tmp_path):
    cluster, address = broker
    assert configs(cluster, "--alter", "--user", "alice", "--add-config",
                   "SCRAM-SHA-512=[password=alice-secret],SCRAM-SHA-256=[iterations=8192,password=alice-256]") == \
        "Completed updating config for user alice.\n"
    assert configs(cluster, "--describe", "--user", "alice") == \
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, " \
        "SCRAM-SHA-512=iterations=4096\n"
    wait_until(lambda: logs_in(address, "SCRAM-SHA-512", "alice", "alice-secret"), 30, "alice's SCRAM-SHA-512 login")
    produce_and_consume(address, "SCRAM-SHA-512", "alice", "alice-secret")
    produce_and_consume(address, "SCRAM-SHA-256", "alice", "alice-256")
    assert not logs_in(address, "SCRAM-SHA-512", "alice", "wrong")
    assert not logs_in(address, "SCRAM-SHA-512", "nobody", "alice-secret")

    # a new password, live
    configs(cluster, "--alter", "--user", "alice", "--add-config", "SCRAM-SHA-512=[password=n3w-Secret-42]")
    wait_until(lambda: logs_in(address, "SCRAM-SHA-512", "alice", "n3w-Secret-42"), 30, "the new password")
    assert not logs_in(address, "SCRAM-SHA-512", "alice", "alice-secret")
    # deleted: no login, the other mechanism still works
    configs(cluster, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-512")
    wait_until(lambda: not logs_in(address, "SCRAM-SHA-512", "alice", "n3w-Secret-42"), 30, "the credential deleted")
    assert logs_in(address, "SCRAM-SHA-256", "alice", "alice-256")

    # kavka configs itself over the SASL listener, as alice (--command-config)
    properties = tmp_path / "client.properties"
    properties.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                          "sasl.username=alice\nsasl.password=alice-256\n")
    assert configs(cluster, "--describe", "--user", "alice", "--command-config", str(properties),
                   bootstrap=address) == "SCRAM credential configs for user-principal 'alice' are " \
                                         "SCRAM-SHA-256=iterations=8192\n"
    broker_log = cluster.brokers[0].log_path.read_text(errors="replace")
    assert "alice-secret" not in broker_log and "n3w-Secret-42" not in broker_log
    assert "[hidden]" in broker_log


def throttle_seen(config: dict, seconds: float = 4.0) -> int:
    """The largest throttle time librdkafka reports while producing for ``seconds``."""
    seen = [0]

    def stats(text: str) -> None:
        for b in json.loads(text).get("brokers", {}).values():
            seen[0] = max(seen[0], b.get("throttle", {}).get("max", 0))

    p = Producer({**config, "acks": 1, "linger.ms": 5, "batch.size": 16384, "queue.buffering.max.kbytes": 2048,
                  "statistics.interval.ms": 500, "stats_cb": stats})
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            p.produce(TOPIC, b"z" * 1000)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.poll(1.0)
    p.purge()
    p.flush(10)
    return seen[0]


def test_the_sasl_user_is_the_quota_user(broker):
    cluster, address = broker
    configs(cluster, "--alter", "--user", "carol", "--add-config", "SCRAM-SHA-512=[password=carol-secret]")
    wait_until(lambda: logs_in(address, "SCRAM-SHA-512", "carol", "carol-secret"), 30, "carol's login")
    configs(cluster, "--alter", "--user", "carol", "--add-config", "producer_byte_rate=50000")
    wait_until(lambda: "applied users config of carol: {" in cluster.brokers[0].log_path.read_text(errors="replace")
               and "producer_byte_rate" in cluster.brokers[0].log_path.read_text(errors="replace"), 30,
               "carol's quota applied")
    assert throttle_seen(sasl(address, "SCRAM-SHA-512", "carol", "carol-secret")) > 0
    assert throttle_seen({"bootstrap.servers": cluster.bootstrap}) == 0  # ANONYMOUS has no quota
