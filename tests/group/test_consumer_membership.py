"""Consumer-protocol groups (KIP-848) in the GroupCoordinator, on one event
loop with an in-memory ``GroupLog``: heartbeats, session fencing by the
timer, OffsetCommit validated by member epoch, coexistence with classic
groups (INCONSISTENT_GROUP_PROTOCOL / GROUP_ID_NOT_FOUND), DeleteGroups,
and the ``group.consumer.*`` configs."""

from __future__ import annotations

import asyncio
import uuid

from kavka.common.broker_config import KafkaConfig
from kavka.common.errors import ErrorCode
from kavka.group.consumer_group import HeartbeatRequest, TopicMetadata
from kavka.group.coordinator import ConsumerGroupConfig, GroupCoordinator
from tests.group.test_coordinator import CONFIG, MemoryGroupLog, first_generation, join

T = TopicMetadata(uuid.UUID(int=7), 2)


async def owned(session_ms: int = 45000) -> GroupCoordinator:
    c = GroupCoordinator(1, CONFIG, MemoryGroupLog(), ConsumerGroupConfig(session_timeout_ms=session_ms),
                         lambda: {"t": T})
    c.on_elected(0, 1)
    for _ in range(200):
        if 0 in c.owned:
            return c
        await asyncio.sleep(0.01)
    raise AssertionError("the partition never loaded")


def joining(member_id: str = "m1") -> HeartbeatRequest:
    return HeartbeatRequest(member_id, 0, rebalance_timeout_ms=30000, subscribed_topic_names=("t",), owned={})


async def test_offset_commit_is_checked_against_the_member_epoch():
    c = await owned()
    out = await c.consumer_group_heartbeat("g", joining())
    assert (out.error, out.member_epoch) == (ErrorCode.NONE, 1)
    commits = {("t", 0): (5, -1, None)}
    assert (await c.commit_offsets("g", 1, "nobody", None, commits))[0] is ErrorCode.UNKNOWN_MEMBER_ID
    assert (await c.commit_offsets("g", 0, "m1", None, commits))[0] is ErrorCode.STALE_MEMBER_EPOCH
    assert (await c.commit_offsets("g", 2, "m1", None, commits))[0] is ErrorCode.FENCED_MEMBER_EPOCH
    # an admin commit while the group has members
    assert (await c.commit_offsets("g", -1, "", None, commits))[0] is ErrorCode.UNKNOWN_MEMBER_ID
    code, results = await c.commit_offsets("g", 1, "m1", None, commits)
    assert (code, results) == (ErrorCode.NONE, {("t", 0): ErrorCode.NONE})
    assert c.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 5


async def test_txn_offset_commit_is_checked_against_the_member_epoch():
    c = await owned()
    await c.consumer_group_heartbeat("g", joining())
    commits = {("t", 0): (5, -1, None)}
    assert await c.commit_txn_offsets("g", 1, 0, 1, "nobody", None, commits) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert await c.commit_txn_offsets("g", 1, 0, 3, "m1", None, commits) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert await c.commit_txn_offsets("g", 1, 0, 1, "m1", None, commits) == {("t", 0): ErrorCode.NONE}
    assert c.has_pending_txn_offset("g", ("t", 0))


async def test_offset_delete_keeps_subscribed_topics():
    c = await owned()
    await c.consumer_group_heartbeat("g", joining())
    await c.commit_offsets("g", 1, "m1", None, {("t", 0): (5, -1, None), ("u", 0): (3, -1, None)})
    code, results = await c.delete_offsets("g", [("t", 0), ("u", 0)])
    assert code is ErrorCode.NONE
    assert results == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): ErrorCode.NONE}
    assert c.fetch_offsets("g", [("u", 0)])[1][("u", 0)] is None


async def test_session_timeout_fences_the_member():
    c = await owned(session_ms=50)
    await c.consumer_group_heartbeat("g", joining())
    assert c.consumer.is_consumer_group("g")
    for _ in range(100):
        if not c.consumer.is_consumer_group("g"):
            break
        await asyncio.sleep(0.01)
    assert not c.consumer.is_consumer_group("g")
    assert (await c.consumer_group_heartbeat("g", HeartbeatRequest("m1", 1, owned={}))).error is \
        ErrorCode.UNKNOWN_MEMBER_ID
    # the empty group stays, as Kafka keeps it, until deleted
    assert c.consumer.knows("g") and c.describe_consumer_group("g")[1].state.value == "Empty"
    assert await c.delete_groups(["g"]) == {"g": ErrorCode.NONE}
    assert not c.consumer.knows("g")


async def test_classic_and_consumer_groups_do_not_mix():
    c = await owned()
    await c.consumer_group_heartbeat("g", joining())
    assert (await c.join_group(join())).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert (await c.delete_groups(["g"])) == {"g": ErrorCode.NON_EMPTY_GROUP}
    assert (await c.consumer_group_heartbeat("g", HeartbeatRequest("m1", -1))).error is ErrorCode.NONE
    assert not c.consumer.is_consumer_group("g")
    # now a classic group with members: consumer heartbeats are refused
    await first_generation(c)
    assert (await c.consumer_group_heartbeat("g", joining("m2"))).error is ErrorCode.GROUP_ID_NOT_FOUND


async def test_not_coordinator_and_describe():
    c = GroupCoordinator(1, CONFIG, MemoryGroupLog())
    assert (await c.consumer_group_heartbeat("g", joining())).error is ErrorCode.NOT_COORDINATOR
    c = await owned()
    assert c.describe_consumer_group("g")[0] is ErrorCode.GROUP_ID_NOT_FOUND
    await c.consumer_group_heartbeat("g", joining())
    code, g = c.describe_consumer_group("g")
    assert code is ErrorCode.NONE and g is not None and list(g.members) == ["m1"]
    assert [x.group_id for x in c.list_consumer_groups()] == ["g"]


def test_consumer_group_config_from_broker():
    cfg = KafkaConfig.from_props({"zookeeper.connect": "z:2181", "group.consumer.assignors":
                       "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
                       "group.consumer.session.timeout.ms": "10000"})
    got = ConsumerGroupConfig.from_broker(cfg)
    assert got == ConsumerGroupConfig(("range", "uniform"), 10000, 5000, 2**31 - 1)
