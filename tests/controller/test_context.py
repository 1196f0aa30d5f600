"""ControllerContext queries, znode conversion, the seed's reassignment AR
table, and the auto-rebalance selection."""

from __future__ import annotations

from kavka.common.ids import NO_LEADER
from kavka.common.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kavka.common.listeners import EndPoint
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, PartitionReplica, ReplicaAssignment
from kavka.controller.election import elect_for_reassigned_partition, remove_replica_from_isr
from kavka.controller.rebalance import leader_imbalance, partitions_to_rebalance
from kavka.zk.brokers import BrokerIdZNode, PartitionStateZNode


def broker(i: int) -> BrokerIdZNode:
    return BrokerIdZNode(i, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + i, "PLAINTEXT"),))


def context_with(assignments: dict[str, dict[int, tuple[int, ...]]], leaders: dict[TopicPartition, int], live: set[int]) -> ControllerContext:
    ctx = ControllerContext(epoch=3)
    ctx.live_brokers = {b: broker(b) for b in live}
    for topic, parts in assignments.items():
        for p, replicas in parts.items():
            tp = TopicPartition(topic, p)
            ctx.update_assignment(tp, ReplicaAssignment(replicas))
            ctx.put_leadership(tp, LeaderAndIsr(leaders.get(tp, replicas[0]), 0, replicas))
    return ctx


def test_queries():
    ctx = context_with({"a": {0: (1, 2), 1: (2, 3)}, "b": {0: (3, 1)}}, {TopicPartition("b", 0): 1}, {1, 2})
    assert ctx.all_topics == ["a", "b"]
    assert ctx.partitions_on_broker(1) == [TopicPartition("a", 0), TopicPartition("b", 0)]
    assert ctx.partitions_led_by(1) == [TopicPartition("a", 0), TopicPartition("b", 0)]
    assert PartitionReplica(TopicPartition("a", 1), 3) in ctx.replicas_on_brokers([3])
    # seed 000 §Broker failover step 2: set_p when broker 2 dies
    del ctx.live_brokers[2]
    assert ctx.partitions_without_live_leader() == [TopicPartition("a", 1)]
    ctx.topics_to_delete.add("a")
    assert ctx.partitions_without_live_leader() == []
    ctx.shutting_down.add(1)
    assert ctx.live_broker_ids == set() and ctx.live_or_shutting_down_ids == {1}
    ctx.remove_topic("a")
    assert ctx.all_topics == ["b"] and TopicPartition("a", 0) not in ctx.leadership and "a" not in ctx.topics_to_delete


def test_znode_conversion_keeps_version_and_epochs():
    z = PartitionStateZNode("t", 2, 1, 48, (1, 2), 29)
    entry = z.leader_isr_and_controller_epoch(zk_version=7)
    assert entry == LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 48, (1, 2), 7), 29)
    assert entry.leader_and_isr == LeaderAndIsr(1, 48, (1, 2), 7) and entry.controller_epoch == 29
    assert PartitionStateZNode.of(TopicPartition("t", 2), entry) == z


def test_seed_reassignment_table():
    """seed 000 §Partition 重新分配: OAR {1,2,3} -> RAR {4,5,6}."""
    oar, rar = (1, 2, 3), (4, 5, 6)
    state = LeaderAndIsr(1, 0, (1, 2, 3))
    ar = ReplicaAssignment(oar)
    assert (ar.replicas, state.leader, state.isr) == ((1, 2, 3), 1, (1, 2, 3))  # initial
    ar = ReplicaAssignment.for_reassignment(oar, rar)  # step 1/2
    assert ar.replicas == (1, 2, 3, 4, 5, 6) and ar.adding == rar and ar.removing == oar
    assert ar.target_replicas == rar and ar.original_replicas == oar and ar.is_being_reassigned
    state = state.new_leader_and_isr(state.leader, state.isr)  # step 2 bumps the leader epoch
    state = state.new_leader_and_isr(1, (1, 2, 3, 4, 5, 6))  # step 4: RAR caught up
    assert (state.leader, state.isr) == (1, (1, 2, 3, 4, 5, 6))
    elected = elect_for_reassigned_partition(ar.target_replicas, state.isr, {1, 2, 3, 4, 5, 6})  # step 7
    state = state.new_leader_and_isr(elected.leader, elected.isr)
    assert (state.leader, state.isr) == (4, (1, 2, 3, 4, 5, 6))
    for r in ar.removing:  # step 8
        state = remove_replica_from_isr(state, r)
    assert (state.leader, state.isr) == (4, (4, 5, 6))
    ar = ReplicaAssignment(ar.target_replicas)  # step 10
    assert ar.replicas == (4, 5, 6) and not ar.is_being_reassigned
    assert state.leader_epoch == 6


def test_offline_replica_removal_leaves_leaderless_partition():
    state = remove_replica_from_isr(LeaderAndIsr(2, 4, (2,)), 2)
    assert state == LeaderAndIsr(NO_LEADER, 5, (2,))


def test_rebalance_selects_brokers_over_the_threshold():
    # broker 1 prefers 4 partitions but leads none of them; broker 2 is balanced
    assignments = {"t": {0: (1, 2), 1: (1, 2), 2: (1, 2), 3: (1, 2), 4: (2, 1)}}
    leaders = {TopicPartition("t", p): 2 for p in range(4)}
    ctx = context_with(assignments, leaders, {1, 2})
    imbalance = leader_imbalance(ctx)
    assert imbalance[1].ratio == 1.0 and imbalance[2].ratio == 0.0
    assert partitions_to_rebalance(ctx, 10) == [TopicPartition("t", p) for p in range(4)]
    # below the threshold: nothing to do
    ctx.put_leadership(TopicPartition("t", 0), LeaderAndIsr(1, 1, (1, 2)))
    ctx.put_leadership(TopicPartition("t", 1), LeaderAndIsr(1, 1, (1, 2)))
    ctx.put_leadership(TopicPartition("t", 2), LeaderAndIsr(1, 1, (1, 2)))
    assert leader_imbalance(ctx)[1].ratio == 0.25
    assert partitions_to_rebalance(ctx, 25) == []
    assert partitions_to_rebalance(ctx, 24) == [TopicPartition("t", 3)]
    # a dead preferred broker or a partition being reassigned is skipped
    ctx.update_assignment(TopicPartition("t", 3), ReplicaAssignment.for_reassignment((1, 2), (1, 3)))
    assert partitions_to_rebalance(ctx, 0) == []
    del ctx.live_brokers[1]
    ctx.update_assignment(TopicPartition("t", 3), ReplicaAssignment((1, 2)))
    assert partitions_to_rebalance(ctx, 0) == []
