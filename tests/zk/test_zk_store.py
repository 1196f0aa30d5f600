"""The ZkStore contract, run against a real ZooKeeper (KazooZkStore) and the
in-memory double (InMemoryZkStore): versions and conditional writes, multi,
ephemeral and sequential znodes, watches delivered on the loop thread,
session expiry, chroot."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kavka.tools.zookeeper import ZooKeeperServer
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper
from kavka.zk.store import KazooZkStore
from kavka.zk.store_types import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    MultiOpError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionEvent,
    SessionState,
    SetDataOp,
    WatchEvent,
    WatchEventType,
    ZkNotConnectedError,
)


async def test_create_get_set_delete_and_versions(backend) -> None:
    s = backend.new_store()
    await s.start()
    assert await s.create("/a", b"one") == "/a"
    data, stat = await s.get("/a")
    assert (data, stat.version, stat.ephemeral_owner, stat.data_length) == (b"one", 0, 0, 3)
    stat = await s.set("/a", b"two")
    assert stat.version == 1
    assert (await s.get("/a"))[0] == b"two"
    await s.create("/a/b", b"")
    await s.create("/a/c", b"")
    assert await s.get_children("/a") == ["b", "c"]
    assert (await s.exists("/a")).num_children == 2
    with pytest.raises(NotEmptyError):
        await s.delete("/a")
    await s.delete("/a", recursive=True)
    assert await s.exists("/a") is None
    with pytest.raises(NoNodeError) as e:
        await s.get("/a")
    assert e.value.path == "/a" and "/a does not exist" in str(e.value)
    await s.create("/x", b"")
    with pytest.raises(NodeExistsError):
        await s.create("/x", b"")
    with pytest.raises(NoNodeError):
        await s.create("/missing/child", b"")
    assert await s.create("/p/q/r", b"v", make_parents=True) == "/p/q/r"
    await s.ensure_path("/e/f")
    assert await s.exists("/e/f") is not None
    with pytest.raises(ValueError, match="invalid znode path"):
        await s.get("relative")


async def test_conditional_set_conflict(backend) -> None:
    a, b = backend.new_store(), backend.new_store()
    await a.start()
    await b.start()
    await a.create("/state", b"v0")
    _, seen_by_a = await a.get("/state")
    _, seen_by_b = await b.get("/state")
    assert await a.maybe_set("/state", b"from-a", seen_by_a.version) is not None
    # b's view is stale: its conditional write must lose (seed 001 #3)
    assert await b.maybe_set("/state", b"from-b", seen_by_b.version) is None
    with pytest.raises(BadVersionError) as e:
        await b.set("/state", b"from-b", seen_by_b.version)
    assert e.value.path == "/state" and e.value.expected == 0
    assert (await b.get("/state"))[0] == b"from-a"
    with pytest.raises(BadVersionError):
        await b.delete("/state", version=0)
    await b.delete("/state", version=1)


async def test_multi_is_atomic(backend) -> None:
    s = backend.new_store()
    await s.start()
    await s.create("/epoch", b"1")
    await s.create("/old", b"")
    results = await s.multi(
        [CheckOp("/epoch", 0), CreateOp("/t", b"x"), CreateOp("/t/seq-", b"", sequential=True), SetDataOp("/epoch", b"2", 0), DeleteOp("/old")]
    )
    assert results[0] is None and results[1] == "/t" and results[2] == "/t/seq-0000000000"
    assert results[3].version == 1 and results[4] is None
    assert await s.exists("/old") is None
    # a stale check fails the whole batch: nothing applied
    with pytest.raises(MultiOpError) as e:
        await s.multi([CreateOp("/u", b""), CheckOp("/epoch", 0), SetDataOp("/t", b"y")])
    assert e.value.index == 1 and isinstance(e.value.cause, BadVersionError)
    assert await s.exists("/u") is None
    assert (await s.get("/t"))[0] == b"x"
    with pytest.raises(MultiOpError) as e:
        await s.multi([CreateOp("/v", b""), CreateOp("/v", b"")])
    assert e.value.index == 1 and isinstance(e.value.cause, NodeExistsError)
    assert await s.exists("/v") is None
    assert await s.multi([]) == []


async def test_sequential_and_ephemeral_nodes(backend) -> None:
    a, b = backend.new_store(), backend.new_store()
    await a.start()
    await b.start()
    await a.ensure_path("/isr_change_notification")
    names = [await a.create("/isr_change_notification/isr_change_", b"{}", sequential=True) for _ in range(3)]
    assert names == [f"/isr_change_notification/isr_change_{i:010d}" for i in range(3)]
    await a.ensure_path("/brokers/ids")
    await a.create("/brokers/ids/1", b"{}", ephemeral=True)
    stat = await b.exists("/brokers/ids/1")
    assert stat is not None and stat.ephemeral_owner == a.session_id
    with pytest.raises(NoChildrenForEphemeralsError):
        await a.create("/brokers/ids/1/x", b"")
    await a.close()
    assert await b.exists("/brokers/ids/1") is None
    assert await b.get_children("/isr_change_notification") == [n.rsplit("/", 1)[1] for n in names]
    with pytest.raises(ZkNotConnectedError):
        await a.get("/brokers")


async def test_watches_fire_once_on_the_loop_thread(backend) -> None:
    loop_thread = threading.get_ident()
    a, b = backend.new_store(), backend.new_store()
    await a.start()
    await b.start()
    await a.create("/brokers", b"")
    data_watch, child_watch, exists_watch = backend.recorder(), backend.recorder(), backend.recorder()
    await a.create("/node", b"0")
    await a.get("/node", watch=data_watch)
    await a.get_children("/brokers", watch=child_watch)
    assert await a.exists("/later", watch=exists_watch) is None

    await b.set("/node", b"1")
    await b.set("/node", b"2")  # one-shot: no second event
    await b.create("/brokers/7", b"", ephemeral=True)
    await b.create("/later", b"")
    await data_watch.wait_for(lambda ev: len(ev) >= 1)
    await child_watch.wait_for(lambda ev: len(ev) >= 1)
    await exists_watch.wait_for(lambda ev: len(ev) >= 1)
    await asyncio.sleep(0.2)
    assert data_watch.events == [WatchEvent(WatchEventType.CHANGED, "/node")]
    assert child_watch.events == [WatchEvent(WatchEventType.CHILD, "/brokers")]
    assert exists_watch.events == [WatchEvent(WatchEventType.CREATED, "/later")]
    for r in (data_watch, child_watch, exists_watch):
        assert r.threads == {loop_thread}

    deleted = backend.recorder()
    await a.get("/node", watch=deleted)
    await b.delete("/node")
    await deleted.wait_for(lambda ev: len(ev) >= 1)
    assert deleted.events == [WatchEvent(WatchEventType.DELETED, "/node")]


async def test_session_expiry_is_detected_and_a_new_session_follows(backend) -> None:
    loop_thread = threading.get_ident()
    a, observer = backend.new_store(session_timeout_ms=4000), backend.new_store()
    sessions = backend.recorder()
    a.add_session_listener(sessions)
    await a.start()
    await observer.start()
    await a.ensure_path("/brokers/ids")
    await a.create("/brokers/ids/3", b"{}", ephemeral=True)
    lost = backend.recorder()
    await a.get("/brokers/ids/3", watch=lost)
    vanished = backend.recorder()
    await observer.exists("/brokers/ids/3", watch=vanished)
    first = a.session_id

    await backend.expire(a)
    await vanished.wait_for(lambda ev: len(ev) >= 1)
    assert vanished.events == [WatchEvent(WatchEventType.DELETED, "/brokers/ids/3")]
    await sessions.wait_for(lambda ev: any(e.state is SessionState.NEW_SESSION for e in ev))
    states = [e.state for e in sessions.events]
    assert states[0] is SessionState.CONNECTED
    assert SessionState.EXPIRED in states and states.index(SessionState.EXPIRED) < states.index(SessionState.NEW_SESSION)
    assert sessions.threads == {loop_thread}
    new = [e for e in sessions.events if e.state is SessionState.NEW_SESSION][0]
    assert new.session_id == a.session_id != first
    # the broker re-registers (seed 002 §9)
    await a.create("/brokers/ids/3", b"{}", ephemeral=True)
    assert (await observer.exists("/brokers/ids/3")).ephemeral_owner == a.session_id
    if lost.events:  # a watch dropped with the old session reports LOST, never a fake change
        assert all(e.type is WatchEventType.LOST for e in lost.events)


async def test_chroot_isolates_paths(backend) -> None:
    s = backend.new_store()
    await s.start()
    await s.create("/only-here", b"")
    assert "only-here" in await s.get_children("/")
    watch = backend.recorder()
    await s.get_children("/", watch=watch)
    await s.create("/another", b"")
    await watch.wait_for(lambda ev: len(ev) >= 1)
    assert watch.events == [WatchEvent(WatchEventType.CHILD, "/")]


@pytest.mark.async_timeout(90)
@pytest.mark.slow
async def test_connection_loss_then_same_session_reconnects(zk_chroot: str, zk_server: ZooKeeperServer, recorder) -> None:
    """Pause the real server until the client notices (SUSPENDED), resume
    before the session times out: RECONNECTED with the same session, the
    ephemeral znode kept, and pending watches report LOST."""

    store = KazooZkStore(zk_chroot, session_timeout_ms=9000)
    sessions = recorder()
    store.add_session_listener(sessions)
    await store.start()
    try:
        await store.create("/eph", b"", ephemeral=True)
        watch = recorder()
        await store.get("/eph", watch=watch)
        session = store.session_id
        zk_server.pause()
        try:
            await sessions.wait_for(lambda ev: any(e.state is SessionState.SUSPENDED for e in ev))
        finally:
            zk_server.resume()
        await sessions.wait_for(lambda ev: any(e.state is SessionState.RECONNECTED for e in ev))
        await watch.wait_for(lambda ev: len(ev) >= 1)
        assert watch.events == [WatchEvent(WatchEventType.LOST, None)]
        assert store.session_id == session
        assert (await store.exists("/eph")).ephemeral_owner == session
        assert [e.state for e in sessions.events] == [SessionState.CONNECTED, SessionState.SUSPENDED, SessionState.RECONNECTED]
    finally:
        await store.close()


async def test_memory_disconnect_and_reconnect(recorder) -> None:
    server = InMemoryZooKeeper()
    s = InMemoryZkStore(server)
    sessions = recorder()
    s.add_session_listener(sessions)
    await s.start()
    await s.create("/eph", b"", ephemeral=True)
    watch = recorder()
    await s.get("/eph", watch=watch)
    s.disconnect()
    with pytest.raises(Exception, match="connection lost"):
        await s.get("/eph")
    s.reconnect()
    await sessions.wait_for(lambda ev: len(ev) >= 3)
    await watch.wait_for(lambda ev: len(ev) >= 1)
    assert [e.state for e in sessions.events] == [SessionState.CONNECTED, SessionState.SUSPENDED, SessionState.RECONNECTED]
    assert watch.events == [WatchEvent(WatchEventType.LOST, None)]
    assert await s.exists("/eph") is not None
    await s.close()
    await sessions.wait_for(lambda ev: len(ev) >= 4)
    assert sessions.events[-1] == SessionEvent(SessionState.CLOSED, None)


async def test_start_fails_clearly_without_a_server() -> None:
    from kavka.tools.ports import free_port

    store = KazooZkStore(f"127.0.0.1:{free_port()}", session_timeout_ms=1000, connection_timeout_ms=1000)
    with pytest.raises(ZkNotConnectedError, match="could not connect to ZooKeeper"):
        await store.start()


async def test_requests_in_flight_stay_within_zookeeper_max_in_flight_requests(zk_chroot: str, monkeypatch) -> None:
    """Kafka's ZooKeeperClient semaphore: more requests than the limit wait
    their turn, none is lost; a multi counts as one."""
    pending = peak = 0
    real_await = KazooZkStore._await

    async def counting(self, async_result, path, version=None):
        nonlocal pending, peak
        pending += 1
        peak = max(peak, pending)
        try:
            return await real_await(self, async_result, path, version)
        finally:
            pending -= 1

    monkeypatch.setattr(KazooZkStore, "_await", counting)
    store = KazooZkStore(zk_chroot, session_timeout_ms=9000, max_in_flight_requests=3)
    await store.start()
    try:
        await asyncio.gather(*(store.create(f"/n{i}", b"%d" % i) for i in range(40)))
        got = await asyncio.gather(*(store.get(f"/n{i}") for i in range(40)))
        assert [data for data, _ in got] == [b"%d" % i for i in range(40)]
        assert peak == 3
    finally:
        await store.close()
    with pytest.raises(ValueError, match="zookeeper.max.in.flight.requests"):
        KazooZkStore(zk_chroot, max_in_flight_requests=0)
