"""The KIP-664 APIs on one real broker (in this process, real ZooKeeper):
a transaction opened through the coordinator shows in DescribeProducers
(its first offset), DescribeTransactions (Ongoing, its partition) and
ListTransactions (filtered by state, producer id and duration); a
transactional batch written without AddPartitionsToTxn — a hanging
transaction, which no coordinator knows — shows only in the partition's
producer state, and an operator's ABORT marker (WriteTxnMarkers with the
producer's epoch and coordinator epoch, as kafka-transactions.sh sends it)
closes it, moving the last stable offset. And the per-topic and
per-partition errors of DescribeProducers."""

from __future__ import annotations

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import (
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    ProduceRequest,
    WriteTxnMarkersRequest,
)
from kavka.protocol.records import SimpleRecord, build_batch
from kavka.security.principal import Session
from tests.server.broker_harness import ADMIN, InProcessBroker, error_codes

T, TX, HANGING = "payments", "tx-tools", "tx-hanging"


@pytest.fixture
def broker(zk_chroot, tmp_path) -> InProcessBroker:
    return InProcessBroker(zk_chroot, tmp_path)


def admin() -> Session:
    return Session(ADMIN, "127.0.0.1")


async def _ready(broker: InProcessBroker) -> None:
    answer = await broker.call(admin(), CreateTopicsRequest(timeout_ms=20000, topics=[
        CreateTopicsRequest.Topics(name=T, num_partitions=2, replication_factor=1)]), 7)
    assert error_codes(answer) == [0]
    for _ in range(60):
        found = await broker.call(admin(), FindCoordinatorRequest(key_type=1, coordinator_keys=[TX]), 4)
        if not any(error_codes(found)):
            return
        await broker.server.metadata_cache.wait_until(lambda c: False, 0.25)
    raise AssertionError("the transaction coordinator never loaded")


async def _init(broker: InProcessBroker, tid: str) -> tuple[int, int]:
    for _ in range(60):
        answer = await broker.call(admin(), InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000,
                                                                  producer_id=-1, producer_epoch=-1), 4)
        if answer.error_code == 0:
            return answer.producer_id, answer.producer_epoch
        await broker.server.metadata_cache.wait_until(lambda c: False, 0.25)
    raise AssertionError(f"InitProducerId kept failing: {answer.error_code}")


async def _produce(broker: InProcessBroker, tid: str, pid: int, epoch: int, partition: int, seq: int = 0) -> int:
    batch = build_batch([SimpleRecord(b"k", b"v", 1_700_000_000_000)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, is_transactional=True)
    answer = await broker.call(admin(), ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicData(name=T, partition_data=[
            ProduceRequest.TopicData.PartitionData(index=partition, records=batch)])]), 9)
    (r,) = answer.responses[0].partition_responses
    assert r.error_code == 0
    return r.base_offset


async def _producers(broker: InProcessBroker, topics: dict[str, list[int]]):
    answer = await broker.call(admin(), DescribeProducersRequest(topics=[
        DescribeProducersRequest.Topics(name=t, partition_indexes=ps) for t, ps in topics.items()]), 0)
    return {(t.name, p.partition_index): p for t in answer.topics for p in t.partitions}


async def _lso(broker: InProcessBroker, partition: int) -> int:
    answer = await broker.call(admin(), ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[
        ListOffsetsRequest.Topics(name=T, partitions=[
            ListOffsetsRequest.Topics.Partitions(partition_index=partition, timestamp=-1)])]), 7)
    return answer.topics[0].partitions[0].offset


