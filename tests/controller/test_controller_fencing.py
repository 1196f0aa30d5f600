"""Controller epochs and fencing (seed 000 §Controller Failover, KAFKA-6082
fencing through /controller_epoch's znode version), on the in-memory
ZooKeeper: a deposed controller resigns instead of writing; a new one has a
higher epoch and re-sends the state."""

from __future__ import annotations

from kavka.zk.brokers import PartitionStateZNode
from kavka.zk.controller_nodes import ControllerEpochZNode


async def test_controller_crash_hands_over_with_a_higher_epoch_and_full_state(memory_cluster) -> None:
    c = memory_cluster
    a = await c.boot((1, 2, 3))
    b = await c.start_controller(2)
    await c.create_topic("t", {0: (3, 2), 1: (1, 3)})
    await c.until(lambda: c.state("t", 1), "partition states")
    await c.settle()
    assert not b.is_active and b.active_controller_id == 1
    c.transport.clear()
    await c.crash_broker(1)  # its session ends: /controller and /brokers/ids/1 vanish
    await c.until(lambda: b.is_active, "broker 2 takes over")
    await c.settle()
    assert not a.is_active and b.epoch == 2
    data, _ = await c.admin.store.get("/controller_epoch")
    assert ControllerEpochZNode.decode(data).epoch == 2
    # Partition 1 was led by the dead broker 1: re-elected from its ISR.
    assert await c.state("t", 1) == PartitionStateZNode("t", 1, 3, 1, (3,), 2)
    # The new controller told every live broker the state of its replicas.
    for broker, parts in {2: {("t", 0)}, 3: {("t", 0), ("t", 1)}}.items():
        (req,) = c.transport.requests("LeaderAndIsr", broker)
        assert (req.controller_id, req.controller_epoch) == (2, 2)
        assert set(c.partitions_of(req)) == parts
    assert 1 not in c.transport.brokers_sent("UpdateMetadata")
    assert not any(r.controller_epoch == 1 for _, r in c.transport.sent)  # the old one sent nothing after


async def test_session_expiry_of_the_controller_leads_to_one_controller_with_a_new_epoch(memory_cluster) -> None:
    c = memory_cluster
    a = await c.boot((1, 2))
    b = await c.start_controller(2)
    await c.settle()
    await c.expire(1)  # a new session follows at once: either broker may win
    await c.until(lambda: c.active() is not None and c.active().epoch == 2, "a controller in epoch 2")
    await c.settle()
    winner = c.active()
    assert winner is not None and winner.epoch == 2
    assert a.failovers + b.failovers == 2


async def test_a_fenced_write_makes_the_controller_resign_and_reelect(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2))
    await c.settle()
    # Another controller bumped the epoch (its znode version moves).
    data, stat = await c.admin.store.get("/controller_epoch")
    await c.admin.store.set("/controller_epoch", ControllerEpochZNode(ControllerEpochZNode.decode(data).epoch + 5).encode(), stat.version)
    c.transport.clear()
    await c.create_topic("t", {0: (2,)})
    # The partition-state create is fenced: ControllerMovedError, resign.
    # /controller still names this broker's session, so it deletes it
    # and wins the next epoch (7), which then creates the partition.
    await c.until(lambda: ctl.epoch == 7, "re-elected with epoch 7")
    await c.until(lambda: c.state("t", 0), "partition created by the new epoch")
    await c.settle()
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 2, 0, (2,), 7)
    assert ctl.failovers == 2
    assert {r.controller_epoch for _, r in c.transport.sent} == {7}  # nothing went out under epoch 1


async def test_a_state_written_by_a_newer_controller_fences_this_one(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2, 3))
    await c.create_topic("t", {0: (2, 3)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    # A state carrying controller epoch 9 (a newer controller wrote it).
    state, version = (await c.admin.get_partition_states([("t", 0)]))[("t", 0)]
    await c.admin.store.set(state.znode_path, PartitionStateZNode("t", 0, 2, 4, (2, 3), 9).encode(), version)
    await c.clients[2].create_isr_change_notification([("t", 0)])  # the controller re-reads it
    await c.settle()
    before = ctl.failovers
    await c.kill_broker(2)  # election: the state's epoch 9 > 1 fences this controller
    await c.until(lambda: ctl.failovers > before, "resigned and re-elected")
    await c.settle()
    s = await c.state("t", 0)
    assert s.leader == 3 and s.controller_epoch == ctl.epoch and ctl.epoch >= 2
