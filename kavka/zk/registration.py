"""``BrokerRegistrar``: keeps this broker registered as ``/brokers/ids/<id>``.

Seed 000 §Broker 启动过程: a broker announces itself with an ephemeral
znode; the controller's watch on ``/brokers/ids`` sees it. The znode dies
with the ZooKeeper session, so after a session expiry the broker must
register again (seed 002 §9) — waiting out the old session's node if the
server has not deleted it yet (ZOOKEEPER-1740, seed 003), which
``KavkaZkClient.register_broker`` does.

One task owns the work: session events only queue a request, so kazoo's
callbacks never run ZooKeeper calls themselves. Used on the broker's event
loop; ``start`` once, ``stop`` once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from kavka.zk.brokers import BrokerIdZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.store_types import SessionEvent, SessionState, ZkError

log = logging.getLogger(__name__)


class BrokerRegistrar:
    """Registers the broker and re-registers it after every new session.

    ``registration`` builds the znode value each time (its timestamp may
    change); ``broker_epoch`` is the czxid of the current registration (the
    broker epoch Kafka sends in controller requests), None while unregistered.
    ``retry_backoff_s`` paces retries after a ZooKeeper error.
    """

    def __init__(self, client: KavkaZkClient, registration: Callable[[], BrokerIdZNode], *, wait_s: float = 30.0, retry_backoff_s: float = 1.0) -> None:
        self._client = client
        self._registration = registration
        self._wait_s = wait_s
        self._backoff = retry_backoff_s
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.broker_epoch: int | None = None
        self.registered = asyncio.Event()

    async def start(self) -> None:
        """Register now (raises if that fails), then keep it up in the background."""
        self._client.store.add_session_listener(self._on_session)
        self.broker_epoch = await self._client.register_broker(self._registration(), self._wait_s)
        self.registered.set()
        self._task = asyncio.create_task(self._run(), name="broker-registrar")

    async def stop(self) -> None:
        self._stopping = True
        self._client.store.remove_session_listener(self._on_session)
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None

    def _on_session(self, event: SessionEvent) -> None:
        if event.state in (SessionState.EXPIRED, SessionState.CLOSED):
            self.broker_epoch = None
            self.registered.clear()
        elif event.state is SessionState.NEW_SESSION:
            self._wake.set()

    async def _run(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            while not self._stopping and not self.registered.is_set():
                try:
                    self.broker_epoch = await self._client.register_broker(self._registration(), self._wait_s)
                    self.registered.set()
                    log.info("re-registered broker after a new ZooKeeper session (broker epoch %s)", self.broker_epoch)
                except ZkError as e:
                    log.warning("broker registration failed, retrying in %.1fs: %s", self._backoff, e)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), self._backoff)
                    self._wake.clear()
