"""KafkaAdmin against the fake cluster: routing to the controller and the
leaders, typed per-entity errors, retry of NOT_CONTROLLER."""

from __future__ import annotations

import pytest
from client_fakes import FakeCluster

from kavka.client.admin import AdminError, KafkaAdmin
from kavka.client.admin_types import AlterOp, NewTopic, OffsetSpec, ResourceType
from kavka.client.cluster import Cluster
from kavka.client.producer import Producer
from kavka.common.errors import ErrorCode, TopicAlreadyExistsError
from kavka.common.topic_partition import TopicPartition

LIMIT = 20.0
pytestmark = pytest.mark.async_timeout(LIMIT)


async def session(n: int = 3):
    fc = await FakeCluster(n).start()
    c = await Cluster(fc.bootstrap, retry_backoff_ms=10).start()
    return fc, c, KafkaAdmin(c, timeout_ms=3000)


async def test_create_describe_list_delete_topics():
    fc, c, admin = await session()
    await admin.create_topics([NewTopic("a", 3, 1, configs={"retention.ms": "1000"}),
                               NewTopic("b", replica_assignment={0: (2,), 1: (1,)})])
    assert await admin.list_topics() == ["a", "b"]
    desc = await admin.describe_topics(["a", "b"])
    assert [(p.partition, p.leader, p.replicas, p.isr) for p in desc["b"].partitions] == \
        [(0, 2, (2,), (2,)), (1, 1, (1,), (1,))]
    assert len(desc["a"].partitions) == 3
    assert fc.configs["a"]["retention.ms"] == "1000"
    await admin.create_topics([NewTopic("v", 1)], validate_only=True)
    assert "v" not in fc.topics
    with pytest.raises(AdminError) as info:
        await admin.create_topics([NewTopic("a", 1), NewTopic("c", 1)])
    assert info.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert isinstance(info.value.errors["a"], TopicAlreadyExistsError)
    assert "already exists" in str(info.value.errors["a"])
    assert "c" in fc.topics  # the other topic was still created
    await admin.delete_topics(["a"])
    with pytest.raises(AdminError) as info:
        await admin.describe_topics(["a"])
    assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    await c.close()
    await fc.stop()


async def test_not_controller_is_retried_after_metadata_refresh():
    fc, c, admin = await session()
    fc.controller_id = 2
    assert c.metadata.controller_id == 0  # stale: the first attempt gets NOT_CONTROLLER
    await admin.create_topics([NewTopic("x", 2)])
    assert "x" in fc.topics
    sent_to = [b.node_id for b in fc.brokers for h in b.received if h.api_key == 19]
    assert sent_to == [0, 2]
    await c.close()
    await fc.stop()


async def test_create_partitions_and_describe_cluster():
    fc, c, admin = await session()
    fc.add_topic("t", 1)
    await admin.create_partitions({"t": 4})
    assert len(fc.topics["t"]) == 4
    with pytest.raises(AdminError, match="INVALID_PARTITIONS"):
        await admin.create_partitions({"t": 2})
    d = await admin.describe_cluster()
    assert d.cluster_id == "fake-cluster" and d.controller_id == 0
    assert [b[0] for b in d.brokers] == [0, 1, 2]
    await c.close()
    await fc.stop()


async def test_configs_describe_alter_incremental():
    fc, c, admin = await session(1)
    fc.add_topic("t", 1)
    cfg = await admin.describe_configs(ResourceType.TOPIC, "t")
    assert cfg["cleanup.policy"].value == "delete"
    await admin.incremental_alter_configs(ResourceType.TOPIC, "t", [("retention.ms", AlterOp.SET, "5"),
                                                                    ("cleanup.policy", AlterOp.DELETE, None)])
    assert fc.configs["t"] == {"retention.ms": "5"}
    await admin.alter_configs(ResourceType.TOPIC, "t", {"segment.bytes": "100"})
    assert fc.configs["t"] == {"segment.bytes": "100"}
    only = await admin.describe_configs(ResourceType.TOPIC, "t", ["segment.bytes"])
    assert list(only) == ["segment.bytes"]
    with pytest.raises(AdminError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        await admin.describe_configs(ResourceType.TOPIC, "missing")
    await c.close()
    await fc.stop()


async def test_list_offsets_and_delete_records_go_to_leaders():
    fc, c, admin = await session(2)
    fc.add_topic("t", 2)
    async with Producer(c, linger_ms=0) as p:
        for i in range(10):
            await p.send("t", b"v%d" % i, partition=i % 2, timestamp_ms=1000 + i)
    tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
    latest = await admin.list_offsets({tp: OffsetSpec.LATEST for tp in tps})
    assert {tp: o.offset for tp, o in latest.items()} == {tps[0]: 5, tps[1]: 5}
    low = await admin.delete_records({tps[0]: 3})
    assert low == {tps[0]: 3}
    earliest = await admin.list_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
    assert {tp: o.offset for tp, o in earliest.items()} == {tps[0]: 3, tps[1]: 0}
    by_time = await admin.list_offsets({tps[1]: 1000})
    assert by_time[tps[1]].offset >= 0
    for b in fc.brokers:  # each partition's request went to its own leader
        assert sum(h.api_key == 2 for h in b.received) == 2 + b.node_id
    with pytest.raises(AdminError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        await admin.list_offsets({TopicPartition("nope", 0): OffsetSpec.LATEST})
    await c.close()
    await fc.stop()
