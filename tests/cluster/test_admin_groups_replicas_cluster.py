"""Kavka's client against real brokers: GroupAdmin (ListGroups,
DescribeGroups with the consumer protocol decoded, OffsetFetch, OffsetCommit
for a member-less group, DeleteGroups), ReplicaAdmin (DescribeLogDirs,
List/AlterPartitionReassignments, ElectLeaders) and the Consumer's
transaction markers, with a librdkafka consumer and producer as the other
side."""

from __future__ import annotations

import asyncio
import time

import pytest

from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer
from kavka.client.group_admin import GroupAdmin
from kavka.client.replica_admin import ReplicaAdmin
from kavka.common.errors import ErrorCode, KafkaError, UnknownMemberIdError
from kavka.common.topic_partition import TopicPartition

from .cluster_helpers import create_topic, produce

pytestmark = [pytest.mark.cluster, pytest.mark.async_timeout(240)]
T = "admin-t"


def _member(bootstrap: str, group: str):
    """A librdkafka consumer that joined ``group`` and read one record."""
    from confluent_kafka import Consumer as CKConsumer

    c = CKConsumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                    "enable.auto.commit": False, "session.timeout.ms": 30_000})
    c.subscribe([T])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            c.commit(m, asynchronous=False)
            return c
    c.close()
    raise AssertionError("the consumer read nothing in 60 s")


async def test_groups_replicas_and_markers(make_cluster):
    cluster = make_cluster(brokers=2, config={"offsets.topic.num.partitions": "2",
                                              "auto.leader.rebalance.enable": "false"})
    create_topic(cluster, T, assignment=[[0, 1], [1, 0]])
    produce(cluster, T, {0: [b"a" * 100] * 5, 1: [b"b" * 100] * 3})
    async with Cluster(cluster.bootstrap, request_timeout_ms=10_000) as c:
        groups = GroupAdmin(c, timeout_ms=20_000)
        member = await asyncio.to_thread(_member, cluster.bootstrap, "g")
        try:
            listed, errors = await groups.list_groups()
            assert errors == {} and [g.group_id for g in listed if g.group_id == "g"] == ["g"]
            desc = await groups.describe_group("g")
            assert desc.state == "Stable" and desc.active and desc.protocol_type == "consumer"
            assert sorted(desc.members[0].assignment, key=lambda tp: tp.partition) == \
                [TopicPartition(T, 0), TopicPartition(T, 1)]
            assert desc.members[0].subscription == (T,)
            committed = await groups.committed_offsets("g")
            assert len(committed) == 1 and next(iter(committed.values())) == 1
            # Kafka's coordinator refuses a commit from outside an active group, and its deletion.
            with pytest.raises(UnknownMemberIdError):
                await groups.alter_offsets("g", {TopicPartition(T, 0): 0})
            with pytest.raises(KafkaError) as info:
                await groups.delete_group("g")
            assert info.value.code == ErrorCode.NON_EMPTY_GROUP
        finally:
            await asyncio.to_thread(member.close)
        await groups.alter_offsets("g", {TopicPartition(T, 0): 4, TopicPartition(T, 1): 2})
        assert await groups.committed_offsets("g") == {TopicPartition(T, 0): 4, TopicPartition(T, 1): 2}
        assert (await groups.describe_group("g")).state == "Empty"
        await groups.delete_group("g")
        assert (await groups.describe_group("g")).state == "Dead"
        assert await groups.committed_offsets("g") == {}

        replicas = ReplicaAdmin(c, timeout_ms=20_000)
        dirs = await replicas.describe_log_dirs(0)
        assert len(dirs) == 1 and dirs[0].error == ErrorCode.NONE
        assert dirs[0].replica_sizes[TopicPartition(T, 0)] > 500
        only = await replicas.describe_log_dirs(1, [TopicPartition(T, 1)])
        assert set(only[0].replica_sizes) == {TopicPartition(T, 1)}
        assert await replicas.list_partition_reassignments() == {}
        refused = await replicas.alter_partition_reassignments({TopicPartition(T, 0): (0, 7)})
        assert refused[TopicPartition(T, 0)][0] is not ErrorCode.NONE
        cancelled = await replicas.alter_partition_reassignments({TopicPartition(T, 1): None})
        assert cancelled[TopicPartition(T, 1)][0] is ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        elected = await replicas.elect_leaders([TopicPartition(T, 0)])
        assert elected == {TopicPartition(T, 0): (ErrorCode.ELECTION_NOT_NEEDED, elected[TopicPartition(T, 0)][1])}

        # Transaction markers, on request only.
        def transactional() -> None:
            from confluent_kafka import Producer

            p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "admin-test"})
            p.init_transactions(30)
            p.begin_transaction()
            p.produce(T, b"in-txn", partition=1)
            assert p.flush(30) == 0
            p.commit_transaction(30)
        await asyncio.to_thread(transactional)

        async def read_from_3(include: bool) -> list:
            consumer = Consumer(c, include_control_records=include)
            consumer.assign([TopicPartition(T, 1)])
            consumer.seek(TopicPartition(T, 1), 3)
            return [r async for r in consumer.records(stop_at_end=True)]

        # The coordinator writes the COMMIT marker after it has answered
        # EndTxn (PrepareCommit, then the markers, as Kafka): wait for it.
        deadline = asyncio.get_running_loop().time() + 30
        while not any(r.is_control for r in await read_from_3(True)):
            assert asyncio.get_running_loop().time() < deadline, "the COMMIT marker was never written"
            await asyncio.sleep(0.1)
        for include in (False, True):
            got = await read_from_3(include)
            assert [r.value for r in got if not r.is_control] == [b"in-txn"]
            assert [r.control_type for r in got if r.is_control] == (["COMMIT"] if include else [])
