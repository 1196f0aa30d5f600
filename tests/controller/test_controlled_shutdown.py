"""The controller's side of ControlledShutdown (API 7) on the in-memory
ZooKeeper with the fake transport: leaderships move to other ISR members,
the broker leaves the ISRs, StopReplica (no delete) for what it follows,
and the answer lists what it still leads."""

from __future__ import annotations

import pytest

from kavka.common.errors import ErrorCode, NotControllerError
from kavka.controller.events import ControlledShutdown


async def test_controlled_shutdown_moves_leadership_and_shrinks_isrs(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2, 3), controller=3, auto_leader_rebalance_enable=False)
    # 0: led by 1 with ISR {1,2}; 1: followed by 1; 2: only on 1 (cannot move).
    await c.create_topic("t", {0: (1, 2), 1: (2, 1), 2: (1,), 3: (3, 2)})
    await c.until(lambda: c.state("t", 3), "partition states")
    await c.settle()
    c.transport.clear()
    epoch = (await c.admin.store.exists("/brokers/ids/1")).czxid
    # KIP-380, strictly: any epoch but the registration's drains nothing
    # (Kafka accepts a newer one, which a client could make up).
    for wrong in (epoch - 1, epoch + 1, epoch + 10**6):
        refused = await ctl.ask(lambda f, wrong=wrong: ControlledShutdown(f, broker_id=1, broker_epoch=wrong))
        assert refused.error is ErrorCode.STALE_BROKER_EPOCH
    assert c.transport.sent == []  # nothing moved
    result = await ctl.ask(lambda f: ControlledShutdown(f, broker_id=1, broker_epoch=epoch))
    assert result.error is ErrorCode.NONE and result.remaining == ()
    s0, s1, s2, s3 = [await c.state("t", p) for p in range(4)]
    assert (s0.leader, s0.isr) == (2, (2,))
    # The follower still runs: a new epoch fences its fetches, so it cannot rejoin the ISR.
    assert (s1.leader, s1.leader_epoch, s1.isr) == (2, 1, (2,))
    assert (s2.leader, s2.isr) == (1, (1,))  # single replica: stays, not reported
    assert (s3.leader, s3.isr) == (3, (3, 2))  # not on broker 1: untouched
    await c.settle()
    # Broker 1 becomes a follower of partition 0 and stops following 1.
    ps = c.partitions_of(c.transport.requests("LeaderAndIsr", 1)[-1])[("t", 0)]
    assert (ps.leader, list(ps.isr)) == (2, [2])
    stops = {k: v for r in c.transport.requests("StopReplica", 1) for k, v in c.partitions_of(r).items()}
    assert set(stops) == {("t", 1)} and not stops[("t", 1)].delete_partition
    assert 1 in ctl.active.context.shutting_down
    # A later election never picks a shutting-down broker.
    await c.kill_broker(2)
    await c.until(lambda: c.state("t", 0), "state")
    await c.settle()
    assert (await c.state("t", 0)).leader == -1


async def test_remaining_partitions_stale_epoch_unknown_broker_and_not_controller(memory_cluster) -> None:
    c = memory_cluster
    await c.start_brokers((1, 2))
    ctl = await c.start_controller(2, auto_leader_rebalance_enable=False)
    other = await c.start_controller(1)
    await c.until(lambda: ctl.is_active, "controller")
    await c.create_topic("t", {0: (1, 2)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    # 2 is not in the ISR: nobody can take over partition 0 from 1.
    from kavka.zk.brokers import PartitionStateZNode

    (state, version), = (await c.admin.get_partition_states([("t", 0)])).values()
    shrunk = PartitionStateZNode("t", 0, 1, state.leader_epoch, (1,), state.controller_epoch)
    assert await c.admin.maybe_update_leader_and_isr(shrunk, version) is not None
    await c.admin.create_isr_change_notification([("t", 0)])
    await c.settle()
    result = await ctl.ask(lambda f: ControlledShutdown(f, broker_id=1, broker_epoch=-1))
    assert result.error is ErrorCode.NONE
    assert [(tp.topic, tp.partition) for tp in result.remaining] == [("t", 0)]
    stale = await ctl.ask(lambda f: ControlledShutdown(f, broker_id=1, broker_epoch=1))
    assert stale.error is ErrorCode.STALE_BROKER_EPOCH
    unknown = await ctl.ask(lambda f: ControlledShutdown(f, broker_id=7, broker_epoch=-1))
    assert unknown.error is ErrorCode.BROKER_NOT_AVAILABLE
    with pytest.raises(NotControllerError):
        await other.ask(lambda f: ControlledShutdown(f, broker_id=1, broker_epoch=-1))


async def test_a_broker_the_leader_put_back_in_the_isr_leaves_it_when_it_dies(memory_cluster) -> None:
    """After a controlled shutdown the broker follows the partitions it led
    and may catch up and be added back to their ISR by the new leader before
    it exits (the leader writes the ISR; the controller hears of it only by a
    later notification). Its death must still take it out of the ISR: the
    controller decides from the state in ZooKeeper, not from its cache."""
    from kavka.zk.brokers import PartitionStateZNode

    c = memory_cluster
    ctl = await c.boot((1, 2, 3), controller=3, auto_leader_rebalance_enable=False)
    await c.create_topic("t", {0: (1, 2, 3)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    epoch = (await c.admin.store.exists("/brokers/ids/1")).czxid
    result = await ctl.ask(lambda f: ControlledShutdown(f, broker_id=1, broker_epoch=epoch))
    assert result.error is ErrorCode.NONE
    moved = await c.state("t", 0)
    assert moved.leader == 2 and 1 not in moved.isr
    # The new leader expands the ISR with broker 1; no notification yet.
    (state, version), = (await c.admin.get_partition_states([("t", 0)])).values()
    grown = PartitionStateZNode("t", 0, state.leader, state.leader_epoch, (*state.isr, 1), state.controller_epoch)
    assert await c.admin.maybe_update_leader_and_isr(grown, version) is not None
    await c.kill_broker(1)
    await c.until(lambda: c.state("t", 0), "state")
    await c.settle()
    after = await c.state("t", 0)
    assert after.leader == 2 and 1 not in after.isr, after
