"""Broker failure and return as the controller handles them (seed 000
§Broker failover steps 1-4, §Broker 启动过程), on the in-memory ZooKeeper."""

from __future__ import annotations

import logging

import pytest

from kavka.zk.brokers import PartitionStateZNode
from tests.common.loop_ticker import Ticker


async def test_rf1_partition_goes_leaderless_and_returns_with_its_broker(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2))
    await c.create_topic("t", {0: (1,), 1: (2,)})
    await c.until(lambda: c.state("t", 1), "partition states")
    await c.settle()
    c.transport.clear()
    await c.kill_broker(2)
    await c.until(lambda: ctl.active is not None and 2 not in ctl.active.context.live_brokers, "broker 2 seen dead")
    await c.settle()
    # No live replica: leader -1, the ISR keeps its last member, epoch bumped.
    assert await c.state("t", 1) == PartitionStateZNode("t", 1, -1, 1, (2,), 1)
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 1, 0, (1,), 1)
    assert c.transport.brokers_sent("LeaderAndIsr") == []  # nobody left to tell
    (um,) = c.transport.requests("UpdateMetadata", 1)
    ps = c.partitions_of(um)[("t", 1)]
    assert (ps.leader, list(ps.offline_replicas)) == (-1, [2])
    assert [b.id for b in um.live_brokers] == [1]
    c.transport.clear()
    await c.start_broker(2)
    await c.until(lambda: c.state("t", 1), "state readable")
    await c.until(lambda: _leader_is(c, "t", 1, 2), "broker 2 leads again")
    await c.settle()
    assert await c.state("t", 1) == PartitionStateZNode("t", 1, 2, 2, (2,), 1)
    # The returning broker first learns the whole cluster, then its leadership.
    kinds = [r.API_NAME for b, r in c.transport.sent if b == 2]
    assert kinds[0] == "UpdateMetadata" and "LeaderAndIsr" in kinds
    assert {k for r in c.transport.requests("UpdateMetadata", 2)[:1] for k in c.partitions_of(r)} == {("t", 0), ("t", 1)}
    last = c.transport.requests("LeaderAndIsr", 2)[-1]
    assert (c.partitions_of(last)[("t", 1)].leader, c.partitions_of(last)[("t", 1)].leader_epoch) == (2, 2)
    stat = await c.admin.store.exists("/brokers/ids/2")
    assert last.broker_epoch == stat.czxid  # the new registration's epoch


async def _broker_2_leads_even_follows_odd(c, n: int) -> None:
    """Brokers 1-3 (the controller on 1) and topic t of ``n`` partitions:
    broker 2 leads the even ones and follows in the odd ones."""
    await c.boot((1, 2, 3))
    await c.create_topic("t", {p: ((2, 3, 1) if p % 2 == 0 else (3, 2, 1)) for p in range(n)})
    await c.until(lambda: c.state("t", n - 1), "partition states")
    await c.settle()


def _count_state_reads(store, monkeypatch) -> list[str]:
    """The partition-state paths ``store`` reads in batches from now on."""
    read: list[str] = []
    get_many = store.get_many

    async def counting(paths):
        read.extend(p for p in paths if p.endswith("/state"))
        return await get_many(paths)

    monkeypatch.setattr(store, "get_many", counting)
    return read


async def test_a_broker_failure_reads_no_partition_state(memory_cluster, monkeypatch) -> None:
    """The elections decide on the controller's cached states and write
    them conditionally; the ISR removals after them skip the partitions
    just elected (their new ISR holds no dead replica) and write the rest
    the same way. With a cache that is current nothing is read."""
    c = memory_cluster
    n = 20
    await _broker_2_leads_even_follows_odd(c, n)
    read = _count_state_reads(c.stores[1], monkeypatch)
    await c.kill_broker(2)
    await c.until(lambda: _isr_is(c, "t", 1, (3, 1)), "broker 2 out of the ISR of the partitions it followed")
    await c.settle()
    for p in range(n):  # elected (even: a new epoch) or shrunk (odd: the same epoch)
        assert await c.state("t", p) == PartitionStateZNode("t", p, 3, 1 - p % 2, (3, 1), 1)
    assert read == [], read


