"""One group member at a time with each of kafka-python, aiokafka and kcat
(``-G``) against a one-broker Kavka: the group gets every partition, the
commit is stored, and a second run of the same group reads only what was
produced after it (nothing twice, nothing skipped); the admin views
(list, describe, delete), ``kavka consumer-groups``, static membership and
the removal of a deleted topic's offsets. Three members sharing a topic,
with every client, are in test_groups_three_members.py."""

from __future__ import annotations

import asyncio
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from kavka.tools.cluster import LocalCluster

from .cluster_helpers import create_topic, produce

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PARTITIONS = 3
CONFIG = {"offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "1",
          "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = LocalCluster(1, tmp_path_factory.mktemp("groups-clients"),
                     zookeeper=f"{zookeeper}/kavka-groups-{uuid.uuid4().hex[:8]}", config=CONFIG)
    c.start()
    yield c
    c.stop()


def _produce(cluster, topic: str, tag: str, per_partition: int = 5) -> set[bytes]:
    values = {p: [f"{tag}-{p}-{i}".encode() for i in range(per_partition)] for p in range(PARTITIONS)}
    produce(cluster, topic, values)
    return {v for vs in values.values() for v in vs}


def _committed(cluster, group: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    try:
        return {tp.partition: tp.offset
                for tp in c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)}
    finally:
        c.close()


def _two_rounds(cluster, topic: str, group: str, consume) -> None:
    create_topic(cluster, topic, partitions=PARTITIONS)
    first = _produce(cluster, topic, "a")
    assert consume(len(first)) == first
    assert _committed(cluster, group, topic) == {p: 5 for p in range(PARTITIONS)}
    second = _produce(cluster, topic, "b")
    assert consume(len(second)) == second


def test_kafka_python_group(cluster):
    from kafka import KafkaConsumer

    def consume(n: int) -> set[bytes]:
        c = KafkaConsumer("groups-kp", bootstrap_servers=cluster.bootstrap, group_id="g-kp",
                          auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=20000)
        got = []
        try:
            for msg in c:
                got.append(msg.value)
                if len(got) >= n:
                    break
            c.commit()
        finally:
            c.close()
        assert len(got) == n, f"got {len(got)} of {n}"
        return set(got)

    _two_rounds(cluster, "groups-kp", "g-kp", consume)


def test_aiokafka_group(cluster):
    from aiokafka import AIOKafkaConsumer

    async def run(n: int) -> set[bytes]:
        c = AIOKafkaConsumer("groups-aio", bootstrap_servers=cluster.bootstrap, group_id="g-aio",
                             auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        got = []
        try:
            while len(got) < n:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=1000), 30)
                got += [m.value for ms in batch.values() for m in ms]
            await c.commit()
        finally:
            await c.stop()
        assert len(got) == n
        return set(got)

    _two_rounds(cluster, "groups-aio", "g-aio", lambda n: asyncio.run(run(n)))


