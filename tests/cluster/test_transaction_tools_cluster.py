"""KIP-664 and KIP-966 end to end, on real broker processes: kafka-python's
admin client (its list_transactions, describe_transactions,
describe_producers and describe_topic_partitions) and ``kavka
transactions`` against a two-broker cluster.

A hanging transaction is made the way KIP-890 describes it happening: a
transactional producer's batch reaches a partition whose addition to the
transaction never took effect at the coordinator (here: a Produce sent
without AddPartitionsToTxn). It holds the partition's last stable offset,
so read_committed consumers stop before it. ``find-hanging`` reports it and
not a live kafka-python transaction that is merely open; ``abort
--start-offset`` ends it, the last stable offset moves past it, and the
live transaction still commits."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kavka.protocol.messages import FindCoordinatorRequest, InitProducerIdRequest, MetadataRequest, ProduceRequest
from kavka.protocol.records import SimpleRecord, build_batch

from .cluster_helpers import create_topic, leaders, wait_until
from .cluster_zk import request

TOPIC = "tools-orders"
TXN_CONFIG = {"transaction.state.log.replication.factor": "2", "transaction.state.log.min.isr": "1",
              "transaction.state.log.num.partitions": "4", "offsets.topic.replication.factor": "2",
              "offsets.topic.num.partitions": "4"}


@pytest.fixture
def cluster(make_cluster):
    c = make_cluster(brokers=2, config=TXN_CONFIG)
    create_topic(c, TOPIC, partitions=2, replication_factor=2)
    return c


def kavka(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kavka", "transactions", "--bootstrap-server", cluster.bootstrap,
                           *args], capture_output=True, text=True, timeout=120)


def rows(out: str) -> list[list[str]]:
    """The table's rows (header first), cells stripped."""
    return [[cell.strip() for cell in line.split("\t")[:-1]] for line in out.splitlines() if line.strip()]


def _init_producer_id(cluster, tid: str) -> tuple[int, int]:
    def attempt():
        found = request(cluster, 0, FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]), 4).coordinators[0]
        if found.error_code:
            return None
        answer = request(cluster, found.node_id, InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1), 4)
        return None if answer.error_code else (answer.producer_id, answer.producer_epoch)
    return wait_until(attempt, 60, f"InitProducerId of {tid}")