async def test_a_transaction_seen_by_the_three_apis_and_a_hanging_one_aborted(broker: InProcessBroker) -> None:
    await _ready(broker)
    pid, epoch = await _init(broker, TX)
    added = await broker.call(admin(), AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TX, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.V3AndBelowTopics(name=T, partitions=[0])]), 3)
    assert not any(error_codes(added))
    first = await _produce(broker, TX, pid, epoch, 0)

    (p0,) = (await _producers(broker, {T: [0]})).values()
    assert p0.error_code == 0
    assert [(a.producer_id, a.producer_epoch, a.last_sequence, a.coordinator_epoch, a.current_txn_start_offset)
            for a in p0.active_producers] == [(pid, epoch, 0, -1, first)]
    assert p0.active_producers[0].last_timestamp == 1_700_000_000_000

    described = await broker.call(admin(), DescribeTransactionsRequest(transactional_ids=[TX, "never-seen"]), 0)
    ongoing, unknown = described.transaction_states
    assert (ongoing.error_code, ongoing.transaction_state, ongoing.producer_id, ongoing.producer_epoch,
            ongoing.transaction_timeout_ms) == (0, "Ongoing", pid, epoch, 60000)
    assert [(t.topic, t.partitions) for t in ongoing.topics] == [(T, [0])]
    assert ongoing.transaction_start_time_ms > 0
    assert unknown.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

    async def listed(version: int = 1, **filters) -> list[tuple[str, str]]:
        answer = await broker.call(admin(), ListTransactionsRequest(**filters), version)
        assert answer.error_code == 0
        return sorted((t.transactional_id, t.transaction_state) for t in answer.transaction_states)

    # The hanging one: a transactional batch the coordinator never heard of.
    hpid, hepoch = await _init(broker, HANGING)
    hanging_at = await _produce(broker, HANGING, hpid, hepoch, 1)
    assert await listed(version=0) == [(HANGING, "Empty"), (TX, "Ongoing")]
    assert await listed(state_filters=["Ongoing"]) == [(TX, "Ongoing")]
    assert await listed(producer_id_filters=[hpid]) == [(HANGING, "Empty")]
    answer = await broker.call(admin(), ListTransactionsRequest(state_filters=["Nope"]), 1)
    assert (answer.unknown_state_filters, answer.transaction_states) == (["Nope"], [])
    # KIP-994: only transactions running longer than an hour (none) -- an
    # Empty id has no start time, so it counts as running since ever, as in Kafka
    assert await listed(duration_filter=3_600_000) == [(HANGING, "Empty")]
    # KIP-1152 (v2): a transactional id pattern, matched whole; v1 has no such field
    assert await listed(version=2, transactional_id_pattern="tx-h.*") == [(HANGING, "Empty")]
    assert await listed(version=2, transactional_id_pattern="") == await listed(version=1)
    answer = await broker.call(admin(), ListTransactionsRequest(transactional_id_pattern="(unclosed"), 2)
    assert (answer.error_code, answer.transaction_states) == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])

    (p1,) = (await _producers(broker, {T: [1]})).values()
    (h,) = p1.active_producers
    assert (h.producer_id, h.current_txn_start_offset) == (hpid, hanging_at)
    assert await _lso(broker, 1) == hanging_at  # read_committed consumers are stuck behind it

    # kafka-transactions.sh abort: an ABORT marker with the producer's epoch
    # and coordinator epoch (-1 reported, 0 sent, as the tool's orElse(0)).
    marker = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.Markers(
        producer_id=h.producer_id, producer_epoch=h.producer_epoch, transaction_result=False,
        coordinator_epoch=max(h.coordinator_epoch, 0),
        topics=[WriteTxnMarkersRequest.Markers.Topics(name=T, partition_indexes=[1])])])
    assert error_codes(await broker.call(admin(), marker, 1)) == [0]
    (p1,) = (await _producers(broker, {T: [1]})).values()
    assert [(a.producer_id, a.current_txn_start_offset, a.coordinator_epoch) for a in p1.active_producers] == [
        (hpid, -1, 0)]
    assert await _lso(broker, 1) == hanging_at + 2  # the batch and its marker


async def test_describe_producers_errors(broker: InProcessBroker) -> None:
    await _ready(broker)
    found = await _producers(broker, {T: [0, 7], "no-such-topic": [0], "bad name!": [3]})
    assert {k: (p.error_code, p.active_producers) for k, p in found.items()} == {
        (T, 0): (0, []),
        (T, 7): (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), []),
        ("no-such-topic", 0): (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), []),
        ("bad name!", 3): (int(ErrorCode.INVALID_TOPIC_EXCEPTION), []),
    }
    assert "does not exist" in found[("no-such-topic", 0)].error_message
