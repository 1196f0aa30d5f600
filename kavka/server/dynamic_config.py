"""Dynamic configuration manager (seed 002 §8 动态配置管理器).

Overrides live in ``/config/<entity-type>/<entity-name>`` (topics, brokers
— ``<default>`` for every broker); whoever changes one creates a
notification ``/config/changes/config_change_<10 digits>``. Every broker
watches ``/config/changes``; on a change it reads the notifications in
sequence order, processes only those numbered above ``last_executed``,
hands each entity to its handler (topic: merge the overrides with the
broker defaults and apply them to the topic's logs; broker: re-apply the
dynamic broker configs), and purges notifications older than 15 minutes
(``CHANGE_EXPIRATION_MS``).

At startup every existing override is applied once, so a broker that was
down while configs changed catches up. The same catch-up runs after every
new ZooKeeper session (seed 002 §9): the expired session took the watch on
``/config/changes`` with it, and changes made meanwhile were never seen.

Runs on the broker's event loop; watch callbacks arrive there.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable, Mapping

from kavka.zk.client import KavkaZkClient
from kavka.zk.notifications import ConfigChangeNotificationZNode
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import NoNodeError, SessionEvent, SessionState, WatchEvent, ZkError

log = logging.getLogger("kavka.dynamic_config")

CHANGES_PATH = "/config/changes"
CHANGE_EXPIRATION_MS = 15 * 60 * 1000

EntityHandler = Callable[[str, Mapping[str, str]], Awaitable[None] | None]


class DynamicConfigManager:
    """See the module docstring. ``handlers`` maps an entity type
    (``topics``, ``brokers``) to ``handler(entity_name, overrides)``."""

    def __init__(self, zk: KavkaZkClient, handlers: Mapping[str, EntityHandler],
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.zk = zk
        self.handlers = dict(handlers)
        self.clock_ms = clock_ms
        self.last_executed = -1
        self._processing = False
        self._again = False
        self._stopped = False

    async def start(self) -> None:
        self.zk.store.add_session_listener(self._on_session)
        await self._catch_up()

    async def _catch_up(self) -> None:
        """Apply every override in full, then follow notifications."""
        await self.zk.store.ensure_path(CHANGES_PATH)
        # Start after the newest notification: what it announced is in the
        # entity znodes, which we apply in full below.
        children = await self.zk.store.get_children(CHANGES_PATH)
        seqs = [s for s in (_sequence(c) for c in children) if s is not None]
        self.last_executed = max(seqs, default=-1)
        for entity_type in self.handlers:
            try:
                names = await self.zk.store.get_children(f"/config/{entity_type}")
            except NoNodeError:
                continue
            for name in names:
                await self._apply(entity_type, name)
        await self._process()

    def stop(self) -> None:
        self._stopped = True
        self.zk.store.remove_session_listener(self._on_session)

    def _on_session(self, event: SessionEvent) -> None:
        if self._stopped:
            return
        if event.state is SessionState.NEW_SESSION:
            asyncio.get_running_loop().create_task(self._in_background(self._catch_up, "catching up after a new session"))
        elif event.state is SessionState.RECONNECTED:
            # Same session: notifications are still there, but a read that
            # failed with the connection left the watch unarmed.
            asyncio.get_running_loop().create_task(self._in_background(self._process, "reading /config/changes"))

    def _on_change(self, event: WatchEvent) -> None:
        if self._stopped:
            return
        asyncio.get_running_loop().create_task(self._in_background(self._process, "reading /config/changes"))

    async def _in_background(self, work: Callable[[], Awaitable[None]], what: str) -> None:
        """A ZooKeeper failure here is logged, not raised into a task nobody
        awaits: the session coming back (RECONNECTED or NEW_SESSION) runs
        the work again and re-arms the watch."""
        try:
            await work()
        except ZkError as e:
            log.warning("dynamic config: %s failed (%s); retried once the ZooKeeper session is back", what, e)

    async def _process(self) -> None:
        """Read and apply new notifications; re-arms the child watch."""
        if self._processing:
            self._again = True
            return
        self._processing = True
        try:
            while True:
                self._again = False
                children = await self.zk.store.get_children(CHANGES_PATH, watch=self._on_change)
                now = self.clock_ms()
                for child in sorted(children, key=lambda c: _sequence(c) or -1):
                    seq = _sequence(child)
                    if seq is None:
                        continue
                    path = f"{CHANGES_PATH}/{child}"
                    try:
                        data, stat = await self.zk.store.get(path)
                    except NoNodeError:
                        continue
                    if seq > self.last_executed:
                        try:
                            note = ConfigChangeNotificationZNode.decode(data, path)
                        except (ZnodeDataError, ValueError) as e:
                            log.error("ignoring malformed config change notification %s: %s", path, e)
                        else:
                            await self._apply(note.entity_type, note.entity_name)
                        self.last_executed = seq
                    if now - stat.ctime > CHANGE_EXPIRATION_MS:
                        try:
                            await self.zk.store.delete(path)
                        except NoNodeError:
                            pass
                if not self._again:
                    return
        finally:
            self._processing = False

    async def _apply(self, entity_type: str, entity_name: str) -> None:
        handler = self.handlers.get(entity_type)
        if handler is None:
            return
        try:
            overrides = await self.zk.get_entity_config(entity_type, entity_name)
        except (ZnodeDataError, ValueError) as e:
            log.error("cannot read /config/%s/%s: %s", entity_type, entity_name, e)
            return
        try:
            result = handler(entity_name, overrides)
            if result is not None:
                await result
        except Exception:
            log.exception("applying the %s config of %s failed", entity_type, entity_name)
        else:
            log.info("applied %s config of %s: %s", entity_type, entity_name, dict(overrides))


def _sequence(child: str) -> int | None:
    prefix = ConfigChangeNotificationZNode.NAME_PREFIX
    if not child.startswith(prefix):
        return None
    digits = child[len(prefix):]
    return int(digits) if digits.isdigit() else None
