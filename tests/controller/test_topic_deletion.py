"""Topic deletion through /admin/delete_topics (seed 000 §删除 Topic): the
replica state progression, a dead broker holding a replica, errors from
brokers, and delete.topic.enable=false."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import PartitionReplica
from kavka.controller.replica_state import ReplicaState


def _replica_state(ctl, topic: str, partition: int, broker: int) -> ReplicaState:
    return ctl.active.replicas.states.state(PartitionReplica(TopicPartition(topic, partition), broker))


async def _topic_gone(c, topic: str) -> bool:
    return not any([await c.exists(f"/brokers/topics/{topic}"), await c.exists(f"/config/topics/{topic}"), await c.exists(f"/admin/delete_topics/{topic}")])


async def test_deletion_waits_for_a_dead_broker_then_completes(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2, 3))
    await c.create_topic("d", {0: (2, 3), 1: (3, 2)}, {"retention.ms": "1000"})
    await c.create_topic("keep", {0: (2,)})
    await c.until(lambda: c.state("keep", 0), "partitions")
    await c.settle()
    await c.kill_broker(3)
    await c.settle()
    c.transport.clear()
    await c.admin.request_topic_deletion("d")
    await c.until(lambda: _replica_state(ctl, "d", 0, 2) is ReplicaState.DELETION_SUCCESSFUL, "broker 2's replicas deleted")
    await c.settle()
    # Live replicas: StopReplica with delete; the dead broker's: ineligible.
    (stop,) = c.transport.requests("StopReplica", 2)
    assert {k: (ps.delete_partition, ps.leader_epoch) for k, ps in c.partitions_of(stop).items()} == {("d", 0): (True, -2), ("d", 1): (True, -2)}
    assert _replica_state(ctl, "d", 1, 2) is ReplicaState.DELETION_SUCCESSFUL
    assert _replica_state(ctl, "d", 0, 3) is ReplicaState.DELETION_INELIGIBLE
    assert _replica_state(ctl, "d", 1, 3) is ReplicaState.DELETION_INELIGIBLE
    assert await c.exists("/brokers/topics/d")  # not done: broker 3 still has its replicas
    # Clients were told the partitions are being deleted (leader -2).
    um = c.transport.requests("UpdateMetadata", 2)[0]
    assert c.partitions_of(um)[("d", 0)].leader == -2
    assert c.transport.requests("LeaderAndIsr") == []  # no election for a topic being deleted
    await c.start_broker(3)
    await c.until(lambda: _topic_gone(c, "d"), "topic znodes removed")
    await c.settle()
    (stop3,) = c.transport.requests("StopReplica", 3)
    assert {k: ps.delete_partition for k, ps in c.partitions_of(stop3).items()} == {("d", 0): True, ("d", 1): True}
    assert "d" not in ctl.active.context.assignments and ctl.active.deletion.completed == ["d"]
    assert ctl.active.replicas.states.of_topic("d") == {}
    assert await c.state("keep", 0) is not None and await c.exists("/brokers/topics/keep")


async def test_deletion_retries_a_replica_the_broker_failed_to_delete(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2))
    await c.create_topic("d", {0: (1, 2)})
    await c.until(lambda: c.state("d", 0), "partition")
    await c.settle()
    c.transport.stop_replica_errors[(2, "d", 0)] = ErrorCode.KAFKA_STORAGE_ERROR
    await c.admin.request_topic_deletion("d")
    await c.until(lambda: _replica_state(ctl, "d", 0, 2) is ReplicaState.DELETION_INELIGIBLE, "broker 2 failed the delete")
    await c.settle()
    assert _replica_state(ctl, "d", 0, 1) is ReplicaState.DELETION_SUCCESSFUL
    assert await c.exists("/brokers/topics/d")
    # The broker restarts (fixed disk): deletion resumes and completes.
    del c.transport.stop_replica_errors[(2, "d", 0)]
    await c.kill_broker(2)
    await c.start_broker(2)
    await c.until(lambda: _topic_gone(c, "d"), "topic deleted")


async def test_a_new_controller_finishes_a_queued_deletion(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2, 3))
    await c.create_topic("d", {0: (2, 3)})
    await c.until(lambda: c.state("d", 0), "partition")
    await c.settle()
    await c.kill_broker(3)
    await c.admin.request_topic_deletion("d")
    await c.until(lambda: _replica_state(ctl, "d", 0, 3) is ReplicaState.DELETION_INELIGIBLE, "waiting for broker 3")
    await c.kill_broker(1)  # the controller dies mid-deletion (failover step 12)
    ctl2 = await c.start_active_controller(2)
    await c.start_broker(3)
    await c.until(lambda: _topic_gone(c, "d"), "topic deleted by the new controller")
    assert ctl2.epoch == 2


async def test_deletion_disabled_ignores_and_clears_requests(memory_cluster) -> None:
    c = memory_cluster
    await c.start_brokers((1, 2))
    await c.create_topic("d", {0: (1,)})
    await c.admin.request_topic_deletion("d")
    await c.start_active_controller(1, delete_topic_enable=False)
    await c.settle()
    assert not await c.exists("/admin/delete_topics/d")  # stale request removed at failover
    await c.admin.request_topic_deletion("d")
    await c.settle()
    assert await c.exists("/admin/delete_topics/d")  # not watched: nothing happens
    assert await c.exists("/brokers/topics/d") and c.transport.requests("StopReplica") == []
    assert await c.state("d", 0) is not None
