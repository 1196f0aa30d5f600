"""The controller against a real ZooKeeper (kazoo, watches delivered from
kazoo's threads to the loop): topic creation and broker failure, and two
controller candidates with separate sessions — expiring the active one's
session makes the other take over with a higher epoch and re-send the state."""

from __future__ import annotations

from kavka.zk.brokers import PartitionStateZNode
from kavka.zk.controller_nodes import ControllerEpochZNode


async def _leader_is(c, topic: str, partition: int, leader: int) -> bool:
    s = await c.state(topic, partition)
    return s is not None and s.leader == leader


async def test_topic_creation_and_broker_failure_on_real_zookeeper(real_cluster) -> None:
    c = real_cluster
    ctl = await c.boot((1, 2, 3))
    await c.create_topic("t", {p: (2, 3, 1) if p % 2 else (3, 2, 1) for p in range(40)})
    await c.until(lambda: ctl.active is not None and len(ctl.active.context.leadership) == 40, "40 partitions online")
    await c.settle()
    assert await c.state("t", 1) == PartitionStateZNode("t", 1, 2, 0, (2, 3, 1), 1)
    c.transport.clear()
    await c.crash_broker(2)
    await c.until(lambda: _leader_is(c, "t", 1, 3), "odd partitions re-elected")
    await c.settle()
    for p in range(40):  # elected (odd: a new epoch) or shrunk (even: the same epoch)
        assert await c.state("t", p) == PartitionStateZNode("t", p, 3, p % 2, (3, 1), 1)
    # One request per broker for the 20 elections, then one for the 20 ISR
    # shrinks to their leader (3): the follower (1) keeps no ISR.
    assert sorted(c.transport.brokers_sent("LeaderAndIsr")) == [1, 3, 3]
    for b in (1, 3):
        elected = c.transport.requests("LeaderAndIsr", b)[0]
        assert {p for _, p in c.partitions_of(elected)} == set(range(1, 40, 2))
    shrunk = c.transport.requests("LeaderAndIsr", 3)[1]
    assert {p for _, p in c.partitions_of(shrunk)} == set(range(0, 40, 2))


async def test_two_candidates_expiring_the_active_one_fails_over(real_cluster) -> None:
    c = real_cluster
    a = await c.boot((1, 2, 3))
    b = await c.start_controller(2)
    await c.create_topic("t", {0: (1, 3), 1: (3, 2)})
    await c.until(lambda: c.state("t", 1), "partition states")
    await c.settle()
    assert not b.is_active
    c.transport.clear()
    await c.crash_broker(1)  # expire broker 1's session on the server
    await c.until(lambda: b.is_active, "broker 2 takes over")
    await c.until(lambda: not a.is_active, "broker 1 noticed it lost the epoch")
    await c.until(lambda: _leader_is(c, "t", 0, 3), "t-0 re-elected")
    await c.settle()
    assert b.epoch == 2
    data, _ = await c.admin.store.get("/controller_epoch")
    assert ControllerEpochZNode.decode(data).epoch == 2
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 3, 1, (3,), 2)
    for broker in (2, 3):
        reqs = c.transport.requests("LeaderAndIsr", broker)
        assert reqs and all((r.controller_id, r.controller_epoch) == (2, 2) for r in reqs)
    got3 = {k for r in c.transport.requests("LeaderAndIsr", 3) for k in c.partitions_of(r)}
    assert got3 == {("t", 0), ("t", 1)}
    assert not any(r.controller_epoch == 1 for _, r in c.transport.sent)
