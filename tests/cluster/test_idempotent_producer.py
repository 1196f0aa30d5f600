"""End to end with real broker processes (KIP-98's idempotent producer,
seed 004 leader-failure case 2): an idempotent producer keeps producing through a SIGKILL of the
partition leader (3 brokers, RF=3, min.insync.replicas=2, acks=all), and
retries of batches the old leader had already replicated reach the new
leader, which learnt the producer's sequences as a follower, and are
answered with their original offsets instead of being written again.

The window is made, not hoped for: the third replica is paused (SIGSTOP,
still in the ISR, so the high watermark stands still), the producer sends
more records, and the leader is killed once the next leader's log holds
some of them while none is acknowledged; the paused replica resumes and
the producer keeps sending. Checked for confluent-kafka
(``enable.idempotence=true``) and kafka-python (idempotent by default),
record by record over 6,000 unique payloads to one partition: each was
acknowledged, is in the log exactly once at the offset it was
acknowledged at, in send order; the log holds nothing else; the successor
wrote the tail."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from kavka.protocol.records.batch import iter_batches

from .cluster_helpers import wait_until
from .replication_helpers import REPLICATION_CONFIG, consume_all, create_topic, partition_state, wait_state

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

RECORDS = 6_000
SENT = [b"record-%06d" % i for i in range(RECORDS)]
# A paused replica stays in the ISR this long: longer than the window.
CONFIG = {**REPLICATION_CONFIG, "replica.lag.time.max.ms": "10000"}


def _assignment(cluster, topic: str) -> list[int]:
    client = cluster._zk()
    try:
        return json.loads(client.get(f"/brokers/topics/{topic}")[0])["partitions"]["0"]
    finally:
        client.stop()
        client.close()


def _log_end(cluster, broker_id: int, topic: str) -> int:
    """The end offset of one replica of partition 0, read from its segment files."""
    end = 0
    for segment in sorted((Path(cluster.brokers[broker_id].directory) / "logs" / f"{topic}-0").glob("*.log")):
        for _, h in iter_batches(segment.read_bytes()):
            end = max(end, h.base_offset + h.last_offset_delta + 1)
    return end


class _Confluent:
    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.topic, self.acked, self.failed = topic, {}, []
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 2,
            "batch.num.messages": 100, "message.timeout.ms": 90_000, "retry.backoff.ms": 200,
            "topic.metadata.refresh.interval.ms": 1000,
        })

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked[msg.value()] = msg.offset()
        else:
            self.failed.append(str(err))

    def send(self, value: bytes) -> None:  # far below queue.buffering.max.messages: never refused
        self.producer.produce(self.topic, value, partition=0, on_delivery=self._delivered)
        self.producer.poll(0)

    def acked_count(self) -> int:
        self.producer.poll(0.01)
        return len(self.acked)

    def finish(self) -> None:
        assert self.producer.flush(90) == 0, "records still unanswered after 90 s"


class _KafkaPython:
    def __init__(self, bootstrap: str, topic: str) -> None:
        from kafka import KafkaProducer

        self.topic, self.acked, self.failed = topic, {}, []
        self.producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all", linger_ms=2,
                                      retry_backoff_ms=200, metadata_max_age_ms=1000, request_timeout_ms=10_000,
                                      delivery_timeout_ms=90_000)
        assert self.producer.config["enable_idempotence"], "kafka-python 3 is idempotent by default"

    def send(self, value: bytes) -> None:
        f = self.producer.send(self.topic, value=value, partition=0)
        f.add_callback(lambda md: self.acked.__setitem__(value, md.offset))
        f.add_errback(lambda e: self.failed.append(repr(e)))

    def acked_count(self) -> int:
        return len(self.acked)

    def finish(self) -> None:
        self.producer.flush(90)  # raises KafkaTimeoutError if records are still unanswered
        self.producer.close(10)


def _through_leader_kill(make_cluster, topic: str, make_producer) -> None:
    cluster = make_cluster(brokers=3, config=CONFIG)
    create_topic(cluster, topic, config={"min.insync.replicas": "2"})
    leader = wait_state(cluster, topic, lambda s: len(s["isr"]) == 3, "an ISR of 3")["leader"]
    # The offline election takes the first live in-sync replica in assignment order.
    successor, laggard = [r for r in _assignment(cluster, topic) if r != leader]
    producer = make_producer(cluster.bootstrap, topic)
    half, three_quarters = RECORDS // 2, 3 * RECORDS // 4
    for value in SENT[:half]:
        producer.send(value)
    wait_until(lambda: producer.acked_count() == half, 60, "the first half acknowledged")
    cluster.pause_broker(laggard)
    try:
        for value in SENT[half:three_quarters]:
            producer.send(value)
        wait_until(lambda: _log_end(cluster, successor, topic) > half, 30,
                   "the next leader holding records sent after the pause")
        assert producer.acked_count() == half, "acknowledged while an in-sync replica lacks them"
        cluster.kill_broker(leader)  # replicated, never acknowledged: the producer retries them
    finally:
        cluster.resume_broker(laggard)
    for value in SENT[three_quarters:]:  # keeps producing while the leadership moves
        producer.send(value)
    producer.finish()
    assert not producer.failed, producer.failed[:5]
    _check(cluster, topic, leader, successor, producer.acked)


def _check(cluster, topic: str, victim: int, successor: int, acked: dict[bytes, int]) -> None:
    consumed = consume_all(cluster, topic)
    counts = Counter(v for _, v in consumed)
    twice = sorted(v for v, n in counts.items() if n > 1)
    lost = [v for v in SENT if counts[v] == 0]
    unknown = sorted(set(counts) - set(SENT))
    assert not twice, f"{len(twice)} records written twice, e.g. {twice[:3]}"
    assert not lost, f"{len(lost)} records lost, e.g. {lost[:3]}"
    assert not unknown, f"records never sent: {unknown[:3]}"
    assert [v for _, v in consumed] == SENT, "records out of send order"
    assert sorted(acked) == SENT, f"{RECORDS - len(acked)} records never acknowledged"
    at = dict(consumed)
    wrong = [(v, o, at.get(o)) for v, o in acked.items() if at.get(o) != v]
    assert not wrong, f"{len(wrong)} acknowledged records not at their offset, e.g. {wrong[:3]}"
    state = partition_state(cluster, topic)
    assert state["leader"] == successor != victim and state["leader_epoch"] > 0, state


def test_confluent_idempotent_producer_through_leader_kill(make_cluster):
    _through_leader_kill(make_cluster, "idem-confluent", _Confluent)


def test_kafka_python_default_producer_through_leader_kill(make_cluster):
    _through_leader_kill(make_cluster, "idem-kafka-python", _KafkaPython)


def _start(make_cluster, topic: str):
    cluster = make_cluster(brokers=3, config=REPLICATION_CONFIG)
    create_topic(cluster, topic, config={"min.insync.replicas": "2"})
    first = wait_state(cluster, topic, lambda s: len(s["isr"]) == 3, "an ISR of 3")
    return cluster, first["leader"]


def test_retry_answered_with_original_offsets_by_the_new_leader(make_cluster):
    """Deterministic form of the above with hand-made requests: a batch
    acknowledged by the old leader and retried to the new one after a
    SIGKILL gets its original offsets; a gap and an old epoch are refused;
    after the old leader restarts and leads (or follows) a second change,
    retries are still recognised; the log holds every record once."""
    from kavka.protocol.messages import InitProducerIdRequest, ProduceRequest
    from kavka.protocol.records.builder import build_batch
    from kavka.protocol.records.record import SimpleRecord

    from .cluster_helpers import RawConnection

    topic = "idem-raw"
    cluster, victim = _start(make_cluster, topic)
    with RawConnection(cluster.brokers[victim].address) as conn:
        init = conn.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4)
    assert init.error_code == 0 and init.producer_epoch == 0
    pid = init.producer_id

    def produce(address: str, seq: int, count: int = 3, epoch: int = 0):
        batch = build_batch([SimpleRecord(b"k", b"v%d" % (seq + i), 1000 + i) for i in range(count)],
                            producer_id=pid, producer_epoch=epoch, base_sequence=seq)
        req = ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[ProduceRequest.TopicData(
            name=topic, partition_data=[ProduceRequest.TopicData.PartitionData(index=0, records=batch)])])
        with RawConnection(address) as conn:
            p = conn.request(req, 9).responses[0].partition_responses[0]
        return p.error_code, p.base_offset

    old = cluster.brokers[victim].address
    assert produce(old, 0) == (0, 0)
    assert produce(old, 3) == (0, 3)
    assert produce(old, 0) == (0, 0)  # a retry on the same leader
    cluster.kill_broker(victim)
    state = wait_state(cluster, topic, lambda s: s["leader"] not in (victim, -1), "a new leader")
    new = cluster.brokers[state["leader"]].address
    deadline = time.monotonic() + 30
    while (answer := produce(new, 3))[0] != 0 and time.monotonic() < deadline:
        time.sleep(0.2)  # NOT_LEADER until the LeaderAndIsr arrives
    assert answer == (0, 3)
    assert produce(new, 6) == (0, 6)
    assert produce(new, 10)[0] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(new, 0, epoch=1) == (0, 9)  # a new epoch restarts at 0
    assert produce(new, 9, epoch=0)[0] == 47  # INVALID_PRODUCER_EPOCH: fenced
    # The killed broker restarts (its state from snapshots and its log),
    # catches up, and a second leader change follows: still deduplicated.
    cluster.start_broker(victim)
    cluster.wait_registered({victim}, 60)
    wait_state(cluster, topic, lambda s: len(s["isr"]) == 3, "the restarted broker back in the ISR", 60)
    cluster.kill_broker(state["leader"])
    third = wait_state(cluster, topic, lambda s: s["leader"] not in (state["leader"], -1), "a third leader")
    deadline = time.monotonic() + 30
    while (answer := produce(cluster.brokers[third["leader"]].address, 0, epoch=1))[0] != 0 \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert answer == (0, 9)
    values = [v for _, v in consume_all(cluster, topic)]
    assert values == [b"v%d" % i for i in range(9)] + [b"v0", b"v1", b"v2"]
