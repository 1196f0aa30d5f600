"""Preferred replica election (seed 000 §Preferred Replica Leader Election
Tool), ElectLeaders (preferred and unclean, KIP-460) and the automatic
leader rebalance, on the in-memory ZooKeeper with the fake transport."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.controller.events import ElectLeaders
from kavka.zk.admin import PREFERRED_REPLICA_ELECTION_PATH, PreferredReplicaElectionZNode


async def _cluster_with_moved_leaders(c, **config):
    """Brokers 1-3, topic t with preferred replicas 1, 2, 3; broker 1
    bounces, so partition 0 is led by 2 although 1 is back (and, once it
    rejoins the ISR, could lead again)."""
    ctl = await c.boot((1, 2, 3), controller=3, **config)
    await c.create_topic("t", {0: (1, 2), 1: (2, 3), 2: (3, 1)})
    await c.until(lambda: c.state("t", 2), "partition states")
    await c.settle()
    await c.kill_broker(1)
    await c.until(lambda: _leader(c, "t", 0, 2), "partition 0 to move to broker 2")
    await c.start_broker(1)
    await c.settle()
    return ctl


async def _leader(c, topic: str, p: int, want: int) -> bool:
    state = await c.state(topic, p)
    return state is not None and state.leader == want


async def _rejoin_isr(c, topic: str, p: int, isr: tuple[int, ...]) -> None:
    from kavka.zk.brokers import PartitionStateZNode

    (state, version), = (await c.admin.get_partition_states([(topic, p)])).values()
    grown = PartitionStateZNode(topic, p, state.leader, state.leader_epoch, isr, state.controller_epoch)
    assert await c.admin.maybe_update_leader_and_isr(grown, version) is not None
    await c.admin.create_isr_change_notification([(topic, p)])


async def test_znode_election_moves_only_partitions_whose_preferred_replica_is_in_sync(memory_cluster) -> None:
    c = memory_cluster
    await _cluster_with_moved_leaders(c, auto_leader_rebalance_enable=False)
    state = await c.state("t", 0)
    assert (state.leader, state.isr) == (2, (2,))
    # 1 is alive but not in the ISR: the controller refuses (no data loss).
    request = PreferredReplicaElectionZNode((("t", 0),)).encode()
    await c.admin.store.create(PREFERRED_REPLICA_ELECTION_PATH, request, make_parents=True)
    await c.settle()
    assert (await c.state("t", 0)).leader == 2
    assert not await c.exists(PREFERRED_REPLICA_ELECTION_PATH)
    # Once 1 is back in the ISR the same request makes it leader.
    await _rejoin_isr(c, "t", 0, (2, 1))
    await c.settle()
    c.transport.clear()
    await c.admin.store.create(PREFERRED_REPLICA_ELECTION_PATH, request, make_parents=True)
    await c.settle()
    state = await c.state("t", 0)
    assert (state.leader, state.isr) == (1, (2, 1))
    for b in (1, 2):
        ps = c.partitions_of(c.transport.requests("LeaderAndIsr", b)[-1])[("t", 0)]
        assert (ps.leader, ps.leader_epoch) == (1, state.leader_epoch)
    assert not await c.exists(PREFERRED_REPLICA_ELECTION_PATH)


async def test_elect_leaders_preferred_and_unclean(memory_cluster) -> None:
    c = memory_cluster
    ctl = await _cluster_with_moved_leaders(c, auto_leader_rebalance_enable=False)
    res = await ctl.ask(lambda f: ElectLeaders(f, partitions=(("t", 0), ("t", 1), ("x", 0)), election_type=0))
    codes = {(tp.topic, tp.partition): r.code for tp, r in res.items()}
    assert codes == {
        ("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("x", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    await _rejoin_isr(c, "t", 0, (2, 1))
    await c.settle()
    res = await ctl.ask(lambda f: ElectLeaders(f, partitions=None, election_type=0))
    assert {tp.partition: r.code for tp, r in res.items()} == {0: ErrorCode.NONE, 1: ErrorCode.ELECTION_NOT_NEEDED, 2: ErrorCode.ELECTION_NOT_NEEDED}
    assert (await c.state("t", 0)).leader == 1
    # Unclean: u-0 (replicas 2, 1) loses 1 from its ISR, then its only
    # ISR member 2 dies: offline, until an unclean election takes 1.
    await c.create_topic("u", {0: (2, 1)})
    await c.until(lambda: c.state("u", 0), "u-0 state")
    await c.settle()
    await c.kill_broker(1)
    await c.settle()
    await c.start_broker(1)
    await c.settle()
    await c.kill_broker(2)
    await c.until(lambda: _leader(c, "u", 0, -1), "u-0 offline")
    res = await ctl.ask(lambda f: ElectLeaders(f, partitions=(("u", 0), ("t", 2)), election_type=1))
    assert {(tp.topic, tp.partition): r.code for tp, r in res.items()} == {("t", 2): ErrorCode.ELECTION_NOT_NEEDED, ("u", 0): ErrorCode.NONE}
    state = await c.state("u", 0)
    assert (state.leader, state.isr) == (1, (1,))


async def test_auto_rebalance_returns_leadership_to_preferred_replicas(memory_cluster) -> None:
    c = memory_cluster
    await _cluster_with_moved_leaders(
        c, auto_leader_rebalance_enable=True, leader_imbalance_check_interval_seconds=1, leader_imbalance_per_broker_percentage=0
    )
    assert (await c.state("t", 0)).leader == 2
    await _rejoin_isr(c, "t", 0, (2, 1))
    await c.until(lambda: _leader(c, "t", 0, 1), "the rebalance timer to give partition 0 back to broker 1", timeout=15)


async def test_no_rebalance_when_disabled_or_below_the_threshold(memory_cluster) -> None:
    c = memory_cluster
    ctl = await _cluster_with_moved_leaders(
        c, auto_leader_rebalance_enable=True, leader_imbalance_check_interval_seconds=1, leader_imbalance_per_broker_percentage=100
    )
    await _rejoin_isr(c, "t", 0, (2, 1))
    await c.settle()
    checks = ctl.events.processed
    await c.until(lambda: ctl.events.processed >= checks + 2, "two more rebalance checks", timeout=15)
    assert (await c.state("t", 0)).leader == 2  # 1 of 1 led elsewhere = 100%: not above the threshold
