"""End to end with a real broker process: transactional batches written
with a producer id hold the last stable offset back until a coordinator's
WriteTxnMarkers closes them (KIP-98). librdkafka consumers (unchanged) see
an aborted transaction's records only with read_uncommitted, a committed
one with both isolation levels, and ListOffsets latest for read_committed
is the LSO."""

from __future__ import annotations

import time

from kavka.protocol.messages import ListOffsetsRequest, ProduceRequest, WriteTxnMarkersRequest
from kavka.protocol.records.builder import SimpleRecord, build_batch

from .cluster_helpers import create_topic
from .cluster_zk import request

TOPIC = "txn-markers"


def _produce(cluster, values: list[bytes], pid: int = -1, seq: int = 0) -> None:
    batch = build_batch([SimpleRecord(None, v, int(time.time() * 1000)) for v in values], producer_id=pid,
                        producer_epoch=0 if pid >= 0 else -1, base_sequence=seq if pid >= 0 else -1,
                        is_transactional=pid >= 0)
    # Transactional batches come with their transactional id (Kafka refuses
    # them without one: TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
    body = ProduceRequest(transactional_id=f"tx-{pid}" if pid >= 0 else None, acks=-1, timeout_ms=5000,
                          topic_data=[ProduceRequest.TopicData(name=TOPIC, partition_data=[
                              ProduceRequest.TopicData.PartitionData(index=0, records=batch)])])
    answer = request(cluster, 0, body, version=7)
    assert answer.responses[0].partition_responses[0].error_code == 0


def _marker(cluster, pid: int, commit: bool, coordinator_epoch: int = 0) -> int:
    body = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.Markers(
        producer_id=pid, producer_epoch=0, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[WriteTxnMarkersRequest.Markers.Topics(name=TOPIC, partition_indexes=[0])])])
    answer = request(cluster, 0, body, version=1)
    return answer.markers[0].topics[0].partitions[0].error_code


def _latest(cluster, isolation: int) -> int:
    body = ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[ListOffsetsRequest.Topics(
        name=TOPIC, partitions=[ListOffsetsRequest.Topics.Partitions(partition_index=0, timestamp=-1)])])
    return request(cluster, 0, body, version=2).topics[0].partitions[0].offset


def _consume(cluster, isolation: str, expected_end: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"txn-{isolation}",
                  "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True})
    got: list[bytes] = []
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                if c.position([TopicPartition(TOPIC, 0)])[0].offset >= expected_end:
                    break  # end of partition reached
                continue
            got.append(m.value())
    finally:
        c.close()
    return got


def test_abort_invisible_to_read_committed_commit_visible(make_cluster):
    cluster = make_cluster(brokers=1)
    create_topic(cluster, TOPIC)
    _produce(cluster, [b"plain-0"])  # 0
    _produce(cluster, [b"aborted-1", b"aborted-2"], pid=9001)  # 1-2, open
    _produce(cluster, [b"plain-3"])  # 3
    assert _latest(cluster, 1) == 1 and _latest(cluster, 0) == 4
    assert _marker(cluster, 9001, commit=False) == 0  # 4
    _produce(cluster, [b"committed-5"], pid=9002)  # 5
    assert _marker(cluster, 9002, commit=True, coordinator_epoch=3) == 0  # 6
    assert _latest(cluster, 1) == _latest(cluster, 0) == 7
    # a zombie coordinator (older epoch) is fenced; nothing appended
    assert _marker(cluster, 9002, commit=False, coordinator_epoch=2) == 52  # TRANSACTION_COORDINATOR_FENCED
    assert _latest(cluster, 0) == 7
    assert _consume(cluster, "read_committed", 7) == [b"plain-0", b"plain-3", b"committed-5"]
    assert _consume(cluster, "read_uncommitted", 7) == [
        b"plain-0", b"aborted-1", b"aborted-2", b"plain-3", b"committed-5"]


def test_client_may_not_produce_control_batches(make_cluster):
    from kavka.protocol.records.control import ControlRecordType, build_control_batch

    cluster = make_cluster(brokers=1)
    create_topic(cluster, TOPIC)
    body = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicData(name=TOPIC, partition_data=[
        ProduceRequest.TopicData.PartitionData(index=0, records=build_control_batch(
            ControlRecordType.COMMIT, 5, 0, 0, int(time.time() * 1000)))])])
    # A control batch is transactional: without a transactional id Kafka's
    # answer is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; with one, the log refuses it.
    answer = request(cluster, 0, body, version=7)
    assert answer.responses[0].partition_responses[0].error_code == 53
    body.transactional_id = "tx"
    answer = request(cluster, 0, body, version=7)
    assert answer.responses[0].partition_responses[0].error_code == 87  # INVALID_RECORD
    assert _latest(cluster, 0) == 0
