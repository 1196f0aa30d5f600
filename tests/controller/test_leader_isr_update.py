"""``update_leader_and_isr`` (seed 000 §Broker failover step 3) on the
in-memory ZooKeeper: which states it reads before deciding, and that a
decision made on a stale cache never lands.

The reads are counted at the store (``get_many``: the batched reads the
controller makes of partition states)."""

from __future__ import annotations

from kavka.common.ids import BrokerId
from kavka.common.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext
from kavka.controller.election import remove_replica_from_isr
from kavka.controller.leader_isr_update import update_leader_and_isr
from kavka.zk.brokers import PartitionStateZNode, TopicZNode
from kavka.zk.client import ControllerClaim, KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

DEAD = BrokerId(3)


class CountingStore(InMemoryZkStore):
    """Counts the partition-state paths read in batches."""

    def __init__(self, server: InMemoryZooKeeper) -> None:
        super().__init__(server)
        self.read_paths: list[str] = []

    async def get_many(self, paths):
        self.read_paths.extend(paths)
        return await super().get_many(paths)


async def setup(n: int) -> tuple[CountingStore, KavkaZkClient, ControllerClaim, ControllerContext]:
    """``n`` partitions of topic t, replicas (1, 2, 3), leader 1, ISR all
    three, written by this controller and cached as written."""
    store = CountingStore(InMemoryZooKeeper())
    await store.start()
    zk = KavkaZkClient(store)
    await zk.create_top_level_paths()
    claim = await zk.try_become_controller(1)
    assert claim is not None
    await zk.create_topic(TopicZNode("t", {p: (1, 2, 3) for p in range(n)}), {})
    states = [PartitionStateZNode("t", p, 1, 0, (1, 2, 3), claim.epoch) for p in range(n)]
    created = await zk.create_partition_states(claim, states)
    context = ControllerContext(epoch=claim.epoch, epoch_zk_version=claim.epoch_zk_version)
    for s in states:
        version = created[(s.topic, s.partition)].zk_version
        assert version is not None
        context.leadership[TopicPartition("t", s.partition)] = s.leader_isr_and_controller_epoch(version)
    store.read_paths.clear()
    return store, zk, claim, context


def remove_dead(tp: TopicPartition, lai: LeaderAndIsr) -> LeaderAndIsr | None:
    new = remove_replica_from_isr(lai, DEAD)
    return None if new == lai else new


def cache(context: ControllerContext, p: int, isr: tuple[int, ...]) -> None:
    """Make the controller's cached ISR of t-p ``isr`` (same znode version)."""
    tp = TopicPartition("t", p)
    entry = context.leadership[tp]
    lai = entry.leader_and_isr
    stale = LeaderAndIsr(lai.leader, lai.leader_epoch, tuple(BrokerId(b) for b in isr), lai.zk_version)
    context.leadership[tp] = LeaderIsrAndControllerEpoch(stale, entry.controller_epoch)


async def leader_writes_isr(zk: KavkaZkClient, p: int, isr: tuple[int, ...]) -> None:
    """A leader changes the ISR itself: the controller's cache does not hear of it."""
    (state, version), = (await zk.get_partition_states([("t", p)])).values()
    written = await zk.maybe_update_leader_and_isr(
        PartitionStateZNode("t", p, state.leader, state.leader_epoch, tuple(BrokerId(b) for b in isr), state.controller_epoch), version)
    assert written is not None


async def zk_isr(zk: KavkaZkClient, p: int) -> tuple[int, ...]:
    (state, _), = (await zk.get_partition_states([("t", p)])).values()
    return tuple(state.isr)


async def test_a_write_decided_on_the_cache_reads_nothing() -> None:
    store, zk, claim, context = await setup(20)
    result = await update_leader_and_isr(zk, claim, context, [TopicPartition("t", p) for p in range(20)], remove_dead)
    assert sorted(tp.partition for tp in result.written) == list(range(20))
    assert store.read_paths == []
    for p in range(20):
        assert await zk_isr(zk, p) == (1, 2)
        assert context.leader_and_isr(TopicPartition("t", p)).isr == (1, 2)


async def test_a_stale_cache_that_would_write_nothing_is_read_first() -> None:
    """The leader put the dying broker back in the ISR and the controller
    has not heard: on its cache there is nothing to remove. The state is
    read, and the broker leaves the ISR."""
    store, zk, claim, context = await setup(3)
    await leader_writes_isr(zk, 0, (1, 2))
    await leader_writes_isr(zk, 0, (1, 2, 3))
    cache(context, 0, (1, 2))  # the cache missed the second write
    tps = [TopicPartition("t", p) for p in range(3)]
    store.read_paths.clear()
    result = await update_leader_and_isr(zk, claim, context, tps, remove_dead)
    assert store.read_paths == [PartitionStateZNode.path("t", 0)]
    assert TopicPartition("t", 0) in result.written
    assert await zk_isr(zk, 0) == (1, 2)


async def test_a_stale_cache_that_would_write_conflicts_and_is_decided_again() -> None:
    """The cache holds an older version: the write decided on it is refused,
    the state re-read, and the decision made again on what ZooKeeper holds."""
    store, zk, claim, context = await setup(2)
    await leader_writes_isr(zk, 1, (1, 3))  # the leader dropped 2: version moved
    store.read_paths.clear()
    result = await update_leader_and_isr(zk, claim, context, [TopicPartition("t", 1)], remove_dead)
    assert store.read_paths == [PartitionStateZNode.path("t", 1)]  # after the conflict only
    assert result.written[TopicPartition("t", 1)].isr == (1,)
    assert await zk_isr(zk, 1) == (1,)


async def test_confirmed_partitions_are_decided_on_the_cache() -> None:
    """A state the caller read or wrote in this event is not read again,
    even where the decision writes nothing."""
    store, zk, claim, context = await setup(4)
    for p in range(4):
        await leader_writes_isr(zk, p, (1, 2))
        cache(context, p, (1, 2))
        entry = context.leadership[TopicPartition("t", p)]
        context.leadership[TopicPartition("t", p)] = LeaderIsrAndControllerEpoch(
            entry.leader_and_isr.with_zk_version(entry.leader_and_isr.zk_version + 1), entry.controller_epoch)
    store.read_paths.clear()
    tps = [TopicPartition("t", p) for p in range(4)]
    result = await update_leader_and_isr(zk, claim, context, tps, remove_dead, confirmed=set(tps[:3]))
    assert sorted(tp.partition for tp in result.unchanged) == [0, 1, 2, 3]
    assert store.read_paths == [PartitionStateZNode.path("t", 3)]


async def test_a_missing_state_is_reported_not_decided() -> None:
    store, zk, claim, context = await setup(1)
    result = await update_leader_and_isr(zk, claim, context, [TopicPartition("t", 7)], remove_dead)
    assert result.failed == {TopicPartition("t", 7): "its state znode does not exist"}
    assert store.read_paths == [PartitionStateZNode.path("t", 7)]
