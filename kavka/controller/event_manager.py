"""``ControllerEventManager``: the controller's single queue and the one
asyncio task that consumes it (docs/ARCHITECTURE.md; Kafka's ControllerEventManager).

Every controller decision happens in ``process(event)`` on that task, one
event at a time, so the controller's context and state machines need no
locks. Producers (ZooKeeper watch and session callbacks, the elector, the
channel's response callbacks) only ``put`` events; they run on the same
event loop (the ZooKeeper store hands kazoo's callbacks to the loop), so
``put`` is a plain call.

A ``process`` that raises does not stop the task: the error is handed to
``on_error`` (the controller turns ``ControllerMovedError`` into a
resignation and uncertain ZooKeeper failures into a re-election) and the
next event is taken. The queue is unbounded on purpose: events are small
and each watch fires once per re-arm, so its length is bounded by the
number of watches plus in-flight broker responses.

``EventWatches`` makes the one-shot ZooKeeper watches that queue an event
when they fire; the controller's parts that read a znode take one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from kavka.controller.events import ControllerEvent
from kavka.zk.store_types import WatchCallback, WatchEvent, WatchEventType

log = logging.getLogger(__name__)


class ControllerEventManager:
    """One queue, one task (see module doc). ``start`` once, ``stop`` once;
    ``put`` any time in between (events put after ``stop`` are dropped)."""

    def __init__(
        self,
        process: Callable[[ControllerEvent], Awaitable[None]],
        on_error: Callable[[ControllerEvent, Exception], Awaitable[None]],
        *,
        name: str = "controller-event-thread",
    ) -> None:
        self._process = process
        self._on_error = on_error
        self._name = name
        self._queue: asyncio.Queue[ControllerEvent | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self._idle = asyncio.Event()
        self._idle.set()
        self.processed = 0

    def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("controller event manager already started")
        self._task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        """Finish the event being processed, drop the rest, end the task."""
        self._stopped = True
        self._queue.put_nowait(None)
        if self._task is not None:
            await self._task
            self._task = None

    def put(self, event: ControllerEvent) -> None:
        if self._stopped:
            log.debug("controller event %s dropped: event manager stopped", event.name)
            return
        self._idle.clear()
        self._queue.put_nowait(event)

    def clear(self, keep: Callable[[ControllerEvent], bool]) -> None:
        """Drop queued events ``keep`` rejects (a resigning controller drops
        work meant for its epoch, as Kafka's clearAndPut does)."""
        kept: list[ControllerEvent | None] = []
        while not self._queue.empty():
            e = self._queue.get_nowait()
            if e is None or keep(e):
                kept.append(e)
        for e in kept:
            self._queue.put_nowait(e)

    @property
    def queue_size(self) -> int:
        return self._queue.qsize()

    @property
    def idle(self) -> bool:
        """No event queued or being processed."""
        return self._idle.is_set()

    async def wait_idle(self) -> None:
        """Until the queue is empty and no event is being processed (tests)."""
        await self._idle.wait()

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            if event is None or self._stopped:
                break
            try:
                await self._process(event)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # one event's failure must not stop the controller
                try:
                    await self._on_error(event, e)
                except Exception:
                    log.exception("controller error handler failed on %s", event.name)
            self.processed += 1
            if self._queue.empty():
                self._idle.set()
        self._idle.set()


class EventWatches:
    """``watches(event)``: a one-shot ZooKeeper watch that queues ``event``.
    A watch dropped with the connection (LOST) queues nothing: the session
    listener queues ``WatchesLost`` when the connection is back.

    It holds the queue's ``put`` and nothing else: ZooKeeper keeps a watch
    until it fires, which may be long after the epoch that armed it ended,
    and it must not keep that epoch's whole context alive (10,000
    partitions' state per resignation, walked by every full garbage
    collection)."""

    __slots__ = ("_put",)

    def __init__(self, put: Callable[[ControllerEvent], None]) -> None:
        self._put = put

    def __call__(self, event: ControllerEvent) -> WatchCallback:
        put = self._put

        def fire(e: WatchEvent) -> None:
            if e.type is not WatchEventType.LOST:
                put(event)

        return fire
