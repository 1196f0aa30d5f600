"""Record validation on the leader (Kafka's LogValidator) against real
broker processes: a poison pill (valid CRC, garbage records) sent by a raw
client is refused with INVALID_RECORD and, from Produce v8, the record at
fault in record_errors (KIP-467); a keyless record to a compacted topic and
a timestamp out of range are refused to confluent-kafka (librdkafka) with
INVALID_RECORD and INVALID_TIMESTAMP; a LogAppendTime topic stamps the
broker's time and a compression.type topic recompresses. Throughout, a
confluent-kafka producer and consumer on another topic keep working, and
the follower of the poisoned partition ends with exactly the leader's bytes
(it never receives the pill: the leader never stored it)."""

from __future__ import annotations

import threading
import time

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import ProduceRequest
from kavka.protocol.records import Compression, SimpleRecord, build_batch, decode_batch, iter_batches
from kavka.protocol.records.builder import assemble_batch
from kavka.protocol.records.record import encode_record

from .cluster_helpers import ProducerThread, RawConnection, consume, leaders, wait_until

pytestmark = pytest.mark.cluster

HOUR = 3_600_000


def create_topics(cluster, topics: dict[str, tuple[list[list[int]], dict[str, str]]]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment,
                                            config=config)
                                   for name, (assignment, config) in topics.items()], request_timeout=30)
    for future in futures.values():
        future.result(30)


class ConsumerThread:
    """confluent-kafka reading one partition from the start until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.values: list[bytes] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "validation-e2e",
                                   "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self._consumer.assign([TopicPartition(topic, 0, 0)])
        self._thread = threading.Thread(target=self._run, name=f"consumer-{topic}", daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                m = self._consumer.poll(0.1)
                if m is None:
                    continue
                if m.error() is not None:
                    self.errors.append(str(m.error()))
                else:
                    self.values.append(m.value())
        finally:
            self._consumer.close()

    def start(self) -> ConsumerThread:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def produce_request(topic: str, batch: bytes) -> ProduceRequest:
    return ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicData(name=topic, partition_data=[
            ProduceRequest.TopicData.PartitionData(index=0, records=batch)])])


def poison_pill(now: int) -> bytes:
    """Record 0 is fine, record 1 declares a key longer than itself; the
    batch's CRC is computed over all of it, as a broken producer would."""
    section = bytearray()
    encode_record(section, 0, 0, b"k", b"fine")
    section += bytes([12, 0, 0, 2, 40, 1, 0])  # length 6, offset delta 1, key length 20 with 2 bytes left
    return assemble_batch(bytes(section), base_offset=0, last_offset_delta=1, record_count=2, base_timestamp=now,
                          max_timestamp=now, attributes=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                          partition_leader_epoch=-1)


def confluent_errors(cluster, topic: str, records: list[dict]) -> list:
    """Produce each record (kwargs of Producer.produce) and return the
    delivery errors (None for a delivered one)."""
    from confluent_kafka import Producer

    results: list = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0, "retries": 0,
                  "message.timeout.ms": 20_000})
    for kwargs in records:
        p.produce(topic, on_delivery=lambda err, _msg: results.append(err), **kwargs)
        p.flush(20)
    assert len(results) == len(records)
    return results


def segment(broker, topic: str):
    return broker.directory / "logs" / f"{topic}-0" / ("0" * 20 + ".log")


