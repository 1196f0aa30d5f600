"""``AdminManager.auto_create`` (Metadata's topic auto-creation) against the
in-memory ZooKeeper: healthy, hung (every call waits for ever) and
disconnected. A ZooKeeper in trouble costs the client a retriable
LEADER_NOT_AVAILABLE within the bounded wait, never an exception that
would close its connection."""

from __future__ import annotations

import asyncio

from kavka.common.errors import ErrorCode
from kavka.server.admin_manager import AdminManager
from kavka.zk.client import KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

TIMEOUT_S = 0.2


class HungZkStore(InMemoryZkStore):
    """Every read and write waits until ``release`` (a hung ZooKeeper)."""

    def __init__(self, server: InMemoryZooKeeper) -> None:
        super().__init__(server)
        self.release = asyncio.Event()
        self.calls = 0

    async def _hang(self) -> None:
        self.calls += 1
        await self.release.wait()

    async def get(self, path, watch=None):
        await self._hang()
        return await super().get(path, watch)

    async def create(self, path, data=b"", **kwargs):
        await self._hang()
        return await super().create(path, data, **kwargs)


def _admin(store) -> AdminManager:
    return AdminManager(KavkaZkClient(store), lambda: {}, lambda: {1: None, 2: None}, num_partitions=2,
                        default_replication_factor=2, auto_create_timeout_s=TIMEOUT_S)


async def test_auto_create_writes_the_topic_and_answers_leader_not_available():
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    admin = _admin(store)
    assert await admin.auto_create(["new"]) == {"new": ErrorCode.LEADER_NOT_AVAILABLE}
    assert await admin.zk.get_topic("new") is not None
    # Asked again before the leaders are elected: the topic exists.
    assert await admin.auto_create(["new"]) == {"new": ErrorCode.LEADER_NOT_AVAILABLE}


async def test_a_topic_that_cannot_be_created_is_unknown():
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    admin = AdminManager(KavkaZkClient(store), lambda: {}, lambda: {1: None}, num_partitions=1,
                         default_replication_factor=3, auto_create_timeout_s=TIMEOUT_S)
    assert await admin.auto_create(["t"]) == {"t": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


async def test_a_hung_zookeeper_costs_a_retriable_error_within_the_bound():
    store = HungZkStore(InMemoryZooKeeper())
    await store.start()
    admin = _admin(store)
    # The outer bound only stops this test from hanging if the fix regresses.
    answers = await asyncio.wait_for(admin.auto_create(["a", "b"]), 30 * TIMEOUT_S)
    assert answers == {"a": ErrorCode.LEADER_NOT_AVAILABLE, "b": ErrorCode.LEADER_NOT_AVAILABLE}
    assert store.calls >= 1  # it did ask ZooKeeper
    # ZooKeeper recovers: the next Metadata creates the topic.
    store.release.set()
    assert await admin.auto_create(["a"]) == {"a": ErrorCode.LEADER_NOT_AVAILABLE}
    assert await admin.zk.get_topic("a") is not None


async def test_a_disconnected_zookeeper_costs_a_retriable_error():
    store = InMemoryZkStore(InMemoryZooKeeper())
    await store.start()
    store.disconnect()
    assert await _admin(store).auto_create(["a"]) == {"a": ErrorCode.LEADER_NOT_AVAILABLE}
