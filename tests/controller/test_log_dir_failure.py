"""A broker's failed log directory as the controller handles it (KIP-112,
Kafka's processLogDirEventNotification and LeaderAndIsrResponseReceived),
on the in-memory ZooKeeper: the /log_dir_event_notification znode makes
the controller send LeaderAndIsr for every replica of the broker; those
answered KAFKA_STORAGE_ERROR go offline (leaders move to another ISR
member, the replica leaves the ISR), the notification is deleted."""

from __future__ import annotations

from kavka.common.topic_partition import TopicPartition
from kavka.zk.brokers import PartitionStateZNode
from kavka.zk.notifications import LOG_DIR_EVENT_NOTIFICATION_PATH

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


async def _leader_is(c, topic: str, partition: int, leader: int) -> bool:
    s = await c.state(topic, partition)
    return s is not None and s.leader == leader


async def _notifications(c) -> list[str]:
    return await c.admin.store.get_children(LOG_DIR_EVENT_NOTIFICATION_PATH)


async def test_failed_dir_moves_leaders_and_shrinks_isrs_of_its_replicas_only(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2, 3))
    # Broker 2 leads t-0, follows in t-1 and t-2; t-0 and t-2 are in its failed directory.
    await c.create_topic("t", {0: (2, 1, 3), 1: (1, 2, 3), 2: (3, 2, 1)})
    await c.until(lambda: c.state("t", 2), "partition states")
    await c.settle()
    c.transport.clear()
    c.transport.offline_log_dir_replicas = {(2, "t", 0), (2, "t", 2)}
    await c.clients[2].create_log_dir_event_notification(2)
    await c.until(lambda: _leader_is(c, "t", 0, 1), "t-0 led by broker 1")
    await c.settle()
    # The controller asked broker 2 about every replica it holds.
    asked = {k for r in c.transport.requests("LeaderAndIsr", 2) for k in c.partitions_of(r)}
    assert {("t", 0), ("t", 1), ("t", 2)} <= asked
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 1, 1, (1, 3), 1)
    assert (await c.state("t", 2)).isr == (3, 1) and (await c.state("t", 2)).leader == 3
    assert await c.state("t", 1) == PartitionStateZNode("t", 1, 1, 0, (1, 2, 3), 1)  # its replica is online
    assert ctl.active.context.replicas_on_offline_dirs == {2: {T0, T2}}
    assert await _notifications(c) == []  # handled notifications are deleted
    # Every broker learns the offline replicas in UpdateMetadata.
    um = c.transport.requests("UpdateMetadata", 3)[-1]
    assert list(c.partitions_of(um)[("t", 0)].offline_replicas) == [2]
    # Broker 2 is still alive: the new leader's followers are told, broker 2
    # stays registered; and it is not elected for t-0 again while offline.
    assert 2 in ctl.active.context.live_brokers


async def test_restarted_broker_serves_its_replicas_again(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2, 3))
    await c.create_topic("t", {0: (2, 1, 3)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    c.transport.offline_log_dir_replicas = {(2, "t", 0)}
    await c.clients[2].create_log_dir_event_notification(2)
    await c.until(lambda: _leader_is(c, "t", 0, 1), "t-0 led by broker 1")
    await c.settle()
    # Kafka halts a broker whose dirs failed and an operator restarts it
    # with the disk fixed: its replicas count as online again.
    c.transport.offline_log_dir_replicas = set()
    await c.kill_broker(2)
    await c.until(lambda: 2 not in ctl.active.context.live_brokers, "broker 2 seen dead")
    await c.start_broker(2)
    await c.until(lambda: 2 in ctl.active.context.live_brokers, "broker 2 back")
    await c.settle()
    assert 2 not in ctl.active.context.replicas_on_offline_dirs
    assert ctl.active.context.is_replica_online(2, T0)


async def test_offline_replica_is_never_elected_even_uncleanly(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2, 3), controller=3, unclean_leader_election_enable=True)
    await c.create_topic("t", {0: (1, 2)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    c.transport.offline_log_dir_replicas = {(2, "t", 0)}
    await c.clients[2].create_log_dir_event_notification(2)
    await c.until(lambda: ctl.active.context.replicas_on_offline_dirs.get(2) == {T0}, "t-0 offline on broker 2")
    await c.settle()
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 1, 1, (1,), 1)
    # The leader dies: the only other replica is in a failed directory, so
    # not even an unclean election picks it; the partition has no leader.
    await c.kill_broker(1)
    await c.until(lambda: 1 not in ctl.active.context.live_brokers, "broker 1 seen dead")
    await c.settle()
    assert (await c.state("t", 0)).leader == -1


async def test_new_controller_finds_offline_replicas_and_drops_old_notifications(memory_cluster) -> None:
    c = memory_cluster
    await c.start_brokers((1, 2, 3))
    await c.create_topic("t", {0: (2, 1, 3), 1: (1, 2, 3)})
    # A notification nobody handled, and a malformed one.
    await c.clients[2].create_log_dir_event_notification(2)
    await c.admin.store.create(LOG_DIR_EVENT_NOTIFICATION_PATH + "/log_dir_event_", b"{not json", sequential=True)
    c.transport.offline_log_dir_replicas = {(2, "t", 0)}
    ctl = await c.start_active_controller(1)
    await c.until(lambda: _leader_is(c, "t", 0, 1), "t-0 led by broker 1")
    await c.settle()
    assert ctl.active.context.replicas_on_offline_dirs == {2: {T0}}
    assert (await c.state("t", 0)).isr == (1, 3)
    assert (await c.state("t", 1)).isr == (1, 2, 3)
    assert await _notifications(c) == []


def test_context_online_for_excludes_replicas_in_failed_dirs() -> None:
    from kavka.controller.context import ControllerContext

    ctx = ControllerContext()
    ctx.replicas_on_offline_dirs[2] = {T0}
    assert ctx.online_for(T0, {1, 2, 3}) == {1, 3}
    assert ctx.online_for(T1, {1, 2, 3}) == {1, 2, 3}
    assert not ctx.is_replica_online(2, T0)  # not live at all here


async def test_replicas_answered_held_are_one_line_and_stay_online(memory_cluster, caplog) -> None:
    """STALE_CONTROLLER_EPOCH in a LeaderAndIsr answer (the broker holds that
    leader epoch or a newer one, as after a controller failover) is logged
    once per answer, not once per partition, and takes nothing offline."""
    c = memory_cluster
    ctl = await c.boot((1, 2, 3))
    await c.create_topic("t", {0: (2, 1, 3), 1: (1, 2, 3), 2: (3, 2, 1)})
    await c.until(lambda: c.state("t", 2), "partition states")
    await c.settle()
    c.transport.held_replicas = {(2, "t", 0), (2, "t", 1), (2, "t", 2)}
    caplog.clear()
    with caplog.at_level("INFO", logger="kavka.state.change"):
        await c.clients[2].create_log_dir_event_notification(2)
        await c.until(lambda: _notifications_handled(c), "the notification handled")
        await c.settle()
    lines = [r.getMessage() for r in caplog.records if "response from broker 2" in r.getMessage()]
    assert len(lines) == 1 and "the same or a newer leader epoch for 3 partitions" in lines[0]
    assert 2 not in ctl.active.context.replicas_on_offline_dirs
    assert (await c.state("t", 0)).leader == 2


async def _notifications_handled(c) -> bool:
    return await _notifications(c) == []
