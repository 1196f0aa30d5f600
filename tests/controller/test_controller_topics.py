"""The controller on the in-memory ZooKeeper: failover sequence, topic
creation, added partitions, ISR change notifications (seed 000 §Controller
Failover, §创建 Topic)."""

from __future__ import annotations

import uuid

from kavka.zk.brokers import PartitionStateZNode, TopicZNode
from kavka.zk.notifications import ISR_CHANGE_NOTIFICATION_PATH


async def test_failover_initialises_from_zookeeper_and_sends_full_state(memory_cluster) -> None:
    c = memory_cluster
    await c.start_brokers((1, 2, 3))
    # A topic created before any controller: no partition states yet.
    await c.create_topic("t", {0: (1, 2), 1: (2, 3), 2: (3, 1)})
    ctl = await c.start_active_controller(1)
    await c.settle()
    assert ctl.epoch == 1
    for p, (leader, isr) in {0: (1, (1, 2)), 1: (2, (2, 3)), 2: (3, (3, 1))}.items():
        state = await c.state("t", p)
        assert state == PartitionStateZNode("t", p, leader, 0, isr, 1)
    # One LeaderAndIsr per broker, carrying all its partitions with
    # controller id, epoch and its broker epoch (czxid of its registration).
    for b, parts in {1: {0, 2}, 2: {0, 1}, 3: {1, 2}}.items():
        (req,) = c.transport.requests("LeaderAndIsr", b)
        assert req.controller_id == 1 and req.controller_epoch == 1
        stat = await c.admin.store.exists(f"/brokers/ids/{b}")
        assert req.broker_epoch == stat.czxid
        got = c.partitions_of(req)
        assert {p for _, p in got} == parts
        assert all(ps.leader_epoch == 0 and ps.is_new for ps in got.values())
    # Every broker learns every partition and broker.
    for b in (1, 2, 3):
        seen = {k for r in c.transport.requests("UpdateMetadata", b) for k in c.partitions_of(r)}
        assert seen == {("t", 0), ("t", 1), ("t", 2)}
        assert sorted(x.id for x in c.transport.requests("UpdateMetadata", b)[-1].live_brokers) == [1, 2, 3]


