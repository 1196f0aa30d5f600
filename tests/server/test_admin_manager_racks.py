"""CreateTopics and CreatePartitions place replicas over the brokers'
racks (``broker.rack``, Kafka's rack-aware AdminUtils placement): every
partition's replicas span min(RF, racks) racks; a mix of brokers with and
without a rack is refused as Kafka refuses it, unless the request gives its
own assignment."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.server.admin_manager import AdminManager, NewTopic
from kavka.zk.client import KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

RACKS = {1: "r1", 2: "r1", 3: "r2", 4: "r2", 5: "r3", 6: "r3"}


async def _admin(racks) -> AdminManager:
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    return AdminManager(KavkaZkClient(store), lambda: {}, lambda: dict(racks), num_partitions=1,
                        default_replication_factor=1)


async def test_create_topics_spreads_each_partition_over_the_racks():
    admin = await _admin(RACKS)
    [r] = await admin.create_topics([NewTopic("t", 12, 3)])
    assert r.error is ErrorCode.NONE, r.message
    node, _ = await admin.zk.get_topic("t")
    for replicas in node.partitions.values():
        assert sorted(RACKS[b] for b in replicas) == ["r1", "r2", "r3"]
    # CreatePartitions keeps doing so
    error, message = await admin.create_partitions("t", 20, None, validate_only=False)
    assert error is ErrorCode.NONE, message
    node, _ = await admin.zk.get_topic("t")
    assert len(node.partitions) == 20
    for replicas in node.partitions.values():
        assert len({RACKS[b] for b in replicas}) == 3


async def test_a_mix_of_racked_and_unracked_brokers_is_refused_unless_the_assignment_is_given():
    admin = await _admin({1: "r1", 2: "r2", 3: None})
    [r] = await admin.create_topics([NewTopic("t", 3, 2)])
    assert r.error is ErrorCode.UNKNOWN_SERVER_ERROR
    assert "Not all brokers have rack information" in r.message and "[3]" in r.message
    assert await admin.zk.get_topic("t") is None
    [r] = await admin.create_topics([NewTopic("t", assignment={0: [1, 3], 1: [3, 2]})])
    assert r.error is ErrorCode.NONE, r.message
    error, message = await admin.create_partitions("t", 3, None, validate_only=False)
    assert error is ErrorCode.UNKNOWN_SERVER_ERROR and "broker.rack" in message
    error, message = await admin.create_partitions("t", 3, [[2, 3]], validate_only=False)
    assert error is ErrorCode.NONE, message
