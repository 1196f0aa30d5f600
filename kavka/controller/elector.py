"""``ControllerElector``: every broker's part in choosing the controller
(seed 000 §Controller Failover, seed 001 D).

Each broker watches ``/controller``. When it is absent, the broker tries to
become controller: ``KavkaZkClient.try_become_controller`` creates the
ephemeral ``/controller`` and increments ``/controller_epoch`` in one
conditional ``multi``, so exactly one broker wins each epoch. The loser
re-arms its watch (watches are one-shot) and waits.

The elector calls ``on_elected(claim)`` when this broker wins (the
controller then runs the failover steps with ``claim`` fencing its writes)
and ``on_resigned()`` when it stops being controller: its session expired
(the ephemeral is gone), ``/controller`` names someone else, or the
controller code reported ``ControllerMovedError`` through ``resign()``.

Watch and session callbacks only wake the elector's single task; all
ZooKeeper calls and both callbacks run in that task, one at a time, on the
broker's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from kavka.zk.client import ControllerClaim, KavkaZkClient
from kavka.zk.controller_nodes import CONTROLLER_PATH
from kavka.zk.store_types import BadVersionError, NoNodeError, SessionEvent, SessionState, WatchEvent, ZkError

log = logging.getLogger(__name__)


class ControllerElector:
    """See module doc. ``controller_id`` is the controller this broker last
    saw (None: none known); ``claim`` is set while this broker is controller."""

    def __init__(
        self,
        client: KavkaZkClient,
        broker_id: int,
        on_elected: Callable[[ControllerClaim], Awaitable[None]],
        on_resigned: Callable[[], Awaitable[None]],
        *,
        retry_backoff_s: float = 1.0,
    ) -> None:
        self._client = client
        self._broker_id = broker_id
        self._on_elected = on_elected
        self._on_resigned = on_resigned
        self._backoff = retry_backoff_s
        self._wake = asyncio.Event()
        self._must_step_down = False
        self._delete_on_step_down = False
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.claim: ControllerClaim | None = None
        self.controller_id: int | None = None

    @property
    def is_controller(self) -> bool:
        return self.claim is not None

    async def start(self) -> None:
        self._client.store.add_session_listener(self._on_session)
        self._wake.set()
        self._task = asyncio.create_task(self._run(), name=f"controller-elector-{self._broker_id}")

    async def stop(self) -> None:
        """Stop competing; if controller, delete ``/controller`` (a clean
        handover: the other brokers' watches fire at once) and resign."""
        self._stopping = True
        self._client.store.remove_session_listener(self._on_session)
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None
        if self.claim is not None:
            claim, self.claim = self.claim, None
            try:
                await self._client.resign_controller(claim)
            except ZkError as e:
                log.warning("could not delete /controller on shutdown: %s", e)
            await self._on_resigned()

    def resign(self) -> None:
        """Called by the controller when a fenced write failed
        (``ControllerMovedError``): stop acting as controller and re-check."""
        self._must_step_down = True
        self._wake.set()

    def reelect(self) -> None:
        """Called by the controller when its ZooKeeper state became
        uncertain: give up the epoch (deleting ``/controller`` if it is still
        ours, so every broker competes) and compete again (Kafka's Reelect)."""
        self._must_step_down = True
        self._delete_on_step_down = True
        self._wake.set()

    # callbacks from the store (on the loop): only wake the task
    def _on_watch(self, event: WatchEvent) -> None:
        self._wake.set()

    def _on_session(self, event: SessionEvent) -> None:
        if event.state in (SessionState.EXPIRED, SessionState.CLOSED):
            self._must_step_down = True  # our /controller, if any, is gone with the session
        if event.state in (SessionState.EXPIRED, SessionState.NEW_SESSION, SessionState.RECONNECTED):
            self._wake.set()  # RECONNECTED: the /controller watch was dropped; re-arm it

    async def _run(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                break
            if self._must_step_down:
                self._must_step_down = False
                await self._step_down("lost its ZooKeeper session or was fenced")
            try:
                await self._elect()
            except ZkError as e:
                # Typically a connection loss: a session event will wake us;
                # retry on our own too in case the error was transient.
                log.info("controller election attempt failed (%s); retrying in %.1fs", e, self._backoff)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._backoff)
                self._wake.set()

    async def _elect(self) -> None:
        current = await self._client.get_controller_id(watch=self._on_watch)
        self.controller_id = current
        if current is None:
            claim = await self._client.try_become_controller(self._broker_id, int(time.time() * 1000))
            if claim is None:
                self._wake.set()  # someone else won: read who, and watch again
                return
            self.claim = claim
            self.controller_id = self._broker_id
            log.info("broker %d is now the controller (epoch %d)", self._broker_id, claim.epoch)
            await self._on_elected(claim)
        elif current != self._broker_id:
            await self._step_down(f"broker {current} is the controller")
        elif self.claim is None:
            # /controller names this broker but it holds no epoch: a node of
            # its own session left by a resignation whose delete failed.
            # Delete it and compete; a node of an older session of this
            # broker vanishes when that session expires (the watch is set).
            stat = await self._client.store.exists(CONTROLLER_PATH)
            if stat is not None and stat.ephemeral_owner == self._client.store.session_id:
                with contextlib.suppress(NoNodeError, BadVersionError):
                    await self._client.store.delete(CONTROLLER_PATH, stat.version)
                self._wake.set()

    async def _step_down(self, why: str) -> None:
        if self.claim is None:
            self._delete_on_step_down = False
            return
        log.info("broker %d resigns as controller (epoch %d): %s", self._broker_id, self.claim.epoch, why)
        claim, self.claim = self.claim, None
        if self._delete_on_step_down:
            self._delete_on_step_down = False
            try:
                await self._client.resign_controller(claim)
            except ZkError as e:
                log.info("could not delete /controller when re-electing (%s); it is removed on the next attempt", e)
        await self._on_resigned()