def _hang(cluster, partition: int) -> tuple[int, int, int]:
    """A transactional batch the coordinator never heard of, written two
    minutes ago by the producer's clock: (producer id, epoch, offset)."""
    pid, epoch = _init_producer_id(cluster, "stuck-app")
    written = int(time.time() * 1000) - 120_000
    batch = build_batch([SimpleRecord(b"k", b"stuck", written)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=0, is_transactional=True)
    leader = leaders(cluster, TOPIC)[partition]
    answer = request(cluster, leader, ProduceRequest(transactional_id="stuck-app", acks=-1, timeout_ms=10_000,
                                                     topic_data=[ProduceRequest.TopicData(name=TOPIC, partition_data=[
                                                         ProduceRequest.TopicData.PartitionData(
                                                             index=partition, records=batch)])]), 9)
    (r,) = answer.responses[0].partition_responses
    assert r.error_code == 0
    return pid, epoch, r.base_offset


def _lso(cluster, partition: int) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, isolation_level="read_committed")
    try:
        tp = TopicPartition(TOPIC, partition)
        return consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def test_a_hanging_transaction_found_and_aborted(cluster):
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient

    live = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="live-app", request_timeout_ms=20_000)
    live.init_transactions()
    live.begin_transaction()
    live.send(TOPIC, b"live", partition=0).get(timeout=20)
    pid, epoch, offset = _hang(cluster, 1)
    assert _lso(cluster, 1) == offset  # read_committed readers are stuck behind it

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=20_000)
    try:
        listed = {t.transactional_id: (t.producer_id, t.state.value)
                  for txns in admin.list_transactions().values() for t in txns}
        assert listed["stuck-app"] == (pid, "Empty")  # the coordinator knows no transaction of it
        assert listed["live-app"][1] == "Ongoing"
        ongoing = admin.list_transactions(state_filters=["Ongoing"], duration_filter_ms=0)
        assert [t.transactional_id for txns in ongoing.values() for t in txns] == ["live-app"]
        described = admin.describe_transactions(["live-app"])["live-app"]
        assert described.topic_partitions == {TopicPartition(TOPIC, 0)}
        producers = admin.describe_producers([TopicPartition(TOPIC, 1)])[TopicPartition(TOPIC, 1)]
        (stuck,) = producers.active_producers
        assert (stuck.producer_id, stuck.producer_epoch, stuck.current_transaction_start_offset) == (pid, epoch, offset)
        # the follower's replica answers too (--broker-id): the same producer
        follower = next(b for b in cluster.brokers if b != leaders(cluster, TOPIC)[1])

        def on_follower():
            found = admin.describe_producers([TopicPartition(TOPIC, 1)], broker_id=follower)
            return found[TopicPartition(TOPIC, 1)].active_producers
        assert [p.producer_id for p in wait_until(on_follower, 30, "the follower to replicate")] == [pid]
    finally:
        admin.close()

    out = kavka(cluster, "describe-producers", "--topic", TOPIC, "--partition", "1")
    assert out.returncode == 0, out.stderr
    assert rows(out.stdout) == [
        ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
         "CurrentTransactionStartOffset"],
        [str(pid), str(epoch), "-1", "0", rows(out.stdout)[1][4], str(offset)]]

    # Only the stuck one is older than a minute; with no age limit the live
    # one is a candidate too, but its coordinator accounts for it.
    for minutes in ("1", "0"):
        out = kavka(cluster, "find-hanging", "--topic", TOPIC, "--max-transaction-timeout", minutes)
        assert out.returncode == 0, out.stderr
        table = rows(out.stdout)
        assert table[0] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                            "LastTimestamp", "Duration(min)"]
        assert [r[:6] for r in table[1:]] == [[TOPIC, "1", str(pid), str(epoch), "-1", str(offset)]]
        assert int(table[1][7]) >= 2

    out = kavka(cluster, "abort", "--topic", TOPIC, "--partition", "1", "--start-offset", str(offset + 5))
    assert out.returncode == 1 and "Could not find any open transactions starting at offset" in out.stderr
    out = kavka(cluster, "abort", "--topic", TOPIC, "--partition", "1", "--start-offset", str(offset))
    assert out.returncode == 0, out.stderr
    assert _lso(cluster, 1) == offset + 2  # the batch and its ABORT marker
    out = kavka(cluster, "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0")
    assert out.returncode == 0, out.stderr
    assert rows(out.stdout)[1:] == []
    out = kavka(cluster, "describe-producers", "--topic", TOPIC, "--partition", "1")
    assert rows(out.stdout)[1][5] == "None"

    live.commit_transaction()  # the live transaction was left alone
    out = kavka(cluster, "describe", "--transactional-id", "live-app")
    assert out.returncode == 0, out.stderr
    header, row = rows(out.stdout)
    assert dict(zip(header, row, strict=True))["TransactionState"] == "CompleteCommit"
    out = kavka(cluster, "list")
    assert {r[0]: r[3] for r in rows(out.stdout)[1:]} == {"live-app": "CompleteCommit", "stuck-app": "Empty"}
    out = kavka(cluster, "list", "--transactional-id-pattern", "stuck-.*")
    assert {r[0]: r[3] for r in rows(out.stdout)[1:]} == {"stuck-app": "Empty"}
    out = kavka(cluster, "list", "--transactional-id-pattern", "stuck-(")
    assert out.returncode == 1 and "INVALID_REGULAR_EXPRESSION" in out.stderr
    out = kavka(cluster, "describe", "--transactional-id", "nobody")
    assert out.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in out.stderr
    live.close()


def test_describe_topic_partitions_pages_with_kafka_python(cluster):
    from kafka.admin import KafkaAdminClient

    create_topic(cluster, "tools-wide", partitions=5, replication_factor=1)

    # CreateTopics is answered once the controller has written the topic;
    # each broker's metadata cache learns its leaders from the UpdateMetadata
    # that follows, and kafka-python may ask either broker.
    def known_everywhere() -> bool:
        for b in cluster.brokers:
            answer = request(cluster, b, MetadataRequest(topics=[MetadataRequest.Topics(name="tools-wide")]), 4)
            t = answer.topics[0]
            if t.error_code != 0 or len(t.partitions) != 5 or any(p.leader_id < 0 for p in t.partitions):
                return False
        return True

    wait_until(known_everywhere, 30, "tools-wide in every broker's metadata")
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=20_000)
    try:
        seen, cursor, pages = [], None, 0
        while pages < 10:
            page = admin.describe_topic_partitions([TOPIC, "tools-wide", "missing"], response_partition_limit=3,
                                                   cursor=cursor)
            pages += 1
            for t in page["topics"]:
                seen += [(t["name"], t["error_code"], p["partition_index"], p["leader_id"] >= 0)
                         for p in t["partitions"]] or [(t["name"], t["error_code"], None, None)]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == 3
        assert seen == [("missing", 3, None, None), (TOPIC, 0, 0, True), (TOPIC, 0, 1, True),
                        ("tools-wide", 0, 0, True), ("tools-wide", 0, 1, True), ("tools-wide", 0, 2, True),
                        ("tools-wide", 0, 3, True), ("tools-wide", 0, 4, True)]
    finally:
        admin.close()
