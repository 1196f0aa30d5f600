"""``CachedZnode`` and the epoch views over the in-memory ZooKeeper: a read
is served from the cache until the znode's watch fires; a refresh re-reads;
refreshes are shared and paced; a missing znode is cached too and its
creation noticed; a session event drops the cache; at most one watch is
armed however often it is read."""

from __future__ import annotations

import asyncio

import pytest

from kavka.zk.cached_node import CachedZnode
from kavka.zk.epoch_views import ZkBrokerEpochs, ZkControllerView
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper
from kavka.zk.store_types import ZkConnectionLossError


async def _store(server: InMemoryZooKeeper | None = None) -> InMemoryZkStore:
    store = InMemoryZkStore(server or InMemoryZooKeeper())
    await store.start()
    return store


async def _settle() -> None:
    for _ in range(3):  # watch events are delivered with call_soon
        await asyncio.sleep(0)


async def test_reads_come_from_the_cache_until_the_watch_fires() -> None:
    server = InMemoryZooKeeper()
    store, writer = await _store(server), await _store(server)
    await writer.create("/n", b"1")
    node = CachedZnode(store, "/n")
    value = await node.read()
    assert value is not None and value[0] == b"1"
    for _ in range(5):
        await node.read()
    assert node.reads == 1 and node.valid
    await writer.set("/n", b"2")
    await _settle()
    assert not node.valid
    value = await node.read()
    assert value is not None and value[0] == b"2" and node.reads == 2
    # One watch armed at a time, whatever the number of reads.
    assert len(server.data_watches["/n"]) == 1


async def test_a_missing_znode_is_cached_and_its_creation_noticed() -> None:
    server = InMemoryZooKeeper()
    store, writer = await _store(server), await _store(server)
    node = CachedZnode(store, "/n")
    assert await node.read() is None
    assert await node.read() is None and node.reads == 1
    await writer.create("/n", b"x")
    await _settle()
    value = await node.read()
    assert value is not None and value[0] == b"x"
    await writer.delete("/n")
    await _settle()
    assert await node.read() is None


class SlowSyncStore(InMemoryZkStore):
    """A sync that takes a round trip, as a real ensemble's does."""

    async def sync(self, path: str) -> None:
        await asyncio.sleep(0.01)
        await super().sync(path)


async def test_refresh_rereads_and_concurrent_refreshes_share_one_read() -> None:
    store = SlowSyncStore(InMemoryZooKeeper())
    await store.start()
    await store.create("/n", b"1")
    node = CachedZnode(store, "/n", min_refresh_interval_s=0.0)
    await node.read()
    results = await asyncio.gather(*(node.refresh() for _ in range(10)))
    assert {r[0] for r in results if r is not None} == {b"1"}
    assert node.reads == 2  # the first read and ONE shared refresh


async def test_refreshes_are_paced() -> None:
    now = [100.0]
    store = await _store()
    await store.create("/n", b"1")
    node = CachedZnode(store, "/n", min_refresh_interval_s=0.05, clock=lambda: now[0])
    await node.refresh()
    started = asyncio.get_running_loop().time()
    await node.refresh()  # within the interval: waits it out first
    assert asyncio.get_running_loop().time() - started >= 0.04
    assert node.reads == 2


async def test_a_session_event_drops_the_cache() -> None:
    server = InMemoryZooKeeper()
    store, writer = await _store(server), await _store(server)
    await writer.create("/n", b"1")
    node = CachedZnode(store, "/n")
    await node.read()
    store.disconnect()
    await _settle()
    assert not node.valid
    store.reconnect()
    await writer.set("/n", b"2")
    value = await node.read()
    assert value is not None and value[0] == b"2"
    node.close()


async def test_controller_view_and_broker_epochs() -> None:
    server = InMemoryZooKeeper()
    store, writer = await _store(server), await _store(server)
    view = ZkControllerView(store)
    assert await view.current() == (None, None)
    await writer.create("/controller_epoch", b"7")
    await writer.create("/controller", b'{"version":1,"brokerid":2,"timestamp":"0"}')
    assert await view.current(fresh=True) == (2, 7)
    await writer.set("/controller_epoch", b"not a number")
    await _settle()
    assert await view.current() == (2, None)  # cannot be verified against
    epochs = ZkBrokerEpochs(store)
    assert await epochs.epoch(1) is None
    await writer.create("/brokers/ids/1", b"{}", ephemeral=True, make_parents=True)
    stat = await writer.exists("/brokers/ids/1")
    assert stat is not None
    await _settle()
    assert await epochs.epoch(1) == stat.czxid
    view.close()
    epochs.close()


async def test_while_zookeeper_is_unreachable_the_last_value_stands_unless_it_changed() -> None:
    server = InMemoryZooKeeper()
    store, writer = await _store(server), await _store(server)
    await writer.create("/n", b"1")
    node = CachedZnode(store, "/n")
    await node.read()
    store.disconnect()
    await _settle()
    value = await node.read()  # the connection went, the znode did not change: still "1"
    assert value is not None and value[0] == b"1"
    with pytest.raises(ZkConnectionLossError):
        await node.refresh()  # a fresh confirmation needs ZooKeeper
    store.reconnect()
    await writer.set("/n", b"2")
    value = await node.read()
    assert value is not None and value[0] == b"2"
    # A change seen, then the connection lost: nothing to answer with.
    await writer.set("/n", b"3")
    await _settle()
    store.disconnect()
    await _settle()
    with pytest.raises(ZkConnectionLossError):
        await node.read()