async def test_a_new_controller_reads_each_state_once(memory_cluster, monkeypatch) -> None:
    """A controller's failover reads every partition state (seed 000
    failover step 7) after it learned which brokers are gone; the elections
    and the dead replicas' ISR removals that follow read none again."""
    c = memory_cluster
    await c.boot((1, 2, 3))
    await c.start_controller(3)
    n = 20
    # Broker 1 (the controller) leads the even partitions and follows in the odd ones.
    await c.create_topic("t", {p: ((1, 3, 2) if p % 2 == 0 else (3, 1, 2)) for p in range(n)})
    await c.until(lambda: c.state("t", n - 1), "partition states")
    await c.settle()
    read = _count_state_reads(c.stores[3], monkeypatch)
    await c.kill_broker(1)
    await c.until(lambda: c.controllers[3].is_active, "broker 3 to take over")
    await c.until(lambda: _isr_is(c, "t", 1, (3, 2)), "broker 1 out of the ISR of the partitions it followed")
    await c.settle()
    for p in range(n):  # elected (even: a new epoch) or shrunk (odd: the same epoch)
        assert await c.state("t", p) == PartitionStateZNode("t", p, 3, 1 - p % 2, (3, 2), 2)
    assert sorted(read) == sorted(PartitionStateZNode.path("t", p) for p in range(n)), read


async def _leader_is(c, topic: str, partition: int, leader: int) -> bool:
    s = await c.state(topic, partition)
    return s is not None and s.leader == leader


async def test_rf3_leader_death_elects_from_live_isr_and_batches_per_broker(memory_cluster) -> None:
    c = memory_cluster
    await c.boot((1, 2, 3))
    # Broker 2 leads p0 and p1; it follows in p2.
    await c.create_topic("t", {0: (2, 3, 1), 1: (2, 1, 3), 2: (3, 2, 1)})
    await c.until(lambda: c.state("t", 2), "partition states")
    await c.settle()
    c.transport.clear()
    await c.kill_broker(2)
    await c.until(lambda: _leader_is(c, "t", 0, 3), "p0 re-elected")
    await c.settle()
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 3, 1, (3, 1), 1)
    assert await c.state("t", 1) == PartitionStateZNode("t", 1, 1, 1, (1, 3), 1)
    # A dead follower only leaves the ISR: the same leader at the same epoch.
    assert await c.state("t", 2) == PartitionStateZNode("t", 2, 3, 0, (3, 1), 1)
    # Batched per broker, in Kafka's two steps: the elections (the new
    # leaders are told at once), then the dead follower out of the ISR of
    # p2, which only its leader (3) is told: its follower keeps no ISR.
    assert sorted(c.transport.brokers_sent("LeaderAndIsr")) == [1, 3, 3]
    for b in (1, 3):
        elected = c.transport.requests("LeaderAndIsr", b)[0]
        got = {k: (ps.leader, ps.leader_epoch, list(ps.isr)) for k, ps in c.partitions_of(elected).items()}
        assert got == {("t", 0): (3, 1, [3, 1]), ("t", 1): (1, 1, [1, 3])}
        assert not any(ps.is_new for ps in c.partitions_of(elected).values())
    shrunk = c.transport.requests("LeaderAndIsr", 3)[1]
    got = {k: (ps.leader, ps.leader_epoch, list(ps.isr), ps.partition_epoch) for k, ps in c.partitions_of(shrunk).items()}
    assert got == {("t", 2): (3, 0, [3, 1], 1)}  # the same epoch, the znode's next version
    assert not any(ps.is_new for ps in c.partitions_of(shrunk).values())
    # Every live broker learns the new leaders before the ISR writes too.
    for b in (1, 3):
        kinds = [(r.API_NAME, set(c.partitions_of(r))) for to, r in c.transport.sent if to == b]
        shrunk_here = [("LeaderAndIsr", {("t", 2)})] if b == 3 else []
        assert kinds[:2 + len(shrunk_here)] == [("LeaderAndIsr", {("t", 0), ("t", 1)}),
                                                ("UpdateMetadata", {("t", 0), ("t", 1)}), *shrunk_here]
        rest = kinds[2 + len(shrunk_here):]
        assert [k for k, _ in rest] == ["UpdateMetadata"] and ("t", 2) in rest[0][1]
    assert 2 not in c.transport.brokers_sent("UpdateMetadata")


