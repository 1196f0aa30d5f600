"""Dynamic configuration manager (seed 002 §8 动态配置管理器).

Overrides live in ``/config/<entity-type>/<entity-name>`` (topics, brokers
— ``<default>`` for every broker —, users, users' client ids and client ids,
whose handlers are in ``quota_config_handler``); whoever changes one creates a
notification ``/config/changes/config_change_<10 digits>``. Every broker
watches ``/config/changes``; on a change it reads the notifications in
sequence order, processes only those numbered above ``last_executed``,
hands each entity to its handler (topic: merge the overrides with the
broker defaults and apply them to the topic's logs; broker: re-apply the
dynamic broker configs; user or client id: its quotas and SCRAM
credentials), and purges notifications older than 15 minutes
(``CHANGE_EXPIRATION_MS``).

At startup every existing override is applied once, so a broker that was
down while configs changed catches up. The same catch-up runs after every
new ZooKeeper session (seed 002 §9): the expired session took the watch on
``/config/changes`` with it, and changes made meanwhile were never seen.

``BrokerConfigs`` is what the handlers apply to (Kafka's DynamicBrokerConfig
with its TopicConfigHandler and BrokerConfigHandler): the broker's effective
config — server.properties overridden by ``/config/brokers/<default>`` and
``/config/brokers/<id>`` — and the overrides of every topic this broker
hosts, merged with the broker's topic defaults into the logs' ``LogConfig``.

Runs on the broker's event loop; watch callbacks arrive there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from kavka.common.broker_config import KafkaConfig, log_defaults
from kavka.common.broker_config_keys import BROKER_CONFIG
from kavka.common.config import ConfigType
from kavka.security.sasl.credentials import ScramMechanism
from kavka.storage.log_config import LogConfig
from kavka.storage.log_manager import LogManager
from kavka.zk.client import KavkaZkClient
from kavka.zk.codec import ZnodeDataError
from kavka.zk.notifications import ConfigChangeNotificationZNode
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
        # the loop holds only weak references to tasks: a catch-up must not vanish mid-way
        self._background: set[asyncio.Task[None]] = set()

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
            for name in await self.zk.get_entity_names(entity_type):
                await self._apply(entity_type, name)
        await self._process()

    def stop(self) -> None:
        self._stopped = True
        self.zk.store.remove_session_listener(self._on_session)

    def _on_session(self, event: SessionEvent) -> None:
        if self._stopped:
            return
        if event.state is SessionState.NEW_SESSION:
            self._spawn(self._catch_up, "catching up after a new session")
        elif event.state is SessionState.RECONNECTED:
            # Same session: notifications are still there, but a read that
            # failed with the connection left the watch unarmed.
            self._spawn(self._process, "reading /config/changes")

    def _on_change(self, event: WatchEvent) -> None:
        if self._stopped:
            return
        self._spawn(self._process, "reading /config/changes")

    def _spawn(self, work: Callable[[], Awaitable[None]], what: str) -> None:
        task = asyncio.get_running_loop().create_task(self._in_background(work, what))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

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
                        with contextlib.suppress(NoNodeError):
                            await self.zk.store.delete(path)
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
            log.info("applied %s config of %s: %s", entity_type, entity_name, loggable(overrides))


class BrokerConfigs:
    """See the module docstring. ``current`` is the effective broker
    config; ``attach`` names the log manager whose logs take topic config
    changes (built after ``load``, which gives it its first configs)."""

    def __init__(self, static: KafkaConfig, zk: KavkaZkClient) -> None:
        self.static = static
        self.current = static
        self.zk = zk
        self._topic_overrides: dict[str, dict[str, str]] = {}
        self._dynamic_default: dict[str, str] = {}
        self._dynamic_broker: dict[str, str] = {}
        self._log_manager: LogManager | None = None
        self._listeners: list[Callable[[KafkaConfig], None]] = []

    def log_defaults(self) -> dict[str, Any]:
        """The topic-level defaults of the current broker config."""
        return log_defaults(self.current)

    async def load(self, topics: Iterable[str]) -> dict[str, LogConfig]:
        """At startup, before the logs load: every topic's overrides and the
        dynamic broker configs; the LogConfig of each topic with overrides
        (an invalid one is logged and the topic gets the defaults)."""
        for topic in topics:
            self._topic_overrides[topic] = await self.zk.get_entity_config("topics", topic)
        self._dynamic_default = await self.zk.get_entity_config("brokers", "<default>")
        self._dynamic_broker = await self.zk.get_entity_config("brokers", str(self.static.broker_id))
        try:
            self.current = self.static.with_dynamic(self._dynamic_default, self._dynamic_broker)
        except ValueError as e:
            log.error("ignoring invalid dynamic broker configs: %s", e)
        topic_configs = {}
        for topic, overrides in self._topic_overrides.items():
            try:
                topic_configs[topic] = LogConfig.with_defaults(self.log_defaults(), overrides)
            except ValueError as e:
                log.error("topic %s has an invalid config in ZooKeeper (%s); using the defaults", topic, e)
        return topic_configs

    def attach(self, log_manager: LogManager) -> None:
        self._log_manager = log_manager

    def add_listener(self, listener: Callable[[KafkaConfig], None]) -> None:
        """``listener(config)`` after every change of the effective broker
        config (Kafka's Reconfigurable): for the settings read once and
        held, such as the size of a thread pool."""
        self._listeners.append(listener)

    def handlers(self) -> dict[str, EntityHandler]:
        """The entity handlers of the ``DynamicConfigManager``."""
        return {"topics": self.apply_topic_config, "brokers": self.apply_broker_config}

    async def ensure_topic_config(self, topic: str) -> None:
        """Load a topic's overrides the first time this broker hosts it."""
        if topic in self._topic_overrides:
            return
        await self.apply_topic_config(topic, await self.zk.get_entity_config("topics", topic))

    async def apply_topic_config(self, topic: str, overrides: Mapping[str, str]) -> None:
        try:
            config = LogConfig.with_defaults(self.log_defaults(), overrides)
        except ValueError as e:
            log.error("ignoring invalid config of topic %s in /config/topics/%s: %s", topic, topic, e)
            return
        self._topic_overrides[topic] = dict(overrides)
        if self._log_manager is not None:
            self._log_manager.update_topic_config(topic, config)

    async def apply_broker_config(self, name: str, overrides: Mapping[str, str]) -> None:
        if name == "<default>":
            self._dynamic_default = dict(overrides)
        elif name == str(self.static.broker_id):
            self._dynamic_broker = dict(overrides)
        else:
            return
        try:
            self.current = self.static.with_dynamic(self._dynamic_default, self._dynamic_broker)
        except ValueError as e:
            log.error("ignoring invalid dynamic broker config /config/brokers/%s: %s", name, e)
            return
        for listener in self._listeners:
            try:
                listener(self.current)
            except Exception:
                log.exception("applying the changed broker config /config/brokers/%s failed", name)
        if self._log_manager is not None:
            self._log_manager.default_config = LogConfig.with_defaults(self.log_defaults())
        for topic in list(self._topic_overrides):
            await self.apply_topic_config(topic, self._topic_overrides[topic])


def loggable(config: Mapping[str, str]) -> dict[str, str]:
    """``config`` fit for a log line: SCRAM credentials and password-typed
    keys show as ``[hidden]``, as Kafka logs them."""
    return {k: "[hidden]" if _sensitive(k) else v for k, v in config.items()}


def _sensitive(key: str) -> bool:
    if ScramMechanism.of(key) is not None:
        return True
    definition = BROKER_CONFIG.keys.get(key)
    return definition is not None and definition.type is ConfigType.PASSWORD


def _sequence(child: str) -> int | None:
    prefix = ConfigChangeNotificationZNode.NAME_PREFIX
    if not child.startswith(prefix):
        return None
    digits = child[len(prefix):]
    return int(digits) if digits.isdigit() else None