def test_kcat_balanced_consumer(cluster):
    def consume(n: int) -> set[bytes]:
        cmd = ["kcat", "-b", cluster.bootstrap, "-G", "g-kcat", "groups-kcat", "-c", str(n), "-q",
               "-X", "auto.offset.reset=earliest", "-f", "%s\n"]
        proc = subprocess.run(cmd, capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        lines = proc.stdout.decode().split()
        assert len(lines) == n
        return {line.encode() for line in lines}

    _two_rounds(cluster, "groups-kcat", "g-kcat", consume)


def test_admin_lists_describes_and_deletes_groups(cluster):
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    topic, group = "groups-admin", "g-admin"
    create_topic(cluster, topic, partitions=PARTITIONS)
    _produce(cluster, topic, "x")
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": "admin-member",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        got = 0
        for _ in range(200):
            msg = c.poll(0.1)
            if msg is not None and msg.error() is None:
                got += 1
                c.commit(message=msg, asynchronous=False)
            if got == 5 * PARTITIONS:
                break
        assert got == 5 * PARTITIONS
        listed = admin.list_consumer_groups(request_timeout=10).result(10)
        assert group in {g.group_id for g in listed.valid}
        desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result(10)
        assert desc.state == ConsumerGroupState.STABLE and [m.client_id for m in desc.members] == ["admin-member"]
        assert {tp.partition for tp in desc.members[0].assignment.topic_partitions} == set(range(PARTITIONS))
        busy = admin.delete_consumer_groups([group], request_timeout=10)[group]
        with pytest.raises(Exception, match="NON_EMPTY_GROUP|not empty"):
            busy.result(10)
    finally:
        c.close()
    desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result(10)
    assert desc.state == ConsumerGroupState.EMPTY and not desc.members
    admin.delete_consumer_groups([group], request_timeout=10)[group].result(10)
    assert _committed(cluster, group, topic) == {p: -1001 for p in range(PARTITIONS)}


def test_consumer_groups_command(cluster, capsys):
    from kavka.cli import main

    topic, group = "groups-cli", "g-cli"
    create_topic(cluster, topic, partitions=PARTITIONS)
    _produce(cluster, topic, "y")  # 5 per partition
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, p, 2) for p in range(PARTITIONS)], asynchronous=False)
    c.close()
    b = cluster.bootstrap
    assert main(["consumer-groups", "--bootstrap-server", b, "--list"]) == 0
    assert group in capsys.readouterr().out.split()
    assert main(["consumer-groups", "--bootstrap-server", b, "--describe", "--group", group]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith(group)]
    assert sorted((r[1], r[2], r[3], r[4], r[5]) for r in rows) == [
        (topic, str(p), "2", "5", "3") for p in range(PARTITIONS)]
    assert main(["consumer-groups", "--bootstrap-server", b, "--reset-offsets", "--group", group,
                 "--topic", f"{topic}:0,1", "--shift-by", "10"]) == 0  # dry run: nothing written
    assert _committed(cluster, group, topic) == {p: 2 for p in range(PARTITIONS)}
    assert main(["consumer-groups", "--bootstrap-server", b, "--reset-offsets", "--group", group,
                 "--topic", f"{topic}:0,1", "--shift-by", "10", "--execute"]) == 0  # clamped to the end
    assert main(["consumer-groups", "--bootstrap-server", b, "--reset-offsets", "--group", group,
                 "--all-topics", "--to-earliest", "--execute"]) == 0
    assert _committed(cluster, group, topic) == {p: 0 for p in range(PARTITIONS)}
    assert main(["consumer-groups", "--bootstrap-server", b, "--reset-offsets", "--group", group,
                 "--topic", topic, "--to-offset", "4", "--execute"]) == 0
    assert _committed(cluster, group, topic) == {p: 4 for p in range(PARTITIONS)}
    capsys.readouterr()
    assert main(["consumer-groups", "--bootstrap-server", b, "--reset-offsets", "--group", group,
                 "--topic", "no-such-topic", "--to-latest"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["consumer-groups", "--bootstrap-server", b, "--delete", "--group", group]) == 0
    assert _committed(cluster, group, topic) == {p: -1001 for p in range(PARTITIONS)}


def test_consumer_groups_command_describes_both_kinds(cluster, capsys):
    """--describe --members/--state, as kafka-consumer-groups.sh: a classic
    group and a consumer-protocol group (KIP-848, with its epochs)."""
    from kavka.cli import main

    from .cluster_helpers import wait_until

    topic = "groups-cli-kinds"
    create_topic(cluster, topic, partitions=PARTITIONS)
    consumers = {
        "g-modern": Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g-modern", "client.id": "modern",
                              "group.protocol": "consumer"}),
        "g-classic": Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g-classic",
                               "client.id": "classic", "partition.assignment.strategy": "range"}),
    }
    try:
        for c in consumers.values():
            c.subscribe([topic])

        def assigned() -> bool:
            for c in consumers.values():
                c.poll(0.1)
            return all(len(c.assignment()) == PARTITIONS for c in consumers.values())
        wait_until(assigned, 60, "both consumers owning every partition", 0)
        b = cluster.bootstrap
        capsys.readouterr()

        def rows(*args: str) -> list[list[str]]:
            assert main(["consumer-groups", "--bootstrap-server", b, "--describe", *args]) == 0
            return [line.split() for line in capsys.readouterr().out.splitlines()]

        every = f"{topic}:" + ",".join(map(str, range(PARTITIONS)))
        head, member = rows("--group", "g-modern", "--members", "--verbose")
        assert head == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                        "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        assert (member[0], member[3], member[4], member[5], member[6], member[7], member[8]) == (
            "g-modern", "modern", str(PARTITIONS), "1", every, "1", every)
        head, state = rows("--group", "g-modern", "--state", "--verbose")
        assert head[-2:] == ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        assert (state[0], state[3], state[4], state[5], state[6], state[7]) == (
            "g-modern", "uniform", "Stable", "1", "1", "1")
        head, member = rows("--group", "g-classic", "--members", "--verbose")
        assert head == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
        assert (member[0], member[3], member[4], member[5]) == ("g-classic", "classic", str(PARTITIONS), every)
        head, state = rows("--group", "g-classic", "--state")
        assert (state[0], state[3], state[4], state[5]) == ("g-classic", "range", "Stable", "1")
        assert main(["consumer-groups", "--bootstrap-server", b, "--verbose", "--group", "g-modern",
                     "--describe"]) == 2
        assert "--verbose goes with --members or --state" in capsys.readouterr().err
    finally:
        for c in consumers.values():
            c.close()


def test_static_member_restart_keeps_its_place(cluster):
    from confluent_kafka.admin import AdminClient

    topic, group = "groups-static", "g-static"
    create_topic(cluster, topic, partitions=PARTITIONS)
    first = _produce(cluster, topic, "s")

    def run(expected: int) -> tuple[set[bytes], str]:
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "group.instance.id": "static-1",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 30000})
        c.subscribe([topic])
        got: set[bytes] = set()
        try:
            for _ in range(300):
                msg = c.poll(0.1)
                if msg is not None and msg.error() is None:
                    got.add(msg.value())
                    c.commit(message=msg, asynchronous=False)
                if len(got) == expected:
                    break
            return got, c.memberid()
        finally:
            c.close()  # a static member does not leave on close (KIP-345)

    got, member = run(len(first))
    assert got == first
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result(10)
    assert [(m.member_id, m.group_instance_id) for m in desc.members] == [(member, "static-1")]
    second = _produce(cluster, topic, "t")
    got, new_member = run(len(second))
    assert got == second and new_member != member
    desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result(10)
    assert [(m.member_id, m.group_instance_id) for m in desc.members] == [(new_member, "static-1")]


def test_deleting_a_topic_removes_its_committed_offsets(cluster):
    import time

    from .cluster_helpers import delete_topic

    topic, group = "groups-deleted", "g-deleted"
    create_topic(cluster, topic, partitions=PARTITIONS)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, p, 3) for p in range(PARTITIONS)], asynchronous=False)
    c.close()
    assert _committed(cluster, group, topic) == {p: 3 for p in range(PARTITIONS)}
    delete_topic(cluster, topic)
    deadline = time.monotonic() + 30
    while _committed(cluster, group, topic) != {p: -1001 for p in range(PARTITIONS)}:
        assert time.monotonic() < deadline, "offsets of the deleted topic still committed after 30 s"
        time.sleep(0.2)