@pytest.mark.parametrize(
    "broker_setting, topic_override, expected",
    [
        (False, None, PartitionStateZNode("t", 0, -1, 1, (2,), 1)),
        (True, None, PartitionStateZNode("t", 0, 3, 1, (3,), 1)),
        (False, "true", PartitionStateZNode("t", 0, 3, 1, (3,), 1)),
        (True, "false", PartitionStateZNode("t", 0, -1, 1, (2,), 1)),
    ],
)
async def test_unclean_leader_election_flag(memory_cluster, caplog, broker_setting, topic_override, expected) -> None:
    c = memory_cluster
    caplog.set_level(logging.WARNING, logger="kavka.state.change")

    ctl = await c.boot((1, 2, 3), unclean_leader_election_enable=broker_setting)
    config = {"unclean.leader.election.enable": topic_override} if topic_override else {}
    await c.create_topic("t", {0: (2, 3)}, config)
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    # Broker 3 fell behind: the leader took it out of the ISR.
    state, version = (await c.admin.get_partition_states([("t", 0)]))[("t", 0)]
    await c.clients[2].maybe_update_leader_and_isr(PartitionStateZNode("t", 0, 2, 0, (2,), state.controller_epoch), version)
    await c.clients[2].create_isr_change_notification([("t", 0)])
    await c.settle()
    await c.kill_broker(2)
    await c.until(lambda: ctl.active is not None and 2 not in ctl.active.context.live_brokers, "broker 2 seen dead")
    await c.settle()
    assert await c.state("t", 0) == expected
    unclean = [r.getMessage() for r in caplog.records if "UNCLEAN leader election" in r.getMessage()]
    if expected.leader == 3:
        # The warning names the ISR the new leader was missing from, not the replica list.
        assert len(unclean) == 1 and "chose broker 3, which was not in the isr [2];" in unclean[0], unclean
    else:
        assert unclean == []


async def test_conflicting_isr_write_is_reread_and_retried(memory_cluster) -> None:
    c = memory_cluster
    await c.boot((1, 2, 3))
    await c.create_topic("t", {0: (2, 3, 1)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    # The leader shrinks the ISR without telling the controller: the
    # controller's cached znode version is now stale (seed 000 3.3).
    state, version = (await c.admin.get_partition_states([("t", 0)]))[("t", 0)]
    await c.clients[2].maybe_update_leader_and_isr(PartitionStateZNode("t", 0, 2, 0, (2, 1), state.controller_epoch), version)
    await c.kill_broker(2)
    await c.until(lambda: _leader_is(c, "t", 0, 1), "re-elected from the re-read ISR")
    # Broker 3 left the ISR, so only broker 1 was eligible.
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 1, 1, (1,), 1)


async def test_a_dead_followers_isr_removals_hand_the_event_loop_turns(memory_cluster, monkeypatch) -> None:
    """The dead replica leaves the ISR of every partition it followed in
    slices of the loop's time (``LoopSlice``): requests on the controller's
    broker are served between them. The elections before them take no slice,
    and the outcome is the same as in one stretch."""
    import kavka.controller.replica_state_machine as rsm
    from kavka.common.loop_slice import LoopSlice

    slices: list[LoopSlice] = []

    def every_pause_yields() -> LoopSlice:
        s = LoopSlice(slice_s=1e-9)
        slices.append(s)
        return s

    monkeypatch.setattr(rsm, "LoopSlice", every_pause_yields)
    c = memory_cluster
    n = 60
    await _broker_2_leads_even_follows_odd(c, n)
    slices.clear()
    ticker = Ticker()
    await c.kill_broker(2)
    await c.until(lambda: _isr_is(c, "t", 1, (3, 1)), "broker 2 out of the ISR of the partitions it followed")
    await c.settle()
    await ticker.stop()
    ticks = ticker.ticks
    (used,) = slices
    # A turn per replica moved OFFLINE, per partition decided and per ISR
    # written, at least: the loop ran other tasks (the ticker) in between.
    assert used.turns >= 2 * n
    assert ticks >= used.turns
    for p in range(n):  # elected (even: a new epoch) or shrunk (odd: the same epoch): leader 3, ISR [3, 1]
        assert await c.state("t", p) == PartitionStateZNode("t", p, 3, 1 - p % 2, (3, 1), 1)


async def _isr_is(c, topic: str, partition: int, isr: tuple[int, ...]) -> bool:
    s = await c.state(topic, partition)
    return s is not None and tuple(s.isr) == isr
