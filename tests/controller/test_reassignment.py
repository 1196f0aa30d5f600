"""Partition reassignment on the in-memory ZooKeeper with the fake transport
(seed 000 §Partition 重新分配 steps 1-11 and its AR / leader-ISR table).

Followers catching up are simulated as the leader would report them: a
conditional write of the expanded ISR to the state znode plus an ISR change
notification (seed 002 §6.4)."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.controller.events import AlterPartitionReassignments, ListPartitionReassignments
from kavka.zk.admin import REASSIGN_PARTITIONS_PATH, ReassignPartitionsZNode
from kavka.zk.brokers import PartitionStateZNode, TopicZNode

TOPIC_PATH = "/brokers/topics/t"
STATE_PATH = "/brokers/topics/t/partitions/0/state"

# Seed 000's table: (AR, leader, ISR) after the initial state and steps 2, 4, 7, 8, 10.
SEED_TABLE = [
    ((1, 2, 3), 1, {1, 2, 3}),  # initial state
    ((1, 2, 3, 4, 5, 6), 1, {1, 2, 3}),  # step 2
    ((1, 2, 3, 4, 5, 6), 1, {1, 2, 3, 4, 5, 6}),  # step 4
    ((1, 2, 3, 4, 5, 6), 4, {1, 2, 3, 4, 5, 6}),  # step 7
    ((1, 2, 3, 4, 5, 6), 4, {4, 5, 6}),  # step 8
    ((4, 5, 6), 4, {4, 5, 6}),  # step 10
]


def _snapshot(c) -> tuple[tuple[int, ...], int, set[int]]:
    topic = TopicZNode.decode(c.memory.nodes[TOPIC_PATH].data, TOPIC_PATH)
    state = PartitionStateZNode.decode(c.memory.nodes[STATE_PATH].data, STATE_PATH)
    return tuple(topic.partitions[0]), state.leader, set(state.isr)


def _record_writes(c) -> list:
    """Every write of the topic or state znode, as (AR, leader, ISR), in order."""
    trace: list = []
    apply_set = c.memory.apply_set

    def recording(path, data):
        stat = apply_set(path, data)
        if path in (TOPIC_PATH, STATE_PATH):
            trace.append(_snapshot(c))
        return stat

    c.memory.apply_set = recording
    return trace


def _dedup(trace: list) -> list:
    out: list = []
    for row in trace:
        if not out or out[-1] != row:
            out.append(row)
    return out


async def _catch_up(c, topic: str, partition: int, isr: tuple[int, ...], notify: bool = True) -> None:
    """The leader adds caught-up followers to the ISR and (unless ``notify``
    is false: its propagation has not run yet) tells the controller."""
    (state, version), = (await c.admin.get_partition_states([(topic, partition)])).values()
    grown = PartitionStateZNode(topic, partition, state.leader, state.leader_epoch, isr, state.controller_epoch)
    assert await c.admin.maybe_update_leader_and_isr(grown, version) is not None
    if notify:
        await c.admin.create_isr_change_notification([(topic, partition)])


async def _start(c, controller: int = 1):
    ctl = await c.boot(range(1, 7), controller=controller)
    await c.create_topic("t", {0: (1, 2, 3)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    return ctl


async def _request_reassignment(c, target: tuple[int, ...]) -> None:
    await c.admin.store.create(REASSIGN_PARTITIONS_PATH, ReassignPartitionsZNode((("t", 0, target),)).encode(), make_parents=True)


async def test_reassignment_follows_the_seed_table_step_by_step(memory_cluster) -> None:
    c = memory_cluster
    ctl = await _start(c)
    trace = _record_writes(c)
    trace.append(_snapshot(c))
    epoch_before = (await c.state("t", 0)).leader_epoch
    c.transport.clear()
    await _request_reassignment(c, (4, 5, 6))
    await c.settle()
    # Phase A (steps 1-3): AR = OAR + RAR with KIP-455's progress fields,
    # leader epoch bumped, LeaderAndIsr to all of AR, RAR - OAR started as new.
    topic, _ = await c.admin.get_topic("t")
    assert topic.partitions[0] == (1, 2, 3, 4, 5, 6)
    assert (topic.adding_replicas[0], topic.removing_replicas[0]) == ((4, 5, 6), (1, 2, 3))
    state = await c.state("t", 0)
    assert (state.leader, state.leader_epoch) == (1, epoch_before + 1)
    for b in range(1, 7):
        (req,) = c.transport.requests("LeaderAndIsr", b)
        ps = c.partitions_of(req)[("t", 0)]
        assert (ps.leader, ps.leader_epoch, list(ps.replicas)) == (1, epoch_before + 1, [1, 2, 3, 4, 5, 6])
        assert ps.is_new == (b in (4, 5, 6))
    assert not c.transport.requests("StopReplica")
    assert await c.exists(REASSIGN_PARTITIONS_PATH)  # still waiting (step 4)
    # Step 4: the new replicas catch up; phase B runs to the end.
    c.transport.clear()
    await _catch_up(c, "t", 0, (1, 2, 3, 4, 5, 6))
    await c.settle()
    assert _dedup(trace) == SEED_TABLE
    topic, _ = await c.admin.get_topic("t")
    assert (dict(topic.adding_replicas), dict(topic.removing_replicas)) == ({}, {})
    assert not await c.exists(REASSIGN_PARTITIONS_PATH)  # step 11
    # Step 7-8: the new leader 4 and its followers learn the new state; the
    # old replicas are stopped and deleted (step 9).
    for b in (4, 5, 6):
        ps = c.partitions_of(c.transport.requests("LeaderAndIsr", b)[-1])[("t", 0)]
        assert (ps.leader, sorted(ps.isr), list(ps.replicas)) == (4, [4, 5, 6], [4, 5, 6])
    for b in (1, 2, 3):
        stops = [c.partitions_of(r)[("t", 0)] for r in c.transport.requests("StopReplica", b)]
        assert stops and stops[-1].delete_partition
    assert ctl.active.context.partition_replicas(ctl.active.context.all_partitions()[0]) == (4, 5, 6)
    um = c.partitions_of(c.transport.requests("UpdateMetadata", 5)[-1])[("t", 0)]
    assert (um.leader, list(um.replicas)) == (4, [4, 5, 6])


async def test_a_new_controller_finishes_a_reassignment_left_half_done(memory_cluster) -> None:
    c = memory_cluster
    ctl = await _start(c)
    await _request_reassignment(c, (4, 5, 6))
    await c.settle()
    await ctl.stop()  # dies between steps 4 and 5
    c.controllers.pop(1)
    ctl2 = await c.start_active_controller(2)
    await c.settle()
    assert ctl2.active.reassigner.in_progress() == [ctl2.active.context.all_partitions()[0]]
    await _catch_up(c, "t", 0, (1, 2, 3, 4, 5, 6))
    await c.settle()
    topic, _ = await c.admin.get_topic("t")
    assert (topic.partitions[0], dict(topic.adding_replicas)) == ((4, 5, 6), {})
    state = await c.state("t", 0)
    assert (state.leader, set(state.isr)) == (4, {4, 5, 6})
    assert not await c.exists(REASSIGN_PARTITIONS_PATH)


async def test_api_reassignment_lists_progress_and_can_be_cancelled(memory_cluster) -> None:
    c = memory_cluster
    ctl = await _start(c)
    ask = ctl.ask
    result = await ask(lambda f: AlterPartitionReassignments(f, reassignments=(("t", 0, (2, 3, 4)), ("t", 9, (1,)), ("nope", 0, (1,)))))
    codes = {(tp.topic, tp.partition): r.code for tp, r in result.items()}
    assert codes == {("t", 0): ErrorCode.NONE, ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    await c.settle()
    listed = await ask(lambda f: ListPartitionReassignments(f, partitions=None))
    ((tp, a),) = listed.items()
    assert (tp.topic, tp.partition, a.replicas, a.adding, a.removing) == ("t", 0, (1, 2, 3, 4), (4,), (1,))
    bad = await ask(lambda f: AlterPartitionReassignments(f, reassignments=(("t", 0, (2, 2)), ("t", 0, (2, 7)))))
    assert [r.code for r in bad.values()] == [ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    rf = await ask(lambda f: AlterPartitionReassignments(f, reassignments=(("t", 0, (2, 3, 4, 5)),), allow_replication_factor_change=False))
    assert [r.code for r in rf.values()] == [ErrorCode.INVALID_REPLICATION_FACTOR]
    # Cancel: back to OAR, the added replica is stopped and deleted.
    c.transport.clear()
    cancelled = await ask(lambda f: AlterPartitionReassignments(f, reassignments=(("t", 0, None),)))
    assert [r.code for r in cancelled.values()] == [ErrorCode.NONE]
    await c.settle()
    topic, _ = await c.admin.get_topic("t")
    assert (topic.partitions[0], dict(topic.adding_replicas), dict(topic.removing_replicas)) == ((1, 2, 3), {}, {})
    assert c.partitions_of(c.transport.requests("StopReplica", 4)[-1])[("t", 0)].delete_partition
    assert await ask(lambda f: ListPartitionReassignments(f, partitions=None)) == {}
    again = await ask(lambda f: AlterPartitionReassignments(f, reassignments=(("t", 0, None),)))
    assert [r.code for r in again.values()] == [ErrorCode.NO_REASSIGNMENT_IN_PROGRESS]


async def test_shrink_and_reorder_complete_at_once_and_invalid_znode_entries_are_dropped(memory_cluster) -> None:
    c = memory_cluster
    await _start(c)
    znode = ReassignPartitionsZNode((("t", 0, (3, 2)), ("gone", 0, (1,)), ))
    await c.admin.store.create(REASSIGN_PARTITIONS_PATH, znode.encode(), make_parents=True)
    await c.settle()
    # {3,2} is in the ISR already: no waiting; leader 1 is not in RAR, so 3 leads.
    topic, _ = await c.admin.get_topic("t")
    assert topic.partitions[0] == (3, 2)
    state = await c.state("t", 0)
    assert (state.leader, set(state.isr)) == (3, {2, 3})
    assert not await c.exists(REASSIGN_PARTITIONS_PATH)
    assert c.partitions_of(c.transport.requests("StopReplica", 1)[-1])[("t", 0)].delete_partition


async def test_topic_deletion_waits_for_its_reassignment(memory_cluster) -> None:
    c = memory_cluster
    ctl = await _start(c)
    await _request_reassignment(c, (4, 5, 6))
    await c.settle()
    await c.admin.request_topic_deletion("t")
    await c.settle()
    assert await c.exists(TOPIC_PATH)  # ineligible while the partition moves
    assert "t" in ctl.active.context.topics_ineligible_for_deletion
    await _catch_up(c, "t", 0, (1, 2, 3, 4, 5, 6))
    await c.settle()
    await c.until(lambda: not c.memory.nodes.get(TOPIC_PATH), "the topic to be deleted after the reassignment")
    assert ctl.active.deletion.completed == ["t"]


async def test_new_replica_target_replaces_a_pending_one(memory_cluster) -> None:
    c = memory_cluster
    ctl = await _start(c)
    await _request_reassignment(c, (4, 5, 6))
    await c.settle()
    c.transport.clear()
    result = await ctl.ask(lambda f: AlterPartitionReassignments(f, reassignments=(("t", 0, (1, 2, 4)),)))
    assert [r.code for r in result.values()] == [ErrorCode.NONE]
    await c.settle()
    # OAR stays {1,2,3}; 5 and 6, wanted only by the old target, are stopped and deleted.
    topic, _ = await c.admin.get_topic("t")
    assert (topic.partitions[0], topic.adding_replicas[0], topic.removing_replicas[0]) == ((1, 2, 3, 4), (4,), (3,))
    for b in (5, 6):
        assert c.partitions_of(c.transport.requests("StopReplica", b)[-1])[("t", 0)].delete_partition
    assert not await c.exists(REASSIGN_PARTITIONS_PATH)  # superseded by the API request
    await _catch_up(c, "t", 0, (1, 2, 3, 4))
    await c.settle()
    topic, _ = await c.admin.get_topic("t")
    assert topic.partitions[0] == (1, 2, 4)
    state = await c.state("t", 0)
    assert (state.leader, set(state.isr)) == (1, {1, 2, 4})


async def test_the_state_znode_watch_completes_without_waiting_for_notifications(memory_cluster) -> None:
    c = memory_cluster
    await _start(c)
    await _request_reassignment(c, (4, 5, 6))
    await c.settle()
    await _catch_up(c, "t", 0, (1, 2, 3, 4, 5, 6), notify=False)
    await c.settle()
    topic, _ = await c.admin.get_topic("t")
    assert topic.partitions[0] == (4, 5, 6)
    assert not await c.exists(REASSIGN_PARTITIONS_PATH)


async def test_a_resigned_controller_is_not_kept_alive_by_its_watches(memory_cluster) -> None:
    """The state znode watch of a reassignment in progress (and every other
    watch) outlives the epoch in ZooKeeper; it must not hold the epoch's
    context (the whole cluster's state) once the controller resigned."""
    import gc
    import weakref

    c = memory_cluster
    ctl = await _start(c)
    await _request_reassignment(c, (4, 5, 6))
    await c.settle()
    old = weakref.ref(ctl.active)
    await ctl.stop()  # broker 1 keeps its session, so its watches stay registered
    gc.collect()
    assert old() is None
    assert c.memory.data_watches  # the watches are still there
