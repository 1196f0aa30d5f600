"""ControllerElector and BrokerRegistrar: one controller per epoch, failover
when the controller's session ends, re-registration after expiry — on the
in-memory double and on a real ZooKeeper."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kavka.common.listeners import EndPoint
from kavka.controller.elector import ControllerElector
from kavka.tools.zookeeper import ZooKeeperServer, expire_session
from kavka.zk.brokers import BrokerIdZNode
from kavka.zk.client import ControllerClaim, KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper
from kavka.zk.registration import BrokerRegistrar
from kavka.zk.store import KazooZkStore

WAIT = 20.0


class Cluster:
    """Brokers (stores + electors) on one backend."""

    def __init__(self, kind: str, zk: ZooKeeperServer | None, chroot: str) -> None:
        self.kind, self.zk, self.chroot = kind, zk, chroot
        self.memory = InMemoryZooKeeper()
        self.log: list[tuple[int, str, int | None]] = []
        self.changed = asyncio.Event()

    async def broker(self, broker_id: int) -> tuple[Any, ControllerElector]:
        if self.kind == "kazoo":
            assert self.zk is not None
            store: Any = KazooZkStore(self.zk.connect_string + self.chroot, session_timeout_ms=4000)
        else:
            store = InMemoryZkStore(self.memory)
        await store.start()
        client = KavkaZkClient(store)
        await client.create_top_level_paths()

        async def elected(claim: ControllerClaim) -> None:
            self.log.append((broker_id, "elected", claim.epoch))
            self.changed.set()

        async def resigned() -> None:
            self.log.append((broker_id, "resigned", None))
            self.changed.set()

        elector = ControllerElector(client, broker_id, elected, resigned, retry_backoff_s=0.2)
        await elector.start()
        return store, elector

    async def expire(self, store: Any) -> None:
        if self.kind == "kazoo":
            session_id, password = store.client_id
            await asyncio.to_thread(expire_session, self.zk.connect_string, session_id, password)
        else:
            store.expire()

    async def until(self, predicate) -> None:
        async def loop() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), WAIT)


@pytest.fixture(params=["memory", "kazoo"])
def cluster(request: pytest.FixtureRequest) -> Cluster:
    import uuid

    zk = request.getfixturevalue("zk_server") if request.param == "kazoo" else None
    return Cluster(request.param, zk, f"/elector-{uuid.uuid4().hex[:8]}")


@pytest.mark.async_timeout(90)
async def test_one_controller_then_failover_on_close_and_on_expiry(cluster: Cluster) -> None:
    brokers = [await cluster.broker(i) for i in (1, 2, 3)]
    await cluster.until(lambda: sum(e.is_controller for _, e in brokers) == 1)
    first = next(i for i, (_, e) in enumerate(brokers) if e.is_controller)
    assert brokers[first][1].claim.epoch == 1
    # a clean stop hands over at once
    store, elector = brokers.pop(first)
    await elector.stop()
    await store.close()
    await cluster.until(lambda: sum(e.is_controller for _, e in brokers) == 1)
    second = next(i for i, (_, e) in enumerate(brokers) if e.is_controller)
    assert brokers[second][1].claim.epoch == 2
    # the controller's session expires: it resigns; a new election follows
    # (either broker may win it, the expired one included, with a new session)
    store, elector = brokers[second]
    await cluster.expire(store)
    await cluster.until(lambda: (elector._broker_id, "resigned", None) in cluster.log)
    await cluster.until(lambda: any(e.claim is not None and e.claim.epoch == 3 for _, e in brokers))
    await asyncio.sleep(0.3)
    assert sum(e.is_controller for _, e in brokers) == 1
    winner = next(e for _, e in brokers if e.is_controller)
    assert all(e.controller_id == winner._broker_id for _, e in brokers)
    elected = [entry for entry in cluster.log if entry[1] == "elected"]
    assert [epoch for _, _, epoch in elected] == [1, 2, 3]
    for s, e in brokers:
        await e.stop()
        await s.close()


@pytest.mark.async_timeout(90)
async def test_registration_survives_session_expiry(cluster: Cluster) -> None:
    store, elector = await cluster.broker(5)
    observer, observer_elector = await cluster.broker(6)
    client = KavkaZkClient(store)
    reg = BrokerRegistrar(client, lambda: BrokerIdZNode(5, (EndPoint("PLAINTEXT", "127.0.0.1", 9095, "PLAINTEXT"),)), retry_backoff_s=0.2)
    await reg.start()
    first_epoch = reg.broker_epoch
    assert await KavkaZkClient(observer).get_broker_ids() == [5]
    await cluster.expire(store)

    async def reregistered() -> None:
        # The registrar under test has no event for a new epoch: polled.
        while reg.broker_epoch in (None, first_epoch) or not reg.registered.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.05)

    await asyncio.wait_for(reregistered(), WAIT)
    _, stat = await observer.get(BrokerIdZNode.path(5))
    assert stat.ephemeral_owner == store.session_id and stat.czxid == reg.broker_epoch
    await reg.stop()
    for s, e in ((store, elector), (observer, observer_elector)):
        await e.stop()
        await s.close()
