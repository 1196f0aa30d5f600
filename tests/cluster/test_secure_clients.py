"""Real clients against a secured cluster (the one ``kavka up --secure``
makes: SASL_SSL with SCRAM-SHA-512 for clients and between brokers, mutual
TLS on a second listener, the ACL authorizer with an admin super user and
an application user allowed on every topic and group).

confluent-kafka (with the generated client.properties as a dict), kcat
(``-F client.properties``), kafka-python and aiokafka each produce, consume
in a group and commit; a transactional confluent-kafka producer commits one
transaction and aborts another, and a read_committed reader sees exactly
the committed one; a wrong password fails cleanly for each client (an
authentication error, no hang, nothing written); Kavka's own tools work with
``--command-config``; mutual TLS with the client certificate gets the
client user's rights. Every client also checks the broker's certificate
against the generated CA (endpoint identification on: SAN 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import uuid

import pytest

from kavka.tools.cluster import LocalCluster
from kavka.tools.secure_cluster import ADMIN_USER

from .cluster_helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

N = 300
CONFIG = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}


@pytest.fixture(scope="module")
def cluster(zk_server, tmp_path_factory):
    from kazoo.client import KazooClient

    chroot = f"/kavka-secure-{uuid.uuid4().hex[:8]}"
    c = LocalCluster(3, tmp_path_factory.mktemp("secure"), zookeeper=zk_server.connect_string + chroot,
                     config=CONFIG, secure=True)
    c.start()
    try:
        yield c
    finally:
        c.stop()
        zk = KazooClient(hosts=zk_server.connect_string)
        zk.start(10)
        try:
            zk.delete(chroot, recursive=True)
        finally:
            zk.stop()
            zk.close()


def create_topic(cluster: LocalCluster, name: str, partitions: int = 3) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(cluster.client_config(ADMIN_USER))
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    wait_until(lambda: name in admin.list_topics(timeout=10).topics, 20, f"topic {name}")


def values(prefix: str) -> list[bytes]:
    return [f"{prefix}-{i:05d}".encode() for i in range(N)]


def kavka(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kavka", *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_generated_files_are_private_and_in_librdkafka_keys(cluster):
    s = cluster.secure
    for path in (s.client_properties_path, s.admin_properties_path, s.mtls_properties_path, s.pki.client_key,
                 *(s.pki.broker_keystore(b) for b in cluster.brokers), *(b.properties for b in cluster.brokers.values())):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    keys = [line.split("=", 1)[0] for line in s.client_properties_path.read_text().splitlines()
            if line and not line.startswith("#")]
    assert keys == ["security.protocol", "sasl.mechanism", "sasl.username", "sasl.password", "ssl.ca.location"]


# -- confluent-kafka --------------------------------------------------------------------

def test_confluent_kafka_produces_consumes_in_a_group_and_commits(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition

    create_topic(cluster, "sec-ck")
    conf = cluster.client_config()  # the client.properties, as a dict, and the bootstrap servers
    p = Producer({**conf, "acks": "all", "enable.idempotence": True})
    acked: list[bytes] = []
    for v in values("ck"):
        p.produce("sec-ck", v, on_delivery=lambda err, msg: acked.append(msg.value()) if err is None else None)
    assert p.flush(30) == 0 and sorted(acked) == values("ck")
    c = Consumer({**conf, "group.id": "sec-ck-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["sec-ck"])
    got: list[bytes] = []
    for _ in range(100):
        if len(got) >= N:
            break
        got += [m.value() for m in c.consume(100, 0.5) if m.error() is None]
    c.commit(asynchronous=False)
    committed = c.committed([TopicPartition("sec-ck", p) for p in range(3)], timeout=10)
    c.close()
    assert sorted(got) == values("ck")
    # librdkafka's sticky partitioner may leave a partition empty: its committed
    # offset is OFFSET_INVALID (-1001), counted as 0 like the other clients' None.
    assert sum(max(tp.offset, 0) for tp in committed) == N


def test_confluent_kafka_transactions_over_sasl_ssl(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition

    create_topic(cluster, "sec-txn", partitions=2)
    p = Producer({**cluster.client_config(), "transactional.id": "sec-txn-1", "acks": "all"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(50):
        p.produce("sec-txn", b"committed-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(20):
        p.produce("sec-txn", b"aborted-%d" % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    c = Consumer({**cluster.client_config(), "group.id": "sec-txn-reader", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.assign([TopicPartition("sec-txn", part, 0) for part in range(2)])
    got: list[bytes] = []
    for _ in range(40):
        got += [m.value() for m in c.consume(100, 0.25) if m.error() is None]
        if len(got) >= 50:
            break
    c.close()
    assert sorted(got) == sorted(b"committed-%d" % i for i in range(50))


def test_confluent_kafka_with_a_wrong_password_fails_with_an_authentication_error(cluster):
    from confluent_kafka import KafkaError, Producer

    errors: list = []
    p = Producer({**cluster.client_config(), "sasl.password": "not-the-password", "error_cb": errors.append,
                  "message.timeout.ms": 3000})
    outcome: list = []
    p.produce("sec-ck", b"never", on_delivery=lambda err, msg: outcome.append(err))
    wait_until(lambda: p.poll(0.2) is not None and any(e.code() == KafkaError._AUTHENTICATION for e in errors),
               20, "librdkafka's authentication error")
    p.flush(10)
    assert outcome and outcome[0] is not None  # nothing written
    assert all("not-the-password" not in e.str() for e in errors)


def test_mutual_tls_with_the_client_certificate(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition

    create_topic(cluster, "sec-mtls", partitions=1)
    mtls = {"bootstrap.servers": cluster.mtls_bootstrap, **cluster.secure.mtls_properties()}
    p = Producer({**mtls, "acks": "all"})
    for v in values("mtls")[:20]:
        p.produce("sec-mtls", v)
    assert p.flush(30) == 0
    c = Consumer({**mtls, "group.id": "sec-mtls", "enable.auto.commit": False})
    c.assign([TopicPartition("sec-mtls", 0, 0)])
    got: list[bytes] = []
    for _ in range(40):
        got += [m.value() for m in c.consume(100, 0.25) if m.error() is None]
        if len(got) >= 20:
            break
    c.close()
    assert got == values("mtls")[:20]
    # no certificate, no connection
    bare = Producer({"bootstrap.servers": cluster.mtls_bootstrap, "security.protocol": "SSL",
                     "ssl.ca.location": str(cluster.secure.pki.ca), "message.timeout.ms": 3000})
    outcome: list = []
    bare.produce("sec-mtls", b"x", on_delivery=lambda err, msg: outcome.append(err))
    bare.flush(10)
    assert outcome and outcome[0] is not None


# -- kcat -------------------------------------------------------------------------------

def test_kcat_with_the_generated_client_properties(cluster):
    create_topic(cluster, "sec-kcat", partitions=1)
    props = str(cluster.secure.client_properties_path)
    lines = "\n".join(v.decode() for v in values("kcat")) + "\n"
    produced = subprocess.run(["kcat", "-b", cluster.bootstrap, "-F", props, "-P", "-t", "sec-kcat"],
                              input=lines, capture_output=True, text=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(["kcat", "-b", cluster.bootstrap, "-F", props, "-G", "sec-kcat-group", "-o",
                               "beginning", "-c", str(N), "-e", "sec-kcat"],
                              capture_output=True, text=True, timeout=60)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == [v.decode() for v in values("kcat")]
    described = kavka("consumer-groups", "--bootstrap-server", cluster.bootstrap, "--command-config",
                      str(cluster.secure.admin_properties_path), "--describe", "--group", "sec-kcat-group")
    rows = [line.split() for line in described.stdout.splitlines() if line.startswith("sec-kcat-group")]
    assert described.returncode == 0 and [r[1:5] for r in rows] == [["sec-kcat", "0", str(N), str(N)]], \
        described.stdout + described.stderr  # kcat's group committed every offset


def test_kcat_with_a_wrong_password_fails(cluster, tmp_path):
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(cluster.secure.client_properties_path.read_text().replace(
        f"sasl.password={cluster.secure.passwords['client']}", "sasl.password=not-the-password"))
    r = subprocess.run(["kcat", "-b", cluster.bootstrap, "-F", str(wrong), "-L", "-m", "5"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "Authentication failed" in r.stderr, r.stderr


# -- kafka-python ------------------------------------------------------------------------

def kafka_python_settings(cluster: LocalCluster, password: str | None = None) -> dict:
    s = cluster.secure
    return {"bootstrap_servers": cluster.bootstrap.split(","), "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "client",
            "sasl_plain_password": password or s.passwords["client"], "ssl_cafile": str(s.pki.ca)}


def test_kafka_python_produces_consumes_in_a_group_and_commits(cluster):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    create_topic(cluster, "sec-kp")
    producer = KafkaProducer(acks="all", **kafka_python_settings(cluster))
    for v in values("kp"):
        producer.send("sec-kp", v)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer("sec-kp", group_id="sec-kp-group", auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=20_000, **kafka_python_settings(cluster))
    got: list[bytes] = []
    for m in consumer:
        got.append(m.value)
        if len(got) == N:
            break
    consumer.commit()
    committed = sum(consumer.committed(TopicPartition("sec-kp", p)) or 0 for p in range(3))
    consumer.close()
    assert sorted(got) == values("kp") and committed == N


def test_kafka_python_with_a_wrong_password_fails(cluster):
    import kafka.errors as Errors
    from kafka import KafkaProducer

    with pytest.raises(Errors.KafkaError) as info:
        KafkaProducer(max_block_ms=5000, request_timeout_ms=5000, bootstrap_timeout_ms=5000,
                      **kafka_python_settings(cluster, password="not-the-password"))
    assert "not-the-password" not in str(info.value)


# -- aiokafka ----------------------------------------------------------------------------

def aiokafka_settings(cluster: LocalCluster, password: str | None = None) -> dict:
    from aiokafka.helpers import create_ssl_context

    s = cluster.secure
    return {"bootstrap_servers": cluster.bootstrap, "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "client",
            "sasl_plain_password": password or s.passwords["client"],
            "ssl_context": create_ssl_context(cafile=str(s.pki.ca))}


def test_aiokafka_produces_consumes_in_a_group_and_commits(cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    create_topic(cluster, "sec-aio")

    async def run() -> tuple[list[bytes], int]:
        producer = AIOKafkaProducer(acks="all", **aiokafka_settings(cluster))
        await producer.start()
        try:
            for v in values("aio"):
                await producer.send("sec-aio", v)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("sec-aio", group_id="sec-aio-group", auto_offset_reset="earliest",
                                    enable_auto_commit=False, **aiokafka_settings(cluster))
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                while len(got) < N:
                    batch = await consumer.getmany(timeout_ms=500)
                    got += [m.value for ms in batch.values() for m in ms]
            await consumer.commit()
            committed = sum([await consumer.committed(TopicPartition("sec-aio", p)) or 0 for p in range(3)])
        finally:
            await consumer.stop()
        return got, committed

    got, committed = asyncio.run(run())
    assert sorted(got) == values("aio") and committed == N


def test_aiokafka_with_a_wrong_password_fails(cluster):
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def run() -> None:
        producer = AIOKafkaProducer(request_timeout_ms=5000, **aiokafka_settings(cluster, "not-the-password"))
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(KafkaError) as info:
        asyncio.run(run())
    assert "not-the-password" not in str(info.value)


# -- Kavka's own tools --------------------------------------------------------------------

def test_kavka_tools_with_command_config(cluster, tmp_path):
    s = cluster.secure
    client, admin, b = str(s.client_properties_path), str(s.admin_properties_path), cluster.bootstrap
    r = kavka("topics", "--bootstrap-server", b, "--command-config", client, "--create", "--topic", "sec-tools",
              "--partitions", "2", "--replication-factor", "3")
    assert r.returncode == 0, r.stderr
    r = kavka("topics", "--bootstrap-server", b, "--command-config", client, "--describe", "--topic", "sec-tools")
    assert r.returncode == 0 and "PartitionCount: 2" in r.stdout, r.stderr
    r = subprocess.run([sys.executable, "-m", "kavka", "console-producer", "--bootstrap-server", b,
                        "--command-config", client, "--topic", "sec-tools"],
                       input="one\ntwo\nthree\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = kavka("console-consumer", "--bootstrap-server", b, "--command-config", client, "--topic", "sec-tools",
              "--from-beginning", "--max-messages", "3", "--timeout-ms", "20000")
    assert r.returncode == 0 and sorted(r.stdout.split()) == ["one", "three", "two"], r.stderr
    r = kavka("console-consumer", "--bootstrap-server", b, "--command-config", client, "--topic", "sec-tools",
              "--group", "sec-tools-group", "--from-beginning", "--max-messages", "3", "--timeout-ms", "20000")
    assert r.returncode == 0 and sorted(r.stdout.split()) == ["one", "three", "two"], r.stderr
    r = kavka("consumer-groups", "--bootstrap-server", b, "--command-config", admin, "--list")
    assert r.returncode == 0 and "sec-tools-group" in r.stdout.split(), r.stderr
    r = kavka("acls", "--bootstrap-server", b, "--command-config", admin, "--list", "--topic", "*")
    assert r.returncode == 0 and "User:client" in r.stdout, r.stderr
    r = kavka("preferred-replica-election", "--bootstrap-server", b, "--command-config", admin)
    assert r.returncode == 0, r.stderr
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"sec-tools","partition":0,"replicas":[2,1,0]}]}')
    r = kavka("reassign-partitions", "--bootstrap-server", b, "--command-config", admin, "--execute",
              "--reassignment-json-file", str(plan))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_until(lambda: kavka("reassign-partitions", "--bootstrap-server", b, "--command-config", admin, "--verify",
                             "--reassignment-json-file", str(plan)).returncode == 0, 30, "the reassignment")
    r = kavka("replica-verification", "--bootstrap-server", b, "--command-config", admin, "--topic-white-list",
              "sec-tools", "--time-limit-ms", "3000")
    assert r.returncode == 0, r.stdout + r.stderr
    # kafka-configs.sh's way to add a SCRAM user (AlterUserScramCredentials), who can then log in
    r = kavka("configs", "--bootstrap-server", b, "--command-config", admin, "--alter", "--entity-type", "users",
              "--entity-name", "carol", "--add-config", "SCRAM-SHA-512=[password=carol-Secret-9]")
    assert r.returncode == 0, r.stdout + r.stderr
    r = kavka("configs", "--bootstrap-server", b, "--command-config", admin, "--describe", "--entity-type", "users",
              "--entity-name", "carol")
    assert r.returncode == 0 and "SCRAM-SHA-512=iterations=" in r.stdout and "carol-Secret-9" not in r.stdout, \
        r.stdout + r.stderr
    carol = tmp_path / "carol.properties"
    carol.write_text(s.client_properties_path.read_text().replace("sasl.username=client", "sasl.username=carol")
                     .replace(f"sasl.password={s.passwords['client']}", "sasl.password=carol-Secret-9"))
    wait_until(lambda: kavka("topics", "--bootstrap-server", b, "--command-config", str(carol), "--list",
                             timeout=30).returncode == 0, 30, "carol's first login")


def test_kavka_tools_refuse_a_wrong_password_naming_broker_and_mechanism(cluster, tmp_path):
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(cluster.secure.client_properties_path.read_text().replace(
        f"sasl.password={cluster.secure.passwords['client']}", "sasl.password=not-the-password"))
    r = kavka("topics", "--bootstrap-server", cluster.bootstrap, "--command-config", str(wrong), "--list",
              timeout=30)
    assert r.returncode == 1 and r.stdout == ""
    assert "SCRAM-SHA-512" in r.stderr and "127.0.0.1:" in r.stderr and "not-the-password" not in r.stderr, r.stderr


def test_kavka_client_reauthenticates_before_the_broker_ends_its_session(make_cluster):
    """KIP-368 against a real broker: ``connections.max.reauth.ms`` bounds
    the session, SaslAuthenticate tells the client, and Kavka's client
    re-authenticates on the same connection before it ends; a client that
    did not would have the connection closed on its first request after it."""
    from kavka.client.connection import BrokerConnection
    from kavka.protocol.messages import MetadataRequest

    cluster = make_cluster(brokers=1, secure=True, config={"connections.max.reauth.ms": "1500"})
    security = cluster.client_security("client")

    async def run() -> int:
        broker = cluster.brokers[0]
        async with BrokerConnection("127.0.0.1", broker.port, "reauth-test", security=security) as conn:
            for _ in range(4):  # 4 x 0.9 s: past two session lifetimes
                await conn.request(MetadataRequest(topics=[]))
                await asyncio.sleep(0.9)
            await conn.request(MetadataRequest(topics=[]))
            assert conn.connected
            return conn._next_correlation_id

    sent = asyncio.run(run())
    # ApiVersions + (SaslHandshake + 2 SaslAuthenticate) per exchange + 5 Metadata
    assert sent >= 1 + 3 * 3 + 5, sent
