"""Fixtures: ``backend`` — the same test body run against the real server
(KazooZkStore) and the in-memory double (InMemoryZkStore) — and
``recorder``, which makes callback recorders that remember the thread they
ran on. The real server (``zk_server``, ``zookeeper``, ``zk_chroot``) comes
from tests/conftest.py, shared with tests/controller.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from kavka.tools.zookeeper import ZooKeeperServer, expire_session
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper
from kavka.zk.store import KazooZkStore

WAIT = 20.0  # generous bound for events on a loaded 2-core machine


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
    """Makes sessions on one backend, under one chroot per test; the
    coroutine-test hook of tests/conftest.py closes them after the test, on
    its loop."""

    on_test_loop = True

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

    async def __aenter__(self) -> Backend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for s in self.stores:
            await s.close()


@pytest.fixture(params=["kazoo", "memory"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return Backend(request.param, request)