async def test_failover_resends_existing_state_without_rewriting_it(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2))
    await c.create_topic("t", {0: (2, 1)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    before = await c.state("t", 0)
    await ctl.stop()
    c.controllers.pop(1)
    c.transport.clear()
    ctl2 = await c.start_active_controller(2)
    await c.settle()
    assert ctl2.epoch == 2
    assert await c.state("t", 0) == before  # nothing to elect: leader 2 is alive
    for b in (1, 2):
        (req,) = c.transport.requests("LeaderAndIsr", b)
        ps = c.partitions_of(req)[("t", 0)]
        assert (req.controller_epoch, ps.leader, ps.leader_epoch, list(ps.isr)) == (2, 2, 0, [2, 1])
        assert ps.controller_epoch == 1  # the epoch that wrote the state


async def test_topic_creation_batches_leader_and_isr_per_broker(memory_cluster) -> None:
    c = memory_cluster
    ctl = await c.boot((1, 2, 3))
    await c.settle()
    c.transport.clear()
    await c.kill_broker(3)
    await c.settle()
    c.transport.clear()
    # 6 partitions, RF 3, broker 3 dead: leader = first live replica of AR, ISR = live AR.
    assignment = {p: tuple(((p + j) % 3) + 1 for j in range(3)) for p in range(6)}
    await c.create_topic("new", assignment)
    await c.until(lambda: ctl.active is not None and len(ctl.active.context.leadership) == 6, "all partitions online")
    await c.settle()
    for p, replicas in assignment.items():
        live = tuple(r for r in replicas if r != 3)
        assert await c.state("new", p) == PartitionStateZNode("new", p, live[0], 0, live, 1)
    assert sorted(c.transport.brokers_sent("LeaderAndIsr")) == [1, 2]  # one request per live broker
    for b in (1, 2):
        (req,) = c.transport.requests("LeaderAndIsr", b)
        assert len(c.partitions_of(req)) == 6  # every partition has a replica on 1 and on 2
        assert {ll.broker_id for ll in req.live_leaders} == {1, 2}
    assert sorted(c.transport.brokers_sent("UpdateMetadata")) == [1, 2]
    assert sorted(c.transport.brokers_sent("StopReplica")) == []


async def test_adding_partitions_elects_leaders_for_the_new_ones(memory_cluster) -> None:
    c = memory_cluster
    await c.boot((1, 2))
    await c.create_topic("t", {0: (1,)})
    await c.until(lambda: c.state("t", 0), "partition 0")
    await c.settle()
    c.transport.clear()
    found = await c.admin.get_topic("t")
    grown = TopicZNode("t", {0: (1,), 1: (2,), 2: (1,)})
    assert await c.admin.set_topic_assignment(grown, found[1]) is not None
    await c.until(lambda: c.state("t", 2), "partition 2")
    await c.settle()
    assert await c.state("t", 1) == PartitionStateZNode("t", 1, 2, 0, (2,), 1)
    assert set(c.partitions_of(c.transport.requests("LeaderAndIsr", 1)[0])) == {("t", 2)}
    assert set(c.partitions_of(c.transport.requests("LeaderAndIsr", 2)[0])) == {("t", 1)}
    assert await c.state("t", 0) == PartitionStateZNode("t", 0, 1, 0, (1,), 1)  # untouched


async def test_isr_change_notification_updates_metadata_and_is_deleted(memory_cluster) -> None:
    c = memory_cluster
    await c.boot((1, 2))
    await c.create_topic("t", {0: (1, 2)})
    await c.until(lambda: c.state("t", 0), "partition state")
    await c.settle()
    c.transport.clear()
    # The leader shrinks the ISR (a conditional write), then notifies.
    state, version = (await c.admin.get_partition_states([("t", 0)]))[("t", 0)]
    shrunk = PartitionStateZNode("t", 0, 1, 0, (1,), state.controller_epoch)
    assert await c.clients[1].maybe_update_leader_and_isr(shrunk, version) is not None
    await c.clients[1].create_isr_change_notification([("t", 0)])
    await c.until(lambda: len(c.transport.requests("UpdateMetadata")) == 2, "UpdateMetadata to both brokers")
    await c.settle()
    for b in (1, 2):
        ps = c.partitions_of(c.transport.requests("UpdateMetadata", b)[0])[("t", 0)]
        assert list(ps.isr) == [1] and ps.zk_version == version + 1
    assert await c.admin.store.get_children(ISR_CHANGE_NOTIFICATION_PATH) == []
    assert c.transport.requests("LeaderAndIsr") == []


async def test_partition_without_live_replicas_comes_online_when_a_replica_starts(memory_cluster) -> None:
    c = memory_cluster
    await c.boot((1,))
    await c.create_topic("t", {0: (1,), 1: (2, 3)})  # brokers 2 and 3 are not up
    await c.until(lambda: c.state("t", 0), "partition 0")
    await c.settle()
    assert await c.state("t", 1) is None  # NEW: nobody to lead it
    await c.start_broker(3)
    await c.until(lambda: c.state("t", 1), "partition 1 created once broker 3 registers")
    await c.settle()
    assert await c.state("t", 1) == PartitionStateZNode("t", 1, 3, 0, (3,), 1)
    (req,) = [r for r in c.transport.requests("LeaderAndIsr", 3)]
    assert c.partitions_of(req)[("t", 1)].is_new


async def test_malformed_znodes_are_skipped_not_fatal(memory_cluster) -> None:
    c = memory_cluster
    await c.start_brokers((1, 2))
    await c.create_topic("good", {0: (1,)})
    await c.admin.store.create("/brokers/topics/bad", b"{not json", make_parents=True)
    await c.admin.store.create("/brokers/topics/good2/partitions/0/state", b'{"version":1,"leader":"x"}', make_parents=True)
    await c.admin.store.set("/brokers/topics/good2", TopicZNode("good2", {0: (2,), 1: (2,)}).encode())
    ctl = await c.start_active_controller(1)
    await c.until(lambda: c.state("good2", 1), "good2-1 created")
    await c.settle()
    assert ctl.failovers == 1 and ctl.is_active
    assert await c.state("good", 0) == PartitionStateZNode("good", 0, 1, 0, (1,), 1)
    assert "bad" not in ctl.active.context.assignments
    # A malformed ISR notification is deleted; the valid one is acted on.
    await c.admin.store.create("/isr_change_notification/isr_change_0000000099", b"[]")
    c.transport.clear()
    await c.clients[1].create_isr_change_notification([("good", 0)])
    await c.until(lambda: c.transport.requests("UpdateMetadata"), "UpdateMetadata for good-0")
    await c.settle()
    assert await c.admin.store.get_children(ISR_CHANGE_NOTIFICATION_PATH) == []
    # Fixing the bad topic's znode is noticed (its data watch stayed armed).
    await c.admin.store.set("/brokers/topics/bad", TopicZNode("bad", {0: (2,)}).encode())
    await c.until(lambda: c.state("bad", 0), "bad-0 created once valid")


async def test_topics_without_an_id_get_one_and_requests_carry_it(memory_cluster) -> None:
    c = memory_cluster
    await c.start_broker(1)
    await c.create_topic("old", {0: (1,)})  # no topic id, as older tools wrote it
    known = uuid.uuid4()
    await c.admin.create_topic(TopicZNode("new", {0: (1,)}, known), {})
    await c.start_active_controller(1)
    await c.until(lambda: c.state("new", 0), "partitions")
    await c.settle()
    old = (await c.admin.get_topic("old"))[0]
    assert old.topic_id is not None and old.partitions == {0: (1,)}
    assert (await c.admin.get_topic("new"))[0].topic_id == known  # kept
    ids = {ts.topic_name: ts.topic_id for r in c.transport.requests("LeaderAndIsr", 1) for ts in r.topic_states}
    assert ids == {"old": old.topic_id, "new": known}
