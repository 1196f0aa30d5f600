"""KIP-848 consumer-protocol groups end to end: confluent-kafka
(librdkafka) consumers with ``group.protocol=consumer`` against a 3-broker
Kavka. Two consumers share the partitions with no partition owned twice;
one leaves and the other takes all; a consumer that stops heartbeating is
fenced after ``group.consumer.session.timeout.ms``; committed offsets
survive killing the coordinator; a classic consumer cannot join the group
(INCONSISTENT_GROUP_PROTOCOL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kavka.group.state import partition_for

from .cluster_helpers import consumer_protocol_consumer as _consumer
from .cluster_helpers import create_topic, leaders, produce, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PARTITIONS = 6
OFFSETS_PARTITIONS = 6
CONFIG = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS), "offsets.topic.replication.factor": "3",
          "group.consumer.session.timeout.ms": "6000", "group.consumer.heartbeat.interval.ms": "500",
          "zookeeper.session.timeout.ms": "6000"}


def _owned(consumers: list[Consumer]) -> list[set[int]]:
    for c in consumers:
        c.poll(0.05)
    return [{tp.partition for tp in c.assignment()} for c in consumers]


def _split(consumers: list[Consumer], total: int):
    owned = _owned(consumers)
    everything = set().union(*owned)
    disjoint = sum(len(o) for o in owned) == len(everything)
    assert disjoint, f"a partition owned twice: {owned}"
    return owned if everything == set(range(total)) and all(owned) else None


def test_two_consumers_share_then_one_takes_all_and_commits_survive(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    topic, group = "kip848", "g-kip848"
    create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3)
    a, b = _consumer(cluster, group, topic, "a"), _consumer(cluster, group, topic, "b")
    try:
        owned = wait_until(lambda: _split([a, b], PARTITIONS), 60, "two consumers sharing the partitions", 0)
        assert sorted(len(o) for o in owned) == [3, 3]
        b.close()
        wait_until(lambda: _owned([a])[0] == set(range(PARTITIONS)), 60, "the remaining consumer owning all", 0)
        # produced now, so the polls above (which drop what they read) saw none;
        # consume everything and commit it with the member epoch
        produce(cluster, topic, {p: [f"r-{p}-{i}".encode() for i in range(10)] for p in range(PARTITIONS)})
        seen: set[bytes] = set()

        def drain():
            msg = a.poll(0.1)
            if msg is not None and msg.error() is None:
                seen.add(msg.value())
            return len(seen) == PARTITIONS * 10
        wait_until(drain, 60, "every record consumed", 0)
        a.commit(asynchronous=False)
    finally:
        a.close()

    slot = partition_for(group, OFFSETS_PARTITIONS)
    coordinator = leaders(cluster, "__consumer_offsets")[slot]
    cluster.kill_broker(coordinator)
    wait_until(lambda: leaders(cluster, "__consumer_offsets")[slot] not in (coordinator, -1), 60,
               "a new coordinator")
    late = _consumer(cluster, group, topic, "late")
    try:
        def committed():
            got = late.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=5)
            return {tp.partition: tp.offset for tp in got}
        assert wait_until(committed, 60, "the committed offsets after the kill") == {
            p: 10 for p in range(PARTITIONS)}
    finally:
        late.close()


_STOPPED_CONSUMER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
                  "client.id": "doomed"})
    c.subscribe([sys.argv[3]])
    deadline = time.monotonic() + 60
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.1)
    print("assigned", flush=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until the test kills it
        c.poll(0.1)
""")


def test_a_killed_consumer_is_fenced_after_the_session_timeout(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    topic, group = "kip848-fence", "g-fence"
    create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3)
    doomed = subprocess.Popen([sys.executable, "-c", _STOPPED_CONSUMER, cluster.bootstrap, group, topic],
                              stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    survivor = None
    try:
        assert doomed.stdout is not None
        assert doomed.stdout.readline().strip() == "assigned"
        survivor = _consumer(cluster, group, topic, "survivor")
        wait_until(lambda: _owned([survivor])[0], 60, "the survivor getting a share", 0)
        doomed.send_signal(signal.SIGKILL)  # no leave heartbeat: only the session timeout frees its partitions
        doomed.wait(10)
        wait_until(lambda: _owned([survivor])[0] == set(range(PARTITIONS)), 60,
                   "the survivor owning every partition once the killed member is fenced", 0)
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait(10)
        if survivor is not None:
            survivor.close()


def test_a_classic_consumer_cannot_join_a_consumer_group(make_cluster):
    cluster = make_cluster(brokers=1, config={"offsets.topic.replication.factor": "1",
                                              "offsets.topic.num.partitions": "2"})
    topic, group = "kip848-mixed", "g-mixed"
    create_topic(cluster, topic, partitions=2, replication_factor=1)
    modern = _consumer(cluster, group, topic, "modern")
    classic = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "group.protocol": "classic",
                        "session.timeout.ms": 6000})
    try:
        wait_until(lambda: _owned([modern])[0] == {0, 1}, 60, "the consumer-protocol member owning all", 0)
        classic.subscribe([topic])
        errors: list[KafkaError] = []

        def refused():
            try:
                msg = classic.poll(0.2)
                if msg is not None and msg.error() is not None:
                    errors.append(msg.error())
            except KafkaException as e:
                errors.append(e.args[0])
            return any(e.code() == KafkaError.INCONSISTENT_GROUP_PROTOCOL for e in errors)
        wait_until(refused, 60, "INCONSISTENT_GROUP_PROTOCOL for the classic member", 0)
        assert _owned([modern])[0] == {0, 1}
    finally:
        classic.close()
        modern.close()