def test_the_leader_refuses_bad_records_and_keeps_serving(make_cluster):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, TopicPartition

    cluster = make_cluster(brokers=2)
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    create_topics(cluster, {
        "traffic": ([[1, 0]], {}),
        "pill": ([[0, 1]], {}),
        "compacted": ([[0]], {"cleanup.policy": "compact"}),
        "clock": ([[0]], {"message.timestamp.before.max.ms": str(HOUR), "message.timestamp.after.max.ms": str(HOUR)}),
        "stamped": ([[0]], {"message.timestamp.type": "LogAppendTime"}),
        "squeezed": ([[0]], {"compression.type": "zstd"}),
    })
    for topic, lead in (("traffic", 1), ("pill", 0), ("compacted", 0), ("clock", 0), ("stamped", 0),
                        ("squeezed", 0)):
        wait_until(lambda t=topic, b=lead: leaders(cluster, t) == {0: b}, 30, f"leader {lead} for {topic}")

    reader = ConsumerThread(cluster.bootstrap, "traffic").start()
    with ProducerThread(cluster.bootstrap, "traffic", limit=3000) as traffic:
        now = int(time.time() * 1000)
        good = build_batch([SimpleRecord(b"k%d" % i, b"good-%d" % i, now) for i in range(3)])
        with RawConnection(leader.address) as conn:
            # the poison pill at v9 (flexible) and v8: INVALID_RECORD with the record at fault
            for version in (9, 8):
                (topic,) = conn.request(produce_request("pill", poison_pill(now)), version).responses
                (p,) = topic.partition_responses
                assert p.error_code == ErrorCode.INVALID_RECORD, ErrorCode.of(p.error_code).name
                assert [(e.batch_index, e.batch_index_error_message) for e in p.record_errors] == [
                    (1, "record key length 20 exceeds the 2 bytes left in the record")]
                assert "record 1 of the record batch at byte 0 for pill-0 is invalid" in p.error_message
            # before v8 the partition error alone
            (topic,) = conn.request(produce_request("pill", poison_pill(now)), 7).responses
            (p,) = topic.partition_responses
            assert p.error_code == ErrorCode.INVALID_RECORD and p.record_errors == []
            # two batches for one partition: Kafka's ProduceRequest refuses them
            (topic,) = conn.request(produce_request("pill", good + good), 9).responses
            assert topic.partition_responses[0].error_code == ErrorCode.INVALID_RECORD
            # the partition still takes good batches, at offset 0: nothing was stored before
            (topic,) = conn.request(produce_request("pill", good), 9).responses
            (p,) = topic.partition_responses
            assert (p.error_code, p.base_offset) == (0, 0)

        # confluent-kafka: a keyless record to a compacted topic, a timestamp out of range
        errors = confluent_errors(cluster, "compacted", [{"value": b"no key"}, {"key": b"k", "value": b"keyed"}])
        assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD, errors
        assert errors[1] is None
        errors = confluent_errors(cluster, "clock", [{"value": b"old", "timestamp": now - 2 * HOUR},
                                                     {"value": b"future", "timestamp": now + 2 * HOUR},
                                                     {"value": b"now", "timestamp": now}])
        assert [e.code() if e else None for e in errors] == [KafkaError.INVALID_TIMESTAMP,
                                                             KafkaError.INVALID_TIMESTAMP, None]
        # LogAppendTime: the broker's clock replaces the producer's timestamp
        assert confluent_errors(cluster, "stamped", [{"value": b"when", "timestamp": 12345}]) == [None]
        # compression.type=zstd: an uncompressed producer's batch is stored compressed
        assert confluent_errors(cluster, "squeezed", [{"value": b"z" * 1000}]) == [None]
        time.sleep(0.5)  # the traffic keeps flowing around the refusals

    try:
        wait_until(lambda: len(reader.values) >= len(traffic.sent), 30, "the consumer to read all the traffic")
    finally:
        reader.stop()
    assert traffic.unflushed == 0 and not traffic.errors and traffic.acked == traffic.sent, traffic.errors[:5]
    assert len(traffic.sent) > 50
    assert reader.values == [v for _p, v in traffic.sent] and not reader.errors

    # what consumers see of the other topics
    assert consume(cluster, "pill", [0], 3)[0] == [b"good-%d" % i for i in range(3)]
    assert consume(cluster, "compacted", [0], 1)[0] == [b"keyed"]
    assert consume(cluster, "clock", [0], 1)[0] == [b"now"]
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "validation-stamped",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("stamped", 0, 0)])
        m = wait_until(lambda: (lambda m: m if m is not None and m.error() is None else None)(c.poll(0.5)), 20,
                       "the stamped record")
        kind, ts = m.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and ts >= now and m.value() == b"when"
    finally:
        c.close()
    (header,) = [h for _p, h in iter_batches(segment(leader, "squeezed").read_bytes())]
    assert header.compression is Compression.ZSTD

    # the follower holds exactly the leader's bytes of the poisoned partition: it never got the pill
    wait_until(lambda: segment(follower, "pill").read_bytes() == segment(leader, "pill").read_bytes(), 30,
               "the follower to catch up on pill-0")
    data = segment(follower, "pill").read_bytes()
    values = [r.value for _p, h in iter_batches(data) for r in decode_batch(data[_p:_p + h.size])[1]]
    assert values == [b"good-%d" % i for i in range(3)]
    assert leader.running() and follower.running()
