"""Fixtures: one real ZooKeeper per test session (per xdist worker), a fresh
chroot per test, and ``backend`` — the same test body run against the real
server (KazooZkStore) and the in-memory double (InMemoryZkStore).

``zookeeper`` yields ``"127.0.0.1:PORT"``; ``zk_chroot`` yields
``"127.0.0.1:PORT/kavka-test-<hex>"`` and deletes the chroot afterwards;
``zk_server`` gives the ``ZooKeeperServer`` itself (pause/resume);
``recorder`` makes callback recorders that remember the thread they ran on.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any, Awaitable, Callable, Iterator

import pytest

from kavka.tools.zookeeper import ZooKeeperNotInstalled, ZooKeeperServer, expire_session
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper
from kavka.zk.store import KazooZkStore

WAIT = 20.0  # generous bound for events on a loaded 2-core machine


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(fsync=False)
    try:
        server.start()
    except ZooKeeperNotInstalled as e:
        pytest.fail(f"{e}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def zookeeper(zk_server: ZooKeeperServer) -> str:
    return zk_server.connect_string


@pytest.fixture
def zk_chroot(zookeeper: str) -> Iterator[str]:
    from kazoo.client import KazooClient

    chroot = f"/kavka-test-{uuid.uuid4().hex[:12]}"
    yield f"{zookeeper}{chroot}"
    client = KazooClient(hosts=zookeeper)
    client.start(10)
    try:
        client.delete(chroot, recursive=True)
    except Exception:  # noqa: BLE001 - the test may never have created it
        pass
    finally:
        client.stop()
        client.close()


class Recorder:
    """Collects callback events with the thread they ran on. Create it on
    the event loop that will run the callbacks."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.threads: set[int] = set()
        self._changed = asyncio.Event()

    def __call__(self, event: Any) -> None:
        self.events.append(event)
        self.threads.add(threading.get_ident())
        self._changed.set()

    async def wait_for(self, predicate: Callable[[list[Any]], bool]) -> None:
        async def loop() -> None:
            while not predicate(self.events):
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(loop(), WAIT)


@pytest.fixture
def recorder() -> type[Recorder]:
    return Recorder


class Backend:
    """Makes sessions on one backend, under one chroot per test."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        if kind == "kazoo":
            self.connect = request.getfixturevalue("zk_chroot")
            self.server: ZooKeeperServer = request.getfixturevalue("zk_server")
        else:
            self.memory = InMemoryZooKeeper()
        self.stores: list[Any] = []

    def new_store(self, session_timeout_ms: int = 6000) -> Any:
        if self.kind == "kazoo":
            store = KazooZkStore(self.connect, session_timeout_ms=session_timeout_ms)
        else:
            store = InMemoryZkStore(self.memory, chroot="/kavka-test")
        self.stores.append(store)
        return store

    def recorder(self) -> Recorder:
        return Recorder()

    async def expire(self, store: Any) -> None:
        """End ``store``'s session on the server side, for real."""
        if self.kind == "kazoo":
            session_id, password = store.client_id
            await asyncio.to_thread(expire_session, self.server.connect_string, session_id, password)
        else:
            store.expire()

    def run(self, body: Callable[[], Awaitable[None]], timeout: float = 60) -> None:
        async def main() -> None:
            try:
                await asyncio.wait_for(body(), timeout)
            finally:
                for s in self.stores:
                    await s.close()

        asyncio.run(main())


@pytest.fixture(params=["kazoo", "memory"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return Backend(request.param, request)
