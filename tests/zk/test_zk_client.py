"""KavkaZkClient against the real ZooKeeper and the in-memory double:
controller election and epoch fencing, broker registration, topic and
partition-state writes, notifications, configs, producer id blocks."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.listeners import EndPoint
from kavka.zk.brokers import BrokerIdZNode, PartitionStateZNode, TopicZNode
from kavka.zk.client import BrokerIdConflictError, ControllerMovedError, KavkaZkClient
from kavka.zk.config_nodes import ConfigEntityZNode
from kavka.zk.controller_nodes import ControllerZNode
from tests.common.loop_ticker import Ticker


def broker(i: int) -> BrokerIdZNode:
    return BrokerIdZNode(i, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + i, "PLAINTEXT"),), timestamp_ms=1)


async def started(backend, n: int, session_timeout_ms: int = 6000) -> list[KavkaZkClient]:
    clients = []
    for _ in range(n):
        store = backend.new_store(session_timeout_ms)
        await store.start()
        clients.append(KavkaZkClient(store))
    await clients[0].create_top_level_paths()
    return clients


async def test_one_controller_per_epoch_and_fencing(backend):
    a, b = await started(backend, 2)
    claims = await asyncio.gather(a.try_become_controller(1), b.try_become_controller(2))
    winners = [c for c in claims if c is not None]
    assert len(winners) == 1 and winners[0].epoch == 1
    old, new_client = (a, b) if claims[0] is not None else (b, a)
    old_claim = winners[0]
    assert await new_client.get_controller_id() == (1 if old is a else 2)
    assert await new_client.try_become_controller(9) is None

    gone = backend.recorder()
    assert await new_client.get_controller_id(watch=gone) is not None
    await old.store.close()  # the controller dies: /controller vanishes
    await gone.wait_for(lambda ev: len(ev) >= 1)
    claim = await new_client.try_become_controller(3)
    assert claim is not None and claim.epoch == 2
    assert await new_client.get_controller_epoch() == (2, claim.epoch_zk_version)

    # a write fenced with the deposed controller's epoch version fails
    topic = TopicZNode("t", {0: (1, 2)})
    await new_client.create_topic(topic, {})
    state = PartitionStateZNode("t", 0, 1, 0, (1, 2), 2)
    assert (await new_client.create_partition_states(claim, [state]))[("t", 0)].zk_version == 0
    with pytest.raises(ControllerMovedError):
        await new_client.update_partition_states(old_claim, [(state, 0)])
    await new_client.resign_controller(claim)
    assert await new_client.get_controller_id() is None


async def test_partition_state_writes_are_conditional(backend):
    (controller,) = await started(backend, 1)
    claim = await controller.try_become_controller(1)
    topic = TopicZNode("orders", {0: (1, 2), 1: (2, 1)})
    await controller.create_topic(topic, {"retention.ms": "1000"})
    assert await controller.get_topics() == ["orders"]
    got, version = await controller.get_topic("orders")
    assert got == topic and version == 0
    states = [PartitionStateZNode("orders", p, r[0], 0, r, claim.epoch) for p, r in topic.partitions.items()]
    created = await controller.create_partition_states(claim, states)
    assert all(w.zk_version == 0 for w in created.values())
    again = await controller.create_partition_states(claim, states[:1])
    assert again[("orders", 0)].conflict
    read = await controller.get_partition_states([("orders", 0), ("orders", 1), ("orders", 7)])
    assert set(read) == {("orders", 0), ("orders", 1)} and read[("orders", 0)] == (states[0], 0)

    # the leader shrinks the ISR (seed 001 #3) ...
    shrunk = PartitionStateZNode("orders", 0, 1, 0, (1,), claim.epoch)
    assert await controller.maybe_update_leader_and_isr(shrunk, 0) == 1
    # ... so the controller's write based on version 0 conflicts: re-read, retry (seed 000 3.3)
    elected = PartitionStateZNode("orders", 0, 2, 1, (2,), claim.epoch)
    result = await controller.update_partition_states(claim, [(elected, 0), (states[1], 0)])
    assert result[("orders", 0)].conflict and result[("orders", 1)].zk_version == 1
    result = await controller.update_partition_states(claim, [(elected, 1)])
    assert result[("orders", 0)].zk_version == 2
    # and now the old leader's ISR update fails: it is no longer the leader
    assert await controller.maybe_update_leader_and_isr(shrunk, 1) is None

    assert await controller.get_entity_config("topics", "orders") == {"retention.ms": "1000"}
    await controller.request_topic_deletion("orders")
    assert await controller.get_topic_deletions() == ["orders"]
    await controller.delete_topic_znodes(claim, "orders")
    assert await controller.get_topics() == [] and await controller.get_topic_deletions() == []
    assert await controller.store.exists(ConfigEntityZNode.topic_path("orders")) is None


async def test_broker_registration_waits_out_an_old_session(backend):
    old, new, observer = await started(backend, 3)
    czxid = await old.register_broker(broker(1))
    assert await old.register_broker(broker(1)) == czxid  # same session: already ours
    assert await observer.get_broker_ids() == [1]
    assert (await observer.get_brokers([1, 5])) == {1: broker(1)}
    with pytest.raises(BrokerIdConflictError, match="same broker.id"):
        await new.register_broker(broker(1), wait_s=0.3)

    async def old_session_ends() -> None:
        await asyncio.sleep(0.3)
        await old.store.close()

    closer = asyncio.create_task(old_session_ends())
    await new.register_broker(broker(1), wait_s=15)
    await closer
    _, stat = await observer.store.get(BrokerIdZNode.path(1))
    assert stat.ephemeral_owner == new.store.session_id


async def test_cluster_id_ids_notifications_configs_and_producer_ids(backend):
    a, b = await started(backend, 2)
    ids = await asyncio.gather(a.get_or_create_cluster_id(), b.get_or_create_cluster_id())
    assert ids[0] == ids[1] and len(ids[0]) == 22
    assert [await a.generate_broker_id(1000), await b.generate_broker_id(1000)] == [1001, 1002]

    await a.create_isr_change_notification([("t", 0)])
    await b.create_isr_change_notification([("t", 1), ("u", 0)])
    notes = await a.get_isr_change_notifications()
    assert [n.partitions for _, n in notes] == [(("t", 0),), (("t", 1), ("u", 0))]
    assert notes[0][0].startswith("/isr_change_notification/isr_change_")

    await a.set_entity_config("brokers", "<default>", {"log.retention.ms": "5"})
    await a.set_entity_config("brokers", "<default>", {"log.retention.ms": "6"})
    assert await b.get_entity_config("brokers", "<default>") == {"log.retention.ms": "6"}
    assert await b.get_entity_config("brokers", "7") == {}
    assert len(await b.store.get_children("/config/changes")) == 2

    blocks = await asyncio.gather(*(c.claim_producer_id_block(i) for i, c in enumerate([a, b, a, b])))
    ranges = sorted((blk.block_start, blk.block_end) for blk in blocks)
    assert ranges == [(0, 999), (1000, 1999), (2000, 2999), (3000, 3999)]


async def test_controller_watch_sees_expiry_of_the_controller(backend):
    a, b = await started(backend, 2, session_timeout_ms=4000)
    claim = await a.try_become_controller(1)
    assert claim is not None
    moved = backend.recorder()
    assert await b.get_controller_id(watch=moved) == 1
    await backend.expire(a.store)
    await moved.wait_for(lambda ev: len(ev) >= 1)
    assert await b.get_controller_id() is None
    claim_b = await b.try_become_controller(2)
    assert claim_b.epoch == claim.epoch + 1
    data, _ = await b.store.get(ControllerZNode.path())
    assert ControllerZNode.decode(data).broker_id == 2


async def test_batched_writes_settle_each_partition_despite_conflicts(backend):
    """A multi is all or nothing: a conflicting partition in a batch must not
    cost the others their write, nor be reported as written."""

    store = backend.new_store()
    await store.start()
    client = KavkaZkClient(store, batch_size=7)
    await client.create_top_level_paths()
    claim = await client.try_become_controller(1)
    n = 30
    await client.create_topic(TopicZNode("t", {p: (1, 2) for p in range(n)}), {})
    # partition 3's parent exists already, partition 4's state too
    await store.create(PartitionStateZNode.partitions_path("t"), b"")
    await store.create(PartitionStateZNode.partition_path("t", 3), b"")
    await store.create(PartitionStateZNode.partition_path("t", 4), b"")
    await store.create(PartitionStateZNode.path("t", 4), PartitionStateZNode("t", 4, 2, 5, (2,), 1).encode())
    states = [PartitionStateZNode("t", p, 1, 0, (1, 2), claim.epoch) for p in range(n)]
    created = await client.create_partition_states(claim, states)
    assert created[("t", 4)].conflict
    assert all(created[("t", p)].zk_version == 0 for p in range(n) if p != 4)

    conflicting = {2, 9, 17, 29}
    for p in conflicting:  # someone else (a leader's ISR change) wrote first
        await store.set(PartitionStateZNode.path("t", p), states[p].encode())
    updates = [(PartitionStateZNode("t", p, 2, 1, (2,), claim.epoch), 0) for p in range(n)]
    updates.append((PartitionStateZNode("t", 99, 2, 1, (2,), claim.epoch), 0))  # no such znode
    result = await client.update_partition_states(claim, updates)
    assert {p for (_, p), w in result.items() if w.conflict} == conflicting
    assert result[("t", 99)].missing
    written = {p for (_, p), w in result.items() if w.zk_version is not None}
    assert written == set(range(n)) - conflicting
    read = await client.get_partition_states([("t", p) for p in range(n)])
    for p in range(n):
        z, version = read[("t", p)]
        assert (z.leader == 2) == (p not in conflicting)
        assert version == 1


async def test_user_and_client_entity_configs(backend):
    """Quotas and SCRAM credentials share /config/users/<user>: concurrent
    read-modify-writes of different keys both survive (conditional writes),
    every write is announced, and the entities list with their children."""
    a, b = await started(backend, 2)

    def put(key: str, value: str):
        return lambda current: {**current, key: value}

    await asyncio.gather(*(c.update_entity_config("users", "alice", put(f"k{i}", str(i)))
                           for i, c in enumerate([a, b, a, b, a, b])))
    assert await a.get_entity_config("users", "alice") == {f"k{i}": str(i) for i in range(6)}
    assert len(await a.store.get_children("/config/changes")) == 6

    await a.update_entity_config("users", "<default>/clients/app", put("producer_byte_rate", "10"))
    await a.update_entity_config("users", "CN%3Dbob/clients/<default>", put("consumer_byte_rate", "20"))
    await a.update_entity_config("clients", "<default>", put("request_percentage", "50.0"))
    # /config/users/CN%3Dbob exists only as a parent: it holds no configs
    assert await b.get_entity_config("users", "CN%3Dbob") == {}
    assert sorted(await b.get_entity_names("users")) == [
        "<default>", "<default>/clients/app", "CN%3Dbob", "CN%3Dbob/clients/<default>", "alice"]
    assert await b.get_all_entity_configs("users") == {
        "<default>": {}, "<default>/clients/app": {"producer_byte_rate": "10"}, "CN%3Dbob": {},
        "CN%3Dbob/clients/<default>": {"consumer_byte_rate": "20"},
        "alice": {f"k{i}": str(i) for i in range(6)}}
    assert await b.get_all_entity_configs("clients") == {"<default>": {"request_percentage": "50.0"}}
    assert await b.get_entity_names("topics") == []

    def refuse(current):
        raise ValueError("no")

    with pytest.raises(ValueError):
        await a.update_entity_config("users", "alice", refuse)
    assert len(await a.store.get_children("/config/changes")) == 9


async def test_partition_states_read_and_written_in_slices_of_the_loop(backend):
    """With a ``LoopSlice`` the decoding of the states read and the encoding
    of the states written hand the event loop turns (other tasks run in
    between); what is read and written is the same."""
    from kavka.common.loop_slice import LoopSlice

    (client,) = await started(backend, 1)
    claim = await client.try_become_controller(1)
    n = 40
    await client.create_topic(TopicZNode("t", {p: (1, 2) for p in range(n)}), {})
    states = [PartitionStateZNode("t", p, 1, 0, (1, 2), claim.epoch) for p in range(n)]
    await client.create_partition_states(claim, states)
    ticker = Ticker()
    every = LoopSlice(slice_s=1e-9)  # every pause is due
    written = await client.update_partition_states(claim, [(PartitionStateZNode("t", p, 2, 1, (2,), claim.epoch), 0) for p in range(n)], every)
    assert every.turns >= n and all(w.zk_version == 1 for w in written.values())
    turns = every.turns
    read = await client.get_partition_states([("t", p) for p in range(n)], every)
    assert every.turns - turns >= n
    await ticker.stop()
    assert ticker.ticks >= every.turns
    assert read == await client.get_partition_states([("t", p) for p in range(n)])
    assert all(z.leader == 2 and version == 1 for z, version in read.values())
