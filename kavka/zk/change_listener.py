"""``ChangeNotificationListener``: follows a ZooKeeper notification queue,
as Kafka's ``ZkNodeChangeNotificationListener`` does.

A writer creates ``<root>/<prefix><10-digit sequence>`` (sequential) after
changing what the notification names. The listener keeps a child watch on
``<root>``; on every change it reads the children in sequence order, hands
the data of each one numbered above the last it executed to ``handler``
(once, in order), and deletes those older than ``expiration_ms`` (15
minutes, Kafka's ``changeExpirationMs``), whoever created them. Unlike
Kafka's listener, which re-reads every notification on every pass to
purge, it reads each one once and remembers its creation time.

``start(skip_existing=True)`` arms the watch and marks every notification
present as done: for an owner that reads the full state right after (a
change made meanwhile is announced by a newer notification, so nothing is
missed). After a ZooKeeper session comes back (RECONNECTED: the watch may be
unarmed; NEW_SESSION: it is gone) the queue is read again; an owner that
must not miss changes purged while it was away re-reads its full state on
NEW_SESSION itself.

A handler's failure is logged with the notification's path and does not
stop the others (the notification is not retried, as in Kafka); a
ZooKeeper failure is logged and the queue re-read once the session is back.

Runs on the store's event loop; watch callbacks arrive there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from kavka.zk.store_types import NoNodeError, SessionEvent, SessionState, WatchEvent, ZkError, ZkStore

log = logging.getLogger("kavka.zk.notifications")

CHANGE_EXPIRATION_MS = 15 * 60 * 1000

NotificationHandler = Callable[[bytes, str], Awaitable[None]]


class ChangeNotificationListener:
    """See the module docstring. ``handler(data, path)`` is awaited for each
    new notification, one at a time."""

    def __init__(self, store: ZkStore, root: str, prefix: str, handler: NotificationHandler, *,
                 expiration_ms: int = CHANGE_EXPIRATION_MS,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.store = store
        self.root = root
        self.prefix = prefix
        self.handler = handler
        self.expiration_ms = expiration_ms
        self.clock_ms = clock_ms
        self.last_executed = -1
        self._processing = False
        self._again = False
        self._stopped = False
        self._tasks: set[asyncio.Task[None]] = set()
        # notification (child name) -> its creation time, once read
        self._ctimes: dict[str, int] = {}

    async def start(self, *, skip_existing: bool = False) -> None:
        await self.store.ensure_path(self.root)
        self.store.add_session_listener(self._on_session)
        if skip_existing:
            children = await self.store.get_children(self.root, watch=self._on_change)
            self.last_executed = max((s for s in map(self._sequence, children) if s is not None), default=-1)
        await self.process()

    def stop(self) -> None:
        self._stopped = True
        self.store.remove_session_listener(self._on_session)
        for task in self._tasks:
            task.cancel()

    def _on_session(self, event: SessionEvent) -> None:
        if event.state in (SessionState.RECONNECTED, SessionState.NEW_SESSION):
            self._spawn()

    def _on_change(self, event: WatchEvent) -> None:
        self._spawn()

    def _spawn(self) -> None:
        if self._stopped:
            return
        task = asyncio.get_running_loop().create_task(self._process_logged())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process_logged(self) -> None:
        try:
            await self.process()
        except ZkError as e:
            log.warning("reading %s failed (%s); read again once the ZooKeeper session is back", self.root, e)

    def _sequence(self, child: str) -> int | None:
        tail = child[len(self.prefix):]
        return int(tail) if child.startswith(self.prefix) and tail.isdigit() else None

    async def process(self) -> None:
        """Handle the notifications not yet executed and purge the expired
        ones; re-arms the child watch. Concurrent calls coalesce: one more
        pass runs after the current one. Each notification is read once
        (new ones together, in one multiRead); the creation times of those
        already read are remembered for the purge, so a pass costs the same
        however many notifications the last 15 minutes left."""
        if self._processing:
            self._again = True
            return
        self._processing = True
        try:
            while not self._stopped:
                self._again = False
                children = await self.store.get_children(self.root, watch=self._on_change)
                present = set(children)
                for gone in [c for c in self._ctimes if c not in present]:
                    del self._ctimes[gone]
                new = sorted((s, c) for c in children if c not in self._ctimes and (s := self._sequence(c)) is not None)
                read = await self.store.get_many([f"{self.root}/{c}" for _, c in new])
                for (seq, child), got in zip(new, read, strict=True):
                    if got is None:
                        continue  # purged by another broker meanwhile
                    data, stat = got
                    if seq > self.last_executed:
                        path = f"{self.root}/{child}"
                        try:
                            await self.handler(data, path)
                        except ZkError:
                            raise  # not executed: read and handled again on the next pass
                        except Exception:  # a bad notification must not stop the queue
                            log.exception("processing the change notification %s failed", path)
                        self.last_executed = seq
                    self._ctimes[child] = stat.ctime
                now = self.clock_ms()
                for child, ctime in list(self._ctimes.items()):
                    if now - ctime > self.expiration_ms:
                        with contextlib.suppress(NoNodeError):
                            await self.store.delete(f"{self.root}/{child}")
                        del self._ctimes[child]
                if not self._again:
                    return
        finally:
            self._processing = False
