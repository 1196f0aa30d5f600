"""``CachedZnode``: one znode's data and stat as last read, kept current by
a watch, for checks that run on every request (is this the controller's
epoch? is this a broker's current registration?) and must not cost a
ZooKeeper round trip each time.

- ``read()``: the cached value while the watch that guards it has not
  fired; otherwise one read (``get`` with a watch, or ``exists`` with a
  watch when the znode is missing, so its creation invalidates too).
- ``refresh()``: ``sync`` then a read, for a caller whose request claims
  something newer than the cache (a watch event may still be on its way:
  the writer's request and our notification travel different paths). One
  refresh at a time (concurrent callers share it), and at most one every
  ``min_refresh_interval_s``: a client flooding claims it cannot verify
  waits with the rest instead of turning each request into a ZooKeeper
  read.

A watch event or any session event (connection lost, session expired:
kazoo drops every watch then) drops the cached value. While ZooKeeper
cannot be reached, ``read()`` answers the value last read if only the
connection, not a change of the znode, dropped it: it was right when the
connection went and nobody can say otherwise until it is back (a
``refresh()`` still fails then). At most one watch is armed per znode at a
time, so nothing accumulates however often the value is read.

Runs on the store's event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kavka.zk.store_types import (
    NoNodeError,
    SessionEvent,
    WatchEvent,
    WatchEventType,
    ZkConnectionLossError,
    ZkNotConnectedError,
    ZkSessionExpiredError,
    ZkStore,
    ZnodeStat,
)

Value = tuple[bytes, ZnodeStat] | None  # None: the znode does not exist
UNREACHABLE = (ZkConnectionLossError, ZkNotConnectedError, ZkSessionExpiredError)


class CachedZnode:
    """See the module docstring."""

    def __init__(self, store: ZkStore, path: str, *, min_refresh_interval_s: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.path = path
        self.min_refresh_interval_s = min_refresh_interval_s
        self._clock = clock
        self._value: Value = None
        self._valid = False
        self._armed = False
        self._generation = 0  # bumped by every invalidation
        self._loaded = False  # a value was read at least once
        self._only_unreachable = False  # invalid because of the connection, not a change
        self._refreshing: asyncio.Future[Value] | None = None
        self._last_refresh = float("-inf")
        self.reads = 0  # ZooKeeper reads made (a test and log aid)
        store.add_session_listener(self._on_session)

    def close(self) -> None:
        self.store.remove_session_listener(self._on_session)

    @property
    def valid(self) -> bool:
        return self._valid

    def _invalidate(self, *, changed: bool) -> None:
        self._only_unreachable = not changed and (self._valid or self._only_unreachable)
        self._armed = False
        self._valid = False
        self._generation += 1

    def _on_watch(self, event: WatchEvent) -> None:
        self._invalidate(changed=event.type is not WatchEventType.LOST)

    def _on_session(self, event: SessionEvent) -> None:
        self._invalidate(changed=False)

    async def read(self) -> Value:
        if self._valid:
            return self._value
        try:
            return await self._load(sync=False)
        except UNREACHABLE:
            if self._loaded and self._only_unreachable:
                return self._value  # what held when the connection went
            raise

    async def refresh(self) -> Value:
        if self._refreshing is not None:
            return await asyncio.shield(self._refreshing)
        loop = asyncio.get_running_loop()
        self._refreshing = future = loop.create_future()
        try:
            wait = self._last_refresh + self.min_refresh_interval_s - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last_refresh = self._clock()
            value = await self._load(sync=True)
        except BaseException as e:
            future.set_exception(e)
            future.exception()  # retrieved: the sharers get it from their await
            raise
        finally:
            self._refreshing = None
        future.set_result(value)
        return value

    async def _load(self, *, sync: bool) -> Value:
        if sync:
            await self.store.sync(self.path)
        generation = self._generation
        value: Value
        while True:
            watch = None if self._armed else self._on_watch
            self.reads += 1
            try:
                value = await self.store.get(self.path, watch)
            except NoNodeError:
                if watch is None:
                    value = None
                    break
                # The failed get armed nothing: an exists watch announces the creation.
                stat = await self.store.exists(self.path, watch)
                self._armed = generation == self._generation
                if stat is not None:
                    continue  # created in between: read it (the exists watch guards it)
                value = None
                break
            if watch is not None:
                # An invalidation while we read may have been our new watch
                # firing: then none is armed (at worst one is armed twice).
                self._armed = generation == self._generation
            break
        # Valid only if no watch or session event dropped it while we read.
        self._value, self._valid = value, self._armed and generation == self._generation
        self._loaded, self._only_unreachable = True, False
        return value
