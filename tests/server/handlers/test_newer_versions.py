"""The newest versions of the core APIs on one real broker (in this
process, real ZooKeeper): Metadata v13 (KIP-1102's top-level error code,
NONE: Kavka never asks a client to rebootstrap) answers as v12 does, and
Fetch v17 (KIP-853's replica directory id, which only KRaft's quorum
fetches read) returns the same records as v16."""

from __future__ import annotations

import uuid

import pytest

from kavka.protocol.messages import CreateTopicsRequest, FetchRequest, MetadataRequest, ProduceRequest
from kavka.protocol.records import SimpleRecord, build_batch
from kavka.security.principal import Session
from tests.server.broker_harness import ADMIN, InProcessBroker, error_codes

T = "newer"


@pytest.fixture
def broker(zk_chroot, tmp_path) -> InProcessBroker:
    return InProcessBroker(zk_chroot, tmp_path)


def admin() -> Session:
    return Session(ADMIN, "127.0.0.1")


async def test_metadata_v13_and_fetch_v17(broker: InProcessBroker) -> None:
    answer = await broker.call(admin(), CreateTopicsRequest(timeout_ms=20000, topics=[
        CreateTopicsRequest.Topics(name=T, num_partitions=1, replication_factor=1)]), 7)
    assert error_codes(answer) == [0]
    by_version = {}
    for version in (12, 13):
        answer = await broker.call(admin(), MetadataRequest(topics=[MetadataRequest.Topics(name=T)]), version)
        by_version[version] = [(t.name, t.topic_id, [(p.partition_index, p.leader_id) for p in t.partitions])
                               for t in answer.topics]
        if version == 13:
            assert answer.error_code == 0
    assert by_version[12] == by_version[13] and by_version[13][0][2] == [(0, 0)]
    topic_id = by_version[13][0][1]

    batch = build_batch([SimpleRecord(b"k", b"v%d" % i, 1_700_000_000_000) for i in range(3)])
    produced = await broker.call(admin(), ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicData(name=T, partition_data=[
            ProduceRequest.TopicData.PartitionData(index=0, records=batch)])]), 11)
    assert error_codes(produced) == [0]

    F = FetchRequest
    records = {}
    for version in (16, 17):
        partition = F.Topics.Partitions(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
        if version == 17:
            partition.replica_directory_id = uuid.uuid4()
        answer = await broker.call(admin(), F(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
            F.Topics(topic_id=topic_id, partitions=[partition])]), version)
        (p,) = answer.responses[0].partitions
        assert (p.error_code, p.high_watermark) == (0, 3)
        records[version] = bytes(p.records)
    assert records[16] == records[17] and len(records[17]) > 0
